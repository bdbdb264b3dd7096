"""Cases a differential fuzz of the model API (registry, weights enums, presets) against torchvision.models 0.29.1
found, kept as a seeded sample. Nothing is downloaded: only the weights' records are compared.

Each test failed before its fix:
- the presets of ``weights.transforms()`` take (C, H, W) and (B, C, H, W) tensors as torchvision's do (they raised
  TypeError), ObjectDetection keeps a PIL image's own bands, and their repr prints the interpolation as
  ``InterpolationMode.BILINEAR`` and the mean and std unrounded;
- ``meta["min_size"]`` is a tuple and ``meta["unquantized"]`` the float weights' enum member, as in torchvision;
- ``list_models`` takes torchvision's ``module`` (a package, also positional), ``include`` and ``exclude``, and
  then lists in torchvision's sorted order;
- ``get_model``, ``get_model_builder`` and ``get_model_weights`` find a model named in any case;
- ``get_weight`` raises torchvision's errors (a KeyError for an unknown tag), and the enums have ``verify``.
"""
import importlib

import numpy as np
import pytest
import torch
import torchvision.models as tvm
from PIL import Image

import engine
import flowvision.models as fm

pytestmark = pytest.mark.slow  # the presets resize to 224..520 pixels: 4 s in all

PRESETS = [("resnet50", "IMAGENET1K_V2"), ("efficientnet_b1", "IMAGENET1K_V2"),
           ("vit_b_16", "IMAGENET1K_SWAG_E2E_V1"), ("fcn_resnet50", "COCO_WITH_VOC_LABELS_V1"),
           ("r3d_18", "KINETICS400_V1"), ("fasterrcnn_resnet50_fpn", "COCO_V1"), ("raft_small", "C_T_V2"),
           ("regnet_y_16gf", "IMAGENET1K_SWAG_E2E_V1")]


@pytest.mark.parametrize("model,tag", PRESETS)
def test_preset_repr_is_torchvisions(model, tag):
    assert repr(fm.get_model_weights(model)[tag].transforms()) == repr(tvm.get_model_weights(model)[tag].transforms())


@pytest.mark.parametrize("model,tag,form,seed", [
    ("resnet50", "IMAGENET1K_V2", "image", 0),
    ("resnet50", "IMAGENET1K_V1", "batch", 1),
    ("efficientnet_b0", "IMAGENET1K_V1", "image", 2),
    ("fcn_resnet50", "COCO_WITH_VOC_LABELS_V1", "batch", 3),
    ("fasterrcnn_resnet50_fpn", "COCO_V1", "batch", 4),
])
def test_preset_takes_uint8_tensors(model, tag, form, seed):
    rng = np.random.default_rng(seed)
    h, w = (int(v) for v in rng.integers(40, 90, 2))
    image = rng.integers(0, 256, (2, 3, h, w) if form == "batch" else (3, h, w), dtype=np.uint8)
    ours = fm.get_model_weights(model)[tag].transforms()(engine.from_numpy(image.copy()))
    theirs = tvm.get_model_weights(model)[tag].transforms()(torch.from_numpy(image.copy()))
    assert ours.dtype == engine.float32 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


def test_preset_takes_float_tensors_and_pil_images():
    rng = np.random.default_rng(5)
    image = rng.random((3, 61, 47)).astype(np.float32)
    ours = fm.ResNet18_Weights.DEFAULT.transforms()(engine.from_numpy(image.copy()))
    theirs = tvm.ResNet18_Weights.DEFAULT.transforms()(torch.from_numpy(image.copy()))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-4)  # resizing floats sums in another order
    grey = Image.fromarray(rng.integers(0, 256, (13, 17), dtype=np.uint8))
    detection = fm.FasterRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()(grey)
    expected = tvm.detection.FasterRCNN_ResNet50_FPN_Weights.DEFAULT.transforms()(grey)
    np.testing.assert_array_equal(detection.numpy(), expected.numpy())


@pytest.mark.parametrize("model", ["alexnet", "quantized_mobilenet_v3_large", "quantized_resnet50", "vit_b_16",
                                   "fcos_resnet50_fpn"])
def test_meta_values_are_torchvisions(model):
    for member in tvm.get_model_weights(model):
        ours = fm.get_model_weights(model)[member.name].meta
        for key in ("min_size", "unquantized"):
            if key in member.meta:
                assert type(ours[key]).__name__ == type(member.meta[key]).__name__
                assert repr(ours[key]) == repr(member.meta[key])


@pytest.mark.parametrize("seed", range(6))
def test_list_models_torchvision_spelling(seed):
    rng = np.random.default_rng(seed)
    package = ["", ".detection", ".segmentation", ".quantization", ".video", ".optical_flow"][seed]
    patterns = ["resnet*", "*50*", "*_v2", "mobilenet*", "r*", "*fpn*", "quantized_*", "?3d_18"]
    kwargs = {"include": [str(p) for p in rng.choice(patterns, 2)] if seed % 2 else str(rng.choice(patterns)),
              "exclude": str(rng.choice(patterns)) if seed > 2 else None}
    theirs = tvm.list_models(importlib.import_module("torchvision.models" + package), **kwargs)
    ours = fm.list_models(importlib.import_module("flowvision.models" + package), **kwargs)
    assert [n for n in ours if n in tvm.list_models()] == theirs
    everything = fm.list_models(module=importlib.import_module("flowvision.models" + package))
    assert set(tvm.list_models(module=importlib.import_module("torchvision.models" + package))) <= set(everything)


def test_names_in_any_case():
    assert fm.get_model_builder("ResNet18") is fm.get_model_builder("resnet18")
    assert fm.get_model_weights("ResNet50") is fm.ResNet50_Weights
    assert type(fm.get_model("MobileNet_V3_Small", num_classes=3)).__name__ == "MobileNetV3"
    with pytest.raises(ValueError):
        fm.get_model_builder("no_such_model")


@pytest.mark.parametrize("name,error", [
    ("ResNet50_Weights", ValueError), ("a.b.c", ValueError), ("Nope_Weights.V1", ValueError),
    ("ResNet50_Weights.V9", KeyError)])
def test_get_weight_errors(name, error):
    with pytest.raises(error) as theirs:
        tvm.get_weight(name)
    with pytest.raises(error) as ours:
        fm.get_weight(name)
    if error is ValueError:
        assert str(ours.value) == str(theirs.value)


def test_weights_enum_verify():
    for name in ("IMAGENET1K_V1", "ResNet50_Weights.IMAGENET1K_V2", "DEFAULT"):
        assert repr(fm.ResNet50_Weights.verify(name)) == repr(tvm.ResNet50_Weights.verify(name))
    assert fm.ResNet50_Weights.verify(None) is None
    with pytest.raises(TypeError, match="expected ResNet50_Weights but received ResNet18_Weights"):
        fm.ResNet50_Weights.verify(fm.ResNet18_Weights.DEFAULT)
    with pytest.raises(KeyError):
        fm.ResNet50_Weights.verify("V9")
