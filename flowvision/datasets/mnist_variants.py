"""MNIST's relatives in IDX files: Kuzushiji-MNIST (KMNIST), EMNIST (letters and digits, six splits) and QMNIST
(MNIST with its full NIST provenance: each label row holds the class and 7 more fields)."""
import os
import shutil
import string

import numpy as np
from PIL import Image

import engine
from .mnist import MNIST, read_idx
from .utils import VisionDataset, check_integrity, download_and_extract_archive, extract_archive
from .vision import verify_str_arg

__all__ = ["KMNIST", "EMNIST", "QMNIST"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST: 10 cursive hiragana in MNIST's layout, ``root/KMNIST/raw``."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


def _uint8_idx(path, ndim):
    data = read_idx(path)
    if data.dtype != np.uint8 or data.ndim != ndim:
        raise ValueError(f"{path}: expected a uint8 array of {ndim} dimensions, got {data.dtype} of shape {data.shape}")
    return data


class EMNIST(MNIST):
    """EMNIST: ``root/EMNIST/raw/emnist-<split>-<train|test>-{images-idx3,labels-idx1}-ubyte``. Images are kept
    as published (transposed relative to MNIST), as torchvision keeps them.

    Args:
        split: ``"byclass"``, ``"bymerge"``, ``"balanced"``, ``"letters"``, ``"digits"`` or ``"mnist"``.
    """

    url = "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    _merged_classes = set("cijklmopsuvwxyz")  # lower-case letters that bymerge/balanced fold into upper case
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root, split, train=True, transform=None, target_transform=None, download=False):
        self.split = verify_str_arg(split, "split", self.splits)
        self.training_file, self.test_file = f"training_{split}.pt", f"test_{split}.pt"
        self.classes = self.classes_split_dict[split]
        VisionDataset.__init__(self, root, transform=transform, target_transform=target_transform)
        self.train = train
        if self._read_legacy_files():
            return
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        self.data = engine.from_numpy(_uint8_idx(self.images_file, 3))
        self.targets = engine.from_numpy(_uint8_idx(self.labels_file, 1).astype(np.int64))

    @property
    def _file_prefix(self):
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def images_file(self):
        return os.path.join(self.raw_folder, f"{self._file_prefix}-images-idx3-ubyte")

    @property
    def labels_file(self):
        return os.path.join(self.raw_folder, f"{self._file_prefix}-labels-idx1-ubyte")

    def _check_exists(self):
        return all(check_integrity(path) for path in (self.images_file, self.labels_file))

    def download(self):
        """Fetch the zip of all splits (md5-checked) and gunzip its files into the raw folder."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(gzip_folder):
            if name.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, name), self.raw_folder)
        shutil.rmtree(gzip_folder)


class QMNIST(MNIST):
    """QMNIST: ``what`` picks ``"train"``, ``"test"`` (60,000), ``"test10k"``/``"test50k"`` (its MNIST and new
    parts) or ``"nist"``. ``targets`` is [N, 8] int64; with ``compat`` an item's target is the class alone.
    """

    _BASE = "https://raw.githubusercontent.com/facebookresearch/qmnist/master/"
    subsets = {"train": "train", "test": "test", "test10k": "test", "test50k": "test", "nist": "nist"}
    resources = {
        "train": [(_BASE + "qmnist-train-images-idx3-ubyte.gz", "ed72d4157d28c017586c42bc6afe6370"),
                  (_BASE + "qmnist-train-labels-idx2-int.gz", "0058f8dd561b90ffdd0f734c6a30e5e4")],
        "test": [(_BASE + "qmnist-test-images-idx3-ubyte.gz", "1394631089c404de565df7b7aeaf9412"),
                 (_BASE + "qmnist-test-labels-idx2-int.gz", "5b5b05890a5e13444e108efe57b788aa")],
        "nist": [(_BASE + "xnist-images-idx3-ubyte.xz", "7f124b3b8ab81486c9d8c2749c17f834"),
                 (_BASE + "xnist-labels-idx2-int.xz", "5ed0e788978e45d4a8bd4b7caec3d79d")],
    }
    _TEST10K = 10000  # the first 10,000 test images are MNIST's own test set

    def __init__(self, root, what=None, compat=True, train=True, transform=None, target_transform=None,
                 download=False):
        what = what if what is not None else ("train" if train else "test")
        self.what = verify_str_arg(what, "what", tuple(self.subsets))
        self.compat = compat
        self.data_file = self.training_file = self.test_file = what + ".pt"
        VisionDataset.__init__(self, root, transform=transform, target_transform=target_transform)
        self.train = train
        if self._read_legacy_files():  # the whole file, as torchvision reads it (test10k/test50k not cut out)
            return
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        data, targets = _uint8_idx(self.images_file, 3), read_idx(self.labels_file).astype(np.int64)
        if targets.ndim != 2:
            raise ValueError(f"targets should have 2 dimensions instead of {targets.ndim}")
        part = {"test10k": slice(0, self._TEST10K), "test50k": slice(self._TEST10K, None)}.get(what, slice(None))
        self.data = engine.from_numpy(np.ascontiguousarray(data[part]))
        self.targets = engine.from_numpy(np.ascontiguousarray(targets[part]))

    def _raw_path(self, which):
        url = self.resources[self.subsets[self.what]][which][0]
        return os.path.join(self.raw_folder, os.path.splitext(os.path.basename(url))[0])

    @property
    def images_file(self):
        return self._raw_path(0)

    @property
    def labels_file(self):
        return self._raw_path(1)

    def _check_exists(self):
        return all(check_integrity(path) for path in (self.images_file, self.labels_file))

    def download(self):
        """Fetch and decompress the subset's two files (md5-checked)."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for url, md5 in self.resources[self.subsets[self.what]]:
            download_and_extract_archive(url, self.raw_folder, md5=md5)

    def __getitem__(self, index):
        image = Image.fromarray(self.data[index].numpy(), mode="L")
        target = self.targets[index]
        target = int(target[0]) if self.compat else target
        return self._apply(image, target)

    def extra_repr(self):
        return f"Split: {self.what}"
