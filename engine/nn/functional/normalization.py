"""Normalisation functionals: batch, layer, group, instance, RMS and local response norm.

Each norm is one fused Function. Statistics are reduced with BLAS (a matrix-vector product with
ones, per-row dot products) and per-channel affine maps are applied as ``x * scale + shift`` with
broadcast (C, 1) columns over an (N, C, L) view, so no op runs per channel or per pixel.
Float16 inputs are computed in float32; float32 and float64 in their own dtype.
"""
import numbers

import numpy as np

from ... import _layout, backends
from ...amp import autocast_mode
from ...autograd.function import Function
from ...autograd.double_backward import constant, recomputed_backward, vjp
from . import _memory_format
from .padding import Pad
from ...ops._common import check_same_device, xp_of
from ...tensor import Tensor

# ---- shared kernels ----------------------------------------------------------------------------


def _compute_dtype(dtype):
    """Half precision accumulates in float32; wider floats compute in themselves."""
    return np.dtype(np.float32) if dtype.itemsize < 4 else dtype


def _as_ncl(x, dtype):
    """``x`` (N, C, *) as a contiguous (N, C, L) array of ``dtype`` (L spelled out: N may be 0)."""
    xp = xp_of(x)
    x3 = x.reshape(x.shape[0], x.shape[1], int(np.prod(x.shape[2:])))
    return xp.ascontiguousarray(x3, dtype=dtype)


def _no_value_grads(gy, channels, needs_input_grad):
    """Gradients of a norm that saw no values: an empty input gradient, zero per-channel ones."""
    xp = xp_of(gy)
    input_grad = xp.zeros_like(gy) if needs_input_grad[0] else None
    return (input_grad,) + tuple(xp.zeros(channels, gy.dtype) if need else None for need in needs_input_grad[1:])


def _row_sums(rows):
    """Sum of each row of a 2-D array (a BLAS matrix-vector product with ones)."""
    return backends.kernels(rows, "gemm").matmul(rows, xp_of(rows).ones(rows.shape[1], rows.dtype))


def _row_dots(a, b):
    """Dot product of matching rows of two 2-D arrays (BLAS for long rows, einsum for short on the CPU)."""
    if a.shape[1] >= 256 or not isinstance(a, np.ndarray):
        return backends.kernels(a, "gemm").matmul(a[:, None, :], b[:, :, None]).reshape(a.shape[0])
    return np.einsum("rl,rl->r", a, b)


def _column_dots(a, b):
    """Sum over rows of ``a * b`` for two 2-D arrays: einsum on the CPU (no temporary), a product and a
    reduction on the GPU (CuPy's einsum calls cuBLAS, which a CUDA graph capture refuses)."""
    if isinstance(a, np.ndarray):
        return np.einsum("rm,rm->m", a, b)
    return (a * b).sum(0)


def _channel_sums(x3):
    """Per-channel sums of an (N, C, L) array, in float64."""
    n, c, length = x3.shape
    return _row_sums(x3.reshape(n * c, length)).reshape(n, c).sum(0, dtype=np.float64)


def _channel_dots(a3, b3):
    """Per-channel sums of ``a3 * b3`` over (N, L) of two (N, C, L) arrays, in float64."""
    n, c, length = a3.shape
    dots = _row_dots(a3.reshape(n * c, length), b3.reshape(n * c, length))
    return dots.reshape(n, c).sum(0, dtype=np.float64)


def _column(v, dtype):
    """A per-channel vector as a (C, 1) column of ``dtype`` that broadcasts over (N, C, L)."""
    return v.astype(dtype, copy=False).reshape(-1, 1)


def _normalize_rows(rows, eps):
    """Normalise each row of a 2-D array to zero mean, unit variance; returns (xhat, mean, var, invstd)."""
    m = rows.shape[1]
    mean = _row_sums(rows) / m
    xhat = rows - mean[:, None]
    var = _row_dots(xhat, xhat) / m
    invstd = 1 / xp_of(rows).sqrt(var + eps)
    xhat *= invstd[:, None]
    return xhat, mean, var, invstd


def _normalize_rows_backward(gxhat, xhat, invstd):
    """Gradient through row normalisation: invstd * (g - mean(g) - xhat * mean(g * xhat))."""
    m = xhat.shape[1]
    proj = _row_dots(gxhat, xhat) / m
    gx = xhat * -proj[:, None]
    gx += gxhat
    gx -= (_row_sums(gxhat) / m)[:, None]
    gx *= invstd[:, None]
    return gx


# ---- batch norm --------------------------------------------------------------------------------
def _half_stats(x, weight):
    """Whether torch keeps the batch statistics in the input's type: a float16 input whose weight is float16 too or
    absent (float32 weights make it keep them in float32)."""
    return x.dtype == np.float16 and (weight is None or weight.dtype == x.dtype)


class BatchNorm(Function):
    """Per-channel normalisation over (N, *spatial) with batch stats, or with the running stats.

    In training the running stats (tensors, when given) are updated inside the forward, so a
    replayed graph of this op keeps them current too. An input without values (an empty batch) gives
    an empty output and leaves the running stats alone, as PyTorch does.
    """

    keeps_input_dtype = True

    def __init__(self, eps, running_mean=None, running_var=None, training=False, momentum=0.1):
        self.eps = eps
        self.training = training
        self.running = (running_mean, running_var)
        self.momentum = momentum

    def forward(self, x, weight, bias):
        self.channels = x.shape[1]
        if x.size == 0:
            return xp_of(x).empty_like(x)
        ct = _compute_dtype(x.dtype)
        x3 = _as_ncl(x, ct)
        norm = backends.kernels(x3, "norm")
        n, c, length = x3.shape
        if self.training:
            self.count = n * length
            mean = _channel_sums(x3) / self.count
            if _half_stats(x, weight):  # torch keeps a float16 op's batch mean and invstd in float16
                mean = mean.astype(np.float16).astype(mean.dtype)
            out, var = norm.centred(x3, mean)
            var /= self.count
            _update_running(self.running[0], mean, self.momentum)
            _update_running(self.running[1], var * (self.count / max(self.count - 1, 1)), self.momentum)
        else:
            mean, var = (t._data.astype(np.float64) for t in self.running)
        xp = xp_of(x)
        invstd = 1 / xp.sqrt(var + self.eps)
        if self.training and _half_stats(x, weight):
            invstd = invstd.astype(np.float16).astype(invstd.dtype)
        scale = invstd if weight is None else invstd * weight
        if self.training:
            out = norm.affine_(out, scale, bias)
        else:
            shift = -mean * scale if bias is None else bias - mean * scale
            out = norm.scale_shift(x3, scale, shift)
        if any(self.needs_input_grad):
            self.x3, self.mean, self.invstd, self.weight = x3, mean, invstd, weight
        return out.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, gy):
        if gy.size == 0:
            return _no_value_grads(gy, self.channels, self.needs_input_grad)
        need_x, need_w, need_b = self.needs_input_grad
        x3, mean, invstd = self.x3, self.mean, self.invstd
        ct = x3.dtype
        g3 = _as_ncl(gy, ct)
        norm = backends.kernels(g3, "norm")
        k = invstd if self.weight is None else invstd * self.weight
        sum_gy = _channel_sums(g3) if need_b or (need_x and self.training) else None
        dot = gx = None
        if need_w or (need_x and self.training):
            xc, dot = norm.centred(x3, mean, g3)
        if need_x and self.training:
            coef = k * invstd * invstd * dot / self.count
            gx = norm.affine_(xc, -coef, -k * sum_gy / self.count, g3, k)
        elif need_x:
            gx = g3 * _column(k, ct)
        if gx is not None:
            gx = gx.reshape(gy.shape)
        gw = dot * invstd if need_w else None
        return gx, gw, sum_gy if need_b else None

    def backward_tensors(self, gy):
        """The batch norm recomputed from engine ops on the saved input and differentiated (``vjp``); with the
        running stats (eval) these are constants."""
        x = self.saved_input(0, self.x3.reshape(gy.shape)) if gy._data.size else None
        shape = (1, self.channels) + (1,) * (gy.ndim - 2)
        dims = (0,) + tuple(range(2, gy.ndim))
        if x is None:
            return tuple(None if not need else constant(a) for need, a in
                         zip(self.needs_input_grad, _no_value_grads(gy._data, self.channels, self.needs_input_grad)))
        dtype = x._data.dtype
        if self.training:
            xc = x - x.mean(dims, keepdim=True)
            xhat = xc * ((xc * xc).mean(dims, keepdim=True) + self.eps).rsqrt()
        else:
            xhat = ((x - constant(self.mean.astype(dtype).reshape(shape)))
                    * constant(self.invstd.astype(dtype).reshape(shape)))
        return _affine_vjp(self, xhat, x, gy, shape, dims)


def _check_per_channel(name, t, c):
    if t is not None and t.numel() != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Batch normalisation (``torch.nn.functional.batch_norm``); training updates running stats in place."""
    if input.dim() < 2:
        raise ValueError(f"batch_norm expected input with at least 2 dims (N, C, ...), but got input of "
                         f"size {list(input.shape)}")
    c = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        _check_per_channel(name, t, c)
    if training and input.shape[0] * int(np.prod(input.shape[2:])) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {input.shape}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in "
                           "evaluation mode")
    check_same_device(input, running_mean, running_var)
    out = BatchNorm(eps, running_mean, running_var, training, momentum)(input, weight, bias)
    return _memory_format.like_input(input, out)


def _update_running(running, stat, momentum):
    """running = (1 - momentum) * running + momentum * stat, in place (bumps the version)."""
    if running is None:
        return
    if isinstance(momentum, Tensor):  # a module's num_batches_tracked: the cumulative average's 1 / count
        momentum = 1.0 / momentum._data
    data = running._data
    data *= 1 - momentum
    data += (momentum * stat).astype(data.dtype, copy=False)
    running._version_counter[0] += 1


# ---- layer, group and instance norm -------------------------------------------------------------
def _apart_from_saved(out, is_saved):
    """``out``, copied when it is (a view of) the normalized array that backward reads (``is_saved``: kept for a
    gradient, with no affine after the norm): an in-place op on the output (``InstanceNorm2d`` then
    ``ReLU(inplace=True)``, as in RAFT's encoders) would otherwise change what the gradient is computed from,
    silently, where torch keeps its own copy."""
    return out.copy() if is_saved else out


class LayerNorm(Function):
    """Normalisation over the trailing ``n_dims`` dims, with an elementwise affine over those dims."""

    keeps_input_dtype = True

    def __init__(self, n_dims, eps):
        self.n_dims, self.eps = n_dims, eps

    def forward(self, x, weight, bias):
        ct = _compute_dtype(x.dtype)
        m = int(np.prod(x.shape[x.ndim - self.n_dims:]))
        rows = xp_of(x).ascontiguousarray(x.reshape(-1, m), dtype=ct)
        xhat, _, _, invstd = _normalize_rows(rows, self.eps)
        out = xhat if weight is None else xhat * weight.reshape(m).astype(ct, copy=False)
        if bias is not None:
            out = out + bias.reshape(m).astype(ct, copy=False)
        if any(self.needs_input_grad):
            self.xhat, self.invstd, self.weight, self.x = xhat, invstd, weight, x
        out = _apart_from_saved(out, any(self.needs_input_grad) and weight is None and bias is None)
        return out.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, gy):
        need_x, need_w, need_b = self.needs_input_grad
        xhat = self.xhat
        m = xhat.shape[1]
        g = xp_of(gy).ascontiguousarray(gy.reshape(-1, m), dtype=xhat.dtype)
        gw = _column_dots(g, xhat).reshape(self.weight.shape) if need_w else None
        gb = g.sum(0).reshape(gy.shape[gy.ndim - self.n_dims:]) if need_b else None
        gx = None
        if need_x:
            gxhat = g if self.weight is None else g * self.weight.reshape(m).astype(g.dtype, copy=False)
            gx = _normalize_rows_backward(gxhat, xhat, self.invstd).reshape(gy.shape)
        return gx, gw, gb

    def backward_tensors(self, gy):
        """The layer norm recomputed from engine ops on the saved input and differentiated (``vjp``)."""
        x = self.saved_input(0, self.x)
        dims = tuple(range(x.ndim - self.n_dims, x.ndim))
        xc = x - x.mean(dims, keepdim=True)
        xhat = xc * ((xc * xc).mean(dims, keepdim=True) + self.eps).rsqrt()
        lead = tuple(range(x.ndim - self.n_dims))
        return _affine_vjp(self, xhat, x, gy, self.x.shape[len(lead):], lead)


@autocast_mode.float32("cuda")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalisation over the last ``len(normalized_shape)`` dims."""
    shape = _normalized_shape(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                               f"shape {list(t.shape)} and normalized_shape = {list(shape)}")
    return LayerNorm(k, eps)(input, weight, bias)


def _normalized_shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


class GroupNorm(Function):
    """Normalisation over (C / G, *spatial) per sample and group, with a per-channel affine."""

    keeps_input_dtype = True

    def __init__(self, num_groups, eps):
        self.groups, self.eps = num_groups, eps

    def forward(self, x, weight, bias):
        ct = _compute_dtype(x.dtype)
        n, c = x.shape[:2]
        spatial = int(np.prod(x.shape[2:]))
        rows = xp_of(x).ascontiguousarray(x.reshape(n * self.groups, c // self.groups * spatial), dtype=ct)
        xhat, self.mean, self.var, invstd = _normalize_rows(rows, self.eps)
        out = xhat.reshape(n, c, spatial)
        if weight is not None:
            out = out * _column(weight, ct)
        if bias is not None:
            out = out + _column(bias, ct)
        if any(self.needs_input_grad):
            self.xhat, self.invstd, self.weight, self.x = xhat, invstd, weight, x
        out = _apart_from_saved(out, any(self.needs_input_grad) and weight is None and bias is None)
        return out.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, gy):
        need_x, need_w, need_b = self.needs_input_grad
        xhat = self.xhat
        n, c = gy.shape[:2]
        g3 = _as_ncl(gy, xhat.dtype)
        gw = _channel_dots(g3, xhat.reshape(g3.shape)) if need_w else None
        gb = _channel_sums(g3) if need_b else None
        gx = None
        if need_x:
            gxhat = g3 if self.weight is None else g3 * _column(self.weight, g3.dtype)
            gx = _normalize_rows_backward(gxhat.reshape(xhat.shape), xhat, self.invstd).reshape(gy.shape)
        return gx, gw, gb

    def backward_tensors(self, gy):
        """The group norm recomputed from engine ops on the saved input and differentiated (``vjp``)."""
        x = self.saved_input(0, self.x)
        n, c = x.shape[:2]
        xg = x.reshape(n, self.groups, -1)
        xc = xg - xg.mean(2, keepdim=True)
        xhat = (xc * ((xc * xc).mean(2, keepdim=True) + self.eps).rsqrt()).reshape(tuple(x.shape))
        return _affine_vjp(self, xhat, x, gy, (1, c) + (1,) * (x.ndim - 2), (0,) + tuple(range(2, x.ndim)))


def _affine_vjp(node, xhat, x, gy, w_shape, dims):
    """The (x, weight, bias) gradients of ``xhat * weight + bias`` (``xhat`` a function of ``x``) for output
    gradient ``gy``, as graph-connected tensors; ``w_shape`` is the weight's broadcast shape and ``dims`` the
    dims the bias gradient sums over."""
    need_x, need_w, need_b = node.needs_input_grad
    w = None if node.weight is None else node.saved_input(1, node.weight)
    out = xhat if w is None else xhat * w.reshape(tuple(w_shape))
    gx, gw = vjp(out, [x if need_x else None, w if need_w else None], gy)
    return gx, gw, gy.sum(dims) if need_b else None


@autocast_mode.float32("cuda")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation: channels split into ``num_groups`` groups normalised per sample."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    c = input.shape[1]
    per_group = [input.shape[0] * c // num_groups, num_groups] + list(input.shape[2:])
    if per_group[0] * int(np.prod(per_group[2:])) == 1:  # torch's check: one value in each group
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {per_group}")
    if c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in "
                               f"input, but got {name} of shape {list(t.shape)} and input of shape "
                               f"{list(input.shape)}")
    return _memory_format.like_input(input, GroupNorm(num_groups, eps)(input, weight, bias))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Instance normalisation: each sample's channels over their spatial dims (running stats optional)."""
    if use_input_stats and (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is "
                               "false")
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    count = int(np.prod(input.shape[2:]))
    if input.dim() < 3 or count == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    n, c = input.shape[:2]
    check_same_device(input, running_mean, running_var)
    fn = GroupNorm(c, eps)
    out = fn(input, weight, bias)
    if running_mean is not None or running_var is not None:
        _update_running(running_mean, _batch_average(fn.mean, n, c), momentum)
        _update_running(running_var, _batch_average(fn.var * (count / (count - 1)), n, c), momentum)
    return out


def _batch_average(per_instance, n, c):
    """The batch mean of (N * C,) per-instance statistics: NaN for an empty batch, as in PyTorch."""
    if n == 0:
        return xp_of(per_instance).full(c, np.nan)
    return per_instance.reshape(n, c).mean(0, dtype=np.float64)


# ---- RMS norm and local response norm ----------------------------------------------------------
class RMSNorm(Function):
    """x / sqrt(mean(x^2) + eps) over the trailing ``n_dims`` dims, times an elementwise weight."""

    keeps_input_dtype = True

    def __init__(self, n_dims, eps):
        self.n_dims, self.eps = n_dims, eps

    def forward(self, x, weight):
        ct = _compute_dtype(x.dtype)
        m = int(np.prod(x.shape[x.ndim - self.n_dims:]))
        rows = xp_of(x).ascontiguousarray(x.reshape(-1, m), dtype=ct)
        eps = np.finfo(x.dtype).eps if self.eps is None else self.eps
        inv = 1 / xp_of(x).sqrt(_row_dots(rows, rows) / m + eps)
        xn = rows * inv[:, None]
        out = xn if weight is None else xn * weight.reshape(m).astype(ct, copy=False)
        if any(self.needs_input_grad):
            self.xn, self.inv, self.weight, self.x = xn, inv, weight, x
        out = _apart_from_saved(out, any(self.needs_input_grad) and weight is None)
        out = _layout.in_suggested_format(out.reshape(x.shape), x, xp_of(x))  # torch's: channels-last stays so
        return out.astype(x.dtype, copy=False)

    def backward(self, gy):
        need_x, need_w = self.needs_input_grad
        xn = self.xn
        m = xn.shape[1]
        g = xp_of(gy).ascontiguousarray(gy.reshape(-1, m), dtype=xn.dtype)
        gw = _column_dots(g, xn).reshape(self.weight.shape) if need_w else None
        gx = None
        if need_x:
            gxn = g if self.weight is None else g * self.weight.reshape(m).astype(g.dtype, copy=False)
            gx = xn * -(_row_dots(gxn, xn) / m)[:, None]
            gx += gxn
            gx *= self.inv[:, None]
            gx = gx.reshape(gy.shape)
        return gx, gw

    def backward_tensors(self, gy):
        """The RMS norm recomputed from engine ops on the saved input and differentiated (``vjp``)."""
        x = self.saved_input(0, self.x)
        dims = tuple(range(x.ndim - self.n_dims, x.ndim))
        eps = np.finfo(self.x.dtype).eps if self.eps is None else self.eps
        xn = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
        w = None if self.weight is None else self.saved_input(1, self.weight)
        gx, gw = vjp(xn if w is None else xn * w, [x if self.needs_input_grad[0] else None,
                                                   w if self.needs_input_grad[1] else None], gy)
        return gx, gw


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """RMS normalisation over the last ``len(normalized_shape)`` dims (eps defaults to the dtype's eps)."""
    shape = _normalized_shape(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*{', '.join(map(str, shape))}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of "
                           f"shape {list(weight.shape)} and normalized_shape = {list(shape)}")
    return RMSNorm(k, eps)(input, weight)


def _window_sums(a, before, after):
    """Sum of ``a`` over the channel window [c - before, c + after] (clipped), via a cumulative sum."""
    xp = xp_of(a)
    c = a.shape[1]
    cs = xp.zeros((a.shape[0], c + 1) + a.shape[2:], a.dtype)
    xp.cumsum(a, axis=1, out=cs[:, 1:])
    idx = xp.arange(c)
    hi = xp.minimum(idx + after, c - 1) + 1
    lo = xp.maximum(idx - before, 0)
    return cs[:, hi] - cs[:, lo]


class LocalResponseNorm(Function):
    """x / (k + alpha / size * sum of x^2 over neighbouring channels) ** beta."""

    def __init__(self, size, alpha, beta, k):
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        ct = _compute_dtype(x.dtype)
        xc = x.astype(ct, copy=False)
        base = _window_sums(xc * xc, self.size // 2, (self.size - 1) // 2)
        base *= self.alpha / self.size
        base += self.k
        div = base ** self.beta
        out = xp_of(xc).divide(xc, div, out=_layout.empty_preserving(xc, xp_of(xc), xc.dtype))  # torch's layout
        if any(self.needs_input_grad):
            self.x, self.base, self.div, self.out = xc, base, div, out
        return out.astype(x.dtype, copy=False)

    def backward(self, gy):
        gy = gy.astype(self.x.dtype, copy=False)
        spread = _window_sums(gy * self.out / self.base, (self.size - 1) // 2, self.size // 2)
        spread *= self.x * (-2 * self.alpha * self.beta / self.size)
        spread += gy / self.div
        return spread

    def backward_tensors(self, gy):
        """Recomputed from engine ops (a channel-padded sum of shifted squares) and differentiated."""
        def lrn(x):
            channels = x.shape[1]
            padded = Pad([(1, self.size // 2, (self.size - 1) // 2)], "constant", 0)(x * x)
            window = padded[:, 0:channels]
            for i in range(1, self.size):
                window = window + padded[:, i:i + channels]
            return x / (window * (self.alpha / self.size) + self.k) ** self.beta
        return recomputed_backward(self, lrn, [self.x], gy)


class CrossMapLRN2d(Function):
    """``nn.CrossMapLRN2d``'s op (the Lua-torch port), reproduced as torch computes it, forward and backward.

    Its forward is x * (k + alpha / size * S) ** -beta where S sums x^2 over the channels
    [c - (size - 1) // 2, c + (size - 1) // 2] (so an even ``size`` spans size - 1 channels) and, for every
    channel c past the first window (c >= (size - 1) // 2 + 1), also over channel 0: torch's running sum never
    drops it. Its backward is torch's explicit formula, which sums gy * out / scale over the shifted window
    [c - p, c + size - 1 - p] with p = int(size - (size - 1) / 2); it is not the exact gradient of the
    forward, but it is what torch returns.
    """

    def __init__(self, size, alpha, beta, k):
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        ct = _compute_dtype(x.dtype)
        xc = x.astype(ct, copy=False)
        squares = xc * xc
        reach = (self.size - 1) // 2
        scale = _window_sums(squares, reach, reach)
        scale[:, reach + 1:] += squares[:, :1]
        scale *= self.alpha / self.size
        scale += self.k
        out = xc * scale ** -self.beta
        if any(self.needs_input_grad):
            self.x, self.scale, self.out = xc, scale, out
        return out.astype(x.dtype, copy=False)

    def backward(self, gy):
        gy = gy.astype(self.x.dtype, copy=False)
        shift = int(self.size - (self.size - 1) / 2)
        spread = _window_sums(gy * self.out / self.scale, shift, self.size - 1 - shift)
        spread *= self.x * (-2 * self.alpha * self.beta / self.size)
        spread += gy * self.scale ** -self.beta
        return spread


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1):
    """``nn.CrossMapLRN2d``'s normalisation of a 4-D input (torch has no functional of it)."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    return CrossMapLRN2d(size, alpha, beta, k)(input)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalisation across channels (AlexNet-style)."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if size <= 0:  # torch pools over a (size, 1) or (size, 1, 1) window, whose check this is
        sizes = f"kH: {size} kW: 1" if input.dim() == 3 else f"kT: {size} kH: 1 kW: 1"
        raise RuntimeError(f"kernel size should be greater than zero, but got {sizes}")
    if input.numel() == 0:
        return input
    return LocalResponseNorm(size, alpha, beta, k)(input)


__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm"]
