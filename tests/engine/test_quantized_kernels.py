"""engine/backends/cpu/quantized.py against PyTorch's quantized CPU ops, integer for integer, under both engines.

Seeded odd-size cases; scripts/quantized_kernel_check.py runs many more random ones.
"""
import warnings
import zlib

import numpy as np
import pytest

from engine.backends.cpu import quantized as Q

torch = pytest.importorskip("torch")
F = torch.nn.functional
ENGINES = ["fbgemm", "qnnpack"]


@pytest.fixture(autouse=True)
def _torch_state():
    """Quiet torch's quantized-dtype deprecation warning; put the engine and thread count back afterwards."""
    engine, threads = torch.backends.quantized.engine, torch.get_num_threads()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*quantiz.*deprecated")
        yield
    torch.backends.quantized.engine = engine
    torch.set_num_threads(threads)


def _rng(*key):
    """Generator seeded from the test case, stable across runs."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _act(rng, shape, top=255):
    """quint8 integers in [0, top] with a scale in [1e-3, 0.2] and a zero point in [0, top]."""
    return rng.integers(0, top + 1, shape).astype(np.uint8), float(np.exp(rng.uniform(-6.9, -1.6))), \
        int(rng.integers(0, top + 1))


def _tq(q, scale, zp, channels_last=False):
    """torch's quint8 tensor with these integers (channels-last memory when asked)."""
    t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(np.ascontiguousarray(q)), float(scale), int(zp))
    return t.contiguous(memory_format=torch.channels_last) if channels_last else t


def _same(ours, ref):
    """Equal integers (a torch result's int_repr), or equal float32 bits."""
    ref = ref.int_repr().numpy() if isinstance(ref, torch.Tensor) else ref
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    if ref.dtype == np.float32:
        ours, ref = ours.view(np.int32), ref.view(np.int32)
    np.testing.assert_array_equal(ours, ref)


def _out_qparams(real):
    """An output scale and zero point covering the float results ``real``."""
    lo, hi = min(float(real.min()), 0.0), max(float(real.max()), 0.0)
    scale = max(hi - lo, 1e-3) / 240
    return scale, int(np.clip(np.rint(-lo / scale), 0, 255))


def _weight(rng, shape, engine, per_channel):
    """int8 weights, scales and zero points with torch's qint8 tensor (per channel: zero points 0)."""
    wq = rng.integers(-128, 128, shape).astype(np.int8)
    if per_channel:
        scales, zps = np.exp(rng.uniform(-9, -4, shape[0])), np.zeros(shape[0], np.int64)
        w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(scales),
                                                     torch.from_numpy(zps), 0)
        return wq, scales, zps, w
    scale, zp = 3e-3, (-7 if engine == "qnnpack" else 0)
    w = torch._make_per_tensor_quantized_tensor(torch.from_numpy(wq), scale, zp)
    return wq, np.array([scale]), np.array([zp]), w


def test_quantize_dequantize():
    rng = _rng("quantize")
    x = (rng.standard_normal(301) * 5).astype(np.float32)
    dtypes = ((np.uint8, torch.quint8, 131), (np.int8, torch.qint8, -5), (np.int32, torch.qint32, 17))
    for np_dtype, t_dtype, zp in dtypes:
        scale = 0.0371
        x[:100] = ((rng.integers(-120, 120, 100) + 0.5) * np.float32(scale)).astype(np.float32)  # exact halves
        ref = torch.quantize_per_tensor(torch.from_numpy(x), scale, zp, t_dtype)
        _same(Q.quantize(x, scale, zp, np_dtype), ref)
        _same(Q.dequantize(ref.int_repr().numpy(), scale, zp), ref.dequantize().numpy())
    xc, scales, zps = x[:300].reshape(3, 4, 25), np.array([0.011, 0.2, 0.0031, 0.07]), np.array([0, -3, 9, 120])
    ref = torch.quantize_per_channel(torch.from_numpy(xc), torch.from_numpy(scales), torch.from_numpy(zps), 1,
                                     torch.qint8)
    _same(Q.quantize_per_channel(xc, scales, zps, 1, np.int8), ref)
    _same(Q.dequantize_per_channel(ref.int_repr().numpy(), scales, zps, 1), ref.dequantize().numpy())


# (C, O, kernel, stride, padding, dilation, groups)
CONV_KINDS = [(5, 7, 3, 2, 1, 1, 1), (12, 6, 1, 1, 0, 1, 1), (64, 64, 3, 1, 1, 1, 32), (8, 8, 3, 1, 1, 1, 8),
              (8, 8, 5, 2, 2, 1, 8), (6, 9, 3, 1, 2, 2, 3), (3, 4, 7, 2, 3, 1, 1)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", CONV_KINDS)
def test_conv2d(engine, kind):
    C, O, k, s, p, d, g = kind
    rng = _rng("conv", engine, kind)
    top = 127 if engine == "fbgemm" else 255  # fbgemm's reduce-range activations
    for per_channel, bias, relu in ((engine == "fbgemm", True, False), (engine == "qnnpack", bool(g % 2), True)):
        xq, xs, xz = _act(rng, (2, C, 11, 13), top)
        wq, ws, wz, w = _weight(rng, (O, C // g, k, k), engine, per_channel)
        b = rng.standard_normal(O).astype(np.float32) if bias else None
        x = _tq(xq, xs, xz)
        tb = None if b is None else torch.from_numpy(b)
        so, zo = _out_qparams(F.conv2d(x.dequantize(), w.dequantize(), tb, s, p, d, g))
        torch.backends.quantized.engine = engine
        packed = torch.ops.quantized.conv2d_prepack(w, tb, [s, s], [p, p], [d, d], g)
        ref = (torch.ops.quantized.conv2d_relu if relu else torch.ops.quantized.conv2d)(x, packed, so, zo)
        _same(Q.conv2d(xq, xs, xz, wq, ws, wz, b, s, p, d, g, so, zo, relu, engine), ref)


@pytest.mark.parametrize("engine", ENGINES)
def test_conv2d_accumulators_past_float32(engine):
    """Accumulators near 4e7 (beyond 2**24, where float32 rounds the integer)."""
    rng = _rng("big conv", engine)
    top = 127 if engine == "fbgemm" else 255
    xq = rng.integers(top - 20, top + 1, (1, 256, 5, 6)).astype(np.uint8)
    wq, ws, wz, w = _weight(rng, (4, 256, 3, 3), engine, True)
    wq[:] = rng.integers(90, 128, wq.shape)
    w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(ws), torch.from_numpy(wz), 0)
    b = rng.standard_normal(4).astype(np.float32)
    x = _tq(xq, 0.02, 3)
    so, zo = _out_qparams(F.conv2d(x.dequantize(), w.dequantize(), torch.from_numpy(b), 1, 1))
    torch.backends.quantized.engine = engine
    packed = torch.ops.quantized.conv2d_prepack(w, torch.from_numpy(b), [1, 1], [1, 1], [1, 1], 1)
    _same(Q.conv2d(xq, 0.02, 3, wq, ws, wz, b, 1, 1, 1, 1, so, zo, False, engine),
          torch.ops.quantized.conv2d(x, packed, so, zo))


@pytest.mark.parametrize("channels", [57, 58])
def test_conv2d_sums_in_float32_only_below_its_exact_range(channels):
    """Every product at its largest (255 * 127, sums of 57 or 58 channels x 9 taps): 57 stays below 2**24 and is
    summed in float32, 58 passes it and is summed in float64; both give torch's integers."""
    xq = np.full((2, channels, 5, 6), 255, np.uint8)
    wq = np.full((3, channels, 3, 3), 127, np.int8)
    ws, wz = np.full(3, 1e-3), np.zeros(3, np.int64)
    bound = 255 * 127 * channels * 9
    assert Q.conv2d_weight_bound(wq, wz) == 127 * channels * 9
    assert Q._exact_sum_dtype(xq, 0, Q.conv2d_weight_bound(wq, wz), Q.EXACT_FLOAT32) == (
        np.float32 if channels == 57 else np.float64) and (bound < 2 ** 24) == (channels == 57)
    x = _tq(xq, 0.01, 0)
    w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(ws), torch.from_numpy(wz), 0)
    torch.backends.quantized.engine = "fbgemm"
    packed = torch.ops.quantized.conv2d_prepack(w, None, [1, 1], [0, 0], [1, 1], 1)
    so = 0.01 * 1e-3 * bound / 200  # the largest sum near 200 output steps: every unit of it shows
    _same(Q.conv2d(xq, 0.01, 0, wq, ws, wz, None, 1, 0, 1, 1, so, 0, False, "fbgemm"),
          torch.ops.quantized.conv2d(x, packed, so, 0))


def test_conv2d_sums_stay_exact_on_the_engines_winograd_path():
    """A 3x3 layer large enough for engine's float Winograd convolution (F(2, 3): only halves, so integer sums
    stay exact in float64) gives torch's integers too."""
    from engine.backends.cpu import conv

    rng = _rng("winograd")
    shape, weight_shape = (8, 256, 14, 14), (256, 256, 3, 3)
    assert conv._winograd_forward_pays(shape, weight_shape, (1, 1), (1, 1, 1, 1), (1, 1), 1)
    xq, xs, xz = _act(rng, shape, 127)
    wq, ws, wz, w = _weight(rng, weight_shape, "fbgemm", True)
    x = _tq(xq, xs, xz)
    so, zo = _out_qparams(F.conv2d(x.dequantize(), w.dequantize(), None, 1, 1))
    torch.backends.quantized.engine = "fbgemm"
    packed = torch.ops.quantized.conv2d_prepack(w, None, [1, 1], [1, 1], [1, 1], 1)
    _same(Q.conv2d(xq, xs, xz, wq, ws, wz, None, 1, 1, 1, 1, so, zo, False, "fbgemm"),
          torch.ops.quantized.conv2d(x, packed, so, zo))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", [(16, 12, 1, 1, 1, 0), (8, 8, 3, 8, 1, 1), (16, 16, 5, 16, 2, 2),
                                  (64, 64, 3, 16, 1, 1), (12, 8, 3, 1, 2, 1), None])
@pytest.mark.parametrize("per_channel", [True, False])
def test_output_stage_ties(engine, kind, per_channel):
    """Layers whose exact outputs land on halves, so every rounding of the output stage shows: small centred
    integers, one weight scale, ``out_scale = x_scale * w_scale * 4`` and biases near multiples of
    ``x_scale * w_scale`` (kind: (C, O, kernel, groups, stride, padding) of a conv, None for a linear)."""
    rng = _rng("ties", engine, kind, per_channel)
    C, O, k, g, s, p = kind or (16, 12, 1, 1, 1, 0)
    xq = rng.integers(97, 104, (300, C) if kind is None else (2, C, 9, 11)).astype(np.uint8)
    wq, ws, wz, _ = _weight(rng, (O, C // g) + (() if kind is None else (k, k)), engine, per_channel)
    wq[:] = rng.integers(-3, 4, wq.shape)
    ws[:] = ws[0]
    m = np.float32(0.0173) * np.float32(ws[0])
    so = float(m * np.float32(4))
    b = (np.float64(m) * (rng.integers(-40, 40, O) + rng.choice([0.0, 0.5], O))).astype(np.float32)
    w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(ws), torch.from_numpy(wz),
                                                 0) if per_channel else \
        torch._make_per_tensor_quantized_tensor(torch.from_numpy(wq), float(ws[0]), int(wz[0]))
    torch.backends.quantized.engine = engine
    x = _tq(xq, 0.0173, 100)
    if kind is None:
        ref = torch.ops.quantized.linear(x, torch.ops.quantized.linear_prepack(w, torch.from_numpy(b)), so, 128)
        _same(Q.linear(xq, 0.0173, 100, wq, ws, wz, b, so, 128, False, engine), ref)
    else:
        packed = torch.ops.quantized.conv2d_prepack(w, torch.from_numpy(b), [s, s], [p, p], [1, 1], g)
        ref = torch.ops.quantized.conv2d(x, packed, so, 128)
        _same(Q.conv2d(xq, 0.0173, 100, wq, ws, wz, b, s, p, 1, g, so, 128, False, engine), ref)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("per_channel", [True, False])
def test_linear(engine, per_channel):
    rng = _rng("linear", engine, per_channel)
    xq, xs, xz = _act(rng, (300, 37), 127 if engine == "fbgemm" else 255)
    wq, ws, wz, w = _weight(rng, (23, 37), engine, per_channel)
    b = rng.standard_normal(23).astype(np.float32)
    x = _tq(xq, xs, xz)
    so, zo = _out_qparams(F.linear(x.dequantize(), w.dequantize(), torch.from_numpy(b)))
    torch.backends.quantized.engine = engine
    packed = torch.ops.quantized.linear_prepack(w, torch.from_numpy(b))
    for relu in (False, True):
        ref = (torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear)(x, packed, so, zo)
        _same(Q.linear(xq, xs, xz, wq, ws, wz, b, so, zo, relu, engine), ref)


def _aten_tie_params(rng, result):
    """Quantization parameters and integers for which ATen's vectorised and scalar loops round differently:
    ``result(x, inverse)`` maps a float32 dequantized x to the rounded output for one of the two loops."""
    q = np.arange(256)
    while True:
        s, so, z, zo = float(np.exp(rng.uniform(-6.9, -1.6))), float(np.exp(rng.uniform(-6.9, -1.6))), \
            int(rng.integers(0, 255)), int(rng.integers(0, 255))
        vec = ((q * np.float64(np.float32(s))) + np.float64(np.float32(s) * np.float32(-z))).astype(np.float32)
        sub = (q - z).astype(np.float32) * np.float32(s)
        outs = [np.clip(result(x, r, so) + zo, 0, 255) for x, r in ((vec, np.float32(1.0 / so)),
                                                                     (sub, np.float32(1) / np.float32(so)))]
        ties = np.nonzero(outs[0] != outs[1])[0]
        if len(ties):
            return s, z, so, zo, ties


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("channels_last, threads", [(False, 1), (True, 3)])
def test_add_mul(engine, channels_last, threads):
    torch.set_num_threads(threads)
    torch.backends.quantized.engine = engine
    rng = _rng("add", engine, channels_last)
    shape = (2, 19, 33, 31)  # past ATen's 32768-element grain, so the threads split it
    (a, sa, za), (b, sb, zb) = _act(rng, shape), _act(rng, shape)
    ta, tb = _tq(a, sa, za, channels_last), _tq(b, sb, zb, channels_last)
    for relu in (False, True):
        so, zo = sa + sb, 100
        ref = (torch.ops.quantized.add_relu if relu else torch.ops.quantized.add)(ta, tb, so, zo)
        _same(Q.add(a, sa, za, b, sb, zb, so, zo, relu, engine, channels_last, threads), ref)
        ref = (torch.ops.quantized.mul_relu if relu else torch.ops.quantized.mul)(ta, tb, 50 * sa * sb, 20)
        _same(Q.mul(a, sa, za, b, sb, zb, 50 * sa * sb, 20, relu), ref)
    # integers whose sum rounds differently in ATen's vectorised loop and its scalar tail
    add_quarter = lambda x, r, so: np.rint((x + np.float32(0.25)) * (np.float32(1) / np.float32(so)))  # noqa: E731
    s, z, so, zo, ties = _aten_tie_params(rng, add_quarter)
    a = rng.choice(ties, shape).astype(np.uint8)
    b = np.full(shape, 50, np.uint8)  # dequantizes to 0.25 exactly either way
    ref = torch.ops.quantized.add(_tq(a, s, z, channels_last), _tq(b, 0.125, 48, channels_last), so, zo)
    _same(Q.add(a, s, z, b, 0.125, 48, so, zo, False, engine, channels_last, threads), ref)


@pytest.mark.parametrize("c", [1.3, -2.1, 40.0, -40.0, 0.0])
def test_add_mul_scalar(c):
    q, s, z = _act(_rng("scalar", c), (2, 3, 5, 7))
    for op in ("add", "mul"):
        for relu in (False, True):
            out, scale, zp = getattr(Q, op + "_scalar")(q, s, z, c, relu)
            ref = getattr(torch.ops.quantized, op + "_scalar" + ("_relu" if relu else ""))(_tq(q, s, z), c)
            assert (scale, zp) == (ref.q_scale(), ref.q_zero_point())
            _same(out, ref)


@pytest.mark.parametrize("channels_last", [False, True])
def test_cat(channels_last):
    rng = _rng("cat", channels_last)
    for dim, sizes in ((1, (3, 21, 12)), (2, (4, 1, 6)), (1, (1, 9))):  # one channel: channels last either way
        items = [_act(rng, (2, 5, n, 7) if dim == 2 else (2, n, 5, 7)) for n in sizes]
        items[1] = (items[1][0], 0.05, 77)  # already in the output's quantization: copied
        ref = torch.ops.quantized.cat([_tq(*it, channels_last) for it in items], dim, 0.05, 77)
        _same(Q.cat(items, dim, 0.05, 77, channels_last), ref)
    s, z, so, zo, ties = _aten_tie_params(rng, lambda x, r, so: np.rint(x * r))
    q = rng.choice(ties, (2, 29, 3, 4)).astype(np.uint8)  # 29 channels: runs of 8 up to 24, then 5 scalar
    ref = torch.ops.quantized.cat([_tq(q, s, z, channels_last)] * 2, 1, so, zo)
    _same(Q.cat([(q, s, z)] * 2, 1, so, zo, channels_last), ref)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("channels_last", [False, True])
def test_pools(engine, channels_last):
    torch.backends.quantized.engine = engine
    rng = _rng("pool", engine, channels_last)
    q, s, z = _act(rng, (2, 5, 11, 13))
    x = _tq(q, s, z, channels_last)
    for k, st, p, d, ceil in ((3, 2, 1, 1, False), (2, 1, 1, 2, False), (3, 2, 1, 2, True), (2, 2, 0, 1, True)):
        _same(Q.max_pool2d(q, (k, k), (st, st), (p, p), (d, d), ceil, engine), F.max_pool2d(x, k, st, p, d, ceil))
    for k, st, p, ceil, cip, div in ((3, 2, 1, False, True, None), (3, 1, 1, False, False, None),
                                     (2, 2, 1, True, False, None), (3, 2, 1, True, True, 5), (2, 1, 0, False, True, 3)):
        ref = F.avg_pool2d(x, k, st, p, ceil, cip, div)
        _same(Q.avg_pool2d(q, s, z, (k, k), (st, st), (p, p), ceil, cip, div, engine, channels_last), ref)
    # global, uneven bins, bins dividing the input (qnnpack's own pooling), one channel (channels-last either way)
    for shape, size in (((2, 5, 7, 7), (1, 1)), ((2, 5, 10, 13), (3, 4)), ((1, 6, 12, 9), (4, 3)),
                        ((1, 1, 6, 5), (4, 2))):
        q, s, z = _act(rng, shape)
        ref = F.adaptive_avg_pool2d(_tq(q, s, z, channels_last), size)
        _same(Q.adaptive_avg_pool2d(q, s, z, size, engine, channels_last), ref)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("channels_last, threads", [(False, 1), (True, 2)])
def test_activations(engine, channels_last, threads):
    torch.set_num_threads(threads)
    torch.backends.quantized.engine = engine
    rng = _rng("activations", engine, channels_last)
    q, s, z = _act(rng, (2, 17, 31, 35))
    x = _tq(q, s, z, channels_last)
    _same(Q.relu(q, z), torch.relu(x))
    _same(Q.hardswish(q, s, z, 0.02, 30, engine, channels_last, threads), torch.ops.quantized.hardswish(x, 0.02, 30))
    _same(Q.hardsigmoid(q, s, z, engine, channels_last, threads), F.hardsigmoid(x))
    hswish = lambda x, r, so: np.rint(x * np.clip(x + np.float32(3), 0, 6) / np.float32(6) * r)  # noqa: E731
    s, z, so, zo, ties = _aten_tie_params(rng, hswish)
    q = rng.choice(ties, (2, 17, 31, 35)).astype(np.uint8)
    ref = torch.ops.quantized.hardswish(_tq(q, s, z, channels_last), so, zo)
    _same(Q.hardswish(q, s, z, so, zo, engine, channels_last, threads), ref)
