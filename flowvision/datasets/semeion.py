"""SEMEION: 1,593 handwritten digits scanned to 16x16 black-and-white pixels, one text line each (256 pixel values
then a one-hot label of 10)."""
import os

import numpy as np
from PIL import Image

from .utils import VisionDataset, check_integrity, download_url

__all__ = ["SEMEION"]


class SEMEION(VisionDataset):
    """Items are (PIL 'L' image of 0/255 pixels, digit). ``download`` defaults to True, as in torchvision."""

    url = "http://archive.ics.uci.edu/ml/machine-learning-databases/semeion/semeion.data"
    filename = "semeion.data"
    md5_checksum = "cb545d371d2ce14ec121470795a77432"

    def __init__(self, root, transform=None, target_transform=None, download=True):
        super().__init__(root, transform=transform, target_transform=target_transform)
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        table = np.loadtxt(os.path.join(self.root, self.filename))
        self.data = (table[:, :256] * 255).astype(np.uint8).reshape(-1, 16, 16)
        self.labels = np.nonzero(table[:, 256:])[1]

    def __getitem__(self, index):
        return self._apply(Image.fromarray(self.data[index], mode="L"), int(self.labels[index]))

    def __len__(self):
        return len(self.data)

    def _check_integrity(self):
        return check_integrity(os.path.join(self.root, self.filename), self.md5_checksum)

    def download(self):
        """Fetch the data file unless a verified copy is there."""
        if self._check_integrity():
            return
        download_url(self.url, self.root, self.filename, self.md5_checksum)
