"""SVHN, Street View House Numbers, cropped 32x32 digits: ``<split>_32x32.mat`` with ``X`` [32, 32, 3, N] uint8
and ``y`` [N, 1] labels 1-10 (10 standing for the digit 0), read with flowvision's own .mat reader."""
import os

import numpy as np
from PIL import Image

from .matlab import read_mat
from .utils import VisionDataset, check_integrity, download_url
from .vision import verify_str_arg

__all__ = ["SVHN"]


class SVHN(VisionDataset):
    """Items are (RGB PIL image, digit 0-9); ``data`` is [N, 3, 32, 32] uint8, ``labels`` int64.

    Args:
        split: ``"train"``, ``"test"`` or ``"extra"``.
    """

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        variables = read_mat(os.path.join(self.root, self.filename))
        self.labels = variables["y"].astype(np.int64).squeeze()
        self.labels[self.labels == 10] = 0
        self.data = np.transpose(variables["X"], (3, 2, 0, 1))

    def _check_integrity(self):
        return check_integrity(os.path.join(self.root, self.filename), self.file_md5)

    def download(self):
        """Fetch the split's .mat file (md5-checked) unless an intact copy is there."""
        download_url(self.url, self.root, self.filename, self.file_md5)

    def __getitem__(self, index):
        return self._apply(Image.fromarray(np.transpose(self.data[index], (1, 2, 0))), int(self.labels[index]))

    def __len__(self):
        return len(self.data)

    def extra_repr(self):
        return f"Split: {self.split}"
