"""``engine.optim.Optimizer``: parameter groups, per-parameter state and torch's state_dict format.

Subclasses update parameters in place on their raw arrays (no autograd) and keep their state
(momentum buffers, moment estimates, step counts) as engine tensors, so ``state_dict()`` looks
like PyTorch's.
"""
import warnings
from collections import OrderedDict, defaultdict
from contextlib import contextmanager
from copy import deepcopy
from itertools import chain

import numpy as np

from .. import _dtype, _layout
from .._device import move
from ..autograd import grad_mode
from ..ops._common import xp_of
from ..tensor import Tensor, _new


class _RequiredParameter:
    """Marks a hyper-parameter that every parameter group must give (``optim.optimizer.required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _to_scalar(value):
    """A 1-element tensor hyper-parameter (e.g. a tensor lr) as a host scalar of the tensor's dtype (a float32
    tensor lr gives ``np.float32``), so the step's scalar math (``lr / bias_correction``) runs in that precision
    as torch's 0-dim tensor math does; other values as they are."""
    return value._data.dtype.type(value.item()) if isinstance(value, Tensor) else value


def _real(arr):
    """A complex array viewed as (..., 2) real pairs sharing its memory (``torch.view_as_real``): torch's
    optimizers update a complex parameter as two independent real numbers. Real arrays as they are."""
    if arr.dtype.kind != "c":
        return arr
    xp = xp_of(arr)
    arr = xp.asarray(arr)  # a 0-dim result is a NumPy scalar: its parts need an array's memory to view
    real = arr.real
    return xp.lib.stride_tricks.as_strided(real, arr.shape + (2,), arr.strides + (real.itemsize,))


def _like(scalar, array):
    """A step's scalar for math with ``array``: a Python number as it is (numpy casts it to the array's dtype),
    a device scalar (a captured step's, ``Optimizer.apply_scalars``) cast to the array's dtype likewise."""
    return scalar if isinstance(scalar, (int, float)) else scalar.astype(array.dtype)


def _typename(obj):
    """The type name torch's messages show (``torch.typename``): ``torch.FloatTensor`` style for tensors, a
    built-in type's bare name (``float``), others with their module."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    return type(obj).__qualname__ if module in ("", "builtins") else module + "." + type(obj).__qualname__


def _zeros_like(p, fill=0):
    """A state tensor of ``p``'s shape, dtype and device filled with ``fill``."""
    xp = xp_of(p._data)
    arr = xp.zeros_like(p._data) if fill == 0 else xp.full_like(p._data, fill)
    return _new(arr)


def _step_tensor(fill=0.0, fused=False):
    """A fresh step counter (or other scalar state): a CPU scalar tensor of the default float dtype
    (float64 only when that is the default; float32 for fused optimizers), as torch keeps it."""
    dtype = np.float32 if fused else _dtype.get_default_dtype().np
    return _new(np.full((), fill, dtype))


def _check_lr(lr, positive=False):
    """torch's constructor check of ``lr``: a tensor lr has one element; the value is non-negative (positive for
    ``SparseAdam``)."""
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not (0.0 < lr if positive else 0.0 <= lr):
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_adam_arguments(lr, eps, betas, weight_decay):
    """torch's constructor checks shared by Adam, Adamax, NAdam and RAdam, with its messages."""
    _check_lr(lr)
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _check_fused(fused, foreach, differentiable):
    """torch's constructor checks of ``fused=True``: it excludes ``differentiable`` and ``foreach``."""
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _check_fused_param(p):
    """``fused=True`` takes floating-point parameters only (on every engine device), as torch."""
    if not p.is_floating_point():
        raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported "
                           f"devices: ['cpu', 'cuda'] but {p.dtype} and {p.device.type}")


def _bump_version(p):
    """Record an in-place update of ``p`` so autograd can detect stale saved tensors."""
    p._version_counter[0] += 1


def _grad_of(p, maximize):
    """``p``'s gradient array, negated when maximizing (never modified in place)."""
    g = p.grad._data
    return -g if maximize else g


# ---- torch's in-place tensor ops on arrays, with its half precision arithmetic ----------------------------
# Each torch op on float16/bfloat16 tensors computes in float32 and rounds its result once to the half dtype; its
# scalars are float32 too (``mul``, ``div``, ``lerp``, ``addcmul``, ``addcdiv``), except the ``alpha`` of ``add``
# and an added scalar, which are rounded to the half dtype first. NumPy's half arithmetic would round every
# intermediate and every scalar. Reading half arrays through ``_opmath`` and writing float32 results into half
# arrays in place gives torch's single rounding.
def _opmath(arr):
    """``arr`` as torch's CPU kernels compute with it: float16/bfloat16 in float32, other dtypes as they are."""
    return arr.astype(np.float32) if arr.dtype in _dtype.HALF_NP else arr


def _alpha(value, dtype):
    """A scalar as ``add(other, alpha=value)`` or ``add(value)`` uses it on a ``dtype`` tensor: rounded to a half
    dtype (then computed in float32); other dtypes take it as it is."""
    if dtype not in _dtype.HALF_NP:
        return value
    if isinstance(value, (int, float, np.generic)):
        return np.float32(dtype.type(value))
    return value.astype(dtype).astype(np.float32)  # a device scalar


def _new_tensor(value, dtype):
    """A torch op's new tensor of ``dtype`` (e.g. ``exp_avg_sq.sqrt()``) from its opmath ``value``: rounded to
    ``dtype`` (a half one) and read back in opmath for the next op."""
    return _opmath(value.astype(dtype, copy=False))


def _scale_(arr, factor):
    """``arr.mul_(factor)``."""
    if arr.dtype in _dtype.HALF_NP:
        arr[...] = _opmath(arr) * factor
    else:
        arr *= factor


def _addcmul_(arr, a, b, value):
    """``arr.addcmul_(a, b, value=value)``: ``arr += value * a * b``, rounded once."""
    arr += value * _opmath(a) * _opmath(b)


def _fused_half(p, group):
    """Whether ``p``'s step is torch's fused kernel on a half parameter, which computes the whole step in float32
    and rounds once (``_in_float32``)."""
    return bool(group.get("fused")) and p._data.dtype in _dtype.HALF_NP


@contextmanager
def _in_float32(p, states):
    """Run a step with ``p``, its gradient and its half state tensors (in ``states``, the optimizer's) as float32
    copies, rounded back into their own arrays at the end (state tensors the step creates take ``p``'s dtype)."""
    dtype = p._data.dtype
    state = states.get(p, {})
    swapped = [t for t in (p, p.grad, *state.values()) if isinstance(t, Tensor) and t._data.dtype == dtype]
    arrays = [t._data for t in swapped]
    for t in swapped:
        t._data = t._data.astype(np.float32)
    try:
        yield
    finally:
        for t, arr in zip(swapped, arrays):
            if t is not p.grad:
                arr[...] = t._data
            t._data = arr
        for key, value in states.get(p, {}).items():
            if isinstance(value, Tensor) and key != "step" and value._data.dtype == np.float32:
                value._data = value._data.astype(dtype)


def _add_weight_decay(g, p_arr, weight_decay):
    """L2 penalty folded into the gradient: ``grad.add(param, alpha=weight_decay)`` (a new array)."""
    if weight_decay == 0:
        return g
    return (_opmath(g) + _alpha(weight_decay, g.dtype) * _opmath(p_arr)).astype(g.dtype, copy=False)


def _lerp_(start, end, weight):
    """``start.lerp_(end, weight)``: ``start += weight * (end - start)`` in place, with torch's two-branch formula
    for accuracy."""
    diff = _opmath(end) - _opmath(start)
    if weight < 0.5:
        diff *= weight
        start += diff
    else:
        scalar = diff.dtype.type  # 1 - weight in the computing precision, as torch's kernel does
        diff *= scalar(1) - scalar(weight)
        start[...] = _opmath(end) - diff


class _HookHandle:
    """Removes a registered step hook."""

    def __init__(self, hooks, key):
        self.hooks, self.key = hooks, key

    def remove(self):
        self.hooks.pop(self.key, None)


def _wrap_step(step):
    """Run the optimizer's step hooks around ``step`` and remember that it was called."""

    def wrapped(self, *args, **kwargs):
        self._opt_called = True
        for hook in list(self._step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                args, kwargs = result
        if not self.takes_sparse_grads:
            _refuse_sparse_grads(self)
        with grad_mode.no_grad():
            out = step(self, *args, **kwargs)
        for hook in list(self._step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapped.__name__, wrapped.__doc__, wrapped.__qualname__ = step.__name__, step.__doc__, step.__qualname__
    wrapped._hooked = True
    return wrapped


def _refuse_sparse_grads(optimizer):
    """torch's error of an optimizer that takes dense gradients only, given a sparse one."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None and p.grad.layout is not _layout.strided:
                name = type(optimizer).__name__
                if name in ("Adam", "AdamW"):
                    raise RuntimeError("Adam does not support sparse gradients, please consider SparseAdam instead")
                raise RuntimeError(f"{name} does not support sparse gradients")


def sparse_grad_values(p, maximize):
    """(index tuple, values) of ``p``'s sparse gradient, coalesced (as torch's sparse updates read it), the
    values negated when maximizing."""
    grad = p.grad.coalesce()._data
    return tuple(grad.indices), -grad.values if maximize else grad.values


def is_sparse_grad(p):
    return p.grad.layout is not _layout.strided


class Optimizer:
    """Base class of all optimizers (see ``torch.optim.Optimizer``)."""

    #: whether ``step`` takes sparse gradients (torch's SGD, Adagrad and SparseAdam do); the others raise torch's
    #: error for them
    takes_sparse_grads = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _wrap_step(step)

    #: the tables of registered hooks, each an OrderedDict of id -> hook
    _HOOK_TABLES = ("_step_pre_hooks", "_step_post_hooks", "_state_dict_pre_hooks", "_state_dict_post_hooks",
                    "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")

    def __init__(self, params, defaults):
        self.defaults = defaults
        for table in self._HOOK_TABLES:
            setattr(self, table, OrderedDict())
        self._hook_id = 0
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors "
                            "or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for table in self._HOOK_TABLES:
            self.__dict__.setdefault(table, OrderedDict())
        self.__dict__.setdefault("_hook_id", 0)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {k}: {group[k]}\n" for k in sorted(group) if k != "params")
        return text + ")"

    # ---- parameter groups --------------------------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group of parameters with its own hyper-parameters (missing ones from defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the "
                            "ordering of tensors in sets will change between runs. Please use a list instead.")
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        param_group["params"] = params
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(p))
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required optimization "
                                 f"parameter {name}")
            param_group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for g in self.param_groups:
            if ("param_names" in g) != ("param_names" in param_group):
                kind = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if len({id(p) for p in params}) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's gradient: to None (default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    grad = p.grad
                    grad.grad_fn = None
                    grad.requires_grad = False
                    grad._data[...] = 0
                    _bump_version(grad)

    # ---- steps in two parts, for a step captured into a CUDA graph -----------------------------
    # An optimizer that defines ``_scalars(p, group)`` (the host part of one parameter's update: advance its
    # step counter, return the numbers that change from step to step, such as the learning rate) and
    # ``_apply(p, group, scalars)`` (the array part, given those numbers as Python floats or as device
    # scalars) can have its array part captured once and replayed, the numbers written to the device before
    # each replay (``nn.Graph`` on the GPU). ``_update`` then does the two in a row.
    @property
    def captures(self):
        """Whether this optimizer's step can be captured (it defines ``_scalars`` and ``_apply``)."""
        return hasattr(type(self), "_apply")

    def step_scalars(self):
        """The host part of a step: [(group, parameter, its scalars)] for every parameter with a gradient."""
        return [(group, p, self._scalars(p, group)) for group in self.param_groups for p in group["params"]
                if p.grad is not None]

    def apply_scalars(self, items):
        """The array part of a step, for ``step_scalars``' items (their scalars may be device scalars)."""
        with grad_mode.no_grad():
            for group, p, scalars in items:
                self._apply(p, group, scalars)

    @_wrap_step
    def step(self, closure=None):
        """Update every parameter that has a gradient (``_update(p, group)``); returns the closure's loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, group)
        return loss

    def _update(self, p, group):
        """One parameter's update; optimizers that keep the default ``step`` implement it, or ``_scalars`` and
        ``_apply``."""
        if not self.captures:
            raise NotImplementedError(f"{type(self).__name__} implements neither step() nor _update()")
        self._apply(p, group, self._scalars(p, group))

    def _closure_loss(self, closure):
        """Re-evaluate the model through ``closure`` (with grad enabled) and return its loss."""
        if closure is None:
            return None
        with grad_mode.enable_grad():
            return closure()

    # ---- hooks -------------------------------------------------------------------------------
    def _register(self, hooks, hook, prepend=False):
        """Store ``hook`` under a fresh id (first in line with ``prepend``) and return a handle that removes it."""
        self._hook_id += 1
        hooks[self._hook_id] = hook
        if prepend:
            hooks.move_to_end(self._hook_id, last=False)
        return _HookHandle(hooks, self._hook_id)

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before each step; it may return new (args, kwargs)."""
        return self._register(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after each step."""
        return self._register(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs before ``state_dict()`` builds its result."""
        return self._register(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs on ``state_dict()``'s result; it may return a new one."""
        return self._register(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """``hook(optimizer, state_dict)`` runs on (a shallow copy of) what ``load_state_dict`` is given; it may
        return the state dict to load instead."""
        return self._register(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """``hook(optimizer)`` runs after ``load_state_dict`` has loaded."""
        return self._register(self._load_state_dict_post_hooks, hook, prepend)

    # ---- state_dict --------------------------------------------------------------------------
    def state_dict(self):
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`` like torch, with the state
        dict hooks run around it."""
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self)
        index_of = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for hook in list(self._state_dict_post_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict):
        """Load a ``state_dict()``: state tensors move to their parameter's device (and float dtype); the step
        counters of fused or capturable groups become float32 tensors, as torch's."""
        state_dict = state_dict.copy()
        for hook in list(self._load_state_dict_pre_hooks.values()):
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                             "of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        float32_steps = {index for s in saved_groups if s.get("fused") or s.get("capturable") for index in s["params"]}
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast_state(param, value, float32_step=key in float32_steps)
            else:
                state[key] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})
        for hook in list(self._load_state_dict_post_hooks.values()):
            hook(self)


def _cast_state(param, value, key=None, float32_step=False):
    """Rebuild a loaded state value, moving tensors to ``param``'s device; the step stays as is (a float32 tensor on
    ``param``'s device with ``float32_step``)."""
    if isinstance(value, Tensor):
        if key == "step":
            return _new(move(value._data, param.device).astype(np.float32)) if float32_step else value
        arr = move(value._data, param.device)
        if param.is_floating_point() and arr.dtype != param._data.dtype:
            arr = arr.astype(param._data.dtype)
        return value if arr is value._data else _new(arr)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k, float32_step) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value
