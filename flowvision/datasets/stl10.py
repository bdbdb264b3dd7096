"""STL-10: 96x96 images in 10 classes plus 100,000 unlabelled ones, from the binary files of
``stl10_binary`` (uint8 images stored channel-major and column-major, labels 1-10)."""
import os

import numpy as np
from PIL import Image

from .utils import VisionDataset, check_integrity, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["STL10"]


class STL10(VisionDataset):
    """Items are (RGB PIL image, class 0-9, or -1 for unlabelled images).

    Args:
        split: ``"train"``, ``"train+unlabeled"``, ``"unlabeled"`` or ``"test"``.
        folds: one of the 10 predefined training folds (0-9), or None for all training images.
    """

    base_folder = "stl10_binary"
    url = "http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz"
    filename = "stl10_binary.tar.gz"
    tgz_md5 = "91f7769df0f17e558f3565bffb0c7dfb"
    class_names_file = "class_names.txt"
    folds_list_file = "fold_indices.txt"
    train_list = [["train_X.bin", "918c2871b30a85fa023e0c44e0bee87f"],
                  ["train_y.bin", "5a34089d4802c674881badbb80307741"],
                  ["unlabeled_X.bin", "5242ba1fed5e4be9e1e742405eb56ca4"]]
    test_list = [["test_X.bin", "7f263ba9f9e0b06b93213547f721ac82"], ["test_y.bin", "36f9794fa4beb8a2c72628de14fa638e"]]
    splits = ("train", "train+unlabeled", "unlabeled", "test")

    def __init__(self, root, split="train", folds=None, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self.splits)
        self.folds = self._verify_folds(folds)
        if download:
            self.download()
        elif not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        if split in ("train", "train+unlabeled"):
            self.data, self.labels = self._load("train_X.bin", "train_y.bin")
            self._select_fold(folds)
            if split == "train+unlabeled":
                unlabeled = self._load("unlabeled_X.bin")[0]
                self.data = np.concatenate((self.data, unlabeled))
                self.labels = np.concatenate((self.labels, np.full(len(unlabeled), -1)))
        elif split == "unlabeled":
            self.data = self._load("unlabeled_X.bin")[0]
            self.labels = np.full(len(self.data), -1)
        else:
            self.data, self.labels = self._load("test_X.bin", "test_y.bin")
        class_file = os.path.join(self.root, self.base_folder, self.class_names_file)
        if os.path.isfile(class_file):
            with open(class_file) as f:
                self.classes = f.read().splitlines()

    @staticmethod
    def _verify_folds(folds):
        if folds is None:
            return None
        if not isinstance(folds, int):
            raise ValueError(f"Expected type None or int for argument folds, but got type {type(folds)}.")
        if folds not in range(10):
            raise ValueError(f"Value for argument folds should be in the range [0, 10), but got {folds}.")
        return folds

    def _load(self, data_file, labels_file=None):
        """Images [N, 3, 96, 96] (rows and columns put the usual way round) and labels 0-9, or None."""
        folder = os.path.join(self.root, self.base_folder)
        labels = None
        if labels_file:
            labels = np.fromfile(os.path.join(folder, labels_file), dtype=np.uint8) - 1
        images = np.fromfile(os.path.join(folder, data_file), dtype=np.uint8).reshape(-1, 3, 96, 96)
        return images.transpose(0, 1, 3, 2), labels

    def _select_fold(self, folds):
        if folds is None:
            return
        with open(os.path.join(self.root, self.base_folder, self.folds_list_file)) as f:
            indices = np.array(f.read().splitlines()[folds].split(), dtype=np.int64)
        self.data, self.labels = self.data[indices], self.labels[indices]

    def _check_integrity(self):
        return all(check_integrity(os.path.join(self.root, self.base_folder, name), md5)
                   for name, md5 in self.train_list + self.test_list)

    def download(self):
        """Fetch and unpack the tar.gz (md5-checked) unless the binary files are there and intact."""
        if not self._check_integrity():
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def __getitem__(self, index):
        image = Image.fromarray(np.transpose(self.data[index], (1, 2, 0)))
        return self._apply(image, int(self.labels[index]))

    def __len__(self):
        return self.data.shape[0]

    def extra_repr(self):
        return f"Split: {self.split}"
