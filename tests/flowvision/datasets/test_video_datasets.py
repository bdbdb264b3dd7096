"""Video datasets (VideoClips, HMDB51, UCF101, Kinetics) against torchvision's.

torchvision decodes with torchcodec, which is not installed here, so the comparison is split: everything that does
not decode (clip numbering, resampling, folds, classes, samples, the Kinetics folder layout after a download) is
compared with torchvision's classes built from the same ``_precomputed_metadata``; the decoded frames and audio are
compared with what the test wrote into lossless files (raw RGB video, 16-bit PCM audio, in AVI).
"""
import io
import os
import pickle
import sys
import tarfile
import warnings

import numpy as np
import pytest
import torch
from torchvision.datasets import HMDB51 as TorchHMDB51
from torchvision.datasets import UCF101 as TorchUCF101
from torchvision.datasets import Kinetics as TorchKinetics
from torchvision.datasets.video_utils import VideoClips as TorchVideoClips

import engine
from flowvision.datasets import HMDB51, UCF101, Kinetics
from flowvision.datasets.video_utils import VideoClips

from http_server import FileServer

av = pytest.importorskip("av")
pytestmark = pytest.mark.filterwarnings("ignore:There aren't enough frames")

FPS = 25
AUDIO_RATE = 8000


def _write_video(path, n_frames, seed, container_format=None, codec="rawvideo", pix_fmt="bgr24"):
    """A 24x32 video of random frames (raw, so decoding gives them back exactly) with a mono 16-bit sound track;
    returns (frames (T, H, W, 3) uint8, audio samples (1, N) int16)."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (n_frames, 24, 32, 3), dtype=np.uint8)
    samples = rng.integers(-20000, 20000, (1, n_frames * AUDIO_RATE // FPS), dtype=np.int16)
    with av.open(path, "w", format=container_format) as container:
        video = container.add_stream(codec, rate=FPS)
        video.width, video.height, video.pix_fmt = 32, 24, pix_fmt
        audio = container.add_stream("pcm_s16le", rate=AUDIO_RATE, layout="mono")
        for frame in frames:
            container.mux(video.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(video.encode())
        sound = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        sound.sample_rate = AUDIO_RATE
        container.mux(audio.encode(sound))
        container.mux(audio.encode())
    return frames, samples


def _metadata(lengths, rates, library):
    """Precomputed metadata for videos of ``lengths`` frames at ``rates`` in ``library``'s tensors."""
    return {"video_paths": [f"v{i}.avi" for i in range(len(lengths))],
            "video_pts": [library.arange(n, dtype=library.int64) for n in lengths],
            "video_fps": list(rates)}


def _same_index(ours, theirs):
    if isinstance(theirs, slice):
        assert ours == theirs
    else:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("num_frames, step, frame_rate", [(5, 3, None), (4, 2, 12.5), (3, 1, 10), (16, 4, 15)])
def test_clip_numbering_equals_torchvisions(num_frames, step, frame_rate):
    lengths, rates = [13, 20, 7, 0], [25.0, 25.0, 30.0, None]
    with warnings.catch_warnings(record=True) as their_warnings:
        warnings.simplefilter("always")
        theirs = TorchVideoClips([], num_frames, step, frame_rate, _metadata(lengths, rates, torch))
    with warnings.catch_warnings(record=True) as our_warnings:
        warnings.simplefilter("always")
        ours = VideoClips([], num_frames, step, frame_rate, _metadata(lengths, rates, engine))
    assert [str(w.message) for w in our_warnings] == [str(w.message) for w in their_warnings]
    assert ours.cumulative_sizes == theirs.cumulative_sizes
    assert (len(ours), ours.num_videos()) == (len(theirs), theirs.num_videos())
    for our_clips, their_clips in zip(ours.clips, theirs.clips):
        assert tuple(our_clips.shape) == tuple(their_clips.shape)
        np.testing.assert_array_equal(our_clips.numpy(), their_clips.numpy())
    for our_idxs, their_idxs in zip(ours.resampling_idxs, theirs.resampling_idxs):
        assert len(our_idxs) == len(their_idxs)
        for a, b in zip(our_idxs, their_idxs):
            _same_index(a, b)
    for idx in range(len(theirs)):
        assert ours.get_clip_location(idx) == theirs.get_clip_location(idx)
    our_subset, their_subset = ours.subset([2, 0]), theirs.subset([2, 0])
    assert our_subset.cumulative_sizes == their_subset.cumulative_sizes
    assert our_subset.video_paths == their_subset.video_paths


def test_get_clip_decodes_the_frames_and_sound_of_the_clip(tmp_path):
    written = [_write_video(str(tmp_path / f"v{i}.avi"), n, i) for i, n in enumerate([13, 9])]
    paths = [str(tmp_path / "v0.avi"), str(tmp_path / "v1.avi")]
    clips = VideoClips(paths, 4, 3, num_workers=0)
    assert [p.tolist() for p in clips.metadata["video_pts"]] == [list(range(13)), list(range(9))]
    assert clips.metadata["video_fps"] == [FPS, FPS]
    assert clips.num_clips() == 4 + 2
    for idx in range(clips.num_clips()):
        video, audio, info, video_idx = clips.get_clip(idx)
        start = 3 * clips.get_clip_location(idx)[1]
        frames, samples = written[video_idx]
        assert video.dtype == engine.uint8 and info == {"video_fps": FPS}
        np.testing.assert_array_equal(video.numpy(), frames[start:start + 4])
        per_frame = AUDIO_RATE // FPS
        expected = samples[:, start * per_frame:(start + 4) * per_frame] / 32768.0
        assert audio.dtype == engine.float32
        np.testing.assert_allclose(audio.numpy(), expected, atol=1e-6)
    resampled = VideoClips(paths, 3, 2, frame_rate=12.5, output_format="tchw",
                           _precomputed_metadata=clips.metadata)
    video, _, info, _ = resampled.get_clip(1)
    assert info == {"video_fps": 12.5}
    np.testing.assert_array_equal(video.numpy(), written[0][0][4:10:2].transpose(0, 3, 1, 2))
    with pytest.raises(IndexError, match=r"Index 6 out of range \(6 number of clips\)"):
        clips.get_clip(6)


def test_pickled_clips_keep_their_numbering():
    clips = VideoClips([], 4, 2, 10, _metadata([13, 0, 9], [25.0, None, 30.0], engine))
    state = clips.__getstate__()
    assert state["_version"] == 2 and state["video_pts_sizes"] == [13, 0, 9]
    again = pickle.loads(pickle.dumps(clips))
    assert again.cumulative_sizes == clips.cumulative_sizes
    for a, b in zip(again.clips, clips.clips):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def _class_tree(root, names):
    """Empty ``.avi`` files under class folders: folds and samples need names only."""
    for name in names:
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        open(os.path.join(root, name), "wb").close()


def _same_dataset(ours, theirs):
    assert ours.classes == theirs.classes
    assert ours.samples == theirs.samples
    assert ours.indices == theirs.indices
    assert len(ours) == len(theirs)


@pytest.mark.parametrize("fold, train", [(1, True), (1, False), (2, True)])
def test_hmdb51_and_ucf101_folds_equal_torchvisions(tmp_path, fold, train):
    names = ["brush_hair/a.avi", "brush_hair/b.avi", "cartwheel/c.avi", "cartwheel/d.avi", "cartwheel/notes.txt"]
    root, splits = str(tmp_path / "videos"), tmp_path / "splits"
    _class_tree(root, names)
    splits.mkdir()
    (splits / f"brush_hair_test_split{fold}.txt").write_text("a.avi 1 \nb.avi 2 \n")
    (splits / f"cartwheel_test_split{fold}.txt").write_text("c.avi 1 \nd.avi 0 \n")
    (splits / f"trainlist0{fold}.txt").write_text("brush_hair/a.avi 1\ncartwheel/c.avi 2\n")
    (splits / f"testlist0{fold}.txt").write_text("brush_hair/b.avi\ncartwheel/d.avi\n")
    for ours_class, their_class in ((HMDB51, TorchHMDB51), (UCF101, TorchUCF101)):
        lengths = [10, 12, 8, 9]
        theirs = their_class(root, str(splits), 4, 2, fold=fold, train=train,
                             _precomputed_metadata=_metadata(lengths, [25.0] * 4, torch) | {
                                 "video_paths": [os.path.join(root, n) for n in names[:4]]})
        ours = ours_class(root, str(splits), 4, 2, fold=fold, train=train,
                          _precomputed_metadata=_metadata(lengths, [25.0] * 4, engine) | {
                              "video_paths": [os.path.join(root, n) for n in names[:4]]})
        _same_dataset(ours, theirs)
    with pytest.raises(ValueError, match="fold should be between 1 and 3, got 4"):
        HMDB51(root, str(splits), 4, fold=4)


def test_ucf101_items_are_decoded_clips_with_their_class(tmp_path):
    root, splits = tmp_path / "UCF-101", tmp_path / "lists"
    (root / "Archery").mkdir(parents=True)
    (root / "Bowling").mkdir()
    frames, _ = _write_video(str(root / "Bowling" / "v_Bowling_g01_c01.avi"), 6, 7)
    _write_video(str(root / "Archery" / "v_Archery_g01_c01.avi"), 5, 8)
    splits.mkdir()
    (splits / "trainlist01.txt").write_text("Bowling/v_Bowling_g01_c01.avi 2\n")
    dataset = UCF101(str(root), str(splits), 5, transform=lambda v: v.flip(0))  # one worker reads the metadata
    assert len(dataset) == 2
    video, audio, label = dataset[1]
    assert (label, dataset.classes[label]) == (1, "Bowling")
    np.testing.assert_array_equal(video.numpy(), frames[1:6][::-1])
    assert tuple(audio.shape) == (1, 5 * AUDIO_RATE // FPS)


def _tar_gz(members):
    """A .tar.gz archive of ``{name: bytes}``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_kinetics_downloads_sorts_and_numbers_as_torchvision(tmp_path, monkeypatch):
    videos = {}
    for i, n_frames in enumerate([6, 9]):
        path = tmp_path / f"clip{i}.avi"
        _write_video(str(path), n_frames, i)
        videos[f"yt{i}_{i:06}_{i + 10:06}.mp4"] = path.read_bytes()  # the dataset renames nothing: names only
    root = tmp_path / "kinetics"
    with FileServer() as server:
        server.files["part0.tar.gz"] = _tar_gz({"yt0_000000_000010.mp4": videos["yt0_000000_000010.mp4"]})
        server.files["part1.tar.gz"] = _tar_gz({"yt1_000001_000011.mp4": videos["yt1_000001_000011.mp4"]})
        server.files["k400_val_path.txt"] = (server.url("part0.tar.gz") + "\n" + server.url("part1.tar.gz")).encode()
        server.files["val.csv"] = (b"label,youtube_id,time_start,time_end,split\n"
                                   b"\"dancing (ballet)\",yt0,0,10,val\nbowling,yt1,1,11,val\n")
        monkeypatch.setitem(Kinetics._TAR_URLS, "400", server.base_url + "k400_{split}_path.txt")
        monkeypatch.setitem(Kinetics._ANNOTATION_URLS, "400", server.base_url + "{split}.csv")
        ours = Kinetics(str(root), 4, split="val", step_between_clips=2, download=True, num_workers=0)
    assert sorted(os.listdir(root / "val")) == ["bowling", "dancing_ballet"]
    assert [p.tolist() for p in ours.metadata["video_pts"]] == [list(range(9)), list(range(6))]
    metadata = dict(ours.metadata, video_pts=[torch.from_numpy(p.numpy()) for p in ours.metadata["video_pts"]])
    theirs = TorchKinetics(str(root), 4, split="val", step_between_clips=2, _precomputed_metadata=metadata)
    assert (ours.classes, ours.samples, len(ours)) == (theirs.classes, theirs.samples, len(theirs))
    video, audio, label = ours[len(ours) - 1]
    assert tuple(video.shape) == (4, 3, 24, 32) and ours.classes[label] == "dancing_ballet"
    with pytest.raises(ValueError, match="Cannot download the videos using legacy_structure."):
        Kinetics(str(root), 4, download=True, _legacy=True)
    with pytest.raises(ValueError, match=r"Unknown value '500' for argument num_classes. Valid values are "
                                         r"\{'400', '600', '700'\}."):
        Kinetics(str(root), 4, num_classes="500")


def test_without_pyav_reading_says_how_to_install_it(tmp_path, monkeypatch):
    path = tmp_path / "v.avi"
    _write_video(str(path), 3, 0)
    monkeypatch.setitem(sys.modules, "av", None)
    with pytest.raises(ImportError, match=r"video datasets read their files with PyAV: pip install av \(or pip "
                                          r"install flowvision\[video\]\)"):
        VideoClips([str(path)], 2, num_workers=0)
