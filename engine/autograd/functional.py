"""Derivatives of whole functions (``torch.autograd.functional``): vjp, jvp, jacobian, hessian, vhp and hvp.

Each call runs ``func`` on copies of ``inputs`` that require grad and differentiates through the recorded graph.
Outputs and derivatives come back detached unless ``create_graph=True``, in which case inputs that already
require grad stay connected (they enter as views of themselves) so the results can be differentiated again.
``inputs`` (and ``v``) are a Tensor or a tuple of Tensors; results follow the same nesting, as in torch.

There is no forward-mode AD in the engine: ``jvp`` (and ``jacobian(strategy="forward-mode")``) use the
double-vjp trick, as torch's ``jvp`` does: ``u -> J^T u`` is linear in a dummy cotangent ``u``, so differentiating
it with respect to ``u`` against ``v`` gives ``J v``; this needs ``grad(..., create_graph=True)``. ``hvp`` returns
``v^T H``, which is ``H v`` because the Hessian of a twice continuously differentiable function is symmetric: one
double backward instead of torch's two (a third-order derivative of the engine's formulas).
"""
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def _as_tuple(value, arg_name, fn_name):
    """(whether ``value`` was a tuple, ``value`` as a tuple of Tensors)."""
    from ..tensor import Tensor  # here: ``engine.tensor`` imports ``engine.autograd``, which imports this module
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(item)}.")
    return is_tuple, items


def _unpack(res, flags):
    """``res`` (a tuple, or a tuple of tuples for (outputs, inputs) ``flags``) unwrapped where the user passed a
    single Tensor rather than a tuple."""
    if isinstance(flags, tuple):
        out_tuple, in_tuple = flags
        if not in_tuple:
            res = tuple(row[0] for row in res)
        return res if out_tuple else res[0]
    return res if flags else res[0]


def _prepare(tensors, create_graph, need_graph):
    """The tensors ``func`` sees: connected views of tensors that require grad when building a graph for higher
    derivatives, fresh leaves (requiring grad when ``need_graph``) otherwise."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in tensors)


def _finish(tensors, create_graph):
    """Results detached unless the caller asked for a graph (nested tuples too)."""
    if tensors and isinstance(tensors[0], tuple):
        return tuple(_finish(t, create_graph) for t in tensors)
    return tensors if create_graph else tuple(t.detach() for t in tensors)


def _check_v(v, like, like_is_tuple):
    if len(v) != len(like):
        if like_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, like)):
        if a.shape != b.shape:
            where = f"Entry {i} in " if like_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.shape} but got {a.shape}.")


_NEEDS_GRAD = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The outputs must be computed "
               "in a differentiable manner from the input when running in strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the user-provided "
                   "function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided function with respect "
                "to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is twice differentiable and that the jacobian depends on the inputs (this "
                "would be violated by a linear function for example).",
}


def _check_requires_grad(tensors, kind, strict):
    """``strict=True``: every tensor exists and requires grad (torch's message for each ``kind``)."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError(_NEEDS_GRAD[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad (None for every input when none does)."""
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    from . import grad as autograd_grad  # looked up per call: ``engine.autograd`` imports this module
    outs, grads = zip(*pairs)
    return autograd_grad(list(outs), list(inputs), list(grads), retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=True)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict "
            "mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when "
                  "using the double backward trick to compute forward mode gradients. This is not allowed in "
                  "strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed "
                   "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the double "
                         "backward trick to replace forward mode AD.",
}


def _fill_zeros(grads, refs, strict, create_graph, stage):
    """Zeros for the gradients autograd left undefined (errors instead under ``strict``)."""
    from ..ops import zeros_like
    out = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _v_or_default(v, like, like_is_tuple, fn_name, create_graph, where):
    """``v`` as a checked tuple; None only when ``like`` is one single-element tensor."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if {where} single Tensor with a single element.")
        return None
    v = _prepare(_as_tuple(v, "v", fn_name)[1], create_graph, need_graph=False)
    _check_v(v, like, like_is_tuple)
    return v


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``v^T J``): the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _v_or_default(v, outputs, out_tuple, "vjp", create_graph,
                          "the user-provided function returns a")
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_zeros(grads, inputs, strict, create_graph, "back")
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(result, create_graph), in_tuple)


def _double_vjp_jvp(outputs, inputs, v, strict, create_graph):
    """``J v`` by differentiating ``u -> J^T u`` with respect to the dummy cotangent ``u``."""
    from ..ops import zeros_like
    with enable_grad():
        dummies = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        return _fill_zeros(grads, outputs, strict, create_graph, "back_trick")


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``J v``): the Jacobian-vector product at ``inputs`` (by the double-vjp trick)."""
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_or_default(v, inputs, in_tuple, "jvp", create_graph, "the input to the user-provided function is a")
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
    result = _double_vjp_jvp(outputs, inputs, v, strict, create_graph)
    return _unpack(_finish(outputs, create_graph), out_tuple), _unpack(_finish(result, create_graph), out_tuple)


def one_hot_like(like, index):
    """A tensor shaped, typed and placed like ``like``, 1 at flat ``index`` and 0 elsewhere (a basis cotangent or
    tangent; ``gradcheck`` and ``engine.func`` use it too)."""
    hot = like.new_zeros(like.shape)  # contiguous, whatever the strides of ``like`` (zeros_like keeps them)
    hot.view(-1)[index] = 1
    return hot


def _reverse_jacobian(outputs, inputs, create_graph, strict):
    """Row by row: one backward pass per output element, against a one-hot cotangent."""
    from ..ops import stack, zeros_like
    rows_per_output = []
    for i, out in enumerate(outputs):
        columns = [[] for _ in inputs]
        for k in range(out.numel()):
            grads = _grad((out,), inputs, (one_hot_like(out, k),), create_graph=create_graph, retain_graph=True)
            for j, (g, inp) in enumerate(zip(grads, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           "This is not allowed in strict mode.")
                    g = zeros_like(inp)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                columns[j].append(g)
        rows_per_output.append(tuple(
            stack(col).view(*out.shape, *inp.shape) if col
            else inp.new_zeros((*out.shape, *inp.shape))
            for col, inp in zip(columns, inputs)))
    return tuple(rows_per_output)


def _forward_jacobian(func, inputs):
    """Column by column: one Jacobian-vector product per input element, all from one graph of ``u -> J^T u``
    (the double-vjp trick)."""
    from ..ops import stack, zeros_like
    _, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = _prepare(inputs, False, need_graph=True)
    with enable_grad():
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        dummies = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _fill_zeros(_grad(outputs, inputs, dummies, create_graph=True), inputs, False, False, "back")
    per_output = [[] for _ in outputs]
    for inp, g in zip(inputs, grad_inputs):
        columns = [_grad((g,), dummies, (one_hot_like(inp, k),), retain_graph=True) for k in range(inp.numel())]
        for i, out in enumerate(outputs):
            col = [(zeros_like(out) if jv[i] is None else jv[i]).reshape(-1) for jv in columns]
            jac = stack(col, dim=-1) if col else out.new_zeros((out.numel(), 0))
            per_output[i].append(jac.view(*out.shape, *inp.shape))
    return out_tuple, per_output  # lists, as torch's forward-mode jacobian returns


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: ``J[i][j]`` has shape ``outputs[i].shape + inputs[j].shape``.

    ``vectorize`` is accepted for torch's signature; the rows are computed one backward pass each either way.
    ``strategy="forward-mode"`` (needs ``vectorize=True``, as in torch) builds it column by column with the
    double-vjp trick.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                         'prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('engine.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('engine.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                               'not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                      "implemented for `vectorize=True`.")
        in_tuple = isinstance(inputs, tuple)
        out_tuple, jac = _forward_jacobian(func, inputs)
        return _unpack(jac, (out_tuple, in_tuple))
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("engine.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        jac = _reverse_jacobian(outputs, inputs, create_graph, strict)
    return _unpack(_finish(jac, create_graph), (out_tuple, in_tuple))


def _scalar_output(func, fn_name, strict):
    """``func`` checked to return one single-element Tensor (returned as a 0-d tensor)."""
    def wrapped(*inputs):
        out = func(*inputs)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
        _check_requires_grad(outs, "outputs", strict)
        if is_tuple:
            raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                               "element")
        return out.squeeze()
    return wrapped


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func`` at ``inputs``: the Jacobian of its gradient, ``H[i][j]`` shaped
    ``inputs[i].shape + inputs[j].shape``."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    scalar = _scalar_output(func, "hessian", strict)

    def gradient(*inp):
        jac = jacobian(scalar, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return _unpack(res, (in_tuple, in_tuple))


def _first_gradient(func, inputs, v, fn_name, create_graph, strict):
    """The shared start of vhp and hvp: prepared inputs, checked ``v``, the output and its gradient (with graph)."""
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _v_or_default(v, inputs, in_tuple, fn_name, create_graph, "the input to the user-provided function is a")
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
        _check_requires_grad(outputs, "outputs", strict)
        if out_tuple:
            raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
        if outputs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                               "element")
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    return in_tuple, inputs, v, outputs, jac


def _hessian_product(func, inputs, v, create_graph, strict, fn_name, stage):
    in_tuple, inputs, v, outputs, jac = _first_gradient(func, inputs, v, fn_name, create_graph, strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_zeros(grads, inputs, strict, create_graph, stage)
    return _finish(outputs, create_graph)[0], _unpack(_finish(result, create_graph), in_tuple)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``v^T H``): the vector-Hessian product of scalar ``func`` at ``inputs``."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp", "double_back")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(``func(inputs)``, ``H v``): the Hessian-vector product of scalar ``func`` at ``inputs``, computed as
    ``v^T H`` (the Hessian is symmetric; see the module's docstring)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp", "double_back_trick")
