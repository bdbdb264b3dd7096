"""engine.onnx.export: the cases a differential sweep (random modules and functional calls exported, run in ONNX
Runtime against our eager outputs and torch's) found refused or wrong: max pool indices (1-D to 3-D, adaptive),
interpolate to an output of size 1, all() over a dynamic axis, assignment through basic indexing, pointwise ops
(inverse hyperbolic, logit, fmax/fmin, heaviside, xlogy, sinc, outer), index_add, masked_select, and torch's
export arguments ``training`` (TrainingMode: BatchNorm batch statistics, dropout), ``export_params``,
``keep_initializers_as_inputs`` and ``dynamo``."""
import io

import numpy as np
import pytest
from onnx_check import Fn, check_export, eager_outputs, export_bytes, images, one, onnx, ort

import engine
import engine.onnx
from engine import nn
from engine.nn import functional as F

pytestmark = pytest.mark.slow  # about seventy exports run in ONNX Runtime: outside the quick subset

TrainingMode = engine.onnx.TrainingMode


# ---- max pool indices: ONNX counts over the whole (N, C, H, W) input, torch within each plane -------------
POOLS = {
    "max1d": (lambda: nn.MaxPool1d(3, 2, 1, return_indices=True), (3, 11)),
    "max1d_dilated_ceil": (lambda: nn.MaxPool1d(2, 3, 0, dilation=2, ceil_mode=True, return_indices=True), (3, 8)),
    "max2d": (lambda: nn.MaxPool2d((3, 2), (2, 1), (1, 0), return_indices=True), (3, 9, 8)),
    "max2d_ceil": (lambda: nn.MaxPool2d(2, 3, ceil_mode=True, return_indices=True), (2, 7, 7)),
    "max3d": (lambda: nn.MaxPool3d((2, 2, 1), (1, 2, 2), (1, 0, 0), return_indices=True), (2, 5, 4, 7)),
    "adaptive2d_divisible": (lambda: nn.AdaptiveMaxPool2d((3, 2), return_indices=True), (3, 9, 8)),
    "adaptive2d_global": (lambda: nn.AdaptiveMaxPool2d(1, return_indices=True), (3, 8, 9)),
    "adaptive1d": (lambda: nn.AdaptiveMaxPool1d(3, return_indices=True), (2, 9)),
}


@pytest.mark.parametrize("name", list(POOLS))
def test_max_pool_indices(name):
    make, shape = POOLS[name]
    check_export(make(), one(*shape), what=name)


def test_max_pool_indices_with_a_dynamic_height_and_width():
    x = images(0, 2, 3, 9, 8)
    data = export_bytes(nn.MaxPool2d(3, 2, 1, return_indices=True), engine.from_numpy(x), input_names=["x"],
                        dynamic_axes={"x": {0: "n", 2: "h", 3: "w"}})
    bigger = images(1, 3, 3, 11, 6)
    for got, ours in zip(ort.InferenceSession(data).run(None, {"x": bigger}),
                         eager_outputs(nn.MaxPool2d(3, 2, 1, return_indices=True), [bigger])):
        np.testing.assert_array_equal(got, ours)


def test_adaptive_max_pool_indices_to_a_size_that_does_not_divide_is_refused():
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="return_indices from \\(9, 8\\) to \\(2, 3\\)"):
        export_bytes(nn.AdaptiveMaxPool2d((2, 3), return_indices=True), engine.from_numpy(images(0, 1, 3, 9, 8)))


# ---- interpolate to a size of 1: torch's source coordinate is in / 2 - 0.5, not 0 -------------------------
@pytest.mark.parametrize("mode, shape, size", [("linear", (2, 8), 1), ("bilinear", (2, 3, 7), (9, 1)),
                                               ("bilinear", (2, 5, 7), (1, 5)), ("bicubic", (2, 3, 7), (1, 3)),
                                               ("trilinear", (2, 8, 7, 3), (2, 1, 9))])
def test_interpolate_to_an_output_of_size_one(mode, shape, size):
    check_export(Fn(lambda m, x: F.interpolate(x, size=size, mode=mode)), one(*shape), what=mode)


# ---- all() over a dynamic axis ------------------------------------------------------------------------------
def test_all_over_the_dynamic_batch_axis():
    check_export(Fn(lambda m, x: ((x > -1.5).all(0, keepdim=True), (x > -2).all(), (x > 0).any(0))), one(3, 5))


# ---- assignment through basic indexing ------------------------------------------------------------------------
def _assigned(key, value):
    def fn(m, x):
        y = x.clone()
        y[key] = value(y, key)
        return y
    return fn


KEYS = {"slice": (slice(None), slice(1, 3)), "last": (Ellipsis, -1), "new_axis": (slice(None), None, 0),
        "steps": (slice(None), 2, slice(1, None, 2)), "two_ints": (slice(None), -1, -1),
        "empty": (slice(None), slice(0, 0)), "whole": (Ellipsis,)}
VALUES = {"number": lambda y, key: 1.5, "zero_dim": lambda y, key: engine.tensor(2.0),
          "region": lambda y, key: y[key] * 3 + 1, "broadcast": lambda y, key: (y[key] * 3)[..., :1]}


@pytest.mark.parametrize("value", list(VALUES))
@pytest.mark.parametrize("key", list(KEYS))
def test_assignment_through_basic_indexing(key, value):
    check_export(Fn(_assigned(KEYS[key], VALUES[value])), one(3, 5), what=f"{key}={value}")


@pytest.mark.parametrize("key", [(slice(None), [0, 2]), (Ellipsis, [4, -1, 0]), (slice(None), [2, 0, 2])],
                         ids=["columns", "negative", "repeated"])
@pytest.mark.parametrize("value", ["number", "region", "broadcast"])
def test_assignment_through_one_integer_index(key, value):
    key = tuple(engine.tensor(k) if isinstance(k, list) else k for k in key)
    check_export(Fn(_assigned(key, VALUES[value])), one(3, 5), what=f"{key}={value}")


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(accumulate):
    check_export(Fn(lambda m, x: x[0].index_put((engine.tensor([0, 2, 0]),), x[0] * 2, accumulate=accumulate) + x),
                 one(3, 5))


def test_assignment_through_a_mask_is_refused_in_one_line():
    def fn(m, x):
        y = x.clone()
        y[y > 0] = 0.0
        return y
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="other than one 1-D integer index along one"):
        export_bytes(Fn(fn), engine.from_numpy(images(0, 2, 3, 5)))


def test_assignment_to_part_of_a_dynamic_axis_is_refused():
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="part of axis 0, whose size follows the input"):
        check_export(Fn(_assigned((0,), VALUES["number"])), one(3, 5))


# ---- pointwise ops ------------------------------------------------------------------------------------------
def _specials(seed, batch, *shape):
    """Values with zeros, NaNs and entries in (0, 1)."""
    x = images(seed, batch, *shape)
    x.reshape(-1)[::7] = 0.0
    x.reshape(-1)[3::11] = np.nan
    return x


POINTWISE = {
    "inverse_hyperbolic": lambda m, x: x.asinh() + (x.abs() + 1).acosh() + (x.tanh() * 0.9).atanh(),
    "degrees": lambda m, x: engine.deg2rad(x * 90) + engine.rad2deg(x),
    "logit": lambda m, x: (x.sigmoid().logit(), x.sigmoid().logit(eps=0.1), x.sigmoid().logit(0.7)),
    "fmax_fmin": lambda m, x: (engine.fmax(x, x.flip(1)), engine.fmin(x, x.flip(1)), engine.fmax(x, x)),
    "heaviside": lambda m, x: engine.heaviside(x, x.flip(1)),
    "xlogy": lambda m, x: engine.xlogy(x, x.abs().flip(1)) + engine.xlogy(x * 0, x),
    "sinc": lambda m, x: engine.sinc(x),
    "outer": lambda m, x: engine.outer(x[0, 0], x[0, 1]) + x[:, :1, :1],
    "nan_inputs": lambda m, x: x * 2 + x.exp(),  # the second trace's inputs span the finite values' range
}


@pytest.mark.parametrize("name", list(POINTWISE))
def test_pointwise(name):
    check_export(Fn(POINTWISE[name]), lambda batch: (_specials(0, batch, 4, 5),), what=name)


def test_half_precision_infinity_tests_and_prelu_slopes():
    """IsInf takes float16 only from opset 20; PReLU's float32 slopes meet a float16 or float64 input."""
    def make(batch):
        x = (images(0, batch, 3, 5) * 4).astype(np.float16)
        x.reshape(-1)[::4] = np.inf
        x.reshape(-1)[1::5] = -np.inf
        return (x,)
    check_export(Fn(lambda m, x: (x.isinf(), x.isfinite(), x.nan_to_num(), x.exp().isinf())), make, rtol=1e-2)
    check_export(nn.PReLU(3, 0.2), lambda batch: (images(0, batch, 3, 5).astype(np.float16),), rtol=1e-2)
    check_export(nn.PReLU(), lambda batch: (images(0, batch, 3, 5).astype(np.float64),))


# ---- index_add and masked_select ------------------------------------------------------------------------------
def test_index_add():
    check_export(Fn(lambda m, x: (x.index_add(1, engine.tensor([0, 0, 2]), x[:, :3] * 2),
                                  x.index_add(-1, engine.tensor([4, 1]), x[:, :, :2], alpha=-0.5))), one(3, 5))


def test_index_add_needs_opset_16():
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="index_add needs ONNX opset 16"):
        export_bytes(Fn(lambda m, x: x.index_add(1, engine.tensor([0, 2]), x[:, :2])),
                     engine.from_numpy(images(0, 2, 3, 5)), opset_version=15)


def test_masked_select():
    check_export(Fn(lambda m, x: engine.masked_select(x, x > 0.3) * 2), one(3, 5), batches=(3,), dynamic=False)
    check_export(Fn(lambda m, x: engine.masked_select(x, x[:1, :1] > 0)), one(3, 5), batches=(2,), dynamic=False)


# ---- torch's export arguments: training, export_params, keep_initializers_as_inputs, dynamo -----------------------
def _unoptimized_session(data):
    """An ONNX Runtime session without graph optimizations, which would drop Dropout nodes."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _bn_model():
    engine.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.BatchNorm2d(4, affine=False))
    model[1].running_mean.copy_(engine.randn(4))
    model[1].weight.data.copy_(engine.randn(4))
    return model


@pytest.mark.parametrize("mode", [TrainingMode.TRAINING, TrainingMode.PRESERVE], ids=["training", "preserve"])
def test_training_mode_normalizes_with_batch_statistics_and_restores_the_model(mode):
    model = _bn_model().train()
    if mode is TrainingMode.PRESERVE:
        model[0].eval()  # PRESERVE keeps each module's own mode
    x = images(0, 3, 3, 6, 5)
    buffers = {k: v.numpy().copy() for k, v in model.state_dict().items() if "running" in k or "batches" in k}
    data = export_bytes(model, engine.from_numpy(x[:2]), training=mode, input_names=["x"], dynamic_axes={"x": [0]})
    assert all(np.array_equal(model.state_dict()[k].numpy(), v) for k, v in buffers.items())
    assert model.training and model[1].training and model[0].training is (mode is TrainingMode.TRAINING)
    got = _unoptimized_session(data).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, eager_outputs(model, [x])[0], rtol=1e-4, atol=1e-5)


def test_eval_batchnorm_without_running_statistics():
    check_export(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, track_running_stats=False)), one(3, 7, 6),
                 batches=(2, 3), rtol=1e-4)


@pytest.mark.parametrize("module", [nn.Dropout(0.25), nn.Dropout2d(0.5)], ids=["dropout", "dropout2d"])
def test_dropout_in_training_mode_draws_at_run_time(module):
    x = np.abs(images(0, 4, 16, 5, 5)) + 1
    data = export_bytes(nn.Sequential(module), engine.from_numpy(x[:1]), training=TrainingMode.TRAINING,
                        input_names=["x"], dynamic_axes={"x": [0]})
    assert "Dropout" in [node.op_type for node in onnx.load_from_string(data).graph.node]
    ratio = _unoptimized_session(data).run(None, {"x": x})[0] / x
    kept = ratio != 0
    np.testing.assert_allclose(ratio[kept], 1 / (1 - module.p), rtol=1e-6)
    assert 0 < kept.mean() < 1
    if isinstance(module, nn.Dropout2d):  # whole channels
        assert (kept == kept[:, :, :1, :1]).all()


def test_alpha_dropout_in_training_mode_is_refused():
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="alpha dropout in training mode"):
        export_bytes(nn.AlphaDropout(0.2), engine.from_numpy(images(0, 2, 5)), training=TrainingMode.TRAINING)


def test_parameters_as_inputs_without_weights():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 5 * 4, 2)).eval()
    x = images(0, 2, 3, 7, 6)
    buffer = io.BytesIO()
    engine.onnx.export(model, engine.from_numpy(x), buffer, input_names=["x"], export_params=False)
    onnx.checker.check_model(buffer.getvalue())
    graph = onnx.load_from_string(buffer.getvalue()).graph
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    inputs = [value.name for value in graph.input]
    assert set(inputs) - {"x"} <= set(state) and "2" not in inputs and "3.weight" in inputs
    assert not {t.name for t in graph.initializer} & set(state)
    feeds = {name: state[name] for name in inputs if name != "x"}
    got = ort.InferenceSession(buffer.getvalue()).run(None, dict(feeds, x=x))[0]
    np.testing.assert_allclose(got, eager_outputs(model, [x])[0], rtol=1e-4, atol=1e-6)


def test_initializers_kept_as_inputs():
    data = check_export(nn.Sequential(nn.Linear(5, 3), nn.ReLU()), one(5), keep_initializers_as_inputs=True,
                        dynamo=False)
    graph = onnx.load_from_string(data).graph
    assert {t.name for t in graph.initializer} <= {value.name for value in graph.input}


def test_bad_training_mode():
    with pytest.raises(ValueError, match="training must be a TrainingMode"):
        export_bytes(nn.ReLU(), engine.from_numpy(images(0, 2, 3)), training=5)
