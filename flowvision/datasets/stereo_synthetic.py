"""Stereo-matching datasets rendered from synthetic scenes: CARLA (as linked by CREStereo), CREStereo's own,
Falling Things, SceneFlow (FlyingThings3D, Monkaa, Driving) and Sintel's stereo pairs. Items as in ``stereo``."""
import json
import os
from pathlib import Path

import numpy as np
from PIL import Image

from .flow_formats import read_pfm
from .stereo import StereoMatchingDataset
from .vision import verify_str_arg

__all__ = ["CarlaStereo", "CREStereo", "FallingThingsStereo", "SceneFlowStereo", "SintelStereo"]


def _absolute_pfm_disparity(path):
    return np.abs(read_pfm(path, channels=1)), None


class CarlaStereo(StereoMatchingDataset):
    """``carla-highres/trainingF/<scene>/im0.png, im1.png, disp0GT.pfm, disp1GT.pfm``; disparities made positive."""

    def __init__(self, root, transforms=None):
        super().__init__(root, transforms)
        scenes = Path(root) / "carla-highres" / "trainingF" / "*"
        self._images = self._scan_pairs(str(scenes / "im0.png"), str(scenes / "im1.png"))
        self._disparities = self._scan_pairs(str(scenes / "disp0GT.pfm"), str(scenes / "disp1GT.pfm"))

    def _read_disparity(self, path):
        return _absolute_pfm_disparity(path)


class CREStereo(StereoMatchingDataset):
    """``CREStereo/<shapenet|reflective|tree|hole>/<n>_left.jpg, <n>_right.jpg, <n>_left.disp.png,
    <n>_right.disp.png`` (disparity PNGs of 32 x pixels). Items are 4-tuples whose mask is None."""

    _has_built_in_disparity_mask = True
    _SUBSETS = ("shapenet", "reflective", "tree", "hole")

    def __init__(self, root, transforms=None):
        super().__init__(root, transforms)
        base = Path(root) / "CREStereo"
        for subset in self._SUBSETS:
            self._images += self._scan_pairs(str(base / subset / "*_left.jpg"), str(base / subset / "*_right.jpg"))
            self._disparities += self._scan_pairs(str(base / subset / "*_left.disp.png"),
                                                  str(base / subset / "*_right.disp.png"))

    def _read_disparity(self, path):
        return np.asarray(Image.open(path), dtype=np.float32)[None] / 32.0, None


class FallingThingsStereo(StereoMatchingDataset):
    """Falling Things: ``FallingThings/single/<object>/<scene>/`` and ``mixed/<scene>/`` holding ``*.left.jpg``,
    ``*.right.jpg``, ``*.left.depth.png``, ``*.right.depth.png`` and ``_camera_settings.json``.

    Depths (16-bit, in 0.1 mm) become disparities baseline (6 cm) x focal length x 100 / depth.
    """

    _BASELINE, _PIXEL_CONSTANT = 6, 100

    def __init__(self, root, variant="single", transforms=None):
        super().__init__(root, transforms)
        base = Path(root) / "FallingThings"
        verify_str_arg(variant, "variant", valid_values=("single", "mixed", "both"))
        variants = {"single": ["single"], "mixed": ["mixed"], "both": ["single", "mixed"]}[variant]
        scene_dirs = {"single": Path("*") / "*", "mixed": Path("*")}
        for name in variants:
            scenes = base / name / scene_dirs[name]
            self._images += self._scan_pairs(str(scenes / "*.left.jpg"), str(scenes / "*.right.jpg"))
            self._disparities += self._scan_pairs(str(scenes / "*.left.depth.png"), str(scenes / "*.right.depth.png"))

    def _read_disparity(self, path):
        depth = np.asarray(Image.open(path))
        with open(Path(path).parent / "_camera_settings.json") as f:
            focal = json.load(f)["camera_settings"][0]["intrinsic_settings"]["fx"]
        disparity = self._BASELINE * focal * self._PIXEL_CONSTANT / depth.astype(np.float32)
        return disparity[None], None


class SceneFlowStereo(StereoMatchingDataset):
    """SceneFlow: ``SceneFlow/<FlyingThings3D|Driving|Monkaa>/frames_<clean|final>pass/<...>/<left|right>/*.png``
    and ``disparity/<...>/<left|right>/*.pfm``, where ``<...>`` is ``<scene>`` for Monkaa and three levels for the
    others; disparities made positive."""

    _SCENE_DIRS = {"Monkaa": Path("*"), "FlyingThings3D": Path("*") / "*" / "*", "Driving": Path("*") / "*" / "*"}

    def __init__(self, root, variant="FlyingThings3D", pass_name="clean", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(variant, "variant", valid_values=("FlyingThings3D", "Driving", "Monkaa"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        passes = {"clean": ["frames_cleanpass"], "final": ["frames_finalpass"],
                  "both": ["frames_cleanpass", "frames_finalpass"]}[pass_name]
        base = Path(root) / "SceneFlow" / variant
        scenes = self._SCENE_DIRS[variant]
        for pass_dir in passes:
            frames = base / pass_dir / scenes
            self._images += self._scan_pairs(str(frames / "left" / "*.png"), str(frames / "right" / "*.png"))
            disparities = base / "disparity" / scenes
            self._disparities += self._scan_pairs(str(disparities / "left" / "*.pfm"),
                                                  str(disparities / "right" / "*.pfm"))

    def _read_disparity(self, path):
        return _absolute_pfm_disparity(path)


class SintelStereo(StereoMatchingDataset):
    """Sintel stereo: ``Sintel/training/<final|clean>_left/<scene>/*.png`` and ``_right``, left disparities in
    ``disparities`` (RGB-encoded: 4 R + G / 2**6 + B / 2**14), the mask the pixels neither in ``occlusions`` nor in
    ``outofframe``."""

    _has_built_in_disparity_mask = True

    def __init__(self, root, pass_name="final", transforms=None):
        super().__init__(root, transforms)
        verify_str_arg(pass_name, "pass_name", valid_values=("final", "clean", "both"))
        base = Path(root) / "Sintel" / "training"
        for name in {"final": ["final"], "clean": ["clean"], "both": ["final", "clean"]}[pass_name]:
            self._images += self._scan_pairs(str(base / f"{name}_left" / "*" / "*.png"),
                                             str(base / f"{name}_right" / "*" / "*.png"))
            self._disparities += self._scan_pairs(str(base / "disparities" / "*" / "*.png"))

    @staticmethod
    def _mask_paths(path):
        """The occlusion and out-of-frame masks of the disparity file ``path``."""
        path = Path(path)
        training, scene = path.parent.parent.parent, path.parent.name
        found = []
        for kind, label in (("occlusions", "Occlusion mask"), ("outofframe", "Out of frame mask")):
            mask_path = str(training / kind / scene / path.name)
            if not os.path.exists(mask_path):
                raise FileNotFoundError(f"{label} {mask_path} does not exist")
            found.append(mask_path)
        return found

    def _read_disparity(self, path):
        if path is None:
            return None, None
        rgb = np.asarray(Image.open(path), dtype=np.float32)
        r, g, b = np.split(rgb, 3, axis=-1)
        disparity = np.transpose(r * 4 + g / 2 ** 6 + b / 2 ** 14, (2, 0, 1))
        occlusion, out_of_frame = (np.asarray(Image.open(p)) == 0 for p in self._mask_paths(path))
        return disparity, np.logical_and(out_of_frame, occlusion)
