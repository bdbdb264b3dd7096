"""Stereo-matching datasets recorded from real scenes: KITTI 2012 and 2015, Middlebury 2014, ETH3D, InStereo2k.

An item is (left, right, disparity) with RGB PIL images and a (1, H, W) numpy disparity of the left view (None
where the split has no ground truth), or (left, right, disparity, valid_mask) for the datasets declaring a
built-in mask (its (H, W) bool array, or None where their files hold none) and whenever ``transforms`` produced a
mask. ``transforms`` takes and returns ``(images, disparities, valid_masks)``, each a (left, right) pair.
"""
import os
import random
import shutil
from glob import glob
from pathlib import Path

import numpy as np
from PIL import Image

from .flow_formats import read_pfm
from .utils import VisionDataset, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["StereoMatchingDataset", "Kitti2012Stereo", "Kitti2015Stereo", "Middlebury2014Stereo", "ETH3DStereo",
           "InStereo2k"]


class StereoMatchingDataset(VisionDataset):
    """Image pairs ``_images`` and disparity-file pairs ``_disparities`` (entries may be None); subclasses fill both
    and define ``_read_disparity(path) -> (disparity, valid_mask)``, given None for a missing file."""

    _has_built_in_disparity_mask = False

    def __init__(self, root, transforms=None):
        super().__init__(root)
        self.transforms = transforms
        self._images = []
        self._disparities = []

    def _read_img(self, path):
        image = Image.open(path)
        return image if image.mode == "RGB" else image.convert("RGB")

    @staticmethod
    def _scan_pairs(left_pattern, right_pattern=None):
        """Sorted matches of the two glob patterns, paired in order (right None when no right pattern)."""
        lefts = sorted(glob(left_pattern))
        rights = sorted(glob(right_pattern)) if right_pattern else [None] * len(lefts)
        if not lefts:
            raise FileNotFoundError(f"Could not find any files matching the patterns: {left_pattern}")
        if not rights:
            raise FileNotFoundError(f"Could not find any files matching the patterns: {right_pattern}")
        if len(lefts) != len(rights):
            raise ValueError(f"Found {len(lefts)} left files but {len(rights)} right files using:\n "
                             f"left pattern: {left_pattern}\nright pattern: {right_pattern}\n")
        return list(zip(lefts, rights))

    def _read_disparity(self, path):
        raise NotImplementedError

    def __getitem__(self, index):
        images = tuple(self._read_img(path) for path in self._images[index])
        (disparity_left, mask_left), (disparity_right, mask_right) = (
            self._read_disparity(path) for path in self._disparities[index])
        disparities, masks = (disparity_left, disparity_right), (mask_left, mask_right)
        if self.transforms is not None:
            images, disparities, masks = self.transforms(images, disparities, masks)
        if self._has_built_in_disparity_mask or masks[0] is not None:
            return images[0], images[1], disparities[0], masks[0]
        return images[0], images[1], disparities[0]

    def __len__(self):
        return len(self._images)


def _split_root(root, name, split):
    return Path(root) / name / (split + "ing")


def read_kitti_disparity(path):
    """KITTI's 16-bit disparity PNG as a (1, H, W) float64 array of pixels (stored value / 256); None for None."""
    if path is None:
        return None, None
    return (np.asarray(Image.open(path)) / 256.0)[None], None


class Kitti2012Stereo(StereoMatchingDataset):
    """KITTI 2012: ``Kitti2012/<training|testing>/colored_0/*_10.png`` (left), ``colored_1`` (right), and for
    training the non-occluded disparities ``disp_noc/*.png``. Items are 4-tuples whose mask is None."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, split="train", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = _split_root(root, "Kitti2012", split)
        self._images = self._scan_pairs(str(base / "colored_0" / "*_10.png"), str(base / "colored_1" / "*_10.png"))
        if split == "train":
            self._disparities = self._scan_pairs(str(base / "disp_noc" / "*.png"))
        else:
            self._disparities = [(None, None)] * len(self._images)

    def _read_disparity(self, path):
        return read_kitti_disparity(path)


class Kitti2015Stereo(StereoMatchingDataset):
    """KITTI 2015: ``Kitti2015/<training|testing>/image_2/*.png`` (left), ``image_3`` (right), and for training the
    disparities of both views ``disp_occ_0``, ``disp_occ_1``. Items are 4-tuples whose mask is None."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, split="train", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = _split_root(root, "Kitti2015", split)
        self._images = self._scan_pairs(str(base / "image_2" / "*.png"), str(base / "image_3" / "*.png"))
        if split == "train":
            self._disparities = self._scan_pairs(str(base / "disp_occ_0" / "*.png"),
                                                 str(base / "disp_occ_1" / "*.png"))
        else:
            self._disparities = [(None, None)] * len(self._images)

    def _read_disparity(self, path):
        return read_kitti_disparity(path)


class Middlebury2014Stereo(StereoMatchingDataset):
    """Middlebury 2014: ``Middlebury2014/<train|additional>/<Scene>-<perfect|imperfect>/im0.png, im1.png,
    disp0.pfm, disp1.pfm`` and ``test/<Scene>/im0.png, im1.png`` (no disparity; ``calibration=None`` there).

    Disparities are absolute, infinite (unknown) ones set to 0; the mask marks the positive ones. With
    ``use_ambient_views`` the right image is drawn (``random.choice``) among im1.png and the im1E.png / im1L.png
    views present. ``download=True`` fetches each scene's zip (and the MiddEval3 archive for the test split).
    """

    splits = {
        "train": ["Adirondack", "Jadeplant", "Motorcycle", "Piano", "Pipes", "Playroom", "Playtable", "Recycle",
                  "Shelves", "Vintage"],
        "additional": ["Backpack", "Bicycle1", "Cable", "Classroom1", "Couch", "Flowers", "Mask", "Shopvac", "Sticks",
                       "Storage", "Sword1", "Sword2", "Umbrella"],
        "test": ["Plants", "Classroom2E", "Classroom2", "Australia", "DjembeL", "CrusadeP", "Crusade", "Hoops",
                 "Bicycle2", "Staircase", "Newkuba", "AustraliaP", "Djembe", "Livingroom", "Computer"],
    }
    scenes_url = "https://vision.middlebury.edu/stereo/data/scenes2014/zip"
    test_url = "https://vision.middlebury.edu/stereo/submit3/zip/MiddEval3-data-F.zip"
    _has_built_in_disparity_mask = True

    def __init__(self, root, split="train", calibration="perfect", use_ambient_views=False, transforms=None,
                 download=False):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test", "additional"))
        self.split = split
        if calibration:
            verify_str_arg(calibration, "calibration", valid_values=("perfect", "imperfect", "both", None))
            if split == "test":
                raise ValueError("Split 'test' has only no calibration settings, please set `calibration=None`.")
        elif split != "test":
            raise ValueError(f"Split '{split}' has calibration settings, however None was provided as an argument."
                             f"\nSetting calibration to 'perfect' for split '{split}'. Available calibration settings "
                             "are: 'perfect', 'imperfect', 'both'.")
        if download:
            self._download_dataset(root)
        base = Path(root) / "Middlebury2014" / split
        if not os.path.exists(base):
            raise FileNotFoundError(f"The {split} directory was not found in the provided root directory")
        if not any(scene.startswith(name) for scene in os.listdir(base) for name in self.splits[split]):
            raise FileNotFoundError(f"Provided root folder does not contain any scenes from the {split} split.")
        suffixes = {None: [""], "perfect": ["-perfect"], "imperfect": ["-imperfect"],
                    "both": ["-perfect", "-imperfect"]}[calibration or None]
        for suffix in suffixes:
            scenes = base / ("*" + suffix)
            self._images += self._scan_pairs(str(scenes / "im0.png"), str(scenes / "im1.png"))
            if split == "test":
                self._disparities = [(None, None)] * len(self._images)
            else:
                self._disparities += self._scan_pairs(str(scenes / "disp0.pfm"), str(scenes / "disp1.pfm"))
        self.use_ambient_views = use_ambient_views

    def _read_img(self, path):
        path = Path(path)
        if path.name == "im1.png" and self.use_ambient_views:
            views = [p for p in (path.parent / "im1E.png", path.parent / "im1L.png") if os.path.exists(p)]
            path = random.choice(views + [path])
        return super()._read_img(path)

    def _read_disparity(self, path):
        if path is None:
            return None, None
        disparity = np.abs(read_pfm(path, channels=1))
        disparity[disparity == np.inf] = 0
        return disparity, (disparity > 0).squeeze(0)

    def _download_dataset(self, root):
        """Each missing scene's zip of the split (both calibrations), or the test scenes out of MiddEval3."""
        base = Path(root) / "Middlebury2014"
        if self.split != "test":
            split_root = base / self.split
            for scene in self.splits[self.split]:
                for calibration in ("perfect", "imperfect"):
                    name = f"{scene}-{calibration}"
                    if not (split_root / name).exists():
                        download_and_extract_archive(f"{self.scenes_url}/{name}.zip", str(split_root),
                                                     filename=f"{name}.zip", remove_finished=True)
            return
        test_root = base / "test"
        os.makedirs(test_root, exist_ok=True)
        if any(scene not in os.listdir(test_root) for scene in self.splits["test"]):
            download_and_extract_archive(self.test_url, str(base), remove_finished=True)
            for scene_dir, scene_names, _ in os.walk(str(base / "MiddEval3" / "testF")):
                for scene in scene_names:
                    shutil.move(str(Path(scene_dir) / scene), str(test_root))
            shutil.rmtree(str(base / "MiddEval3"))


class ETH3DStereo(StereoMatchingDataset):
    """ETH3D two-view: ``ETH3D/<two_view_training|two_view_test>/<scene>/im0.png, im1.png``, and for training
    ``two_view_training_gt/<scene>/disp0GT.pfm`` with its non-occluded mask ``mask0nocc.png``."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, split="train", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = Path(root) / "ETH3D"
        image_dir = base / ("two_view_training" if split == "train" else "two_view_test")
        self._images = self._scan_pairs(str(image_dir / "*" / "im0.png"), str(image_dir / "*" / "im1.png"))
        if split == "test":
            self._disparities = [(None, None)] * len(self._images)
        else:
            self._disparities = self._scan_pairs(str(base / "two_view_training_gt" / "*" / "disp0GT.pfm"))

    def _read_disparity(self, path):
        if path is None:
            return None, None
        mask = np.asarray(Image.open(Path(path).parent / "mask0nocc.png")).astype(bool)
        return np.abs(read_pfm(path, channels=1)), mask


class InStereo2k(StereoMatchingDataset):
    """InStereo2k: ``InStereo2k/<train|test>/<scene>/left.png, right.png, left_disp.png, right_disp.png``, the
    disparities 16-bit PNGs of 1024 x pixels."""

    def __init__(self, root, split="train", transforms=None):
        super().__init__(root, transforms)
        base = Path(root) / "InStereo2k" / split
        verify_str_arg(split, "split", valid_values=("train", "test"))
        self._images = self._scan_pairs(str(base / "*" / "left.png"), str(base / "*" / "right.png"))
        self._disparities = self._scan_pairs(str(base / "*" / "left_disp.png"), str(base / "*" / "right_disp.png"))

    def _read_disparity(self, path):
        return (np.asarray(Image.open(path), dtype=np.float32) / 1024.0)[None], None
