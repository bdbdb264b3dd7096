"""FGVC-Aircraft 2013b: 10,000 aircraft photos labelled by variant, family or manufacturer."""
import os

from .folder import default_loader
from .utils import download_and_extract_archive
from .vision import LabelledFilesDataset, verify_str_arg

__all__ = ["FGVCAircraft"]

_CLASS_FILES = {"variant": "variants.txt", "family": "families.txt", "manufacturer": "manufacturers.txt"}


class FGVCAircraft(LabelledFilesDataset):
    """Items are (RGB PIL image, class index at ``annotation_level``).

    Args:
        split: ``"train"``, ``"val"``, ``"trainval"`` or ``"test"``.
        annotation_level: ``"variant"``, ``"family"`` or ``"manufacturer"``.
    """

    _URL = "https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/archives/fgvc-aircraft-2013b.tar.gz"

    def __init__(self, root, split="trainval", annotation_level="variant", transform=None, target_transform=None,
                 download=False, loader=default_loader):
        super().__init__(root, transform, target_transform, loader)
        self._split = verify_str_arg(split, "split", ("train", "val", "trainval", "test"))
        self._annotation_level = verify_str_arg(annotation_level, "annotation_level", tuple(_CLASS_FILES))
        self._data_path = os.path.join(self.root, "fgvc-aircraft-2013b")
        if download and not os.path.isdir(self._data_path):
            download_and_extract_archive(self._URL, self.root)
        if not os.path.isdir(self._data_path):
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        data = os.path.join(self._data_path, "data")
        with open(os.path.join(data, _CLASS_FILES[annotation_level])) as f:
            self.classes = [line.strip() for line in f]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        with open(os.path.join(data, f"images_{annotation_level}_{split}.txt")) as f:
            for line in f:
                image_name, label = line.strip().split(" ", 1)
                self._image_files.append(os.path.join(data, "images", f"{image_name}.jpg"))
                self._labels.append(self.class_to_idx[label])
