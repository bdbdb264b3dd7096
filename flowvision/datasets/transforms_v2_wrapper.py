"""``wrap_dataset_for_transforms_v2``: a dataset whose items carry ``flowvision.tv_tensors`` (boxes, masks), so
that ``flowvision.transforms.v2`` pipelines move the targets with the image.

The wrapped dataset is an instance of a new class deriving from the wrapper and from the dataset's own class
(``isinstance`` checks keep working), holding the original dataset. The original's transforms are switched off
and run after the wrapping instead, as one joint ``transforms(image, target)``.

Per dataset, as torchvision's wrapper: classification datasets pass through; segmentation masks (VOC, SBD, the
Pets' trimaps) become ``Mask``; COCO targets become a dict of lists with ``boxes`` (XYXY ``BoundingBoxes``),
``masks`` and ``labels`` added (by default only ``image_id``, ``boxes`` and ``labels`` are kept); VOC detection
gains ``boxes`` and ``labels`` (indices into ``VOC_DETECTION_CATEGORIES``, background first); Kitti targets become
a dict of lists with ``boxes`` and ``labels`` (indices into ``KITTI_CATEGORIES``); WIDERFace's and CelebA's
``bbox`` become XYXY ``BoundingBoxes``; Cityscapes' semantic maps become ``Mask`` and instance maps a dict of one
``Mask`` per id and the ids' classes. Configurations torchvision's wrapper refuses are refused alike.

The factories import tv_tensors and the v2 functionals when a dataset is wrapped, not at import, so that importing
``flowvision.datasets`` does not load tv_tensors and transforms.v2.
"""
import collections.abc
from collections import defaultdict
from copy import copy

import numpy as np

from .caltech import Caltech101, Caltech256
from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .cityscapes import Cityscapes
from .coco import CocoCaptions, CocoDetection
from .coco_masks import segmentation_to_mask
from .folder import DatasetFolder, ImageFolder
from .gtsrb import GTSRB
from .imagenet import ImageNet
from .imagenette import Imagenette
from .kitti import Kitti
from .mnist import MNIST, FashionMNIST
from .oxford_iiit_pet import OxfordIIITPet
from .sbd import SBDataset
from .utils import VisionDataset
from .voc import VOCDetection, VOCSegmentation
from .widerface import WIDERFace

__all__ = ["wrap_dataset_for_transforms_v2", "KITTI_CATEGORIES", "VOC_DETECTION_CATEGORIES"]

VOC_DETECTION_CATEGORIES = [
    "__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
]
_VOC_INDEX = {name: i for i, name in enumerate(VOC_DETECTION_CATEGORIES)}
KITTI_CATEGORIES = ["Car", "Van", "Truck", "Pedestrian", "Person_sitting", "Cyclist", "Tram", "Misc", "DontCare"]
_KITTI_INDEX = {name: i for i, name in enumerate(KITTI_CATEGORIES)}

# dataset class -> factory(dataset, target_keys) -> wrap(index, sample) -> sample
_FACTORIES = {}
_TARGET_KEY_CLASSES = set()  # classes whose wrappers accept ``target_keys``


def _register(*classes, target_keys=False):
    def decorator(factory):
        for cls in classes:
            _FACTORIES[cls] = factory
            if target_keys:
                _TARGET_KEY_CLASSES.add(cls)
        return factory
    return decorator


def wrap_dataset_for_transforms_v2(dataset, target_keys=None):
    """``dataset`` with its items wrapped into tv_tensors (see the module docstring).

    Args:
        dataset: a flowvision dataset of a supported class.
        target_keys: for dict targets (COCO, VOC detection, Kitti, WIDERFace): None for the defaults, ``"all"``, or
            a collection of key names.
    """
    if not (target_keys is None or target_keys == "all" or (
            isinstance(target_keys, collections.abc.Collection) and all(isinstance(k, str) for k in target_keys))):
        raise ValueError(f"`target_keys` can be None, 'all', or a collection of strings denoting the keys to be "
                         f"returned, but got {target_keys}")
    wrapped_cls = type(f"Wrapped{type(dataset).__name__}", (_TVTensorDatasetWrapper, type(dataset)), {})
    return wrapped_cls(dataset, target_keys)


class _TVTensorDatasetWrapper:
    """Mixed in before the dataset's class; never runs the dataset's constructor, delegates attributes to it."""

    def __init__(self, dataset, target_keys):
        if not isinstance(dataset, VisionDataset):
            raise TypeError(f"This wrapper is meant for subclasses of `flowvision.datasets.VisionDataset`, but got a "
                            f"'{type(dataset).__name__}' instead.")
        registered = next((cls for cls in type(dataset).mro() if cls in _FACTORIES), None)
        if registered is None:
            raise TypeError(f"No wrapper exists for dataset class {type(dataset).__name__}. "
                            "Please wrap the output yourself.")
        if target_keys is not None and registered not in _TARGET_KEY_CLASSES:
            raise ValueError("`target_keys` is currently only supported for `CocoDetection`, `VOCDetection`, `Kitti`, "
                             f"and `WIDERFace`, but got {registered.__name__}.")
        self._dataset = dataset
        self._target_keys = target_keys
        self._wrapper = _FACTORIES[registered](dataset, target_keys)
        self.transform, self.target_transform = dataset.transform, dataset.target_transform
        self.transforms = dataset.transforms
        dataset.transform = dataset.target_transform = dataset.transforms = None

    def __getattr__(self, name):
        return getattr(object.__getattribute__(self, "_dataset"), name)

    def __getitem__(self, index):
        sample = self._wrapper(index, self._dataset[index])
        if self.transforms is not None:
            sample = self.transforms(*sample)
        return sample

    def __len__(self):
        return len(self._dataset)

    def __reduce__(self):
        """Pickles as the original dataset (its transforms restored) and the call that wraps it again."""
        dataset = copy(self._dataset)
        dataset.transform, dataset.target_transform = self.transform, self.target_transform
        dataset.transforms = self.transforms
        return wrap_dataset_for_transforms_v2, (dataset, self._target_keys)


def _parse_target_keys(target_keys, *, available, default):
    if target_keys is None:
        target_keys = default
    if target_keys == "all":
        return set(available)
    target_keys = set(target_keys)
    extra = target_keys - set(available)
    if extra:
        raise ValueError(f"Target keys {sorted(extra)} are not available")
    return target_keys


def _dict_of_lists(dicts):
    """Values of each key across ``dicts``, in order (a missing key reads as an empty list)."""
    out = defaultdict(list)
    for item in dicts:
        for key, value in item.items():
            out[key].append(value)
    return out


@_register(CIFAR10, CIFAR100, MNIST, FashionMNIST, GTSRB, Caltech256, ImageNet, DatasetFolder, ImageFolder,
           CocoCaptions, Imagenette)
def _identity_factory(dataset, target_keys):
    return lambda index, sample: sample


def _not_supported(description):
    raise RuntimeError(f"{description} is currently not supported by this wrapper.")


@_register(VOCSegmentation, SBDataset)
def _segmentation_factory(dataset, target_keys):
    from flowvision import tv_tensors

    if isinstance(dataset, SBDataset) and dataset.mode == "boundaries":
        _not_supported("SBDataset with mode='boundaries'")

    def wrap(index, sample):
        image, mask = sample
        return image, tv_tensors.Mask(mask)
    return wrap


def _wrap_by_type(target, target_types, wrappers):
    """Each part of a (possibly single) multi-type target through the wrapper of its type; one part stays single."""
    parts = target if isinstance(target, (tuple, list)) else [target]
    wrapped = tuple(wrappers.get(kind, lambda item: item)(item) for kind, item in zip(target_types, parts))
    return wrapped[0] if len(wrapped) == 1 else wrapped


@_register(Caltech101)
def _caltech101_factory(dataset, target_keys):
    if "annotation" in dataset.target_type:
        _not_supported("Caltech101 dataset with `target_type=['annotation', ...]`")
    return _identity_factory(dataset, target_keys)


@_register(CelebA)
def _celeba_factory(dataset, target_keys):
    from flowvision import tv_tensors
    from flowvision.transforms.v2 import functional as F

    if any(kind in dataset.target_type for kind in ("attr", "landmarks")):
        _not_supported("`CelebA` dataset with `target_type=['attr', 'landmarks', ...]`")

    def wrap(index, sample):
        image, target = sample

        def boxes(item):
            xywh = tv_tensors.BoundingBoxes(item, format="XYWH", canvas_size=(image.height, image.width))
            return F.convert_bounding_box_format(xywh, new_format="XYXY")
        return image, _wrap_by_type(target, dataset.target_type, {"bbox": boxes})
    return wrap


@_register(OxfordIIITPet)
def _oxford_iiit_pet_factory(dataset, target_keys):
    from flowvision import tv_tensors

    def wrap(index, sample):
        image, target = sample
        if target is not None:
            target = _wrap_by_type(target, dataset._target_types, {"segmentation": tv_tensors.Mask})
        return image, target
    return wrap


@_register(CocoDetection, target_keys=True)
def _coco_detection_factory(dataset, target_keys):
    import engine
    from flowvision import tv_tensors
    from flowvision.transforms.v2 import functional as F

    native = {"segmentation", "area", "iscrowd", "image_id", "bbox", "category_id"}
    keys = _parse_target_keys(target_keys, available=native | {"boxes", "masks", "labels"},
                              default={"image_id", "boxes", "labels"})

    def wrap(index, sample):
        image_id = dataset.ids[index]
        image, annotations = sample
        if not annotations:
            return image, {"image_id": image_id}
        height, width = F.get_size(image)
        batched = _dict_of_lists(annotations)
        target = {}
        if "image_id" in keys:
            target["image_id"] = image_id
        if "boxes" in keys:
            xywh = tv_tensors.BoundingBoxes(batched["bbox"], format="XYWH", canvas_size=(height, width))
            target["boxes"] = F.convert_bounding_box_format(xywh, new_format="XYXY")
        if "masks" in keys:
            masks = [segmentation_to_mask(s, height, width) for s in batched["segmentation"]]
            target["masks"] = tv_tensors.Mask(engine.from_numpy(np.stack(masks)))
        if "labels" in keys:
            target["labels"] = engine.tensor(batched["category_id"])
        for key in keys - {"image_id", "boxes", "masks", "labels"}:
            target[key] = batched[key]
        return image, target
    return wrap


@_register(VOCDetection, target_keys=True)
def _voc_detection_factory(dataset, target_keys):
    import engine
    from flowvision import tv_tensors

    keys = _parse_target_keys(target_keys, available={"annotation", "boxes", "labels"}, default={"boxes", "labels"})

    def wrap(index, sample):
        image, target = sample
        objects = _dict_of_lists(target["annotation"]["object"])
        if "annotation" not in keys:
            target = {}
        if "boxes" in keys:
            corners = [[int(box[k]) for k in ("xmin", "ymin", "xmax", "ymax")] for box in objects["bndbox"]]
            target["boxes"] = tv_tensors.BoundingBoxes(corners, format="XYXY", canvas_size=(image.height, image.width))
        if "labels" in keys:
            target["labels"] = engine.tensor([_VOC_INDEX[name] for name in objects["name"]])
        return image, target
    return wrap


@_register(Kitti, target_keys=True)
def _kitti_factory(dataset, target_keys):
    import engine
    from flowvision import tv_tensors

    native = {"type", "truncated", "occluded", "alpha", "bbox", "dimensions", "location", "rotation_y"}
    keys = _parse_target_keys(target_keys, available=native | {"boxes", "labels"}, default={"boxes", "labels"})

    def wrap(index, sample):
        image, objects = sample
        if objects is None:
            return image, objects
        batched = _dict_of_lists(objects)
        target = {}
        if "boxes" in keys:
            target["boxes"] = tv_tensors.BoundingBoxes(batched["bbox"], format="XYXY",
                                                       canvas_size=(image.height, image.width))
        if "labels" in keys:
            target["labels"] = engine.tensor([_KITTI_INDEX[name] for name in batched["type"]])
        for key in keys - {"boxes", "labels"}:
            target[key] = batched[key]
        return image, target
    return wrap


@_register(WIDERFace, target_keys=True)
def _widerface_factory(dataset, target_keys):
    from flowvision import tv_tensors
    from flowvision.transforms.v2 import functional as F

    keys = _parse_target_keys(target_keys, available={"bbox", "blur", "expression", "illumination", "occlusion",
                                                      "pose", "invalid"}, default="all")

    def wrap(index, sample):
        image, target = sample
        if target is None:
            return image, target
        target = {key: target[key] for key in keys}
        if "bbox" in keys:
            xywh = tv_tensors.BoundingBoxes(target["bbox"], format="XYWH", canvas_size=(image.height, image.width))
            target["bbox"] = F.convert_bounding_box_format(xywh, new_format="XYXY")
        return image, target
    return wrap


_CITYSCAPES_INSTANCE_BASE = 1000  # instance ids are class id * 1000 + instance number; smaller ids are class ids


@_register(Cityscapes)
def _cityscapes_factory(dataset, target_keys):
    import engine
    from flowvision import tv_tensors

    if any(kind in dataset.target_type for kind in ("polygon", "color")):
        _not_supported("`Cityscapes` dataset with `target_type=['polygon', 'color', ...]`")

    def instances(pil_image):
        ids_map = tv_tensors.Mask(pil_image).numpy()
        ids = np.unique(ids_map)
        masks = np.stack([ids_map == i for i in ids])
        labels = np.where(ids >= _CITYSCAPES_INSTANCE_BASE, ids // _CITYSCAPES_INSTANCE_BASE, ids)
        return {"masks": tv_tensors.Mask(engine.from_numpy(masks)), "labels": engine.from_numpy(labels)}

    def wrap(index, sample):
        image, target = sample
        return image, _wrap_by_type(target, dataset.target_type, {"instance": instances,
                                                                   "semantic": tv_tensors.Mask})
    return wrap
