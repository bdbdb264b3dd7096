"""Category names of the standard label sets, index-aligned with torchvision's models.

Read from the weight manifest's files in flowvision/weights/: IMAGENET_CATEGORIES (1000 classes),
COCO_CATEGORIES (the 91-index detection label map, "N/A" for unused ids) and VOC_CATEGORIES (the
21-class segmentation label set).
"""
import os

__all__ = ["IMAGENET_CATEGORIES", "COCO_CATEGORIES", "VOC_CATEGORIES"]

_WEIGHTS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "weights")


def _read_names(file_name):
    """The names listed one per line in the weight manifest's ``file_name``."""
    with open(os.path.join(_WEIGHTS_DIR, file_name), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


IMAGENET_CATEGORIES = _read_names("imagenet1k_categories.txt")
COCO_CATEGORIES = _read_names("coco_categories.txt")
VOC_CATEGORIES = _read_names("voc_categories.txt")
