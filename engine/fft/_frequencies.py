"""The sample frequencies of a transform's bins (``fftfreq``, ``rfftfreq``) and the shifts that put the zero
frequency in the middle (``fftshift``) and back (``ifftshift``).

The frequencies are computed as torch computes them: integer bin numbers in the result's dtype (the default float
type, ``dtype``, or ``out``'s), times the reciprocal of ``n * d`` in that dtype (so ``d = 0`` gives infinities,
not an error).
"""
import math
import warnings

from .._dtype import get_default_dtype, to_dtype
from ..ops.creation import full
from ..ops.elementwise import _write_out
from ..ops.ranges import arange
from ..ops.shape import cat, roll
from ..tensor import _wrap_dim


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The frequencies of an ``n``-bin transform of samples ``d`` apart: [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    dt = _result_dtype(out, dtype)
    _check_size(n, "fftfreq", dt, device, out)
    bins = cat([arange((n + 1) // 2, dtype=dt, device=device), arange(-(n // 2), 0, dtype=dt, device=device)])
    return _finish(_scaled(bins, n * d), out, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The frequencies of an rfft's ``n // 2 + 1`` bins: [0, 1, ..., n // 2] / (d n); torch's C++ division for a
    negative ``n`` (-1 gives one bin, -3 none)."""
    dt = _result_dtype(out, dtype)
    bins = int(n / 2) + 1
    _check_size(bins, "rfftfreq", dt, device, out)
    return _finish(_scaled(arange(bins, dtype=dt, device=device), n * d), out, requires_grad)


def _result_dtype(out, dtype):
    if out is None:
        return get_default_dtype() if dtype is None else to_dtype(dtype)
    if dtype is not None and to_dtype(dtype) != out.dtype:
        raise RuntimeError(f"dtype {to_dtype(dtype).title} does not match dtype of out parameter ({out.dtype.title})")
    return out.dtype


def _check_size(size, name, dtype, device, out):
    """torch's refusals, in its order (an ``out``'s dtype is checked before its size, a new result's after):
    a negative ``size``, an integer or bool ``dtype`` (its frequencies would truncate), and a complex one (its
    ``arange`` has no complex kernel)."""
    if out is None and size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {size}: [{size}]")
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if size < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dtype.is_complex:
        kernel = "arange_cuda" if device is not None and "cuda" in str(device) else "arange_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype.title}'")


def _scaled(bins, span):
    """``bins`` times 1 / ``span`` (C's infinity for a zero, of zero's sign), the factor rounded to their dtype
    first as torch's kernel rounds it (a float16 result can differ from the product with the exact factor)."""
    factor = 1.0 / span if span else math.copysign(math.inf, span)
    return bins * full((), factor, dtype=bins.dtype, device=bins.device)


def _finish(result, out, requires_grad):
    if out is not None:
        if out.numel() not in (0, result.numel()):
            warnings.warn(f"The number of elements in the out tensor of shape {list(out.shape)} is {out.numel()} "
                          f"which does not match the computed number of elements {result.numel()}. Note that this "
                          f"may occur as a result of rounding error. The out tensor will be resized to a tensor of "
                          f"shape ({result.numel()},).", UserWarning, stacklevel=3)
        return _write_out(result, out, "fftfreq")
    return result.requires_grad_(True) if requires_grad else result


def _shift_dims(input, dim):
    """``dim`` (all dims by default) wrapped, refused as torch's roll refuses an empty one."""
    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if input.ndim == 0 and dims:
            raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
        dims = tuple(_wrap_dim(d, input.ndim) for d in dims)
    if not dims:
        raise RuntimeError("`shifts` required")
    return dims


def fftshift(input, dim=None):
    """Roll each of ``dim`` (all dims by default) by half its size, the zero frequency to the middle."""
    dims = _shift_dims(input, dim)
    return roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """``fftshift`` undone (they differ for odd sizes)."""
    dims = _shift_dims(input, dim)
    return roll(input, [-(input.shape[d] // 2) for d in dims], dims)
