"""``engine.utils.checkpoint``: activation checkpointing (``torch.utils.checkpoint``), memory for time.

``checkpoint(function, *args)`` runs ``function`` without recording a graph, keeping only its inputs;
backward runs it again with recording (under the CPU random state the forward saw, so dropout draws
the same masks) and back-propagates through that. This is PyTorch's reentrant scheme for both values
of ``use_reentrant``: the parameters of a ``Module`` function take part (they get gradients even when
no input requires one), gradients reach ``.grad`` (so ``autograd.grad`` cannot capture the
parameters'), and random numbers drawn on a GPU are not replayed. Under ``create_graph=True`` the recomputation
is recorded on the graph instead (the non-reentrant scheme), so checkpointed segments differentiate twice.
``context_fn`` gives two context managers, entered around the forward call and around its recomputation, as
torch's non-reentrant checkpoint enters them.
"""
import contextlib
import warnings

from .. import random as _random
from ..autograd import Function, backward, enable_grad, is_grad_enabled
from ..autograd.double_backward import vjp
from ..ops.shape import Reshape
from ..tensor import Tensor


class _Recompute(Function):
    """The graph node standing for a checkpointed call: inputs are the call's arguments followed by
    the parameters it uses; backward recomputes the call and back-propagates through it."""

    @staticmethod
    def forward(ctx, call, n_args, preserve_rng_state, *inputs):
        ctx.call, ctx.arguments, ctx.inputs = call, inputs[:n_args], inputs
        ctx.rng_state = _random.get_rng_state() if preserve_rng_state else None
        with call.forward_context:
            return call(*ctx.arguments)

    @staticmethod
    def backward(ctx, *grads):
        arguments = [a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
                     for a in ctx.arguments]
        outputs = _replay(ctx, arguments)
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        argument_grads = tuple(a.grad if isinstance(a, Tensor) else None for a in arguments)
        return (None, None, None) + argument_grads + (None,) * (len(ctx.inputs) - len(arguments))

    @staticmethod
    def _backward_tensors(ctx, *grads):
        """Under ``create_graph``: the call recomputed on the graph-connected inputs themselves (each through
        a view of its own) and differentiated with ``vjp``, so the gradients (the parameters' too, returned
        rather than put in ``.grad``) record a graph back to the inputs, as torch's non-reentrant checkpoint."""
        wanted = [Reshape(tuple(a.shape))(a) if isinstance(a, Tensor) and a.requires_grad else None
                  for a in ctx.arguments]
        outputs = _replay(ctx, [w if w is not None else a for w, a in zip(wanted, ctx.arguments)])
        pairs = [(o, g) for o, g in zip(outputs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        if not pairs:
            return (None,) * (3 + len(ctx.inputs))
        parameters = [p if p.requires_grad else None for p in ctx.inputs[len(wanted):]]
        grads_in = vjp([o for o, _ in pairs], wanted + parameters, [g for _, g in pairs])
        return (None, None, None) + tuple(grads_in)


def _replay(ctx, arguments):
    """The checkpointed call run again on ``arguments`` with recording, under the random state its forward saw;
    its outputs as a tuple."""
    with _random.fork_rng(devices=[]):
        if ctx.rng_state is not None:
            _random.set_rng_state(ctx.rng_state)
        with enable_grad(), ctx.call.recompute_context:
            outputs = ctx.call(*arguments)
    return (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)


class CheckpointError(RuntimeError):
    """torch's error type for a recomputation that does not match its forward."""


def noop_context_fn():
    """``checkpoint``'s default ``context_fn``: nothing entered around the forward call or its recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """``inputs`` (a tuple) with each tensor detached, keeping its ``requires_grad``; other values unchanged."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    return tuple(x.detach().requires_grad_(x.requires_grad) if isinstance(x, Tensor) else x for x in inputs)


class _Call:
    """``function(*args, **kwargs)`` with the keyword arguments bound, and the contexts ``context_fn`` gave."""

    def __init__(self, function, kwargs, context_fn):
        self.function, self.kwargs = function, kwargs
        self.forward_context, self.recompute_context = context_fn()

    def __call__(self, *args):
        return self.function(*args, **self.kwargs)




def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, respect_saved_tensors_hooks=None, **kwargs):
    """``function(*args, **kwargs)``, its intermediate values recomputed in backward instead of kept."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                      "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
                      "exception. use_reentrant=False is recommended, but if you need to preserve the "
                      "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
                      "details on the differences between the two variants.", stacklevel=2)
    if use_reentrant and (context_fn is not noop_context_fn or debug or respect_saved_tensors_hooks is not None):
        raise ValueError("Passing `context_fn`, `debug`, or `respect_saved_tensors_hooks` is only supported when "
                         "use_reentrant=False.")
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if not is_grad_enabled():
        return function(*args, **kwargs)
    parameters = tuple(p for p in function.parameters() if p.requires_grad) if hasattr(function, "parameters") else ()
    if not any(isinstance(t, Tensor) and t.requires_grad for t in (*args, *parameters)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
    return _Recompute.apply(_Call(function, kwargs, context_fn), len(args), preserve_rng_state, *args, *parameters)


class _Segment:
    """Modules applied in turn (one piece of ``checkpoint_sequential``), with their parameters."""

    def __init__(self, functions):
        self.functions = functions

    def parameters(self):
        return (p for f in self.functions if hasattr(f, "parameters") for p in f.parameters())

    def __call__(self, value):
        for f in self.functions:
            value = f(value)
        return value


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a sequence of modules in ``segments`` pieces, checkpointing every piece but the last."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(functions) // segments
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(_Segment(functions[start:end]), input, use_reentrant=use_reentrant, **kwargs)
    return _Segment(functions[end:])(input)


__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential", "detach_variable", "noop_context_fn"]
