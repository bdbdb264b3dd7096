"""Bit-exactness check of engine/backends/cpu/quantized.py against PyTorch's quantized CPU ops (dev script).

    python scripts/quantized_kernel_check.py              # 30 random cases per op and engine
    python scripts/quantized_kernel_check.py --seeds 200  # more

For each op and each quantized engine (fbgemm, qnnpack) it draws random odd shapes and quantization parameters
(activation zero points anywhere in their range, scales 1e-3..0.2, reduce-range activations 0..127 as fbgemm's
default observer gives them and full-range 0..255 ones for qnnpack, fbgemm per-channel weights with zero points
0, qnnpack per-tensor weights with nonzero ones), runs the kernel and torch, compares the integers
(``int_repr``) and prints per op and engine the mismatching elements and the largest difference in quantization
steps. Rows tagged [nchw]/[nhwc] feed torch a contiguous or a channels-last tensor (elsewhere the layout and
torch's thread count vary per case); ``[bigacc]`` rows have accumulators beyond 2**24; ``[many rows]`` is a
3000-row linear; ``[ties]`` rows build inputs whose results sit on rounding ties (outputs on halves, or integers
that ATen's vectorised and scalar loops round apart), where a wrong rounding step shows at once;
``[full-range]`` rows give fbgemm 0..255 activations, which its depthwise kernel (``[full-range dw]``) sums with
int16 saturation. Exit status 1 when any element differs.
"""
import argparse
import os
import sys
import warnings
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine.backends import kernels  # noqa: E402

Q = kernels(np.empty(0), "quantized")

warnings.filterwarnings("ignore", message=".*quantiz.*deprecated")
ENGINES = ("fbgemm", "qnnpack")


# ---- random inputs -----------------------------------------------------------------------------------------------

def _scale(rng, lo=1e-3, hi=0.2):
    """A log-uniform scale in [lo, hi]."""
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _act(rng, shape, top=255):
    """Random quint8 integers in [0, top], a scale and a zero point in [0, top]."""
    return rng.integers(0, top + 1, shape).astype(np.uint8), _scale(rng), int(rng.integers(0, top + 1))


def _tq(q, scale, zp, channels_last=False):
    """torch's quint8 tensor with these integers (channels-last memory when asked)."""
    t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(np.ascontiguousarray(q)), float(scale), int(zp))
    return t.contiguous(memory_format=torch.channels_last) if channels_last else t


def _out_qparams(rng, real):
    """An output scale and zero point that cover most of the float results ``real`` (some clipping kept)."""
    lo, hi = min(float(real.min()), 0.0), max(float(real.max()), 0.0)
    scale = max(hi - lo, 1e-3) / 255 * rng.uniform(0.6, 1.2)
    return scale, int(np.clip(np.rint(-lo / scale), 0, 255))


def _weight(rng, shape, engine, per_channel):
    """int8 weights with torch's qint8 tensor: fbgemm zero points 0, qnnpack per-tensor ones anywhere small."""
    wq = rng.integers(-128, 128, shape).astype(np.int8)
    if per_channel:
        scales = np.exp(rng.uniform(np.log(1e-4), np.log(2e-2), shape[0]))
        zps = np.zeros(shape[0], np.int64)
        w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(scales),
                                                     torch.from_numpy(zps), 0)
        return wq, scales, zps, w
    scale, zp = _scale(rng, 1e-4, 2e-2), int(rng.integers(-10, 11)) if engine == "qnnpack" else 0
    w = torch._make_per_tensor_quantized_tensor(torch.from_numpy(wq), scale, zp)
    return wq, np.array([scale]), np.array([zp]), w


def _bias(rng, n):
    """A float32 bias of n entries of random magnitude, or None one time in five."""
    return None if rng.random() < 0.2 else (rng.standard_normal(n) * rng.uniform(0.01, 3)).astype(np.float32)


# ---- cases: each returns a list of (kernel result, torch result) pairs ---------------------------------------------

# (C, O, kernel, stride, padding, dilation, groups): the layers fbgemm runs through its depthwise kernel, the rest
DEPTHWISE_KINDS = ((16, 16, 3, 1, 1, 1, 16), (24, 24, 3, 2, 1, 1, 24), (16, 16, 5, 1, 2, 1, 16),
                   (16, 16, 5, 2, 2, 1, 16), (8, 16, 3, 1, 1, 1, 8))
OTHER_KINDS = ((16, 24, 3, 1, 1, 1, 1), (16, 32, 3, 2, 1, 1, 1), (24, 40, 1, 1, 0, 1, 1), (3, 16, 7, 2, 3, 1, 1),
               (64, 64, 3, 1, 1, 1, 32), (64, 64, 3, 2, 1, 1, 32), (8, 12, 3, 1, 2, 2, 1), (8, 16, 3, 1, 1, 1, 2),
               (96, 24, 1, 1, 0, 1, 1), (32, 32, 3, 1, 2, 2, 32), (12, 12, 3, 1, 1, 1, 12), (16, 16, 3, 1, 0, 1, 16))
CONV_KINDS = DEPTHWISE_KINDS + OTHER_KINDS


def _conv_case(rng, engine, top, kinds=CONV_KINDS, big=False):
    C, O, k, s, p, d, g = kinds[rng.integers(len(kinds))]
    N, H, W = 2, int(rng.integers(k, 14)), int(rng.integers(k, 14))
    xq, xs, xz = _act(rng, (N, C, H, W), top)
    per_channel = engine == "fbgemm" or rng.random() < 0.3
    if per_channel and engine == "fbgemm" and rng.random() < 0.15:
        per_channel = False
    wq, ws, wz, w = _weight(rng, (O, C // g, k, k), engine, per_channel)
    if big:  # skewed so that accumulators pass 2**24
        xq[:] = rng.integers(top - 30, top + 1, xq.shape)
        xz = int(rng.integers(0, 8))
        wq[:] = rng.integers(64, 128, wq.shape)
        w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(ws),
                                                     torch.from_numpy(wz), 0) if per_channel else \
            torch._make_per_tensor_quantized_tensor(torch.from_numpy(wq), float(ws[0]), int(wz[0]))
    bias, relu = _bias(rng, O), bool(rng.random() < 0.4)
    x = _tq(xq, xs, xz)
    real = torch.nn.functional.conv2d(x.dequantize(), w.dequantize(), None if bias is None else torch.from_numpy(bias),
                                      s, p, d, g)
    os_, oz = _out_qparams(rng, real)
    torch.backends.quantized.engine = engine
    packed = torch.ops.quantized.conv2d_prepack(w, None if bias is None else torch.from_numpy(bias), [s, s], [p, p],
                                                [d, d], g)
    ref = (torch.ops.quantized.conv2d_relu if relu else torch.ops.quantized.conv2d)(x, packed, os_, oz)
    ours = Q.conv2d(xq, xs, xz, wq, ws, wz, bias, s, p, d, g, os_, oz, relu, engine)
    return [(ours, ref.int_repr().numpy())]


def _linear_case(rng, engine, top, big=False, rows=None):
    M, K, O = rows or int(rng.integers(1, 40)), int(rng.integers(8, 300)), int(rng.integers(4, 50))
    if big:
        K = 4096
    xq, xs, xz = _act(rng, (M, K), top)
    per_channel = engine == "fbgemm" and rng.random() < 0.8 or engine == "qnnpack" and rng.random() < 0.3
    wq, ws, wz, w = _weight(rng, (O, K), engine, per_channel)
    if big:
        xq[:] = rng.integers(top - 30, top + 1, xq.shape)
        xz = 0
        wq[:] = rng.integers(64, 128, wq.shape)
    bias, relu = _bias(rng, O), bool(rng.random() < 0.3)
    real = (xq.astype(np.float64) - xz) * xs @ ((wq.astype(np.float64) - wz[:, None]) * ws[:, None]).T
    os_, oz = _out_qparams(rng, real + (0 if bias is None else bias))
    torch.backends.quantized.engine = engine
    w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(ws), torch.from_numpy(wz),
                                                 0) if per_channel else \
        torch._make_per_tensor_quantized_tensor(torch.from_numpy(wq), float(ws[0]), int(wz[0]))
    packed = torch.ops.quantized.linear_prepack(w, None if bias is None else torch.from_numpy(bias))
    ref = (torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear)(_tq(xq, xs, xz), packed, os_, oz)
    return [(Q.linear(xq, xs, xz, wq, ws, wz, bias, os_, oz, relu, engine), ref.int_repr().numpy())]


TIE_KINDS = (  # (C, O, kernel, groups, stride, padding)
    (8, 8, 3, 8, 1, 1), (16, 16, 5, 16, 2, 2), (8, 16, 3, 8, 1, 1), (16, 16, 3, 16, 1, 0), (6, 10, 3, 2, 1, 1),
    (64, 64, 3, 16, 1, 1), (16, 12, 1, 1, 1, 0), (12, 8, 3, 1, 2, 1))


def _requant_tie_case(rng, engine, op):
    """Layers whose exact outputs land on halves, so that every rounding of the output stage shows: small
    centred activations and weights, one weight scale, ``out_scale = x_scale * w_scale * 2**j`` in float32 and
    biases at (half) multiples of ``x_scale * w_scale``."""
    C, O, k, g, s, p = (16, 12, 1, 1, 1, 0) if op == "linear" else TIE_KINDS[rng.integers(len(TIE_KINDS))]
    xz = int(rng.integers(3, 250))
    shape = (500, C) if op == "linear" else (2, C, 9, 11)
    xq, xs = rng.integers(xz - 3, xz + 4, shape).astype(np.uint8), _scale(rng)
    per_channel = rng.random() < 0.5
    wq, ws, wz, _ = _weight(rng, (O, C // g) + ((k, k) if op == "conv2d" else ()), engine, per_channel)
    wq[:] = rng.integers(-3, 4, wq.shape)
    ws[:] = ws[0]
    m = np.float32(xs) * np.float32(ws[0])
    so, zo = float(m * np.float32(2.0 ** int(rng.integers(1, 4)))), 128
    half = rng.choice([0.0, 0.5])  # whole multiples rounded to float32 sit a hair off: the bias arithmetic shows
    bias = None if rng.random() < 0.2 else (np.float64(m) * (rng.integers(-40, 40, O) + half)).astype(np.float32)
    tb = None if bias is None else torch.from_numpy(bias)
    w = torch._make_per_channel_quantized_tensor(torch.from_numpy(wq), torch.from_numpy(ws), torch.from_numpy(wz),
                                                 0) if per_channel else \
        torch._make_per_tensor_quantized_tensor(torch.from_numpy(wq), float(ws[0]), int(wz[0]))
    torch.backends.quantized.engine = engine
    if op == "linear":
        ref = torch.ops.quantized.linear(_tq(xq, xs, xz), torch.ops.quantized.linear_prepack(w, tb), so, zo)
        return [(Q.linear(xq, xs, xz, wq, ws, wz, bias, so, zo, False, engine), ref.int_repr().numpy())]
    packed = torch.ops.quantized.conv2d_prepack(w, tb, [s, s], [p, p], [1, 1], g)
    ref = torch.ops.quantized.conv2d(_tq(xq, xs, xz), packed, so, zo)
    return [(Q.conv2d(xq, xs, xz, wq, ws, wz, bias, s, p, 1, g, so, zo, False, engine), ref.int_repr().numpy())]


def _shape(rng):
    """A small odd NCHW shape, or one in five times a large one (beyond the 32768 elements of ATen's grain)."""
    if rng.random() < 0.2:
        return tuple(int(v) for v in (rng.integers(1, 3), rng.integers(16, 70), rng.integers(20, 40),
                                      rng.integers(20, 40)))
    return (int(rng.integers(1, 3)), int(rng.integers(1, 20)), int(rng.integers(1, 12)), int(rng.integers(1, 14)))


def _threads(rng):
    """A torch intra-op thread count for this case (set in torch, passed to the kernel)."""
    threads = int(rng.integers(1, 5))
    torch.set_num_threads(threads)
    return threads


def _binary_case(rng, engine, op):
    shape = _shape(rng)
    (a, sa, za), (b, sb, zb) = _act(rng, shape), _act(rng, shape)
    relu, cl, threads = bool(rng.random() < 0.5), bool(rng.random() < 0.5), _threads(rng)
    if op == "add":
        so, zo = (sa + sb) * rng.uniform(0.5, 2), int(rng.integers(0, 255))
        ours = Q.add(a, sa, za, b, sb, zb, so, zo, relu, engine, cl, threads)
    else:
        so, zo = sa * sb * 255 * rng.uniform(0.3, 2), int(rng.integers(0, 255))
        ours = Q.mul(a, sa, za, b, sb, zb, so, zo, relu)
    fn = getattr(torch.ops.quantized, op + ("_relu" if relu else ""))
    return [(ours, fn(_tq(a, sa, za, cl), _tq(b, sb, zb, cl), so, zo).int_repr().numpy())]


def _scalar_case(rng, engine, op):
    q, s, z = _act(rng, _shape(rng))
    c = float(rng.choice([rng.uniform(-3, 3), rng.uniform(-60, 60) * s, 0.0]) if op == "mul" else
              rng.choice([rng.uniform(-300, 300) * s, rng.uniform(-3, 3)]))
    relu = bool(rng.random() < 0.5)
    out, scale, zp = getattr(Q, op + "_scalar")(q, s, z, c, relu)
    ref = getattr(torch.ops.quantized, op + "_scalar" + ("_relu" if relu else ""))(_tq(q, s, z), c)
    same_qparams = scale == ref.q_scale() and zp == ref.q_zero_point()
    return [(out if same_qparams else out.astype(np.int64) + 1000, ref.int_repr().numpy())]


def _cat_case(rng, engine, channels_last):
    N, C, H, W = _shape(rng)
    dim = 1 if rng.random() < 0.7 else int(rng.choice([0, 2, 3]))
    wide = 70 if dim == 1 and rng.random() < 0.5 else 6  # channel counts past the runs of 8 of the fast path
    items = []
    so, zo = _scale(rng), int(rng.integers(0, 256))
    for _ in range(int(rng.integers(2, 4))):
        shape = [N, C, H, W]
        shape[dim] = int(rng.integers(1, wide))
        q, s, z = _act(rng, tuple(shape))
        items.append((q, *((so, zo) if rng.random() < 0.4 else (s, z))))
    ref = torch.ops.quantized.cat([_tq(q, s, z, channels_last) for q, s, z in items], dim, so, zo)
    return [(Q.cat(items, dim, so, zo, channels_last), ref.int_repr().numpy())]


def _pool_geometry(rng):
    k = int(rng.integers(2, 4))
    return k, int(rng.integers(1, 3)), int(rng.integers(0, k // 2 + 1)), bool(rng.random() < 0.4)


def _max_pool_case(rng, engine):
    q, s, z = _act(rng, (2, int(rng.integers(1, 20)), int(rng.integers(5, 14)), int(rng.integers(5, 14))))
    k, st, p, ceil = _pool_geometry(rng)
    d = int(rng.integers(1, 3))
    ref = torch.nn.functional.max_pool2d(_tq(q, s, z, bool(rng.random() < 0.5)), k, st, p, d, ceil)
    return [(Q.max_pool2d(q, (k, k), (st, st), (p, p), (d, d), ceil, engine), ref.int_repr().numpy())]


def _avg_pool_case(rng, engine, channels_last):
    q, s, z = _act(rng, (2, int(rng.integers(2, 20)), int(rng.integers(3, 14)), int(rng.integers(3, 14))))
    k, st, p, ceil = _pool_geometry(rng)
    cip, div = bool(rng.random() < 0.5), (int(rng.integers(1, 12)) if rng.random() < 0.3 else None)
    ref = torch.nn.functional.avg_pool2d(_tq(q, s, z, channels_last), k, st, p, ceil, cip, div)
    ours = Q.avg_pool2d(q, s, z, (k, k), (st, st), (p, p), ceil, cip, div, engine, channels_last)
    return [(ours, ref.int_repr().numpy())]


def _adaptive_case(rng, engine, channels_last):
    H, W = int(rng.integers(1, 15)), int(rng.integers(1, 15))
    size = rng.choice([(1, 1), (int(rng.integers(1, H + 1)), int(rng.integers(1, W + 1))),
                       (H // max(1, H // 3), W // max(1, W // 2)), (7, 7)])
    H, W = (7, 7) if tuple(size) == (7, 7) else (H, W)
    size = (1, 1) if tuple(size) == (7, 7) else (int(size[0]), int(size[1]))
    if rng.random() < 0.2:
        H, W, size = 10, 13, (3, 4)
    q, s, z = _act(rng, (int(rng.integers(1, 3)), int(rng.integers(2, 20)), H, W))
    ref = torch.nn.functional.adaptive_avg_pool2d(_tq(q, s, z, channels_last), size)
    return [(Q.adaptive_avg_pool2d(q, s, z, size, engine, channels_last), ref.int_repr().numpy())]


def _unary_case(rng, engine, op):
    q, s, z = _act(rng, _shape(rng))
    cl, threads = bool(rng.random() < 0.5), _threads(rng)
    x = _tq(q, s, z, cl)
    if op == "relu":
        return [(Q.relu(q, z), torch.relu(x).int_repr().numpy())]
    if op == "hardsigmoid":
        ref = torch.nn.functional.hardsigmoid(x).int_repr().numpy()
        return [(Q.hardsigmoid(q, s, z, engine, cl, threads), ref)]
    so, zo = _scale(rng, 1e-3, 0.1), int(rng.integers(0, 255))
    ref = torch.ops.quantized.hardswish(x, so, zo).int_repr().numpy()
    return [(Q.hardswish(q, s, z, so, zo, engine, cl, threads), ref)]


def _dequant_forms(q, scale, zp):
    """ATen's two float32 dequantizations: the vectorised ``fma(q, s, -zp * s)`` and the scalar ``(q - zp) * s``."""
    s = np.float32(scale)
    vec = (q.astype(np.float64) * np.float64(s) + np.float64(s * np.float32(-zp))).astype(np.float32)
    return vec, (q.astype(np.int64) - zp).astype(np.float32) * s


def _tie_case(rng, engine, op):
    """Inputs made of integers whose result differs between ATen's vectorised and scalar loops, in a random
    layout, size and thread count, so that which elements take which loop is checked."""
    allq, inv = np.arange(256, dtype=np.uint8), lambda v: np.float32(1) / np.float32(v)
    while True:
        (s, s2, so), (z, z2, zo) = [_scale(rng) for _ in range(3)], [int(v) for v in rng.integers(0, 255, 3)]
        outs = []
        for x, r in zip(_dequant_forms(allq, s, z), (np.float32(1.0 / so), inv(so))):
            if op == "add":
                outs.append(np.rint((x + _dequant_forms(np.uint8(7), s2, z2)[len(outs)]) * inv(so)))
            elif op == "hardswish":
                outs.append(np.rint(x * np.clip(x + np.float32(3), 0, 6) / np.float32(6) * r))
            elif op == "hardsigmoid":
                outs.append(np.rint(np.clip(x + np.float32(3), 0, 6) / np.float32(6) * np.float32(256)))
            else:
                outs.append(np.rint(x * r))
        ties = np.nonzero(np.clip(outs[0] + zo, 0, 255) != np.clip(outs[1] + zo, 0, 255))[0]
        if len(ties):
            break
    shape, cl, threads = _shape(rng), bool(rng.random() < 0.5), _threads(rng)
    if op == "cat":
        shape = (shape[0], int(rng.integers(1, 40)), shape[2], shape[3])
    q = rng.choice(ties, shape).astype(np.uint8)
    x = _tq(q, s, z, cl)
    if op == "add":
        b = np.full(shape, 7, np.uint8)
        ref = torch.ops.quantized.add(x, _tq(b, s2, z2, cl), so, zo)
        ours = Q.add(q, s, z, b, s2, z2, so, zo, False, engine, cl, threads)
    elif op == "hardswish":
        ref, ours = torch.ops.quantized.hardswish(x, so, zo), Q.hardswish(q, s, z, so, zo, engine, cl, threads)
    elif op == "hardsigmoid":
        ref, ours = torch.nn.functional.hardsigmoid(x), Q.hardsigmoid(q, s, z, engine, cl, threads)
    else:
        ref, ours = torch.ops.quantized.cat([x, x], 1, so, zo), Q.cat([(q, s, z), (q, s, z)], 1, so, zo, cl)
    return [(ours, ref.int_repr().numpy())]


def _quantize_case(rng, engine):
    """quantize / dequantize per tensor and per channel, with exact halfway values among the inputs."""
    pairs = []
    x = (rng.standard_normal(997) * rng.uniform(0.01, 30)).astype(np.float32)
    for np_dtype, t_dtype, zlo, zhi in ((np.uint8, torch.quint8, 0, 255), (np.int8, torch.qint8, -128, 127),
                                        (np.int32, torch.qint32, -1000, 1000)):
        s, z = _scale(rng, 1e-4, 0.2), int(rng.integers(zlo, zhi + 1))
        x[:200] = ((rng.integers(-300, 300, 200) + 0.5) * np.float32(s)).astype(np.float32)
        ref = torch.quantize_per_tensor(torch.from_numpy(x), s, z, t_dtype)
        ours = Q.quantize(x, s, z, np_dtype)
        pairs += [(ours, ref.int_repr().numpy()),
                  (Q.dequantize(ours, s, z).view(np.int32), ref.dequantize().numpy().view(np.int32))]
    xc = x[:996].reshape(3, 4, 83)
    scales, zps = np.exp(rng.uniform(np.log(1e-4), np.log(0.2), 4)), rng.integers(-128, 128, 4)
    xc[:, :, :40] = ((rng.integers(-100, 100, (3, 4, 40)) + 0.5) * scales[:, None].astype(np.float32))
    ref = torch.quantize_per_channel(torch.from_numpy(xc), torch.from_numpy(scales), torch.from_numpy(zps), 1,
                                     torch.qint8)
    ours = Q.quantize_per_channel(xc, scales, zps, 1, np.int8)
    return pairs + [(ours, ref.int_repr().numpy()),
                    (Q.dequantize_per_channel(ours, scales, zps, 1).view(np.int32),
                     ref.dequantize().numpy().view(np.int32))]


def cases():
    """{row name: case(rng, engine)}; the name's [tag] says the variant."""
    table = {"quantize/dequantize": _quantize_case,
             "conv2d": lambda r, e: _conv_case(r, e, 127 if e == "fbgemm" else 255),
             "conv2d[bigacc]": lambda r, e: _conv_case(r, e, 127 if e == "fbgemm" else 255,
                                                       ((256, 8, 3, 1, 1, 1, 1),), big=True),
             "conv2d[full-range]": lambda r, e: _conv_case(r, e, 255, OTHER_KINDS),
             "conv2d[full-range dw]": lambda r, e: _conv_case(r, e, 255, DEPTHWISE_KINDS),
             "linear": lambda r, e: _linear_case(r, e, 127 if e == "fbgemm" else 255),
             "linear[bigacc]": lambda r, e: _linear_case(r, e, 127 if e == "fbgemm" else 255, big=True),
             "linear[full-range]": lambda r, e: _linear_case(r, e, 255),
             "linear[many rows]": lambda r, e: _linear_case(r, e, 127 if e == "fbgemm" else 255, rows=3000),
             "conv2d[ties]": lambda r, e: _requant_tie_case(r, e, "conv2d"),
             "linear[ties]": lambda r, e: _requant_tie_case(r, e, "linear")}
    for op in ("add", "mul"):
        table[op] = lambda r, e, op=op: _binary_case(r, e, op)
        table[op + "_scalar"] = lambda r, e, op=op: _scalar_case(r, e, op)
    for tag, cl in (("nchw", False), ("nhwc", True)):
        table[f"cat[{tag}]"] = lambda r, e, cl=cl: _cat_case(r, e, cl)
        table[f"avg_pool2d[{tag}]"] = lambda r, e, cl=cl: _avg_pool_case(r, e, cl)
        table[f"adaptive_avg_pool2d[{tag}]"] = lambda r, e, cl=cl: _adaptive_case(r, e, cl)
    for op in ("add", "hardswish", "hardsigmoid", "cat"):
        table[op + "[ties]"] = lambda r, e, op=op: _tie_case(r, e, op)
    table["max_pool2d"] = _max_pool_case
    for op in ("relu", "hardswish", "hardsigmoid"):
        table[op] = lambda r, e, op=op: _unary_case(r, e, op)
    return table


def compare(pairs):
    """(elements, mismatching elements, max |difference|) over (ours, torch's) pairs."""
    n = bad = worst = 0
    for ours, ref in pairs:
        n += ref.size
        if ours.shape != ref.shape:
            bad, worst = bad + ref.size, max(worst, 999)
            continue
        diff = np.abs(ours.astype(np.int64) - ref.astype(np.int64))
        bad, worst = bad + int((diff != 0).sum()), max(worst, int(diff.max(initial=0)))
    return n, bad, worst


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30, help="random cases per op and engine")
    parser.add_argument("--only", default="", help="run the rows whose name contains this")
    args = parser.parse_args()
    torch.set_num_threads(2)
    print(f"{'op':28} {'engine':8} {'cases':>6} {'elements':>10} {'mismatch':>9} {'max|diff|':>9}")
    total = 0
    for name, case in cases().items():
        if args.only not in name:
            continue
        for engine in ENGINES:
            n = bad = worst = 0
            for seed in range(args.seeds):
                torch.backends.quantized.engine = engine
                torch.set_num_threads(2)
                rng = np.random.default_rng([seed, zlib.crc32(name.encode()), ENGINES.index(engine)])
                e, b, w = compare(case(rng, engine))
                n, bad, worst = n + e, bad + b, max(worst, w)
            total += bad
            print(f"{name:28} {engine:8} {args.seeds:6} {n:10} {bad:9} {worst:9}")
    print(f"mismatching elements: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
