"""Small helpers shared by the op modules: operand handling, dtypes, dims."""
import numbers
import operator

import numpy as np

from .. import _dtype, backends
from .._device import array_module
from ..tensor import Tensor, _new, _wrap_dim


def xp_of(*arrays):
    """The array module of the first array among ``arrays`` (numpy for scalars)."""
    for a in arrays:
        if a is not None and not isinstance(a, numbers.Number):
            return array_module(a)
    return np


def masked_grad(gy, keep):
    """``gy`` where the boolean array ``keep`` is True, else 0, even where gy is infinite or NaN: torch's
    backward formulas mask with ``where`` / ``masked_fill``, where a product with the mask gives NaN."""
    return backends.kernels(gy, "pointwise").masked_grad(gy, keep)


def is_scalar(x):
    return isinstance(x, (numbers.Number, np.bool_)) and not isinstance(x, Tensor)


def as_operand(x, like=None):
    """Keep tensors and Python scalars; turn lists/arrays into tensors."""
    if isinstance(x, Tensor) or isinstance(x, (numbers.Number, np.bool_)):
        if isinstance(x, np.generic):
            return x.item()
        return x
    if isinstance(x, np.ndarray):
        return _new(x)
    from ..tensor import to_array
    arr = to_array(x)
    if like is not None:
        from .._device import move
        arr = move(arr, like.device)
    return _new(arr)


def result_dtype(*operands):
    return _dtype.result_type(*operands)


def float_dtype(d):
    """Integer and bool inputs of float functions compute in the default float type."""
    return d if d.is_floating_point else _dtype.get_default_dtype()


def cast(x, np_dtype):
    """Cast an array to ``np_dtype`` (no copy when it already has it); scalars stay weak (numpy's become Python
    numbers, as torch takes them)."""
    if isinstance(x, numbers.Number):
        return x.item() if isinstance(x, np.generic) else x
    return x if x.dtype == np_dtype else x.astype(np_dtype)


def wrap_dim(dim, ndim):
    if type(dim) is not int:
        dim = operator.index(dim)  # a numpy integer or a 0-dim integer tensor, as torch takes them
    return _wrap_dim(dim, ndim)


def int_arg(value):
    """An int argument as torch reads it: a 0-dim integer tensor becomes its value; anything else is unchanged."""
    return operator.index(value) if isinstance(value, Tensor) and value.ndim == 0 else value


def dims_tuple(dim, ndim):
    """``dim`` (None, int or sequence) as a sorted tuple of positive axes; None means all."""
    if dim is None:
        return tuple(range(ndim))
    dim = int_arg(dim)
    if isinstance(dim, (int, np.integer)):
        return (wrap_dim(int(dim), ndim),)
    if len(dim) == 0:
        return tuple(range(ndim))
    return tuple(sorted(wrap_dim(int(d), ndim) for d in dim))


def one_of(function, name, *values):
    """The one of ``values`` that is not None: an argument torch takes under several names (``sections=`` or
    ``indices=`` for ``indices_or_sections``); TypeError for none or several."""
    given = [v for v in values if v is not None]
    if len(given) != 1:
        problem = "missing 1 required positional argument" if not given else "got multiple values for argument"
        raise TypeError(f"{function}() {problem}: '{name}'")
    return given[0]


def shape_arg(args, keyword=None, name=None):
    """Sizes or dims given as ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(Size)`` or, as torch also takes them,
    by keyword (``keyword``, the value of the keyword argument ``name``, when not None)."""
    if keyword is not None:
        if args:
            raise TypeError(f"got multiple values for argument '{name}'")
        args = (keyword,)
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    return tuple(int(a) for a in args)


def check_broadcast(a, b, *more):
    """Raise PyTorch's error when the operands' shapes do not broadcast (scalars and None take no part)."""
    sa, sb = getattr(a, "shape", ()), getattr(b, "shape", ())
    if sa == sb and not more:  # the common case, on every binary op
        return
    check_broadcast_shapes(tuple(sa), tuple(sb), *(tuple(getattr(x, "shape", ())) for x in more))


def check_broadcast_shapes(*shapes):
    """Raise PyTorch's error when ``shapes`` do not broadcast. As torch's TensorIterator, it broadcasts them in
    order: "tensor a" is the broadcast shape of those before, "tensor b" the next one."""
    sa = shapes[0]
    for sb in shapes[1:]:
        if sa == sb:
            continue
        n = max(len(sa), len(sb))
        pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
        for dim in range(n - 1, -1, -1):
            if pa[dim] != pb[dim] and pa[dim] != 1 and pb[dim] != 1:
                raise RuntimeError(f"The size of tensor a ({pa[dim]}) must match the size of tensor b "
                                   f"({pb[dim]}) at non-singleton dimension {dim}")
        sa = np.broadcast_shapes(sa, sb)


def check_same_device(input, *others):
    """torch's error where a tensor an op reads beside ``input`` (not as an autograd input, whose device
    ``Function`` checks) lies on another device: else CuPy and numpy arrays would meet inside the op and fail
    with a TypeError of their own (running stats, a loss's class weights, repeat counts)."""
    for other in others:
        if isinstance(other, Tensor) and other.device != input.device:
            first, second = sorted((input.device, other.device), key=lambda d: d.type == "cpu")
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{first} and {second}!")
