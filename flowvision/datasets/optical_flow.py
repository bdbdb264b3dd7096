"""Optical-flow datasets (Sintel, FlyingChairs, FlyingThings3D, KITTI 2015, HD1K), the training data of RAFT.

An item is (img1, img2, flow) with PIL images and a (2, H, W) float32 numpy flow (None where the split has no
ground truth), or (img1, img2, flow, valid_flow_mask) for the datasets whose files mark the valid pixels (KITTI,
HD1K: an (H, W) bool array) and whenever ``transforms`` produced a mask. ``transforms`` takes and returns the four
``(img1, img2, flow, valid_flow_mask)``, as torchvision's optical-flow transforms do.
"""
import itertools
import os
from glob import glob
from pathlib import Path

import numpy as np

from engine.utils.data import ConcatDataset
from .flow_formats import read_flo, read_kitti_flow_png, read_pfm
from .folder import default_loader
from .utils import VisionDataset
from .vision import verify_str_arg

__all__ = ["FlowDataset", "Sintel", "FlyingChairs", "FlyingThings3D", "KittiFlow", "HD1K"]


def _sorted_glob(*parts):
    return sorted(glob(str(Path(*parts))))


class FlowDataset(VisionDataset):
    """Pairs of frames ``_image_list`` and their flow files ``_flow_list`` (empty for splits without flow).

    Subclasses fill both lists and define ``_read_flow``, which returns (flow, mask) when ``_has_builtin_flow_mask``.
    """

    _has_builtin_flow_mask = False

    def __init__(self, root, transforms=None, loader=default_loader):
        super().__init__(root)
        self.transforms = transforms
        self._flow_list = []
        self._image_list = []
        self._loader = loader

    def _read_img(self, path):
        return self._loader(path)

    def _read_flow(self, path):
        raise NotImplementedError

    def __getitem__(self, index):
        img1, img2 = (self._read_img(path) for path in self._image_list[index])
        flow = mask = None
        if self._flow_list:
            flow = self._read_flow(self._flow_list[index])
            if self._has_builtin_flow_mask:
                flow, mask = flow
        if self.transforms is not None:
            img1, img2, flow, mask = self.transforms(img1, img2, flow, mask)
        if self._has_builtin_flow_mask or mask is not None:
            return img1, img2, flow, mask
        return img1, img2, flow

    def __len__(self):
        return len(self._image_list)

    def __rmul__(self, times):
        """``k * dataset``: the dataset repeated k times (how RAFT's training mixes weight its datasets)."""
        return ConcatDataset([self] * times)


class Sintel(FlowDataset):
    """MPI Sintel: ``Sintel/<training|test>/<clean|final>/<scene>/*.png``, flow in ``training/flow/<scene>`` (the
    archive's folder names; torchvision's docstring says "testing" but it reads "test", as we do).

    Consecutive frames of each scene (scenes in directory-listing order) form the pairs; ``pass_name="both"`` takes
    the clean pairs, then the final ones. ``split="test"`` has no flow.
    """

    def __init__(self, root, split="train", pass_name="clean", transforms=None, loader=default_loader):
        super().__init__(root, transforms, loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        base = Path(root) / "Sintel"
        split_dir = "training" if split == "train" else "test"
        for pass_dir in (["clean", "final"] if pass_name == "both" else [pass_name]):
            image_root = base / split_dir / pass_dir
            for scene in os.listdir(image_root):
                frames = _sorted_glob(image_root, scene, "*.png")
                self._image_list += [[a, b] for a, b in zip(frames, frames[1:])]
                if split == "train":
                    self._flow_list += _sorted_glob(base, "training", "flow", scene, "*.flo")

    def _read_flow(self, path):
        return read_flo(path)


class FlyingChairs(FlowDataset):
    """FlyingChairs: ``FlyingChairs/data/<n>_img1.ppm, <n>_img2.ppm, <n>_flow.flo`` and the split file
    ``FlyingChairs_train_val.txt`` (one 1 = train or 2 = val per flow, in sorted order)."""

    def __init__(self, root, split="train", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "val"))
        base = Path(root) / "FlyingChairs"
        images = _sorted_glob(base, "data", "*.ppm")
        flows = _sorted_glob(base, "data", "*.flo")
        split_file = base / "FlyingChairs_train_val.txt"
        if not split_file.exists():
            raise FileNotFoundError("The FlyingChairs_train_val.txt file was not found - please download it from the "
                                    "dataset page (see docstring).")
        wanted = 1 if split == "train" else 2
        split_ids = np.atleast_1d(np.loadtxt(str(split_file), dtype=np.int32))
        for i, flow in enumerate(flows):
            if split_ids[i] == wanted:
                self._flow_list.append(flow)
                self._image_list.append([images[2 * i], images[2 * i + 1]])

    def _read_flow(self, path):
        return read_flo(path)


class FlyingThings3D(FlowDataset):
    """FlyingThings3D: ``FlyingThings3D/frames_<clean|final>pass/<TRAIN|TEST>/<letter>/<seq>/<left|right>/*.png`` and
    ``optical_flow/<SPLIT>/<letter>/<seq>/<into_future|into_past>/<camera>/*.pfm``.

    For each pass, camera and direction (in that nesting), forward pairs use the future flow of their first frame,
    backward pairs (later frame first) the past flow of their first frame.
    """

    def __init__(self, root, split="train", pass_name="clean", camera="left", transforms=None,
                 loader=default_loader):
        super().__init__(root, transforms, loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        verify_str_arg(camera, "camera", valid_values=("left", "right", "both"))
        split = split.upper()
        passes = {"clean": ["frames_cleanpass"], "final": ["frames_finalpass"],
                  "both": ["frames_cleanpass", "frames_finalpass"]}[pass_name]
        cameras = ["left", "right"] if camera == "both" else [camera]
        base = Path(root) / "FlyingThings3D"
        for pass_dir, cam, direction in itertools.product(passes, cameras, ("into_future", "into_past")):
            image_dirs = sorted(Path(d) / cam for d in _sorted_glob(base, pass_dir, split, "*/*"))
            flow_dirs = sorted(Path(d) / direction / cam for d in _sorted_glob(base, "optical_flow", split, "*/*"))
            if not image_dirs or not flow_dirs:
                raise FileNotFoundError("Could not find the FlyingThings3D flow images. Please make sure the "
                                        "directory structure is correct.")
            for image_dir, flow_dir in zip(image_dirs, flow_dirs):
                images = _sorted_glob(image_dir, "*.png")
                flows = _sorted_glob(flow_dir, "*.pfm")
                for i in range(len(flows) - 1):
                    if direction == "into_future":
                        self._image_list.append([images[i], images[i + 1]])
                        self._flow_list.append(flows[i])
                    else:
                        self._image_list.append([images[i + 1], images[i]])
                        self._flow_list.append(flows[i + 1])

    def _read_flow(self, path):
        return read_pfm(path, channels=2)


class KittiFlow(FlowDataset):
    """KITTI 2015 flow: ``KittiFlow/<training|testing>/image_2/<n>_10.png, <n>_11.png`` and, for training, the
    16-bit flow maps ``flow_occ/<n>_10.png``. Items carry the valid-pixel mask."""

    _has_builtin_flow_mask = True

    def __init__(self, root, split="train", transforms=None, loader=default_loader):
        super().__init__(root, transforms, loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = Path(root) / "KittiFlow" / (split + "ing")
        images1 = _sorted_glob(base, "image_2", "*_10.png")
        images2 = _sorted_glob(base, "image_2", "*_11.png")
        if not images1 or not images2:
            raise FileNotFoundError("Could not find the Kitti flow images. Please make sure the directory structure "
                                    "is correct.")
        self._image_list = [[a, b] for a, b in zip(images1, images2)]
        if split == "train":
            self._flow_list = _sorted_glob(base, "flow_occ", "*_10.png")

    def _read_flow(self, path):
        return read_kitti_flow_png(path)


class HD1K(FlowDataset):
    """HD1K: training frames ``hd1k/hd1k_input/image_2/<seq:06d>_<frame>.png`` with the 16-bit flow maps of
    ``hd1k_flow_gt/flow_occ``, pairs never crossing the 36 sequences; test pairs ``hd1k_challenge/image_2/*10.png``
    and ``*11.png``. Items carry the valid-pixel mask."""

    _has_builtin_flow_mask = True
    _SEQUENCES = 36

    def __init__(self, root, split="train", transforms=None, loader=default_loader):
        super().__init__(root, transforms, loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = Path(root) / "hd1k"
        if split == "train":
            for seq in range(self._SEQUENCES):
                flows = _sorted_glob(base, "hd1k_flow_gt", "flow_occ", f"{seq:06d}_*.png")
                images = _sorted_glob(base, "hd1k_input", "image_2", f"{seq:06d}_*.png")
                for i in range(len(flows) - 1):
                    self._flow_list.append(flows[i])
                    self._image_list.append([images[i], images[i + 1]])
        else:
            images1 = _sorted_glob(base, "hd1k_challenge", "image_2", "*10.png")
            images2 = _sorted_glob(base, "hd1k_challenge", "image_2", "*11.png")
            self._image_list = [[a, b] for a, b in zip(images1, images2)]
        if not self._image_list:
            raise FileNotFoundError("Could not find the HD1K images. Please make sure the directory structure is "
                                    "correct.")

    def _read_flow(self, path):
        return read_kitti_flow_png(path)
