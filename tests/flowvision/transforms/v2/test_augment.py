"""flowvision.transforms.v2 erase/jpeg functionals and RandomErasing, MixUp, CutMix, JPEG against torchvision v2.

All comparisons are exact: JPEG too (Pillow and torchvision both run libjpeg with its default settings).
"""
import warnings

import numpy as np
import PIL.Image
import pytest
import torch
import torchvision.transforms.v2 as TV
import torchvision.transforms.v2.functional as TF
from v2_helpers import KINDS, assert_same, image_array, make_input, run_both, seeds_for, to_torch

import engine
import flowvision.transforms.v2 as T
import flowvision.transforms.v2.functional as F
from flowvision import tv_tensors

pytestmark = pytest.mark.filterwarnings("ignore:The image decoding and encoding:DeprecationWarning")


# ---------------------------------------------------------------------------------------------------------------
# functionals


@pytest.mark.parametrize("kind", ["image", "image_float", "batch", "video", "tensor", "pil"])
def test_erase_matches_torchvision(kind):
    inpt = make_input(kind)
    for value in (0.0, [10.0, 20.0, 30.0]):
        v = engine.tensor(value)[..., None, None] if isinstance(value, list) else engine.tensor(value)
        expected = TF.erase(to_torch(inpt), 3, 5, 10, 12, torch.tensor(value)[..., None, None]
                            if isinstance(value, list) else torch.tensor(value))
        actual = F.erase(inpt, 3, 5, 10, 12, v)
        assert_same(expected, actual)
        assert type(actual) is type(inpt)


def test_erase_inplace():
    image = make_input("tensor")
    out = F.erase_image(image, 0, 0, 2, 2, engine.tensor(0), inplace=True)
    assert out is image and image.numpy()[:, :2, :2].max() == 0
    fresh = make_input("tensor")
    F.erase(fresh, 0, 0, 2, 2, engine.tensor(0))
    assert fresh.numpy()[:, :2, :2].max() > 0


@pytest.mark.parametrize("kind", ["image", "batch", "video", "tensor", "pil"])
@pytest.mark.parametrize("quality", [5, 75, 100])
def test_jpeg_matches_torchvision(kind, quality):
    inpt = make_input(kind)
    actual = F.jpeg(inpt, quality)
    assert_same(TF.jpeg(to_torch(inpt), quality), actual)
    assert type(actual) is type(inpt)


def test_jpeg_grayscale():
    gray = engine.from_numpy(image_array(7, (1, 29, 37)))
    assert_same(TF.jpeg(to_torch(gray), 50), F.jpeg(gray, 50))


@pytest.mark.parametrize("array, quality, exc", [
    (np.zeros((3, 5, 5), np.float32), 50, RuntimeError),
    (np.zeros((4, 5, 5), np.uint8), 50, RuntimeError),
    (np.zeros((3, 5, 5), np.uint8), 0, ValueError),
])
def test_jpeg_errors(array, quality, exc):
    with pytest.raises(exc):
        TF.jpeg(torch.from_numpy(array), quality)
    with pytest.raises(exc):
        F.jpeg(engine.from_numpy(array), quality)


# ---------------------------------------------------------------------------------------------------------------
# RandomErasing and JPEG


@pytest.mark.parametrize("kwargs", [dict(p=0.9), dict(p=0.9, value="random"), dict(p=0.9, value=(10, 20, 30)),
                                    dict(p=1.0, scale=(0.5, 0.9), ratio=(0.5, 2.0), value=7)])
def test_random_erasing_matches_torchvision(kwargs):
    for kind in KINDS:
        for seed in seeds_for(kind):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # masks and boxes pass through with a warning
                expected, actual = run_both(TV.RandomErasing(**kwargs), T.RandomErasing(**kwargs),
                                            make_input(kind, seed), seed)
            assert_same(expected, actual)


def test_random_erasing_warns_on_passthrough_and_checks_args():
    sample = make_input("sample")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = T.RandomErasing(p=1.0)(sample)
    messages = [str(w.message) for w in caught if "passing through" in str(w.message)]
    passed = {message.split("tv_tensors.")[1].split(".")[0] for message in messages}
    assert passed == {"BoundingBoxes", "Mask"}
    assert out["mask"] is sample["mask"] and out["boxes"] is sample["boxes"]
    for kwargs, exc in ((dict(value="noise"), ValueError), (dict(value=object()), TypeError),
                        (dict(scale=0.5), TypeError), (dict(ratio=2), TypeError), (dict(scale=(0.5, 1.5)), ValueError)):
        with pytest.raises(exc):
            TV.RandomErasing(**kwargs)
        with pytest.raises(exc):
            T.RandomErasing(**kwargs)
    with pytest.raises(ValueError, match="single value or 3"):
        T.RandomErasing(p=1.0, value=(1, 2))(make_input("image"))


@pytest.mark.parametrize("quality", [(20, 90), 60])
def test_jpeg_transform_matches_torchvision(quality):
    for kind in ("image", "batch", "video", "tensor", "pil", "sample"):
        for seed in seeds_for(kind):
            expected, actual = run_both(TV.JPEG(quality), T.JPEG(quality), make_input(kind, seed), seed)
            assert_same(expected, actual)


@pytest.mark.parametrize("quality, exc", [(True, TypeError), ((10,), ValueError), ((50, 10), ValueError),
                                          (0, ValueError), ((1.5, 20), ValueError)])
def test_jpeg_transform_errors(quality, exc):
    with pytest.raises(exc):
        TV.JPEG(quality)
    with pytest.raises(exc):
        T.JPEG(quality)


# ---------------------------------------------------------------------------------------------------------------
# MixUp and CutMix


def mix_sample(kind, seed):
    """A batch of 4 (float images, an Image, a Video, or a dict) with index or one-hot labels."""
    shape = (4, 2, 3, 29, 37) if kind == "video" else (4, 3, 29, 37)
    batch = engine.from_numpy(image_array(seed, shape, np.float32))
    batch = {"image": tv_tensors.Image, "video": tv_tensors.Video}.get(kind, lambda x: x)(batch)
    labels = engine.tensor([0, 3, 1, 2])
    if kind == "onehot":
        labels = engine.from_numpy(np.eye(5, dtype=np.float32)[[0, 3, 1, 2]])
    return {"img": batch, "labels": labels, "other": 3} if kind == "dict" else (batch, labels)


@pytest.mark.parametrize("name", ["MixUp", "CutMix"])
@pytest.mark.parametrize("alpha", [1.0, 0.4, 2.5])
def test_mixup_cutmix_match_torchvision(name, alpha):
    for kind in ("tensor", "image", "video", "dict", "onehot"):
        num_classes = None if kind == "onehot" else 5
        for seed in range(5):
            expected, actual = run_both(getattr(TV, name)(alpha=alpha, num_classes=num_classes),
                                        getattr(T, name)(alpha=alpha, num_classes=num_classes),
                                        mix_sample(kind, seed), seed)
            assert_same(expected, actual)


@pytest.mark.parametrize("name", ["MixUp", "CutMix"])
def test_mixup_cutmix_errors(name):
    images = engine.from_numpy(image_array(0, (4, 3, 9, 11), np.float32))
    labels = engine.tensor([0, 1, 2, 3])
    cases = [
        ((PIL.Image.new("RGB", (4, 4)), labels), dict(num_classes=5), "does not support PIL images"),
        ({"img": images, "boxes": tv_tensors.BoundingBoxes(engine.zeros(1, 4), format="XYXY", canvas_size=(9, 11)),
          "labels": labels}, dict(num_classes=5), "does not support"),
        ((images, labels), {}, "num_classes must be passed"),
        ((images, engine.tensor([0, 1, 2])), dict(num_classes=5), "batch size of the image"),
        ((images[0], labels), dict(num_classes=5), "Expected a batched input with 4 dims"),
        ((images, engine.zeros(4, 3)), dict(num_classes=5), "must match num_classes"),
        ((images, labels), dict(num_classes=5, labels_getter=lambda s: [0, 1, 2, 3]), "must be a tensor"),
    ]
    for sample, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            getattr(TV, name)(**kwargs)(to_torch(sample))
        with pytest.raises(ValueError, match=message):
            getattr(T, name)(**kwargs)(sample)


def test_mixup_labels_getter():
    images = engine.from_numpy(image_array(0, (4, 3, 9, 11), np.float32))
    sample = {"x": images, "targets": engine.tensor([0, 1, 2, 3])}
    with pytest.raises(ValueError, match="Could not infer where the labels are"):
        T.MixUp(num_classes=4)(sample)
    expected, actual = run_both(TV.MixUp(num_classes=4, labels_getter=lambda s: s["targets"]),
                                T.MixUp(num_classes=4, labels_getter=lambda s: s["targets"]), sample, 3)
    assert_same(expected, actual)
