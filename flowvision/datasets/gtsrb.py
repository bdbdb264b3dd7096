"""GTSRB, the German Traffic Sign Recognition Benchmark: training images in ``gtsrb/GTSRB/Training/<class>/``
(.ppm), test images in ``gtsrb/GTSRB/Final_Test/Images`` with their classes in ``gtsrb/GT-final_test.csv``."""
import csv
import pathlib

from PIL import Image

from .folder import make_dataset
from .utils import VisionDataset, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["GTSRB"]

_BASE_URL = "https://sid.erda.dk/public/archives/daaeac0d7ce1152aea9b61d9f1e19370/"


class GTSRB(VisionDataset):
    """Items are (RGB PIL image, class id 0-42)."""

    _ARCHIVES = {"train": [("GTSRB-Training_fixed.zip", "513f3c79a4c5141765e10e952eaa2478")],
                 "test": [("GTSRB_Final_Test_Images.zip", "c7e4e6327067d32654124b0fe9e82185"),
                          ("GTSRB_Final_Test_GT.zip", "fe31e9c9270bbcd7b84b7f21a9d9d9e5")]}

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = pathlib.Path(root) / "gtsrb"
        self._target_folder = self._base_folder / "GTSRB" / ("Training" if split == "train" else "Final_Test/Images")
        if download:
            self.download()
        if not self._target_folder.is_dir():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        if split == "train":
            self._samples = make_dataset(str(self._target_folder), extensions=(".ppm",))
        else:
            with open(self._base_folder / "GT-final_test.csv") as f:
                rows = csv.DictReader(f, delimiter=";", skipinitialspace=True)
                self._samples = [(str(self._target_folder / row["Filename"]), int(row["ClassId"])) for row in rows]

    def download(self):
        """Fetch and unpack the split's archives (md5-checked) unless its image folder is there."""
        if not self._target_folder.is_dir():
            for name, md5 in self._ARCHIVES[self._split]:
                download_and_extract_archive(_BASE_URL + name, str(self._base_folder), md5=md5)

    def __getitem__(self, index):
        path, target = self._samples[index]
        return self._apply(Image.open(path).convert("RGB"), target)

    def __len__(self):
        return len(self._samples)
