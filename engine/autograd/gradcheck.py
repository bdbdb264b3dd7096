"""``gradcheck`` and ``gradgradcheck``: analytical gradients against central finite differences.

For every input that requires grad, each element is moved by ``-eps`` and ``+eps`` in place and ``func`` rerun;
``(f(x + eps) - f(x - eps)) / (2 eps)`` gives that element's row of the numerical Jacobian. The analytical
Jacobian comes from one backward pass per output element, done twice to check that backward is deterministic
(``nondet_tol``). They must agree within ``|a - n| <= atol + rtol |n|``. Inputs should be float64 (torch warns
otherwise, and so does this). ``gradgradcheck`` runs the same check on the function ``(inputs, v) -> v^T J``, built
with ``create_graph=True``, so it checks the second derivatives.

``fast_mode`` is accepted and runs the full (slow) comparison, which is the stricter one. ``check_batched_grad`` is
accepted: ``engine.func.vmap`` runs a function once per element, so batched gradients are the per-element ones
by construction. ``check_forward_ad`` compares the Jacobian that forward-mode AD (``forward_ad``) gives, one
one-hot tangent per input element, with the same finite differences.
"""
import warnings

import numpy as np


__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when a check fails."""


def _is_tensor(x):
    from ..tensor import Tensor  # here: ``engine.tensor`` imports ``engine.autograd``, which imports this module
    return isinstance(x, Tensor)


def _needs_grad(x):
    return _is_tensor(x) and x.requires_grad


def _floating(x):
    return _is_tensor(x) and x.is_floating_point()


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable(outputs):
    return tuple(o for o in outputs if _needs_grad(o))


def _check_inputs(inputs):
    """torch's checks: some input requires grad; those that do are float64 (a warning) and do not overlap."""
    found = False
    for i, x in enumerate(inputs):
        if not _needs_grad(x):
            continue
        if x.dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", stacklevel=3)
        if any(st == 0 and sz > 1 for st, sz in zip(x.stride(), x.shape)):
            raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs that "
                               "are non-overlapping to be able to compute the numerical gradients correctly. You "
                               "should call .contiguous on the input before passing it to gradcheck.")
        found = True
    if not found:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")


def _float_outputs(func, inputs):
    """The floating outputs of ``func(*inputs)`` as flat float64 arrays (copies: an output may alias an input).
    Grad mode stays on: ``gradgradcheck``'s function computes gradients itself."""
    return [o.detach().double()._data.reshape(-1).copy()
            for o in _as_tuple(func(*inputs)) if _floating(o)]


def _numerical(func, inputs, eps):
    """numerical[j][i]: the (input j numel, output i numel) Jacobian of the floating outputs, by central
    differences (input elements moved in place, then restored exactly)."""
    from .._device import array_module
    sizes = [out.size for out in _float_outputs(func, inputs)]
    result = []
    for x in inputs:
        if not _needs_grad(x):
            continue
        data = x._data
        xp = array_module(data)
        jac = [xp.zeros((data.size, n)) for n in sizes]
        for k in range(data.size):
            idx = np.unravel_index(k, data.shape)
            orig = data[idx].copy()
            data[idx] = orig - eps
            before = _float_outputs(func, inputs)
            data[idx] = orig + eps
            after = _float_outputs(func, inputs)
            data[idx] = orig
            for row, a, b in zip(jac, before, after):
                row[k] = (b - a) / (2 * eps)
        result.append(jac)
    return result


def _analytical_once(output, diff_inputs):
    """jac[j]: the (input j numel, output numel) Jacobian of ``output`` as float64 arrays, one backward pass per
    output element; and whether every gradient had its input's dtype and shape."""
    from .._device import array_module
    from . import grad
    from .functional import one_hot_like
    jac = [array_module(x._data).zeros((x.numel(), output.numel())) for x in diff_inputs]
    types_ok = sizes_ok = True
    for k in range(output.numel()):
        grads = grad([output], list(diff_inputs), [one_hot_like(output, k)], retain_graph=True, allow_unused=True)
        for column, g, x in zip(jac, grads, diff_inputs):
            if g is None:
                continue
            types_ok &= g.dtype == x.dtype
            sizes_ok &= tuple(g.shape) == tuple(x.shape)
            if sizes_ok:
                column[:, k] = g.detach().double()._data.reshape(-1)
    return jac, types_ok, sizes_ok


def _analytical(output, diff_inputs, nondet_tol, check_grad_dtypes):
    first, types_ok, sizes_ok = _analytical_once(output, diff_inputs)
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    second, _, _ = _analytical_once(output, diff_inputs)
    for a, b in zip(first, second):
        if a.size and float(abs(a - b).max()) > nondet_tol:
            raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and "
                                 "grad_output multiple times gives different values, although analytical gradient "
                                 f"matches numerical gradient.The tolerance for nondeterminism was {nondet_tol}.")
    return first


def _mismatch(a, n, i, j, rtol, atol):
    """torch's failure line, with where the worst element is instead of both whole matrices."""
    excess = abs(a - n) - (atol + rtol * abs(n))
    row, col = np.unravel_index(int(excess.argmax()), excess.shape)
    return (f"Jacobian mismatch for output {i:d} with respect to input {j:d}, numerical:{float(n[row, col])!r} "
            f"analytical:{float(a[row, col])!r} at input element {row}, output element {col} "
            f"(rtol={rtol}, atol={atol})")


def _check_zero_grad_outputs(outputs, diff_inputs, check_undefined_grad):
    """Zero output gradients give zero input gradients of the inputs' dtype, device and size; with
    ``check_undefined_grad``, backward also runs when some outputs get no gradient at all."""
    from . import grad
    from ..ops import zeros_like
    grads = grad(list(outputs), list(diff_inputs), [zeros_like(o) for o in outputs], retain_graph=True,
                 allow_unused=True)
    for g, x in zip(grads, diff_inputs):
        if g is None:
            continue
        if bool((g != 0).any()):
            raise GradcheckError("backward not multiplied by grad_output")
        if g.dtype != x.dtype:
            raise GradcheckError("grad is incorrect type")
        if g.device != x.device:
            raise GradcheckError("grad is incorrect device")
        if tuple(g.shape) != tuple(x.shape):
            raise GradcheckError("grad is incorrect size")
    if not check_undefined_grad or len(outputs) < 2:
        return
    for skip in range(len(outputs)):
        rest = [o for i, o in enumerate(outputs) if i != skip]
        try:
            grad(rest, list(diff_inputs), [zeros_like(o) for o in rest], retain_graph=True, allow_unused=True)
        except RuntimeError as error:
            raise GradcheckError("Expected backward function to handle undefined output grads. Please look at "
                                 '"Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"') \
                from error


def _forward_jacobian(func, inputs, diff_inputs, n_float_outputs):
    """jac[j][i]: the (input j numel, output i numel) Jacobian of the floating outputs by forward-mode AD, one
    pass per input element with a one-hot tangent (the other inputs' tangents zero)."""
    from .._device import array_module
    from . import forward_ad
    from .functional import one_hot_like
    result = []
    for x in diff_inputs:
        columns = [[] for _ in range(n_float_outputs)]
        for k in range(x.numel()):
            with forward_ad.dual_level():
                duals = [forward_ad.make_dual(a, one_hot_like(a, k) if a is x else a.new_zeros(a.shape))
                         if _needs_grad(a) else a for a in inputs]
                outs = [o for o in _as_tuple(func(*duals)) if _floating(o)]
                for column, o in zip(columns, outs):
                    tangent = forward_ad.unpack_dual(o).tangent
                    column.append(np.zeros(o.numel()) if tangent is None
                                  else tangent.detach().double().cpu()._data.reshape(-1))
        xp = array_module(x._data)
        result.append([xp.asarray(np.stack(column)) if column else xp.zeros((0, 0)) for column in columns])
    return result


def _run_checks(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                backward=True, forward=False):
    inputs = _as_tuple(inputs)
    _check_inputs(inputs)
    func_out = _as_tuple(func(*inputs))
    outputs = _differentiable(func_out)
    numerical = _numerical(func, inputs, eps)
    if not outputs:
        for per_input in numerical:
            for n in per_input:
                if bool((n != 0).any()):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    float_outs = [o for o in func_out if _floating(o)]
    diff_inputs = [x for x in inputs if _needs_grad(x)]
    if backward:
        for i, (k, o) in enumerate((k, o) for k, o in enumerate(float_outs) if o.requires_grad):
            analytical = _analytical(o, diff_inputs, nondet_tol, check_grad_dtypes)
            for j, a in enumerate(analytical):
                n = numerical[j][k]
                if a.size and not bool((abs(a - n) <= atol + rtol * abs(n)).all()):
                    raise GradcheckError(_mismatch(a, n, i, j, rtol, atol))
        _check_zero_grad_outputs(outputs, diff_inputs, check_undefined_grad)
    if forward:
        for j, per_output in enumerate(_forward_jacobian(func, inputs, diff_inputs, len(float_outs))):
            for i, a in enumerate(per_output):
                n = numerical[j][i]
                if a.size and not bool((abs(a - n) <= atol + rtol * abs(n)).all()):
                    raise GradcheckError(_mismatch(a, n, i, j, rtol, atol).replace(
                        "Jacobian mismatch", "Jacobian computed with forward mode mismatch", 1))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Whether the gradients of ``func`` at ``inputs`` (a Tensor or a tuple; those requiring grad are checked) match
    finite differences; a failure raises ``GradcheckError`` unless ``raise_exception=False`` (then False)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires check_forward_ad to be True")
    try:
        _run_checks(func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes,
                    check_backward_ad, check_forward_ad)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _random_grad_outputs(outputs, non_contiguous):
    """Cotangents uniform in [-1, 1) shaped and typed like ``outputs``, requiring grad."""
    from ..ops import rand
    result = []
    for o in outputs:
        dtype = o.dtype if o.is_floating_point() else None
        if non_contiguous:
            values = rand(*o.shape, 2, dtype=dtype, device=o.device)[..., 0]
        else:
            values = rand(*o.shape, dtype=dtype, device=o.device)
        result.append((values * 2 - 1).detach().requires_grad_())
    return tuple(result)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """``gradcheck`` of ``func``'s vector-Jacobian product: its second derivatives against finite differences
    of its first. ``grad_outputs`` default to random values in [-1, 1) that require grad."""
    from . import grad
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        grad_outputs = _random_grad_outputs(_differentiable(_as_tuple(func(*inputs))), gen_non_contig_grad_outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_out = len(grad_outputs)

    def first_derivatives(*args):
        outputs = _differentiable(_as_tuple(func(*args[:-n_out])))
        diff_inputs = [x for x in args[:-n_out] if _needs_grad(x)]
        grads = grad(list(outputs), diff_inputs, list(args[-n_out:]), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev, masked=masked)
