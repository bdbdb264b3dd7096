"""Food-101: 101 dishes, ``food-101/images/<class>/<id>.jpg`` with the split lists in ``food-101/meta/<split>.json``."""
import json
from pathlib import Path

from .folder import default_loader
from .utils import download_and_extract_archive
from .vision import LabelledFilesDataset, verify_str_arg

__all__ = ["Food101"]


class Food101(LabelledFilesDataset):
    """Items are (RGB PIL image, class index); classes are the split file's dish names, sorted.

    Args:
        root: folder holding ``food-101``.
        split: ``"train"`` or ``"test"``.
        download: fetch and unpack the tar.gz (md5-checked) unless ``food-101`` is there.
    """

    _URL = "http://data.vision.ee.ethz.ch/cvl/food-101.tar.gz"
    _MD5 = "85eeb15f3717b99a5da872d97d918f87"

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False,
                 loader=default_loader):
        super().__init__(root, transform, target_transform, loader)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = Path(self.root) / "food-101"
        self._meta_folder = self._base_folder / "meta"
        self._images_folder = self._base_folder / "images"
        if download and not self._check_exists():
            download_and_extract_archive(self._URL, self.root, md5=self._MD5)
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        with open(self._meta_folder / f"{split}.json") as f:
            files_by_class = json.load(f)
        self.classes = sorted(files_by_class)
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        for name, stems in files_by_class.items():  # in the file's order, as the reference reads it
            self._labels += [self.class_to_idx[name]] * len(stems)
            self._image_files += [self._images_folder.joinpath(*f"{stem}.jpg".split("/")) for stem in stems]

    def _check_exists(self):
        return self._meta_folder.is_dir() and self._images_folder.is_dir()

    def extra_repr(self):
        return f"split={self._split}"
