"""Pooling: max, average and adaptive pooling over 1-D and 2-D inputs, around the backend kernels.

1-D pooling runs as 2-D pooling over a unit height axis; unbatched inputs get a batch axis.
"""
import copy
import operator

from ... import backends
from ...autograd.function import Function
from ...autograd.double_backward import transposed_backward
from ...ops._common import xp_of
from . import _memory_format, pool_arguments
from ...autograd.grad_mode import is_grad_enabled
from ...tensor import Tensor


def _expand(value, n):
    """A pooling parameter as a tuple: a sequence as given, a number repeated ``n`` times."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _as_2d(v, fill):
    """A 1-D pooling parameter as the (height, width) pair of the equivalent 2-D pooling."""
    if v is None:
        return None
    return (fill, tuple(v)[0] if isinstance(v, (tuple, list)) else operator.index(v))  # numpy ints, 0-dim tensors


class _Pool(Function):
    """Runs ``<kind>_forward``/``<kind>_backward`` of the pool kernels; 1-D as 2-D."""

    uses_inputs = False

    def __init__(self, kind, nd, args, with_indices):
        self.kind, self.nd, self.args, self.with_indices = kind, nd, args, with_indices

    def forward(self, x):
        if self.nd == 1:
            x = x[:, :, None, :]
        self.kernels = backends.kernels(x, "pool")
        out = getattr(self.kernels, self.kind + "_forward")(x, *self.args)
        if self.with_indices:
            y, indices, self.saved = out
            self.indices = indices[:, :, 0, :] if self.nd == 1 else indices  # for create_graph's gather
        else:
            y, self.saved = out
        if self.nd == 1:
            y = y[:, :, 0, :]
        if not self.with_indices:
            return y
        return y, (indices[:, :, 0, :] if self.nd == 1 else indices)

    def backward(self, gy, g_indices=None):
        if self.nd == 1:
            gy = gy[:, :, None, :]
        gx = getattr(self.kernels, self.kind + "_backward")(gy, self.saved)
        return gx[:, :, 0, :] if self.nd == 1 else gx

    def backward_tensors(self, gy, g_indices=None):
        """The backward is linear in ``gy`` with constant data (the window geometry, the argmax indices): its
        transpose is the average pooling itself, or a gather at the argmax indices (``_PickAtIndices``)."""
        if self.with_indices:
            return transposed_backward(_PickAtIndices(copy.copy(self)), gy)
        return transposed_backward(self, gy)


class _PickAtIndices(Function):
    """The values a max pooling picked, as a linear op of its input with the argmax indices fixed (flat
    indices into each (height, width) plane, as torch's); its backward is the pooling's."""

    uses_inputs = False

    def __init__(self, pool):
        self.pool = pool

    def forward(self, x):
        xp, idx = xp_of(x), self.pool.indices
        flat, at = x.reshape(x.shape[:2] + (-1,)), idx.reshape(idx.shape[:2] + (-1,))
        outside = at >= flat.shape[2]  # a window wholly in the padding: its index is past the plane, its value 0
        if outside.any():
            return xp.where(outside, 0, xp.take_along_axis(flat, xp.where(outside, 0, at), 2)).reshape(idx.shape)
        return xp.take_along_axis(flat, at, 2).reshape(idx.shape)

    def backward(self, gy):
        return self.pool.backward(gy)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def _quantized():
    """Pooling of quantized tensors (``engine.ao``, imported on first use: it builds on these layers)."""
    from ...ao.nn.quantized import functional

    return functional


def _run(kind, input, nd, args, return_indices=False):
    if not isinstance(input, Tensor):
        raise TypeError(f"{kind.replace('2d', f'{nd}d')}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    name = kind.replace("2d", f"{nd}d")
    pool_arguments.check_rank(name, input, nd)
    _check_nonempty(kind, input, nd)
    if kind.startswith("adaptive"):
        empty = _empty_adaptive(input, nd, args[0], return_indices)
        if empty is not None:
            return empty
    else:  # torch takes a one-element list (``kernel_size=[3]``, ``dilation=[1]``) for every spatial dim
        args = tuple(a[0] if isinstance(a, (tuple, list)) and len(a) == 1 else a for a in args)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    if kind == "max_pool2d" and not return_indices and not (is_grad_enabled() and input.requires_grad):
        kind = "max_pool2d_values"  # inference: the argmax indices would be computed for nothing
    fn = _Pool(kind, nd, args, with_indices=kind.endswith("max_pool2d"))
    out = fn(x)
    if isinstance(out, tuple):
        y, indices = (_memory_format.like_input(x, t) for t in out)
        if unbatched:
            y, indices = y.squeeze(0), indices.squeeze(0)
        return (y, indices) if return_indices else y
    out = _memory_format.like_input(x, out)
    return out.squeeze(0) if unbatched else out


def _check_nonempty(kind, input, nd):
    """torch's refusals of empty non-batch dims (an empty batch is fine), with the message and the dims of its
    ``kind`` of pooling; 1-D pooling is checked as the 2-D pooling over a unit height it runs as, but for
    adaptive_max_pool1d, which torch checks apart."""
    shape = list(input.shape)
    if nd == 1 and kind != "adaptive_max_pool2d":
        shape.insert(-1, 1)
    if kind == "adaptive_avg_pool2d":
        dims = (len(shape) - 2, len(shape) - 1)
    elif kind == "adaptive_max_pool2d":
        dims = range(1, len(shape))
    else:  # all dims of an unbatched input
        dims = range(1 if len(shape) == 4 else 0, len(shape))
    empty = [d for d in dims if shape[d] == 0]
    if not empty:
        return
    if kind.startswith("adaptive"):
        name = kind.replace("2d", f"{nd}d") if kind == "adaptive_max_pool2d" else kind
        raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                           f"sizes {shape} with dimension {empty[0]} being empty")
    raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                       f"got:{shape}")


def _empty_adaptive(input, nd, output_size, return_indices):
    """An adaptive pooling to an empty output axis: torch's empty output (and indices), still joined to the
    input's graph; None when every output axis is non-empty (the kernels' bins need at least one)."""
    sizes = [n if o is None else o for o, n in zip(output_size[-nd:], input.shape[-nd:])]
    if min(sizes) > 0:
        return None
    out = input.reshape(-1)[:0].reshape(tuple(input.shape[:-nd]) + tuple(sizes))
    return (out, out.detach().long()) if return_indices else out


def _check_padding(kernel_size, padding, nd, dilation=1):
    """torch's refusal of a padding over half the kernel, naming the first dim at fault."""
    def per_dim(value):
        value = tuple(value) if isinstance(value, (tuple, list)) else (value,)
        return value * nd if len(value) == 1 else value
    for k, p, d in zip(per_dim(kernel_size), per_dim(padding), per_dim(dilation)):
        if p * 2 > k:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")


def _check_max_pool1d_window(input, kernel_size, stride, padding, dilation, ceil_mode):
    """max_pool1d's own refusals of a padding over half the kernel, of empty non-batch dims and of an empty
    output (without indices; with them torch checks it as a 2-D pooling, as ``_check_padding``, ``_run`` and the
    kernels do)."""
    k, p, d = (_expand(v, 1)[0] for v in (kernel_size, padding, dilation))
    s = k if stride in (None, (), []) else _expand(stride, 1)[0]
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if not isinstance(input, Tensor) or input.dim() not in (2, 3):
        return  # for ``_run``'s errors
    if 0 in input.shape[input.dim() - 2:]:
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(input.shape)}")
    width = input.shape[-1]
    out = (width + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= width + p:
        out -= 1
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    kernel_size, stride, padding, dilation = pool_arguments.plain_ints(kernel_size, stride, padding, dilation)
    if getattr(input, "is_quantized", False):
        return _quantized().max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    pool_arguments.check_window(kernel_size, stride, padding, 2, dilation)
    _check_padding(kernel_size, padding, 2, dilation)
    stride = None if stride is None or stride == [] or stride == () else stride
    return _run("max_pool2d", input, 2, (kernel_size, stride, padding, dilation, ceil_mode), return_indices)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    kernel_size, stride, padding, dilation = pool_arguments.plain_ints(kernel_size, stride, padding, dilation)
    pool_arguments.check_max_pool1d(kernel_size, stride, padding, dilation)
    if return_indices:  # torch checks it as the 2-D pooling it runs
        _check_padding(kernel_size, padding, 1)
    else:
        _check_max_pool1d_window(input, kernel_size, stride, padding, dilation, ceil_mode)
    args = (_as_2d(kernel_size, 1), _as_2d(stride, 1), _as_2d(padding, 0), _as_2d(dilation, 1), ceil_mode)
    return _run("max_pool2d", input, 1, args, return_indices)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    kernel_size, stride, padding = pool_arguments.plain_ints(kernel_size, stride, padding)
    if getattr(input, "is_quantized", False):
        return _quantized().avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                       divisor_override)
    pool_arguments.check_window(kernel_size, stride, padding, 2)
    pool_arguments.check_divisor(divisor_override)
    _check_padding(kernel_size, padding, 2)
    stride = None if stride is None or stride == [] or stride == () else stride
    return _run("avg_pool2d", input, 2, (kernel_size, stride, padding, ceil_mode, count_include_pad,
                                         divisor_override))


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    kernel_size, stride, padding = pool_arguments.plain_ints(kernel_size, stride, padding)
    pool_arguments.check_window(kernel_size, stride, padding, 1)
    _check_padding(kernel_size, padding, 1)
    args = (_as_2d(kernel_size, 1), _as_2d(stride, 1), _as_2d(padding, 0), ceil_mode, count_include_pad, None)
    return _run("avg_pool2d", input, 1, args)


def _adaptive_size(output_size, nd):
    if nd == 1:
        return _as_2d(output_size, 1)
    return (output_size, output_size) if isinstance(output_size, int) or output_size is None else tuple(output_size)


def adaptive_avg_pool2d(input, output_size):
    if getattr(input, "is_quantized", False):
        return _quantized().adaptive_avg_pool2d(input, output_size)
    pool_arguments.check_adaptive_size("adaptive_avg_pool2d", input, output_size, 2)
    return _run("adaptive_avg_pool2d", input, 2, (_adaptive_size(output_size, 2),))


def adaptive_avg_pool1d(input, output_size):
    pool_arguments.check_adaptive_size("adaptive_avg_pool1d", input, output_size, 1)
    return _run("adaptive_avg_pool2d", input, 1, (_adaptive_size(output_size, 1),))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    pool_arguments.check_adaptive_size("adaptive_max_pool2d", input, output_size, 2)
    return _run("adaptive_max_pool2d", input, 2, (_adaptive_size(output_size, 2),), return_indices)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    pool_arguments.check_adaptive_size("adaptive_max_pool1d", input, output_size, 1)
    return _run("adaptive_max_pool2d", input, 1, (_adaptive_size(output_size, 1),), return_indices)


def max_pool2d_with_indices(*args, **kwargs):
    kwargs["return_indices"] = True
    return max_pool2d(*args, **kwargs)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool1d`` returning (values, indices) whatever ``return_indices`` says, as torch."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool1d`` returning (values, indices) whatever ``return_indices`` says, as torch."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` returning (values, indices) whatever ``return_indices`` says, as torch."""
    return adaptive_max_pool2d(input, output_size, True)


__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "max_pool2d_with_indices",
           "max_pool1d_with_indices", "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices"]
