"""Tensor.register_post_accumulate_grad_hook against torch's: each leaf's hook runs once per backward,
after its gradient is in ``.grad`` (accumulated over the uses of the leaf and over backwards), in the
order torch runs them (leaves as soon as their gradient is complete, the last layer's first); handles
remove hooks; non-leaves and tensors without gradients are refused."""
import numpy as np
import pytest
import torch

import engine


def _net(lib):
    """Three linear layers, the first one's weight also used by a second path (two uses, one hook call)."""
    lib.manual_seed(0)
    layers = [lib.nn.Linear(5, 7), lib.nn.Linear(7, 7), lib.nn.Linear(7, 3)]
    for layer, seed in zip(layers, (1, 2, 3)):
        rng = np.random.default_rng(seed)
        layer.weight.data = lib.tensor(rng.standard_normal(tuple(layer.weight.shape)).astype(np.float32))
        layer.bias.data = lib.tensor(rng.standard_normal(tuple(layer.bias.shape)).astype(np.float32))
    return layers


def _forward(lib, layers, x):
    first, second, third = layers
    h = first(x).relu()
    h = second(h).tanh() + (x @ first.weight.t()).sigmoid()
    return third(h).pow(2).sum()


def _record(lib):
    layers = _net(lib)
    names = {id(p): f"{i}.{n}" for i, layer in enumerate(layers) for n, p in layer.named_parameters()}
    calls = []
    for layer in layers:
        for p in layer.parameters():
            p.register_post_accumulate_grad_hook(lambda t: calls.append((names[id(t)], t.grad.detach().numpy().copy())))
    x = lib.tensor(np.random.default_rng(9).standard_normal((4, 5)).astype(np.float32))
    _forward(lib, layers, x).backward()
    _forward(lib, layers, x * 2).backward()
    return calls


def test_order_and_gradients_equal_torchs():
    ours, theirs = _record(engine), _record(torch)
    assert [name for name, _ in ours] == [name for name, _ in theirs]
    assert len(ours) == 12  # six leaves, two backwards: once per backward each
    for (_, a), (_, b) in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)  # the accumulated .grad, as the hook sees it


def test_handle_removes_and_refusals():
    w = engine.ones(3, requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (w * 2).sum().backward()
    handle.remove()
    (w * 2).sum().backward()
    assert seen == [[2.0, 2.0, 2.0]]
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        engine.ones(2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (w * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (torch.ones(3, requires_grad=True) * 2).register_post_accumulate_grad_hook(print)
