"""The CUDA backend's kernels against PyTorch on the CPU, forward and every input gradient, through the
public ops on CUDA tensors: on a GPU (marked ``cuda``) and, without one, on the CPU emulation of CuPy."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import check_op


def _rand(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# (N, C, O, H, W, k, stride, padding, dilation, groups)
CONV_CASES = [
    (2, 3, 5, 9, 11, 3, 1, 1, 1, 1),
    (3, 4, 6, 13, 11, 3, 2, 1, 1, 2),
    (2, 4, 4, 13, 11, 3, 1, 1, 1, 4),     # depthwise
    (2, 6, 12, 9, 9, 5, 2, 2, 2, 6),      # depthwise multiplier 2, dilated, strided
    (3, 4, 8, 7, 9, 1, 1, 0, 1, 1),       # 1x1: the input is the column matrix
    (2, 5, 7, 16, 17, 1, 1, 0, 1, 1),     # 1x1 over a plane past BATCHED_1X1_PLANE: each image multiplied in place
    (1, 4, 8, 7, 9, 1, 1, 0, 1, 1),       # 1x1, one image
    (2, 4, 8, 9, 7, 1, 2, 0, 1, 2),       # 1x1 strided, grouped
    (2, 3, 4, 22, 23, 7, 2, 3, 1, 1),     # stem-like
    (1, 3, 4, 8, 9, 4, 3, 0, 2, 1),       # even kernel, stride 3, dilation
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d(cuda, case, dtype):
    N, C, O, H, W, k, s, p, d, g = case
    x, w, b = _rand(N, C, H, W, dtype=dtype), _rand(O, C // g, k, k, seed=1, dtype=dtype), _rand(O, seed=2, dtype=dtype)
    check_op(lambda x, w, b: F.conv2d(x, w, b, s, p, d, g), lambda x, w, b: TF.conv2d(x, w, b, s, p, d, g),
             [x, w, b], rtol=1e-5 if dtype == np.float32 else 1e-10, device="cuda")


@pytest.mark.parametrize("case", [c for c in CONV_CASES if not 1 < c[9] == c[1]])  # depthwise has no columns
def test_conv2d_in_groups_of_images(cuda, case, monkeypatch):
    """Where the batch's column matrix would pass ``COLUMN_BYTES``, forward and backward run image by image
    (here: a limit of one byte): the same values and gradients."""
    from engine.backends.cuda import conv
    monkeypatch.setattr(conv, "COLUMN_BYTES", 1)
    N, C, O, H, W, k, s, p, d, g = case
    x, w, b = _rand(N + 1, C, H, W), _rand(O, C // g, k, k, seed=1), _rand(O, seed=2)
    check_op(lambda x, w, b: F.conv2d(x, w, b, s, p, d, g), lambda x, w, b: TF.conv2d(x, w, b, s, p, d, g),
             [x, w, b], device="cuda")


def test_conv2d_1x1_makes_no_column_matrix_past_batched_1x1_plane(cuda, monkeypatch):
    """A 1x1 stride-1 convolution over planes of ``BATCHED_1X1_PLANE`` pixels or more multiplies each image where it
    lies: the forward and the input gradient transpose nothing into columns; only the weight gradient does (its
    values: CONV_CASES)."""
    from engine.backends.cuda import conv
    transposed = []
    to_cols = conv._to_cols
    monkeypatch.setattr(conv, "_to_cols", lambda a: transposed.append(a.shape) or to_cols(a))
    x = engine.tensor(_rand(2, 3, 16, 16), device="cuda", requires_grad=True)
    w = engine.tensor(_rand(4, 3, 1, 1, seed=1), device="cuda")
    F.conv2d(x, w).sum().backward()
    assert transposed == []
    w.requires_grad_()
    F.conv2d(x, w).sum().backward()
    assert transposed == [(2, 4, 16, 16), (2, 3, 16, 16)]
    monkeypatch.setattr(conv, "BATCHED_1X1_PLANE", 16 * 16 + 1)
    F.conv2d(x, w.detach())
    assert transposed[2:] == [(2, 3, 16, 16)]


def test_conv2d_noncontiguous_and_padding_same(cuda):
    x = np.ascontiguousarray(_rand(2, 3, 9, 8).swapaxes(2, 3)).swapaxes(2, 3)
    check_op(lambda x, w: F.conv2d(x, w, None, 1, "same"), lambda x, w: TF.conv2d(x, w, None, 1, "same"),
             [x, _rand(4, 3, 4, 2, seed=1)], device="cuda")


def test_conv1d(cuda):
    check_op(lambda x, w, b: F.conv1d(x, w, b, 2, 1), lambda x, w, b: TF.conv1d(x, w, b, 2, 1),
             [_rand(2, 3, 17), _rand(5, 3, 3, seed=1), _rand(5, seed=2)], device="cuda")


# (N, C_in, C_out, H, W, k, stride, padding, output_padding, dilation, groups)
CONV_T_CASES = [
    (2, 4, 6, 7, 9, 3, 1, 1, 0, 1, 1),
    (3, 4, 6, 5, 4, 3, 2, 1, 1, 1, 2),
    (1, 3, 2, 6, 5, 4, 2, 1, 0, 1, 1),
    (2, 2, 4, 5, 6, 3, 3, 0, 2, 2, 2),
]


@pytest.mark.parametrize("in_groups_of_images", [False, True])
@pytest.mark.parametrize("case", CONV_T_CASES)
def test_conv_transpose2d(cuda, case, in_groups_of_images, monkeypatch):
    """Also image by image (a ``COLUMN_BYTES`` of one byte), with a batch one larger."""
    from engine.backends.cuda import conv
    N, C, O, H, W, k, s, p, op, d, g = case
    if in_groups_of_images:
        monkeypatch.setattr(conv, "COLUMN_BYTES", 1)
        N += 1
    x, w, b = _rand(N, C, H, W), _rand(C, O // g, k, k, seed=1), _rand(O, seed=2)
    check_op(lambda x, w, b: F.conv_transpose2d(x, w, b, s, p, op, g, d),
             lambda x, w, b: TF.conv_transpose2d(x, w, b, s, p, op, g, d), [x, w, b], device="cuda")


@pytest.mark.parametrize("args", [(3, 2, 1, 1, False), (3, 1, 1, 2, True), (2, 2, 0, 1, False), ((3, 2), (2, 1), (1, 0), 1, True)])
def test_max_pool2d(cuda, args):
    x = _rand(2, 3, 11, 10)
    x[0, 0, :3, :3] = np.nan
    x[1, 1, :4, :4] = -np.inf
    check_op(lambda x: F.max_pool2d(x, *args, return_indices=True),
             lambda x: TF.max_pool2d(x, *args, return_indices=True), [x], device="cuda")
    check_op(lambda x: F.max_pool2d(x, *args), lambda x: TF.max_pool2d(x, *args), [_rand(2, 3, 11, 10, seed=4)],
             device="cuda")


@pytest.mark.parametrize("args", [(3, 2, 1, False, True, None), (3, 2, 1, True, False, None), (2, 1, 0, False, True, 3),
                                  ((3, 2), (2, 1), (1, 0), True, True, None)])
def test_avg_pool2d(cuda, args):
    check_op(lambda x: F.avg_pool2d(x, *args), lambda x: TF.avg_pool2d(x, *args), [_rand(2, 3, 11, 10)],
             device="cuda")


@pytest.mark.parametrize("size", [1, (3, 5), (4, 4), (2, 5)])
def test_adaptive_pools(cuda, size):
    x = _rand(2, 3, 8, 10)
    check_op(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), [x], device="cuda")
    check_op(lambda x: F.adaptive_max_pool2d(x, size, True), lambda x: TF.adaptive_max_pool2d(x, size, True), [x],
             device="cuda")


@pytest.mark.parametrize("mode, align", [("nearest", None), ("nearest-exact", None), ("bilinear", False),
                                         ("bilinear", True), ("bicubic", False), ("bicubic", True), ("area", None)])
@pytest.mark.parametrize("size", [(7, 13), (3, 4)])
def test_interpolate(cuda, mode, align, size):
    check_op(lambda x: F.interpolate(x, size=size, mode=mode, align_corners=align),
             lambda x: TF.interpolate(x, size=size, mode=mode, align_corners=align), [_rand(2, 3, 5, 6)],
             device="cuda")


def test_interpolate_1d_and_scale_factor(cuda):
    check_op(lambda x: F.interpolate(x, scale_factor=2.5, mode="linear"),
             lambda x: TF.interpolate(x, scale_factor=2.5, mode="linear"), [_rand(2, 3, 7)], device="cuda")
    check_op(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"),
             lambda x: TF.interpolate(x, scale_factor=2, mode="nearest"), [_rand(2, 3, 5, 4)], device="cuda")


def _rois(k, images, seed=0, lo=-30.0, hi=130.0, size=90.0):
    """k random (image, x1, y1, x2, y2) rows; some boxes poke out of or lie beyond the map."""
    rng = np.random.default_rng(seed)
    xy = rng.uniform(lo, hi, (k, 2))
    wh = rng.uniform(0.0, size, (k, 2))
    edge = np.array([[0, 10, 10, 10.2, 10.3], [1, 5, 5, 5, 5], [0, 40, 30, 20, 10], [1, -400, -300, 900, 700],
                     [0, 200, 200, 260, 240], [1, -50, -60, -10, -20]])
    return np.concatenate([np.concatenate([rng.integers(0, images, (k, 1)), xy, xy + wh], 1), edge]).astype(np.float32)


@pytest.mark.parametrize("aligned, sampling_ratio", [(False, -1), (True, 2), (True, -1)])
def test_roi_align(cuda, aligned, sampling_ratio):
    import torchvision
    from flowvision import ops
    check_op(lambda a, r: ops.roi_align(a, r.detach(), (7, 5), 0.25, sampling_ratio, aligned),
             lambda a, r: torchvision.ops.roi_align(a, r.detach(), (7, 5), 0.25, sampling_ratio, aligned),
             [_rand(2, 3, 21, 26), _rois(30, 2)], rtol=2e-6, grad_rtol=2e-6, device="cuda")


def test_roi_pool(cuda):
    import torchvision
    from flowvision import ops
    check_op(lambda a, r: ops.roi_pool(a, r.detach(), (4, 3), 0.5),
             lambda a, r: torchvision.ops.roi_pool(a, r.detach(), (4, 3), 0.5),
             [_rand(2, 3, 17, 23), _rois(20, 2, seed=1)], rtol=0, grad_rtol=1e-6, device="cuda")


@pytest.mark.parametrize("n, threshold", [(0, 0.5), (1, 0.5), (70, 0.5), (300, 0.3), (130, 0.7)])
def test_nms_and_batched_nms(cuda, n, threshold):
    import torchvision
    from flowvision import ops
    rng = np.random.default_rng(n)
    xy = rng.uniform(0, 100, (n, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(1, 40, (n, 2))], 1).astype(np.float32)
    scores = rng.uniform(0, 1, n).astype(np.float32)
    scores[: n // 4] = 0.5  # ties keep index order
    labels = rng.integers(0, 3, n)
    b, s = engine.from_numpy(boxes).cuda(), engine.from_numpy(scores).cuda()
    keep = ops.nms(b, s, threshold)
    assert keep.device.type == "cuda" and keep.dtype == engine.int64
    ref = torchvision.ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), threshold)
    np.testing.assert_array_equal(keep.cpu().numpy(), ref.numpy())
    many = (np.tile(boxes, (9, 1)) + np.repeat(np.arange(9), n)[:, None]).astype(np.float32)  # > 4000 coordinates
    distinct = rng.permutation(9 * n).astype(np.float32) / (9 * n)  # torch sorts the classes' survivors unstably
    for bx, sc, lb in [(boxes, scores, labels), (many, distinct, np.tile(labels, 9))]:
        keep = ops.batched_nms(engine.from_numpy(bx).cuda(), engine.from_numpy(sc).cuda(),
                               engine.from_numpy(lb).cuda(), threshold)
        ref = torchvision.ops.batched_nms(torch.from_numpy(bx), torch.from_numpy(sc), torch.from_numpy(lb), threshold)
        np.testing.assert_array_equal(keep.cpu().numpy(), ref.numpy())


_X = _rand(2, 3, 5, 6)
_LABELS = np.array([1, 0, 2, 1, 2, 0], np.int64)
# (name, ours, theirs, inputs): ops written against the array module, run on CUDA tensors
ARRAY_OPS = [
    ("add_mul_div", lambda a, b: (a + b) * a / (b.abs() + 1), lambda a, b: (a + b) * a / (b.abs() + 1),
     [_X, _rand(3, 1, 6, seed=1)]),
    ("pow_exp_log", lambda a: (a.abs() + 1).log() + a.exp() * a ** 2, lambda a: (a.abs() + 1).log() + a.exp() * a ** 2,
     [_X]),
    ("reductions", lambda a: (a.sum(1), a.mean((2, 3)), a.amax(-1), a.var(0), a.std(1, keepdim=True)),
     lambda a: (a.sum(1), a.mean((2, 3)), a.amax(-1), a.var(0), a.std(1, keepdim=True)), [_X]),
    ("max_argmax_topk_sort", lambda a: (a.max(1)[0], a.argmax(2), a.topk(3, -1)[0], a.sort(-1)[0], a.cumsum(1)),
     lambda a: (a.max(1)[0], a.argmax(2), a.topk(3, -1)[0], a.sort(-1)[0], a.cumsum(1)), [_X]),
    ("matmul_linear", lambda a, w, b: F.linear(a @ w, w, b), lambda a, w, b: TF.linear(a @ w, w, b),
     [_rand(4, 7), _rand(7, 5, seed=1), _rand(7, seed=2)]),
    ("bmm_einsum", lambda a, b: engine.einsum("bij,bjk->bik", a, b) + a.bmm(b),
     lambda a, b: torch.einsum("bij,bjk->bik", a, b) + a.bmm(b), [_rand(3, 4, 5), _rand(3, 5, 2, seed=1)]),
    ("activations", lambda a: (F.relu(a), F.relu6(a * 4), F.hardswish(a * 3), F.hardsigmoid(a * 3), F.silu(a),
                               F.gelu(a), F.sigmoid(a), F.tanh(a), F.leaky_relu(a, 0.1), F.elu(a), F.softplus(a)),
     lambda a: (TF.relu(a), TF.relu6(a * 4), TF.hardswish(a * 3), TF.hardsigmoid(a * 3), TF.silu(a), TF.gelu(a),
                torch.sigmoid(a), torch.tanh(a), TF.leaky_relu(a, 0.1), TF.elu(a), TF.softplus(a)), [_X]),
    ("softmax", lambda a: (F.softmax(a, 1), F.log_softmax(a, -1)), lambda a: (TF.softmax(a, 1), TF.log_softmax(a, -1)),
     [_X]),
    ("cross_entropy", lambda a: F.cross_entropy(a, engine.from_numpy(_LABELS).cuda(), label_smoothing=0.1),
     lambda a: TF.cross_entropy(a, torch.from_numpy(_LABELS), label_smoothing=0.1), [_rand(6, 3)]),
    ("losses", lambda a, b: (F.mse_loss(a, b), F.smooth_l1_loss(a, b), F.l1_loss(a, b),
                             F.binary_cross_entropy_with_logits(a, b.sigmoid())),
     lambda a, b: (TF.mse_loss(a, b), TF.smooth_l1_loss(a, b), TF.l1_loss(a, b),
                   TF.binary_cross_entropy_with_logits(a, b.sigmoid())), [_rand(4, 5), _rand(4, 5, seed=1)]),
    ("batch_norm_train", lambda a, w, b: F.batch_norm(a, None, None, w, b, True),
     lambda a, w, b: TF.batch_norm(a, None, None, w, b, True), [_X, _rand(3, seed=1), _rand(3, seed=2)]),
    ("batch_norm_eval", lambda a, w, b: F.batch_norm(a, engine.zeros(3).cuda() + 0.1, engine.ones(3).cuda() * 2, w, b),
     lambda a, w, b: TF.batch_norm(a, torch.zeros(3) + 0.1, torch.ones(3) * 2, w, b),
     [_X, _rand(3, seed=1), _rand(3, seed=2)]),
    ("layer_group_norm", lambda a, w, b: (F.layer_norm(a, (5, 6)), F.group_norm(a, 3, w, b)),
     lambda a, w, b: (TF.layer_norm(a, (5, 6)), TF.group_norm(a, 3, w, b)), [_X, _rand(3, seed=1), _rand(3, seed=2)]),
    ("shape_ops", lambda a: (engine.cat([a, a * 2], 1), engine.stack([a, a], 0)[:, 1:, ::2], a.permute(0, 2, 3, 1)
                             .reshape(-1, 3), a.flip(3), a.roll(2, 3), a.transpose(1, 2).contiguous()),
     lambda a: (torch.cat([a, a * 2], 1), torch.stack([a, a], 0)[:, 1:, ::2], a.permute(0, 2, 3, 1).reshape(-1, 3),
                a.flip(3), a.roll(2, 3), a.transpose(1, 2).contiguous()), [_X]),
    ("indexing", lambda a: (a[:, [2, 0]], a[a > 0.5], a.gather(1, engine.zeros(2, 1, 5, 6, dtype=engine.int64).cuda()),
                            a.index_select(3, engine.tensor([4, 1]).cuda()), a.masked_fill(a < 0, 0.0),
                            engine.where(a > 0, a, a * 3)),
     lambda a: (a[:, [2, 0]], a[a > 0.5], a.gather(1, torch.zeros(2, 1, 5, 6, dtype=torch.int64)),
                a.index_select(3, torch.tensor([4, 1])), a.masked_fill(a < 0, 0.0), torch.where(a > 0, a, a * 3)),
     [_X]),
    ("padding_shuffle", lambda a: (F.pad(a, (1, 2, 0, 1)), F.pad(a, (2, 1, 1, 2), mode="reflect"),
                                   F.pad(a, (1, 1, 2, 0), mode="replicate"), F.pixel_shuffle(a[:, :, :4, :4].repeat(1, 4, 1, 1), 2)),
     lambda a: (TF.pad(a, (1, 2, 0, 1)), TF.pad(a, (2, 1, 1, 2), mode="reflect"), TF.pad(a, (1, 1, 2, 0), mode="replicate"),
                TF.pixel_shuffle(a[:, :, :4, :4].repeat(1, 4, 1, 1), 2)), [_X]),
    ("embedding_clamp", lambda w: (F.embedding(engine.tensor([[1, 3], [0, 3]]).cuda(), w), w.clamp(-0.5, 0.5)),
     lambda w: (TF.embedding(torch.tensor([[1, 3], [0, 3]]), w), w.clamp(-0.5, 0.5)), [_rand(5, 4)]),
]


@pytest.mark.parametrize("name, ours, theirs, inputs", ARRAY_OPS, ids=[case[0] for case in ARRAY_OPS])
def test_array_ops(cuda, name, ours, theirs, inputs):
    check_op(ours, theirs, inputs, rtol=1e-5, device="cuda")


def test_mixed_devices(cuda):
    """Tensors on two devices in one op: torch's error; a 0-d CPU tensor joins a GPU op."""
    a, b = engine.ones(3).cuda(), engine.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least "
                                           "two devices, cuda:0 and cpu!"):
        a + b
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(engine.ones(1, 1, 3, 3).cuda(), engine.ones(1, 1, 1, 1))
    out = a * engine.tensor(2.0)
    assert out.device.type == "cuda" and out.cpu().tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("activation", [None, "relu", "hardswish", "hardsigmoid", "silu", "gelu", ("clip", 0.0, 6.0)])
@pytest.mark.parametrize("groups", [1, 6, "1 in groups of images", "1x1 in place"])
def test_fused_epilogue(cuda, activation, groups, monkeypatch):
    """A graph's fused convolution on the GPU: (conv + b) * scale + shift + residual, then the activation,
    in the output pass (dense layers, also image by image) or after the depthwise kernel or the 1x1 GEMM in
    place."""
    import sys

    from engine import backends
    from engine.backends import Epilogue
    from engine.backends.cuda import conv
    k = 3
    if groups == "1 in groups of images":
        monkeypatch.setattr(conv, "COLUMN_BYTES", 1)
    if groups == "1x1 in place":
        monkeypatch.setattr(conv, "BATCHED_1X1_PLANE", 1)
        k = 1
    groups = groups if isinstance(groups, int) else 1

    cp = sys.modules["cupy"]
    x, w, b = _rand(2, 6, 9, 11), _rand(12, 6 // groups, k, k, seed=1), _rand(12, seed=2)
    scale, shift, residual = _rand(12, seed=3), _rand(12, seed=4), _rand(2, 12, 9, 11, seed=5)
    epilogue = Epilogue(cp.asarray(scale), cp.asarray(shift), cp.asarray(residual), activation)
    y, _ = backends.kernels(cp.asarray(x), "conv").conv2d_forward(
        cp.asarray(x), cp.asarray(w), cp.asarray(b), (1, 1), (k // 2,) * 4, (1, 1), groups, weight_grad=False,
        epilogue=epilogue)
    ref = TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), 1, k // 2, 1, groups)
    ref = ref * torch.from_numpy(scale)[:, None, None] + torch.from_numpy(shift)[:, None, None] + torch.from_numpy(residual)
    ref = {None: lambda t: t, "relu": TF.relu, "hardswish": TF.hardswish, "hardsigmoid": TF.hardsigmoid,
           "silu": TF.silu, "gelu": TF.gelu}.get(
        activation, lambda t: t.clamp(0.0, 6.0))(ref)
    from op_check import assert_close
    assert_close(cp.asnumpy(y), ref.numpy(), 1e-5)
