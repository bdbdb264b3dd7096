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


#: the kernel whose dispatch refuses the half types (so torch raises NotImplementedError naming it) where a function
#: has no "Low precision" check of its own
_KERNELS = {"linalg.det": "lu", "linalg.solve": "lu", "linalg.cholesky": "cholesky", "linalg.qr": "geqrf",
            "linalg.svd": "linalg_svd", "linalg.eigh": "linalg_eigh", "linalg.solve_triangular": "triangular_solve",
            "torch.linalg.ldl_factor_ex": "ldl_factor_kernel"}
#: those whose kernel comes before any dtype check, so refuses integers and bool too (after the shape checks:
#: their callers check the dtype last)
_KERNEL_FIRST = ("linalg.eigh", "linalg.solve_triangular")


def not_implemented(kernel, a):
    """torch's dispatch error: ``kernel`` has no version for ``a``'s dtype on its device."""
    return NotImplementedError(f'"{kernel}_{a.device.type}" not implemented for \'{a.dtype.title}\'')


def check_floating(a, name):
    """float32, float64, complex64 or complex128 input, as LAPACK takes; torch's errors for the others (the
    dispatch's NotImplementedError where its kernel refuses them first)."""
    if a.dtype.is_complex:
        return
    low = a.dtype in (float16, bfloat16)
    if name in _KERNELS and (low or (name in _KERNEL_FIRST and not a.dtype.is_floating_point)):
        raise not_implemented(_KERNELS[name], a)
    if not a.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {a.dtype.title}")
    if low:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {a.dtype.title}")


def check_matrix(a, name, dtype=True):
    """At least 2 dims, then (with ``dtype``) a dtype LAPACK takes."""
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if dtype:
        check_floating(a, name)


def check_square(a, name, dtype=True):
    """``check_matrix``, then square matrices."""
    check_matrix(a, name, dtype)
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
