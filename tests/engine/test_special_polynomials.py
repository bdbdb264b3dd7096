"""``engine.special``'s orthogonal polynomials against torch's: every family on a grid of x through [-1, 1] (and
[0, 1] shifted), its ends and beyond, and degrees 0..10 with torch's branch switches (6, 8, 4), larger, negative,
non-integer and non-finite ones; float64 and float32 (torch's recurrences round like fused multiply-adds, which
ours reproduce); scalar x or n, dtype promotion, no gradient, and the errors."""
import numpy as np
import pytest
import torch

import engine
import engine.special as es
from op_check import check_op, rel_err

NAMES = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
         "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
         "legendre_polynomial_p"]

_X = np.concatenate([np.linspace(-2.5, 2.5, 51), [1.0, -1.0, 0.0, -0.0, 0.5, 0.99999, -0.99999, 1.00001, 1e-8,
                                                     np.nan, np.inf, -np.inf]])
_N = np.array([-3, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 17, 40, 100, 129, 600, -0.5, 2.7, np.nan, np.inf, 1e30])


@pytest.mark.parametrize("name", NAMES)
def test_values_on_a_grid(name):
    x, n = np.meshgrid(_X, _N)
    for dtype, rtol in (("float64", 1e-6), ("float32", 1e-5)):
        ours = getattr(es, name)(engine.from_numpy(x.astype(dtype)), engine.from_numpy(n.astype(dtype))).numpy()
        theirs = getattr(torch.special, name)(torch.from_numpy(x.astype(dtype)), torch.from_numpy(n.astype(dtype)))
        theirs = theirs.numpy()
        assert ours.dtype == theirs.dtype
        for row, degree in enumerate(_N):
            # at degree 600 float32's trigonometric forms lose ~1e-4 to the argument n acos(x) (ill-conditioned)
            tol = rtol if dtype == "float64" or degree < 500 else 1e-3
            err = rel_err(ours[row], theirs[row])
            assert err <= tol, f"{name} {dtype} n={degree}: {err:.3g}"


@pytest.mark.parametrize("name", ["chebyshev_polynomial_u", "hermite_polynomial_h", "laguerre_polynomial_l",
                                  "legendre_polynomial_p"])
def test_float32_recurrences_round_as_torch_does(name):
    """Bit for bit where the recurrence runs (outside (-1, 1) for Chebyshev's U above degree 8)."""
    x = np.concatenate([np.linspace(-3, -1.05, 30), np.linspace(1.05, 3, 30)]).astype(np.float32)
    ours = getattr(es, name)(engine.from_numpy(x), 30).numpy()
    np.testing.assert_array_equal(ours, getattr(torch.special, name)(torch.from_numpy(x), 30).numpy())


@pytest.mark.parametrize("name", NAMES)
def test_scalar_operands_and_promotion(name):
    ours, theirs = getattr(es, name), getattr(torch.special, name)
    x = np.random.default_rng(2).uniform(-1.2, 1.2, (2, 3, 5))
    check_op(lambda a: ours(a, 5), lambda a: theirs(a, 5), [x.astype(np.float32)])
    check_op(lambda a: ours(a, 3.7), lambda a: theirs(a, 3.7), [x])
    degrees = np.array([[0, 1, 2, 7, 11]])
    for a, b in ((0.3, degrees), (x[0], degrees), (x[0].astype(np.float32), degrees.astype(np.float64))):
        left = engine.tensor(a) if isinstance(a, np.ndarray) else a
        got, want = ours(left, engine.tensor(b)), theirs(torch.tensor(a) if isinstance(a, np.ndarray) else a,
                                                        torch.tensor(b))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        assert rel_err(got.numpy(), want.numpy()) <= (1e-6 if got.dtype is engine.float64 else 1e-5)


def test_integer_operands_give_float32():
    got = es.legendre_polynomial_p(engine.tensor([1, 2, 3]), engine.tensor([2, 3, 4]))
    assert got.dtype is engine.float32
    np.testing.assert_allclose(got.numpy(), torch.special.legendre_polynomial_p(torch.tensor([1, 2, 3]),
                                                                             torch.tensor([2, 3, 4])).numpy())


def test_not_differentiable_and_out():
    x = engine.tensor([0.2, 0.7], requires_grad=True)
    y = es.chebyshev_polynomial_t(x, 3)
    assert not y.requires_grad and y.grad_fn is None
    out = engine.empty(2)
    assert es.hermite_polynomial_he(engine.tensor([0.5, 2.0]), 2, out=out) is out
    np.testing.assert_allclose(out.numpy(), [-0.75, 3.0])


def test_two_numbers_are_refused():
    with pytest.raises(TypeError, match=r"special_chebyshev_polynomial_t\(\) received an invalid combination of "
                                        r"arguments - got \(float, int\)"):
        es.chebyshev_polynomial_t(0.5, 3)


def test_half_types_are_refused():
    with pytest.raises(NotImplementedError, match="\"legendre_polynomial_p_cpu\" not implemented for 'BFloat16'"):
        es.legendre_polynomial_p(engine.tensor([0.5]).bfloat16(), 2)


@pytest.mark.parametrize("name", ["chebyshev_polynomial_w", "shifted_chebyshev_polynomial_v", "hermite_polynomial_h"])
def test_on_cuda(cuda, name):
    x = np.random.default_rng(4).uniform(-1.5, 1.5, (3, 7)).astype(np.float32)
    n = np.arange(21, dtype=np.float32).reshape(3, 7)
    check_op(getattr(es, name), getattr(torch.special, name), [x, n], device="cuda")
