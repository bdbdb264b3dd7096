"""The sample frequencies of a transform's bins (``fftfreq``, ``rfftfreq``) and the shifts that put the zero
frequency in the middle (``fftshift``) and back (``ifftshift``)."""
from .._dtype import to_dtype
from ..ops.ranges import arange
from ..ops.shape import roll


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The frequencies of an ``n``-bin transform of samples ``d`` apart: [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    _check_floating("fftfreq", dtype)
    k = arange(n, dtype=dtype, device=device)
    k = (k - (k >= (n + 1) // 2) * n) / (d * n) if n else k
    return _finish(k if dtype is None else k.to(dtype), out, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The frequencies of an rfft's ``n // 2 + 1`` bins: [0, 1, ..., n // 2] / (d n)."""
    _check_floating("rfftfreq", dtype)
    k = arange(n // 2 + 1, dtype=dtype, device=device) / (d * n)
    return _finish(k if dtype is None else k.to(dtype), out, requires_grad)


def _check_floating(name, dtype):
    """torch's refusal of an integer or bool ``dtype`` (its frequencies would truncate to zeros)."""
    if dtype is not None and not (to_dtype(dtype).is_floating_point or to_dtype(dtype).is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")


def _finish(result, out, requires_grad):
    result = result.detach().requires_grad_(requires_grad) if requires_grad else result
    if out is not None:
        out.copy_(result)
        return out
    return result


def fftshift(input, dim=None):
    """Roll each of ``dim`` (all dims by default) by half its size, the zero frequency to the middle."""
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    return roll(input, [input.shape[d] // 2 for d in dims], dims)


def ifftshift(input, dim=None):
    """``fftshift`` undone (they differ for odd sizes)."""
    dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    return roll(input, [-(input.shape[d] // 2) for d in dims], dims)
