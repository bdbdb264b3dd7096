"""engine.control_flow's cond and while_loop against torch.cond / torch.while_loop: values, gradients through the
branch taken and through the loop, and torch's checks."""
import numpy as np
import pytest
import torch

import engine
from engine.control_flow import cond, while_loop

pytestmark = pytest.mark.slow  # torch compiles its while_loop on every call (about a second each)


def _pair(seed, shape):
    a = np.random.default_rng(seed).standard_normal(shape)
    return engine.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _branches(T):
    def true_fn(x, w):
        return (x * w).sin().sum(1)

    def false_fn(x, w):
        return x.cos().mean(1) * w.sum()
    return true_fn, false_fn


@pytest.mark.parametrize("pred_value", [True, False])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_cond_values_and_gradients_against_torch(pred_value, as_tensor):
    xs, ws = _pair(0, (3, 5)), _pair(1, (5,))
    got = []
    for T, x, w, cond_fn in zip((engine, torch), xs, ws, (cond, torch.cond)):
        pred = T.tensor([pred_value]) if as_tensor else pred_value
        y = cond_fn(pred, *_branches(T), (x, w))
        (y * T.arange(3.0)).sum().backward()
        got.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for ours, ref in zip(*got):
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-14)


def test_cond_with_several_outputs_and_a_float_tensor_pred():
    x = engine.arange(4.0)
    a, b = cond(engine.tensor(0.5), lambda t: (t + 1, t * 2), lambda t: (t - 1, t / 2), [x])
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0] and b.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_cond_checks_pred_and_operands():
    x = engine.ones(2)
    with pytest.raises(RuntimeError, match=r"Expected pred to be bool or single-element tensor, but got"):
        cond(engine.tensor([True, False]), lambda t: t, lambda t: t, (x,))
    with pytest.raises(RuntimeError, match=r"Expected pred to be bool or single-element tensor, but got"):
        cond("yes", lambda t: t, lambda t: t, (x,))
    with pytest.raises(RuntimeError, match=r"Expect operands to be a tuple of possibly nested dict/list/tuple that "
                                           r"only consists of tensor leaves"):
        cond(True, lambda t: t, lambda t: t, x)
    with pytest.raises(RuntimeError, match=r"Expect both branches to be callable"):
        cond(True, 3, lambda t: t, (x,))


def test_while_loop_values_and_gradients_against_torch():
    xs = _pair(2, (4,))
    got = []
    for T, x, loop in zip((engine, torch), xs, (while_loop, torch.while_loop)):
        i, y = loop(lambda i, y: i < 3, lambda i, y: (i + 1, y.sin() * 1.5), (T.tensor(0), x))
        (y * T.arange(4.0)).sum().backward()
        got.append((int(i), y.detach().numpy(), x.grad.numpy()))
    assert got[0][0] == got[1][0] == 3
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-12)
    np.testing.assert_allclose(got[0][2], got[1][2], rtol=1e-12)


def test_while_loop_single_carried_and_list_output():
    assert while_loop(lambda i: i < 5, lambda i: i + 2, (engine.tensor(0),)).item() == 6
    out = while_loop(lambda i, x: i < 2, lambda i, x: [i + 1, x * 3], (engine.tensor(0), engine.ones(2)))
    assert isinstance(out, list) and out[1].tolist() == [9.0, 9.0]
    init = (engine.tensor(7), engine.ones(1))
    assert while_loop(lambda i, x: i < 3, lambda i, x: (i + 1, x + 1), init) is init


@pytest.mark.parametrize("body, message", [
    (lambda i, x: (i + 1,), r"Expected body_fn_output and carried_inputs to have same number of outputs but got "
                            r"lhs:\[Tensor\(size=\(\), dtype=engine\.int64\)\]"),
    (lambda i, x: (i + 1, x.double()), r"same metadata but found: pair\[1\] differ in 'dtype: engine\.float64 vs "
                                       r"engine\.float32'"),
    (lambda i, x: (i + 1, x[:2] * 1), r"pair\[1\] differ in 'size: \(2,\) vs \(3,\)'"),
    (lambda i, x: (i + 1, x), r"Higher order ops do not support aliasing"),
])
def test_while_loop_body_checks(body, message):
    with pytest.raises(RuntimeError, match=message):
        while_loop(lambda i, x: i < 3, body, (engine.tensor(0), engine.ones(3)))


def test_while_loop_cond_checks():
    with pytest.raises(RuntimeError, match=r"cond_fn must return a boolean scalar tensor or a boolean"):
        while_loop(lambda i, x: x, lambda i, x: (i + 1, x * 1), (engine.tensor(0), engine.ones(3)))
    with pytest.raises(RuntimeError, match=r"Expect carried_inputs to be a tuple"):
        while_loop(lambda i: i < 3, lambda i: i + 1, engine.tensor(0))
