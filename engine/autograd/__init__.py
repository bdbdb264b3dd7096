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
    """Accumulate gradients of ``tensors`` into the leaves (``torch.autograd.backward``); with ``inputs``, into
    those tensors' ``.grad`` only (leaves or not)."""
    tensors = _as_list(tensors)
    _check_counts(tensors, _as_list(grad_tensors))
    if inputs is not None:
        inputs = _as_list(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        accumulate_into(tensors, grad_tensors, inputs, retain_graph, create_graph)
        return
    if create_graph:
        from .double_backward import root_grad_tensors, run_backward_graph
        run_backward_graph(tensors, root_grad_tensors(tensors, _as_list(grad_tensors)),
                           retain_graph=retain_graph is None or bool(retain_graph))
        return
    run_backward(tensors, _root_grads(tensors, grad_tensors), retain_graph=bool(retain_graph))


def accumulate_into(tensors, grad_tensors, inputs, retain_graph, create_graph):
    """``backward(..., inputs=inputs)``: the gradients of ``tensors`` added into each input's ``.grad`` (one
    pass over the graph, whatever the number of roots)."""
    grads = grad(tensors, inputs, grad_tensors, retain_graph=retain_graph, create_graph=create_graph,
                 allow_unused=True)
    for t, g in zip(inputs, grads):
        if g is None:
            continue
        if t._grad is None:
            t.grad = g
        elif create_graph:
            t.grad = t._grad + g
        else:
            t.grad._data += g._data


def _check_counts(tensors, grad_tensors):
    if grad_tensors is not None and len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grad_tensors)} gradients")


def _check_outputs(outputs):
    """torch's error for an output that no gradient can flow from."""
    for i, t in enumerate(outputs):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (not accumulated into .grad).
    ``only_inputs`` is ignored (torch deprecated it); ``is_grads_batched``: the first dimension of every
    ``grad_outputs`` tensor is a batch of cotangents, each given its own pass (torch vmaps the pass), and
    the results come stacked."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grad_outputs = _as_list(grad_outputs)
    _check_counts(outputs, grad_outputs)
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    _check_outputs(outputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    return _grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads)


def _grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    from .function import _edge
    from ..tensor import _new
    keys = []
    captures = {}
    for t in inputs:
        key = (t.grad_fn, t._output_index) if t.grad_fn is not None else (_edge(t) or (None,))[0]
        keys.append(key)
        captures[key] = None
    if create_graph:  # retain_graph defaults to create_graph, as in torch
        from .double_backward import root_grad_tensors, run_backward_graph
        run_backward_graph(outputs, root_grad_tensors(outputs, grad_outputs),
                           retain_graph=retain_graph is None or bool(retain_graph), captures=captures)
    else:
        run_backward(outputs, _root_grads(outputs, grad_outputs), retain_graph=bool(retain_graph),
                     captures=captures)
    result = []
    for i, (t, key) in enumerate(zip(inputs, keys)):
        g = captures[key]
        if g is None:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
            result.append(_unused(t, create_graph) if materialize_grads else None)
        else:
            result.append(g if create_graph else _new(g))
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad`` with ``is_grads_batched``: one pass per cotangent of the batch, the results stacked (a None where
    no pass reached the input, unless ``materialize_grads``)."""
    from ..ops import stack
    grad_outputs = grad_outputs or [None] * len(outputs)
    sizes = set()
    for i, (g, out) in enumerate(zip(grad_outputs, outputs)):
        if g is None:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        if tuple(g.shape[1:]) != tuple(out.shape) or g.dim() == 0:  # torch names the shape past two dims
            raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output "
                               "as the batch dimension. The sizes of the remaining dimensions are expected to "
                               f"match the shape of corresponding output, but a mismatch was detected: "
                               f"grad_output[{i}] has a shape of {g.shape[2:]} and output[{i}] has a shape of "
                               f"{out.shape}. If you only want some tensors in `grad_output` to be considered "
                               "batched, consider using vmap.")
        sizes.add(g.shape[0])
    if len(sizes) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{[g.shape[0] for g in grad_outputs]} for the mapped dimension")
    _check_outputs(outputs)
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    n = sizes.pop()
    keep = retain_graph if retain_graph is not None else create_graph
    per = [_grad(outputs, inputs, [g[b] for g in grad_outputs], True if b < n - 1 else keep, create_graph,
                 allow_unused or materialize_grads, False) for b in range(n)]
    return tuple(_unused(t, create_graph) if row[0] is None and materialize_grads else
                 None if row[0] is None else stack(row) for t, row in zip(inputs, zip(*per)))


def _unused(t, create_graph):
    """``materialize_grads``' gradient of an input no path reached: zeros like it (requiring grad under
    ``create_graph``, as torch's, so a later grad of it works), never batched."""
    from .._device import array_module
    from ..tensor import _new
    return _new(array_module(t._data).zeros(t._data.shape, t._data.dtype), requires_grad=bool(create_graph))


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
