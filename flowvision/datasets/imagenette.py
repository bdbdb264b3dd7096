"""Imagenette: ten easy ImageNet classes, ``imagenette2[-320|-160]/<train|val>/<wnid>/*.JPEG``."""
from pathlib import Path

from .folder import default_loader, find_classes, make_dataset
from .utils import VisionDataset, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["Imagenette"]


class Imagenette(VisionDataset):
    """Items are (image, class index) with the wnids sorted; ``classes`` holds each class's names and
    ``class_to_idx`` maps every one of those names to its index.

    Args:
        split: ``"train"`` or ``"val"``.
        size: ``"full"``, ``"320px"`` or ``"160px"`` (the shorter side of the images).
    """

    _ARCHIVES = {
        "full": ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2.tgz", "fe2fc210e6bb7c5664d602c3cd71e612"),
        "320px": ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-320.tgz", "3df6f0d01a2c9592104656642f5e78a3"),
        "160px": ("https://s3.amazonaws.com/fast-ai-imageclas/imagenette2-160.tgz", "e793b78cc4c9e9a4ccc0c1155377a412"),
    }
    _WNID_TO_CLASS = {
        "n01440764": ("tench", "Tinca tinca"),
        "n02102040": ("English springer", "English springer spaniel"),
        "n02979186": ("cassette player",),
        "n03000684": ("chain saw", "chainsaw"),
        "n03028079": ("church", "church building"),
        "n03394916": ("French horn", "horn"),
        "n03417042": ("garbage truck", "dustcart"),
        "n03425413": ("gas pump", "gasoline pump", "petrol pump", "island dispenser"),
        "n03445777": ("golf ball",),
        "n03888257": ("parachute", "chute"),
    }

    def __init__(self, root, split="train", size="full", download=False, transform=None, target_transform=None,
                 loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ["train", "val"])
        self._size = verify_str_arg(size, "size", ["full", "320px", "160px"])
        self._url, self._md5 = self._ARCHIVES[self._size]
        self._size_root = Path(self.root) / Path(self._url).stem
        self._image_root = str(self._size_root / self._split)
        if download:
            self._download()
        elif not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it.")
        self.wnids, self.wnid_to_idx = find_classes(self._image_root)
        self.classes = [self._WNID_TO_CLASS[wnid] for wnid in self.wnids]
        self.class_to_idx = {name: index for wnid, index in self.wnid_to_idx.items()
                             for name in self._WNID_TO_CLASS[wnid]}
        self._samples = make_dataset(self._image_root, self.wnid_to_idx, extensions=".jpeg")
        self.loader = loader

    def _check_exists(self):
        return self._size_root.exists()

    def _download(self):
        if self._check_exists():
            return
        download_and_extract_archive(self._url, self.root, md5=self._md5)

    def __getitem__(self, index):
        path, label = self._samples[index]
        return self._apply(self.loader(path), label)

    def __len__(self):
        return len(self._samples)
