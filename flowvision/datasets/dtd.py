"""DTD, the Describable Textures Dataset: ``dtd/dtd/images/<class>/<file>``, with ten train/val/test partitions
listed in ``dtd/dtd/labels/<split><partition>.txt``."""
import pathlib

from .folder import default_loader
from .utils import download_and_extract_archive
from .vision import LabelledFilesDataset, verify_str_arg

__all__ = ["DTD"]


class DTD(LabelledFilesDataset):
    """Items are (RGB PIL image, class index); classes are the sorted texture names of the chosen list.

    Args:
        root: folder holding ``dtd``.
        split: ``"train"``, ``"val"`` or ``"test"``.
        partition: which of the ten splits, 1 to 10.
    """

    _URL = "https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz"
    _MD5 = "fff73e5086ae6bdbea199a49dfb8a4c1"

    def __init__(self, root, split="train", partition=1, transform=None, target_transform=None, download=False,
                 loader=default_loader):
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        if not isinstance(partition, int) or not 1 <= partition <= 10:
            raise ValueError(f"Parameter 'partition' should be an integer with `1 <= partition <= 10`, "
                             f"but got {partition} instead")
        self._partition = partition
        super().__init__(root, transform, target_transform, loader)
        self._base_folder = pathlib.Path(self.root) / type(self).__name__.lower()
        self._data_folder = self._base_folder / "dtd"
        self._meta_folder = self._data_folder / "labels"
        self._images_folder = self._data_folder / "images"
        if download and not self._data_folder.is_dir():
            download_and_extract_archive(self._URL, str(self._base_folder), md5=self._MD5)
        if not self._data_folder.is_dir():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        names = []
        with open(self._meta_folder / f"{self._split}{self._partition}.txt") as f:
            for line in f:
                cls, name = line.strip().split("/")
                self._image_files.append(self._images_folder.joinpath(cls, name))
                names.append(cls)
        self.classes = sorted(set(names))
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self._labels = [self.class_to_idx[name] for name in names]

    def extra_repr(self):
        return f"split={self._split}, partition={self._partition}"
