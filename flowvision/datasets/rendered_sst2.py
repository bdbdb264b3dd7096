"""Rendered SST2 (from CLIP's evaluation): sentences of the Stanford Sentiment Treebank rendered as images,
``rendered-sst2/<train|valid|test>/<negative|positive>/*.png``."""
from pathlib import Path

from .folder import default_loader, make_dataset
from .utils import VisionDataset, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["RenderedSST2"]


class RenderedSST2(VisionDataset):
    """Items are (image, 0 for negative / 1 for positive)."""

    _URL = "https://openaipublic.azureedge.net/clip/data/rendered-sst2.tgz"
    _MD5 = "2384d08e9dcfa4bd55b324e610496ee5"

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False,
                 loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        self._split_to_folder = {"train": "train", "val": "valid", "test": "test"}
        self._base_folder = Path(self.root) / "rendered-sst2"
        self.classes = ["negative", "positive"]
        self.class_to_idx = {"negative": 0, "positive": 1}
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        self._samples = make_dataset(str(self._base_folder / self._split_to_folder[self._split]),
                                     extensions=("png",))
        self.loader = loader

    def __len__(self):
        return len(self._samples)

    def __getitem__(self, index):
        path, label = self._samples[index]
        return self._apply(self.loader(path), label)

    def extra_repr(self):
        return f"split={self._split}"

    def _check_exists(self):
        folder = self._base_folder / self._split_to_folder[self._split]
        return all((folder / name).is_dir() for name in self.classes)

    def _download(self):
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, self.root, md5=self._MD5)
