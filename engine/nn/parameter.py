"""``Parameter``: a tensor that a ``Module`` registers as one of its learnable weights."""
from ..tensor import Tensor, _new


class Parameter(Tensor):
    """A leaf tensor that shares ``data``'s array and is registered when assigned to a Module."""

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}")
        self.__dict__.update(_new(data._data).__dict__)
        self._version = data._version
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach().cpu()._data, self.requires_grad))


def _rebuild_parameter(array, requires_grad):
    return Parameter(_new(array), requires_grad)


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer when assigned to a Module (``persistent`` flag)."""

    def __init__(self, data=None, *, persistent=True):
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        self.__dict__.update(_new(data._data).__dict__)
        self._version = data._version
        self.persistent = persistent


__all__ = ["Parameter", "Buffer"]
