"""Top-level forms of Tensor methods (``torch.fill_(x, v)``, ``torch.arccos_(x)``, ``torch.fill(x, v)``) and the
Tensor methods PyTorch has under older names (``x.new(...)``, ``x.resize(...)``, ``x.multinomial(...)``).

``torch.fill`` is the out-of-place fill: a tensor like ``input`` holding ``value``, with torch's gradients (zeros
for ``input``, the sum of the upstream gradient for a tensor ``value``).
"""
import numbers
import warnings

from ..autograd.function import Function
from ..tensor import Size, Tensor, register_method
from ._common import shape_arg, xp_of
from .creation import multinomial, zeros


class Fill(Function):
    uses_inputs = False

    def forward(self, x, value):
        return xp_of(x).full(x.shape, value, x.dtype)

    def backward(self, gy):
        g_value = gy.sum().reshape(()) if self.needs_input_grad[1] else None
        return xp_of(gy).zeros_like(gy), g_value


def fill(input, value):
    """A tensor of input's shape, dtype and device holding ``value`` (a number or a 0-d tensor)."""
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.ndim} "
                           f"dimensions.")
    return Fill()(input, value)


def new(self, *args, dtype=None, device=None):
    """``x.new(...)``: the legacy constructor in x's dtype and device: ``new()`` empty, ``new(sizes)`` or
    ``new(*sizes)`` uninitialised (zeros here), ``new(sequence)`` its values, ``new(tensor)`` that tensor."""
    dtype, device = dtype or self.dtype, device or self.device
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0]
    if len(args) == 1 and isinstance(args[0], (list, tuple)) and not _is_shape(args):
        return self.new_tensor(args[0], dtype=dtype, device=device)
    if args and not _is_shape(args):
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    return zeros(*(shape_arg(args) if args else (0,)), dtype=dtype, device=device)


def _is_shape(args):
    """Whether ``args`` read as sizes: integers, or one torch.Size."""
    if len(args) == 1 and isinstance(args[0], Size):
        return True
    return all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args)


def resize(self, *sizes):
    """``x.resize(...)``: x in row-major order viewed with the shape ``sizes``, which must hold as many elements
    (differentiable, unlike ``resize_``); deprecated, with PyTorch's warning."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _viewed_as(self, shape_arg(sizes))


def _viewed_as(self, shape):
    count = 1
    for n in shape:
        count *= n
    if count != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({count} elements in total), but the "
                           f"given tensor has a size of {'x'.join(map(str, self.shape))} ({self.numel()} elements). "
                           f"autograd's resize can only change the shape of a given tensor, while preserving the "
                           f"number of elements.")
    return self.contiguous().view(*shape)


def resize_as(self, other):
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _viewed_as(self, tuple(other.shape))


register_method(new, "new")
register_method(resize, "resize")
register_method(resize_as, "resize_as")
register_method(multinomial, "multinomial")

# torch.<name>(x, ...) is x.<name>(...)
_TOPLEVEL_FORMS = ("fill_", "zero_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_",
                   "negative_", "fix_", "gcd_", "lcm_", "ldexp_", "xlogy_", "nan_to_num_", "clamp_min_", "clamp_max_",
                   "addmv_", "resize_as_", "detach", "detach_", "get_device", "put")


def _toplevel(method):
    """``torch.<name>``: the method with its tensor named ``input``, as torch's functions take it by keyword."""
    def form(input, *args, **kwargs):
        return method(input, *args, **kwargs)
    form.__name__ = form.__qualname__ = method.__name__
    form.__doc__ = method.__doc__
    return form


for _name in _TOPLEVEL_FORMS:
    globals()[_name] = _toplevel(getattr(Tensor, _name))

__all__ = ["fill", *_TOPLEVEL_FORMS]
