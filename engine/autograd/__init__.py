"""Reverse-mode automatic differentiation: ``Function``, ``backward``, ``grad``, grad modes and anomaly detection."""
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function, FunctionCtx
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                        set_grad_enabled)
from .graph import run_backward


def _as_list(x):
    from ..tensor import Tensor
    if x is None:
        return None
    return [x] if isinstance(x, Tensor) else list(x)


def _root_grads(tensors, grad_tensors):
    from .._device import array_module
    from ..tensor import to_array
    from .double_backward import check_root_shape
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if g is None:
            if t._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            out.append(array_module(t._data).ones(t._data.shape, t._data.dtype))
        else:
            g = to_array(g)
            check_root_shape(i, g.shape, t)
            out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves (``torch.autograd.backward``)."""
    tensors = _as_list(tensors)
    if create_graph and inputs is None:
        from .double_backward import root_grad_tensors, run_backward_graph
        run_backward_graph(tensors, root_grad_tensors(tensors, _as_list(grad_tensors)),
                           retain_graph=retain_graph is None or bool(retain_graph))
        return
    if inputs is not None:
        for t in tensors:
            t.backward(None if grad_tensors is None else grad_tensors, retain_graph, create_graph, inputs)
        return
    run_backward(tensors, _root_grads(tensors, grad_tensors), retain_graph=bool(retain_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated into .grad)."""
    from .function import _edge
    from ..tensor import _new
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    keys = []
    captures = {}
    for t in inputs:
        key = (t.grad_fn, t._output_index) if t.grad_fn is not None else _edge(t)[0]
        keys.append(key)
        captures[key] = None
    if create_graph:  # retain_graph defaults to create_graph, as in torch
        from .double_backward import root_grad_tensors, run_backward_graph
        run_backward_graph(outputs, root_grad_tensors(outputs, _as_list(grad_outputs)),
                           retain_graph=retain_graph is None or bool(retain_graph), captures=captures)
    else:
        run_backward(outputs, _root_grads(outputs, grad_outputs), retain_graph=bool(retain_graph),
                     captures=captures)
    result = []
    for t, key in zip(inputs, keys):
        g = captures[key]
        if g is None:
            if not (allow_unused or materialize_grads):
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
            result.append(_new(array_module_zeros(t)) if materialize_grads else None)
        else:
            result.append(g if create_graph else _new(g))
    return tuple(result)


def array_module_zeros(t):
    from .._device import array_module
    return array_module(t._data).zeros(t._data.shape, t._data.dtype)


from . import forward_ad, functional  # noqa: E402,F401  (torch.autograd's submodules of these names)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401
from .variable import Variable  # noqa: E402,F401

__all__ = ["Function", "FunctionCtx", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "detect_anomaly", "set_detect_anomaly",
           "GradcheckError", "Variable", "forward_ad", "functional", "gradcheck", "gradgradcheck", "profiler"]


def __getattr__(name):
    """``engine.autograd.profiler`` imported on first access (it loads engine.profiler: ~20 ms of ``import engine``)."""
    if name == "profiler":
        import importlib
        return importlib.import_module(f"{__name__}.profiler")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
