"""Kinetics-400/600/700 (Kay et al. 2017; Carreira et al. 2018, 2019): action-recognition clips of YouTube videos,
as torchvision's ``Kinetics``: videos under ``root/<split>/<class>/``, every clip of ``frames_per_clip`` frames,
``step_between_clips`` apart, one sample (video, audio, class index). ``download=True`` fetches the split's list of
archives, unpacks each into the split folder (``num_download_workers`` processes) and sorts the videos into class
folders by the split's annotation file. Reading needs PyAV (``video`` extra).
"""
import csv
import os
import urllib.parse
from functools import partial
from multiprocessing import Pool

from .folder import find_classes, make_dataset
from .utils import check_integrity, download_and_extract_archive, download_url
from .video_utils import ClipDataset, VideoClips
from .vision import verify_str_arg

__all__ = ["Kinetics"]


def _download_and_extract(tar_path, video_path, url):
    """One archive of the list, downloaded into ``tar_path`` and unpacked into ``video_path`` (a worker's task)."""
    download_and_extract_archive(url, tar_path, video_path)


class Kinetics(ClipDataset):
    """The clips of the videos under ``root/<split>`` (``root`` itself with ``_legacy=True``, whose videos come
    as "THWC"). ``num_classes``: "400", "600" or "700"; ``split``: "train", "val" or "test"; ``output_format``
    "TCHW" (the default, unlike the other video datasets) or "THWC"."""

    _TAR_URLS = {
        "400": "https://s3.amazonaws.com/kinetics/400/{split}/k400_{split}_path.txt",
        "600": "https://s3.amazonaws.com/kinetics/600/{split}/k600_{split}_path.txt",
        "700": "https://s3.amazonaws.com/kinetics/700_2020/{split}/k700_2020_{split}_path.txt",
    }
    _ANNOTATION_URLS = {
        "400": "https://s3.amazonaws.com/kinetics/400/annotations/{split}.csv",
        "600": "https://s3.amazonaws.com/kinetics/600/annotations/{split}.csv",
        "700": "https://s3.amazonaws.com/kinetics/700_2020/annotations/{split}.csv",
    }

    def __init__(self, root, frames_per_clip, num_classes="400", split="train", frame_rate=None,
                 step_between_clips=1, transform=None, extensions=("avi", "mp4"), download=False,
                 num_download_workers=1, num_workers=1, _precomputed_metadata=None, _video_width=0,
                 _video_height=0, _video_min_dimension=0, _audio_samples=0, _audio_channels=0, _legacy=False,
                 output_format="TCHW"):
        self.num_classes = verify_str_arg(num_classes, arg="num_classes", valid_values=["400", "600", "700"])
        self.extensions = extensions
        self.num_download_workers = num_download_workers
        self.root = root
        self._legacy = _legacy
        if _legacy:
            self.split_folder = root
            self.split = "unknown"
            output_format = "THWC"
            if download:
                raise ValueError("Cannot download the videos using legacy_structure.")
        else:
            self.split_folder = os.path.join(root, split)
            self.split = verify_str_arg(split, arg="split", valid_values=["train", "val", "test"])
        if download:
            self.download_and_process_videos()
        super().__init__(self.root)
        self.classes, class_to_idx = find_classes(self.split_folder)
        self.samples = make_dataset(self.split_folder, class_to_idx, extensions)
        self.video_clips = VideoClips(
            [path for path, _ in self.samples], frames_per_clip, step_between_clips, frame_rate,
            _precomputed_metadata, num_workers=num_workers, _video_width=_video_width, _video_height=_video_height,
            _video_min_dimension=_video_min_dimension, _audio_samples=_audio_samples,
            _audio_channels=_audio_channels, output_format=output_format)
        self.transform = transform

    def download_and_process_videos(self):
        """Download and unpack the split's videos, then move them into their class folders."""
        self._download_videos()
        self._make_ds_structure()

    def _download_videos(self):
        """The split's archives, downloaded into ``root/tars`` and unpacked into the split folder; nothing when
        the split folder exists (so a finished download is never repeated)."""
        if os.path.exists(self.split_folder):
            return
        tar_path = os.path.join(self.root, "tars")
        file_list_path = os.path.join(self.root, "files")
        split_url = self._TAR_URLS[self.num_classes].format(split=self.split)
        split_url_filepath = os.path.join(file_list_path, os.path.basename(split_url))
        if not check_integrity(split_url_filepath):
            download_url(split_url, file_list_path)
        with open(split_url_filepath) as file:
            urls = [urllib.parse.quote(line, safe="/,:") for line in file.read().splitlines()]
        task = partial(_download_and_extract, tar_path, self.split_folder)
        if self.num_download_workers == 1:
            for url in urls:
                task(url)
            return
        with Pool(self.num_download_workers) as pool:
            pool.map(task, urls)

    def _make_ds_structure(self):
        """Move each annotated video ``<youtube_id>_<start>_<end>.mp4`` of the split folder into the folder of its
        label (spaces as underscores; quotes and parentheses dropped)."""
        annotation_path = os.path.join(self.root, "annotations")
        annotations = os.path.join(annotation_path, f"{self.split}.csv")
        if not check_integrity(annotations):
            download_url(self._ANNOTATION_URLS[self.num_classes].format(split=self.split), annotation_path)
        with open(annotations) as csvfile:
            for row in csv.DictReader(csvfile):
                name = f"{row['youtube_id']}_{int(row['time_start']):06}_{int(row['time_end']):06}.mp4"
                label = row["label"].replace(" ", "_").replace("'", "").replace("(", "").replace(")", "")
                os.makedirs(os.path.join(self.split_folder, label), exist_ok=True)
                downloaded = os.path.join(self.split_folder, name)
                if os.path.isfile(downloaded):
                    os.replace(downloaded, os.path.join(self.split_folder, label, name))

    @property
    def metadata(self):
        """The frame numbers and rates of all videos, for ``_precomputed_metadata``."""
        return self.video_clips.metadata

    def _label(self, video_idx):
        return self.samples[video_idx][1]
