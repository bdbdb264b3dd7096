"""Category names of the standard label sets, index-aligned with torchvision's models.

IMAGENET_CATEGORIES is read from flowvision/weights/imagenet1k_categories.txt (the weight manifest's
copy); COCO_CATEGORIES is the 91-index detection label map with "N/A" for unused ids;
VOC_CATEGORIES is the 21-class segmentation label set.
"""
import os

__all__ = ["IMAGENET_CATEGORIES", "COCO_CATEGORIES", "VOC_CATEGORIES"]

_IMAGENET_FILE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "weights", "imagenet1k_categories.txt")

with open(_IMAGENET_FILE, encoding="utf-8") as _f:
    IMAGENET_CATEGORIES = [line.rstrip("\n") for line in _f if line.strip()]

COCO_CATEGORIES = [
    "__background__", "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "N/A", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "N/A", "backpack", "umbrella", "N/A",
    "N/A", "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle", "N/A",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed", "N/A",
    "dining table", "N/A", "N/A", "toilet", "N/A", "tv", "laptop", "mouse", "remote", "keyboard",
    "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "N/A", "book", "clock", "vase",
    "scissors", "teddy bear", "hair drier", "toothbrush",
]

VOC_CATEGORIES = [
    "__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train",
    "tvmonitor",
]
