"""Quantized inference kernels on numpy, equal bit for bit to PyTorch's CPU results.

Activations are quint8 (uint8 integers with a per-tensor scale and zero point), weights qint8 (int8, per
tensor or per output channel). PyTorch's quantized CPU ops come from two engines whose rounding differs, so
the ops that differ take ``engine_name``: "fbgemm" (torchvision's ResNet, ResNeXt, GoogLeNet, Inception v3 and
ShuffleNet v2 weights) or "qnnpack" (the MobileNets). Each docstring states the arithmetic; every step named
float32 is one IEEE float32 operation (numpy float32 arithmetic, round half to even), which is what makes the
results exact. Integer sums are exact: convolutions and matrix products run in float64, exact below 2**53 (the
engine's Winograd path for large 3x3 layers, F(2, 3), only halves, so its sums stay exact integers too).

Pooling, ``cat`` and fbgemm's elementwise ops also depend on the memory layout torch would see
(``channels_last``): quantized convolutions return channels-last tensors, so inside a quantized model every
activation after the first convolution is channels last, while a tensor fresh from ``quantize_per_tensor`` is
contiguous NCHW. fbgemm's elementwise ops (ATen kernels) round a few elements differently in their scalar tails,
which depend on torch's intra-op thread count too (``threads``, see ``_vector_lanes``).

fbgemm's depthwise kernel adds its uint8 * int8 products two taps at a time in saturating int16 (``vpmaddubsw``),
which changes its sums once activations exceed 127 (beyond the reduce-range quantization fbgemm's observers
give): ``_fbgemm_depthwise_sums`` does the same. Its other convolutions and linear layers sum exactly on CPUs with
AVX512-VNNI (where torch's results were taken); on AVX2-only CPUs they may saturate too, which is not reproduced.
"""
import functools

import numpy as np

from ..pool_geometry import bins as _bins, geometry as _geometry
from .conv import _pair, _winograd_forward_pays, conv2d_forward

_F32 = np.float32
_LIMITS = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127),
           np.dtype(np.int32): (-2 ** 31, 2 ** 31 - 1)}
_GRAIN, _VECTOR_RUN = 32768, 64  # ATen's elementwise loops: parallel grain and vectorised run (see _vector_lanes)
_CAT_RUN = 8  # torch's channels-last cat vectorises each input's channels in runs of 8
_CODES = np.arange(256, dtype=np.float32)  # every quint8 value, for per-value tables


# ---- float32 helpers ---------------------------------------------------------------------------------------------

def _recip(scale):
    """float32 ``1.0f / float(scale)``, the reciprocal torch's quantizers multiply by (elementwise for arrays)."""
    return _F32(1) / np.asarray(scale, np.float64).astype(_F32)


def _fma(a, b, c):
    """float32 ``a * b + c`` rounded once (a fused multiply-add) for float32 a, b, c.

    The product is exact in float64; the sum is split into its float64 rounding s and exact error (TwoSum). When
    s lies exactly halfway between two float32 values the error decides the side, so no double rounding remains.
    """
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    s = p + c
    t = s - p
    err = (p - (s - t)) + (c - t)
    r = s.astype(_F32)
    other = np.nextafter(r, np.where(s > r, _F32(np.inf), _F32(-np.inf)))  # the float32 neighbour across s
    tie = (2 * s == r.astype(np.float64) + other.astype(np.float64)) & (s != r)
    return np.where(tie & (np.sign(err) == np.sign(s - r)), other, r)


def _to_uint8(v, zero_point, relu):
    """Clamp rounded values (already offset by the zero point) to quint8, or to [zero_point, 255] with a ReLU."""
    return np.clip(v, zero_point if relu else 0, 255).astype(np.uint8)


def _dequantize_fma(q, scale, zero_point):
    """ATen's vectorised dequantize: float32 ``fma(q, scale, -zero_point * scale)`` with a float32 premultiply.
    A uint8 array reads a 256-entry table (the exact fma is ~10 numpy passes; this keeps it off every element)."""
    s = _F32(scale)
    if q.dtype == np.uint8:
        return _fma(_CODES, s, s * _F32(-zero_point))[q]
    return _fma(q.astype(_F32), s, s * _F32(-zero_point))


@functools.lru_cache(maxsize=64)
def _vector_lanes(shape, channels_last, threads):
    """Where ATen's elementwise quantized loops take their vectorised path rather than the scalar tail.

    The tensor is walked in memory order, split over ``min(threads, ceil(n / 32768))`` equal chunks (one chunk
    below 32768 elements), and in each chunk the runs of 64 elements are vectorised and the last ``len % 64``
    elements go through the scalar code, whose rounding can differ. Returns a read-only bool array of ``shape``
    (kept per layout: a model asks for the same few again on every call).
    """
    n = int(np.prod(shape))
    tasks = 1 if n < _GRAIN or threads <= 1 else min(threads, -(-n // _GRAIN))
    chunk = max(-(-n // tasks), 1)
    pos = np.arange(n)
    start = pos // chunk * chunk
    vector = pos - start < (np.minimum(start + chunk, n) - start) // _VECTOR_RUN * _VECTOR_RUN
    vector.flags.writeable = False
    if channels_last and len(shape) == 4:
        N, C, H, W = shape
        return vector.reshape(N, H, W, C).transpose(0, 3, 1, 2)
    return vector.reshape(shape)


def _nhwc(shape, channels_last):
    """Whether torch takes its channels-last kernel: a channels-last tensor, or an NCHW one that is also
    channels-last contiguous (one channel, or a 1x1 plane)."""
    return channels_last or shape[1] == 1 or shape[2] * shape[3] == 1


def _dequantize_aten(q, scale, zero_point, vector):
    """ATen's elementwise dequantize: ``_dequantize_fma`` where ``vector``, else the scalar ``dequantize``."""
    return np.where(vector, _dequantize_fma(q, scale, zero_point), dequantize(q, scale, zero_point))


# ---- quantize / dequantize -----------------------------------------------------------------------------------------

def quantize(x, scale, zero_point, np_dtype):
    """``torch.quantize_per_tensor`` (quint8, qint8, qint32): ``clamp(rint(x * r) + zero_point)`` where x is float32,
    ``r = 1.0f / float32(scale)`` and the product is float32 (a multiply by the reciprocal, not a division)."""
    lo, hi = _LIMITS[np.dtype(np_dtype)]
    v = np.rint(np.asarray(x, _F32) * _recip(scale)) + _F32(zero_point)
    return np.clip(v.astype(np.float64), lo, hi).astype(np_dtype)


def quantize_per_channel(x, scales, zero_points, axis, np_dtype):
    """``torch.quantize_per_channel``: ``quantize`` with each slice along ``axis`` using its scale and zero point."""
    shape = [1] * np.ndim(x)
    shape[axis] = -1
    lo, hi = _LIMITS[np.dtype(np_dtype)]
    r = _recip(scales).reshape(shape)
    v = np.rint(np.asarray(x, _F32) * r) + np.asarray(zero_points, _F32).reshape(shape)
    return np.clip(v.astype(np.float64), lo, hi).astype(np_dtype)


def dequantize(q, scale, zero_point):
    """Per-tensor dequantize as torch: float32 ``(q - zero_point) * float32(scale)`` (a table for uint8 arrays).
    The difference is an int32 one, which wraps for qint32 values far from an extreme zero point, as torch's."""
    if q.dtype == np.uint8:
        return ((_CODES - _F32(zero_point)) * _F32(scale))[q]
    return (q.astype(np.int64) - zero_point).astype(np.int32).astype(_F32) * _F32(scale)


def dequantize_per_channel(q, scales, zero_points, axis):
    """Per-channel dequantize as torch: the float32 difference ``float32(q) - float32(zero_point)`` (inexact
    for large qint32 values) times the double scale, rounded to float32."""
    shape = [1] * q.ndim
    shape[axis] = -1
    zp = np.asarray(zero_points, np.int64).reshape(shape).astype(_F32)
    centred = q.astype(_F32) - zp
    return (centred.astype(np.float64) * np.asarray(scales, np.float64).reshape(shape)).astype(_F32)


# ---- convolution and linear ----------------------------------------------------------------------------------------

def _requantize_fbgemm(acc, x_scale, w_scales, bias, out_scale, fused=True):
    """fbgemm's output stage for accumulators ``acc`` (channels on the last axis), before the zero point.

    With ``m = float32(x_scale) * float32(w_scale)`` (float32) and ``mult = m / float32(out_scale)``:
    per channel ``rint(float32(float32(acc) + bias / m) * mult)``; per tensor the bias term is
    ``bias * float32(1.0 / m)`` instead, added in one fused multiply-add except in fbgemm's depthwise kernel
    (``fused=False``: multiplied, rounded, then added).
    """
    m = _F32(x_scale) * np.asarray(w_scales, np.float64).astype(_F32)
    a = acc.astype(_F32)
    if bias is not None and len(m) > 1:
        a = a + bias / m
    elif bias is not None:
        r = (1.0 / m.astype(np.float64)).astype(_F32)
        a = _fma(bias, r, a) if fused else a + bias * r
    return np.rint(a * (m / _F32(out_scale)))


def _requantize_qnnpack(acc, x_scale, w_scales, bias, out_scale):
    """qnnpack's output stage for ``acc`` (channels last axis), before the zero point.

    The bias joins the int32 accumulator quantized as ``quantize(bias, double(x_scale) * w_scale, 0, qint32)``;
    then ``rint(float32(acc) * mult)`` with ``mult = (float32(x_scale) * float32(w_scale)) * (1.0f / out_scale)``.
    """
    w = np.asarray(w_scales, np.float64)
    if bias is not None:
        qb = np.rint(bias.astype(_F32) * _recip(np.float64(x_scale) * w))
        acc = acc + np.clip(qb.astype(np.float64), -2 ** 31, 2 ** 31 - 1)
    mult = (_F32(x_scale) * w.astype(_F32)) * _recip(out_scale)
    return np.rint(acc.astype(_F32) * mult)


def _requantize(acc, x_scale, w_scales, bias, out_scale, out_zp, relu, engine_name, fused=True):
    """uint8 outputs from exact accumulators (channels on the last axis) by the engine's output stage."""
    bias = None if bias is None else np.asarray(bias, _F32)
    if engine_name == "qnnpack":
        out = _requantize_qnnpack(acc, x_scale, w_scales, bias, out_scale)
    else:
        out = _requantize_fbgemm(acc, x_scale, w_scales, bias, out_scale, fused)
    return _to_uint8(out + out_zp, out_zp, relu)


def _fbgemm_depthwise(in_channels, w_shape, groups, stride, padding, dilation):
    """Whether fbgemm runs this convolution through its depthwise kernel: one input channel per group, a multiple
    of 8 of them, 1 or 2 outputs per group, a 3x3 or 5x5 kernel, strides 1 or 2, no dilation, 'same' padding."""
    O, _, kh, kw = w_shape
    return (groups == in_channels and groups % 8 == 0 and O in (groups, 2 * groups) and kh == kw and kh in (3, 5)
            and set(stride) <= {1, 2} and dilation == (1, 1) and padding == ((kh - 1) // 2,) * 2)


def _fbgemm_depthwise_sums(xq, x_zp, wq, w_zps, stride, padding):
    """fbgemm's depthwise accumulators (N, O, OH, OW): per output, the products ``x * (w - w_zp)`` of the uint8
    input (padded with x_zp) are added two taps at a time in row-major tap order (the last tap alone), each pair
    saturated to int16; then ``x_zp * sum(w - w_zp)`` is taken off."""
    O, _, kh, kw = wq.shape
    (sh, sw), (ph, pw) = stride, padding
    x = np.pad(xq.astype(np.int32), ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=x_zp)
    x = np.repeat(x, O // xq.shape[1], axis=1)  # output channel o reads input channel o // multiplier
    w = (wq.astype(np.int32) - np.asarray(w_zps, np.int32).reshape(-1, 1, 1, 1))[:, 0]
    oh, ow = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    products = [x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw] * w[None, :, i, j, None, None]
                for i in range(kh) for j in range(kw)]
    acc = sum(np.clip(sum(products[k:k + 2]), -2 ** 15, 2 ** 15 - 1) for k in range(0, len(products), 2))
    return (acc - x_zp * w.sum(axis=(1, 2))[None, :, None, None]).astype(np.float64)


EXACT_FLOAT32 = 2 ** 24  # float32 holds every integer below this: sums of products bounded by it add exactly
# The engine's Winograd F(2, 3) path forms quarter-integer intermediates up to 36x the direct sums' bound
# (transformed tiles 4x, transformed weights' quarters, the 3x3 output transform): 2**24 / (4 * 36)
EXACT_FLOAT32_WINOGRAD = 2 ** 24 // 144


def conv2d_weight_bound(wq, w_zps):
    """The weight's factor of ``conv2d``'s float32 exactness bound: the largest ``sum|w - w_zp|`` over one output
    channel's kernel (an int). It depends on the weight alone, so callers may compute it once per weight."""
    zps = np.asarray(w_zps, np.int64).reshape((-1,) + (1,) * (wq.ndim - 1))
    return int(np.abs(wq.astype(np.int64) - zps).reshape(wq.shape[0], -1).sum(axis=1).max(initial=0))


def _exact_sum_dtype(xq, x_zp, weight_bound, limit):
    """float32 where the products' sums cannot reach ``limit`` in magnitude (then a float32 convolution adds the
    integers exactly, in any order, at about twice float64's speed), else float64 (exact below 2**53).

    The bound per output channel is ``max|x - x_zp| * sum|w|`` over its kernel (``weight_bound``: the largest
    sum), which every partial sum stays under; with fbgemm's 7-bit activations the ResNets' layers mostly pass it
    (int8 resnet50 at batch 8: 2.3 s -> 1.25 s)."""
    largest = max(int(xq.max(initial=0)) - x_zp, x_zp - int(xq.min(initial=255)), 0)
    return np.float32 if largest * weight_bound < limit else np.float64


def _centered_weight(wq, w_zps, dtype=np.float64):
    """``wq - zero_point`` in ``dtype`` (one zero point, or one per output channel on axis 0): exact integers."""
    zps = np.asarray(w_zps, dtype).reshape((-1,) + (1,) * (wq.ndim - 1))
    return wq.astype(dtype) - zps


def conv2d(xq, x_scale, x_zp, wq, w_scales, w_zps, bias, stride, padding, dilation, groups, out_scale, out_zp,
           relu, engine_name, weight_bound=None):
    """Quantized conv2d (``quantized::conv2d`` / ``conv2d_relu``), uint8 NCHW out, equal to torch's engine.

    xq uint8 (N, C, H, W); wq int8 (O, C/groups, KH, KW); ``w_scales``/``w_zps`` of length 1 (per tensor) or O
    (per channel); bias float32 (O,) or None; stride/padding/dilation ints or pairs. The accumulator is the exact
    sum of ``(x - x_zp) * (w - w_zp)`` (padding reads x_zp, so it adds 0; fbgemm's depthwise kernel saturates, see
    ``_fbgemm_depthwise_sums``), then each engine's output stage
    (``_requantize_fbgemm`` / ``_requantize_qnnpack``), ``+ out_zp`` and a clamp to [0, 255] ([out_zp, 255]
    with ``relu``). ``weight_bound`` is ``conv2d_weight_bound(wq, w_zps)`` when the caller keeps it per weight.
    """
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    depthwise = _fbgemm_depthwise(xq.shape[1], wq.shape, groups, stride, padding, dilation)
    if depthwise and engine_name != "qnnpack":
        acc = _fbgemm_depthwise_sums(xq, x_zp, wq, w_zps, stride, padding)
    else:
        ph, pw = padding
        winograd = _winograd_forward_pays(xq.shape, wq.shape, stride, (ph, ph, pw, pw), dilation, groups)
        bound = conv2d_weight_bound(wq, w_zps) if weight_bound is None else weight_bound
        dtype = _exact_sum_dtype(xq, x_zp, bound, EXACT_FLOAT32_WINOGRAD if winograd else EXACT_FLOAT32)
        acc, _ = conv2d_forward(xq.astype(dtype) - dtype(x_zp), _centered_weight(wq, w_zps, dtype), None, stride,
                                (ph, ph, pw, pw), dilation, groups, weight_grad=False)
    out = _requantize(np.moveaxis(acc, 1, -1), x_scale, w_scales, bias, out_scale, out_zp, relu, engine_name,
                      fused=not depthwise)
    return np.ascontiguousarray(np.moveaxis(out, -1, 1))


def linear(xq, x_scale, x_zp, wq, w_scales, w_zps, bias, out_scale, out_zp, relu, engine_name):
    """Quantized linear (``quantized::linear`` / ``linear_relu``): xq uint8 (..., K), wq int8 (O, K); the exact
    accumulator ``(x - x_zp) @ (w - w_zp).T`` then the engine's output stage, as ``conv2d``."""
    acc = (xq.astype(np.float64) - x_zp) @ _centered_weight(wq, w_zps).T
    return _requantize(acc, x_scale, w_scales, bias, out_scale, out_zp, relu, engine_name)


# ---- elementwise ---------------------------------------------------------------------------------------------------

def _qnnpack_add(a, sa, za, b, sb, zb, out_scale, out_zp, relu):
    """qnnpack's fixed-point add: both inputs rescaled by integer multipliers with a common shift.

    With float32 ratios ``ra = float32(sa) / float32(out_scale)`` (and rb), ``shift = 21 - floor(log2(max(ra,
    rb)))`` and multipliers ``rint(ra * 2**shift)``, the int32 sum of the centred inputs times their multipliers
    is shifted right rounding half away from zero, then offset by out_zp and clamped.
    """
    ra, rb = _F32(sa) / _F32(out_scale), _F32(sb) / _F32(out_scale)
    shift = 21 - (np.frexp(max(ra, rb))[1] - 1)
    ma, mb = int(np.rint(ra * _F32(2.0 ** shift))), int(np.rint(rb * _F32(2.0 ** shift)))
    acc = ma * (a.astype(np.int64) - za) + mb * (b.astype(np.int64) - zb)
    half = 1 << (shift - 1)
    rounded = np.where(acc >= 0, (acc + half) >> shift, -((-acc + half) >> shift))
    return _to_uint8(rounded + out_zp, out_zp, relu)


def add(a, sa, za, b, sb, zb, out_scale, out_zp, relu=False, engine_name="fbgemm", channels_last=True, threads=1):
    """``quantized::add`` / ``add_relu`` (QFunctional.add / add_relu) of two quint8 arrays of one shape.

    fbgemm (ATen's kernel): both inputs dequantized (``_dequantize_aten``: which elements take the vectorised
    fma form depends on the memory layout and torch's thread count, see ``_vector_lanes``), summed in float32,
    ReLU'd, then ``rint(sum * (1.0f / out_scale)) + out_zp``. qnnpack: ``_qnnpack_add``'s fixed-point arithmetic.
    """
    if engine_name == "qnnpack":
        return _qnnpack_add(a, sa, za, b, sb, zb, out_scale, out_zp, relu)
    vector = _vector_lanes(a.shape, channels_last, threads)
    c = _dequantize_aten(a, sa, za, vector) + _dequantize_aten(b, sb, zb, vector)
    if relu:
        c = np.maximum(c, _F32(0))
    return _to_uint8(np.rint(c * _recip(out_scale)) + out_zp, out_zp, relu)


def mul(a, sa, za, b, sb, zb, out_scale, out_zp, relu=False):
    """``quantized::mul`` / ``mul_relu`` (both engines): the exact product ``(a - za) * (b - zb)`` as float32
    times ``(float32(sa) * float32(sb)) * (1.0f / out_scale)``, rounded, + out_zp, clamped."""
    prod = (a.astype(np.int32) - za) * (b.astype(np.int32) - zb)
    mult = (_F32(sa) * _F32(sb)) * _recip(out_scale)
    return _to_uint8(np.rint(prod.astype(_F32) * mult) + out_zp, out_zp, relu)


def add_scalar(q, scale, zero_point, c, relu=False):
    """``quantized::add_scalar`` (QFunctional.add_scalar): returns ``(q', scale', zero_point')``.

    ``c_q = rint(c / scale)`` (float64). If ``z' = zero_point - c_q`` is in [0, 255] only the zero point moves.
    Otherwise the output scale widens (float64) to ``(255 - z') / 255 * scale`` with zero point 0, or
    ``z' / 255 * scale`` with zero point 255, and ``q' = zp + rint(float32(q - zero_point + c_q) * m)`` with
    ``m = float32(scale) * (1.0f / float32(scale'))``. ``relu`` clamps q' below at the new zero point.
    """
    c_q = int(np.rint(c / scale))
    z = zero_point - c_q
    if 0 <= z <= 255:
        return (np.maximum(q, np.uint8(z)) if relu else q.copy()), scale, z
    new_scale, new_zp = ((255.0 - z) / 255.0 * scale, 0) if z < 0 else ((z - 0.0) / 255.0 * scale, 255)
    m = _F32(scale) * _recip(new_scale)
    src = (q.astype(np.int64) - zero_point + c_q).astype(_F32)
    return _to_uint8(np.rint(src * m) + new_zp, new_zp, relu), new_scale, new_zp


def mul_scalar(q, scale, zero_point, c, relu=False):
    """``quantized::mul_scalar`` (QFunctional.mul_scalar): returns ``(q', scale', zero_point')``, no rounding.

    c > 0: the same integers with scale ``c * scale``; c == 0: zeros with scale 1.0, zero point 0; c < 0: the
    integers mirrored (``255 - q``) with scale ``|c| * scale`` and zero point ``255 - zero_point``. ``relu``
    clamps below at the output zero point.
    """
    if c == 0:
        return np.zeros_like(q), 1.0, 0
    out, zp = (q.copy(), zero_point) if c > 0 else (255 - q, 255 - zero_point)
    return (np.maximum(out, np.uint8(zp)) if relu else out), abs(c) * scale, zp


def relu(q, zero_point):
    """Quantized ReLU (both engines): integers below the zero point become it; the quantization is kept."""
    return np.maximum(q, np.asarray(min(max(zero_point, 0), 255), q.dtype))


def _hardswish_lut(scale, zero_point, out_scale, out_zp, fn):
    """qnnpack's 256-entry lookup table: float32 ``x = scale * (i - zero_point)``, y = fn(x), then
    ``rint(clamp((1.0f / out_scale) * y + out_zp, 0, 255))``."""
    x = _F32(scale) * (np.arange(256) - zero_point).astype(_F32)
    y = fn(x, np.minimum(np.maximum(x + _F32(3), _F32(0)), _F32(6)))
    return np.rint(np.clip(_recip(out_scale) * y + _F32(out_zp), _F32(0), _F32(255))).astype(np.uint8)


def hardswish(q, scale, zero_point, out_scale, out_zp, engine_name="fbgemm", channels_last=True, threads=1):
    """``quantized::hardswish`` (torch.ao.nn.quantized.Hardswish): ``x * min(max(x + 3, 0), 6) / 6``.

    fbgemm: ATen's kernel, x from ``_dequantize_aten``, float32 ops in that order, then ``rint(y * r) + out_zp``
    with ``r = float32(1.0 / out_scale)`` (a float64 reciprocal) on the vectorised elements and ``1.0f /
    out_scale`` on the scalar tail (``_vector_lanes``). qnnpack: a lookup table built as in ``_hardswish_lut``.
    """
    if engine_name == "qnnpack":
        return _hardswish_lut(scale, zero_point, out_scale, out_zp, lambda x, t: x * t / _F32(6))[q]
    vector = _vector_lanes(q.shape, channels_last, threads)
    x = _dequantize_aten(q, scale, zero_point, vector)
    y = x * np.minimum(np.maximum(x + _F32(3), _F32(0)), _F32(6)) / _F32(6)
    r = np.where(vector, _F32(1.0 / out_scale), _recip(out_scale))
    return _to_uint8(np.rint(y * r) + out_zp, out_zp, False)


HARDSIGMOID_SCALE, HARDSIGMOID_ZERO_POINT = 1.0 / 256, 0


def hardsigmoid(q, scale, zero_point, engine_name="fbgemm", channels_last=True, threads=1):
    """Hardsigmoid ``min(max(x + 3, 0), 6) / 6`` of a quint8 array into torch's fixed output quantization
    (scale 1/256, zero point 0). fbgemm: ATen's kernel, x from ``_dequantize_aten`` (``_vector_lanes``), float32
    ops, ``rint(y * 256)``; qnnpack: the lookup table of ``_hardswish_lut`` with that function."""
    if engine_name == "qnnpack":
        return _hardswish_lut(scale, zero_point, HARDSIGMOID_SCALE, 0, lambda x, t: t / _F32(6))[q]
    x = _dequantize_aten(q, scale, zero_point, _vector_lanes(q.shape, channels_last, threads))
    y = np.minimum(np.maximum(x + _F32(3), _F32(0)), _F32(6)) / _F32(6)
    return _to_uint8(np.rint(y * _F32(256)), 0, False)


def cat(items, dim, out_scale, out_zp, channels_last=True):
    """``quantized::cat`` (QFunctional.cat) of ``(q, scale, zero_point)`` items into (out_scale, out_zp).

    An input already in the output's quantization is copied. Otherwise torch's channels-last fast path (4-d
    channels-last inputs, ``dim`` given as 1: torch does not take -3 for it) requantizes each input's channels
    in whole runs of 8 as ``rint(_dequantize_fma(q) * float32(1.0 / out_scale)) + out_zp`` (a float64
    reciprocal) and the rest with ``quantize(dequantize(q))``, which is what its generic path does everywhere.
    """
    fast = dim == 1 and all(q.ndim == 4 and _nhwc(q.shape, channels_last) for q, _, _ in items)
    parts = []
    for q, s, z in items:
        if s == out_scale and z == out_zp:
            parts.append(q)
            continue
        scalar = quantize(dequantize(q, s, z), out_scale, out_zp, np.uint8)
        if fast:
            vector = _to_uint8(np.rint(_dequantize_fma(q, s, z) * _F32(1.0 / out_scale)) + out_zp, out_zp, False)
            runs = np.arange(q.shape[1])[:, None, None] < q.shape[1] // _CAT_RUN * _CAT_RUN
            scalar = np.where(runs, vector, scalar)
        parts.append(scalar)
    return np.concatenate(parts, axis=dim)


# ---- pooling -------------------------------------------------------------------------------------------------------

def max_pool2d(q, kernel_size, stride, padding, dilation, ceil_mode, engine_name="fbgemm"):
    """Quantized max pooling: the max of the integers in each window.

    ATen's kernel skips the padding (here: padding with the dtype's minimum, which never wins since every window
    holds an input element). qnnpack's, which torch runs under that engine without ceil_mode, clamps each tap's
    row and column into the input instead, so a dilated window hanging over the edge reads the edge.
    """
    (kh, kw), (sh, sw), (ph, pw), (dh, dw), (OH, OW), (eh, ew) = _geometry(q.shape, kernel_size, stride, padding,
                                                                           dilation, ceil_mode)
    low = np.iinfo(q.dtype).min
    pads = ((0, 0), (0, 0), (ph, ph + eh), (pw, pw + ew))
    clamp = engine_name == "qnnpack" and not ceil_mode
    x = np.pad(q, pads, mode="edge") if clamp else np.pad(q, pads, constant_values=low)
    out = np.full(q.shape[:2] + (OH, OW), low, q.dtype)
    for i in range(kh):
        for j in range(kw):
            np.maximum(out, x[:, :, i * dh:i * dh + sh * (OH - 1) + 1:sh, j * dw:j * dw + sw * (OW - 1) + 1:sw],
                       out=out)
    return out


def _box_sums(q, rows, cols):
    """Exact int64 sums of q (N, C, H, W) over boxes ``rows[0][i]:rows[1][i]`` x ``cols[0][j]:cols[1][j]``."""
    N, C, H, W = q.shape
    table = np.zeros((N, C, H + 1, W + 1), np.int64)
    np.cumsum(np.cumsum(q, axis=2, dtype=np.int64), axis=3, out=table[:, :, 1:, 1:])
    (r0, r1), (c0, c1) = ((np.asarray(a)[:, None] for a in rows), (np.asarray(a)[None, :] for a in cols))
    return table[:, :, r1, c1] - table[:, :, r0, c1] - table[:, :, r1, c0] + table[:, :, r0, c0]


def _windows(n, k, s, p, out):
    """Average-pooling windows along one axis: clipped [start, end) and the size counted with padding."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, n + p)
    return np.maximum(start, 0), np.minimum(end, n), end - start


def _qnnpack_average(centred, scale, zero_point, kernel_area):
    """qnnpack's average pooling: ``rint(float32(sum of q - zp) * m) + zp`` with the float32 multiplier
    ``m = float32(scale) / (float32(scale) * kernel_area)`` (padding reads the zero point)."""
    m = _F32(scale) / (_F32(scale) * _F32(kernel_area))
    return _to_uint8(np.rint(centred.astype(_F32) * m) + zero_point, zero_point, False)


def _aten_average(centred, divisor, zero_point, nhwc):
    """ATen's quantized average: float32 ``m = 1.0f / divisor``; the channels-last kernel rounds
    ``rint(float32(centred) * m) + zp``, the NCHW one ``rint(float32(float32(centred) * m) + zp)``."""
    m = _F32(1) / np.asarray(divisor, _F32)
    scaled = centred.astype(_F32) * m
    return _to_uint8(np.rint(scaled) + zero_point if nhwc else np.rint(scaled + _F32(zero_point)), zero_point, False)


def avg_pool2d(q, scale, zero_point, kernel_size, stride, padding, ceil_mode=False, count_include_pad=True,
               divisor_override=None, engine_name="fbgemm", channels_last=True):
    """Quantized avg_pool2d; the output keeps the input's quantization.

    The sum of ``q - zero_point`` over each window's input elements is divided by torch's divisor
    (``divisor_override``, else the window size with padding if ``count_include_pad``, else the element count)
    as in ``_aten_average``. Under qnnpack without ceil_mode torch runs qnnpack's pooling instead, which divides
    by the kernel area whatever ``count_include_pad`` and ``divisor_override`` say (``_qnnpack_average``).
    """
    (kh, kw), (sh, sw), (ph, pw), _, (OH, OW), _ = _geometry(q.shape, kernel_size, stride, padding, 1, ceil_mode)
    r0, r1, rsize = _windows(q.shape[2], kh, sh, ph, OH)
    c0, c1, csize = _windows(q.shape[3], kw, sw, pw, OW)
    count = np.outer(r1 - r0, c1 - c0)
    centred = _box_sums(q, (r0, r1), (c0, c1)) - count * zero_point
    if engine_name == "qnnpack" and not ceil_mode:
        return _qnnpack_average(centred, scale, zero_point, kh * kw)
    divisor = divisor_override or (np.outer(rsize, csize) if count_include_pad else count)
    return _aten_average(centred, divisor, zero_point, _nhwc(q.shape, channels_last))


def adaptive_avg_pool2d(q, scale, zero_point, output_size, engine_name="fbgemm", channels_last=True):
    """Quantized adaptive_avg_pool2d over torch's bins; the output keeps the input's quantization.

    Channels last: ``_aten_average`` of the centred sums by the bin size. NCHW: torch's generic kernel rounds
    the raw sum, ``rint(float32(sum q) * float32(float32(1.0f / bin_h) / bin_w))``. qnnpack, when the output
    divides the input (and differs from it), pools with kernel = stride = input / output (``_qnnpack_average``).
    """
    (H, W), (OH, OW) = q.shape[2:], output_size
    (r0, r1), (c0, c1) = _bins(H, OH), _bins(W, OW)
    sums = _box_sums(q, (r0, r1), (c0, c1))
    count = np.outer(r1 - r0, c1 - c0)
    if engine_name == "qnnpack" and H % OH == 0 and W % OW == 0 and (H, W) != (OH, OW):
        return _qnnpack_average(sums - count * zero_point, scale, zero_point, (H // OH) * (W // OW))
    if _nhwc(q.shape, channels_last):
        return _aten_average(sums - count * zero_point, count, zero_point, True)
    factor = (_F32(1) / (r1 - r0).astype(_F32))[:, None] / (c1 - c0).astype(_F32)[None, :]
    return _to_uint8(np.rint(sums.astype(_F32) * factor), 0, False)


# ---- reductions ----------------------------------------------------------------------------------------------------

SUM_COLUMN_BLOCK = 32  # torch's float sum (its AVX2 kernel) adds 4 vectors of 8 columns at once in cascade order
SMALL_SUM_COLUMN_BLOCK = 4  # with 4 to 7 columns its first 4 take the cascade order too (measured on torch 2.14)


def _cascade_sum(rows):
    """ATen's float32 ``multi_row_sum`` of ``rows`` (the reduced axis first): runs of ``2**p`` rows (p = 4 up to
    2**19 rows) added in order, each run carried up through 4 levels of partial sums, the levels added last."""
    size = rows.shape[0]
    power = max(4, (size - 1).bit_length() // 4)
    step = 1 << power
    acc = np.zeros((4,) + rows.shape[1:], np.float32)
    i = 0
    while i + step <= size:
        for row in rows[i:i + step]:
            acc[0] += row
        i += step
        for level in range(1, 4):
            acc[level] += acc[level - 1]
            acc[level - 1] = 0
            if i & ((step - 1) << (level * power)):
                break
    for row in rows[i:]:
        acc[0] += row
    for level in range(1, 4):
        acc[0] += acc[level]
    return acc[0]


def _interleaved_sum(rows):
    """ATen's float32 ``row_sum`` (the columns past the last whole block): four cascade sums of every fourth row,
    the rows left over added to the first, then the four added in order."""
    whole = rows.shape[0] // 4 * 4
    partial = [_cascade_sum(rows[k:whole:4]) for k in range(4)]
    for row in rows[whole:]:
        partial[0] = partial[0] + row
    return partial[0] + partial[1] + partial[2] + partial[3]


def spatial_mean(q, scale, zero_point, engine_name="fbgemm", channels_last=True):
    """torch's ``mean`` over dims (2, 3) of a quantized (N, C, H, W) array, (N, C, 1, 1) in the input's
    quantization. qnnpack (quint8): its global average pooling, whatever the layout. An NCHW-contiguous input
    (``channels_last`` False, or one channel, or a 1x1 plane: torch's inner-dims kernel) averages the integers
    themselves: ``rint(float32(sum q) / float32(H * W))``. Otherwise the dequantized values are summed in float32
    per channel in ATen's order (``_cascade_sum`` for whole blocks of ``SUM_COLUMN_BLOCK`` channels, or the
    first ``SMALL_SUM_COLUMN_BLOCK`` of 4 to 7 channels; ``_interleaved_sum`` for the rest), divided by H * W in
    float32 and quantized."""
    n, c, h, w = q.shape
    if engine_name == "qnnpack" and q.dtype == np.uint8:
        return adaptive_avg_pool2d(q, scale, zero_point, (1, 1), engine_name="qnnpack")
    if not channels_last or c == 1 or h * w == 1:
        sums = q.sum(axis=(2, 3), dtype=np.int64, keepdims=True)
        return np.rint(sums.astype(_F32) / _F32(h * w)).astype(q.dtype)
    rows = dequantize(q, scale, zero_point).reshape(n, c, h * w).transpose(2, 0, 1)
    block = SMALL_SUM_COLUMN_BLOCK if SMALL_SUM_COLUMN_BLOCK <= c < 2 * SMALL_SUM_COLUMN_BLOCK else SUM_COLUMN_BLOCK
    whole = c // block * block
    sums = np.concatenate([_cascade_sum(rows[:, :, :whole]), _interleaved_sum(rows[:, :, whole:])], axis=1)
    return quantize(sums / np.float32(h * w), scale, zero_point, q.dtype)[:, :, None, None]
