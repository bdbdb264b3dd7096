"""``Variable``: the pre-0.4 wrapper, kept as torch keeps it: calling it returns a Tensor.

``Variable(t)`` is ``t`` detached (same data and version counter), requiring grad only with
``requires_grad=True``; every Tensor counts as an instance of ``Variable``. Old code that wraps its inputs
this way runs unchanged.
"""
import warnings


def _tensor_class():
    from ..tensor import Tensor  # here: ``engine.tensor`` imports ``engine.autograd``, which imports this module
    return Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, _tensor_class())


class Variable(metaclass=_VariableMeta):
    """``Variable(data=None, requires_grad=False, volatile=None)``: a detached Tensor sharing ``data``'s storage
    (an empty float tensor without ``data``); ``volatile`` only warns, as torch's does."""

    def __new__(cls, data=None, requires_grad=False, volatile=None):
        if volatile is not None:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            from ..ops import empty
            return empty(0, requires_grad=bool(requires_grad))
        if not isinstance(data, _tensor_class()):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_() if requires_grad else out
