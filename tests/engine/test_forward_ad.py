"""engine.autograd.forward_ad against torch.autograd.forward_ad: primals and tangents of the same functions
(float64, odd shapes, batch > 1), level rules, make_dual checks, views, in-place ops, and that ops run the
original ``Function.__call__`` again once the level is exited."""
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfwd

import engine
import engine.autograd.forward_ad as fwd
import engine.nn.functional as F
from engine.autograd.function import Function

TF = torch.nn.functional


def _run(lib, ad, fn, primals, tangents):
    with ad.dual_level():
        duals = [ad.make_dual(lib.tensor(p), lib.tensor(t)) for p, t in zip(primals, tangents)]
        out = fn(lib, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        return [(o.detach().numpy(), None if ad.unpack_dual(o).tangent is None
                 else ad.unpack_dual(o).tangent.detach().numpy()) for o in outs]


def _draw(rng, shape, complex_):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


def _compare(fn, shapes, seed=0, complex_=False):
    rng = np.random.default_rng(seed)
    primals = [_draw(rng, s, complex_) for s in shapes]
    tangents = [_draw(rng, s, complex_) for s in shapes]
    ours = _run(engine, fwd, fn, primals, tangents)
    theirs = _run(torch, tfwd, fn, primals, tangents)
    for (p, t), (tp, tt) in zip(ours, theirs):
        np.testing.assert_allclose(p, tp, rtol=1e-10, atol=1e-12)
        assert (t is None) == (tt is None)
        if t is not None:
            np.testing.assert_allclose(t, tt, rtol=1e-9, atol=1e-11)


def _nn(lib):
    return F if lib is engine else TF


CASES = {
    "elementwise": (lambda lib, x, y: (x.sin() * y + x.exp() / (1 + y * y)).tanh() - x.sigmoid() ** 2,
                    [(3, 5), (3, 5)]),
    "broadcast": (lambda lib, x, b: (x + b).relu() * b.abs(), [(2, 3, 5), (5,)]),
    "matmul": (lambda lib, a, b: lib.matmul(a, b).sum(dim=-1), [(2, 3, 4), (4, 7)]),
    "conv2d": (lambda lib, x, w: _nn(lib).conv2d(x, w, padding=1, stride=2), [(2, 3, 7, 6), (4, 3, 3, 3)]),
    "softmax": (lambda lib, x: _nn(lib).log_softmax(x, dim=1) + _nn(lib).softmax(x, dim=-1), [(3, 5)]),
    "mse": (lambda lib, x, y: _nn(lib).mse_loss(x, y), [(4, 3), (4, 3)]),
    "cross_entropy": (lambda lib, x: _nn(lib).cross_entropy(x, lib.tensor([0, 2, 1, 4])), [(4, 5)]),
    "mlp": (lambda lib, x, w1, w2: _nn(lib).linear(_nn(lib).gelu(_nn(lib).linear(x, w1)), w2).mean(),
            [(5, 3), (7, 3), (2, 7)]),
    "views": (lambda lib, x: (x.transpose(0, 1)[1:, ::2].reshape(-1) * 2, x.unbind(0)[1]), [(3, 4)]),
    "join_and_index": (lambda lib, x, y: (lib.cat([x, y], dim=0)[lib.tensor([3, 0, 2])],
                                          lib.where(x > 0, x, y * 3), lib.stack([x, y]).amax(0)), [(2, 3), (2, 3)]),
    "reductions": (lambda lib, x: (*x.max(dim=1), x.norm(), x.var(dim=0), x.logsumexp(1), x.amin(0)), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn, shapes = CASES[name]
    _compare(fn, shapes)


def test_complex_matches_torch():
    _compare(lambda lib, z, w: ((z * w).exp() + z.conj() * 2, lib.view_as_real(z) * 3, z.real * w.imag),
             [(2, 3), (2, 3)], complex_=True)


def test_on_cuda_matches_cpu(cuda):
    rng = np.random.default_rng(1)
    x, t, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    results = []
    for device in ("cpu", "cuda"):
        with fwd.dual_level():
            d = fwd.make_dual(engine.tensor(x, device=device), engine.tensor(t, device=device))
            y = (d.tanh() * d) @ engine.tensor(w, device=device)
            y[0].mul_(2)
            results.append([a.cpu().numpy() for a in fwd.unpack_dual(y)])
    for ours, ref in zip(*results):
        np.testing.assert_allclose(ours, ref, rtol=1e-12)


def test_integer_output_has_no_tangent():
    _compare(lambda lib, x: x.argmax(dim=1), [(3, 4)])


def test_inplace_updates_tangent_and_its_views():
    def fn(lib, x):
        y = x * 2
        v = y[1:]
        y.mul_(3)
        y.add_(x)
        y[0].sub_(x[1] * x[0])
        return y, v
    _compare(fn, [(3, 2)])


def test_view_tangent_shares_storage_and_make_dual_keeps_tangent():
    with fwd.dual_level():
        t = engine.randn(3, 4, dtype=engine.float64)
        d = fwd.make_dual(engine.randn(3, 4, dtype=engine.float64), t)
        assert fwd.unpack_dual(d).tangent is t
        v = fwd.unpack_dual(d[1]).tangent
        assert np.shares_memory(v.numpy(), t.numpy())
        assert fwd.unpack_dual(fwd.unpack_dual(d).primal).tangent is None


def test_inplace_into_view_of_plain_base_raises():
    with fwd.dual_level():
        d = fwd.make_dual(engine.ones(3, dtype=engine.float64), engine.ones(3, dtype=engine.float64))
        base = engine.zeros(4, dtype=engine.float64)
        with pytest.raises(RuntimeError, match="on a view whose base has no tangent"):
            base[1:].add_(d)


class _Twice(Function):
    """An op with a backward on arrays only: forward AD through it must name it."""

    def forward(self, x):
        return 2 * x

    def backward(self, gy):
        return 2 * gy


def test_op_without_differentiable_backward_raises():
    with fwd.dual_level():
        d = fwd.make_dual(engine.ones(2, dtype=engine.float64), engine.ones(2, dtype=engine.float64))
        with pytest.raises(RuntimeError, match="double backward .* is not implemented for _TwiceBackward"):
            _Twice()(d)


def test_level_rules():
    assert fwd.enter_dual_level() == 0
    with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported at the moment"):
        fwd.enter_dual_level()
    with pytest.raises(RuntimeError, match="that was not the last one that was created"):
        fwd.exit_dual_level(level=3)
    fwd.exit_dual_level()
    with pytest.raises(RuntimeError, match="Dual level must be a positive number."):
        fwd.exit_dual_level()
    with fwd.dual_level() as level:
        assert level == 0


def test_make_dual_checks():
    x = engine.ones(2, dtype=engine.float64)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwd.make_dual(x, x)
    with fwd.dual_level():
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] while the given forward gradient is of "
                                               r"size \[3\]"):
            fwd.make_dual(x, engine.ones(3, dtype=engine.float64))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, but got: "
                                             "engine.int64"):
            fwd.make_dual(engine.ones(2, dtype=engine.int64), x)
        with pytest.raises(ValueError, match="Expected tangent to be floating point"):
            fwd.make_dual(x, engine.ones(2, dtype=engine.int64))
        d = fwd.make_dual(x, x)
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0"):
            fwd.make_dual(d, x)
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            fwd.make_dual(x, x, level=3)
        with pytest.raises(RuntimeError, match="Invalid level given to _fw_primal"):
            fwd.unpack_dual(d, level=3)


def test_unpack_dual_outside_level_and_after_exit():
    x = engine.ones(2, dtype=engine.float64)
    primal, tangent = fwd.unpack_dual(x)
    assert primal is x and tangent is None
    with fwd.dual_level():
        d = fwd.make_dual(x, x)
    assert fwd.unpack_dual(d).tangent is None
    assert fwd.unpack_dual(d, level=0).tangent is None


def test_normal_path_restored_after_exit():
    original = Function.__call__
    with fwd.dual_level():
        assert Function.__call__ is not original
    assert Function.__call__ is original
    with pytest.raises(ZeroDivisionError):
        with fwd.dual_level():
            raise ZeroDivisionError
    assert Function.__call__ is original


def test_reverse_mode_of_primal_still_works():
    x = engine.randn(3, dtype=engine.float64, requires_grad=True)
    with fwd.dual_level():
        d = fwd.make_dual(x, engine.ones(3, dtype=engine.float64))
        y = (d * d).sum()
        y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def _hvp(lib, ad, x, t, w):
    """Reverse over forward: the gradient of the tangent of f(x) = sum(tanh(x @ w) * x), i.e. H t, and the
    gradient of that tangent with respect to the tangent itself."""
    x = lib.tensor(x, requires_grad=True)
    t = lib.tensor(t, requires_grad=True)
    w = lib.tensor(w, requires_grad=True)
    with ad.dual_level():
        d = ad.make_dual(x, t)
        y = ((d @ w).tanh() @ w.transpose(0, 1) * d * d).sum()
        ad.unpack_dual(y).tangent.backward()
    return [a.grad.detach().numpy() for a in (x, t, w)]


def test_reverse_over_forward_matches_torch():
    rng = np.random.default_rng(2)
    args = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    for ours, theirs in zip(_hvp(engine, fwd, *args), _hvp(torch, tfwd, *args)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_tangents_are_constants_under_no_grad():
    x = engine.randn(3, dtype=engine.float64, requires_grad=True)
    with fwd.dual_level(), engine.no_grad():
        d = fwd.make_dual(x, engine.ones(3, dtype=engine.float64))
        assert not fwd.unpack_dual(d.sin() * x).tangent.requires_grad


def test_inplace_writes_the_given_tangent_as_torch():
    t = engine.ones(3, dtype=engine.float64)
    with fwd.dual_level():
        d = fwd.make_dual(engine.ones(3, dtype=engine.float64), t)
        d.mul_(2)
    np.testing.assert_array_equal(t.numpy(), [2.0, 2.0, 2.0])
    x = engine.ones(3, dtype=engine.float64, requires_grad=True)
    t = engine.ones(3, dtype=engine.float64, requires_grad=True)
    with fwd.dual_level():
        d = fwd.make_dual(x.clone(), t)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
            d.mul_(2)
