"""Autograd API: backward, accumulation, retain_graph, grad modes, autograd.grad, hooks, custom Functions."""
import numpy as np
import pytest
import torch

import engine


def both(fn):
    """Run ``fn(lib)`` with engine and with torch."""
    return fn(engine), fn(torch)


def test_gradients_accumulate_across_backward_calls():
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().backward()
        (x * 3).sum().backward()
        return x.grad.tolist()
    ours, ref = both(run)
    assert ours == ref


def test_backward_with_gradient_argument_and_shared_subgraph():
    def run(lib):
        x = lib.tensor([[1.0, -2.0], [0.5, 4.0]], requires_grad=True)
        y = x.exp()
        z = y * x + y.sin()
        z.backward(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        return x.grad.numpy()
    ours, ref = both(run)
    np.testing.assert_allclose(ours, ref, rtol=1e-6)


def test_backward_twice_without_retain_graph_raises():
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_backward_needs_scalar_or_gradient():
    x = engine.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        engine.ones(2).sum().backward()


def test_grad_modes():
    x = engine.ones(2, requires_grad=True)
    with engine.no_grad():
        assert not (x * 2).requires_grad
        with engine.enable_grad():
            assert (x * 2).requires_grad
    with engine.inference_mode():
        assert not (x * 2).requires_grad
    with engine.set_grad_enabled(False):
        assert not engine.is_grad_enabled()
    assert engine.is_grad_enabled()

    @engine.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad


def test_autograd_grad_returns_without_accumulating():
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    w = engine.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    gx, gw = engine.autograd.grad(y, [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    h = x * 2
    z = (h * h).sum()
    (gh,) = engine.autograd.grad(z, h)
    assert gh.tolist() == [4.0, 8.0]
    unused = engine.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        engine.autograd.grad((x * 2).sum(), [unused])
    assert engine.autograd.grad((x * 2).sum(), [unused], allow_unused=True) == (None,)


def test_retain_grad_and_hooks():
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    h.retain_grad()
    seen = []
    h.register_hook(lambda g: seen.append(g.tolist()))
    handle = x.register_hook(lambda g: g * 10)
    (h * h).sum().backward()
    assert h.grad.tolist() == [6.0, 12.0] and seen == [[6.0, 12.0]]
    assert x.grad.tolist() == [180.0, 360.0]
    handle.remove()
    x.grad = None
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_requires_grad_rules():
    x = engine.ones(2)
    assert not x.requires_grad and x.requires_grad_().requires_grad
    y = x * 2
    assert not y.is_leaf and y.grad_fn is not None
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        engine.ones(2, dtype=engine.int64).requires_grad_()
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


def test_custom_function_pytorch_style():
    class Cube(engine.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    x = engine.tensor([1.0, 2.0], requires_grad=True)
    y = Cube.apply(x)
    assert y.tolist() == [1.0, 8.0]
    y.backward(engine.ones(2))
    assert x.grad.tolist() == [3.0, 12.0]


def test_gradient_flows_to_both_operands_without_aliasing():
    a = engine.ones(3, requires_grad=True)
    b = engine.ones(3, requires_grad=True)
    (a + b).backward(engine.ones(3))
    a.grad.add_(5)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_leaf_gradients_never_alias_what_others_hold():
    """A fresh gradient becomes .grad without a copy; one that anything else still refers to is copied."""
    root = engine.ones(3)
    a = engine.ones(3, requires_grad=True)
    b = engine.ones(3, requires_grad=True)
    (a + b).backward(root)  # one array handed to both leaves and owned by the caller
    a.grad.add_(5)
    b.grad.add_(7)
    assert root.tolist() == [1.0] * 3 and a.grad.tolist() == [6.0] * 3 and b.grad.tolist() == [8.0] * 3
    w = engine.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    x = engine.tensor([[0.5, -1.0]])
    y = (x @ w).sum()  # w's gradient is a fresh array: the leaf keeps it
    y.backward(retain_graph=True)
    first = w.grad
    y.backward()  # accumulates in place into the kept array, not into anything the graph saved
    assert first is w.grad
    np.testing.assert_array_equal(w.grad.numpy(), 2 * np.array([[0.5, 0.5], [-1.0, -1.0]]))
    hooked = engine.ones(2, requires_grad=True)
    kept = []
    hooked.register_hook(lambda g: kept.append(g) or g * 1)
    (hooked * 2).sum().backward()
    hooked.grad.add_(1)
    assert kept[0].tolist() == [2.0, 2.0] and hooked.grad.tolist() == [3.0, 3.0]


def test_broadcast_gradients_reduce_to_input_shapes():
    def run(lib):
        a = lib.ones(3, 1, requires_grad=True)
        b = lib.ones(1, 4, requires_grad=True, dtype=lib.float64)
        (a * b * 2).sum().backward()
        return a.grad.numpy(), b.grad.numpy(), str(b.grad.dtype)
    (ga, gb, dt), (ta, tb, tdt) = both(run)
    np.testing.assert_array_equal(ga, ta)
    np.testing.assert_array_equal(gb, tb)
    assert dt.split(".")[1] == tdt.split(".")[1]


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_root_gradient_of_another_shape_is_refused(create_graph):
    """A (4, 1) gradient for a (4,) output broadcast silently (4 times the values) where torch raises."""
    def calls(lib):
        x = lib.ones(4, requires_grad=True)
        y = x * 2
        return [lambda: lib.autograd.grad((y,), (x,), (lib.ones(4, 1),), create_graph=create_graph),
                lambda: lib.autograd.backward((y,), (lib.ones(()),), create_graph=create_graph),
                lambda: y.backward(lib.ones(4, 1), create_graph=create_graph)]
    for ours, theirs in zip(calls(engine), calls(torch)):
        with pytest.raises(RuntimeError) as expected:
            theirs()
        with pytest.raises(RuntimeError) as got:
            ours()
        assert str(got.value) == str(expected.value).replace("torch.", "engine.")


def test_a_second_backward_runs_through_nodes_that_saved_no_values():
    """torch refuses a second backward only through a node whose saved values the first freed: the chunks of one
    tensor can each be backpropagated, and a view twice; a product (it saved its factors) still refuses."""
    def run(lib):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        a, b = x.chunk(2)
        (a * 2).sum().backward()
        (b * 3).sum().backward()
        v = x.view(2, 2)
        v.sum().backward()
        v.sum().backward()
        y = x * x
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.sum().backward()
        return x.grad.numpy()
    np.testing.assert_array_equal(run(engine), run(torch))


@pytest.mark.parametrize("index", [lambda x: x[..., 0], lambda x: x[None], lambda x: x[::2, 1:],
                                   lambda x: x.narrow(1, 1, 2), lambda x: x[None].expand(2, 3, 4), lambda x: -x,
                                   lambda x: x.floor(), lambda x: x.sign(), lambda x: x.frac()],
                         ids=["ellipsis", "none", "steps", "narrow", "expand", "neg", "floor", "sign", "frac"])
def test_ops_that_save_no_values_backpropagate_twice(index):
    """An indexing key (Ellipsis, None, slices) is a parameter, not a saved value, and neg and the roundings save
    nothing: a second backward runs, as torch's."""
    def run(lib):
        x = lib.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        y = index(x)
        y.sum().backward()
        (y * 2).sum().backward()
        return x.grad.numpy()
    np.testing.assert_array_equal(run(engine), run(torch))
