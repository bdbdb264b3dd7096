"""The tolerances ``assert_close`` uses when none are given: torch's table per dtype, the larger of two inputs'."""
from .. import _dtype
from .failure import Failure

__all__ = ["DTYPE_PRECISIONS", "default_tolerances", "get_tolerances"]

# {dtype: (rtol, atol)}; quantized tensors are compared dequantized, hence float32's. Other dtypes: (0, 0).
DTYPE_PRECISIONS = {
    _dtype.float16: (0.001, 1e-5),
    _dtype.bfloat16: (0.016, 1e-5),
    _dtype.float32: (1.3e-6, 1e-5),
    _dtype.float64: (1e-7, 1e-7),
    _dtype.complex64: (1.3e-6, 1e-5),
    _dtype.complex128: (1e-7, 1e-7),
    **dict.fromkeys((_dtype.qint8, _dtype.quint8, _dtype.qint32), (1.3e-6, 1e-5)),
}


def default_tolerances(*dtypes, dtype_precisions=None):
    """``(rtol, atol)``: the largest of each over the dtypes' entries in ``dtype_precisions`` (torch's table)."""
    precisions = dtype_precisions or DTYPE_PRECISIONS
    rtols, atols = zip(*[precisions.get(dtype, (0.0, 0.0)) for dtype in dtypes])
    return max(rtols), max(atols)


def get_tolerances(*dtypes, rtol, atol, id=()):
    """The tolerances given, or the defaults for ``dtypes`` when both are omitted; giving only one is an error
    (only ``atol=0`` could still pass through ``rtol``'s default and surprise)."""
    if (rtol is None) != (atol is None):
        raise Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                      f"{'rtol' if rtol is None else 'atol'}.", id)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*dtypes)
