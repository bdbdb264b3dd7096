"""Forward-mode AD's machinery: the tangent table and the ``Function.__call__`` wrapper that fills it.

While a dual level is active (``forward_ad.py``), every op call whose inputs carry tangents also computes its
outputs' tangents, by one generic rule instead of a per-op jvp table: the op runs again on fresh
graph-connected stand-ins of its inputs, ``g = J^T v`` is taken for a dummy cotangent ``v`` with
``create_graph=True``, and ``J t = d<g, t>/dv``. That is one extra forward and two backward passes per op:
slow, but right wherever the op has a differentiable backward (``Function.backward_tensors``); an op without
one raises the double-backward error that names it. View ops take the view of the tangent instead (cheap,
and the tangent shares the tangent's storage as torch's does); an in-place op rewrites the target's tangent
in place, so views of it see the change.

The wrapper is installed on entering a level and removed on exiting it (as the profiler does,
``profiler/_hooks.py``), so outside a level ops run the original ``Function.__call__`` untouched. Tangents
live in a side table keyed by tensor identity, each entry dropped when its tensor dies or the level exits.
Where grad mode is on and the inputs or tangents require grad, the tangents are recorded for reverse mode
too (reverse-over-forward, e.g. a Hessian-vector product); otherwise they are constants.
"""
import contextlib
import copy
import weakref

from .._dtype import is_floating
from . import grad_mode, tracing
from .function import Function

_tangents = {}  # id(tensor) -> (weak reference to the tensor, its tangent)
_state = {"original": None, "busy": False}


def tangent_of(tensor):
    """The tangent ``tensor`` carries at the active level, or None."""
    entry = _tangents.get(id(tensor))
    return entry[1] if entry is not None and entry[0]() is tensor else None


def set_tangent(tensor, tangent):
    """Attach ``tangent`` to ``tensor``; the entry goes when ``tensor`` is collected."""
    key = id(tensor)

    def drop(ref, key=key):
        entry = _tangents.get(key)
        if entry is not None and entry[0] is ref:
            del _tangents[key]
    _tangents[key] = (weakref.ref(tensor, drop), tangent)


def untracked(call, *args):
    """``call(*args)`` with tangent propagation off (the engine's own work on primals and tangents)."""
    busy = _state["busy"]
    _state["busy"] = True
    try:
        return call(*args)
    finally:
        _state["busy"] = busy


def install():
    """Route every op call through the tangent-propagating wrapper (kept if a profiler that wrapped it
    outlived the last level and put it back: it then passes every call straight through)."""
    if Function.__call__ is not _dual_call:
        _state["original"] = Function.__call__
        Function.__call__ = _dual_call


def uninstall():
    """Put the original ``Function.__call__`` back and forget every tangent."""
    if Function.__call__ is _dual_call:
        Function.__call__ = _state["original"]
    _tangents.clear()


def _dual_call(fn, *inputs):
    """``Function.__call__`` while a level is active: the op, then its outputs' tangents (an in-place op's
    first, from its inputs as they were before it wrote)."""
    original = _state["original"]
    if _state["busy"]:
        return original(fn, *inputs)
    tangents = [tangent_of(x) for x in inputs]
    if all(t is None for t in tangents):
        return original(fn, *inputs)
    template = copy.copy(fn)
    if fn.inplace:
        out_tangents = _linearized(template, inputs, tangents)
        result = original(fn, *inputs)
        _store_inplace(result if not isinstance(result, tuple) else result[0], out_tangents[0])
        rest = result[1:] if isinstance(result, tuple) else ()
        for r, t in zip(rest, out_tangents[1:]):
            _store(r, t)
        return result
    result = original(fn, *inputs)
    outs = result if isinstance(result, tuple) else (result,)
    if fn.is_view and all(t is None for t in tangents[1:]):
        out_tangents = _view_of_tangent(template, inputs, tangents[0])
    else:
        out_tangents = _linearized(template, inputs, tangents)
    for r, t in zip(outs, out_tangents):
        _store(r, t)
    return result


def _store(result, tangent):
    """Attach an output's tangent; an integer (or bool) output has none."""
    if tangent is not None and is_floating(result._data.dtype):
        set_tangent(result, tangent)


def _store_inplace(target, tangent):
    """The tangent of a tensor an in-place op wrote into: written into its old tangent where it has one (so
    views of that tangent follow, as in torch), else attached; a view with no tangent of its own cannot give
    its base one here."""
    if tangent is None or not is_floating(target._data.dtype):
        return
    old = tangent_of(target)
    if old is not None:
        if tangent.requires_grad:  # recorded: a differentiable copy (torch's error if ``old`` is a leaf)
            untracked(old.copy_, tangent)
        else:
            old._data[...] = tangent._data.astype(old._data.dtype, copy=False)
            old._version_counter[0] += 1
        return
    if target._base is not None:
        raise RuntimeError("forward AD: an in-place operation with a dual input on a view whose base has no "
                           "tangent is not supported; make the base dual first")
    set_tangent(target, tangent)


def _view_of_tangent(template, inputs, tangent):
    """A view op's output tangents: the same view of the input's tangent."""
    with _untraced():
        out = untracked(template, tangent, *inputs[1:])
    return out if isinstance(out, tuple) else (out,)


@contextlib.contextmanager
def _untraced():
    """Hide the engine's helper work from an active trace: it is no part of the user's graph."""
    tracer = tracing.active
    tracing.active = None
    try:
        yield
    finally:
        tracing.active = tracer


def _linearized(template, inputs, tangents):
    """``J t`` for each output of ``template`` at ``inputs``, by double-vjp on graph-connected stand-ins.
    Where grad mode is on and an input or a tangent requires grad, ``J t`` is recorded for reverse mode
    (connected to the inputs and the tangents, as torch's tangents are); otherwise it is a constant."""
    from ..tensor import Tensor
    differentiable = grad_mode.is_grad_enabled() and any(
        isinstance(x, Tensor) and x.requires_grad for x in (*inputs, *tangents))
    with _untraced(), grad_mode.enable_grad():
        return untracked(_jvp, template, inputs, tangents, differentiable)


def _standin(x, tangent, first_of_inplace, differentiable):
    """What the op reruns on in place of input ``x``: for an input with a tangent, a tensor of its own (per
    position, so that ``x * x`` counts both) that gradients can be taken with respect to; for one without,
    ``x`` itself when the result is recorded, else a constant. An in-place op's target is a copy."""
    from ..tensor import _new
    if tangent is None:
        if first_of_inplace:
            return None, (x.clone() if differentiable else _new(x._data.copy()))
        return None, (x if differentiable else _new(x._data))
    leaf = _new(x._data, requires_grad=True)
    if differentiable and x.requires_grad:
        leaf = x.view_as(x)
    return leaf, (leaf.clone() if first_of_inplace else leaf)


def _jvp(template, inputs, tangents, differentiable):
    from ..ops import zeros_like
    from ..tensor import Tensor
    from . import grad as autograd_grad
    standins, wrt, used = [], [], []
    for i, (x, t) in enumerate(zip(inputs, tangents)):
        if not isinstance(x, Tensor):
            standins.append(x)
            continue
        leaf, standin = _standin(x, t, template.inplace and i == 0, differentiable)
        standins.append(standin)
        if leaf is not None:
            wrt.append(leaf)
            used.append(t)
    outs = template(*standins)
    outs = outs if isinstance(outs, tuple) else (outs,)
    live = [k for k, o in enumerate(outs) if o.requires_grad]
    if not live:
        return tuple(None for _ in outs)
    cotangents = [zeros_like(outs[k]).requires_grad_() for k in live]
    grads = autograd_grad([outs[k] for k in live], wrt, cotangents, create_graph=True, allow_unused=True)
    inner = None
    for g, t in zip(grads, used):
        if g is not None:
            term = _real_inner(g, t.to(g.dtype))
            inner = term if inner is None else inner + term
    result = [None] * len(outs)
    if inner is None or not inner.requires_grad:
        for k in live:
            result[k] = zeros_like(outs[k])
        return tuple(result)
    per_output = autograd_grad([inner], cotangents, create_graph=differentiable, allow_unused=True,
                               materialize_grads=True)
    for k, tangent in zip(live, per_output):
        result[k] = tangent if differentiable else tangent.detach()
    return tuple(result)


def _real_inner(g, t):
    """Re<g, t>: for g = the gradient of Re<v, f(x)>, this is Re<v, J t>, whose gradient in v is J t; the real
    part makes the same rule hold for complex tensors under torch's gradient convention."""
    if g.is_complex():
        return (g.conj() * t).real.sum()
    return (g * t).sum()
