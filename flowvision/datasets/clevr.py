"""CLEVR as a classification set: each rendered scene labelled with its number of objects (from the split's scene
json; the test split has no labels)."""
import json
import pathlib
from urllib.parse import urlparse

from .folder import default_loader
from .utils import VisionDataset, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["CLEVRClassification"]


class CLEVRClassification(VisionDataset):
    """Items are (image, object count or None); images ``clevr/CLEVR_v1.0/images/<split>/*`` in sorted order."""

    _URL = "https://dl.fbaipublicfiles.com/clevr/CLEVR_v1.0.zip"
    _MD5 = "b11922020e72d0cd9154779b2d3d07d2"

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False,
                 loader=default_loader):
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader = loader
        self._base_folder = pathlib.Path(self.root) / "clevr"
        self._data_folder = self._base_folder / pathlib.Path(urlparse(self._URL).path).stem
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        self._image_files = sorted(self._data_folder.joinpath("images", self._split).glob("*"))
        if self._split == "test":
            self._labels = [None] * len(self._image_files)
        else:
            with open(self._data_folder / "scenes" / f"CLEVR_{self._split}_scenes.json") as f:
                scenes = json.load(f)["scenes"]
            counts = {scene["image_filename"]: len(scene["objects"]) for scene in scenes}
            self._labels = [counts[path.name] for path in self._image_files]

    def __len__(self):
        return len(self._image_files)

    def __getitem__(self, index):
        return self._apply(self.loader(self._image_files[index]), self._labels[index])

    def _check_exists(self):
        return self._data_folder.is_dir()

    def _download(self):
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, str(self._base_folder), md5=self._MD5)

    def extra_repr(self):
        return f"split={self._split}"
