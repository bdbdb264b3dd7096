"""Reductions with PyTorch semantics: sum/mean/var/std, max/min/amax/argmax, prod, logsumexp,
cumulative ops, norms, median, all/any.

``dim`` may be None (all dims), an int or a sequence; ``keepdim`` keeps reduced dims as size 1.
Integer sums and products accumulate in int64 like PyTorch. Full reductions that pick one element
(``max()``, ``amax``, ``median()``) split the gradient evenly among ties, as PyTorch does.
"""
import builtins
import copy
import math
import warnings

import numpy as np

from .. import _dtype
from .._layout import RowMajorResults
from ..amp import autocast_mode
from ..autograd.function import Function
from ..autograd.double_backward import constant, keep_dims, masked, transposed_backward
from ..return_types import named_result
from ..tensor import Tensor, register_method
from ._common import cast, float_dtype, int_arg, wrap_dim, xp_of
from .complex_grad import conj, holomorphic, holomorphic_tensors
from .linalg_out import write_result


# ---- helpers -----------------------------------------------------------------------------------
def _axes(dim, ndim):
    """``dim`` (None, int or sequence; empty means all) as sorted positive axes, checked like torch."""
    if dim is None:
        return tuple(range(ndim))
    dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    if not dims:
        return tuple(range(ndim))
    axes = []
    for d in dims:
        a = wrap_dim(int(d), ndim)
        if a in axes:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
        axes.append(a)
    return tuple(sorted(axes)) if ndim else ()


def _one_axis(dim, ndim):
    """A single reduction dim (0-d tensors accept 0 and -1 and have no axis: None)."""
    axis = wrap_dim(int(dim), ndim)
    return axis if ndim else None


def _keep(g, axes, keepdim):
    """A reduced gradient with its reduced dims restored as size 1 (for broadcasting back)."""
    return g if keepdim or not axes else xp_of(g).expand_dims(g, axes)


def _count(shape, axes):
    return math.prod(shape[a] for a in axes)


def _as_array(xp, y):
    """numpy returns scalars from full reductions; tensors need 0-d arrays."""
    return y if isinstance(y, np.ndarray) or xp is not np else np.asarray(y)


def _int_to_long(d):
    """Sums and products of bool/integer tensors are int64 in PyTorch."""
    return d if d.is_floating_point or d.is_complex else _dtype.int64


def _refuse_complex(input, message):
    """torch's error for an ordering reduction of a complex tensor: ``message``, a format of the dtype's title;
    a message ending in ``)`` (the kernel's name) is torch's NotImplementedError, the others its RuntimeError."""
    if input.dtype.is_complex:
        error = RuntimeError if message.endswith("complex input") else NotImplementedError
        raise error(message.format(input.dtype.title))


def _put_along(out, idx, vals, axis):
    """``out[..., idx, ...] = vals`` along ``axis`` (idx and vals share a shape); CuPy-safe."""
    xp = xp_of(out)
    index = list(xp.ix_(*[xp.arange(n) for n in idx.shape]))
    index[axis] = idx
    out[tuple(index)] = vals
    return out


def _check_nonempty(x, axes, name):
    for a in axes:
        if x.shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


def _check_full_nonempty(x, name):
    if x.numel() == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                           "Specify the reduction dim with the 'dim' argument.")


def return_type(name, fields=("values", "indices")):
    """The ``engine.return_types.<name>`` named tuple class."""
    return named_result(name, fields)


class Compute(RowMajorResults, Function):
    """A non-differentiable op given as a function of arrays (integer/bool results)."""

    uses_inputs = False

    def __init__(self, fn):
        self.fn = fn

    def forward(self, *arrays):
        return self.fn(*arrays)


# ---- sum, mean, nansum, nanmean ----------------------------------------------------------------
class _Reduction(RowMajorResults, Function):
    """A reduction over ``axes``; ``expand`` turns an output gradient back into the input shape."""

    uses_inputs = False

    def __init__(self, axes, keepdim, dtype=None):
        self.axes, self.keepdim = axes, keepdim
        self.dtype = None if dtype is None else dtype.np

    def expand(self, g):
        """A writable, contiguous copy (stride-0 views would slow BLAS and break in-place consumers)."""
        return xp_of(g).broadcast_to(_keep(g, self.axes, self.keepdim), self.shape).copy()

    def expand_tensor(self, g):
        """``expand`` on a gradient tensor, differentiably (``create_graph``)."""
        return keep_dims(g, self.axes, self.keepdim).expand(self.shape)


class Sum(_Reduction):
    def forward(self, x):
        xp = xp_of(x)
        self.shape = x.shape
        x = cast(x, self.dtype)
        if x.dtype == np.float16:
            return _as_array(xp, xp.sum(x, self.axes, np.float32, keepdims=self.keepdim)).astype(np.float16)
        return _as_array(xp, xp.sum(x, self.axes, x.dtype, keepdims=self.keepdim))

    def backward(self, gy):
        return self.expand(gy)

    def backward_tensors(self, gy):
        return self.expand_tensor(gy)


class Mean(_Reduction):
    def forward(self, x):
        xp = xp_of(x)
        self.shape = x.shape
        self.n = _count(x.shape, self.axes)
        x = cast(x, self.dtype)
        acc = np.dtype(np.float32) if x.dtype == np.float16 else x.dtype
        with np.errstate(invalid="ignore", divide="ignore"):
            y = xp.sum(x, self.axes, acc, keepdims=self.keepdim) / acc.type(self.n)
        return _as_array(xp, y).astype(x.dtype, copy=False)

    def backward(self, gy):
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.expand(gy / self.n)

    def backward_tensors(self, gy):
        return self.expand_tensor(gy / self.n)


class NanSum(_Reduction):
    uses_inputs = True

    def forward(self, x):
        xp = xp_of(x)
        self.shape = x.shape
        x = cast(x, self.dtype)
        self.valid = ~xp.isnan(x) if x.dtype.kind == "f" else None
        return _as_array(xp, xp.nansum(x, self.axes, x.dtype, keepdims=self.keepdim))

    def backward(self, gy):
        g = self.expand(gy)
        return g if self.valid is None else g * self.valid

    def backward_tensors(self, gy):
        g = self.expand_tensor(gy)
        return g if self.valid is None else masked(g, self.valid)


class NanMean(NanSum):
    def forward(self, x):
        total = super().forward(x)
        self.n = self.valid.sum(self.axes, keepdims=self.keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (total / self.n).astype(total.dtype, copy=False)

    def backward(self, gy):
        return super().backward(gy / self.n)

    def backward_tensors(self, gy):
        return super().backward_tensors(gy / constant(self.n))


@autocast_mode.float32("cuda")
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim``; bool/integer inputs give int64 unless ``dtype`` is set."""
    dt = _dtype.to_dtype(dtype) if dtype is not None else _int_to_long(input.dtype)
    return Sum(_axes(dim, input.ndim), keepdim, dt)(input)


def _mean_dtype(input, dtype, name):
    """The result dtype of ``name`` (mean or nanmean): ``dtype`` or the input's, which must be floating or complex;
    torch's message names which of the two was not."""
    dt = _dtype.to_dtype(dtype) if dtype is not None else input.dtype
    if not (dt.is_floating_point or dt.is_complex):
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(f"{name}(): could not infer output dtype. {which} dtype must be either a floating "
                           f"point or complex dtype. Got: {dt.title}")
    return dt


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim``; only floating results are defined (as in PyTorch)."""
    return Mean(_axes(dim, input.ndim), keepdim, _mean_dtype(input, dtype, "mean"))(input)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero."""
    _refuse_complex_nansum(input)
    dt = _dtype.to_dtype(dtype) if dtype is not None else _int_to_long(input.dtype)
    return NanSum(_axes(dim, input.ndim), keepdim, dt)(input)


def _refuse_complex_nansum(input):
    """torch's CPU nansum (and nanmean, which sums with it) has no complex kernel."""
    if input.dtype.is_complex and input.device.type == "cpu":
        raise RuntimeError("nansum on CPU does not support complex inputs")


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over the non-NaN elements (of a floating or complex input, whatever ``dtype`` says)."""
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype.title}")
    _refuse_complex_nansum(input)
    return NanMean(_axes(dim, input.ndim), keepdim, _mean_dtype(input, dtype, "nanmean"))(input)


# ---- var, std ----------------------------------------------------------------------------------
class Var(_Reduction):
    """Variance over ``axes`` with ``correction``, whose backward is torch's: with ``dim`` given, 2 (x - mean) / (n -
    correction), the divisor unclamped (negative past n, unlike the forward's); for the full ``var(x)``
    (``full``) with n <= correction, inf times the gradient, NaN where x equals the mean."""

    uses_inputs = True

    def __init__(self, axes, keepdim, correction, full=False):
        super().__init__(axes, keepdim)
        self.correction, self.full = correction, full

    def forward(self, x):
        with np.errstate(over="ignore"):  # a float16 variance past 65504 is inf, as torch's
            return self.variance(x).astype(x.dtype, copy=False)

    def variance(self, x):
        """The variance in x's dtype, or in float32 for float16 and bfloat16 (as torch accumulates them: squares
        of half values overflow float16 early)."""
        xp = xp_of(x)
        self.shape = x.shape
        self.x = x
        x = x.astype(np.float32) if x.dtype in _dtype.HALF_NP else x
        n = _count(x.shape, self.axes)
        self.dof = x.dtype.type(builtins.max(n - self.correction, 0))
        self.grad_dof = x.dtype.type(n - self.correction)  # torch's backward does not clamp at 0
        with np.errstate(invalid="ignore", divide="ignore"):
            self.centered = x - xp.sum(x, self.axes, keepdims=True) / x.dtype.type(n)
            y = (self.centered * self.centered).sum(self.axes, keepdims=self.keepdim) / self.dof
        return _as_array(xp, y)

    def _no_dof(self):
        """torch's factor for a full variance without degrees of freedom (or None where it does not apply)."""
        if not (self.full and self.grad_dof <= 0):
            return None
        return xp_of(self.centered).where(self.centered == 0, np.nan, np.inf).astype(self.centered.dtype)

    def backward(self, gy):
        factor = self._no_dof()
        with np.errstate(invalid="ignore", divide="ignore"):
            if factor is not None:
                return (_keep(gy, self.axes, self.keepdim) * factor).astype(gy.dtype, copy=False)
            return (_keep(gy, self.axes, self.keepdim) * (2 / self.grad_dof) * self.centered).astype(gy.dtype,
                                                                                                   copy=False)

    def backward_tensors(self, gy):
        factor = self._no_dof()
        if factor is not None:
            return keep_dims(gy, self.axes, self.keepdim) * constant(factor.astype(gy._data.dtype))
        x = self.saved_input(0, self.x)
        centered = x - x.mean(dim=self.axes, keepdim=True)
        with np.errstate(divide="ignore"):
            scale = 2 / self.grad_dof
        return keep_dims(gy, self.axes, self.keepdim) * float(scale) * centered


class Std(Var):
    def forward(self, x):
        with np.errstate(over="ignore"):
            self.y = xp_of(x).sqrt(self.variance(x)).astype(x.dtype, copy=False)
        return self.y

    def backward(self, gy):
        xp = xp_of(gy)
        with np.errstate(invalid="ignore", divide="ignore"):
            g = xp.where(self.y == 0, 0, gy / (2 * self.y)).astype(gy.dtype)
        return super().backward(g)

    def backward_tensors(self, gy):
        keep = self.y != 0
        return super().backward_tensors(masked(gy / (2 * masked(self.saved_output(0, self.y), keep, 1.0)), keep))


def _correction(dim, unbiased, correction):
    """Resolve torch's ``var(dim, unbiased, keepdim)`` / ``var(unbiased)`` / ``correction=`` forms."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError("var()/std() got both 'unbiased' and 'correction'; pass only one of them")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


def _var_like(fn_cls, input, dim, unbiased, keepdim, correction, name):
    """``name`` (var, std, var_mean or std_mean, for torch's messages) of ``input`` by ``fn_cls``; a correction
    that leaves no degrees of freedom gives inf or nan with torch's warning."""
    if input.dtype.is_complex:  # of the deviations' magnitudes: a real result (complex_statistics)
        from .complex_statistics import complex_variance
        return complex_variance(input, dim, unbiased, keepdim, correction, root=fn_cls is Std)
    if not input.dtype.is_floating_point:
        prefix = name if name.endswith("_mean") else "std and var"
        raise RuntimeError(f"{prefix} only support floating point and complex dtypes")
    dim, correction = _correction(dim, unbiased, correction)
    axes = _axes(dim, input.ndim)
    if _count(input.shape, axes) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return fn_cls(axes, keepdim, correction, full=dim is None)(input)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance with Bessel's correction by default (``correction=1``)."""
    return _var_like(Var, input, dim, unbiased, keepdim, correction, "var")


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation; the gradient is zero where the result is zero (as PyTorch)."""
    return _var_like(Std, input, dim, unbiased, keepdim, correction, "std")


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over the same dims."""
    d = None if isinstance(dim, bool) else dim
    return (_var_like(Var, input, dim, unbiased, keepdim, correction, "var_mean"), mean(input, d, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over the same dims."""
    d = None if isinstance(dim, bool) else dim
    return (_var_like(Std, input, dim, unbiased, keepdim, correction, "std_mean"), mean(input, d, keepdim))


# ---- max/min family ----------------------------------------------------------------------------
class _EvenTies(_Reduction):
    """A reduction whose value is one of its inputs; the gradient is shared among equal inputs. With
    ``nan_ties`` (torch's full ``max()``, ``min()``, ``median()``), a NaN result shares it among the NaN inputs
    (``amax`` does not: its gradient is then NaN)."""

    uses_inputs = True
    nan_ties = False

    def _share(self, dtype):
        xp = xp_of(self.x)
        y = _keep(self.y, self.axes, self.keepdim)
        hit = self.x == y
        if self.nan_ties and self.x.dtype.kind == "f":
            hit = xp.where(xp.isnan(y), xp.isnan(self.x), hit)
        with np.errstate(divide="ignore", invalid="ignore"):
            return hit / hit.sum(self.axes, keepdims=True).astype(dtype)

    def backward(self, gy):
        return _keep(gy, self.axes, self.keepdim) * self._share(gy.dtype)

    def backward_tensors(self, gy):
        return keep_dims(gy, self.axes, self.keepdim) * constant(self._share(gy._data.dtype))


class AMax(_EvenTies):
    def __init__(self, axes, keepdim, largest=True, nan_ties=False):
        super().__init__(axes, keepdim)
        self.largest, self.nan_ties = largest, nan_ties

    def forward(self, x):
        xp = xp_of(x)
        self.x = x
        fn = xp.amax if self.largest else xp.amin
        self.y = _as_array(xp, fn(x, self.axes, keepdims=self.keepdim))
        return self.y


class MedianAll(_EvenTies):
    """The lower median of all elements (NaN if any element is NaN)."""

    nan_ties = True

    def __init__(self):
        super().__init__(None, False)

    def forward(self, x):
        xp = xp_of(x)
        self.x = x
        flat = x.reshape(-1)
        if flat.size == 0:  # NaN, cast as torch casts it for integer types (numpy's cast agrees)
            with np.errstate(invalid="ignore"):
                self.y = xp.asarray(np.nan).astype(x.dtype)
        else:
            k = (flat.size - 1) // 2
            self.y = xp.partition(flat, k)[k].reshape(())
            if x.dtype.kind == "f" and xp.isnan(flat).any():
                self.y = xp.asarray(np.nan, x.dtype)
        return self.y


class Select(RowMajorResults, Function):
    """Values picked along ``axis`` at computed indices, returned with the indices (int64).

    Subclasses define ``indices(xp, x)`` (keepdims layout). The gradient scatters back to the
    picked positions. With ``squeeze`` the picked axis (of size 1) is dropped from both outputs.
    """

    uses_inputs = False

    def __init__(self, axis, squeeze=False):
        self.axis, self.squeeze = axis, squeeze

    def forward(self, x):
        xp = xp_of(x)
        self.shape = x.shape
        if x.ndim == 0:
            return x.copy(), xp.zeros((), np.int64)
        self.idx = self.indices(xp, x).astype(np.int64, copy=False)
        vals = xp.take_along_axis(x, self.idx, self.axis)
        if self.squeeze:
            return vals.squeeze(self.axis), self.idx.squeeze(self.axis)
        return vals, self.idx

    def backward(self, gv, gi):
        xp = xp_of(gv)
        if len(self.shape) == 0:
            return gv
        g = xp.expand_dims(gv, self.axis) if self.squeeze else gv
        return _put_along(xp.zeros(self.shape, gv.dtype), self.idx, g, self.axis)

    def backward_tensors(self, gv, gi):
        """The scatter to the picked positions, linear in ``gv`` with constant indices (``Transposed``)."""
        return transposed_backward(_PickedValues(copy.copy(self)), gv)


class _PickedValues(RowMajorResults, Function):
    """The values output of a ``Select`` as a linear op of its input with the indices fixed: what the
    differentiable backward of ``max(dim)`` and its kind transposes."""

    uses_inputs = False

    def __init__(self, select):
        self.select = select

    def forward(self, x):
        s = self.select
        if x.ndim == 0:
            return x.copy()
        vals = xp_of(x).take_along_axis(x, s.idx, s.axis)
        return vals.squeeze(s.axis) if s.squeeze else vals

    def backward(self, gv):
        xp = xp_of(gv)
        s = self.select
        if len(s.shape) == 0:
            return gv
        g = xp.expand_dims(gv, s.axis) if s.squeeze else gv
        return _put_along(xp.zeros(s.shape, gv.dtype), s.idx, g, s.axis)

    def backward_tensors(self, gv):
        return transposed_backward(self, gv)


class ArgExtreme(Select):
    def __init__(self, axis, squeeze, largest):
        super().__init__(axis, squeeze)
        self.largest = largest

    def indices(self, xp, x):
        fn = xp.argmax if self.largest else xp.argmin
        return xp.expand_dims(fn(x, axis=self.axis), self.axis)


class MedianDim(Select):
    """Lower median along ``axis`` (stable order for ties; a NaN wins like PyTorch)."""

    def indices(self, xp, x):
        n = x.shape[self.axis]
        order = xp.argsort(x, axis=self.axis, kind="stable")
        idx = xp.take(order, xp.asarray([(n - 1) // 2]), axis=self.axis) if n else order
        if x.dtype.kind == "f" and n:
            nan = xp.isnan(x)
            first_nan = xp.expand_dims(xp.argmax(nan, axis=self.axis), self.axis)
            idx = xp.where(nan.any(axis=self.axis, keepdims=True), first_nan, idx)
        return idx


def _select_dim(fn_cls, input, dim, keepdim, name, **params):
    axis = _one_axis(dim, input.ndim)
    if axis is not None:
        _check_nonempty(input, (axis,), name)
    values, indices = fn_cls(axis, not keepdim, **params)(input)
    return return_type(name)(values, indices)


def _max_min(input, dim, keepdim, other, largest):
    name = "max" if largest else "min"
    if isinstance(dim, Tensor) or other is not None:
        from .elementwise import maximum, minimum
        other = dim if other is None else other
        return maximum(input, other) if largest else minimum(input, other)
    if dim is None:  # torch's emptiness check comes before its kernel's refusal of complex input
        _check_full_nonempty(input, name)
    _refuse_complex(input, f"\"{name}_all\" not implemented for '{{}}'" if dim is None else
                    f"{name}(): does not support complex input")
    if dim is None:
        return AMax(_axes(None, input.ndim), False, largest, nan_ties=True)(input)
    return _select_dim(ArgExtreme, input, dim, keepdim, name, largest=largest)


def _dim_slot(dim_or_other, dim, name):
    """The second argument of max / min: given by keyword, ``dim`` is always a dim (a 0-dim integer tensor too,
    as torch reads it); given positionally, a tensor there is the other operand."""
    if dim is None:
        return dim_or_other
    if dim_or_other is not None:
        raise TypeError(f"{name}() got multiple values for argument 'dim'")
    return int_arg(dim)


def max(input, dim_or_other=None, keepdim=False, *, dim=None, other=None):
    """``max(x)``: the largest value; ``max(x, dim)``: (values, indices); ``max(x, y)``: maximum."""
    return _max_min(input, _dim_slot(dim_or_other, dim, "max"), keepdim, other, True)


def min(input, dim_or_other=None, keepdim=False, *, dim=None, other=None):
    """``min(x)``: the smallest value; ``min(x, dim)``: (values, indices); ``min(x, y)``: minimum."""
    return _max_min(input, _dim_slot(dim_or_other, dim, "min"), keepdim, other, False)


def _amax_amin(input, dim, keepdim, largest):
    name = "amax" if largest else "amin"
    axes = _axes(dim, input.ndim)
    if dim is None or dim == () or dim == []:
        _check_full_nonempty(input, name)
    for d in [dim] if isinstance(dim, (int, np.integer)) else dim or ():  # torch names the dim as given
        if input.ndim and input.shape[wrap_dim(int(d), input.ndim)] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    if input.numel():  # torch's kernel, which refuses complex input, never runs without elements
        _refuse_complex(input, f"\"{name[1:]}_values_cpu\" not implemented for '{{}}'")
    return AMax(axes, keepdim, largest)(input)


def amax(input, dim=(), keepdim=False):
    """Largest values over ``dim`` (all dims by default); ties share the gradient."""
    return _amax_amin(input, dim, keepdim, True)


def amin(input, dim=(), keepdim=False):
    """Smallest values over ``dim`` (all dims by default); ties share the gradient."""
    return _amax_amin(input, dim, keepdim, False)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) in one call, over all elements or one ``dim``."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        d = ()
    else:
        if not isinstance(dim, (int, np.integer)):
            raise TypeError(f"aminmax(): argument 'dim' must be int, not {type(dim).__name__}")
        d = _one_axis(dim, input.ndim)
        if d is not None and input.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
        d = () if d is None else d
    _refuse_complex(input, "\"aminmax_cpu\" not implemented for '{}'")  # after the checks of the dim, as torch
    return return_type("aminmax", ("min", "max"))(amin(input, d, keepdim), amax(input, d, keepdim))


def _arg_extreme(input, dim, keepdim, largest):
    name = "argmax" if largest else "argmin"
    _refuse_complex(input, f"{name}(): does not support complex input")
    if input.dtype is _dtype.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")

    def compute(x):
        xp = xp_of(x)
        if dim is None:
            out = getattr(xp, name)(x.reshape(-1))
            return xp.asarray(out, np.int64).reshape((1,) * x.ndim if keepdim else ())
        if axis is None:
            return xp.zeros((), np.int64)
        out = getattr(xp, name)(x, axis=axis).astype(np.int64)
        return xp.expand_dims(out, axis) if keepdim else out

    if dim is None:
        if input.numel() == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        axis = None
    else:
        axis = _one_axis(dim, input.ndim)
        if axis is not None:
            _check_nonempty(input, (axis,), name)
    return Compute(compute)(input)


def argmax(input, dim=None, keepdim=False):
    """Index of the largest value (over the flattened tensor when ``dim`` is None)."""
    return _arg_extreme(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False):
    """Index of the smallest value (over the flattened tensor when ``dim`` is None)."""
    return _arg_extreme(input, dim, keepdim, False)


def median(input, dim=None, keepdim=False):
    """Lower median: a value for ``median(x)``, (values, indices) with ``dim``."""
    if dim is None:
        if input.numel():  # torch's full median of an empty tensor is its NaN cast to the dtype (complex too)
            refuse_bool(input, "median_cpu")
            _refuse_complex(input, "\"median_cpu\" not implemented for '{}'")
        return MedianAll()(input)
    axis = _one_axis(dim, input.ndim)
    if axis is not None:
        _check_nonempty(input, (axis,), "median")
    refuse_bool(input, "median_out")
    _refuse_complex(input, "\"median_out\" not implemented for '{}'")
    return _select_dim(MedianDim, input, dim, keepdim, "median")


def refuse_bool(input, kernel):
    """torch's NotImplementedError for a median (order statistic) of a bool tensor by ``kernel``."""
    if input.dtype is _dtype.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


# ---- prod, logsumexp ---------------------------------------------------------------------------
class Prod(_Reduction):
    """Product over ``axes`` (``full``: of all elements, as ``prod(x)``). The backward is torch's: result / input
    when the input holds no zero at all, else the product of the other elements of each slice (no division; a
    full product with two or more zeros has a zero gradient), which differ where the input holds inf or NaN."""

    uses_inputs = True

    def __init__(self, axes, keepdim, dtype=None, full=False):
        super().__init__(axes, keepdim, dtype)
        self.full = full

    def forward(self, x):
        xp = xp_of(x)
        self.x = x = cast(x, self.dtype)
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN, as torch's, without a warning
            return _as_array(xp, xp.prod(x, self.axes, x.dtype, keepdims=self.keepdim))

    def backward(self, gy):
        xp = xp_of(gy)
        x = self.x
        if x.ndim == 0:
            return gy
        g = _keep(gy, self.axes, self.keepdim)
        zeros = int((x == 0).sum())
        if zeros == 0:
            with np.errstate(invalid="ignore", divide="ignore"):
                return g * conj(xp.prod(x, self.axes, keepdims=True) / x)
        if self.full and zeros > 1:
            return xp.zeros(x.shape, g.dtype)
        with np.errstate(invalid="ignore"):
            return g * conj(_array_product_of_others(xp, x, self.axes))

    def backward_tensors(self, gy):
        """The product of the others as exclusive running products from both ends (torch's way round zeros:
        no division), differentiable to any order."""
        if not self.axes:  # a 0-d input: the product is the element itself
            return gy
        if self.x.size == 0:
            return constant(xp_of(gy._data).zeros(self.x.shape, gy._data.dtype))
        others = _product_of_others(self.saved_input(0, self.x), self.axes)
        return keep_dims(gy, self.axes, self.keepdim) * (others.conj() if others.is_complex() else others)


@autocast_mode.float32("cpu", "cuda")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over all elements, or over one ``dim``."""
    dt = _dtype.to_dtype(dtype) if dtype is not None else _int_to_long(input.dtype)
    axes = _axes(None, input.ndim) if dim is None else _axes(int(dim), input.ndim)
    return Prod(axes, keepdim and dim is not None, dt, full=dim is None)(input)


class LogSumExp(_Reduction):
    """log(sum(exp(x))) shifted by the max for stability."""

    uses_inputs, uses_output = True, True

    def forward(self, x):
        xp = xp_of(x)
        self.x = x = cast(x, self.dtype)
        if x.size == 0 or builtins.any(x.shape[a] == 0 for a in self.axes):
            m = xp.full(tuple(1 if i in self.axes else n for i, n in enumerate(x.shape)), -np.inf, x.dtype)
        else:
            m = xp.amax(x, self.axes, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0).astype(x.dtype, copy=False)
        with np.errstate(divide="ignore"):
            y = xp.log(xp.sum(xp.exp(x - m), self.axes, keepdims=True)) + m
        self.y = y
        return y if self.keepdim or not self.axes else y.squeeze(self.axes)

    @holomorphic
    def backward(self, gy):
        return _keep(gy, self.axes, self.keepdim) * xp_of(gy).exp(self.x - self.y)

    @holomorphic_tensors
    def backward_tensors(self, gy):
        y = self.y if self.keepdim or not self.axes else self.y.squeeze(self.axes)
        y = keep_dims(self.saved_output(0, y), self.axes, self.keepdim)
        return keep_dims(gy, self.axes, self.keepdim) * (self.saved_input(0, self.x) - y).exp()


@autocast_mode.float32("cuda")
def logsumexp(input, dim, keepdim=False):
    """Numerically stable log of the summed exponentials over ``dim`` (integers -> float)."""
    dtype = input.dtype if input.dtype.is_complex else float_dtype(input.dtype)
    return LogSumExp(_axes(dim, input.ndim), keepdim, dtype)(input)


# ---- all, any, count_nonzero -------------------------------------------------------------------
def _logical_reduce(input, dim, keepdim, name):
    """all/any over ``dim``; unlike the other reductions, torch's all/any over an empty list of dims reduce over
    none (each element's truth)."""
    dim = int_arg(dim)
    no_dims = dim is not None and not isinstance(dim, (int, np.integer)) and len(dim) == 0
    axes = () if no_dims else _axes(dim, input.ndim)
    out_dt = np.uint8 if input.dtype is _dtype.uint8 else np.bool_

    def compute(x):
        xp = xp_of(x)
        return _as_array(xp, getattr(xp, name)(x, axis=axes, keepdims=keepdim)).astype(out_dt)
    return Compute(compute)(input)


def all(input, dim=None, keepdim=False):
    """True where every element over ``dim`` is nonzero (uint8 stays uint8)."""
    return _logical_reduce(input, dim, keepdim, "all")


def any(input, dim=None, keepdim=False):
    """True where some element over ``dim`` is nonzero (uint8 stays uint8)."""
    return _logical_reduce(input, dim, keepdim, "any")


def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim`` (int64)."""
    axes = _axes(dim, input.ndim)

    def compute(x):
        xp = xp_of(x)
        return _as_array(xp, xp.count_nonzero(x, axis=axes)).astype(np.int64)
    return Compute(compute)(input)


def _array_product_of_others(xp, x, axes):
    """``_product_of_others`` on an array: exclusive running products from both ends over the flattened
    ``axes`` (moved last), multiplied, so no element is divided out."""
    last = tuple(range(x.ndim - len(axes), x.ndim))
    moved = xp.moveaxis(x, axes, last)
    flat = moved.reshape(moved.shape[:x.ndim - len(axes)] + (-1,))
    ones = xp.ones(flat.shape[:-1] + (1,), x.dtype)
    front = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], -1), -1)
    back = xp.flip(xp.cumprod(xp.flip(xp.concatenate([flat[..., 1:], ones], -1), -1), -1), -1)
    return xp.moveaxis((front * back).reshape(moved.shape), last, axes)


def _product_of_others(x, axes):
    """For each element of tensor ``x``, the product of the other elements of its slice over ``axes``: the
    reduced axes moved last and flattened, an exclusive running product from the front times one from the
    back."""
    from .shape import cat
    kept = [i for i in range(x.ndim) if i not in axes]
    order = kept + list(axes)
    moved = x.permute(*order)
    lead = tuple(moved.shape[:len(kept)])
    flat = moved.reshape(lead + (-1,))
    ones = constant(xp_of(x._data).ones(lead + (1,), x._data.dtype))
    front = cat([ones, flat[..., :-1]], -1).cumprod(-1)
    back = cat([flat[..., 1:], ones], -1).flip(-1).cumprod(-1).flip(-1)
    return (front * back).reshape(tuple(moved.shape)).permute(*[order.index(i) for i in range(x.ndim)])


# ---- cumulative ops ----------------------------------------------------------------------------
def _reverse_cumsum(xp, g, axis):
    return xp.flip(xp.cumsum(xp.flip(g, axis), axis), axis)


def _reverse_cumsum_tensor(g, axis):
    """``_reverse_cumsum`` on a tensor, with engine ops."""
    return g.flip(axis).cumsum(axis).flip(axis)


class _Cumulative(RowMajorResults, Function):
    """Cumulative op along one axis (0-d inputs are treated as one element). float16 and bfloat16 scans run in
    float32 and round each output once, as torch's do (a float16 running sum rounded at every step drifts)."""

    def __init__(self, axis, dtype):
        self.axis, self.dtype = axis, dtype.np

    def forward(self, x):
        self.shape = x.shape
        x = cast(x, self.dtype).reshape(x.shape or (1,))
        wide = x.astype(np.float32) if x.dtype in _dtype.HALF_NP else x
        y = self.scan(xp_of(wide), wide)
        return y.astype(x.dtype, copy=False).reshape(self.shape)

    def backward(self, gy):
        wide = gy.astype(np.float32) if gy.dtype in _dtype.HALF_NP else gy
        g = self.grad(xp_of(wide), wide.reshape(self.shape or (1,)))
        return g.astype(gy.dtype, copy=False).reshape(self.shape)


class CumSum(_Cumulative):
    uses_inputs = False

    def scan(self, xp, x):
        return xp.cumsum(x, self.axis, x.dtype)

    def grad(self, xp, g):
        return _reverse_cumsum(xp, g, self.axis)

    def backward_tensors(self, gy):
        return _reverse_cumsum_tensor(gy.reshape(self.shape or (1,)), self.axis).reshape(self.shape)


class CumProd(_Cumulative):
    """Cumulative product; the backward is exact around zeros (no division by zero)."""

    def scan(self, xp, x):
        self.x = x
        self.y = xp.cumprod(x, self.axis, x.dtype)
        return self.y

    @holomorphic
    def backward(self, gy):
        # torch's shortcuts for one element, or one along the dim: the gradient itself, also at inf or NaN (where
        # the general formula's division gives NaN)
        if gy.size <= 1 or self.shape[self.axis] == 1:
            return gy
        return super().backward(gy)

    def grad(self, xp, g):
        x, axis = self.x, self.axis
        zero = x == 0
        zeros_so_far = xp.cumsum(zero, axis)
        before_zero = zeros_so_far == 0
        first_zero = zero & (zeros_so_far == 1)
        x_safe = xp.where(before_zero, x, 1)
        g_before = _reverse_cumsum(xp, g * self.y, axis) / x_safe
        y_skip = xp.cumprod(xp.where(first_zero, 1, x), axis)
        g_at_zero = _reverse_cumsum(xp, g * y_skip, axis)
        return xp.where(before_zero, g_before, xp.where(first_zero, g_at_zero, 0))

    @holomorphic_tensors
    def backward_tensors(self, gy):
        """Without zeros, the reverse running sum of gy * y over x. With zeros, the gradient past a zero is 0
        in value but not in its derivative, so it is built without division, as torch's differentiable form:
        for each position k, gy[k:] times the products of the elements after k, summed, times the product of
        those before k (n slices: quadratic in the scanned length)."""
        axis, xa = self.axis, self.x
        x = self.saved_input(0, xa).reshape(xa.shape)
        g = gy.reshape(xa.shape)
        if not (xa == 0).any():
            y = self.saved_output(0, self.y.reshape(self.shape)).reshape(xa.shape)
            return (_reverse_cumsum_tensor(g * y, axis) / x).reshape(self.shape)
        from .shape import cat
        n = xa.shape[axis]

        def part(t, start, stop=None):
            return t[(slice(None),) * axis + (slice(start, stop),)]
        ones = constant(xp_of(xa).ones(xa.shape[:axis] + (1,) + xa.shape[axis + 1:], xa.dtype))
        before = cat([ones, part(x, 0, n - 1)], axis).cumprod(axis)
        columns = []
        for k in range(n):
            after = cat([ones, part(x, k + 1).cumprod(axis)], axis) if k + 1 < n else ones
            columns.append((part(g, k) * after).sum(axis, keepdim=True))
        return (cat(columns, axis) * before).reshape(self.shape)


def _scan_dtype(name, input, dtype):
    """The dtype a running sum or product accumulates in: ``dtype``, which torch refuses to be bool, or int64 for
    bool/integer inputs."""
    if dtype is None:
        return _int_to_long(input.dtype)
    dt = _dtype.to_dtype(dtype)
    if dt is _dtype.bool_:
        raise NotImplementedError(f"\"{name}_out_{input.device.type}\" not implemented for 'Bool'")
    return dt


@autocast_mode.float32("cuda")
def cumsum(input, dim, *, dtype=None):
    """Running sum along ``dim`` (bool/integers accumulate in int64)."""
    dt = _scan_dtype("cumsum", input, dtype)
    return CumSum(_one_axis(dim, input.ndim) or 0, dt)(input)


@autocast_mode.float32("cuda")
def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim`` (bool/integers accumulate in int64)."""
    dt = _scan_dtype("cumprod", input, dtype)
    return CumProd(_one_axis(dim, input.ndim) or 0, dt)(input)


# ---- norms -------------------------------------------------------------------------------------
class VectorNorm(_Reduction):
    """The ``ord``-norm of the elements over ``axes`` (``ord`` any float, inf, -inf or 0)."""

    uses_inputs, uses_output = True, True

    def __init__(self, ord, axes, keepdim, dtype):
        super().__init__(axes, keepdim, dtype)
        self.ord = float(ord)

    def forward(self, x):
        xp = xp_of(x)
        self.x = x = cast(x, self.dtype)
        wide = x.astype(np.float32) if x.dtype == np.float16 else x  # torch accumulates float16 in float32
        a, p, axes, keep = xp.abs(wide), self.ord, self.axes, self.keepdim
        if p == math.inf:
            y = xp.amax(a, axes, keepdims=keep)
        elif p == -math.inf:
            y = xp.amin(a, axes, keepdims=keep)
        elif p == 0:
            y = (a != 0).sum(axes, keepdims=keep).astype(x.dtype)
        elif p == 1:
            y = a.sum(axes, keepdims=keep)
        elif p == 2:
            y = xp.sqrt((wide * wide).sum(axes, keepdims=keep))
        else:
            with np.errstate(divide="ignore", over="ignore"):  # 0 ** p for p < 0: inf, the norm 0
                y = (a ** p).sum(axes, keepdims=keep) ** (1 / p)
        self.y = _as_array(xp, y).astype(x.dtype, copy=False)
        return self.y

    def backward(self, gy):
        """torch's formulas case by case, so that inf and NaN inputs give its gradients: the infinity norms send
        the gradient, shared, to the elements equal to the norm in magnitude or NaN; p < 1 drops the zero
        elements; the others drop the slices whose norm is zero."""
        xp = xp_of(gy)
        x, p = self.x, self.ord
        g, y = _keep(gy, self.axes, self.keepdim), _keep(self.y, self.axes, self.keepdim)
        if p == 0:
            return xp.zeros_like(x)
        sign = xp.where(xp.isnan(x), 0, xp.sign(x))  # torch's sgn: 0 at NaN
        if p == 1:
            return g * sign
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if p in (math.inf, -math.inf):
                a = xp.abs(x)
                hit = (a == y) | xp.isnan(a)
                return sign * (g / hit.sum(self.axes, keepdims=True).astype(g.dtype) * hit)
            if p < 1:
                return sign * xp.where(x == 0, 0, xp.abs(x) ** (p - 1)) * g * y ** (1 - p)
            if p == 2:
                scaled = x
            else:
                scaled = sign * xp.abs(x) ** (p - 1) if p < 2 else x * xp.abs(x) ** (p - 2)
            return scaled * xp.where(y == 0, 0, g / y ** (p - 1))

    def backward_tensors(self, gy):
        xp = xp_of(gy._data)
        x, p = self.x, self.ord
        g, y = keep_dims(gy, self.axes, self.keepdim), _keep(self.y, self.axes, self.keepdim)
        if p == 0:
            return constant(xp.zeros_like(x))
        if p in (math.inf, -math.inf):
            hit = xp.abs(x) == y
            return g * constant(xp.sign(x) * hit / hit.sum(self.axes, keepdims=True))
        if p == 1:
            return g * constant(xp.sign(x))
        keep = ~((y == 0) | (x == 0))
        xt = self.saved_input(0, x)
        yt = masked(keep_dims(self.saved_output(0, self.y), self.axes, self.keepdim), y != 0, 1.0)
        scale = xt / yt if p == 2 else xt * xt.abs() ** (p - 2) / yt ** (p - 1)
        return masked(g * masked(scale, keep), keep)


@autocast_mode.float32("cuda")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """``torch.linalg.vector_norm``: the ``ord``-norm over ``dim`` (all elements by default)."""
    if x.dtype.is_complex:  # the norm of the magnitudes: abs's gradient carries it back to x
        real_dtype = None if dtype is None else _dtype.to_dtype(dtype).to_real()
        return vector_norm(x.abs(), ord, dim, keepdim, dtype=real_dtype)
    dt = _dtype.to_dtype(dtype) if dtype is not None else x.dtype
    if not x.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {x.dtype.title}")
    if dt.is_complex:
        raise RuntimeError(f"linalg.vector_norm: dtype should be real for real inputs, but got {dt.title}")
    if _dtype.promote_types(x.dtype, dt) is not dt:
        raise RuntimeError(f"linalg.vector_norm: the dtype of the input ({x.dtype.title}) should be convertible "
                           f"without narrowing to the specified dtype ({dt.title})")
    axes = _axes(dim, x.ndim)
    if (float(ord) < 0 or ord == math.inf) and x.numel() == 0:
        dims = [] if dim is None else [dim] if isinstance(dim, (int, np.integer)) else list(dim)
        if not dims:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {float(ord):g} norm on an empty tensor "
                               "because the operation does not have an identity")
        for d in dims:  # torch names the first empty dim as given (and leaves out a space)
            if x.shape[wrap_dim(int(d), x.ndim)] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {float(ord):g} norm on the dimension "
                                   f"{d}because this dimension is empty and the operation does not have an identity")
    return VectorNorm(ord, axes, keepdim, dt)(x)


@autocast_mode.float32("cuda")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """``torch.norm``: vector p-norms over ``dim``; 'fro' is the 2-norm of the selected dims, 'nuc' the nuclear
    norm over two dims (``linalg.matrix_norm``; all dims by default, which it refuses unless there are two)."""
    if p == "nuc":
        from .. import linalg
        dims = tuple(range(input.ndim)) if dim is None else (dim,) if isinstance(dim, (int, np.integer)) else dim
        result = linalg.matrix_norm(input, "nuc", tuple(dims), keepdim, dtype=dtype)
        return write_result(result, out, exact=True)
    if isinstance(p, str):
        if p != "fro":
            raise RuntimeError(f"norm(): p='{p}' is not supported (only 'fro' and numeric p)")
        if dim is not None and not isinstance(dim, (int, np.integer)) and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
        p = 2
    return write_result(vector_norm(input, p, dim, keepdim, dtype=dtype), out, exact=True)


# ---- Tensor methods ----------------------------------------------------------------------------
for _fn in (sum, mean, nansum, nanmean, var, std, max, min, amax, amin, aminmax, argmax, argmin, median,
            prod, logsumexp, all, any, count_nonzero, cumsum, cumprod, norm):
    register_method(_fn)


__all__ = ["sum", "mean", "nansum", "nanmean", "var", "std", "var_mean", "std_mean", "max", "min",
           "amax", "amin", "aminmax", "argmax", "argmin", "median", "prod", "logsumexp", "all", "any",
           "count_nonzero", "cumsum", "cumprod", "norm"]
