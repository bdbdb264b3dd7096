"""The kernel table of the v2 functionals: for each functional, the kernel that handles each input type.

A functional (``F.horizontal_flip``) looks up the kernel registered for its input's type, walking the type's
MRO (a subclass of ``Image`` finds ``Image``'s kernel; a pure ``Tensor`` has its own, the image kernel). Kernels
registered for a TVTensor type get the pure tensor and their output is wrapped back into the input's type with
its metadata, unless they handle the metadata themselves (``tv_tensor_wrapper=False``: boxes and key points,
whose canvas size changes).
"""
import functools

import engine

from ....tv_tensors import TVTensor

_KERNEL_REGISTRY = {}


def is_pure_tensor(inpt):
    """Whether ``inpt`` is a Tensor that is not a TVTensor (the v2 transforms treat the first one as the image)."""
    return isinstance(inpt, engine.Tensor) and not isinstance(inpt, TVTensor)


def _kernel_tv_tensor_wrapper(kernel):
    @functools.wraps(kernel)
    def wrapper(inpt, *args, **kwargs):
        output = kernel(inpt.as_subclass(engine.Tensor), *args, **kwargs)
        return type(inpt).wrap(output, like=inpt)
    return wrapper


def _register_kernel_internal(functional, input_type, *, tv_tensor_wrapper=True):
    """Decorator: ``kernel`` handles ``functional`` for ``input_type``."""
    registry = _KERNEL_REGISTRY.setdefault(functional, {})
    if input_type in registry:
        raise ValueError(f"Functional {functional} already has a kernel registered for type {input_type}.")

    def decorator(kernel):
        wrap = isinstance(input_type, type) and issubclass(input_type, TVTensor) and tv_tensor_wrapper
        registry[input_type] = _kernel_tv_tensor_wrapper(kernel) if wrap else kernel
        return kernel
    return decorator


def _builtin_tv_tensor_types():
    from .... import tv_tensors
    return {obj for obj in vars(tv_tensors).values() if isinstance(obj, type) and issubclass(obj, TVTensor)}


def _name_to_functional(name):
    from ... import v2
    try:
        return getattr(v2.functional, name)
    except AttributeError:
        raise ValueError(f"Could not find functional with name '{name}' in "
                         f"flowvision.transforms.v2.functional.") from None


def register_kernel(functional, tv_tensor_cls):
    """Decorator: register a kernel of ``functional`` (or its name) for a custom TVTensor class.

    The kernel gets the TVTensor itself and returns the output as it should be (no wrapping).
    """
    if isinstance(functional, str):
        functional = _name_to_functional(functional)
    elif not (callable(functional)
              and getattr(functional, "__module__", "").startswith("flowvision.transforms.v2.functional")):
        raise ValueError(f"Kernels can only be registered on functionals from the "
                         f"flowvision.transforms.v2.functional namespace, but got {functional}.")
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, TVTensor)):
        raise ValueError(f"Kernels can only be registered for subclasses of flowvision.tv_tensors.TVTensor, "
                         f"but got {tv_tensor_cls}.")
    if tv_tensor_cls in _builtin_tv_tensor_types():
        raise ValueError(f"Kernels cannot be registered for the builtin tv_tensor classes, but got {tv_tensor_cls}")
    return _register_kernel_internal(functional, tv_tensor_cls, tv_tensor_wrapper=False)


def _get_kernel(functional, input_type, *, allow_passthrough=False):
    """The kernel of ``functional`` for ``input_type``; with ``allow_passthrough``, the identity where there is
    none (a transform leaves inputs it does not concern alone)."""
    registry = _KERNEL_REGISTRY.get(functional)
    if not registry:
        raise ValueError(f"No kernel registered for functional {functional.__name__}.")
    for cls in input_type.__mro__:
        if cls in registry:
            return registry[cls]
        if cls is TVTensor:
            break
    if allow_passthrough:
        return lambda inpt, *args, **kwargs: inpt
    names = ", ".join(t.__name__ for t in registry)
    raise TypeError(f"Functional F.{functional.__name__} supports inputs of type {names}, "
                    f"but got {input_type.__name__} instead.")


def _register_five_ten_crop_kernel_internal(functional, input_type):
    """As ``_register_kernel_internal`` for kernels returning a tuple of crops: each crop is wrapped."""
    registry = _KERNEL_REGISTRY.setdefault(functional, {})
    if input_type in registry:
        raise TypeError(f"Functional '{functional}' already has a kernel registered for type '{input_type}'.")

    def decorator(kernel):
        if isinstance(input_type, type) and issubclass(input_type, TVTensor):
            @functools.wraps(kernel)
            def wrapper(inpt, *args, **kwargs):
                output = kernel(inpt.as_subclass(engine.Tensor), *args, **kwargs)
                return type(output)(type(inpt).wrap(o, like=inpt) for o in output)
            registry[input_type] = wrapper
        else:
            registry[input_type] = kernel
        return kernel
    return decorator


def dispatch(functional, inpt, *args, **kwargs):
    """Run ``functional``'s kernel for ``inpt``'s type (what every v2 functional's body does)."""
    return _get_kernel(functional, type(inpt))(inpt, *args, **kwargs)
