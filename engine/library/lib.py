"""``torch.library``'s registration API: ``custom_op``, ``Library`` (DEF / IMPL / FRAGMENT blocks with ``define`` and
``impl``), and the module-level ``define``, ``impl``, ``register_kernel``, ``register_fake``, ``register_autograd``
that take an operator by name (``"mylib::foo"``), by overload (``ops.mylib.foo.default``) or as a CustomOpDef.

Dispatch keys the engine honours in ``impl``: "CPU", "CUDA" (device kernels), "CompositeImplicitAutograd" (or "":
one kernel for every device, differentiated through the ops it calls), "CompositeExplicitAutograd" (one kernel for
every device), "Meta" (the fake function), "Autograd" / "AutogradCPU" / "AutogradCUDA" (a kernel that does its own
autograd, such as an ``autograd.Function``'s ``apply``; calls of the op inside it reach the device kernels).
"""
from . import _registry
from .custom_ops import CustomOpDef, device_types_of
from .schema import _infer, parse_schema

_KINDS = ("DEF", "IMPL", "FRAGMENT")
_DEF_NAMESPACES = set()
_PENDING = {}  # (ns, name, overload) -> [(dispatch key, fn)]: impls given before their op was defined


def split_qualname(qualname):
    """``"ns::name"`` -> ("ns", "name"), with torch's error for any other form."""
    parts = qualname.split("::")
    if len(parts) != 2 or not all(parts):
        raise ValueError(f'Expected `qualname` to be of the form "namespace::name", but got {qualname}. The '
                         f'qualname passed to the torch.library APIs must consist of a namespace and a name, e.g. '
                         f'aten::sin')
    return parts[0], parts[1]


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """``@custom_op("mylib::foo", mutates_args=())``: the function becomes operator ``mylib::foo`` (its schema
    inferred from its annotations, or ``schema``), its kernel for ``device_types`` (None: every device)."""
    namespace, op_name = split_qualname(name)

    def wrap(func):
        if schema is None:
            op_schema = _infer(func, mutates_args, op_name)
        else:
            op_schema = parse_schema(op_name + schema)
        _registry.remove(namespace, op_name)
        op = CustomOpDef(namespace, op_name, op_schema, mutates_args)
        op.register_kernel(device_types, func)
        op.__wrapped__ = func
        op.__name__, op.__doc__ = func.__name__, func.__doc__
        return op

    return wrap(fn) if fn is not None else wrap


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """``torch.library.triton_op``: Triton kernels need torch's compiler, which the engine does not have."""
    raise NotImplementedError("triton_op: the engine has no Triton compiler; wrap a CuPy RawKernel with "
                              "custom_op(..., device_types='cuda') instead")


def _define(ns, schema_text, lib_kind="FRAGMENT"):
    schema = parse_schema(schema_text)
    if lib_kind == "IMPL":
        raise RuntimeError(f'def("{schema.name}"): Cannot define an operator inside of a TORCH_LIBRARY_IMPL block. '
                           f' All def()s should be placed in the (unique) TORCH_LIBRARY block for their namespace.')
    overload = schema.overload or "default"
    if _registry.lookup(ns, schema.name, overload) is not None:
        shown = f"{ns}::{schema}"
        raise RuntimeError(f"Tried to register an operator ({shown}) with the same name and overload name multiple "
                           f"times. Each overload's schema should only be registered with a single call to def().")
    op = CustomOpDef(ns, schema.name, schema, is_custom_op=False)
    for key, fn in _PENDING.pop((ns, schema.name, overload), ()):
        register_dispatch_key(op, key, fn)
    return op


def fallthrough_kernel():
    """``impl(name, fallthrough_kernel, key)`` removes what was registered at ``key`` (calls go on to the next)."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


def register_dispatch_key(op, key, fn):
    """Put ``fn`` where dispatch key ``key`` sends calls of ``op`` (see the module's docstring)."""
    if fn is fallthrough_kernel:
        _clear_dispatch_key(op, key)
    elif key in ("", "CompositeImplicitAutograd"):
        op._kernels[None], op._composite = fn, True
    elif key == "CompositeExplicitAutograd":
        op._kernels[None] = fn
    elif key in ("CPU", "CUDA"):
        op._kernels[key.lower()] = fn
    elif key == "Meta":
        op._fake_fn = fn
    elif key in ("Autograd", "AutogradCPU", "AutogradCUDA"):
        op._autograd_kernel = fn
    else:
        raise NotImplementedError(f"impl: dispatch key '{key}' is not supported by the engine (it runs ops eagerly: "
                                  f"CPU, CUDA, CompositeImplicitAutograd, CompositeExplicitAutograd, Autograd, Meta)")


def _clear_dispatch_key(op, key):
    if key in ("", "CompositeImplicitAutograd", "CompositeExplicitAutograd"):
        op._kernels.pop(None, None)
        op._composite = False
    elif key in ("CPU", "CUDA"):
        op._kernels.pop(key.lower(), None)
    elif key == "Meta":
        op._fake_fn = None
    elif key.startswith("Autograd"):
        op._autograd_kernel = None


def get_kernel(op, dispatch_key):
    """The function that runs for ``op`` at ``dispatch_key`` ("CPU", "CUDA", "Meta", "Autograd", ...), to call
    from a kernel registered over it."""
    target = _resolve(op)
    if dispatch_key in ("CPU", "CUDA"):
        return target.kernel_for(dispatch_key.lower())
    found = {"Meta": target._fake_fn, "Autograd": target._autograd_kernel,
             "CompositeImplicitAutograd": target._kernels.get(None) if target._composite else None,
             "CompositeExplicitAutograd": target._kernels.get(None)}.get(dispatch_key)
    if found is None:
        raise RuntimeError(f"{target._qualname} has no kernel registered for dispatch key {dispatch_key}")
    return found


class Library:
    """``torch.library.Library(ns, kind)``: a block of definitions ("DEF", one per namespace; "FRAGMENT", any
    number) or of implementations ("IMPL") in namespace ``ns``."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if kind == "DEF":
            if ns in _DEF_NAMESPACES:
                raise RuntimeError(f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                                   f"put all of your definitions in a single TORCH_LIBRARY block.  If you were "
                                   f"trying to specify implementations, consider using TORCH_LIBRARY_IMPL (which "
                                   f"can be duplicated).  If you really intended to define operators for a single "
                                   f"namespace in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to "
                                   f"explicitly indicate this")
            _DEF_NAMESPACES.add(ns)
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key
        _registry.claim(ns)

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Declare an operator from its schema text (``"foo(Tensor x, int n=1) -> Tensor"``); returns its name."""
        return _define(self.ns, schema, self.kind)._name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        """Register ``fn`` for ``op_name`` (``"foo"``, ``"foo.overload"`` or an OpOverload) at ``dispatch_key``
        (the library's own when empty)."""
        if with_keyset:
            raise NotImplementedError("impl(..., with_keyset=True): the engine has no DispatchKeySet to pass")
        key = dispatch_key or self.dispatch_key
        if isinstance(op_name, _registry.OpOverload):
            register_dispatch_key(op_name._op, key, fn)
            return
        name = op_name.split("::")[-1]
        name, _, overload = name.partition(".")
        op = _registry.lookup(self.ns, name, overload or "default")
        if op is None:
            _PENDING.setdefault((self.ns, name, overload or "default"), []).append((key, fn))
        else:
            register_dispatch_key(op, key, fn)

    def _destroy(self):
        _DEF_NAMESPACES.discard(self.ns)


def _resolve(op):
    """A CustomOpDef from a qualname, an OpOverload, an OpOverloadPacket or a CustomOpDef."""
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, _registry.OpOverload):
        return op._op
    if isinstance(op, _registry.OpOverloadPacket):
        return op.default._op
    if isinstance(op, str):
        ns, name = split_qualname(op)
        name, _, overload = name.partition(".")
        found = _registry.lookup(ns, name, overload or "default")
        if found is None:
            raise ValueError(f"register: could not find operator {op}; define it first (torch.library.define or "
                             f"custom_op)")
        return found
    raise TypeError(f"expected an operator (a 'ns::name' string, an OpOverload or a CustomOpDef), got "
                    f"{type(op).__name__}")


def define(qualname, schema, *, lib=None, tags=()):
    """``torch.library.define("mylib::foo", "(Tensor x) -> Tensor")``."""
    ns, name = split_qualname(qualname)
    _registry.claim(ns)
    _define(ns, name + schema)


def impl(qualname, types, func=None, *, lib=None):
    """``torch.library.impl("mylib::foo", "cpu", fn)`` (or as a decorator): the kernel for device types
    ``types``, or for a dispatch key ("CompositeImplicitAutograd", "Meta", ...)."""
    def register(fn):
        op = _resolve(qualname)
        for t in device_types_of(types):
            if t in ("cpu", "cuda", None, "default"):
                op.register_kernel(None if t == "default" else t, fn)
            else:
                register_dispatch_key(op, t, fn)
        return fn
    return register(func) if func is not None else register


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """``torch.library.register_kernel``: a device kernel for an existing operator."""
    return _resolve(op).register_kernel(device_types, func)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=False):
    """``torch.library.register_fake``: the fake function of an existing operator; usable as a decorator."""
    target = _resolve(op)
    return target.register_fake(func) if func is not None else target.register_fake


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """``torch.library.register_autograd``: the gradient formula of an existing operator."""
    _resolve(op).register_autograd(backward, setup_context=setup_context)


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """``torch.library.register_torch_dispatch``: the engine has no dispatcher modes."""
    return _resolve(op).register_torch_dispatch(torch_dispatch_class, func)


impl_abstract = register_fake  # the older name of register_fake


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """``torch.library.register_autocast``: under autocast on ``device_type`` the op casts its floating tensor
    inputs to ``cast_inputs`` and runs with autocast off."""
    _resolve(op).register_autocast(device_type, cast_inputs)


def register_vmap(op, func=None, /, *, lib=None):
    """``torch.library.register_vmap``: kept with the op (engine.func.vmap runs ops once per element)."""
    return _resolve(op).register_vmap(func)


def wrap_triton(triton_kernel, /):
    """``torch.library.wrap_triton``: Triton kernels need torch's compiler, which the engine does not have."""
    raise NotImplementedError("wrap_triton: the engine has no Triton compiler; launch a CuPy RawKernel from a "
                              "custom_op's cuda kernel instead")
