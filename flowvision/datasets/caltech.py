"""Caltech 101 and Caltech 256 object categories.

Caltech101: ``caltech101/101_ObjectCategories/<class>/image_<n>.jpg`` (the BACKGROUND_Google folder left out),
with object outlines in ``caltech101/Annotations/<class>/annotation_<n>.mat`` (read with flowvision's .mat reader).
Caltech256: ``caltech256/256_ObjectCategories/<nnn>.<class>/<nnn>_<n>.jpg``. Images are numbered from 1 within
their class, and items follow that numbering; images are returned as stored (grayscale ones stay 'L').
"""
import os
import shutil

from PIL import Image

from .matlab import read_mat
from .utils import VisionDataset, download_and_extract_archive, extract_archive
from .vision import verify_str_arg

__all__ = ["Caltech101", "Caltech256"]

# annotation folders named differently from their image folders
_ANNOTATION_FOLDERS = {"Faces": "Faces_2", "Faces_easy": "Faces_3", "Motorbikes": "Motorbikes_16",
                       "airplanes": "Airplanes_Side_2"}


class _NumberedCategories(VisionDataset):
    """``self.y[i]``: the class of item i, ``self.index[i]``: its number within the class (from 1)."""

    def _count_items(self, folder, counted):
        self.index, self.y = [], []
        for label, category in enumerate(self.categories):
            n = len([name for name in os.listdir(os.path.join(folder, category)) if counted(name)])
            self.index.extend(range(1, n + 1))
            self.y.extend([label] * n)

    def __len__(self):
        return len(self.index)


class Caltech101(_NumberedCategories):
    """Items are (PIL image, target): ``target_type`` ``"category"`` gives the class index, ``"annotation"`` the
    object's outline as a [2, K] float array; a list of both gives a tuple."""

    def __init__(self, root, target_type="category", transform=None, target_transform=None, download=False):
        super().__init__(os.path.join(root, "caltech101"), transform=transform, target_transform=target_transform)
        os.makedirs(self.root, exist_ok=True)
        target_type = [target_type] if isinstance(target_type, str) else target_type
        self.target_type = [verify_str_arg(t, "target_type", ("category", "annotation")) for t in target_type]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        images = os.path.join(self.root, "101_ObjectCategories")
        self.categories = sorted(c for c in os.listdir(images) if c != "BACKGROUND_Google")
        self.annotation_categories = [_ANNOTATION_FOLDERS.get(c, c) for c in self.categories]
        self._count_items(images, lambda name: True)

    def _target(self, index, kind):
        if kind == "category":
            return self.y[index]
        path = os.path.join(self.root, "Annotations", self.annotation_categories[self.y[index]],
                            f"annotation_{self.index[index]:04d}.mat")
        return read_mat(path)["obj_contour"]

    def __getitem__(self, index):
        image = Image.open(os.path.join(self.root, "101_ObjectCategories", self.categories[self.y[index]],
                                        f"image_{self.index[index]:04d}.jpg"))
        targets = [self._target(index, kind) for kind in self.target_type]
        return self._apply(image, tuple(targets) if len(targets) > 1 else targets[0])

    def _check_integrity(self):
        return os.path.exists(os.path.join(self.root, "101_ObjectCategories"))

    def download(self):
        """Fetch the zip (md5-checked) and unpack the image and annotation archives inside it."""
        if self._check_integrity():
            return
        download_and_extract_archive("https://data.caltech.edu/records/mzrjq-6wc02/files/caltech-101.zip", self.root,
                                     filename="caltech-101.zip", md5="3138e1922a9193bfa496528edbbc45d0")
        inner = os.path.join(self.root, "caltech-101")
        for name in os.listdir(inner):
            if name.endswith(".gz"):
                extract_archive(os.path.join(inner, name), self.root)
        shutil.rmtree(inner)
        os.remove(os.path.join(self.root, "caltech-101.zip"))

    def extra_repr(self):
        return f"Target type: {self.target_type}"


class Caltech256(_NumberedCategories):
    """Items are (PIL image, class index); class ``<nnn>.<name>`` has index nnn - 1."""

    def __init__(self, root, transform=None, target_transform=None, download=False):
        super().__init__(os.path.join(root, "caltech256"), transform=transform, target_transform=target_transform)
        os.makedirs(self.root, exist_ok=True)
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        images = os.path.join(self.root, "256_ObjectCategories")
        self.categories = sorted(os.listdir(images))
        self._count_items(images, lambda name: name.endswith(".jpg"))

    def __getitem__(self, index):
        label = self.y[index]
        image = Image.open(os.path.join(self.root, "256_ObjectCategories", self.categories[label],
                                        f"{label + 1:03d}_{self.index[index]:04d}.jpg"))
        return self._apply(image, label)

    def _check_integrity(self):
        return os.path.exists(os.path.join(self.root, "256_ObjectCategories"))

    def download(self):
        """Fetch and unpack the tar (md5-checked) unless the images are there."""
        if not self._check_integrity():
            download_and_extract_archive("https://data.caltech.edu/records/nyy15-4j048/files/256_ObjectCategories.tar",
                                         self.root, filename="256_ObjectCategories.tar",
                                         md5="67b4f42ca05d46448c6bb8ecd2220f6d")
