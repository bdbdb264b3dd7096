"""MNIST and Fashion-MNIST from their IDX files (gzip-compressed, as published)."""
import os
import warnings

import numpy as np
from PIL import Image

import engine
from .utils import VisionDataset, check_integrity, download_and_extract_archive, mirror_urls

__all__ = ["MNIST", "FashionMNIST", "read_idx"]

# IDX type byte -> big-endian numpy dtype.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """Read an (uncompressed) IDX file into a numpy array of its declared shape and type."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise RuntimeError(f"{path} is not an IDX file (bad magic number {raw[:4].hex()})")
    ndim = raw[3]
    shape = tuple(int(d) for d in np.frombuffer(raw, ">i4", ndim, 4))
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    offset = 4 + 4 * ndim
    count = int(np.prod(shape)) if shape else 1
    if len(raw) - offset != count * dtype.itemsize:
        raise RuntimeError(f"{path}: header declares shape {shape} but holds {len(raw) - offset} bytes of data")
    return np.frombuffer(raw, dtype, count, offset).astype(dtype.newbyteorder("="), copy=True).reshape(shape)


class MNIST(VisionDataset):
    """MNIST handwritten digits: ``root/MNIST/raw`` holds the IDX files; items are (PIL 'L' image, int)."""

    mirrors = [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "http://yann.lecun.com/exdb/mnist/",
    ]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    training_file = "training.pt"  # torchvision's legacy processed files, (data, targets) saved as tensors
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if self._read_legacy_files():
            return
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        prefix = "train" if train else "t10k"
        self.data = engine.from_numpy(read_idx(os.path.join(self.raw_folder, f"{prefix}-images-idx3-ubyte")))
        labels = read_idx(os.path.join(self.raw_folder, f"{prefix}-labels-idx1-ubyte"))
        self.targets = engine.from_numpy(labels.astype(np.int64))

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, type(self).__name__, "processed")

    def _renamed(self, old, new):
        """The deprecated alias ``old`` of the attribute ``new``, with torchvision's warning."""
        warnings.warn(f"{old} has been renamed {new}")
        return getattr(self, new)

    train_labels = property(lambda self: self._renamed("train_labels", "targets"))
    test_labels = property(lambda self: self._renamed("test_labels", "targets"))
    train_data = property(lambda self: self._renamed("train_data", "data"))
    test_data = property(lambda self: self._renamed("test_data", "data"))

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

    def _read_legacy_files(self):
        """Whether ``data`` and ``targets`` were read from the processed files older torchvision versions wrote
        (both splits must be there, as torchvision requires); such a root is used as torchvision uses it."""
        files = [os.path.join(self.processed_folder, name) for name in (self.training_file, self.test_file)]
        if not all(check_integrity(path) for path in files):
            return False
        self.data, self.targets = engine.load(files[0] if self.train else files[1], weights_only=True)
        return True

    def _check_exists(self):
        return all(os.path.isfile(os.path.join(self.raw_folder, os.path.splitext(name)[0]))
                   for name, _ in self.resources)

    def download(self):
        """Fetch each missing IDX file from the first mirror that serves it, md5-checked, and gunzip it."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            errors = []
            for url in mirror_urls(self.mirrors, filename):
                try:
                    download_and_extract_archive(url, self.raw_folder, filename=filename, md5=md5)
                    break
                except RuntimeError as e:
                    errors.append(f"  {url}: {e}")
            else:
                raise RuntimeError(f"Error downloading {filename}; tried:\n" + "\n".join(errors) +
                                   f"\nYou can also put {filename} into {self.raw_folder} by hand.")

    def __getitem__(self, index):
        img = Image.fromarray(self.data[index].numpy())
        return self._apply(img, int(self.targets[index]))

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: MNIST's file layout with clothing images."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
