"""``engine.fft``: torch.fft's discrete Fourier transforms, their frequencies and shifts.

Transforms take ``n`` / ``s`` (signal sizes: crop or zero-pad), ``dim`` and ``norm`` ("backward": the forward
transform unscaled and the inverse scaled by 1/n; "ortho": both by 1/sqrt(n); "forward": the reverse of
"backward"), as torch's. A float32 input gives complex64 results, float64 complex128; integer and bool inputs
compute in the default float type; float16 and bfloat16 are refused as torch's CPU refuses them. Every transform
is differentiable (see ``_kernels``). ``hfft*`` and ``ihfft*`` are ``irfft*`` of the conjugate and the
conjugate of ``rfft*``, under the swapped norm.
"""
from .. import _dtype
from ..ops.complex_views import conj
from ..ops.elementwise import _write_out
from ._frequencies import fftfreq, fftshift, ifftshift, rfftfreq
from ._kernels import FFTC2C, FFTC2R, FFTR2C
from ..amp import autocast_mode

_SWAPPED = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in _SWAPPED:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _wrap(dim, ndim):
    if not -ndim <= dim < max(ndim, 1) or ndim == 0:
        if ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def _plan(x, s, dim, half_input=False):
    """(axes, sizes) of an n-d transform: ``dim`` (all dims, or the last ``len(s)`` when ``s`` is given, by
    default) and ``s`` (each -1 or missing: the input's size; the last of a half-spectrum input's: the real
    signal's ``2 * (m - 1)``)."""
    if isinstance(dim, int):
        dim = (dim,)
    if s is not None and isinstance(s, int):
        s = (s,)
    if dim is None:
        if s is None:
            dim = tuple(range(x.ndim))
        else:
            if len(s) > x.ndim:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
            dim = tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(_wrap(int(d), x.ndim) for d in dim)
    if len(set(axes)) != len(axes):
        raise RuntimeError("FFT dims must be unique")
    if s is not None and len(s) != len(axes):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    sizes = [x.shape[a] for a in axes]
    if half_input and axes:
        sizes[-1] = 2 * (sizes[-1] - 1)
    if s is not None:
        sizes = [n if int(given) == -1 else int(given) for n, given in zip(sizes, s)]
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return axes, sizes


def _floating(x, name, real_only=False):
    """``x`` in a type the transforms take: integers and bool as the default float type; complex refused where
    the transform wants real input; float16 and bfloat16 refused (torch computes them only on CUDA)."""
    if x.dtype.is_complex:
        if real_only and name in ("ihfft2", "ihfftn"):
            raise TypeError(f"Only supports floating-point dtypes, but found: {x.dtype.title}")
        if real_only:
            wording = "a real input" if name in ("rfft", "ihfft") else "a real-valued input"
            raise TypeError(f"{'rfftn' if name == 'rfft2' else name} expects {wording} tensor, but got {x.dtype.title}")
        return x
    if x.dtype.name in ("float16", "bfloat16"):
        raise NotImplementedError(f"Unsupported dtype {x.dtype.title}")
    return x if x.dtype.is_floating_point else x.to(_dtype.get_default_dtype())


def _complex(x, name):
    x = _floating(x, name)
    return x if x.dtype.is_complex else x.to(x.dtype.to_complex())


def _at_least_one(axes, name):
    if not axes:
        raise RuntimeError(f"{name[:-1] + 'n' if name.endswith('2') else name} must transform at least one axis")


@autocast_mode.float32("cpu")  # torch lists every fft_* op for CPU autocast
def _c2c(input, s, dim, norm, forward, name):
    axes, sizes = _plan(input, s, dim)
    x = _complex(input, name)
    return FFTC2C(axes, sizes, _norm(norm), forward)(x)


@autocast_mode.float32("cpu")  # torch lists every fft_* op for CPU autocast
def _r2c(input, s, dim, norm, name):
    """rfftn of ``input``: a complex one refused first (after the dims by ihfft2 and ihfftn), then the dims
    checked, then a half one refused (torch's order)."""
    if input.dtype.is_complex and name not in ("ihfft2", "ihfftn"):
        _floating(input, name, real_only=True)
    axes, sizes = _plan(input, s, dim)
    _at_least_one(axes, name)
    x = _floating(input, name, real_only=True)
    return FFTR2C(axes, sizes, _norm(norm))(x)


@autocast_mode.float32("cpu")  # torch lists every fft_* op for CPU autocast
def _c2r(input, s, dim, norm, name, conjugate=False):
    """irfftn of ``input`` (of its conjugate when ``conjugate``); the dims are checked before the dtype, as by
    torch."""
    axes, sizes = _plan(input, s, dim, half_input=True)
    _at_least_one(axes, name)
    x = _complex(input, name)
    return FFTC2R(axes, sizes, _norm(norm))(conj(x) if conjugate else x)


def _one(n):
    return None if n is None else (n,)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-d discrete Fourier transform along ``dim``."""
    return _write_out(_c2c(input, _one(n), dim, norm, True, "fft"), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-d inverse discrete Fourier transform along ``dim``."""
    return _write_out(_c2c(input, _one(n), dim, norm, False, "ifft"), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _write_out(_c2c(input, s, dim, norm, True, "fft2"), out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _write_out(_c2c(input, s, dim, norm, False, "ifft2"), out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-d transform over ``dim`` (all dims, or the last ``len(s)``, by default)."""
    return _write_out(_c2c(input, s, dim, norm, True, "fftn"), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _write_out(_c2c(input, s, dim, norm, False, "ifftn"), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The half spectrum (``n // 2 + 1`` bins) of a real signal."""
    return _write_out(_r2c(input, _one(n), dim, norm, "rfft"), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real signal (``n`` long, default ``2 * (m - 1)``) of a half spectrum of ``m`` bins."""
    return _write_out(_c2r(input, _one(n), dim, norm, "irfft"), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _write_out(_r2c(input, s, dim, norm, "rfft2"), out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _write_out(_c2r(input, s, dim, norm, "irfft2"), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _write_out(_r2c(input, s, dim, norm, "rfftn"), out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _write_out(_c2r(input, s, dim, norm, "irfftn"), out)


def _hermitian(input, s, dim, norm, name):
    """The real spectrum of a signal given by its half ``input`` (Hermitian symmetric): irfft of the conjugate."""
    return _c2r(input, s, dim, _SWAPPED[_norm(norm)], name, conjugate=True)


def _inverse_hermitian(input, s, dim, norm, name):
    """The half of the inverse transform of a real signal: the conjugate of its rfft under the swapped norm."""
    return conj(_r2c(input, s, dim, _SWAPPED[_norm(norm)], name))


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real 1-d spectrum of a Hermitian-symmetric signal given by its half."""
    return _write_out(_hermitian(input, _one(n), dim, norm, "hfft"), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The half of the inverse transform of a real signal (Hermitian symmetric)."""
    return _write_out(_inverse_hermitian(input, _one(n), dim, norm, "ihfft"), out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _write_out(_hermitian(input, s, dim, norm, "hfft2"), out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _write_out(_inverse_hermitian(input, s, dim, norm, "ihfft2"), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _write_out(_hermitian(input, s, dim, norm, "hfftn"), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _write_out(_inverse_hermitian(input, s, dim, norm, "ihfftn"), out)


__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
