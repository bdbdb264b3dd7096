"""``torch.testing.assert_close``: whether two (nested) inputs are close, with torch's checks, tolerances and
messages.

Sequences (not strings) and mappings are compared item by item, then each pair of leaves by the first kind that
takes it: None, booleans (Python's or numpy's), numbers (Python's or numpy's: int, float, complex) and
tensor-likes (two ``engine.Tensor``s, or two objects of related types ``engine.as_tensor`` takes, such as numpy
arrays). A tensor-like pair checks shape, quantization, layout, stride (``check_stride``), device and dtype, then
compares the values with ``isclose``'s rule ``|actual - expected| <= atol + rtol * |expected|`` in the
inputs' dtype. The values are compared on the CPU (torch compares them on the device); dataclasses are not
descended into (torch compares their fields).
"""
import cmath
import collections.abc
import contextlib
import warnings

import numpy as np

from .. import _dtype
from .._layout import strided
from ..quantized_tensor import QuantizedTensor
from ..tensor import Tensor
from .failure import Failure
from .messages import scalar_mismatch_msg, tensor_mismatch_msg
from .tolerances import default_tolerances, get_tolerances

__all__ = ["assert_close", "assert_allclose"]

_NUMBER_DTYPES = {int: _dtype.int64, float: _dtype.float64, complex: _dtype.complex128}
_UNSIGNED_WIDE = {_dtype.uint16, _dtype.uint32, _dtype.uint64}


class _Unsupported(Exception):
    """This kind of pair does not take these inputs: the next kind is tried."""


def _fail(msg, id, type=AssertionError):
    raise Failure(type, msg, id)


def _none_pair(actual, expected, id, **_):
    if actual is not None and expected is not None:
        raise _Unsupported

    def compare():
        if not (actual is None and expected is None):
            _fail(f"None mismatch: {actual} is not {expected}", id)
    return compare


def _bool_pair(actual, expected, id, **_):
    if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)

    def compare():
        if actual is not expected:
            _fail(f"Booleans mismatch: {actual} is not {expected}", id)
    return compare


def _number_pair(actual, expected, id, rtol, atol, equal_nan, check_dtype, **_):
    if not all(isinstance(x, (int, float, complex, np.number)) and not isinstance(x, bool) for x in
               (actual, expected)):
        raise _Unsupported
    actual, expected = (x.item() if isinstance(x, np.number) else x for x in (actual, expected))
    rtol, atol = get_tolerances(*(_NUMBER_DTYPES[type(x)] for x in (actual, expected)), rtol=rtol, atol=atol, id=id)

    def compare():
        if check_dtype and type(actual) is not type(expected):
            _fail(f"The (d)types do not match: {type(actual)} != {type(expected)}.", id)
        if actual == expected or (equal_nan and cmath.isnan(actual) and cmath.isnan(expected)):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
            return
        _fail(scalar_mismatch_msg(actual, expected, rtol, atol), id)
    return compare


def _as_tensor(tensor_like):
    from .. import as_tensor

    if isinstance(tensor_like, (Tensor, QuantizedTensor)):
        return tensor_like
    try:
        return as_tensor(tensor_like)
    except Exception:
        raise _Unsupported from None


def _kind(tensor_like):
    """The type the pair checks: a quantized tensor counts as a Tensor (one class in torch)."""
    return Tensor if isinstance(tensor_like, QuantizedTensor) else type(tensor_like)


def _tensor_pair(actual, expected, id, allow_subclasses, rtol, atol, equal_nan, check_device, check_dtype,
                 check_layout, check_stride, **_):
    kinds = _kind(actual), _kind(expected)
    if not (issubclass(kinds[0], kinds[1]) or issubclass(kinds[1], kinds[0])):
        raise _Unsupported
    if not allow_subclasses and kinds[0] is not kinds[1]:
        raise _Unsupported
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    rtol, atol = get_tolerances(actual.dtype, expected.dtype, rtol=rtol, atol=atol, id=id)

    def compare():
        _compare_attributes(actual, expected, id, check_device, check_dtype, check_layout, check_stride)
        _compare_values(*_equalized(actual, expected), rtol, atol, equal_nan, id)
    return compare


def _layout(t):
    return getattr(t, "layout", strided)  # a quantized tensor has none: it is strided


def _compare_attributes(actual, expected, id, check_device, check_dtype, check_layout, check_stride):
    """Shape and quantization always; layout, stride, device and dtype as the flags say."""
    def mismatch(name, a, e):
        _fail(f"The values for attribute '{name}' do not match: {a} != {e}.", id)

    if actual.shape != expected.shape:
        mismatch("shape", actual.shape, expected.shape)
    if actual.is_quantized != expected.is_quantized:
        mismatch("is_quantized", actual.is_quantized, expected.is_quantized)
    elif actual.is_quantized and actual.qscheme() != expected.qscheme():
        mismatch("qscheme()", actual.qscheme(), expected.qscheme())
    if _layout(actual) != _layout(expected):
        if check_layout:
            mismatch("layout", _layout(actual), _layout(expected))
    elif _layout(actual) == strided and check_stride and not actual.is_quantized \
            and actual.stride() != expected.stride():
        mismatch("stride()", actual.stride(), expected.stride())
    if check_device and actual.device != expected.device:
        mismatch("device", actual.device, expected.device)
    if check_dtype and actual.dtype != expected.dtype:
        mismatch("dtype", actual.dtype, expected.dtype)


def _equalized(actual, expected):
    """Both on the CPU, in their promoted dtype (uint16/32/64 counting as int64), strided where their layouts
    differ, as torch equalizes them before comparing values."""
    from .. import promote_types

    actual, expected = (t.detach().cpu() for t in (actual, expected))
    if actual.dtype != expected.dtype and not actual.is_quantized:
        a, e = (_dtype.int64 if t.dtype in _UNSIGNED_WIDE else t.dtype for t in (actual, expected))
        common = promote_types(a, e)
        actual, expected = actual.to(common), expected.to(common)
    if _layout(actual) != _layout(expected):
        actual, expected = (t.to_dense() if _layout(t) != strided else t for t in (actual, expected))
    return actual, expected


def _isclose(actual, expected, rtol, atol, equal_nan):
    """torch.isclose on numpy arrays of one dtype: floating ones in that dtype, integers exactly."""
    close = actual == expected
    if equal_nan and (actual.dtype.kind in "fc" or actual.dtype.name == "bfloat16"):
        close |= np.isnan(actual) & np.isnan(expected)
    if (rtol or atol) and actual.dtype != np.bool_:
        with np.errstate(all="ignore"):
            if actual.dtype.kind in "iu":
                actual, expected = actual.astype(np.float64), expected.astype(np.float64)
            error = np.abs(actual - expected)
            close |= np.isfinite(error) & (error <= atol + np.abs(rtol * expected))
    return close


def _item(array):
    return float(array) if array.dtype.name == "bfloat16" else array.item()


def _compare_close(actual, expected, rtol, atol, equal_nan, id, identifier=None):
    """Raise unless the tensors' values are close, the message naming them ``identifier`` (a string, or a
    callable given the default name: "Scalars" for zero dimensions, else "Tensor-likes")."""
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        if tolerance < 0:  # torch.isclose's check, which torch reaches here even for equal values
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {tolerance:g}")
    actual, expected = actual.numpy(), expected.numpy()
    matches = _isclose(actual, expected, rtol, atol, equal_nan)
    if matches.all():
        return
    default = "Scalars" if actual.shape == () else "Tensor-likes"
    name = identifier(default) if callable(identifier) else identifier or default
    if actual.shape == ():
        _fail(scalar_mismatch_msg(_item(actual), _item(expected), rtol, atol, identifier=name), id)
    _fail(tensor_mismatch_msg(actual, expected, matches, rtol, atol, identifier=name), id)


def _compare_sparse_coo(actual, expected, rtol, atol, equal_nan, id):
    """torch's order: sparse dimensions, number of specified values, indices (exactly), then values."""
    if actual.sparse_dim() != expected.sparse_dim():
        _fail("The number of sparse dimensions in sparse COO tensors does not match: "
              f"{actual.sparse_dim()} != {expected.sparse_dim()}", id)
    if actual._nnz() != expected._nnz():
        _fail(f"The number of specified values in sparse COO tensors does not match: {actual._nnz()} != "
              f"{expected._nnz()}", id)
    _compare_close(actual._indices(), expected._indices(), 0, 0, False, id, "Sparse COO indices")
    _compare_close(actual._values(), expected._values(), rtol, atol, equal_nan, id, "Sparse COO values")


_COMPRESSED = {"sparse_csr": ("CSR", "crow_indices", "col_indices"), "sparse_csc": ("CSC", "ccol_indices",
               "row_indices"), "sparse_bsr": ("BSR", "crow_indices", "col_indices"),
               "sparse_bsc": ("BSC", "ccol_indices", "row_indices")}


def _compare_sparse_compressed(actual, expected, rtol, atol, equal_nan, id):
    """torch's order: number of specified values, compressed then plain indices (exactly), then values."""
    from .. import promote_types

    form, compressed, plain = _COMPRESSED[str(actual.layout).rpartition(".")[2]]
    if actual._nnz() != expected._nnz():
        _fail(f"The number of specified values in sparse {form} tensors does not match: {actual._nnz()} != "
              f"{expected._nnz()}", id)
    a_compressed, e_compressed = getattr(actual, compressed)(), getattr(expected, compressed)()
    index_dtype = promote_types(a_compressed.dtype, e_compressed.dtype)
    for method in (compressed, plain):
        _compare_close(getattr(actual, method)().to(index_dtype), getattr(expected, method)().to(index_dtype), 0, 0,
                       False, id, f"Sparse {form} {method}")
    _compare_close(actual.values(), expected.values(), rtol, atol, equal_nan, id, f"Sparse {form} values")


def _compare_values(actual, expected, rtol, atol, equal_nan, id):
    """The values compared as torch compares them for the tensors' kind (quantized: dequantized; sparse: their
    structure exactly, the specified values closely; else every element)."""
    layout = str(_layout(actual)).rpartition(".")[2]
    if actual.is_quantized:
        _compare_close(actual.dequantize(), expected.dequantize(), rtol, atol, equal_nan, id,
                       lambda default: f"Quantized {default.lower()}")
    elif layout == "sparse_coo":
        _compare_sparse_coo(actual, expected, rtol, atol, equal_nan, id)
    elif layout in _COMPRESSED:
        _compare_sparse_compressed(actual, expected, rtol, atol, equal_nan, id)
    else:
        _compare_close(actual, expected, rtol, atol, equal_nan, id)


_PAIRS = (_none_pair, _bool_pair, _number_pair, _tensor_pair)


def _originate(actual, expected, id, options):
    """The comparisons (closures) for the leaves of ``actual`` and ``expected``, recursing through containers."""
    sequence = collections.abc.Sequence
    if isinstance(actual, sequence) and isinstance(expected, sequence) and not isinstance(actual, str) \
            and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != {len(expected)}",
                          id)
        return [c for i in range(len(actual)) for c in _originate(actual[i], expected[i], (*id, i), options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise Failure(AssertionError, f"The keys of the mappings do not match:\nMissing keys in the actual "
                          f"mapping: {sorted(expected_keys - actual_keys)}\nAdditional keys in the actual mapping: "
                          f"{sorted(actual_keys - expected_keys)}", id)
        keys = actual_keys
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        return [c for key in keys for c in _originate(actual[key], expected[key], (*id, key), options)]
    for pair in _PAIRS:
        try:
            return [pair(actual, expected, id, **options)]
        except _Unsupported:
            continue
    raise Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                  f"{type(expected)}.", id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False,
                 check_device=True, check_dtype=True, check_layout=True, check_stride=False, msg=None):
    """Raise unless ``actual`` and ``expected`` are close (see the module's docstring).

    ``rtol`` and ``atol`` are given together or not at all; omitted, they are torch's per dtype (float16 1e-3 and
    1e-5, bfloat16 1.6e-2 and 1e-5, float32 1.3e-6 and 1e-5, float64 1e-7 and 1e-7, else 0 and 0), the larger of
    the two inputs'. ``msg`` replaces the message (a string) or rewrites it (a callable). Raises AssertionError
    for a mismatch, TypeError for inputs no comparison takes, ValueError for one tolerance without the other.
    """
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride)
    try:
        comparisons = _originate(actual, expected, (), options)
    except Failure as failure:
        raise failure.to_error() from None
    for compare in comparisons:
        try:
            compare()
        except Failure as failure:
            raise failure.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated (``torch.testing.assert_allclose``): ``assert_close`` with dtypes promoted instead of checked,
    NaNs equal by default and the older default tolerances (float16 1e-3/1e-3, float32 1e-4/1e-5, float64
    1e-5/1e-8)."""
    from .. import tensor as make

    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = make(actual)
    if not isinstance(expected, Tensor):
        expected = make(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = default_tolerances(actual.dtype, expected.dtype, dtype_precisions={
            _dtype.float16: (1e-3, 1e-3), _dtype.float32: (1e-4, 1e-5), _dtype.float64: (1e-5, 1e-8)})
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 check_stride=False, msg=msg or None)
