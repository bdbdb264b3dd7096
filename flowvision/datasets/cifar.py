"""CIFAR-10 and CIFAR-100 from the python-pickle batches of the standard tar.gz, read without running code."""
import os
import pickle

import numpy as np
from PIL import Image

from .utils import VisionDataset, check_integrity, download_and_extract_archive, mirror_urls

__all__ = ["CIFAR10", "CIFAR100", "load_batch"]


def _plain_dtype(*args):
    """numpy.dtype for pickles, refusing object dtypes (their items could hold arbitrary objects)."""
    dtype = np.dtype(*args)
    if dtype.hasobject:
        raise pickle.UnpicklingError("object arrays are not allowed in a CIFAR batch")
    return dtype


def _reconstruct(subtype, shape, dtype):
    """numpy's array-unpickling hook, limited to plain ndarrays of non-object dtypes."""
    if subtype is not np.ndarray:
        raise pickle.UnpicklingError("only numpy.ndarray may be rebuilt from a CIFAR batch")
    return np.ndarray.__new__(np.ndarray, shape, _plain_dtype(dtype))


class _BatchUnpickler(pickle.Unpickler):
    """Allows only builtin containers and plain numpy arrays: a malicious batch cannot run code."""

    _allowed = {
        ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): _plain_dtype,
        ("_codecs", "encode"): lambda text, encoding="utf-8": text.encode(encoding),
    }

    def find_class(self, module, name):
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(f"global '{module}.{name}' is forbidden in a CIFAR batch") from None


def load_batch(path):
    """One CIFAR batch file as a dict with str keys (Python 2 strings decoded as latin-1)."""
    with open(path, "rb") as f:
        entry = _BatchUnpickler(f, encoding="latin1").load()
    if not isinstance(entry, dict):
        raise pickle.UnpicklingError(f"{path}: expected a dict, got {type(entry).__name__}")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}


class CIFAR10(VisionDataset):
    """CIFAR-10: ``root/cifar-10-batches-py``; items are (PIL RGB 32x32 image, int label)."""

    base_folder = "cifar-10-batches-py"
    mirrors = ["https://www.cs.toronto.edu/~kriz/"]
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}
    labels_key = "labels"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        data, self.targets = [], []
        for name, _ in (self.train_list if train else self.test_list):
            entry = load_batch(os.path.join(self.root, self.base_folder, name))
            data.append(np.asarray(entry["data"], dtype=np.uint8))
            self.targets.extend(int(t) for t in entry[self.labels_key])
        self.data = np.concatenate(data).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        self.classes = list(load_batch(os.path.join(self.root, self.base_folder, self.meta["filename"]))
                            [self.meta["key"]])
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    @property
    def url(self):
        return mirror_urls(self.mirrors, self.filename)[0]

    def _check_integrity(self):
        files = self.train_list + self.test_list + [[self.meta["filename"], self.meta["md5"]]]
        return all(check_integrity(os.path.join(self.root, self.base_folder, name), md5) for name, md5 in files)

    def download(self):
        """Fetch and unpack the tar.gz (md5-checked) unless the batches are already there and intact."""
        if self._check_integrity():
            return
        errors = []
        for url in mirror_urls(self.mirrors, self.filename):
            try:
                download_and_extract_archive(url, self.root, filename=self.filename, md5=self.tgz_md5)
                break
            except RuntimeError as e:
                errors.append(f"  {url}: {e}")
        else:
            raise RuntimeError(f"Error downloading {self.filename}; tried:\n" + "\n".join(errors) +
                               f"\nYou can also put {self.filename} into {self.root} by hand.")
        if not self._check_integrity():
            raise RuntimeError(f"{self.filename} was extracted but its batches fail their md5 checks")

    def __getitem__(self, index):
        return self._apply(Image.fromarray(self.data[index]), self.targets[index])

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100 with its 100 fine labels."""

    base_folder = "cifar-100-python"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffdfab6717acfc"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424638fde48"}
    labels_key = "fine_labels"
