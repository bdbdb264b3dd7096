"""What every ``torch.linalg`` function checks first, with torch's messages: ``LinAlgError`` (the error of a
factorisation that cannot complete: a singular or non-positive-definite input), the floating-or-complex dtype
check, the square-matrix check, the one line that reports a failure in the first failing matrix of a batch, and
``adjoint``, the conjugate transpose of arrays that the complex forms of the gradients take where the real ones
transpose."""
import numpy as np

from .._device import array_module
from .._dtype import float16, bfloat16


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a numerical failure of a linear-algebra routine (a RuntimeError, as torch's)."""


def check_floating(a, name):
    """float32, float64, complex64 or complex128 input, as LAPACK takes; torch's messages for the others."""
    if a.dtype.is_complex:
        return
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {a.dtype.title}")
    if a.dtype in (float16, bfloat16):
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {a.dtype.title}")


def check_matrix(a, name):
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    check_floating(a, name)


def check_square(a, name):
    check_matrix(a, name)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")


def raise_on_info(info, name, message):
    """LinAlgError for the first nonzero entry of ``info`` (a batch of LAPACK status codes):
    ``message(code)`` says what went wrong; a batch names its element as torch does."""
    flat = np.asarray(info.get() if hasattr(info, "get") else info).reshape(-1)
    failed = np.flatnonzero(flat)
    if not failed.size:
        return
    first = int(failed[0])
    where = f"(Batch element {first}): " if np.ndim(info) else ""
    raise LinAlgError(f"{name}: {where}{message(int(flat[first]))}")


def adjoint(x):
    """The conjugate transpose of the last two dims of an array (the transpose of a real one)."""
    x = x.swapaxes(-1, -2)
    return x.conj() if x.dtype.kind == "c" else x


def check_gauge(phases, name, vectors, ending):
    """torch's error where a loss depends on the phases of complex eigen- or singular vectors (each fixed only up
    to e^(i phi)): ``phases``, the imaginary diagonal of V^H gV (plus U^H gU's for the SVD), is not zero, read
    with torch's tolerance."""
    xp = array_module(phases)
    if not bool(xp.allclose(phases, 0, rtol=1e-2, atol=1e-2)):
        raise RuntimeError(f"{name}: The {vectors} in the complex case are specified up to multiplication by "
                           f"e^{{i phi}}. The specified loss function depends on this {ending}")
