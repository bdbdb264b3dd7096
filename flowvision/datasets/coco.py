"""MS COCO detection and captions, read straight from the annotation json (no pycocotools at run time).

``CocoIndex`` builds the lookups pycocotools' ``COCO`` builds (images by id, annotations by id and per image in
file order, categories), so the items, their order and ``dataset.coco``'s common queries are the same.
"""
import json
import os
from collections import defaultdict

from PIL import Image

from .coco_masks import segmentation_to_mask
from .vision import PairedVisionDataset

__all__ = ["CocoIndex", "CocoDetection", "CocoCaptions"]


def _as_list(ids):
    return list(ids) if isinstance(ids, (list, tuple, set, range)) else [ids]


class CocoIndex:
    """The json of a COCO annotation file, indexed: ``imgs``, ``anns``, ``cats``, ``imgToAnns``, ``catToImgs``."""

    def __init__(self, annotation_file=None):
        self.dataset = {}
        if annotation_file is not None:
            with open(annotation_file) as f:
                self.dataset = json.load(f)
            if not isinstance(self.dataset, dict):
                raise TypeError(f"annotation file format {type(self.dataset)} not supported: expected a json object")
        self.imgs = {img["id"]: img for img in self.dataset.get("images", [])}
        self.cats = {cat["id"]: cat for cat in self.dataset.get("categories", [])}
        self.anns, self.imgToAnns, self.catToImgs = {}, defaultdict(list), defaultdict(list)
        for ann in self.dataset.get("annotations", []):
            self.anns[ann["id"]] = ann
            self.imgToAnns[ann["image_id"]].append(ann)
            if "categories" in self.dataset:
                self.catToImgs[ann["category_id"]].append(ann["image_id"])

    def getAnnIds(self, imgIds=(), catIds=(), areaRng=(), iscrowd=None):  # noqa: N802, N803 (pycocotools' names)
        """Ids of the annotations of ``imgIds`` (all images when empty), filtered by category, area and crowd."""
        imgIds, catIds = _as_list(imgIds), _as_list(catIds)
        if imgIds:
            anns = [ann for i in imgIds if i in self.imgToAnns for ann in self.imgToAnns[i]]
        else:
            anns = list(self.dataset.get("annotations", []))
        if catIds:
            anns = [ann for ann in anns if ann["category_id"] in catIds]
        if areaRng:
            anns = [ann for ann in anns if areaRng[0] < ann["area"] < areaRng[1]]
        if iscrowd is not None:
            anns = [ann for ann in anns if ann["iscrowd"] == iscrowd]
        return [ann["id"] for ann in anns]

    def getImgIds(self, imgIds=(), catIds=()):  # noqa: N802, N803
        """Image ids among ``imgIds`` (all when empty) that hold every category of ``catIds``."""
        imgIds, catIds = _as_list(imgIds), _as_list(catIds)
        if not imgIds and not catIds:
            return list(self.imgs)
        ids = set(imgIds) if imgIds else set(self.catToImgs[catIds[0]])
        for cat in catIds:
            ids &= set(self.catToImgs[cat])
        return list(ids)

    def getCatIds(self, catNms=(), supNms=(), catIds=()):  # noqa: N802, N803
        """Category ids filtered by name, supercategory and id."""
        catNms, supNms, catIds = _as_list(catNms), _as_list(supNms), _as_list(catIds)
        cats = [cat for cat in self.dataset.get("categories", [])
                if (not catNms or cat["name"] in catNms) and (not supNms or cat["supercategory"] in supNms)
                and (not catIds or cat["id"] in catIds)]
        return [cat["id"] for cat in cats]

    def loadAnns(self, ids=()):  # noqa: N802
        return [self.anns[i] for i in _as_list(ids)]

    def loadImgs(self, ids=()):  # noqa: N802
        return [self.imgs[i] for i in _as_list(ids)]

    def loadCats(self, ids=()):  # noqa: N802
        return [self.cats[i] for i in _as_list(ids)]

    def annToMask(self, ann):  # noqa: N802
        """The (height, width) uint8 mask of an annotation's polygons or run-length code, on its image's canvas."""
        image = self.imgs[ann["image_id"]]
        return segmentation_to_mask(ann["segmentation"], image["height"], image["width"])

    def info(self):
        """Print the annotation file's ``info`` entries, one ``key: value`` a line."""
        for key, value in self.dataset["info"].items():
            print(f"{key}: {value}")


class CocoDetection(PairedVisionDataset):
    """COCO detection: items are (RGB PIL image, list of that image's annotation dicts), images by sorted id.

    Args:
        root: folder holding the images (``file_name`` of each image entry is relative to it).
        annFile: the annotation json.
        transform, target_transform, transforms: as in every VisionDataset.
    """

    def __init__(self, root, annFile, transform=None, target_transform=None, transforms=None):  # noqa: N803
        super().__init__(root, transforms, transform, target_transform)
        self.coco = CocoIndex(annFile)
        self.ids = sorted(self.coco.imgs)

    def _load_image(self, id):
        return Image.open(os.path.join(self.root, self.coco.loadImgs(id)[0]["file_name"])).convert("RGB")

    def _load_target(self, id):
        return self.coco.loadAnns(self.coco.getAnnIds(id))

    def __getitem__(self, index):
        if not isinstance(index, int):
            raise ValueError(f"Index must be of type integer, got {type(index)} instead.")
        id = self.ids[index]
        return self._apply_joint(self._load_image(id), self._load_target(id))

    def __len__(self):
        return len(self.ids)


class CocoCaptions(CocoDetection):
    """COCO captions: items are (RGB PIL image, list of its caption strings)."""

    def _load_target(self, id):
        return [ann["caption"] for ann in super()._load_target(id)]
