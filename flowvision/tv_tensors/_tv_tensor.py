"""``TVTensor``: the base of the tensors that tell the v2 transforms what they hold (torchvision's tv_tensors).

A TVTensor is an ``engine.Tensor`` of a subclass. As in torchvision, what an operation returns is a pure
``Tensor``: the type says what the data is, and arithmetic on it need not be an image or a box. Only
``clone``, ``to``, ``detach``, ``requires_grad_`` and ``pin_memory`` keep the type and its metadata
(torchvision's ``_FORCE_TORCHFUNCTION_SUBCLASS``). Engine ops build pure tensors already; the methods
that may hand back ``self`` (``contiguous``, ``cpu``, ``float``, in-place ops, ...) are wrapped below so
that they too return a pure tensor, as torch's ``__torch_function__`` makes them.

``set_return_type("TVTensor")`` turns that off: then every tensor method and operator of a TVTensor returns its
type with its metadata (a box's format and canvas size), as torchvision's do. The engine has no
``__torch_function__``: module functions (``engine.add(image, 1)``) still return pure tensors.
"""
import functools

import engine
from engine._repr import tensor_repr

_KEEP_TYPE = ("clone", "to", "detach", "requires_grad_", "pin_memory")
_NOT_WRAPPED = {"as_subclass", "numpy", "tolist", "item", "size", "dim", "numel", "stride", "element_size",
                "is_contiguous", "is_floating_point", "is_complex", "data_ptr", "untyped_storage", "storage_offset",
                "register_hook", "register_post_accumulate_grad_hook", "backward", "retain_grad"}

# properties that give tensors: like the methods, pure tensors (or this TVTensor's type under set_return_type)
_PROPERTIES = ("T", "mT", "H", "mH", "real", "imag", "data")
_BINARY = ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift")
_INPLACE_OPERATORS = {f"__i{op}__" for op in _BINARY}  # they return self
# they build new tensors, which set_return_type("TVTensor") wraps
_OPERATORS = ({f"__{op}__" for op in _BINARY} | {f"__r{op}__" for op in _BINARY if op not in ("lshift", "rshift")}
              | {"__neg__", "__pos__", "__abs__", "__invert__", "__getitem__",
                 "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})

_RETURN_TVTENSOR = False  # set_return_type("TVTensor") sets it


class _ReturnType:
    """What ``set_return_type`` returns: as a context manager it restores the previous return type on exit."""

    def __init__(self, previous):
        self.previous = previous

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        global _RETURN_TVTENSOR
        _RETURN_TVTENSOR = self.previous


def set_return_type(return_type):
    """What tensor methods and operators of TVTensors return: ``"Tensor"`` (pure tensors, the default) or
    ``"TVTensor"`` (their own type and metadata). Sets it for the process; used as ``with set_return_type(...):``,
    only within the block."""
    global _RETURN_TVTENSOR
    previous = _RETURN_TVTENSOR
    try:
        _RETURN_TVTENSOR = {"tensor": False, "tvtensor": True}[return_type.lower()]
    except KeyError:
        raise ValueError(f"return_type must be 'TVTensor' or 'Tensor', got {return_type}") from None
    return _ReturnType(previous)


class TVTensor(engine.Tensor):
    """Base class of ``Image``, ``Video``, ``Mask``, ``BoundingBoxes`` and ``KeyPoints``."""

    def __init__(self, *args, **kwargs):
        """Construction happens in ``__new__`` (the data becomes a tensor there)."""

    @staticmethod
    def _to_tensor(data, dtype=None, device=None, requires_grad=None):
        if requires_grad is None:
            requires_grad = data.requires_grad if isinstance(data, engine.Tensor) else False
        return engine.as_tensor(data, dtype=dtype, device=device).requires_grad_(requires_grad)

    @classmethod
    def wrap(cls, tensor, like, **kwargs):
        """``tensor`` as this class, with ``like``'s metadata unless ``kwargs`` names new values."""
        return tensor.as_subclass(cls)

    def _metadata(self):
        """The keyword arguments that ``wrap`` needs besides the tensor (none for images)."""
        return {}

    def _kept(self, output):
        """The output of a type-keeping method: its tensors (in a tuple or list too) as this class with this
        tensor's metadata, unless they are of it already (``self``)."""
        if isinstance(output, (tuple, list)):
            parts = [self._kept(part) for part in output]
            return type(output)(*parts) if hasattr(output, "_fields") else type(output)(parts)
        if isinstance(output, engine.Tensor) and not isinstance(output, type(self)):
            return type(self).wrap(output, like=self)
        return output

    def __deepcopy__(self, memo):
        return self.detach().clone().requires_grad_(self.requires_grad)

    def __reduce_ex__(self, protocol):
        array, requires_grad = super().__reduce_ex__(protocol)[1]
        return _rebuild, (type(self), array, requires_grad, self._metadata())

    def _make_repr(self, **kwargs):
        text = tensor_repr(self, name=type(self).__name__)
        extra = ", ".join(f"{key}={value}" for key, value in kwargs.items())
        return f"{text[:-1]}, {extra})" if extra else text

    def __repr__(self):
        return self._make_repr()


def _rebuild(cls, array, requires_grad, metadata):
    """Unpickle a TVTensor (DataLoader workers send their samples this way)."""
    return cls.wrap(engine.from_numpy(array).requires_grad_(requires_grad), like=None, **metadata)


def _pure_result(method):
    """``method``, returning a pure Tensor wherever it would return a TVTensor (``self`` included); under
    ``set_return_type("TVTensor")``, its tensors as this TVTensor's type and metadata."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        output = method(self, *args, **kwargs)
        if _RETURN_TVTENSOR:
            return self._kept(output)
        if isinstance(output, TVTensor):
            return output.as_subclass(engine.Tensor)
        return output
    return wrapper


def _keep_type(method):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        return self._kept(method(self, *args, **kwargs))
    return wrapper


def _install_method_wrappers():
    for name in _PROPERTIES:
        prop = getattr(engine.Tensor, name)
        setattr(TVTensor, name, property(_pure_result(prop.fget), prop.fset, prop.fdel, prop.__doc__))
    for name in dir(engine.Tensor):
        method = getattr(engine.Tensor, name)
        if not callable(method) or isinstance(method, type) or name in _NOT_WRAPPED or name in vars(TVTensor):
            continue
        if name.startswith("__") and name not in _INPLACE_OPERATORS | _OPERATORS:
            continue
        setattr(TVTensor, name, _keep_type(method) if name in _KEEP_TYPE else _pure_result(method))


_install_method_wrappers()
