"""wrap_dataset_for_transforms_v2 against torchvision's wrapper on the same files: tv_tensor types, metadata and
values, target keys, errors, transforms v2 pipelines on the wrapped items, pickling."""
import pickle

import pytest
import torch
import torchvision.datasets as tvd
import torchvision.transforms.v2 as tv2
from torchvision import tv_tensors as tv_tv_tensors
from torchvision.datasets import wrap_dataset_for_transforms_v2 as tv_wrap

import engine
import flowvision.datasets as fd
import flowvision.transforms.v2 as v2
from flowvision import tv_tensors
from flowvision.datasets import wrap_dataset_for_transforms_v2 as wrap


def _both(name, *args, **kwargs):
    return getattr(fd, name)(*args, **kwargs), getattr(tvd, name)(*args, **kwargs)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' decode, under numpy 2
@pytest.mark.parametrize("target_keys", [None, "all", ["masks", "bbox", "iscrowd"]])
def test_coco_detection_matches_torchvision(coco_root, compare_datasets, target_keys):
    ours, ref = _both("CocoDetection", str(coco_root), str(coco_root / "instances.json"))
    wrapped = wrap(ours, target_keys=target_keys)
    compare_datasets(wrapped, tv_wrap(ref, target_keys=target_keys))
    assert isinstance(wrapped, fd.CocoDetection) and type(wrapped).__name__ == "WrappedCocoDetection"
    assert wrapped.ids == ours.ids and wrapped.coco is ours.coco  # attributes reach the wrapped dataset


@pytest.mark.parametrize("target_keys", [None, "all", {"annotation", "labels"}])
def test_voc_detection_matches_torchvision(voc_root, compare_datasets, target_keys):
    ours, ref = _both("VOCDetection", str(voc_root))
    compare_datasets(wrap(ours, target_keys), tv_wrap(ref, target_keys))


def test_segmentation_and_classification_match_torchvision(voc_root, coco_root, compare_datasets):
    compare_datasets(wrap(fd.VOCSegmentation(str(voc_root))), tv_wrap(tvd.VOCSegmentation(str(voc_root))))
    ann = str(coco_root / "captions.json")
    compare_datasets(wrap(fd.CocoCaptions(str(coco_root), ann)), tv_wrap(tvd.CocoCaptions(str(coco_root), ann)))
    images = str(coco_root)  # "images" is the only class folder
    ours = wrap(fd.ImageFolder(images, target_transform=lambda t: t + 1))
    compare_datasets(ours, tv_wrap(tvd.ImageFolder(images, target_transform=lambda t: t + 1)))
    assert ours[0][1] == 1 and ours.target_transform is not None and ours._dataset.target_transform is None


def test_pipeline_moves_targets_like_torchvision(voc_root, coco_root, compare_datasets):
    ours = v2.Compose([v2.RandomHorizontalFlip(p=1), v2.ToImage(), v2.Resize((10, 12)),
                       v2.ToDtype({tv_tensors.Image: engine.float32, "others": None}, scale=True)])
    ref = tv2.Compose([tv2.RandomHorizontalFlip(p=1), tv2.ToImage(), tv2.Resize((10, 12)),
                       tv2.ToDtype({tv_tv_tensors.Image: torch.float32, "others": None}, scale=True)])
    for name, args in [("VOCDetection", (str(voc_root),)), ("VOCSegmentation", (str(voc_root),)),
                       ("CocoDetection", (str(coco_root), str(coco_root / "instances.json")))]:
        ours_ds, ref_ds = getattr(fd, name)(*args, transforms=ours), getattr(tvd, name)(*args, transforms=ref)
        compare_datasets(wrap(ours_ds), tv_wrap(ref_ds))


def test_pickle_round_trip_keeps_transforms(voc_root, compare_datasets):
    wrapped = wrap(fd.VOCDetection(str(voc_root), target_transform=lambda t: t), target_keys="all")
    restored = pickle.loads(pickle.dumps(wrap(fd.VOCDetection(str(voc_root), transforms=v2.RandomVerticalFlip(1)))))
    assert type(restored).__name__ == "WrappedVOCDetection" and isinstance(restored.transforms, v2.RandomVerticalFlip)
    assert restored._dataset.transforms is None
    ref = tv_wrap(tvd.VOCDetection(str(voc_root), transforms=tv2.RandomVerticalFlip(1)))
    compare_datasets(restored, ref)
    assert wrapped._target_keys == "all"


def test_errors(voc_root):
    with pytest.raises(TypeError, match="No wrapper exists for dataset class FakeData"):
        wrap(fd.FakeData(size=2))
    with pytest.raises(TypeError, match="subclasses of `flowvision.datasets.VisionDataset`, but got a 'list'"):
        wrap([1, 2])
    with pytest.raises(ValueError, match="`target_keys` is currently only supported for .*but got VOCSegmentation"):
        wrap(fd.VOCSegmentation(str(voc_root)), target_keys="all")
    with pytest.raises(ValueError, match="`target_keys` can be None, 'all', or a collection of strings"):
        wrap(fd.VOCDetection(str(voc_root)), target_keys=[1])
    with pytest.raises(ValueError, match=r"Target keys \['bbox'\] are not available"):
        wrap(fd.VOCDetection(str(voc_root)), target_keys=["bbox", "boxes"])
