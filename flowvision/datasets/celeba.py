"""CelebA: 202,599 aligned face images with 40 binary attributes, identities, boxes and 5 landmarks, from the
space-separated text files of ``root/celeba`` (images in ``img_align_celeba``)."""
import csv
import os

import numpy as np
from PIL import Image

import engine
from .utils import VisionDataset, check_integrity, extract_archive
from .vision import verify_str_arg

__all__ = ["CelebA"]

_SPLITS = {"train": 0, "valid": 1, "test": 2, "all": None}


def _read_table(path, header_row=None):
    """(column names, row names, int64 values) of one CelebA text table."""
    with open(path) as f:
        rows = list(csv.reader(f, delimiter=" ", skipinitialspace=True))
    header = []
    if header_row is not None:
        header, rows = rows[header_row], rows[header_row + 1:]
    names = [row[0] for row in rows]
    values = np.array([[int(v) for v in row[1:]] for row in rows], dtype=np.int64)
    return header, names, values


class CelebA(VisionDataset):
    """Items are (PIL image, target) with target by ``target_type``: ``"attr"`` (40 values 0/1), ``"identity"``,
    ``"bbox"`` (x, y, w, h), ``"landmarks"`` (10 coordinates), as int64 tensors; a list gives a tuple, an empty
    list None.

    The files live on Google Drive, which flowvision does not download from: put them into ``root/celeba`` by hand
    (``download=True`` then checks them and unpacks the image zip).

    Args:
        split: ``"train"``, ``"valid"``, ``"test"`` or ``"all"``.
    """

    base_folder = "celeba"
    file_list = [
        ("0B7EVK8r0v71pZjFTYXZWM3FlRnM", "00d2c5bc6d35e252742224ab0c1e8fcb", "img_align_celeba.zip"),
        ("0B7EVK8r0v71pblRyaVFSWGxPY0U", "75e246fa4810816ffd6ee81facbd244c", "list_attr_celeba.txt"),
        ("1_ee_0u7vcNLOfNLegJRHmolfH5ICW-XS", "32bd1bd63d3c78cd57e08160ec5ed1e2", "identity_CelebA.txt"),
        ("0B7EVK8r0v71pbThiMVRxWXZ4dU0", "00566efa6fedff7a56946cd1c10f1c16", "list_bbox_celeba.txt"),
        ("0B7EVK8r0v71pd0FJY3Blby1HUTQ", "cc24ecafdb5b50baae59b03474781f8c", "list_landmarks_align_celeba.txt"),
        ("0B7EVK8r0v71pY0NSMzRuSXJEVkk", "d32c9cbf5e040fd4025c592c306e6668", "list_eval_partition.txt"),
    ]

    def __init__(self, root, split="train", target_type="attr", transform=None, target_transform=None,
                 download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = split
        self.target_type = target_type if isinstance(target_type, list) else [target_type]
        if not self.target_type and self.target_transform is not None:
            raise RuntimeError("target_transform is specified but target_type is empty")
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        split_code = _SPLITS[verify_str_arg(split.lower() if isinstance(split, str) else split, "split",
                                            tuple(_SPLITS))]
        _, names, partition = self._table("list_eval_partition.txt")
        chosen = np.arange(len(names)) if split_code is None else np.nonzero(partition[:, 0] == split_code)[0]
        self.filename = [names[i] for i in chosen]
        self.identity = engine.from_numpy(self._table("identity_CelebA.txt")[2][chosen])
        self.bbox = engine.from_numpy(self._table("list_bbox_celeba.txt", 1)[2][chosen])
        self.landmarks_align = engine.from_numpy(self._table("list_landmarks_align_celeba.txt", 1)[2][chosen])
        self.attr_names, _, attr = self._table("list_attr_celeba.txt", 1)
        self.attr = engine.from_numpy((attr[chosen] + 1) // 2)  # -1/1 -> 0/1

    def _table(self, name, header_row=None):
        return _read_table(os.path.join(self.root, self.base_folder, name), header_row)

    def _check_integrity(self):
        folder = os.path.join(self.root, self.base_folder)
        tables_ok = all(check_integrity(os.path.join(folder, name), md5) for _, md5, name in self.file_list
                        if not name.endswith(".zip"))
        return tables_ok and os.path.isdir(os.path.join(folder, "img_align_celeba"))

    def download(self):
        """Check the files put in place by hand and unpack the image zip (unless its folder is there)."""
        if self._check_integrity():
            return
        folder = os.path.join(self.root, self.base_folder)
        images_there = os.path.isdir(os.path.join(folder, "img_align_celeba"))
        for file_id, md5, name in self.file_list:
            if not (name.endswith(".zip") and images_there) and not check_integrity(os.path.join(folder, name), md5):
                raise RuntimeError(f"{name} is on Google Drive (file id {file_id}), which flowvision does not "
                                   f"download from: fetch it by hand into {folder} (md5 {md5})")
        if not images_there:
            extract_archive(os.path.join(folder, "img_align_celeba.zip"))

    def _target(self, index, kind):
        if kind == "attr":
            return self.attr[index, :]
        if kind == "identity":
            return self.identity[index, 0]
        if kind == "bbox":
            return self.bbox[index, :]
        if kind == "landmarks":
            return self.landmarks_align[index, :]
        raise ValueError(f'Target type "{kind}" is not recognized.')

    def __getitem__(self, index):
        image = Image.open(os.path.join(self.root, self.base_folder, "img_align_celeba", self.filename[index]))
        targets = [self._target(index, kind) for kind in self.target_type]
        if self.transform is not None:
            image = self.transform(image)
        if not targets:
            return image, None
        target = tuple(targets) if len(targets) > 1 else targets[0]
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self):
        return len(self.attr)

    def extra_repr(self):
        return f"Target type: {self.target_type}\nSplit: {self.split}"
