"""``VideoClips``: every clip of ``clip_length_in_frames`` frames, ``frames_between_clips`` apart, of a list of
videos, optionally resampled to one frame rate: torchvision's class of the same name, with its metadata, clip
numbering, pickled form and outputs, reading the files through PyAV (``video_decoding``).
"""
import bisect
import math
import warnings

import numpy as np
from tqdm import tqdm

import engine
from engine.utils.data import DataLoader

from . import video_decoding
from .utils import VisionDataset

__all__ = ["VideoClips", "unfold"]


def unfold(tensor, size, step, dilation=1):
    """The windows of ``size`` elements, ``step`` apart, of a 1-D tensor, as a (windows, size) view; (0, size)
    when the tensor is shorter than one window."""
    if tensor.dim() != 1:
        raise ValueError(f"tensor should have 1 dimension instead of {tensor.dim()}")
    stride = tensor.stride(0)
    span = dilation * (size - 1) + 1
    windows = (tensor.numel() - span) // step + 1
    if windows < 1:
        windows = 0
    return engine.as_strided(tensor, (windows, size), (step * stride, dilation * stride))


class _VideoTimestamps:
    """The (frame numbers, frame rate) of each video, as a dataset, so a DataLoader's workers can read them."""

    def __init__(self, video_paths):
        self.video_paths = video_paths

    def __len__(self):
        return len(self.video_paths)

    def __getitem__(self, idx):
        count, fps = video_decoding.frame_count_and_rate(self.video_paths[idx])
        return list(range(count)), fps


def _as_is(batch):
    """A collate function that keeps a batch a list."""
    return batch


class VideoClips:
    """All clips of ``clip_length_in_frames`` consecutive frames, ``frames_between_clips`` apart, of the videos in
    ``video_paths`` (with ``frame_rate``, of the videos resampled to that rate first); a clip is returned by
    ``get_clip`` as (video, audio, info, video index). The last frames of a video that make no whole clip are
    dropped. Reading the frame counts of every video is done once, by ``num_workers`` processes; ``metadata``
    keeps them for a later ``_precomputed_metadata``. ``output_format``: "THWC" or "TCHW". The underscored size
    arguments are accepted for torchvision's signature and unused there as here.
    """

    def __init__(self, video_paths, clip_length_in_frames=16, frames_between_clips=1, frame_rate=None,
                 _precomputed_metadata=None, num_workers=0, _video_width=0, _video_height=0,
                 _video_min_dimension=0, _video_max_dimension=0, _audio_samples=0, _audio_channels=0,
                 output_format="THWC"):
        self.video_paths = video_paths
        self.num_workers = num_workers
        self._video_width = _video_width
        self._video_height = _video_height
        self._video_min_dimension = _video_min_dimension
        self._video_max_dimension = _video_max_dimension
        self._audio_samples = _audio_samples
        self._audio_channels = _audio_channels
        self.output_format = output_format.upper()
        if self.output_format not in ("THWC", "TCHW"):
            raise ValueError(f"output_format should be either 'THWC' or 'TCHW', got {output_format}.")
        if _precomputed_metadata is None:
            self._compute_frame_pts()
        else:
            self._init_from_metadata(_precomputed_metadata)
        self.compute_clips(clip_length_in_frames, frames_between_clips, frame_rate)

    def _compute_frame_pts(self):
        self.video_pts = []
        self.video_fps = []
        loader = DataLoader(_VideoTimestamps(self.video_paths), batch_size=16, num_workers=self.num_workers,
                            collate_fn=_as_is)
        with tqdm(total=len(loader)) as progress:
            for batch in loader:
                progress.update(1)
                for pts, fps in batch:
                    self.video_pts.append(engine.as_tensor(pts, dtype=engine.int64))
                    self.video_fps.append(fps)

    def _init_from_metadata(self, metadata):
        self.video_paths = metadata["video_paths"]
        if len(self.video_paths) != len(metadata["video_pts"]) or len(self.video_paths) != len(metadata["video_fps"]):
            raise ValueError("the metadata's video_paths, video_pts and video_fps must have one entry per video")
        self.video_pts = metadata["video_pts"]
        self.video_fps = metadata["video_fps"]

    @property
    def metadata(self):
        """The video paths, their frame numbers and frame rates."""
        return {"video_paths": self.video_paths, "video_pts": self.video_pts, "video_fps": self.video_fps}

    def subset(self, indices):
        """A VideoClips of the videos at ``indices``, with the same settings and no file read again."""
        metadata = {key: [values[i] for i in indices] for key, values in self.metadata.items()}
        return type(self)(metadata["video_paths"], clip_length_in_frames=self.num_frames,
                          frames_between_clips=self.step, frame_rate=self.frame_rate, _precomputed_metadata=metadata,
                          num_workers=self.num_workers, _video_width=self._video_width,
                          _video_height=self._video_height, _video_min_dimension=self._video_min_dimension,
                          _video_max_dimension=self._video_max_dimension, _audio_samples=self._audio_samples,
                          _audio_channels=self._audio_channels, output_format=self.output_format)

    @staticmethod
    def compute_clips_for_video(video_pts, num_frames, step, fps, frame_rate=None):
        """(clips, resampling indices) of one video: a (clips, num_frames) tensor of frame numbers, and per
        clip the positions of its frames in the resampled video (one slice for all where the rate divides)."""
        if fps is None:  # no video stream: its video_pts is empty, any rate will do
            fps = 1
        if frame_rate is None:
            frame_rate = fps
        total_frames = len(video_pts) * frame_rate / fps
        resampled = VideoClips._resample_video_idx(int(math.floor(total_frames)), fps, frame_rate)
        clips = unfold(video_pts[resampled], num_frames, step)
        if not clips.numel():
            warnings.warn("There aren't enough frames in the current video to get a clip for the given clip length "
                          "and frames between clips. The video (and potentially others) will be skipped.")
        if isinstance(resampled, slice):
            return clips, [resampled] * len(clips)
        return clips, unfold(resampled, num_frames, step)

    def compute_clips(self, num_frames, step, frame_rate=None):
        """Number the clips again for another clip length, step or frame rate (no file is read)."""
        self.num_frames = num_frames
        self.step = step
        self.frame_rate = frame_rate
        self.clips = []
        self.resampling_idxs = []
        for video_pts, fps in zip(self.video_pts, self.video_fps):
            clips, idxs = self.compute_clips_for_video(video_pts, num_frames, step, fps, frame_rate)
            self.clips.append(clips)
            self.resampling_idxs.append(idxs)
        self.cumulative_sizes = np.cumsum([len(c) for c in self.clips], dtype=np.int64).tolist()

    def __len__(self):
        return self.num_clips()

    def num_videos(self):
        return len(self.video_paths)

    def num_clips(self):
        """The number of clips of all videos."""
        return self.cumulative_sizes[-1]

    def get_clip_location(self, idx):
        """(video index, clip index within the video) of clip ``idx``."""
        video_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        if video_idx == 0:
            return video_idx, idx
        return video_idx, idx - self.cumulative_sizes[video_idx - 1]

    @staticmethod
    def _resample_video_idx(num_frames, original_fps, new_fps):
        """The frames kept when a video of ``original_fps`` is shown at ``new_fps``: a slice where the ratio is a
        whole number, else the frame numbers floor(i * ratio) as an int64 tensor."""
        step = original_fps / new_fps
        if float(step).is_integer():
            return slice(None, None, int(step))
        return (engine.arange(num_frames, dtype=engine.float32) * step).floor().to(engine.int64)

    def get_clip(self, idx):
        """(video uint8 (T, H, W, C) or (T, C, H, W), audio float32 (channels, samples) played during the clip,
        {"video_fps": rate}, index of the video in ``video_paths``) of clip ``idx``."""
        if idx >= self.num_clips():
            raise IndexError(f"Index {idx} out of range ({self.num_clips()} number of clips)")
        video_idx, clip_idx = self.get_clip_location(idx)
        video_path = self.video_paths[video_idx]
        clip_pts = self.clips[video_idx][clip_idx]
        start_idx = int(clip_pts[0].item())
        end_idx = int(clip_pts[-1].item())
        video = engine.from_numpy(video_decoding.read_frames(video_path, start_idx, end_idx))
        if self.output_format == "TCHW":
            video = video.permute(0, 3, 1, 2)
        fps = self.video_fps[video_idx]
        audio = engine.from_numpy(video_decoding.read_audio(video_path, start_idx / fps, (end_idx + 1) / fps))
        info = {"video_fps": fps}
        if self.frame_rate is not None:
            resampling_idx = self.resampling_idxs[video_idx][clip_idx]
            if isinstance(resampling_idx, engine.Tensor):
                resampling_idx = resampling_idx - resampling_idx[0]
            video = video[resampling_idx]
            info["video_fps"] = self.frame_rate
        if len(video) != self.num_frames:
            raise RuntimeError(f"clip {idx} has {len(video)} frames, expected {self.num_frames}")
        return video, audio, info, video_idx

    def __getstate__(self):
        """The frame numbers of all videos in one int64 array with their sizes (torchvision's version 2 form);
        the clips are computed again on unpickling."""
        state = self.__dict__.copy()
        state["video_pts_sizes"] = [len(v) for v in self.video_pts]
        pts = [np.asarray(v.numpy() if isinstance(v, engine.Tensor) else v, dtype=np.int64) for v in self.video_pts]
        state["video_pts"] = np.concatenate(pts) if pts else []
        for derived in ("clips", "resampling_idxs", "cumulative_sizes"):
            del state[derived]
        state["_version"] = 2
        return state

    def __setstate__(self, state):
        if "_version" not in state:
            self.__dict__ = state
            return
        pts = engine.as_tensor(np.asarray(state["video_pts"], dtype=np.int64))
        state["video_pts"] = list(engine.split(pts, state.pop("video_pts_sizes"), dim=0))
        self.__dict__ = state
        self.compute_clips(self.num_frames, self.step, self.frame_rate)


class ClipDataset(VisionDataset):
    """Base of the video datasets: each clip of ``self.video_clips`` is one sample (video after ``transform``,
    audio, the label ``_label`` gives its video)."""

    def _label(self, video_idx):
        raise NotImplementedError

    def __len__(self):
        return self.video_clips.num_clips()

    def __getitem__(self, idx):
        video, audio, _, video_idx = self.video_clips.get_clip(idx)
        if self.transform is not None:
            video = self.transform(video)
        return video, audio, self._label(video_idx)
