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
        self._version_counter = data._version_counter
        if requires_grad:
            if not (self.dtype.is_floating_point or self.dtype.is_complex):
                raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
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
        self._version_counter = data._version_counter
        self.persistent = persistent


class UninitializedTensorMixin:
    """A parameter or buffer whose shape is not known yet (a lazy module's, before its first forward): it holds
    an empty array that keeps the device and dtype to build on, moves with ``Module.to``, and reports no shape
    until ``materialize`` gives it storage and turns it into ``cls_to_become``."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Storage of ``shape`` (values uninitialised) on this tensor's device and dtype unless given."""
        from ..ops.creation import empty
        device = self.device if device is None else device
        dtype = self.dtype if dtype is None else dtype
        self._data = empty(*shape, device=device, dtype=dtype)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


def _empty_storage(device, dtype):
    from ..ops.creation import empty
    return empty(0, device=device, dtype=dtype)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter of a shape still unknown; becomes a ``Parameter`` when materialized."""

    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(_empty_storage(device, dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer of a shape still unknown; becomes a plain ``Tensor`` when materialized."""

    cls_to_become = Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        self.__dict__.update(_new(_empty_storage(device, dtype)._data, requires_grad).__dict__)
        self.persistent = persistent


def is_lazy(tensor):
    """Whether ``tensor`` is an uninitialized parameter or buffer."""
    return isinstance(tensor, UninitializedTensorMixin)


__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"]
