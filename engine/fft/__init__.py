"""``engine.fft``: torch.fft's discrete Fourier transforms, their frequencies and shifts.

Transforms take ``n`` / ``s`` (signal sizes: crop or zero-pad), ``dim`` and ``norm`` ("backward": the forward
transform unscaled and the inverse scaled by 1/n; "ortho": both by 1/sqrt(n); "forward": the reverse of
"backward"), as torch's. A float32 input gives complex64 results, float64 complex128; integer and bool inputs
compute in the default float type; float16 and bfloat16 are refused as torch's CPU refuses them. Every transform
is differentiable (see ``_kernels``). ``hfft*`` and ``ihfft*`` are ``irfft*`` of the conjugate and the
conjugate of ``rfft*``, under the swapped norm. Results have torch's memory layout (``_result_layout``), and the
arguments are checked in torch's order (the 1-d transforms check the dtype before the dim, and ``n=-1`` is no
default for them), ``out=`` of the kind torch demands.
"""
from .. import _dtype
from ..ops.complex_views import conj
from ..ops.elementwise import _write_out
from ._frequencies import fftfreq, fftshift, ifftshift, rfftfreq
from ._kernels import FFTC2C, FFTC2R, FFTR2C
from ._result_layout import result_order
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


def _plan(x, s, dim, half_input=False, check_input_sizes=True):
    """(axes, sizes) of an n-d transform: ``dim`` (all dims, or the last ``len(s)`` when ``s`` is given, by
    default) and ``s`` (each -1 or missing: the input's size, which must be positive where
    ``check_input_sizes``; the last of a half-spectrum input's: the real signal's ``2 * (m - 1)``)."""
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
    given = [-1] * len(axes) if s is None else [int(n) for n in s]
    sizes = [x.shape[a] if n == -1 else n for a, n in zip(axes, given)]
    if check_input_sizes:
        _check_sizes(sizes)
    if half_input and axes and given[-1] == -1:
        sizes[-1] = 2 * (sizes[-1] - 1)
    _check_sizes(sizes)
    return axes, sizes


def _check_sizes(sizes):
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")


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
        raise RuntimeError(f"{_n_dim_name(name)} must transform at least one axis")


def _n_dim_name(name):
    """The name torch's n-d kernels give the 2-d transforms and themselves in messages (``fft2`` -> ``fftn``)."""
    return name[:-1] + "n" if name.endswith("2") else name


def _check_out(out, name, real):
    """torch's refusal of an ``out`` of the wrong kind: a real transform's must be floating, another's complex."""
    if out is None or (out.dtype.is_floating_point if real else out.dtype.is_complex):
        return
    kind = "floating point" if real else "complex"
    raise RuntimeError(f"{name} expects a {kind} output tensor, but got {out.dtype.title}")


def _layout(kind, input, axes, sizes, promoted):
    """The order of torch's result's dims in memory (``_result_layout``)."""
    return result_order(kind, input.shape, input.stride(), axes, sizes, promoted)


@autocast_mode.float32("cpu")  # torch lists every fft_* op for CPU autocast
def _c2c(input, s, dim, norm, forward, name, out=None):
    """fftn or ifftn of ``input`` (a real one made complex; a real signal's 1-d transform laid out as torch's
    real-to-complex kernel lays out its full spectrum)."""
    axes, sizes = _plan(input, s, dim)
    x = _complex(input, name)
    norm = _norm(norm)
    _check_out(out, "fftn" if name in ("fft2", "ifft2", "ifftn") else name, real=False)
    if x is not input and name in ("fft", "ifft"):
        order = _layout("r2c_full", input, axes, sizes, not input.dtype.is_floating_point)
    else:
        order = _layout("c2c", input, axes, sizes, x is not input)
    return FFTC2C(axes, sizes, norm, forward, order)(x)


@autocast_mode.float32("cpu")  # torch lists every fft_* op for CPU autocast
def _r2c(input, s, dim, norm, name, out=None, inverse=False):
    """rfftn of ``input`` (``inverse``: ihfftn's, the conjugate under the swapped norm): a complex one refused
    first (after the dims by ihfft2 and ihfftn), then the dims checked, then a half one refused (torch's order)."""
    if input.dtype.is_complex and name not in ("ihfft2", "ihfftn"):
        _floating(input, name, real_only=True)
    axes, sizes = _plan(input, s, dim)
    _at_least_one(axes, name)
    if input.dtype.is_complex:  # ihfft2 and ihfftn: torch refuses it after reading the norm
        _norm(norm)
    x = _floating(input, name, real_only=True)
    norm = _norm(norm)
    _check_out(out, _n_dim_name(name), real=False)
    order = _layout("ihfftn" if inverse else "r2c", input, axes, sizes, x is not input)
    if inverse:
        return conj(FFTR2C(axes, sizes, _SWAPPED[norm], order)(x))
    return FFTR2C(axes, sizes, norm, order)(x)


@autocast_mode.float32("cpu")  # torch lists every fft_* op for CPU autocast
def _c2r(input, s, dim, norm, name, out=None, hermitian=False):
    """irfftn of ``input`` (``hermitian``: hfftn's, of its conjugate under the swapped norm); the dims are
    checked before the dtype, as by torch."""
    axes, sizes = _plan(input, s, dim, half_input=True, check_input_sizes=name not in ("irfft", "hfft"))
    _at_least_one(axes, name)
    x = _complex(input, name)
    norm = _norm(norm)
    _check_out(out, _n_dim_name(name), real=True)
    order = _layout("c2r", input, axes, sizes, x is not input)
    if hermitian:
        return FFTC2R(axes, sizes, _SWAPPED[norm], order)(conj(x))
    return FFTC2R(axes, sizes, norm, order)(x)


def _one(input, n, dim, name, out, real_out=None):
    """``(n,)`` for the n-d planning of a 1-d transform, checked in torch's order: a real-to-complex or
    complex-to-real transform's ``out`` (``real_out``: whether it must be real) and the dtype first, then the dim,
    then ``n`` (which has no ``-1`` default here)."""
    if real_out is not None:
        if real_out is False and input.dtype.is_complex:
            _floating(input, name, real_only=True)
        _check_out(out, name, real_out)
    _floating(input, name)
    _wrap(dim, input.ndim)
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return None if n is None else (n,)


def _into(result, out, kernel, exact=False):
    """``result`` into ``out`` (when given), refused as torch's ``kernel`` refuses an ``out`` autograd would
    record; ``exact``: of the result's very dtype, as torch's conjugating copy into ``out`` demands (``ifft`` and
    ``ihfft`` of a real signal)."""
    if exact and out is not None and out.dtype.is_complex and out.dtype != result.dtype:
        raise RuntimeError(f"Found dtype {out.dtype.title} but expected {result.dtype.title}")
    return _write_out(result, out, kernel)


@autocast_mode.float32("cpu")  # before _one's dtype check, as torch casts before its op
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-d discrete Fourier transform along ``dim``."""
    real = not input.dtype.is_complex
    n = _one(input, n, dim, "fft", out, real_out=False if real else None)
    return _into(_c2c(input, n, dim, norm, True, "fft", out=out), out, "_fft_r2c" if real else "_fft_c2c")


@autocast_mode.float32("cpu")  # before _one's dtype check, as torch casts before its op
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-d inverse discrete Fourier transform along ``dim``."""
    real = not input.dtype.is_complex
    n = _one(input, n, dim, "ifft", out, real_out=False if real else None)
    return _into(_c2c(input, n, dim, norm, False, "ifft", out=out), out, "_fft_r2c" if real else "_fft_c2c",
                 exact=real)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _into(_c2c(input, s, dim, norm, True, "fft2", out=out), out, "_fft_c2c")


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _into(_c2c(input, s, dim, norm, False, "ifft2", out=out), out, "_fft_c2c")


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-d transform over ``dim`` (all dims, or the last ``len(s)``, by default)."""
    return _into(_c2c(input, s, dim, norm, True, "fftn", out=out), out, "_fft_c2c")


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _into(_c2c(input, s, dim, norm, False, "ifftn", out=out), out, "_fft_c2c")


@autocast_mode.float32("cpu")  # before _one's dtype check, as torch casts before its op
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The half spectrum (``n // 2 + 1`` bins) of a real signal."""
    n = _one(input, n, dim, "rfft", out, real_out=False)
    return _into(_r2c(input, n, dim, norm, "rfft", out=out), out, "_fft_r2c")


@autocast_mode.float32("cpu")  # before _one's dtype check, as torch casts before its op
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real signal (``n`` long, default ``2 * (m - 1)``) of a half spectrum of ``m`` bins."""
    n = _one(input, n, dim, "irfft", out, real_out=True)
    return _into(_c2r(input, n, dim, norm, "irfft", out=out), out, "_fft_c2r")


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _into(_r2c(input, s, dim, norm, "rfft2", out=out), out, "_fft_r2c")


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _into(_c2r(input, s, dim, norm, "irfft2", out=out), out, "_fft_c2r")


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _into(_r2c(input, s, dim, norm, "rfftn", out=out), out, "_fft_r2c")


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _into(_c2r(input, s, dim, norm, "irfftn", out=out), out, "_fft_c2r")


@autocast_mode.float32("cpu")  # before _one's dtype check, as torch casts before its op
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real 1-d spectrum of a Hermitian-symmetric signal given by its half: irfft of the conjugate."""
    n = _one(input, n, dim, "hfft", out, real_out=True)
    return _into(_c2r(input, n, dim, norm, "hfft", out=out, hermitian=True), out, "_fft_c2r")


@autocast_mode.float32("cpu")  # before _one's dtype check, as torch casts before its op
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The half of the inverse transform of a real signal: the conjugate of its rfft under the swapped norm."""
    n = _one(input, n, dim, "ihfft", out, real_out=False)
    return _into(_r2c(input, n, dim, norm, "ihfft", out=out, inverse=True), out, "_fft_r2c", exact=True)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _into(_c2r(input, s, dim, norm, "hfft2", out=out, hermitian=True), out, "_fft_c2r")


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _into(_r2c(input, s, dim, norm, "ihfft2", out=out, inverse=True), out, "_fft_c2c")


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _into(_c2r(input, s, dim, norm, "hfftn", out=out, hermitian=True), out, "_fft_c2r")


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _into(_r2c(input, s, dim, norm, "ihfftn", out=out, inverse=True), out, "_fft_c2c")


__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]
