"""USPS handwritten digits, from the bz2-compressed LIBSVM files: ``<label 1-10> 1:<v> ... 256:<v>`` per line,
pixel values in [-1, 1]."""
import bz2
import os

import numpy as np
from PIL import Image

from .utils import VisionDataset, download_url

__all__ = ["USPS"]


class USPS(VisionDataset):
    """Items are (16x16 PIL 'L' image, digit 0-9); ``data`` is the uint8 [N, 16, 16] array."""

    split_list = {
        "train": ["https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/usps.bz2", "usps.bz2",
                  "ec16c51db3855ca6c91edd34d0e9b197"],
        "test": ["https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/usps.t.bz2", "usps.t.bz2",
                 "8ea070ee2aca1ac39742fdd1ef5ed118"],
    }

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        url, filename, md5 = self.split_list["train" if train else "test"]
        path = os.path.join(self.root, filename)
        if download and not os.path.exists(path):
            download_url(url, self.root, filename, md5=md5)
        with bz2.open(path) as f:
            rows = [line.decode().split() for line in f]
        values = np.asarray([[field.split(":")[-1] for field in row[1:]] for row in rows], dtype=np.float32)
        # [-1, 1] -> [0, 255], truncated, in float32 as the reference computes it
        self.data = ((values.reshape(-1, 16, 16) + 1) / 2 * 255).astype(np.uint8)
        self.targets = [int(row[0]) - 1 for row in rows]

    def __getitem__(self, index):
        return self._apply(Image.fromarray(self.data[index], mode="L"), int(self.targets[index]))

    def __len__(self):
        return len(self.data)
