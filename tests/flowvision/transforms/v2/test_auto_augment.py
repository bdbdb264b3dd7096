"""flowvision.transforms.v2 AutoAugment, RandAugment, TrivialAugmentWide and AugMix against torchvision v2.

With nearest interpolation (the default, except AugMix's) the outputs are exact (floats within 1e-6, see
test_color.py). With bilinear interpolation the v1 ``affine`` kernel we reuse rounds a few sheared pixels one
grey level away from torchvision's, so AugMix's default is checked within 1 grey level.
"""
import pytest
import torchvision.transforms.v2 as TV
from v2_helpers import assert_same, boxes_array, make_input, run_both, to_torch

import engine
import flowvision.transforms.v2 as T
from flowvision import tv_tensors
from flowvision.transforms.autoaugment import AutoAugmentPolicy as V1Policy

pytestmark = pytest.mark.slow  # seeded sweeps against torchvision: outside the quick subset (-m "not slow")


KINDS = ("image", "image_float", "batch", "video", "tensor", "pil", "labelled")

CASES = [
    ("AutoAugment", {}), ("AutoAugment", dict(policy=T.AutoAugmentPolicy.CIFAR10)),
    ("AutoAugment", dict(policy=T.AutoAugmentPolicy.SVHN, fill=100)),
    ("RandAugment", {}), ("RandAugment", dict(num_ops=4, magnitude=20)),
    ("TrivialAugmentWide", {}), ("TrivialAugmentWide", dict(fill=[10, 20, 30])),
    ("AugMix", dict(interpolation="nearest")),
    ("AugMix", dict(chain_depth=2, all_ops=False, alpha=0.5, interpolation="nearest")),
]


def torchvision_kwargs(kwargs):
    if "policy" in kwargs:
        return dict(kwargs, policy=TV.AutoAugmentPolicy(kwargs["policy"].value))
    return kwargs


@pytest.mark.parametrize("name, kwargs", CASES)
def test_matches_torchvision(name, kwargs):
    """Same ops and magnitudes drawn, same output; the labels of a sample pass through."""
    for kind in KINDS:
        for seed in range(5) if kind in ("image", "image_float") else range(2):
            sample = make_input(kind, seed)
            expected, actual = run_both(getattr(TV, name)(**torchvision_kwargs(kwargs)),
                                        getattr(T, name)(**kwargs), sample, seed)
            assert_same(expected, actual, atol=1e-6 if kind == "image_float" else 0)
            if kind == "labelled":
                assert actual["labels"] is sample["labels"]


def test_augmix_bilinear_within_one_level():
    for kind in ("image", "batch", "pil"):
        for seed in range(3):
            expected, actual = run_both(TV.AugMix(), T.AugMix(), make_input(kind, seed), seed)
            assert_same(expected, actual, atol=1)


def test_policy_is_v1_enum():
    assert T.AutoAugmentPolicy is V1Policy
    with pytest.raises(ValueError, match="not recognized"):
        T.AutoAugment(policy="imagenet")


@pytest.mark.parametrize("name", ["AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"])
def test_refuses_boxes_masks_and_several_images(name):
    image = make_input("image")
    boxes = tv_tensors.BoundingBoxes(engine.from_numpy(boxes_array(0, (29, 37))), format="XYXY",
                                     canvas_size=(29, 37))
    mask = tv_tensors.Mask(engine.zeros(29, 37, dtype=engine.uint8))
    cases = [({"image": image, "boxes": boxes}, "Inputs of type BoundingBoxes are not supported"),
             ({"image": image, "mask": mask}, "Inputs of type Mask are not supported"),
             ((image, make_input("video")), "only properly defined for a single image or video"),
             ({"labels": "no image"}, "Found no image in the sample")]
    for sample, message in cases:
        with pytest.raises(TypeError, match=message):
            getattr(TV, name)()(to_torch(sample))
        with pytest.raises(TypeError, match=message):
            getattr(T, name)()(sample)


def test_argument_errors():
    for make in (lambda ns: ns.RandAugment(num_ops=-1), lambda ns: ns.AugMix(severity=11),
                 lambda ns: ns.AugMix(severity=0)):
        with pytest.raises(ValueError):
            make(TV)
        with pytest.raises(ValueError):
            make(T)
