"""torch.func's gradient transforms: grad, grad_and_value, vjp, jvp, jacrev, jacfwd and hessian.

They run on the ordinary autograd engine (see ``_level.py`` for how nesting works without functorch's levels).
Forward-mode products (``jvp``, ``jacfwd``) use the double-vjp trick, as ``autograd.functional.jvp`` does: with a
dummy cotangent ``u`` that requires grad, ``J^T u`` is recorded (``create_graph=True``) and differentiated with
respect to ``u`` against the tangent, which gives ``J t``. ``hessian`` is ``jacrev(jacrev(f))``: the same numbers
as torch's ``jacfwd(jacrev(f))`` (a Hessian is symmetric), from second-order gradients only.
"""
import functools

from ..autograd.functional import one_hot_like
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..tensor import Tensor
from ._level import Level
from ._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "functionalize",
           "debug_unwrap"]


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """Gradients of the outputs that require grad; zeros where an input is unused or nothing requires grad."""
    from ..autograd import grad as autograd_grad
    from ..ops import zeros_like
    grad_outputs = [None] * len(outputs) if grad_outputs is None else list(grad_outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(zeros_like(x) for x in inputs)
    outs, grads = zip(*pairs)
    result = autograd_grad(list(outs), list(inputs), list(grads), create_graph=create_graph,
                           retain_graph=create_graph if retain_graph is None else retain_graph, allow_unused=True)
    return tuple(zeros_like(x) if g is None else g for g, x in zip(result, inputs))


def _check_argnum(argnum, num_args):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if -num_args <= argnum < num_args:
        return argnum % num_args
    raise RuntimeError(f"Got argnum={argnum}, but only {num_args} positional inputs")


def _argnums(argnums, num_args):
    """``argnums`` checked and made non-negative (an int, or a non-empty tuple of distinct ints)."""
    if isinstance(argnums, int):
        return _check_argnum(argnums, num_args)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    wrapped = tuple(_check_argnum(a, num_args) for a in argnums)
    if not wrapped:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return wrapped


def _select(args, argnums):
    """The arguments ``argnums`` names: one argument for an int, a tuple of them for a tuple."""
    return args[argnums] if isinstance(argnums, int) else tuple(args[i] for i in argnums)


def _replace(args, argnums, values):
    if isinstance(argnums, int):
        return tuple(values if i == argnums else a for i, a in enumerate(args))
    table = dict(zip(argnums, values))
    return tuple(table.get(i, a) for i, a in enumerate(args))


def _differentiable_args(level, args, argnums):
    """(args with the differentiated ones replaced by the level's inputs, those inputs flat, their spec)."""
    flat, spec = tree_flatten(_select(args, argnums))
    flat = [level.differentiable(x) for x in flat]
    return _replace(args, argnums, tree_unflatten(flat, spec)), flat, spec


def _split_aux(output, has_aux, api):
    """(output, aux) of ``func``'s result; aux must hold tensors only, as torch requires of it."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    for leaf in tree_flatten(output[1])[0]:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return output


def _differentiable_dtype(t):
    return t.is_floating_point() or t.is_complex()


def _sizes(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _check_dual(primal, tangent):
    """torch's checks when it pairs a primal with its tangent (forward-mode AD's ``make_dual``)."""
    for name, t in (("primal", primal), ("tangent", tangent)):
        if not _differentiable_dtype(t):
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {t.dtype}")
    if tangent.shape != primal.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {_sizes(primal.shape)} while the given "
                           f"forward gradient is of size {_sizes(tangent.shape)}.")


def _check_cotangents(outputs, cotangents):
    """torch.autograd.grad's checks of the cotangents against the outputs they weigh."""
    for i, (o, ct) in enumerate(zip(outputs, cotangents)):
        if not isinstance(ct, Tensor):
            continue
        if ct.shape != o.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {ct.shape} and output[{i}] has "
                               f"a shape of {o.shape}.")
        if ct.is_complex() != o.is_complex():
            raise RuntimeError("For complex Tensors, both grad_output and output are required to have the same "
                               f"dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {ct.dtype} and "
                               f"output[{i}] has a dtype of {o.dtype}.")


def _check_tensor_outputs(flat, api):
    if len(flat) < 1 or (len(flat) == 1 and flat[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {flat})")
    for o in flat:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of scalar ``func`` with respect to the ``argnums`` arguments, ``func``'s
    value); with ``has_aux``, ``func`` returns (value, aux) and the result is (gradient, (value, aux))."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        level = Level()
        with enable_grad():
            nums = _argnums(argnums, len(args))
            new_args, flat_inputs, spec = _differentiable_args(level, args, nums)
            output, aux = _split_aux(func(*new_args, **kwargs), has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                                   "APIs instead?")
            if output.is_complex():
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                   f"{output.dtype}")
            create = level.needs_graph([output])
            keep = create or level.reaches_outside(tree_flatten(aux)[0])
            grads = _autograd_grad([output], flat_inputs, create_graph=create, retain_graph=keep)
        result = tree_unflatten(grads, spec)
        value = level.release(output)
        if has_aux:
            return result, (value, tree_map(level.release, aux))
        return result, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of scalar ``func`` with respect to its ``argnums`` arguments (and
    ``func``'s aux output with ``has_aux``)."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return wrapper


def _vjp(func, args, argnums, has_aux, api="vjp(f, *primals)"):
    """``vjp`` over the ``argnums`` arguments (all of them for None): (output, vjp_fn, aux)."""
    level = Level()
    with enable_grad():
        if argnums is None:
            flat_inputs, spec = tree_flatten(args)
            flat_inputs = [level.differentiable(x) for x in flat_inputs]
            new_args = tree_unflatten(flat_inputs, spec)
        else:
            new_args, flat_inputs, spec = _differentiable_args(level, args, _argnums(argnums, len(args)))
        output, aux = _split_aux(func(*new_args), has_aux, api)
        flat_out, out_spec = tree_flatten(output)
        _check_tensor_outputs(flat_out, api)
        for o in flat_out:
            if not o.is_floating_point():
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {o.dtype}")

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        create_graph = is_grad_enabled() if create_graph is None else create_graph
        flat_ct, ct_spec = tree_flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {ct_spec}, primal output: {out_spec}")
        _check_cotangents(flat_out, flat_ct)
        create = create_graph and level.reaches_outside(flat_out + flat_ct)
        with enable_grad():
            grads = _autograd_grad(flat_out, flat_inputs, flat_ct, create_graph=create,
                                   retain_graph=retain_graph or create)
        return tree_unflatten(grads, spec)

    return tree_map(level.release, output), vjp_fn, tree_map(level.release, aux)


def vjp(func, *primals, has_aux=False):
    """(``func(*primals)``, ``vjp_fn``[, aux]): ``vjp_fn(cotangents)`` gives the vector-Jacobian product with
    respect to every primal, as a tuple like ``primals``."""
    output, vjp_fn, aux = _vjp(func, primals, None, has_aux)
    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of ``func`` with respect to its ``argnums`` arguments by reverse mode:
    one vjp per output element (``chunk_size`` is accepted; every row is its own backward pass here).
    ``jac[out][arg]`` has shape ``out.shape + arg.shape``, nested as the outputs and ``argnums`` are."""
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        from ..ops import stack
        output, vjp_fn, aux = _vjp(func, args, argnums, has_aux)
        flat_out, out_spec = tree_flatten(output)
        flat_primals, primals_spec = tree_flatten(_select(args, _argnums(argnums, len(args))))
        rows = []
        zeros = [o.new_zeros(o.shape) for o in flat_out]  # contiguous, whatever the outputs' strides
        for k, out in enumerate(flat_out):
            for e in range(out.numel()):
                basis = [one_hot_like(z, e) if i == k else z for i, z in enumerate(zeros)]
                rows.append(tree_flatten(vjp_fn(tree_unflatten(basis, out_spec)))[0])
        per_output = []
        start = 0
        for out in flat_out:
            n = out.numel()
            per_output.append(tree_unflatten(
                [stack([r[j] for r in rows[start:start + n]]).reshape(*out.shape, *p.shape) if n
                 else p.new_zeros((*out.shape, *p.shape)) for j, p in enumerate(flat_primals)], primals_spec))
            start += n
        result = tree_unflatten(per_output, out_spec)
        return (result, aux) if has_aux else result
    return wrapper


class _Linearization:
    """``func`` run once at its primals, with ``J^T u`` recorded for dummy cotangents ``u`` (the double-vjp trick):
    ``tangent(t)`` then gives ``J t`` for any tangents ``t`` of the differentiated inputs. Outputs of other than
    floating-point or complex dtype get zero tangents of their own dtype, as in torch."""

    def __init__(self, func, args, argnums, has_aux, api):
        from ..ops import zeros_like
        self.level = level = Level()
        for x in tree_flatten(args if argnums is None else _select(args, _argnums(argnums, len(args))))[0]:
            if isinstance(x, Tensor) and not _differentiable_dtype(x):
                raise ValueError(f"Expected primal to be floating point or complex, but got: {x.dtype}")
        with enable_grad():
            if argnums is None:
                flat, spec = tree_flatten(args)
                self.inputs = [level.differentiable(x) for x in flat]
                new_args = tree_unflatten(self.inputs, spec)
            else:
                new_args, self.inputs, spec = _differentiable_args(level, args, _argnums(argnums, len(args)))
            self.spec = spec
            output, self.aux = _split_aux(func(*new_args), has_aux, api)
            self.outputs, self.out_spec = tree_flatten(output)
            _check_tensor_outputs(self.outputs, api)
            self.weighed = [i for i, o in enumerate(self.outputs) if _differentiable_dtype(o)]
            self.dummies = [level.own(zeros_like(self.outputs[i], requires_grad=True)) for i in self.weighed]
            grads = _autograd_grad([self.outputs[i] for i in self.weighed], self.inputs, self.dummies,
                                   create_graph=True, retain_graph=True)
        self.grads = [g for g in grads if g.requires_grad]
        self.tangent_of = [i for i, g in enumerate(grads) if g.requires_grad]
        self.create = level.needs_graph(self.grads)

    def tangent(self, flat_tangents, strict=False):
        """``J t`` for the outputs, flat (zeros, or an error under ``strict``, where an output does not depend on
        the inputs)."""
        from ..autograd import grad as autograd_grad
        from ..ops import zeros_like
        if self.grads:
            used = [flat_tangents[i] for i in self.tangent_of]
            create = self.create or (self.level.grad_enabled and any(t.requires_grad for t in used))
            with enable_grad():
                weighed = autograd_grad(self.grads, self.dummies, used, retain_graph=True, create_graph=create,
                                        allow_unused=True)
        else:
            weighed = [None] * len(self.dummies)
        result = [None] * len(self.outputs)
        for i, r in zip(self.weighed, weighed):
            result[i] = r
        if strict and any(r is None for r in result):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                               "inputs. This is not allowed with strict=True.")
        return [zeros_like(o) if r is None else r for r, o in zip(result, self.outputs)]


_JVP = "jvp(f, primals, tangents)"


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(``func(*primals)``, ``J @ tangents``[, aux]): the Jacobian-vector product (by the double-vjp trick)."""
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{_JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primals_spec = tree_flatten(primals)
    flat_tangents, tangents_spec = tree_flatten(tangents)
    if primals_spec != tangents_spec:
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{primals_spec} and tangents with structure {tangents_spec}")
    for name, flat in (("primals", flat_primals), ("tangents", flat_tangents)):
        if not flat:
            raise RuntimeError(f"{_JVP}: Expected {name} to contain at least one Tensor.")
        for x in flat:
            if not isinstance(x, Tensor):
                raise RuntimeError(f"{_JVP}: Expected {name} to only contain Tensors, got {type(x)}")
    for primal, tangent in zip(flat_primals, flat_tangents):
        _check_dual(primal, tangent)
    lin = _Linearization(func, primals, None, has_aux, _JVP)
    out = tree_unflatten([lin.level.release(o) for o in lin.outputs], lin.out_spec)
    tangent_out = tree_unflatten(lin.tangent(flat_tangents, strict), lin.out_spec)
    if has_aux:
        return out, tangent_out, tree_map(lin.level.release, lin.aux)
    return out, tangent_out


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning the Jacobian of ``func`` with respect to its ``argnums`` arguments column by column
    (one Jacobian-vector product per input element, double-vjp trick). ``func`` runs once, so ``randomness`` only
    has its value checked (when the function is called, as in torch)."""
    @functools.wraps(func)
    def wrapper(*args):
        from ..ops import stack
        from .vmap import check_randomness
        check_randomness(randomness)
        lin = _Linearization(func, args, argnums, has_aux, _JVP)
        columns = []
        zeros = [y.new_zeros(y.shape) for y in lin.inputs]  # contiguous, whatever the inputs' strides
        for j, x in enumerate(lin.inputs):
            for e in range(x.numel()):
                tangents = [one_hot_like(z, e) if i == j else z for i, z in enumerate(zeros)]
                columns.append(lin.tangent(tangents))
        per_output = []
        for k, out in enumerate(lin.outputs):
            jacs, start = [], 0
            for x in lin.inputs:
                n = x.numel()
                col = [c[k].reshape(-1) for c in columns[start:start + n]]
                jac = stack(col, dim=-1) if col else out.new_zeros((out.numel(), 0))
                jacs.append(jac.reshape(*out.shape, *x.shape))
                start += n
            per_output.append(tree_unflatten(jacs, lin.spec))
        result = tree_unflatten(per_output, lin.out_spec)
        return (result, tree_map(lin.level.release, lin.aux)) if has_aux else result
    return wrapper


def hessian(func, argnums=0):
    """A function returning the Hessian of ``func`` with respect to its ``argnums`` arguments: the Jacobian of its
    Jacobian (reverse over reverse, see the module's docstring)."""
    return jacrev(jacrev(func, argnums), argnums)


def linearize(func, *primals):
    """(``func(*primals)``, ``jvp_fn``): ``jvp_fn(*tangents)`` gives ``J @ tangents`` at ``primals`` without
    running ``func`` again (one recorded graph of ``J^T u``, the double-vjp trick)."""
    flat_primals, primals_spec = tree_flatten(primals)
    lin = _Linearization(func, primals, None, False, "linearize")
    output = tree_unflatten([lin.level.release(o) for o in lin.outputs], lin.out_spec)

    def jvp_fn(*tangents):
        flat_tangents, tangents_spec = tree_flatten(tangents)
        if tangents_spec != primals_spec:
            raise RuntimeError(f"Expected the tangents {tangents_spec} to have the same argspec as the primals "
                               f"{primals_spec}")
        for i, (t, p) in enumerate(zip(flat_tangents, flat_primals)):
            for what, ours, theirs in (("shape", t.shape, p.shape), ("device", t.device, p.device),
                                       ("dtype", t.dtype, p.dtype)):
                if ours != theirs:
                    raise RuntimeError(f"tangent:{i} with {what} {ours} in flattened pytree doesn't match the "
                                       f"{what} {theirs} of the corresponding primal.")
        return tree_unflatten(lin.tangent(flat_tangents), lin.out_spec)
    return output, jvp_fn


def functionalize(func, *, remove="mutations"):
    """``func`` itself: torch's functionalize rewrites in-place ops into out-of-place ones for graph capture, with
    the same results in eager mode, which is the only mode these transforms run in. ``remove`` is checked."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are: remove='mutations' or remove='mutations_and_views'.")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapped


def debug_unwrap(tensor, *, recurse=True):
    """``tensor``: the transforms here use no wrapper tensors, so there is nothing to unwrap."""
    return tensor
