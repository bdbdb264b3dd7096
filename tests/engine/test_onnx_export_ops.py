"""engine.onnx.export of the ops a random-argument sweep found unexported or wrong: masked_fill, scatter, tril/triu,
diagonal, hypot, logaddexp, median along a dim, addmm/baddbmm, bilinear, cosine similarity, one_hot, var over a
dynamic axis, transposed convolutions whose output_padding reaches the stride, adaptive max pools with unequal
windows, divisor_override, interpolate's 'area' mode, local response norm with an even window and circular padding
before opset 19. Each is exported with a dynamic batch and run in ONNX Runtime at two batch sizes against our
eager outputs (tests/onnx_check.py)."""
import io

import pytest
from onnx_check import Fn, check_export, node_types, one

import engine
from engine import nn
from engine.nn import functional as F

pytestmark = pytest.mark.slow  # about a hundred exports run in ONNX Runtime: outside the quick subset


OPS = {
    "masked_fill_attention_mask": lambda m, x: x.masked_fill(x[:, :1] > 0.3, float("-inf")).softmax(-1),
    "masked_fill_tensor_value": lambda m, x: x.masked_fill(x < 0, x.mean()),
    "scatter_src": lambda m, x: engine.zeros_like(x).scatter(-1, x.argsort(-1), x * 2),
    "scatter_larger_src": lambda m, x: engine.zeros(x.shape[0], 3, 9).scatter(2, x[:, :2, :4].argsort(-1), x),
    "scatter_number": lambda m, x: x.scatter(1, x.argmax(1, keepdim=True), -5.0),
    "scatter_add": lambda m, x: engine.zeros_like(x).scatter_add(2, (x.abs() * 3).long().clamp(max=6), x),
    "tril_triu": lambda m, x: x.tril() + x.triu(2) * 2 + x.tril(-1) * 3,
    "diagonal": lambda m, x: x.diagonal(0, 1, 2) + x.diagonal(1, 1, 2)[..., :4].sum(-1, keepdim=True),
    "diagonal_negative_offset": lambda m, x: x.diagonal(-2, -1, -2),
    "hypot": lambda m, x: engine.hypot(x, x.flip(-1)) + engine.hypot(x * 1e30, x * 1e30) * 1e-30
    + engine.hypot(x * 0, x * 0),
    "logaddexp": lambda m, x: engine.logaddexp(x, -2 * x) + engine.logaddexp2(x, x.flip(-1))
    + engine.logaddexp(x, x),
    "logaddexp_infinities": lambda m, x: engine.logaddexp(x.masked_fill(x > 0, float("inf")),
                                                         x.masked_fill(x > 0.5, float("inf"))),
    "median_dim": lambda m, x: x.median(-1).values + x.median(1, keepdim=True).values.sum(-1) + x.median(0).values.sum(),
    "median_indices": lambda m, x: x.round().median(2, keepdim=True).indices.float(),
    "var_over_batch": lambda m, x: x.var(1) + x.std(dim=(0, 1), correction=0) + x.var(),
    "addmm": lambda m, x: engine.addmm(x[0, :, :5], x[0], x[0, :5].t(), beta=0.5, alpha=2.0) + x[:, :, :5],
    "baddbmm": lambda m, x: engine.baddbmm(x[:, :, :5], x, x[:, :5].transpose(1, 2), beta=0.25, alpha=-1.5),
    "baddbmm_beta_zero_ignores_nan": lambda m, x: engine.baddbmm(x[:, :, :5] + float("nan"), x, x[:, :5].transpose(1, 2),
                                                                beta=0),
    "bilinear": lambda m, x: m.bilinear(x, x.flip(-1)),
    "cosine_similarity": lambda m, x: F.cosine_similarity(x, x.flip(1), dim=1).sum(-1, keepdim=True)
    + F.cosine_similarity(x, x[:1], dim=-1, eps=0.5),
    "one_hot": lambda m, x: F.one_hot((x.abs() * 3).long().clamp(max=4), 5).float().sum(1),
}
MODULES = {"bilinear": dict(bilinear=nn.Bilinear(7, 7, 4))}


@pytest.mark.parametrize("name", list(OPS))
def test_ops(name):
    engine.manual_seed(0)
    check_export(Fn(OPS[name], **MODULES.get(name, {})), one(5, 7), rtol=1e-5, what=name)


@pytest.mark.parametrize("opset", [13, 16])
def test_scatter_reductions_need_opset_16(opset):
    model = Fn(lambda m, x: engine.ones_like(x).scatter(1, (x.abs() * 2).long().clamp(max=4), x, reduce="multiply"))
    if opset >= 16:
        check_export(model, one(5, 7), opset_version=opset)
    else:
        with pytest.raises(engine.onnx.UnsupportedOperatorError, match="reduce='multiply' needs ONNX opset 16"):
            check_export(model, one(5, 7), opset_version=opset)


@pytest.mark.parametrize("stride, padding, output_padding, dilation",
                         [(1, 0, 1, 2), (1, 1, 1, 2), (2, 0, 2, 3), (1, 2, 1, 3), ((1, 2), (0, 1), (1, 1), (2, 1))])
@pytest.mark.parametrize("bias", [True, False])
def test_transposed_convolution_output_padding_reaching_the_stride(stride, padding, output_padding, dilation, bias):
    """torch allows output_padding up to the dilation; ONNX Runtime refuses one that is not below the stride."""
    engine.manual_seed(1)
    model = nn.ConvTranspose2d(3, 4, 3, stride, padding, output_padding, bias=bias, dilation=dilation)
    check_export(model, one(3, 6, 5))
    engine.manual_seed(1)
    check_export(nn.ConvTranspose1d(3, 2, 2, 1, 0, 1, dilation=2, bias=bias), one(3, 6))


@pytest.mark.parametrize("size", [(5, 4), (3, 2), (4, None), 7])
def test_adaptive_max_pool_with_unequal_windows(size):
    check_export(nn.AdaptiveMaxPool2d(size), one(3, 11, 7))
    check_export(Fn(lambda m, x: F.adaptive_max_pool1d(x, 3)), one(3, 7))


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 1), (3, 1, 0), (3, 2, 1), ((2, 3), (2, 1), (1, 0))])
def test_avg_pool_with_divisor_override(kernel, stride, padding, ceil_mode):
    check_export(nn.AvgPool2d(kernel, stride, padding, ceil_mode, divisor_override=3), one(2, 7, 8))


def test_avg_pool1d_with_divisor_override():
    check_export(Fn(lambda m, x: F.avg_pool2d(x.unsqueeze(2), (1, 3), 2, (0, 1), True, divisor_override=2)),
                 one(2, 8))


@pytest.mark.parametrize("size", [(3, 4), (10, 3), (14, 18), (5, 9)])
def test_interpolate_area(size):
    check_export(Fn(lambda m, x: F.interpolate(x, size=size, mode="area")), one(2, 10, 9))
    check_export(Fn(lambda m, x: F.interpolate(x, size=size[0], mode="area")), one(2, 10))


def test_interpolate_area_with_a_dynamic_size_is_refused():
    model = Fn(lambda m, x: F.interpolate(x, size=(3, 4), mode="area"))
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="adaptive pooling to \\(3, 4\\) of an input"):
        engine.onnx.export(model, (engine.randn(1, 2, 10, 9),), io.BytesIO(), input_names=["x"],
                           dynamic_axes={"x": {0: "batch", 2: "height"}})


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", [(6, 5, 4), (6, 5)])
def test_local_response_norm_every_window(size, shape):
    data = one(*shape)
    model = nn.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=1.5)
    names = node_types(check_export(model, data))
    assert ("LRN" in names) == (size % 2 == 1 and len(shape) == 3)


@pytest.mark.parametrize("opset", [17, 19])
def test_circular_padding_before_and_from_opset_19(opset):
    engine.manual_seed(2)
    check_export(Fn(lambda m, x: F.pad(x, (2, 1, 0, 3), mode="circular")), one(3, 5, 6), opset_version=opset)
    data = check_export(nn.Conv2d(3, 2, 3, padding=(1, 2), padding_mode="circular"), one(3, 5, 6),
                        opset_version=opset)
    assert ("Pad" in node_types(data)) == (opset >= 19)
