"""engine.onnx.export, op by op: each op family exported with a dynamic batch, the file checked by onnx.checker
and run in ONNX Runtime at two batch sizes against our eager outputs; dynamic heights and widths, opsets,
BatchNorm and constant folding, nn.Graph and file objects; and the one-line errors (unmapped op, missing
onnx package, control flow on values or sizes, values computed outside the traced ops, bad arguments)."""
import io
import sys

import numpy as np
import pytest
from onnx_check import Fn, check_export, eager_outputs, export_bytes, images, node_types, one, onnx, run_onnx

import engine
import engine.onnx
from engine import nn
from engine.nn import functional as F


ELEMENTWISE = {
    "arithmetic": lambda m, x: (x * 2.5 + 1) - x / 3 + x.pow(2) - 2 ** x.clamp(-2, 2),
    "sub_alpha": lambda m, x: engine.sub(x, x.sin(), alpha=0.5) + engine.add(x, 1.0, alpha=2),
    "maximum": lambda m, x: engine.maximum(x, x.cos()) - engine.minimum(x, -x),
    "clamp": lambda m, x: x.clamp(min=-0.5) + x.clamp(max=0.3) + x.clamp(-1, 1),
    "where_compare": lambda m, x: engine.where(x > 0.2, x, -x) + (x <= 0).float() + (x != x.round()).float(),
    "unary": lambda m, x: x.abs().sqrt() + x.exp() + (x.abs() + 1).log() + x.tanh() + x.sigmoid() + x.erf()
    + x.neg() + x.sign() + (x.abs() + 0.5).rsqrt() + x.reciprocal() * 0 + x.atan() + x.sinh(),
    "rounding": lambda m, x: (x * 3).floor() + (x * 3).ceil() + (x * 3).round() + (x * 3).trunc() + (x * 3).frac(),
    "log_exp": lambda m, x: (x.abs() + 1).log2() + (x.abs() + 1).log10() + x.abs().log1p() + x.expm1() + x.exp2(),
    "division": lambda m, x: engine.div(x * 5, 2, rounding_mode="floor") + engine.div(x * 5, 2, rounding_mode="trunc")
    + engine.remainder(x * 5, 1.5) + engine.floor_divide(x * 5, 2.0),
    "logic": lambda m, x: ((x > 0) & (x < 1) | (x < -1)).float() + (~(x > 0)).float() + engine.logical_xor(
        x > 0, x > 0.5).float(),
    "casts": lambda m, x: (x * 10).long().float() + (x > 0).int().to(engine.float32) + x.double().float(),
    "integer_math": lambda m, x: ((x * 10).long() // 3).float() + ((x * 10).long() % 4).float(),
    "atan2": lambda m, x: engine.atan2(x, x.cos() - 0.5),
    "square": lambda m, x: x.square() + x.clone() + x.contiguous() + x.detach(),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_elementwise(name):
    check_export(Fn(ELEMENTWISE[name]), one(5, 7), what=name)


ACTIVATIONS = {
    "relu": nn.ReLU(), "relu6": nn.ReLU6(), "hardtanh": nn.Hardtanh(-0.3, 0.7), "leaky": nn.LeakyReLU(0.2),
    "elu": nn.ELU(0.7), "selu": nn.SELU(), "celu": nn.CELU(1.3), "gelu": nn.GELU(), "gelu_tanh": nn.GELU("tanh"),
    "silu": nn.SiLU(), "mish": nn.Mish(), "hardswish": nn.Hardswish(), "hardsigmoid": nn.Hardsigmoid(),
    "softplus": nn.Softplus(beta=2.0, threshold=1.5), "softsign": nn.Softsign(), "tanhshrink": nn.Tanhshrink(),
    "logsigmoid": nn.LogSigmoid(), "hardshrink": nn.Hardshrink(0.4), "softshrink": nn.Softshrink(0.3),
    "threshold": nn.Threshold(0.1, -2.0), "prelu": nn.PReLU(6, 0.3), "glu": nn.GLU(1), "softmax": nn.Softmax(2),
    "log_softmax": nn.LogSoftmax(1),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation(name):
    check_export(ACTIVATIONS[name], one(6, 5, 3), what=name)


def test_inplace_ops():
    model = Fn(lambda m, x: F.relu(x * 1, inplace=True).add_(x.sum((1, 2)).view(-1, 1, 1)).mul_(2))
    check_export(model, one(4, 3))


SHAPES = {
    "flatten_view": lambda m, x: x.flatten(1) * 2 + x.view(x.shape[0], -1) + x.reshape(-1, 35).reshape(x.shape[0], 35),
    "permute_transpose": lambda m, x: x.permute(0, 2, 1).transpose(1, 2) + x.mT.mT,
    "expand_token": lambda m, x: engine.cat([m.token.expand(x.shape[0], -1, -1), x], dim=1),
    "repeat": lambda m, x: x.repeat(1, 2, 1) + 0 * x.repeat(1, 2, 1),
    "repeat_interleave": lambda m, x: (x.repeat_interleave(3, dim=2), x.repeat_interleave(2, dim=0),
                                       x.repeat_interleave(engine.tensor([1, 0, 2, 1, 3]), dim=1)),
    "stack_unbind": lambda m, x: engine.stack(list(x.unbind(1)), dim=2),
    "split_chunk": lambda m, x: [p * (k + 1) for k, p in enumerate(x.split([2, 3], dim=1) + x.chunk(7, dim=2))],
    "slicing": lambda m, x: (x[:, 1:4, ::2], x[:, -1], x[..., 3], x[:, None, 2:], x[:, ::-1, 1:-1], x[:, 4:1:-2]),
    "flip_roll": lambda m, x: x.flip(1, 2) + x.roll(2, 1) + x.roll((-3, 1), (1, 2)),
    "windows": lambda m, x: (x.unfold(2, 3, 2), x.unfold(1, 2, 1).unfold(2, 4, 3)),
    "squeeze": lambda m, x: x[:, :1].squeeze(1).unsqueeze(-1) * x.sum(1, keepdim=True).squeeze(1).unsqueeze(-1),
    "advanced_index": lambda m, x: (x[:, [4, 0, 0, 2]], x[:, [1, 3], [2, 6]], x[:, 1:3][:, :, [0, 5]],
                                     x[:, :, engine.tensor([[1, 2], [0, 6]])]),
    "gather_index_select": lambda m, x: engine.gather(x, 2, engine.tensor([[[1, 0, 6]] * 5] * x.shape[0]))
    + engine.index_select(x, 2, engine.tensor([6, 6, 2])),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_shape_ops(name):
    model = Fn(SHAPES[name])
    model.token = nn.Parameter(engine.randn(1, 1, 7))
    check_export(model, one(5, 7), what=name)


PADS = {
    "constant": lambda m, x: F.pad(x, (2, -1, 1, 3), value=1.5),
    "reflect": lambda m, x: F.pad(x, (2, 1, 1, 3), mode="reflect"),
    "replicate": lambda m, x: F.pad(x, (2, 1, 1, 3), mode="replicate"),
}


@pytest.mark.parametrize("mode", list(PADS))
def test_pad(mode):
    check_export(Fn(PADS[mode]), one(2, 5, 6), what=mode)


def test_circular_pad_by_negative_amounts_needs_opset_19():
    """Before opset 19 circular padding is written as slices (tests/engine/test_onnx_export_ops.py); cropping too
    is left to Pad's 'wrap' mode."""
    model = Fn(lambda m, x: F.pad(x, (-1, 2), mode="circular"))
    check_export(model, one(2, 5), opset_version=19)
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="circular padding by negative amounts needs ONNX "
                                                                   "opset 19"):
        export_bytes(model, engine.randn(1, 2, 5))


@pytest.mark.parametrize("opset", [16, 20])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample(opset, mode):
    """GridSample with each padding and both align_corners, points partly outside the image; opset 20 renames
    the modes."""
    for padding in ("zeros", "border", "reflection"):
        for align_corners in (False, True):
            model = Fn(lambda m, x, g: F.grid_sample(x, g, mode, padding, align_corners))
            check_export(model, lambda batch: (images(0, batch, 3, 7, 9), images(1, batch, 5, 6, 2).clip(-1.3, 1.3)),
                         opset_version=opset, what=f"{padding} {align_corners}")
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="grid_sample needs ONNX opset 16"):
        export_bytes(model, (engine.randn(1, 3, 7, 9), engine.zeros(1, 5, 6, 2)), opset_version=15)


@pytest.mark.parametrize("geometry", [dict(kernel_size=2), dict(kernel_size=3, padding=(0, 2), stride=3),
                                      dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))])
def test_unfold_and_fold(geometry):
    """unfold as a grouped Conv with one-hot taps, fold as the matching ConvTranspose (overlaps summed)."""
    check_export(Fn(lambda m, x: F.unfold(x, **geometry)), one(3, 7, 9))
    columns = F.unfold(engine.zeros(1, 3, 7, 9), **geometry).shape[1:]
    check_export(Fn(lambda m, c: F.fold(c, (7, 9), **geometry)), one(*columns, seed=1))


EINSUMS = {"bij,jk->bik": ((4, 5), (5, 3)), "bhwc,hkc->bhwk": ((3, 4, 6), (3, 2, 6)),
           "b...i,ij->b...j": ((3, 4, 5), (5, 2)), "bAi,iB->bBA": ((4, 5), (5, 3)), "bii,ij->bj": ((5, 5), (5, 2))}


@pytest.mark.parametrize("equation, shapes", list(EINSUMS.items()))
def test_einsum(equation, shapes):
    """Einsum with upper-case letters renamed, ellipses resolved and a diagonal; the batch size follows the input."""
    weight = nn.Parameter(engine.from_numpy(images(1, *shapes[1])))
    check_export(Fn(lambda m, x: engine.einsum(equation, x, m.holder.weight), holder=Fn(None, weight=weight)),
                 one(*shapes[0]))


LAYERS = {
    "conv2d": nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.Conv2d(8, 8, (3, 1), groups=4, dilation=2,
                                                                                padding=(2, 0), bias=False)),
    "conv1d": nn.Conv1d(3, 4, 3, stride=2, padding=2, dilation=2),
    "conv_transpose": nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1, groups=1),
    "conv_transpose1d": nn.ConvTranspose1d(3, 4, 4, stride=2, padding=1),
    "batchnorm_unfolded": nn.Sequential(nn.ReLU(), nn.BatchNorm2d(3)),
    "batchnorm1d": nn.Sequential(nn.Flatten(), nn.BatchNorm1d(3 * 9 * 11)),
    "layer_norm": nn.LayerNorm([9, 11]),
    "layer_norm_no_affine": nn.LayerNorm(11, elementwise_affine=False),
    "group_norm": nn.GroupNorm(1, 3),
    "local_response_norm": nn.LocalResponseNorm(3, alpha=0.2, beta=0.75, k=1.5),
    "max_pool": nn.MaxPool2d(3, stride=2, padding=1),
    "max_pool_ceil": nn.MaxPool2d(2, ceil_mode=True),
    "avg_pool": nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
    "avg_pool_ceil": nn.AvgPool2d(2, ceil_mode=True),
    "adaptive_avg_global": nn.AdaptiveAvgPool2d(1),
    "adaptive_avg_uneven": nn.AdaptiveAvgPool2d((4, 3)),
    "adaptive_avg_divisible": nn.AdaptiveAvgPool2d((3, None)),
    "adaptive_max": nn.AdaptiveMaxPool2d(1),
    "upsample_nearest": nn.Upsample(scale_factor=2, mode="nearest"),
    "upsample_bilinear": nn.Upsample(size=(13, 8), mode="bilinear"),
    "upsample_align": nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True),
    "upsample_bicubic": nn.Upsample(size=(20, 15), mode="bicubic"),
    "nearest_exact": Fn(lambda m, x: F.interpolate(x, size=(5, 17), mode="nearest-exact")),
    "linear": nn.Sequential(nn.Flatten(), nn.Linear(297, 10)),
    "linear_3d": nn.Linear(11, 4),
    "linear_no_bias": nn.Linear(11, 4, bias=False),
    "normalize": Fn(lambda m, x: F.normalize(x, dim=1) + F.normalize(x, p=1, dim=2)),
}


@pytest.mark.parametrize("name", list(LAYERS))
def test_layers(name):
    layer = LAYERS[name]
    layer.eval()
    engine.manual_seed(0)
    for module in layer.modules():
        if isinstance(module, (nn.BatchNorm1d, nn.BatchNorm2d)):
            module.running_mean.copy_(engine.randn(module.num_features) * 0.1)
            module.running_var.copy_(engine.rand(module.num_features) + 0.5)
    shape = {"conv1d": (3, 13), "conv_transpose1d": (3, 13)}.get(name, (3, 9, 11))
    check_export(layer, one(*shape), what=name, rtol=1e-4)


def test_matmul_and_attention():
    attention = nn.MultiheadAttention(8, 2, batch_first=True)
    model = Fn(lambda m, x: (m.attention(x, x, x)[0], x @ x.transpose(1, 2), engine.bmm(x, x.mT),
                             F.scaled_dot_product_attention(x, x, x)), attention=attention.eval())
    check_export(model, one(5, 8), rtol=1e-4)


REDUCTIONS = {
    "sum_mean": lambda m, x: (x.sum(1), x.mean((1, 2), keepdim=True), x.sum(), x.prod(2)),
    "amax_amin": lambda m, x: (x.amax(2), x.amin((1, 2)), x.max(1).values, x.min(2, keepdim=True)[0]),
    "var_std": lambda m, x: (x.var(1), x.std(2, correction=0, keepdim=True)),
    "norms": lambda m, x: (x.norm(dim=1), engine.linalg.vector_norm(x, 1, dim=2), x.abs().max(), x.logsumexp(1)),
    "arg": lambda m, x: (x.argmax(1), x.argmin(2, keepdim=True), x.max(2).indices),
    "topk_sort": lambda m, x: (*x.topk(3, dim=2), *x.sort(1, descending=True), *x.sort(2)),
    "cumsum": lambda m, x: x.cumsum(2),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(name):
    check_export(Fn(REDUCTIONS[name]), one(5, 7), what=name, rtol=1e-5)


def test_embedding_of_integer_input():
    model = nn.Embedding(10, 4)
    check_export(model, lambda batch: (np.random.default_rng(batch).integers(0, 10, (batch, 6)),))


# ---- values whose number follows the data: indexing by traced tensors, nonzero, NMS, RoIAlign, top-k ----------
def check_data_dependent(model, make_inputs, seeds=(0, 1, 2), rtol=1e-6, **kwargs):
    """Export ``model`` on ``make_inputs(seeds[0])`` (arrays whose axis 0 is dynamic) and compare ONNX Runtime with
    our eager outputs on the inputs of every seed; returns the sizes of the first output (they should differ)."""
    arrays = make_inputs(seeds[0])
    names = [f"in{k}" for k in range(len(arrays))]
    data = export_bytes(model, tuple(engine.from_numpy(a) for a in arrays), input_names=names,
                        dynamic_axes={name: [0] for name in names}, **kwargs)
    sizes = []
    for seed in seeds:
        arrays = make_inputs(seed)
        ours = eager_outputs(model, arrays)
        got = run_onnx(data, dict(zip(names, arrays)))
        for k, (o, r) in enumerate(zip(got, ours)):
            assert o.shape == r.shape and o.dtype == r.dtype, f"output {k}: {o.dtype}{o.shape} vs {r.dtype}{r.shape}"
            np.testing.assert_allclose(o, r, rtol=rtol, atol=rtol, err_msg=f"output {k} at seed {seed}")
        sizes.append(ours[0].shape)
    return sizes


def _ragged(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((int(rng.integers(5, 12)), 6)).astype(np.float32),)


DATA_DEPENDENT = {
    "mask": lambda m, x: x[x > 0.3],
    "row_mask": lambda m, x: x[x[:, 0] > 0] * 2,
    "mask_then_slice": lambda m, x: x[:, 1:4][x[:, 2] < 0.5, ::2],
    "argsort_index": lambda m, x: x[x[:, 1].argsort(descending=True)][:, 2:],
    "two_indices": lambda m, x: x[x[:, 0].argsort(), (x[:, 1].abs() * 3).long().clamp(max=5)],
    "broadcast_indices": lambda m, x: x[engine.arange(x.shape[0])[:, None], x.topk(2, dim=1).indices],
    "constant_and_tensor": lambda m, x: x[[0, 2, 1], x[:3, 0].argsort()],
    "nonzero": lambda m, x: ((x > 0).nonzero(), engine.where(x > 0.5)[1], (x[:, 0] > 0).nonzero(as_tuple=True)[0]),
    "topk_min": lambda m, x: (lambda y: y.topk(min(4, y.shape[0])).values)(x[x[:, 0] > 0][:, 1]),
}


@pytest.mark.parametrize("name", list(DATA_DEPENDENT))
def test_indexing_by_traced_tensors(name):
    sizes = check_data_dependent(Fn(DATA_DEPENDENT[name]), _ragged)
    assert len(set(sizes)) > 1 or name == "constant_and_tensor", f"{name}: the sizes did not change ({sizes})"


def test_graph_replays_data_dependent_indices():
    """nn.Graph traces through the same recorded op: a replay computes the indices of its own input."""
    class Positive(nn.Graph):
        def build(self, x):
            return x[x > 0] * 2

    graph = Positive()
    for seed in (0, 1, 2):
        x = images(seed, 4, 5)
        np.testing.assert_array_equal(graph(engine.from_numpy(x)).numpy(), x[x > 0] * 2)


def test_counts_equal_in_both_traces_stay_dynamic():
    """Nothing above 10 in the traced input, nor in the probe: the count is 0 twice, yet the file follows each
    input's count, through nonzero, a boolean mask, a reshape, zeros_like and NMS."""
    def fn(m, x):
        big = x[x > 10]
        rows = (x > 10).nonzero()
        boxes = engine.stack([x[:, 0], x[:, 0], x[:, 0] + 1, x[:, 0] + 1], 1)[x[:, 0] > 10]
        kept = box_ops.nms(boxes, boxes[:, 0], 0.5)
        return big.reshape(-1, 1) + engine.zeros_like(big).reshape(-1, 1), rows, kept

    from flowvision.ops import boxes as box_ops
    x = images(0, 6, 5)
    data = export_bytes(Fn(fn), (engine.from_numpy(x),), input_names=["x"])
    for scale in (1.0, 20.0, 40.0):
        y = x * scale
        for got, expected in zip(run_onnx(data, {"x": y}), eager_outputs(Fn(fn), [y])):
            np.testing.assert_array_equal(got, expected)
        assert len(expected) == int((y[:, 0] > 10).sum()), "NMS keeps each disjoint box"


def _boxes(seed, n=None, categories=3):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 60)) if n is None else n
    corner = rng.uniform(0, 80, (n, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(4, 40, (n, 2))], 1).astype(np.float32)
    return boxes, rng.permutation(n).astype(np.float32) / n, rng.integers(0, categories, n)


@pytest.mark.parametrize("n", [None, 1200])
def test_nms_and_batched_nms(n):
    from flowvision.ops import batched_nms, nms
    model = Fn(lambda m, b, s, c: (nms(b, s, 0.4), batched_nms(b, s, c, 0.5)))
    sizes = check_data_dependent(model, lambda seed: _boxes(seed, n if n is None else n + seed))
    assert len(set(sizes)) > 1
    assert "NonMaxSuppression" in node_types(export_bytes(model, tuple(engine.from_numpy(a) for a in _boxes(0))))


@pytest.mark.parametrize("sampling_ratio, aligned", [(2, False), (0, False), (-1, True)])
def test_roi_align(sampling_ratio, aligned):
    from flowvision.ops import roi_align

    def rois(seed):
        boxes, _, index = _boxes(seed, categories=2)
        return images(seed, 2, 3, 25, 29), np.concatenate([index[:, None].astype(np.float32), boxes - 10], 1)

    model = Fn(lambda m, x, r: roi_align(x, r, (5, 4), 0.3, sampling_ratio, aligned))
    check_data_dependent(model, rois, rtol=1e-5, opset_version=16)
    with pytest.raises(engine.onnx.UnsupportedOperatorError, match="RoIAlign needs ONNX opset 16"):
        export_bytes(model, tuple(engine.from_numpy(a) for a in rois(0)), opset_version=15)


def test_arange_of_a_size_that_follows_the_input_becomes_a_range():
    model = Fn(lambda m, x: x[:, 0] * engine.arange(x.shape[0]) + x[engine.arange(x.shape[0]), x[:, 1].argmax(0)])
    data = check_export(model, one(4))
    assert "Range" in node_types(data)


def _capped_rows(m, x):
    """Up to 3 rows with a positive first column, then per row the column its second value picks."""
    positive = x[x[:, 0] > 0]
    rows = positive[positive[:, 0].topk(min(3, positive.shape[0])).indices]
    return rows[engine.arange(rows.shape[0]), (rows[:, 1] > 0).long()]


def test_an_arange_index_follows_the_indexed_axis():
    """``x[arange(n), labels]`` with n the same in both traces (detections at their cap) follows the rows the
    file's input gives (fewer here)."""
    x = np.abs(images(0, 12, 3))
    data = export_bytes(Fn(_capped_rows), engine.from_numpy(x), input_names=["x"])
    x[2:, 0] = -1
    np.testing.assert_array_equal(run_onnx(data, {"x": x})[0], eager_outputs(Fn(_capped_rows), [x])[0])
    assert eager_outputs(Fn(_capped_rows), [x])[0].shape == (2,)


def test_outputs_computed_from_raw_arrays_are_refused():
    model = Fn(lambda m, x: engine.from_numpy(np.asarray(x.detach()._data) * 2))
    with pytest.raises(engine.onnx.ExportError, match="output 'output' is computed outside the ops a trace records"):
        export_bytes(model, engine.randn(2, 3))


def test_traced_mask_pasting_equals_eager():
    from flowvision.models.detection import _masks
    rng = np.random.default_rng(0)
    masks = engine.from_numpy(rng.random((9, 1, 28, 28), dtype=np.float32))
    corner = rng.uniform(-20, 110, (9, 2))
    boxes = engine.from_numpy(np.concatenate([corner, corner + rng.uniform(-3, 80, (9, 2))], 1).astype(np.float32))
    expected = _masks.paste_masks_in_image(masks, boxes, (101, 93)).numpy()
    model = Fn(lambda m, masks, boxes: _masks.paste_masks_in_image(masks, boxes, (101, 93)))
    data = export_bytes(model, (masks, boxes), input_names=["masks", "boxes"],
                        dynamic_axes={"masks": [0], "boxes": [0]})
    np.testing.assert_array_equal(run_onnx(data, {"masks": masks.numpy(), "boxes": boxes.numpy()})[0], expected)
    assert (expected != 0).sum() > 1000


# ---- dynamic sizes, opsets, folding, entry points ----------------------------------------------------
def _convnet():
    engine.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                          nn.Conv2d(8, 8, 3, stride=2, groups=2), nn.BatchNorm2d(8), nn.Hardswish(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.copy_(engine.randn(8) * 0.2)
            module.running_var.copy_(engine.rand(8) + 0.5)
            module.weight.data.copy_(engine.rand(8) + 0.5)
    return model.eval()


def test_batchnorm_folded_into_convolutions_unless_folding_is_off():
    model = _convnet()
    folded = check_export(model, one(3, 9, 11))
    assert "BatchNormalization" not in node_types(folded)
    assert node_types(folded).count("Conv") == 2
    unfolded = check_export(model, one(3, 9, 11), do_constant_folding=False)
    assert node_types(unfolded).count("BatchNormalization") == 2


def test_constant_subgraphs_are_folded():
    model = Fn(lambda m, x: x + (m.table[[2, 0, 1]].reshape(3, 1, 1) * 2).exp())
    model.table = nn.Parameter(engine.randn(4))
    folded = check_export(model, one(3, 4, 4))
    assert node_types(folded) == ["Add"]
    assert "Gather" in node_types(check_export(model, one(3, 4, 4), do_constant_folding=False))


def test_dynamic_height_and_width():
    model = Fn(lambda m, x: F.interpolate(m.net(x)[:, :, None, None], size=x.shape[-2:], mode="bilinear")
               + x.mean(1, keepdim=True), net=_convnet())
    data = export_bytes(model, engine.from_numpy(images(0, 1, 3, 9, 11)), input_names=["x"],
                        dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}})
    for batch, h, w in ((2, 9, 11), (1, 17, 6), (3, 12, 23)):
        x = images(batch, batch, 3, h, w)
        np.testing.assert_allclose(run_onnx(data, {"x": x})[0], eager_outputs(model, [x])[0], rtol=1e-4, atol=1e-5)
    graph = onnx.load_from_string(data).graph
    dims = [[d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in (graph.input[0], graph.output[0])]
    assert dims == [["batch", 3, "height", "width"], ["batch", 5, "height", "width"]]


def test_dynamic_axes_as_lists_and_named_outputs():
    data = export_bytes(_convnet(), engine.randn(2, 3, 9, 11), input_names=["images"], output_names=["logits"],
                        dynamic_axes={"images": [0], "logits": [0]})
    graph = onnx.load_from_string(data).graph
    assert [graph.input[0].name, graph.output[0].name] == ["images", "logits"]
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "images_dynamic_axes_1"
    assert graph.output[0].type.tensor_type.shape.dim[0].dim_param == "logits_dynamic_axes_1"


def test_static_export_keeps_fixed_sizes():
    data = check_export(_convnet(), one(3, 9, 11), dynamic=False)
    dims = [d.dim_value for d in onnx.load_from_string(data).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2, 3, 9, 11]


@pytest.mark.parametrize("opset", [13, 16, 18, 21])
def test_opsets(opset):
    model = Fn(lambda m, x: (m.norm(m.net(x)[:, None]).amax(-1), x.mean((2, 3)), x.amax(1)),
               net=_convnet(), norm=nn.LayerNorm(5))
    data = check_export(model, one(3, 9, 11), opset_version=opset, rtol=1e-4)
    assert onnx.load_from_string(data).opset_import[0].version == opset


def test_graph_and_file_objects(tmp_path):
    class Inference(nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x).softmax(1)

    model = _convnet()
    x = images(0, 2, 3, 9, 11)
    path = tmp_path / "graph.onnx"
    engine.onnx.export(Inference(model), engine.from_numpy(x), str(path))
    buffer = io.BytesIO()
    engine.onnx.export(Inference(model), engine.from_numpy(x), buffer)
    assert path.read_bytes() == buffer.getvalue()
    expected = eager_outputs(Fn(lambda m, x: m.model(x).softmax(1), model=model), [x])[0]
    np.testing.assert_allclose(run_onnx(buffer.getvalue(), {"input": x})[0], expected, rtol=1e-5, atol=1e-7)


def test_tracing_queries_inside_export_and_graph_build():
    """engine.jit.is_tracing() is True while an export or an nn.Graph build records the forward (model code then
    computes afresh what it caches eagerly), engine.onnx.is_in_onnx_export() only in an export; both False
    eagerly."""
    seen = []

    class Watcher(nn.Module):
        def forward(self, x):
            seen.append((engine.jit.is_tracing(), engine.onnx.is_in_onnx_export()))
            return x * 2

    class Inference(nn.Graph):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    model = Watcher()
    x = engine.randn(2, 3)
    model(x)
    export_bytes(model, x)
    graph = Inference(model)
    graph(x)
    graph(x)
    assert seen[:3] == [(False, False), (True, True), (True, True)]  # eager, then the export's two traces
    assert seen[3:] and set(seen[3:]) == {(True, False)}
    assert engine.jit.is_scripting() is False


def test_model_modes_restored_and_verbose_prints_the_graph(capsys):
    model = _convnet().train()
    export_bytes(model, engine.randn(1, 3, 9, 11), verbose=True)
    assert all(m.training for m in model.modules())
    assert "Conv" in capsys.readouterr().out


def test_nested_inputs_and_outputs():
    model = Fn(lambda m, pair, scale: {"sum": pair[0] + pair[1] * scale, "parts": [pair[0].exp(), pair[1]]})
    x, y = images(0, 2, 4), images(1, 2, 4)
    data = export_bytes(model, ([engine.from_numpy(x), engine.from_numpy(y)], 3.0))
    outs = run_onnx(data, {"input_0": x, "input_1": y})
    for got, ref in zip(outs, eager_outputs(Fn(lambda m, a, b: m.inner([a, b], 3.0), inner=model), [x, y])):
        np.testing.assert_allclose(got, ref, rtol=1e-6)


# ---- errors ---------------------------------------------------------------------------------------
class _Head(nn.Module):
    def forward(self, x):
        return engine.linalg.inv(x[:, :3, :3])


def test_unmapped_op_names_the_op_its_module_and_the_opset():
    model = nn.Sequential(nn.Identity(), nn.Sequential(_Head()))
    with pytest.raises(engine.onnx.UnsupportedOperatorError) as info:
        export_bytes(model, engine.randn(2, 4, 4), opset_version=15)
    message = str(info.value)
    assert "\n" not in message
    assert "'Inverse'" in message and "module '1.0' (_Head)" in message and "opset 15" in message


def test_ops_the_outputs_do_not_need_are_not_written():
    model = Fn(lambda m, x: (engine.linalg.inv(x[:, :3, :3]), x.exp())[1], head=_Head())
    assert node_types(check_export(model, one(4, 4))) == ["Exp"]


def test_missing_onnx_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(engine.onnx.OnnxNotInstalledError, match=r"pip install flowvision\[onnx\]"):
        engine.onnx.export(_convnet(), engine.randn(1, 3, 9, 11), io.BytesIO())


def test_control_flow_on_values_is_refused():
    model = nn.Sequential(Fn(lambda m, x: x * 2 if x.sum() > 0 else x))
    with pytest.raises(engine.onnx.ExportError, match=r"module '0' \(Fn\) reads the value of a traced tensor"):
        export_bytes(model, engine.randn(2, 3))


def test_control_flow_on_dynamic_sizes_is_refused():
    model = Fn(lambda m, x: x * 2 if x.shape[0] < 2 else x.exp())
    with pytest.raises(engine.onnx.ExportError, match="runs different ops for other input values and sizes"):
        export_bytes(model, engine.randn(1, 3), dynamic_axes={"input": [0]})


def test_inplace_write_read_through_another_view_is_refused():
    model = nn.Sequential(Fn(lambda m, x: F.relu(x.view(x.shape[0], -1), inplace=True) * 2 + x.sum()))
    with pytest.raises(engine.onnx.ExportError, match=r"op 'ReLU' called in module '0' \(Fn\) writes in place into "
                                                      r"a tensor whose other view is read afterwards"):
        export_bytes(model, engine.randn(2, 4, 3))


def test_values_computed_outside_the_trace_are_refused():
    model = Fn(lambda m, x: x + engine.from_numpy(np.sort(x.detach()._data, axis=1)))
    with pytest.raises(engine.onnx.ExportError, match="computed outside the traced ops"):
        export_bytes(model, engine.randn(2, 5))


def test_model_failing_on_the_dynamic_size_is_refused():
    model = Fn(lambda m, x: x.reshape(2, 6))
    with pytest.raises(engine.onnx.ExportError, match="the model fails on other input values and sizes"):
        export_bytes(model, engine.randn(2, 6), dynamic_axes={"input": [0]})


@pytest.mark.parametrize("kwargs, message", [
    ({"opset_version": 12}, "opset_version must be an integer from 13 to 21"),
    ({"dynamic_axes": {"nope": [0]}}, "dynamic_axes names 'nope'"),
    ({"dynamic_axes": {"input": [4]}}, "dynamic axis 4 of 'input' is out of range"),
    ({"input_names": ["a", "b"]}, "2 input_names given for 1 input tensors"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        engine.onnx.export(_convnet(), engine.randn(1, 3, 9, 11), io.BytesIO(), **kwargs)


def test_bad_model_and_file():
    with pytest.raises(TypeError, match="model must be an nn.Module or an nn.Graph"):
        engine.onnx.export(lambda x: x, engine.randn(2), io.BytesIO())
    with pytest.raises(TypeError, match="f must be a path or a binary file object"):
        engine.onnx.export(_convnet(), engine.randn(1, 3, 9, 11), 42)
