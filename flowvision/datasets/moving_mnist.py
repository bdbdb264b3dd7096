"""Moving MNIST: 10,000 sequences of 20 frames of two digits bouncing in 64x64, one uint8 .npy array of shape
(frames, sequences, 64, 64)."""
import os

import numpy as np

import engine
from .utils import VisionDataset, download_url
from .vision import verify_str_arg

__all__ = ["MovingMNIST"]


class MovingMNIST(VisionDataset):
    """Items are uint8 tensors (frames, 1, 64, 64). ``split="train"`` keeps the first ``split_ratio`` frames of
    every sequence, ``"test"`` the rest, None all 20. ``transform`` gets the whole sequence."""

    _URL = "http://www.cs.toronto.edu/~nitish/unsupervised_video/mnist_test_seq.npy"
    _MD5 = "be083ec986bfe91a449d63653c411eb2"

    def __init__(self, root, split=None, split_ratio=10, download=False, transform=None):
        super().__init__(root, transform=transform)
        self._base_folder = os.path.join(self.root, type(self).__name__)
        self._filename = self._URL.split("/")[-1]
        if split is not None:
            verify_str_arg(split, "split", ("train", "test"))
        self.split = split
        if not isinstance(split_ratio, int):
            raise TypeError(f"`split_ratio` should be an integer, but got {type(split_ratio)}")
        if not 1 <= split_ratio <= 19:
            raise ValueError(f"`split_ratio` should be `1 <= split_ratio <= 19`, but got {split_ratio} instead.")
        self.split_ratio = split_ratio
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it.")
        frames = np.load(os.path.join(self._base_folder, self._filename))
        if split == "train":
            frames = frames[:split_ratio]
        elif split == "test":
            frames = frames[split_ratio:]
        self.data = engine.from_numpy(np.ascontiguousarray(frames.swapaxes(0, 1)[:, :, None]))

    def __getitem__(self, index):
        sequence = self.data[index]
        return self.transform(sequence) if self.transform is not None else sequence

    def __len__(self):
        return len(self.data)

    def _check_exists(self):
        return os.path.exists(os.path.join(self._base_folder, self._filename))

    def download(self):
        """Fetch the .npy file unless it is there."""
        if self._check_exists():
            return
        download_url(self._URL, self._base_folder, self._filename, md5=self._MD5)
