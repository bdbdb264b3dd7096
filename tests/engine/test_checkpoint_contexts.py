"""``checkpoint``'s ``context_fn`` (entered around the forward call and around its recomputation, as torch's
non-reentrant checkpoint enters them), ``detach_variable``, ``noop_context_fn`` and their errors, against torch."""
import contextlib

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as torch_checkpoint
from op_check import assert_same_error

import engine
import engine.utils.checkpoint as engine_checkpoint

pytestmark = pytest.mark.slow  # torch's first non-reentrant checkpoint takes ~4 s to set up


def _logged_run(lib, checkpoint_module):
    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append("enter " + name)
        yield
        log.append("exit " + name)

    def body(t):
        log.append("body")
        return t.sin() * 2
    x = lib.from_numpy(np.linspace(-1, 1, 5)).requires_grad_()
    y = checkpoint_module.checkpoint(body, x, use_reentrant=False, context_fn=lambda: (tag("forward"), tag("again")))
    log.append("backward")
    y.sum().backward()
    return log[:6], x.grad.numpy()


def test_context_fn_surrounds_forward_and_recomputation():
    ours, our_grad = _logged_run(engine, engine_checkpoint)
    theirs, their_grad = _logged_run(torch, torch_checkpoint)
    assert ours == theirs
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12)


@pytest.mark.parametrize("argument", [{"context_fn": lambda: (contextlib.nullcontext(),) * 2}, {"debug": True}])
def test_reentrant_refuses_context_fn_and_debug(argument):
    def run(lib, module):
        x = lib.ones(2, requires_grad=True)
        return module.checkpoint(lambda t: t * 2, x, use_reentrant=True, **argument)
    assert_same_error(lambda: run(engine, engine_checkpoint), lambda: run(torch, torch_checkpoint))


def test_detach_variable_and_noop_context_fn():
    x = engine.ones(2, requires_grad=True)
    detached, other, number = engine_checkpoint.detach_variable((x, engine.ones(2), 3))
    assert detached is not x and detached.requires_grad and detached.is_leaf and not other.requires_grad
    assert number == 3
    assert_same_error(lambda: engine_checkpoint.detach_variable([x]),
                      lambda: torch_checkpoint.detach_variable([torch.ones(2)]))
    assert issubclass(engine_checkpoint.CheckpointError, RuntimeError)
    forward, again = engine_checkpoint.noop_context_fn()
    with forward, again:
        pass
