"""FER2013: 48x48 grey faces labelled with one of seven expressions, as Kaggle publishes them: ``train.csv`` and
``test.csv`` of the challenge (emotion, pixels), or the full ``fer2013.csv`` / ``icml_face_data.csv`` whose Usage
column splits it (Training; PublicTest and PrivateTest for test)."""
import csv
import pathlib

import numpy as np
from PIL import Image

from .utils import VisionDataset, check_integrity
from .vision import verify_str_arg

__all__ = ["FER2013"]


class FER2013(VisionDataset):
    """Items are (PIL 'L' image, emotion), the emotion None in the challenge's unlabelled test.csv.

    The file is chosen as torchvision chooses it: fer2013.csv when present, else icml_face_data.csv (whose column
    names start with a space), else the split's own csv; each is md5-checked.
    """

    _RESOURCES = {
        "train": ("train.csv", "3f0dfb3d3fd99c811a1299cb947e3131"),
        "test": ("test.csv", "b02c2298636a634e8c2faabbf3ea9a23"),
        "fer": ("fer2013.csv", "f8428a1edbd21e88f42c73edd2a14f95"),
        "icml": ("icml_face_data.csv", "b114b9e04e6949e5fe8b6a98b3892b1d"),
    }
    _SIDE = 48

    def __init__(self, root, split="train", transform=None, target_transform=None):
        self._split = verify_str_arg(split, "split", ("train", "test"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        base_folder = pathlib.Path(self.root) / "fer2013"
        use_fer = (base_folder / self._RESOURCES["fer"][0]).exists()
        use_icml = not use_fer and (base_folder / self._RESOURCES["icml"][0]).exists()
        file_name, md5 = self._RESOURCES["fer" if use_fer else "icml" if use_icml else self._split]
        data_file = base_folder / file_name
        if not check_integrity(str(data_file), md5=md5):
            raise RuntimeError(f"{file_name} not found in {base_folder} or corrupted. You can download it from "
                               "https://www.kaggle.com/c/challenges-in-representation-learning-facial-expression-"
                               "recognition-challenge")
        pixels_key, usage_key = (" pixels", " Usage") if use_icml else ("pixels", "Usage")
        labelled = use_fer or use_icml or self._split == "train"
        usages = ("Training",) if self._split == "train" else ("PublicTest", "PrivateTest")
        with open(data_file, newline="") as f:
            rows = [row for row in csv.DictReader(f) if not (use_fer or use_icml) or row[usage_key] in usages]
        side = self._SIDE
        self._samples = [(np.array(row[pixels_key].split(), dtype=np.int64).astype(np.uint8).reshape(side, side),
                          int(row["emotion"]) if labelled else None) for row in rows]

    def __len__(self):
        return len(self._samples)

    def __getitem__(self, index):
        pixels, target = self._samples[index]
        return self._apply(Image.fromarray(pixels), target)

    def extra_repr(self):
        return f"split={self._split}"
