"""``engine.utils.checkpoint`` against ``torch.utils.checkpoint``: the same values and gradients (inputs and
parameters) with the intermediate values recomputed, dropout replayed, ``checkpoint_sequential``, and
torch's warnings and errors."""
import warnings

import numpy as np
import pytest
import torch
import torch.utils.checkpoint as torch_checkpoint

import engine
import engine.utils.checkpoint as engine_checkpoint
from engine import nn

RNG = np.random.default_rng(5)


def _pair(make):
    """The same network in both libraries, with torch's weights."""
    ours, theirs = make(nn), make(torch.nn)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _mlp(mod):
    return mod.Sequential(mod.Linear(5, 7), mod.Tanh(), mod.Linear(7, 7), mod.GELU(), mod.Linear(7, 3))


def _grads(module):
    return [p.grad.numpy() if p.grad is not None else None for p in module.parameters()]


@pytest.mark.parametrize("use_reentrant,input_requires_grad", [(True, True), (False, True), (False, False)])
def test_checkpoint_matches_torch(use_reentrant, input_requires_grad):
    """(torch's reentrant checkpoint records nothing when no input requires grad; ours, as its
    non-reentrant one, still gives the parameters their gradients)"""
    ours, theirs = _pair(_mlp)
    x = RNG.standard_normal((4, 5)).astype(np.float32)
    outputs = []
    for lib, checkpoint, net in ((engine, engine_checkpoint, ours), (torch, torch_checkpoint, theirs)):
        inp = lib.tensor(x, requires_grad=input_requires_grad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = checkpoint.checkpoint(net, inp * 2 if input_requires_grad else inp, use_reentrant=use_reentrant)
        (y * y).sum().backward()
        outputs.append((y.detach().numpy(), inp.grad.numpy() if input_requires_grad else None, _grads(net)))
    (y_ours, gx_ours, gp_ours), (y_theirs, gx_theirs, gp_theirs) = outputs
    np.testing.assert_allclose(y_ours, y_theirs, rtol=1e-5, atol=1e-6)
    if input_requires_grad:
        np.testing.assert_allclose(gx_ours, gx_theirs, rtol=1e-4, atol=1e-6)
    for a, b in zip(gp_ours, gp_theirs):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_checkpoint_keyword_arguments_and_several_outputs():
    def split(mod):
        def run(a, b, *, scale):
            return (a * b).sin() * scale, a.exp() + b
        return run
    results = []
    for lib, checkpoint in ((engine, engine_checkpoint), (torch, torch_checkpoint)):
        a = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        b = lib.tensor([1.5, 0.25, -0.5], requires_grad=True)
        first, second = checkpoint.checkpoint(split(lib), a, b, scale=3.0, use_reentrant=False)
        (first.sum() + (second * second).sum()).backward()
        results.append((a.grad.numpy(), b.grad.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


def test_dropout_is_replayed_in_the_recomputation():
    """Checkpointed and plain runs from the same seed give the same gradients (the masks match)."""
    net = nn.Sequential(nn.Linear(6, 16), nn.Dropout(0.5), nn.Linear(16, 2))
    x = engine.tensor(RNG.standard_normal((8, 6)).astype(np.float32), requires_grad=True)
    grads = []
    for checkpointed in (False, True):
        net.zero_grad()
        x.grad = None
        engine.manual_seed(3)
        y = engine_checkpoint.checkpoint(net, x, use_reentrant=False) if checkpointed else net(x)
        engine.rand(1)  # random numbers drawn between forward and backward do not disturb the replay
        y.square().sum().backward()
        grads.append([x.grad.numpy().copy()] + [g.copy() for g in _grads(net)])
    for plain, recomputed in zip(*grads):
        np.testing.assert_allclose(recomputed, plain, rtol=1e-6)


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential_matches_torch(segments):
    ours, theirs = _pair(_mlp)
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    results = []
    for lib, checkpoint, net in ((engine, engine_checkpoint, ours), (torch, torch_checkpoint, theirs)):
        inp = lib.tensor(x, requires_grad=True)
        y = checkpoint.checkpoint_sequential(net, segments, inp, use_reentrant=False)
        y.sum().backward()
        results.append((y.detach().numpy(), inp.grad.numpy(), _grads(net)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-4, atol=1e-6)
    for a, b in zip(results[0][2], results[1][2]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_no_grad_runs_plainly_and_torch_warnings_and_errors():
    net = _mlp(nn)
    with engine.no_grad():
        y = engine_checkpoint.checkpoint(net, engine.ones(2, 5), use_reentrant=False)
    assert y.grad_fn is None
    for checkpoint in (engine_checkpoint, torch_checkpoint):
        with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
            checkpoint.checkpoint(lambda t: t * 2, torch.ones(1, requires_grad=True) if checkpoint is torch_checkpoint
                                  else engine.ones(1, requires_grad=True))
        with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
            checkpoint.checkpoint(lambda t, scale: t * scale, torch.ones(1) if checkpoint is torch_checkpoint
                                  else engine.ones(1), use_reentrant=True, scale=2)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        engine_checkpoint.checkpoint(lambda t: t * 2, engine.ones(1), use_reentrant=True)
