"""Cityscapes: ``leftImg8bit/<split>/<city>/<name>_leftImg8bit.png`` with the annotations of the fine or coarse
set in ``gtFine``/``gtCoarse/<split>/<city>/<name>_<gtFine|gtCoarse>_<kind>``: instance ids, label ids and colour
PNGs, and the polygons json. The zips, when present instead of the folders, are extracted first."""
import json
import os
from collections import namedtuple

from PIL import Image

from .utils import extract_archive
from .vision import PairedVisionDataset, verify_str_arg

__all__ = ["Cityscapes"]

CityscapesClass = namedtuple("CityscapesClass", ["name", "id", "train_id", "category", "category_id",
                                                 "has_instances", "ignore_in_eval", "color"])

# (name, id, train id, category, category id, has instances, ignored in evaluation, colour): the benchmark's table
_CLASS_TABLE = [
    ('unlabeled', 0, 255, 'void', 0, False, True, (0, 0, 0)),
    ('ego vehicle', 1, 255, 'void', 0, False, True, (0, 0, 0)),
    ('rectification border', 2, 255, 'void', 0, False, True, (0, 0, 0)),
    ('out of roi', 3, 255, 'void', 0, False, True, (0, 0, 0)),
    ('static', 4, 255, 'void', 0, False, True, (0, 0, 0)),
    ('dynamic', 5, 255, 'void', 0, False, True, (111, 74, 0)),
    ('ground', 6, 255, 'void', 0, False, True, (81, 0, 81)),
    ('road', 7, 0, 'flat', 1, False, False, (128, 64, 128)),
    ('sidewalk', 8, 1, 'flat', 1, False, False, (244, 35, 232)),
    ('parking', 9, 255, 'flat', 1, False, True, (250, 170, 160)),
    ('rail track', 10, 255, 'flat', 1, False, True, (230, 150, 140)),
    ('building', 11, 2, 'construction', 2, False, False, (70, 70, 70)),
    ('wall', 12, 3, 'construction', 2, False, False, (102, 102, 156)),
    ('fence', 13, 4, 'construction', 2, False, False, (190, 153, 153)),
    ('guard rail', 14, 255, 'construction', 2, False, True, (180, 165, 180)),
    ('bridge', 15, 255, 'construction', 2, False, True, (150, 100, 100)),
    ('tunnel', 16, 255, 'construction', 2, False, True, (150, 120, 90)),
    ('pole', 17, 5, 'object', 3, False, False, (153, 153, 153)),
    ('polegroup', 18, 255, 'object', 3, False, True, (153, 153, 153)),
    ('traffic light', 19, 6, 'object', 3, False, False, (250, 170, 30)),
    ('traffic sign', 20, 7, 'object', 3, False, False, (220, 220, 0)),
    ('vegetation', 21, 8, 'nature', 4, False, False, (107, 142, 35)),
    ('terrain', 22, 9, 'nature', 4, False, False, (152, 251, 152)),
    ('sky', 23, 10, 'sky', 5, False, False, (70, 130, 180)),
    ('person', 24, 11, 'human', 6, True, False, (220, 20, 60)),
    ('rider', 25, 12, 'human', 6, True, False, (255, 0, 0)),
    ('car', 26, 13, 'vehicle', 7, True, False, (0, 0, 142)),
    ('truck', 27, 14, 'vehicle', 7, True, False, (0, 0, 70)),
    ('bus', 28, 15, 'vehicle', 7, True, False, (0, 60, 100)),
    ('caravan', 29, 255, 'vehicle', 7, True, True, (0, 0, 90)),
    ('trailer', 30, 255, 'vehicle', 7, True, True, (0, 0, 110)),
    ('train', 31, 16, 'vehicle', 7, True, False, (0, 80, 100)),
    ('motorcycle', 32, 17, 'vehicle', 7, True, False, (0, 0, 230)),
    ('bicycle', 33, 18, 'vehicle', 7, True, False, (119, 11, 32)),
    ('license plate', -1, -1, 'vehicle', 7, False, True, (0, 0, 142)),
]

_SUFFIXES = {"instance": "instanceIds.png", "semantic": "labelIds.png", "polygon": "polygons.json",
             "color": "color.png"}  # in torchvision's order, which its error message lists


class Cityscapes(PairedVisionDataset):
    """Items are (RGB PIL image, target): a PIL image per image-type target, a dict for ``"polygon"``; several
    target types give a tuple. Cities and files come in directory listing order, as torchvision takes them.

    Args:
        split: ``"train"``, ``"val"``, ``"test"`` (fine) or ``"train"``, ``"train_extra"``, ``"val"`` (coarse).
        mode: ``"fine"`` or ``"coarse"``.
        target_type: ``"instance"``, ``"semantic"``, ``"polygon"``, ``"color"``, or a list of them.
    """

    CityscapesClass = CityscapesClass
    classes = [CityscapesClass(*row) for row in _CLASS_TABLE]

    def __init__(self, root, split="train", mode="fine", target_type="instance", transform=None,
                 target_transform=None, transforms=None):
        super().__init__(root, transforms, transform, target_transform)
        self.mode = "gtFine" if mode == "fine" else "gtCoarse"
        self.images_dir = os.path.join(self.root, "leftImg8bit", split)
        self.targets_dir = os.path.join(self.root, self.mode, split)
        self.split = split
        self.images, self.targets = [], []
        verify_str_arg(mode, "mode", ("fine", "coarse"))
        splits = ("train", "test", "val") if mode == "fine" else ("train", "train_extra", "val")
        if split not in splits:
            raise ValueError(f"Unknown value '{split}' for argument split if mode is '{mode}'. "
                             f"Valid values are {{{', '.join(repr(s) for s in splits)}}}.")
        self.target_type = target_type if isinstance(target_type, list) else [target_type]
        for kind in self.target_type:
            verify_str_arg(kind, "target_type", tuple(_SUFFIXES))
        if not os.path.isdir(self.images_dir) or not os.path.isdir(self.targets_dir):
            self._extract_zips(split)
        for city in os.listdir(self.images_dir):
            for file_name in os.listdir(os.path.join(self.images_dir, city)):
                stem = file_name.split("_leftImg8bit")[0]
                self.images.append(os.path.join(self.images_dir, city, file_name))
                self.targets.append([os.path.join(self.targets_dir, city, f"{stem}_{self.mode}_{_SUFFIXES[kind]}")
                                     for kind in self.target_type])

    def _extract_zips(self, split):
        images_zip = os.path.join(self.root, "leftImg8bit_trainextra.zip" if split == "train_extra"
                                  else "leftImg8bit_trainvaltest.zip")
        targets_zip = os.path.join(self.root, "gtFine_trainvaltest.zip" if self.mode == "gtFine" else "gtCoarse.zip")
        if not (os.path.isfile(images_zip) and os.path.isfile(targets_zip)):
            raise RuntimeError("Dataset not found or incomplete. Please make sure all required folders for the "
                               'specified "split" and "mode" are inside the "root" directory')
        extract_archive(images_zip, self.root)
        extract_archive(targets_zip, self.root)

    def _load(self, kind, path):
        if kind == "polygon":
            with open(path) as f:
                return json.load(f)
        return Image.open(path)

    def __getitem__(self, index):
        targets = [self._load(kind, path) for kind, path in zip(self.target_type, self.targets[index])]
        target = tuple(targets) if len(targets) > 1 else targets[0]
        return self._apply_joint(Image.open(self.images[index]).convert("RGB"), target)

    def __len__(self):
        return len(self.images)

    def extra_repr(self):
        return f"Split: {self.split}\nMode: {self.mode}\nType: {self.target_type}"
