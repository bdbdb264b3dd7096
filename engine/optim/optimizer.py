"""``engine.optim.Optimizer``: parameter groups, per-parameter state and torch's state_dict format.

Subclasses update parameters in place on their raw arrays (no autograd) and keep their state
(momentum buffers, moment estimates, step counts) as engine tensors, so ``state_dict()`` looks
like PyTorch's.
"""
from collections import OrderedDict, defaultdict
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
    """A 1-element tensor hyper-parameter (e.g. a tensor lr) as a Python float."""
    return value.item() if isinstance(value, Tensor) else value


def _like(scalar, array):
    """A step's scalar for math with ``array``: a Python number as it is (numpy casts it to the array's dtype),
    a device scalar (a captured step's, ``Optimizer.apply_scalars``) cast to the array's dtype likewise."""
    return scalar if isinstance(scalar, (int, float)) else scalar.astype(array.dtype)


def _typename(obj):
    """The type name torch's messages show (``torch.FloatTensor`` style for tensors)."""
    return obj.type() if isinstance(obj, Tensor) else type(obj).__module__ + "." + type(obj).__qualname__


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


def _check_adam_arguments(lr, eps, betas, weight_decay):
    """torch's constructor checks shared by Adam, Adamax, NAdam and RAdam, with its messages."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
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
    p._version[0] += 1


def _grad_of(p, maximize):
    """``p``'s gradient array, negated when maximizing (never modified in place)."""
    g = p.grad._data
    return -g if maximize else g


def _add_weight_decay(g, p_arr, weight_decay):
    """L2 penalty folded into the gradient: ``g + weight_decay * p`` (a new array)."""
    return g + weight_decay * p_arr if weight_decay != 0 else g


def _lerp_(start, end, weight):
    """``start += weight * (end - start)`` in place, with torch's two-branch formula for accuracy."""
    diff = end - start
    if weight < 0.5:
        diff *= weight
        start += diff
    else:
        scalar = start.dtype.type  # 1 - weight in the array's precision, as torch's kernel does
        diff *= scalar(1) - scalar(weight)
        start[...] = end - diff


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

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._step_pre_hooks = OrderedDict()
        self._step_post_hooks = OrderedDict()
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
        self.__dict__.setdefault("_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_step_post_hooks", OrderedDict())
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
        if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
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
    def _register(self, hooks, hook):
        """Store ``hook`` under a fresh id and return a handle that removes it."""
        self._hook_id += 1
        hooks[self._hook_id] = hook
        return _HookHandle(hooks, self._hook_id)

    def register_step_pre_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs before each step; it may return new (args, kwargs)."""
        return self._register(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """``hook(optimizer, args, kwargs)`` runs after each step."""
        return self._register(self._step_post_hooks, hook)

    # ---- state_dict --------------------------------------------------------------------------
    def state_dict(self):
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}`` like torch."""
        index_of = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a ``state_dict()``: state tensors move to their parameter's device (and float dtype)."""
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size "
                             "of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast_state(param, value)
            else:
                state[key] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})


def _cast_state(param, value, key=None):
    """Rebuild a loaded state value, moving tensors to ``param``'s device; the step stays as is."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        arr = move(value._data, param.device)
        if param.is_floating_point() and arr.dtype != param._data.dtype:
            arr = arr.astype(param._data.dtype)
        return value if arr is value._data else _new(arr)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value
