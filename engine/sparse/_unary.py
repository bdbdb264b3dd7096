"""Pointwise ops on sparse tensors, as torch defines them: the zero-preserving ones (``f(0) == 0``: ``abs``,
``sqrt``, ``sin``, ``isnan`` ...) act on the stored values of the coalesced tensor (a nonlinear ``f`` of an
entry's duplicates is not the sum of their ``f``), keeping the pattern; the linear ones (``neg``, scaling)
act on the values as stored. The values go through the dense op, so dtypes, errors and gradients are the dense
op's. Ops that would fill the zeros (``exp``, ``cos`` ...) raise torch's error."""
from .. import _dtype
from ..tensor import Tensor
from . import _autograd as F
from ._coo import COOArray
from .tensor import SparseCOOTensor, SparseTensor, run, wrap

ZERO_PRESERVING = ("abs", "absolute", "sqrt", "sin", "sinh", "tan", "tanh", "asin", "asinh", "atan", "atanh",
                   "arcsin", "arcsinh", "arctan", "arctanh", "relu", "floor", "ceil", "round", "trunc", "fix", "sign",
                   "sgn", "signbit", "expm1", "log1p", "erf", "erfinv", "isnan", "isinf", "isposinf", "isneginf",
                   "nan_to_num", "deg2rad", "rad2deg", "frac")
FILLING = ("exp", "exp2", "cos", "cosh", "acos", "arccos", "log", "log2", "log10", "sigmoid", "reciprocal", "rsqrt",
           "logit", "i0")


def map_values(t, fn, coalesce=True):
    """``t`` with ``fn`` applied to its values tensor (of the coalesced tensor when ``coalesce``), the pattern
    kept; differentiable through the values."""
    if isinstance(t._data, COOArray):
        source = t.coalesce() if coalesce else t
        out = fn(run(F.Values(), source))
        data = source._data
        return run(F.FromValues(data.indices, data.shape, data.coalesced), out)
    out = fn(run(F.Values(), t))
    return wrap(t._data.with_values(out._data))  # no gradient path through a compressed tensor's values


def _zero_preserving(name):
    def op(self, *args, **kwargs):
        return map_values(self, lambda v: getattr(v, name)(*args, **kwargs))
    op.__name__ = name
    op.__doc__ = f"``{name}`` of the stored values (coalesced first), as torch's sparse ``{name}``."
    return op


def _filling(name):
    def op(self, *args, **kwargs):
        if not isinstance(self, SparseCOOTensor):
            raise RuntimeError(f"unsupported tensor layout: {self._layout_title()}")
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the 'SparseCPU' "
                                  f"backend. This could be because the operator doesn't exist for this backend, or "
                                  f"was omitted during the selective/custom build process (if using custom build).")
    op.__name__ = name
    op.__doc__ = f"``{name}`` does not keep zeros: torch has no sparse kernel for it."
    return op


def neg(self):
    """``-t``: the values negated as stored (no coalescing); torch refuses bool."""
    if self.dtype is _dtype.bool_:
        raise NotImplementedError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                           "invert a mask, use the `~` or `logical_not()` operator instead.")
    return scale(self, -1)


def scale(self, factor, divide=False):
    """``t * factor`` or ``t / factor`` for a Python number or 0-d dense tensor: the values as stored, the dtype
    promoted as the dense op promotes it (true division gives a float)."""
    if isinstance(factor, Tensor):
        factor = factor.item()
    dtype = _dtype.result_type(self, factor)
    if divide:
        if not (dtype.is_floating_point or dtype.is_complex):
            dtype = _dtype.get_default_dtype()
        factor = 1 / factor
    return run(F.Scale(factor, dtype.np), self)


def pow(self, exponent):
    """``t ** exponent`` for a scalar exponent: zero-preserving unless the exponent is 0 (torch's error)."""
    if isinstance(exponent, (Tensor, SparseTensor)) and exponent.ndim:
        raise RuntimeError("pow: the exponent of a sparse tensor must be a scalar")
    value = exponent.item() if isinstance(exponent, Tensor) else exponent
    if self.dtype is _dtype.bool_:
        raise RuntimeError("result type Long can't be cast to the desired output type Bool")
    if value == 0:
        raise RuntimeError("pow: cannot raise to zeroth power on sparse tensor; it would make the result tensor "
                           "dense")
    return map_values(self, lambda v: v.pow(exponent))


def conj(self):
    """The values conjugated as stored (no coalescing); a real tensor is returned as it is."""
    return map_values(self, lambda v: v.conj(), coalesce=False) if self.dtype.is_complex else self


def angle(self):
    """Compressed tensors take ``angle`` on their values; COO has no kernel for it in torch."""
    if isinstance(self, SparseCOOTensor):
        return _filling("angle")(self)
    return map_values(self, lambda v: v.angle())


def install(cls):
    """Give the sparse tensor class these methods."""
    for name in ZERO_PRESERVING:
        setattr(cls, name, _zero_preserving(name))
    for name in FILLING:
        setattr(cls, name, _filling(name))
    cls.neg = cls.negative = cls.__neg__ = neg
    cls.pow = cls.__pow__ = pow
    cls.square = lambda self: pow(self, 2)
    cls.conj = cls.conj_physical = conj
    cls.angle = angle
    cls.positive = lambda self: self
