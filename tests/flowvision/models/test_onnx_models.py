"""Zoo models exported with engine.onnx.export: each file passes onnx.checker and, run in ONNX Runtime at
two batch sizes (exported at an odd input size with a dynamic batch), matches our eager output within 1e-4
relative; one resnet18 file matches torchvision's own eager output on the same weights.

By default the smallest classifier of each family and one segmentation model of each kind run
(``ONNX_EVERY_MODEL=1``: every classification and segmentation model).
"""
import os

import numpy as np
import pytest
from onnx_check import check_export, export_bytes, images, run_onnx

import engine
import flowvision.models as models

pytestmark = pytest.mark.slow  # whole-model exports: outside the quick subset (-m "not slow")

_SEGMENTATION_MODULES = ("fcn", "deeplabv3", "lraspp")
_DETECTION_MODULES = {"faster_rcnn", "mask_rcnn", "keypoint_rcnn", "retinanet", "fcos", "ssd", "ssdlite"}
EVERY = bool(os.environ.get("ONNX_EVERY_MODEL"))


def _published(name, key, default):
    if name not in models.list_pretrained():
        return default
    return models.get_model_weights(name).DEFAULT.meta[key]


_FAMILIES = {m: [n for n in models.list_models(module=m) if not models.model_alias_of(n)]
             for m in models.list_modules() if m not in set(_SEGMENTATION_MODULES) | _DETECTION_MODULES}


def _cheapest(names):
    """The model of a family with the fewest GFLOPs (then parameters): its layers are the family's."""
    return min(names, key=lambda n: (_published(n, "gflops", 0), _published(n, "num_params", 0)))


_SEGMENTERS = {m: [n for n in models.list_models(module=m) if not n.endswith("coco")] for m in _SEGMENTATION_MODULES}
if EVERY:
    CLASSIFIERS = [n for names in _FAMILIES.values() for n in names]
    SEGMENTERS = [n for names in _SEGMENTERS.values() for n in names]
else:
    CLASSIFIERS = [_cheapest(names) for names in _FAMILIES.values()]
    SEGMENTERS = [_cheapest(names) for names in _SEGMENTERS.values()]


def randomize_norms(model, seed=0):
    """Random running statistics and affine parameters of every BatchNorm (the defaults would hide a wrong fold)."""
    rng = np.random.default_rng(seed)
    for m in model.modules():
        if isinstance(m, engine.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(engine.from_numpy(rng.standard_normal(c).astype(np.float32) * 0.1))
            m.running_var.copy_(engine.from_numpy(rng.uniform(0.5, 2.0, c).astype(np.float32)))
            with engine.no_grad():
                m.weight.copy_(engine.from_numpy(rng.uniform(0.5, 1.5, c).astype(np.float32)))
                m.bias.copy_(engine.from_numpy(rng.standard_normal(c).astype(np.float32) * 0.1))
    return model


def _spread_head(model):
    """Scale the last linear layer up so the logits differ clearly between inputs (some heads start at zero)."""
    linears = [m for m in model.modules() if isinstance(m, engine.nn.Linear)]
    if not linears:
        return
    last = linears[-1]
    with engine.no_grad():
        last.weight.copy_(engine.from_numpy(np.random.default_rng(1).standard_normal(last.weight.shape)
                                            .astype(np.float32) * 0.05))


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier(name):
    engine.manual_seed(0)
    model = randomize_norms(models.create_model(name)).eval()
    _spread_head(model)
    min_height, min_width = _published(name, "min_size", (1, 1))
    height, width = (224, 224) if min_height >= 224 else (max(63, min_height + 1) | 1, max(71, min_width) | 1)
    check_export(model, lambda batch: (images(0, batch, 3, height, width),), batches=(2, 3), rtol=1e-4, what=name,
                 per_sample=True)


@pytest.mark.parametrize("name", SEGMENTERS)
def test_segmenter(name):
    engine.manual_seed(0)
    aux = {} if name.startswith("lraspp") else {"aux_loss": True}
    model = randomize_norms(models.create_model(name, weights_backbone=None, **aux)).eval()
    check_export(model, lambda batch: (images(0, batch, 3, 61, 75),), batches=(2, 3), rtol=1e-4, what=name,
                 per_sample=True)


def test_resnet18_file_matches_torchvision():
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    reference = torchvision.models.resnet18().eval()
    model = models.resnet18().eval()
    model.load_state_dict({k: v.detach().numpy() for k, v in reference.state_dict().items()})
    x = images(0, 2, 3, 67, 73)
    data = export_bytes(model, engine.from_numpy(x[:1]), input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(run_onnx(data, {"x": x})[0], expected, rtol=1e-4, atol=1e-4)
