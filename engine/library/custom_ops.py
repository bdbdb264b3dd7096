"""``CustomOpDef``: one user-defined operator and how a call of it runs, eagerly.

A call binds its arguments to the schema (torch's argument errors), picks the kernel registered for the inputs'
device type ("cuda" when any tensor input is on the GPU, else "cpu"; a kernel for all devices otherwise), runs it
and records one graph node: the user's formula when ``register_autograd`` gave one, else a node whose backward
raises torch's "no autograd formula" error. Operators declared with ``Library.define`` and given no formula run
their kernel with autograd on instead (torch's autograd fallback), and a ``CompositeImplicitAutograd`` kernel always
does (its gradient is that of the ops it calls).
"""
import contextlib

from .. import _device
from ..amp.autocast_mode import autocast, is_autocast_enabled
from ..autograd import grad_mode
from ..tensor import Tensor
from . import _registry
from .autograd_node import AutogradCtx, CustomOpNode, flatten_tensors
from .schema import bind, split_call

_BACKEND = {"cpu": "CPU", "cuda": "CUDA"}


def device_types_of(device_types):
    """``"cpu"``, ``["cpu", "cuda"]`` or None (every device) as a tuple of names, or (None,)."""
    if device_types is None:
        return (None,)
    if isinstance(device_types, str):
        return (device_types,)
    return tuple(device_types)


class CustomOpDef:
    """What ``custom_op`` returns (and what ``Library.define`` makes): callable like the operator, with
    ``register_kernel``, ``register_fake``, ``register_autograd``."""

    def __init__(self, namespace, name, schema, mutates_args=(), is_custom_op=True):
        self._namespace, self._name, self._schema = namespace, name, schema
        schema.namespace = namespace
        self._mutates_args = mutates_args
        self._is_custom_op = is_custom_op
        self._kernels = {}  # device type (None: every device) -> function
        self._composite = False  # the all-devices kernel is CompositeImplicitAutograd: autograd runs through it
        self._autograd_kernel = None  # Library.impl(..., "Autograd"): does its own autograd
        self._below_autograd = False
        self._fake_fn = None
        self._backward_fn = self._setup_context_fn = None
        self._disabled = set()
        self._autocast = {}  # device type -> the dtype register_autocast casts floating inputs to
        self._vmap_fn = None  # register_vmap's rule, kept: engine.func.vmap runs the op once per element
        self._node_cls = CustomOpNode.for_op(namespace, name)
        self._opoverload = _registry.add(self)

    @property
    def _qualname(self):
        return f"{self._namespace}::{self._name}"

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    # --- registration -----------------------------------------------------------------------------------------

    def register_kernel(self, device_types, fn=None, /):
        """The kernel for ``device_types`` ("cpu", "cuda", a list of them, or None for every device); usable as a
        decorator."""
        def register(func):
            for dt in device_types_of(device_types):
                self._kernels[dt] = func
            return func
        return register(fn) if fn is not None else register

    def register_fake(self, fn, /):
        """The fake (meta) function: outputs of the right shapes and dtypes, for ``opcheck`` (the engine has no
        tracing that needs it)."""
        self._fake_fn = fn
        return fn

    def register_autograd(self, backward, /, *, setup_context=None):
        """``backward(ctx, *grads)`` (one list of gradients for a ``Tensor[]`` output) returns one gradient per
        input; ``setup_context(ctx, inputs, output)`` saves what it needs on ctx (``setup_context(ctx, inputs,
        keyword_only_inputs, output)`` for an op with keyword-only arguments, ``inputs`` then the positional
        ones). An op that mutates an argument has no formula (torch's error)."""
        if not callable(backward):
            raise TypeError(f"Expected backward to be callable, got {type(backward).__name__}")
        if any(a.is_mutable for a in self._schema.arguments):
            raise RuntimeError(f"Cannot register autograd formula for non-functional operator {self} with schema "
                               f"{self._schema}. Please create a functional operator and register an autograd "
                               f"formula for that.")
        self._backward_fn, self._setup_context_fn = backward, setup_context

    def register_autocast(self, device_type, cast_inputs):
        """Under autocast on ``device_type``, floating tensor inputs are cast to ``cast_inputs`` and the op runs
        with autocast off (as torch: custom ops are otherwise not autocast)."""
        self._autocast[device_type] = cast_inputs

    def register_vmap(self, fn=None, /):
        """A batching rule. Kept, not called: ``engine.func.vmap`` runs the op once per batch element, which is
        what a correct rule computes."""
        def register(func):
            self._vmap_fn = func
            return func
        return register(fn) if fn is not None else register

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        raise NotImplementedError("register_torch_dispatch: the engine has no TorchDispatchMode or tensor "
                                  "subclass dispatch; call the op's kernel directly instead")

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type, enabled=True):
        """Within the block, the kernel registered for ``device_type`` is (not) used; the default one runs."""
        was = device_type in self._disabled
        (self._disabled.discard if enabled else self._disabled.add)(device_type)
        try:
            yield
        finally:
            (self._disabled.add if was else self._disabled.discard)(device_type)

    # --- a call -----------------------------------------------------------------------------------------------

    def kernel_for(self, device_type):
        """The kernel that runs for ``device_type``; torch's NotImplementedError when there is none."""
        kernel = self._kernels.get(device_type) if device_type not in self._disabled else None
        if kernel is None:
            kernel = self._kernels.get(None)
        if kernel is None:
            backend = _BACKEND.get(device_type, device_type)
            have = [_BACKEND.get(k, k) for k in self._kernels if k is not None]
            raise NotImplementedError(
                f"Could not run '{self._qualname}' with arguments from the '{backend}' backend. This could be "
                f"because the operator doesn't exist for this backend, or was omitted during the selective/custom "
                f"build process (if using custom build). '{self._qualname}' is only available for these "
                f"backends: [{', '.join(have)}].")
        return kernel

    def __call__(self, *args, **kwargs):
        values = bind(self._schema, self._qualname, args, kwargs)
        flat, where = flatten_tensors(values)
        call_args, call_kwargs = split_call(self._schema, values)
        if self._autograd_kernel is not None and not self._below_autograd:
            self._below_autograd = True  # calls of this op inside the autograd kernel reach the device kernel
            try:
                return self._autograd_kernel(*call_args, **call_kwargs)
            finally:
                self._below_autograd = False
        device_type = "cuda" if any(_device.is_cuda_array(t._data) for t in flat) else "cpu"
        kernel = self.kernel_for(device_type)
        if device_type in self._autocast and is_autocast_enabled(device_type):
            return self._autocast_call(device_type, values)
        record = grad_mode.is_grad_enabled() and any(t.requires_grad for t in flat)
        if self._composite or (not self._is_custom_op and self._backward_fn is None):
            return kernel(*call_args, **call_kwargs)
        with grad_mode.no_grad():  # below autograd, as torch: the kernel sees tensors that need no gradient
            out = kernel(*[_detached(a) for a in call_args], **{k: _detached(v) for k, v in call_kwargs.items()})
        if self._is_custom_op:
            self._check_no_alias(kernel, flat, out)
        if not record:
            return out
        return self._record(values, flat, where, out)

    def _autocast_call(self, device_type, values):
        """``register_autocast``: the floating tensor inputs cast to its dtype, the op run with autocast off."""
        dtype = self._autocast[device_type]

        def cast(v):
            if isinstance(v, Tensor) and v.is_floating_point():
                return v.to(dtype)
            return type(v)(cast(t) for t in v) if isinstance(v, (list, tuple)) else v

        args, kwargs = split_call(self._schema, [cast(v) for v in values])
        with autocast(device_type, enabled=False):
            return self(*args, **kwargs)

    def _record(self, values, flat, where, out):
        """One node for this call; the outputs handed back are the node's."""
        ctx = AutogradCtx(tuple(any(t.requires_grad for t in v) if isinstance(v, (list, tuple)) and
                                v and isinstance(v[0], Tensor) else isinstance(v, Tensor) and v.requires_grad
                                for v in values))
        if self._setup_context_fn is not None:
            kwarg_only = {a.name: v for a, v in zip(self._schema.arguments, values) if a.kwarg_only}
            if kwarg_only:  # torch hands them apart, as ``keyword_only_inputs``
                positional = tuple(v for a, v in zip(self._schema.arguments, values) if not a.kwarg_only)
                self._setup_context_fn(ctx, positional, kwarg_only, out)
            else:
                self._setup_context_fn(ctx, tuple(values), out)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        tensors = [o for o in outs if isinstance(o, Tensor)]
        if not tensors:
            return out
        n_positional = sum(not a.kwarg_only for a in self._schema.arguments)
        node = self._node_cls(self, ctx, tensors, where, n_positional,
                              tuple(isinstance(o, Tensor) for o in outs), [tuple(t.shape) for t in flat],
                              self._schema.returns == ["Tensor[]"])
        made = node(*flat)
        made = list(made) if isinstance(made, tuple) else [made]
        results = [made.pop(0) if isinstance(o, Tensor) else o for o in outs]
        if isinstance(out, list):
            return results
        return tuple(results) if isinstance(out, tuple) else results[0]

    def _check_no_alias(self, kernel, flat, out):
        outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]
        for i, o in enumerate(outs):
            others = flat + outs[:i]
            if any(o is t or _shares_memory(o, t) for t in others):
                raise RuntimeError(
                    f"{self._name} (with implementation in <module '{kernel.__module__}'>): The output of this "
                    f"custom operator (1) must not also be an input to this custom operator and (2) may not alias "
                    f"any inputs to this custom operator or other returns. The most common way to trigger this "
                    f"error is if we have y = custom_op(x) and y and x are the same Tensor. Please instead return a "
                    f"clone of the offending output tensor(s) (e.g. return x.clone()) or refactor the custom "
                    f"operator to not return y.")


def _shares_memory(a, b):
    x, y = a._data, b._data
    if x.size == 0 or y.size == 0 or _device.is_cuda_array(x) != _device.is_cuda_array(y):
        return False
    return bool(_device.array_module(x).may_share_memory(x, y))


def _detached(value):
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, (list, tuple)):
        return type(value)(_detached(v) for v in value)
    return value
