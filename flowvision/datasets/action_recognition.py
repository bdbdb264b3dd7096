"""HMDB51 and UCF101: action-recognition videos in one folder per class, with official train/test splits in
three folds; every clip of ``frames_per_clip`` frames, ``step_between_clips`` apart, of the fold's videos is one
sample (video, audio, class index), as torchvision's datasets of the same names. Reading needs PyAV (``video``
extra). Neither dataset is downloaded: the archives are RAR files, which the standard library cannot unpack.
"""
import glob
import os

from .folder import find_classes, make_dataset
from .video_utils import ClipDataset, VideoClips

__all__ = ["HMDB51", "UCF101"]


class _FoldClips(ClipDataset):
    """The clips of the videos (``.avi`` files under one folder per class) that the fold's split lists."""

    def __init__(self, root, annotation_path, frames_per_clip, step_between_clips=1, frame_rate=None, fold=1,
                 train=True, transform=None, _precomputed_metadata=None, num_workers=1, _video_width=0,
                 _video_height=0, _video_min_dimension=0, _audio_samples=0, output_format="THWC"):
        super().__init__(root)
        if fold not in (1, 2, 3):
            raise ValueError(f"fold should be between 1 and 3, got {fold}")
        self.fold = fold
        self.train = train
        self.classes, class_to_idx = find_classes(self.root)
        self.samples = make_dataset(self.root, class_to_idx, ("avi",))
        video_paths = [path for path, _ in self.samples]
        self.full_video_clips = VideoClips(
            video_paths, frames_per_clip, step_between_clips, frame_rate, _precomputed_metadata,
            num_workers=num_workers, _video_width=_video_width, _video_height=_video_height,
            _video_min_dimension=_video_min_dimension, _audio_samples=_audio_samples, output_format=output_format)
        self.indices = self._select_fold(video_paths, annotation_path, fold, train)
        self.video_clips = self.full_video_clips.subset(self.indices)
        self.transform = transform

    @property
    def metadata(self):
        """The frame numbers and rates of all videos, for ``_precomputed_metadata``."""
        return self.full_video_clips.metadata

    def _label(self, video_idx):
        return self.samples[self.indices[video_idx]][1]


class HMDB51(_FoldClips):
    """HMDB51 (Kuehne et al. 2011): 51 actions. ``annotation_path`` holds the split files
    ``<action>_test_split<fold>.txt``, whose lines name a video and tag it 1 (train) or 2 (test)."""

    data_url = "https://serre-lab.clps.brown.edu/wp-content/uploads/2013/10/hmdb51_org.rar"
    splits = {"url": "https://serre-lab.clps.brown.edu/wp-content/uploads/2013/10/test_train_splits.rar",
              "md5": "15e67781e70dcfbdce2d7dbb9b3344b5"}
    TRAIN_TAG = 1
    TEST_TAG = 2

    def _select_fold(self, video_list, annotations_dir, fold, train):
        """Indices of the videos whose file name the fold's split files tag with the wanted split."""
        target_tag = self.TRAIN_TAG if train else self.TEST_TAG
        selected = set()
        for split_file in glob.glob(os.path.join(annotations_dir, f"*test_split{fold}.txt")):
            with open(split_file) as lines:
                for line in lines:
                    name, tag = line.split()
                    if int(tag) == target_tag:
                        selected.add(name)
        return [i for i, path in enumerate(video_list) if os.path.basename(path) in selected]


class UCF101(_FoldClips):
    """UCF101 (Soomro et al. 2012): 101 actions. ``annotation_path`` holds ``trainlist0<fold>.txt`` and
    ``testlist0<fold>.txt``, whose lines start with a video's path relative to ``root``."""

    def _select_fold(self, video_list, annotation_path, fold, train):
        """Indices of the videos the fold's train or test list names."""
        name = f"{'train' if train else 'test'}list{fold:02d}.txt"
        with open(os.path.join(annotation_path, name)) as lines:
            selected = {os.path.join(self.root, *line.strip().split(" ")[0].split("/")) for line in lines}
        return [i for i, path in enumerate(video_list) if path in selected]
