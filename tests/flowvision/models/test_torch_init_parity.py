"""A model built after ``engine.manual_seed(s)`` has torchvision's initial weights after
``torch.manual_seed(s)``, bit for bit: every layer draws the same numbers in the same order (the
construction order of default initialisations, then each family's own init pass)."""
import warnings

import numpy as np
import pytest
import torch
import torchvision

import engine
import flowvision.models as models
import flowvision.models.detection as detection
import flowvision.models.segmentation as segmentation

# whole-model constructions: outside the quick subset (-m "not slow"); torch's references on one thread
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

CLASSIFIERS = ["resnet18", "mobilenet_v3_large", "vit_b_16", "convnext_tiny", "efficientnet_b0", "mobilenet_v2",
               "mobilenet_v3_small", "squeezenet1_1", "mnasnet0_5", "regnet_x_400mf", "regnet_y_400mf",
               "googlenet", "inception_v3", "shufflenet_v2_x0_5", "densenet121", "efficientnet_v2_s", "swin_t",
               "maxvit_t"]
DETECTORS = ["fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large", "retinanet_resnet50_fpn",
             "fcos_resnet50_fpn"]
SEGMENTERS = ["lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large"]


def _build(family, name, seed):
    """(ours, torchvision's) built after the same seed, and whether both generators ended in step."""
    ours_family, ref_family, kwargs = family
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine.manual_seed(seed)
        ours = getattr(ours_family, name)(**kwargs)
        torch.manual_seed(seed)
        ref = getattr(ref_family, name)(**kwargs)
    in_step = np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    return ours, ref, in_step


def _assert_same_weights(ours, ref):
    ours_state, ref_state = ours.state_dict(), ref.state_dict()
    assert list(ours_state) == list(ref_state)
    different = [key for key, value in ref_state.items() if not np.array_equal(ours_state[key].numpy(), value.numpy())]
    assert not different, f"{len(different)} tensors differ, first {different[:3]}"


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_initial_weights_equal_torchvision(name):
    ours, ref, in_step = _build((models, torchvision.models, {}), name, seed=0)
    _assert_same_weights(ours, ref)
    assert in_step


@pytest.mark.parametrize("name", DETECTORS)
def test_detector_initial_weights_equal_torchvision(name):
    family = (detection, torchvision.models.detection, {"weights": None, "weights_backbone": None})
    ours, ref, in_step = _build(family, name, seed=1)
    _assert_same_weights(ours, ref)
    assert in_step


@pytest.mark.parametrize("name", SEGMENTERS)
def test_segmenter_initial_weights_equal_torchvision(name):
    family = (segmentation, torchvision.models.segmentation, {"weights": None, "weights_backbone": None})
    ours, ref, in_step = _build(family, name, seed=2)
    _assert_same_weights(ours, ref)
    assert in_step


def test_reset_classifier_still_initialises_the_new_layer():
    engine.manual_seed(3)
    model = models.mobilenet_v3_small(num_classes=0)
    model.reset_classifier(7)
    weight = model.get_classifier().weight.detach().numpy()
    assert weight.shape == (7, 1024) and 0.005 < weight.std() < 0.015  # N(0, 0.01)
