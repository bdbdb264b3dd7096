"""The files engine.onnx.export writes load and run in OpenVINO (its CPU plugin, float32 inference): a classifier
and a segmentation model at a dynamic batch, and detectors (RoIAlign, NMS, masks, Keypoint R-CNN's ``Loop``, a
number of detections that follows the image) on several photos, against our eager output with the tolerances of
the ONNX Runtime tests (test_onnx_models.py). One model per kind: the ONNX Runtime tests cover every family."""
import numpy as np
import pytest
from onnx_check import eager_outputs, export_bytes, images
from test_onnx_models import _assert_same_detections, exported_detector

import engine
import flowvision.models as models

ov = pytest.importorskip("openvino", reason="the OpenVINO tests need openvino (in the test extra)")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fast_random")]


def _compiled(data):
    """The ONNX file ``data`` compiled by OpenVINO for the CPU in float32 (it may default to bfloat16)."""
    core = ov.Core()
    return core.compile_model(core.read_model(model=data, weights=b""), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})


def _run(compiled, feeds):
    return [np.asarray(value) for value in compiled(feeds).values()]


@pytest.mark.parametrize("name", ["resnet18", "lraspp_mobilenet_v3_large"])
def test_dense_model(name):
    engine.manual_seed(0)
    model = models.create_model(name, **({} if name == "resnet18" else {"weights_backbone": None})).eval()
    x = images(0, 3, 3, 67, 75)
    compiled = _compiled(export_bytes(model, engine.from_numpy(x[:1]), input_names=["x"],
                                      dynamic_axes={"x": {0: "batch"}}))
    for batch in (1, 3):
        expected = eager_outputs(model, [x[:batch]])
        got = _run(compiled, {"x": x[:batch]})
        assert len(got) == len(expected)
        for o, e in zip(got, expected):
            assert o.shape == e.shape
            np.testing.assert_allclose(o, e, rtol=1e-4, atol=1e-4 * np.abs(e).max(), err_msg=f"{name} batch {batch}")


@pytest.fixture(scope="module", autouse=True)
def _release_exported_detectors():
    """The exported detectors the ONNX Runtime tests left in their cache are not needed after these tests."""
    yield
    exported_detector.cache_clear()


@pytest.mark.parametrize("name", ["maskrcnn_resnet50_fpn", "keypointrcnn_resnet50_fpn", "ssdlite320_mobilenet_v3_large"])
def test_detector(name):
    photos, expected, data = exported_detector(name)
    compiled = _compiled(data)
    for photo, reference in zip(photos, expected):
        _assert_same_detections(dict(zip(reference, _run(compiled, {"image": photo}))), reference, name)
