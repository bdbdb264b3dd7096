"""``torch.library.opcheck``: the checks of a custom operator that make sense eagerly, and ``get_ctx``.

- test_schema: the op writes into no argument its schema does not mark mutable (values and version counters
  compared before and after a call on copies) and returns no input (the call's own check).
- test_autograd_registration: when an input requires grad and an output is floating, the op has a gradient
  formula (``register_autograd``), an "Autograd" kernel, or a CompositeImplicitAutograd kernel.
- test_faketensor: the fake function's outputs have the real outputs' structure, shapes, dtypes and devices. The
  engine has no fake tensors: the fake function gets copies of the real inputs, and an output size made with
  ``get_ctx().new_dynamic_size()`` is not compared (it depends on the data).
- test_aot_dispatch_dynamic / _static: a second call (same random state) gives the same outputs, and the same
  input gradients when the op is differentiable (torch compares its compiled op with eager; the engine has one
  mode, so the check is that the op is a function of its inputs).
"""
from .. import random as _random
from ..autograd import grad_mode
from ..tensor import Tensor
from .autograd_node import flatten_tensors
from .lib import _resolve
from .schema import bind

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
_ALL_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_static",
                   "test_aot_dispatch_dynamic")


class OpCheckError(Exception):
    """One of opcheck's tests failed."""


class FakeImplCtx:
    """What ``get_ctx()`` returns inside a fake function."""

    def __init__(self):
        self.dynamic = False

    def new_dynamic_size(self, *, min=0, max=None):
        """A data-dependent size: its lower bound here (opcheck then leaves that output's shape uncompared)."""
        self.dynamic = True
        return min

    create_unbacked_symint = new_dynamic_size


_CTX = [None]


def get_ctx():
    """The fake-function context while a fake function runs, else None."""
    return _CTX[0]


def _copy(value):
    if isinstance(value, Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    return value


def _copy_call(args, kwargs):
    return [_copy(a) for a in args], {k: _copy(v) for k, v in kwargs.items()}


def _outputs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _test_schema(op, args, kwargs):
    a, k = _copy_call(args, kwargs)
    values = bind(op._schema, op._qualname, a, k)
    before = [(arg, [(t, t._version_counter[0], t.detach().clone()) for t in flatten_tensors([v])[0]])
              for arg, v in zip(op._schema.arguments, values)]
    with grad_mode.no_grad():
        op(*a, **k)
    for arg, tensors in before:
        if arg.is_mutable:
            continue
        for t, version, old in tensors:
            if t._version_counter[0] != version or not _same(t, old):
                raise RuntimeError(f"Argument {arg.name} is not defined as mutable but was mutated")


def _same(t, old):
    from .. import equal
    return t.shape == old.shape and bool(equal(t.detach(), old))


def _test_autograd_registration(op, args, kwargs):
    flat = flatten_tensors(list(args) + list(kwargs.values()))[0]
    if not any(t.requires_grad for t in flat):
        return
    with grad_mode.no_grad():
        outs = _outputs(op(*_copy_call(args, kwargs)[0], **_copy_call(args, kwargs)[1]))
    if not any(isinstance(o, Tensor) and o.is_floating_point() for o in outs):
        return
    if op._backward_fn is None and op._autograd_kernel is None and not op._composite:
        raise AssertionError(
            f"{op._qualname}: at least one output of this operator has requires_grad=True but the operator does "
            f"not have an autograd kernel defined at an autograd key (e.g. DispatchKey::Autograd). This could mean "
            f"that you have incorrectly registered an autograd kernel to a non-Autograd DispatchKey, which may lead "
            f"to silently incorrect results. If your operator consists of regular PyTorch operations, consider not "
            f"using an operator at all or registering your operator as CompositeImplicitAutograd. If you have an "
            f"autograd.Function registered to a backend (CPU/CUDA/XPU) key, the correct location for it is the "
            f"Autograd key.")


def _test_faketensor(op, args, kwargs):
    if op._fake_fn is None:
        if op._composite:
            return
        raise RuntimeError(f"There was no fake impl registered for {op!r}. This is necessary for torch.compile/"
                           f"export/fx tracing to work. Please use `{op._name}.register_fake` to add an fake impl.")
    with grad_mode.no_grad():
        real = op(*_copy_call(args, kwargs)[0], **_copy_call(args, kwargs)[1])
        ctx = _CTX[0] = FakeImplCtx()
        try:
            fake = op._fake_fn(*_copy_call(args, kwargs)[0], **_copy_call(args, kwargs)[1])
        finally:
            _CTX[0] = None
    real, fake = _outputs(real), _outputs(fake)
    where = f"When comparing the output of {op._namespace}.{op._name}.default on FakeTensor and concrete Tensors"
    if len(real) != len(fake):
        raise RuntimeError(f"{where}, found {len(fake)} fake outputs but {len(real)} real ones")
    for r, f in zip(real, fake):
        if not isinstance(r, Tensor):
            continue
        if not isinstance(f, Tensor):
            raise RuntimeError(f"{where}, found a fake output of type {type(f).__name__} for a real tensor")
        if r.dtype != f.dtype:
            _mismatch(where, "Dtypes", r.dtype, f.dtype)
        if ctx.dynamic and r.ndim != f.ndim or not ctx.dynamic and r.shape != f.shape:
            _mismatch(where, "Shapes", r.shape, f.shape)
        if r.device != f.device:
            _mismatch(where, "Devices", r.device, f.device)


def _mismatch(where, what, real, fake):
    raise RuntimeError(f"{where}, found mismatched tensor metadata: {what} {real} and {fake} are not equal!")


def _run_with_grads(op, args, kwargs, state):
    """Outputs and input gradients (upstream gradient: ones) of one call from random state ``state``."""
    from .. import ones_like
    a, k = _copy_call(args, kwargs)
    _random.set_rng_state(state)
    outs = _outputs(op(*a, **k))
    inputs = [t for t in flatten_tensors(list(a) + list(k.values()))[0] if t.requires_grad]
    roots = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
    grads = []
    if inputs and roots:
        from ..autograd import grad
        grads = grad(roots, inputs, [ones_like(o) for o in roots], allow_unused=True)
    return [o.detach() if isinstance(o, Tensor) else o for o in outs], list(grads)


def _test_second_call(op, args, kwargs, atol, rtol):
    from .. import allclose
    state = _random.get_rng_state()
    first = _run_with_grads(op, args, kwargs, state)
    second = _run_with_grads(op, args, kwargs, state)
    for kind, xs, ys in (("output", first[0], second[0]), ("gradient", first[1], second[1])):
        for i, (x, y) in enumerate(zip(xs, ys)):
            if isinstance(x, Tensor) and isinstance(y, Tensor):
                same = x.shape == y.shape and bool(allclose(x, y, rtol=rtol or 1.3e-6, atol=atol or 1e-5,
                                                            equal_nan=True))
            else:
                same = x == y
            if not same:
                raise RuntimeError(f"{op._qualname}: {kind} {i} differs between two calls on the same inputs")


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True, atol=None, rtol=None):
    """Run the checks named in ``test_utils`` on ``op(*args, **kwargs)``; a dict of test name -> "SUCCESS" (or,
    with ``raise_exception=False``, the exception it raised)."""
    kwargs = {} if kwargs is None else kwargs
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not set(test_utils) <= set(_ALL_TEST_UTILS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to be subset of "
                         f"{_ALL_TEST_UTILS} but it was not")
    if (atol is None) != (rtol is None):
        raise ValueError("opcheck(op, ...): if you specify one of atol/rtol, you must specify both")
    target = _resolve(op)
    tests = {"test_schema": lambda: _test_schema(target, args, kwargs),
             "test_autograd_registration": lambda: _test_autograd_registration(target, args, kwargs),
             "test_faketensor": lambda: _test_faketensor(target, args, kwargs),
             "test_aot_dispatch_static": lambda: _test_second_call(target, args, kwargs, atol, rtol),
             "test_aot_dispatch_dynamic": lambda: _test_second_call(target, args, kwargs, atol, rtol)}
    results = {}
    for name in test_utils:
        try:
            tests[name]()
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for stack trace)") from e
            results[name] = e
            continue
        results[name] = "SUCCESS"
    return results
