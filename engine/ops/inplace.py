"""In-place twins (``x.foo_(...)``) of out-of-place ops, for every ``x.foo`` PyTorch has both of.

Ops whose Function can write into its input (``add_``, ``exp_``, ``clamp_``) do so where they are
defined. The rest are made here from their out-of-place op: the result is computed from ``x``, or,
when autograd records, from a copy of ``x`` that keeps its history (the op may save its inputs for
backward, and ``x`` is about to be overwritten); it must fit ``x`` (PyTorch's shape and dtype
errors); then it is copied into x's memory, which makes it x's new value and x's history, as
PyTorch's in-place ops do. The view ops (``t_``, ``squeeze_``) change ``x`` itself into the view.
"""
import numpy as np

from .. import _dtype, _layout
from .._device import array_module
from ..autograd import grad_mode
from ..storage import _flat_bytes, _view_bytes, storage_layout
from ..tensor import Tensor, register_method
from ._common import shape_arg
from .convert import clone, copy_
from ._common import as_operand, float_dtype, result_dtype
from .elementwise import (_check_fits, _check_into, _check_lerp, add_, addc_operands, addcdiv, addcmul, div, lerp,
                          mul, sub)


def _records(x, args, kwargs):
    """Whether autograd records an op on ``x`` with these arguments."""
    if not grad_mode.is_grad_enabled():
        return False
    operands = (x, *args, *kwargs.values())
    return any(isinstance(t, Tensor) and t.requires_grad for t in operands)


def assign_result(target, result):
    """Write ``result`` into ``target``'s memory as its new value, with PyTorch's errors when it does
    not fit (a broadcast that grows ``target``, a type ``target`` cannot hold)."""
    _check_fits(target, result.shape)
    if not _dtype.can_cast(result.dtype, target.dtype):
        raise RuntimeError(f"result type {result.dtype.title} can't be cast to the desired output type "
                           f"{target.dtype.title}")
    return copy_(target, result)


def inplace_of(op, name=None):
    """``op_(x, ...)``: ``op(x, ...)`` written into ``x``."""
    def op_(self, *args, **kwargs):
        source = clone(self) if _records(self, args, kwargs) else self
        return assign_result(self, op(source, *args, **kwargs))
    op_.__name__ = name or op.__name__ + "_"
    op_.__doc__ = f"In-place ``{op.__name__}``: the result is written into ``self``."
    return op_


# ---- the optimizer family: written with add_ so that they allocate as little as possible ----------
def addcmul_(self, tensor1, tensor2, *, value=1):
    """``self += value * tensor1 * tensor2`` (``torch.Tensor.addcmul_``)."""
    tensor1, tensor2, value = addc_operands("addcmul", self, tensor1, tensor2, value)
    if self.dtype in _HALF:
        return _rounded_once["addcmul"](self, tensor1, tensor2, value=value)
    return add_(self, mul(tensor1, tensor2), alpha=value)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    """``self += value * tensor1 / tensor2`` (``torch.Tensor.addcdiv_``)."""
    tensor1, tensor2, value = addc_operands("addcdiv", self, tensor1, tensor2, value)
    if self.dtype in _HALF:
        return _rounded_once["addcdiv"](self, tensor1, tensor2, value=value)
    return add_(self, div(tensor1, tensor2), alpha=value)


def lerp_(self, end, weight):
    """``self += weight * (end - self)`` (``torch.Tensor.lerp_``)."""
    _check_lerp(self, end, weight)
    if self.dtype in _HALF:
        return _rounded_once["lerp"](self, end, weight)
    return add_(self, mul(weight, sub(end, self)))


_HALF = (_dtype.float16, _dtype.bfloat16)
#: the float16 and bfloat16 in-place forms: the out-of-place op (float32 inside, rounded once, as torch's kernel)
#: written into self
_rounded_once = {op.__name__: inplace_of(op) for op in (addcmul, addcdiv, lerp)}


def float_power_(self, exponent):
    """``self **= exponent`` in float64 (complex128 where an operand is complex): ``self`` must already have
    that type, as PyTorch requires."""
    wide = _dtype.complex128 if result_dtype(self, as_operand(exponent, like=self)).is_complex else _dtype.float64
    if self.dtype is not wide:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.title} but the "
                           f"operation's result requires dtype {wide.title}")
    return _float_power_into(self, exponent)


# ---- view ops that change the tensor itself -----------------------------------------------------
def _become(self, view):
    """Make ``self`` the view ``view`` of its own memory: its array, shape and history."""
    if grad_mode.is_grad_enabled() and self.requires_grad and self.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    self._data = view._data
    if view.grad_fn is not None:
        self.grad_fn, self._output_index = view.grad_fn, view._output_index
    return self


def _view_inplace(view_op, name):
    def op_(self, *args, **kwargs):
        return _become(self, view_op(self, *args, **kwargs))
    op_.__name__ = name
    op_.__doc__ = f"``self`` becomes ``self.{view_op.__name__}(...)`` (in place, as ``torch.Tensor.{name}``)."
    return op_


def resize_(self, *sizes, size=None, memory_format=None):
    """Give ``self`` the shape ``sizes`` (or ``size=``) over its own memory, as torch's: the new geometry is dense
    (row-major, or ``memory_format``) from ``self``'s storage offset, so it reads the storage in memory order, and a
    smaller size keeps the storage (a later larger one finds the old values). Where the storage is too small, a
    larger one is allocated with the old bytes at its start and zeros after (torch leaves them unset); unlike
    torch's, other tensors over the old storage keep it. The same shape without ``memory_format`` changes nothing."""
    shape = tuple(shape_arg(sizes, size, "size"))
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
    if memory_format is _layout.preserve_format:
        raise RuntimeError("Unsupported memory formatPreserve")
    strides = _layout.strides_in_format(shape, memory_format)
    if shape != self._data.shape or memory_format is not None:
        self._data = _resized(self._data, shape, strides)
    self._version_counter[0] += 1
    return self


def _resized(array, shape, strides):
    """An array of ``shape`` and element ``strides`` from ``array``'s first element in its storage, over a grown
    copy of that storage where it is too small."""
    layout = storage_layout(array)
    if layout is None:  # a negative-stride numpy view (torch has none): its values, row-major, as the storage
        array = array.copy()
        layout = array, 0, None
    root, offset, _ = layout
    flat = _flat_bytes(root)
    extent = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    needed = (offset + extent) * array.itemsize
    if needed > flat.size:
        grown = array_module(flat).zeros(needed, np.uint8)
        grown[:flat.size] = flat
        flat = grown
    return _view_bytes(flat, array.dtype, offset, shape, strides)


def resize_as_(self, the_template, memory_format=None):
    """``resize_`` to ``the_template``'s shape; ``preserve_format`` takes the template's memory format."""
    if memory_format is _layout.preserve_format:
        memory_format = _layout.suggested_format(the_template._data)
    return resize_(self, the_template.shape, memory_format=memory_format)


# ---- Python callables, element by element (CPU only and slow, as in PyTorch) --------------------
def _check_python_callable_target(self, name):
    if self.device.type != "cpu":
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def apply_(self, callable):
    """``self[i] = callable(self[i])`` for every element, with Python numbers."""
    _check_python_callable_target(self, "apply_")
    values = np.frompyfunc(callable, 1, 1)(self._data.tolist() if self.ndim == 0 else self._data)
    self._data[...] = np.asarray(values, dtype=object).astype(self._data.dtype)
    self._version_counter[0] += 1
    return self


def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` for every element (``tensor`` broadcasts to self)."""
    _check_python_callable_target(self, "map_")
    other = np.broadcast_to(tensor._data, self._data.shape)
    values = np.frompyfunc(callable, 2, 1)(self._data, other)
    self._data[...] = np.asarray(values, dtype=object).astype(self._data.dtype)
    self._version_counter[0] += 1
    return self


_float_power_into = inplace_of(Tensor.float_power)

register_method(addcmul_, "addcmul_")
register_method(addcdiv_, "addcdiv_")
register_method(lerp_, "lerp_")
register_method(float_power_, "float_power_")
register_method(resize_, "resize_")
register_method(resize_as_, "resize_as_")
register_method(apply_, "apply_")
register_method(map_, "map_")

# aliases of in-place ops defined elsewhere
for _alias, _name in (("absolute_", "abs_"), ("negative_", "neg_"), ("divide_", "div_"),
                      ("true_divide_", "div_"), ("multiply_", "mul_"), ("subtract_", "sub_"),
                      ("fix_", "trunc_"), ("arccos_", "acos_"), ("arcsin_", "asin_"),
                      ("arctan_", "atan_")):
    register_method(getattr(Tensor, _name), _alias)

# in-place twins made from the out-of-place op
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
              "logical_xor", "logical_not", "bitwise_not", "cumsum", "cumprod",
              "nan_to_num", "addmm", "baddbmm", "heaviside", "ldexp", "addmv", "addr",
              "addbmm", "renorm", "put", "polygamma", "i0", "sgn"):
    register_method(inplace_of(getattr(Tensor, _name)), _name + "_")
for _alias, _name in (("greater_", "gt"), ("greater_equal_", "ge"), ("less_", "lt"),
                      ("less_equal_", "le"), ("not_equal_", "ne")):
    register_method(inplace_of(getattr(Tensor, _name), _alias), _alias)


#: the ops among these whose integer operands give the default float type
_FLOAT_RESULTS = ("atan2", "copysign", "xlogy")


def _one_operand(alias, keyword, args, kwargs):
    """The single operand of a binary in-place op, given positionally or by torch's name for it."""
    if len(args) == 1 and not kwargs:
        return args[0]
    if not args and list(kwargs) == [keyword]:
        return kwargs[keyword]
    raise TypeError(f"{alias}() takes exactly one argument '{keyword}' "
                    f"({len(args)} positional, keywords {sorted(kwargs)} given)")


def _cast_checked(name, alias):
    """The in-place twin of binary op ``name`` that refuses, as torch does, a promoted type that cannot go into
    ``self`` before the op's own dtype checks (a bool tensor ``<<=`` 2.5, or ``hypot_`` with a uint8, is a cast
    error, not a missing kernel)."""
    into = inplace_of(getattr(Tensor, name), alias)
    keyword = {"clamp_min": "min", "clamp_max": "max"}.get(name, "other")

    def op_(self, *args, **kwargs):
        other = _one_operand(alias, keyword, args, kwargs)
        dt = result_dtype(self, as_operand(other, like=self))
        if name in _FLOAT_RESULTS and not dt.is_complex:
            dt = float_dtype(dt)
        _check_into(dt, self.dtype)
        return into(self, other)
    op_.__name__, op_.__doc__ = alias, into.__doc__
    return op_


for _name in ("atan2", "fmod", "bitwise_xor", "clamp_min", "clamp_max", "hypot", "copysign", "xlogy", "gcd", "lcm",
              "nextafter", "bitwise_left_shift", "bitwise_right_shift"):
    register_method(_cast_checked(_name, _name + "_"), _name + "_")
for _alias, _name in (("arctan2_", "atan2"), ("__ilshift__", "bitwise_left_shift"),
                      ("__irshift__", "bitwise_right_shift")):
    register_method(_cast_checked(_name, _alias), _alias)

for _name, _view in (("t_", "t"), ("transpose_", "transpose"), ("swapaxes_", "swapaxes"),
                     ("swapdims_", "swapdims"), ("squeeze_", "squeeze"), ("unsqueeze_", "unsqueeze")):
    register_method(_view_inplace(getattr(Tensor, _view), _name), _name)

__all__ = []
