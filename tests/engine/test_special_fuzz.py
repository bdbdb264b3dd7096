"""Differential fuzzing of ``engine.special`` against ``torch.special`` (third round): the cases a sweep over wide
input ranges, every dtype, Python-number arguments and the polynomials' large degrees found wrong, kept as a cheap
sample: float32 Chebyshev closed forms (acos, cos and sin correctly rounded, as the C library's), Python numbers
rounded to the result's dtype before xlog1py and zeta use them, and torch's refusals (boolean multigammaln, Python
numbers in igamma/igammac, round's kernel name with decimals)."""
import numpy as np
import pytest
import torch
from op_check import assert_same_error

import engine
import engine.special as es

CHEBYSHEV = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
             "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
             "shifted_chebyshev_polynomial_w"]


def _same(ours, theirs, rtol):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", CHEBYSHEV)
def test_chebyshev_closed_form_in_float32(name):
    # numpy's float32 arccos is an ulp off here; n * theta made that 6e-6 relative at n = 100
    x = np.float32(0.2222696840763092 if not name.startswith("shifted") else 0.6111348420381546)
    n = np.array([[100, 20, 9], [31, 57, 200]])
    ours = getattr(es, name)(engine.tensor(x), engine.tensor(n))
    theirs = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n))
    _same(ours, theirs, 1e-6)


@pytest.mark.parametrize("scalar_first", [True, False])
def test_xlog1py_rounds_a_python_number_to_the_tensor_dtype(scalar_first):
    # 1e-300 is 0 in float32: torch gives 0 where log1p is NaN, not 0 * NaN
    other = np.array([[-20.25, 1.5, np.nan], [-1.0, 0.0, 3.0]], dtype=np.float32)
    if scalar_first:
        ours, theirs = es.xlog1py(1e-300, engine.tensor(other)), torch.special.xlog1py(1e-300, torch.tensor(other))
    else:
        ours = es.xlog1py(engine.tensor(other.T), 1e-300)
        theirs = torch.special.xlog1py(torch.tensor(other.T), 1e-300)
    _same(ours, theirs, 1e-6)


@pytest.mark.parametrize("x", [1e39, 1e-50, 1.0000000001])
def test_zeta_rounds_a_python_number_to_the_tensor_dtype(x):
    # 1e39 is inf in float32: zeta(inf, 2) is NaN in torch, scipy's float64 zeta(1e39, 2) 0
    q = np.array([0.5, 2.0, 3.25], dtype=np.float32)
    _same(es.zeta(x, engine.tensor(q)), torch.special.zeta(x, torch.tensor(q)), 1e-5)
    _same(es.zeta(engine.tensor(q) + 1, x), torch.special.zeta(torch.tensor(q) + 1, x), 1e-5)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_zeta_at_q_infinite_is_nan(dtype):
    x = np.array([[1.5, 2.0, np.inf], [1.0, 0.5, 100.0]], dtype=dtype)
    q = np.array([np.inf, 2.0, 3.0], dtype=dtype)
    _same(es.zeta(engine.tensor(x), engine.tensor(q)), torch.special.zeta(torch.tensor(x), torch.tensor(q)), 1e-6)


def test_xlog1py_and_zeta_with_a_python_number_keep_their_gradients():
    q = np.array([1.5, 2.5, 7.0])
    grads = []
    for lib, special in ((engine, es), (torch, torch.special)):
        t = lib.tensor(q, requires_grad=True)
        (special.zeta(3.0, t) + special.xlog1py(1e-300, t) + special.xlog1py(2.5, t)).sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_allclose(*grads, rtol=1e-12)


def test_xlog1py_and_zeta_with_a_python_number_on_cuda(cuda):
    other = np.array([-20.25, 1.5, 2.0], dtype=np.float32)
    ours = es.xlog1py(1e-300, engine.tensor(other, device="cuda"))
    assert ours.device.type == "cuda"
    np.testing.assert_array_equal(ours.cpu().numpy(), torch.special.xlog1py(1e-300, torch.tensor(other)).numpy())
    ours = es.zeta(1e39, engine.tensor(other, device="cuda")).cpu()
    _same(ours, torch.special.zeta(1e39, torch.tensor(other)), 1e-6)


@pytest.mark.parametrize("call", [lambda L: L.mvlgamma(L.tensor([True, False]), 1),
                                  lambda L: L.special.multigammaln(L.tensor([True]), 2),
                                  lambda L: L.tensor([True]).mvlgamma(3)])
def test_multigammaln_refuses_booleans(call):
    for lib in (torch, engine):
        with pytest.raises(RuntimeError, match="^The input tensor may not be a boolean tensor.$"):
            call(lib)


def test_multigammaln_p_below_one_message():
    for lib in (torch, engine):
        with pytest.raises(RuntimeError, match="^p has to be greater than or equal to 1$"):
            lib.special.multigammaln(lib.tensor([2.5]), 0)


def _message(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("call", [lambda L: L.igamma(L.tensor([1.0]), 2),
                                  lambda L: L.igammac(2.0, L.tensor([1.0])),
                                  lambda L: L.igamma(0.5, 2.0),
                                  lambda L: L.tensor([1.0]).igamma(2.0),
                                  lambda L: L.tensor([1.0]).igammac_(3)])
def test_igamma_refuses_python_numbers(call):
    assert _message(lambda: call(engine)) == _message(lambda: call(torch))


@pytest.mark.parametrize("decimals", [0, 2, -1])
def test_round_of_integers_names_torch_kernel(decimals):
    ours = _message(lambda: es.round(engine.tensor([1, 2]), decimals=decimals))
    assert ours == _message(lambda: torch.special.round(torch.tensor([1, 2]), decimals=decimals))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lgamma_near_its_zeros_at_one_and_two(dtype):
    # scipy's gammaln loses up to 6e-6 relative within ~1e-3 of 1 and 2; torch's C library lgamma does not
    rng = np.random.default_rng(3)
    x = np.concatenate([1 + rng.uniform(-1e-3, 1e-3, 7), 2 + rng.uniform(-1e-3, 1e-3, 7),
                        1 + rng.uniform(-1e-8, 1e-8, 5), [0.9, 1.1, 1.9, 2.1, 0.5, 3.5, -0.5, 1.0, 2.0]])
    x = x.reshape(4, 7).astype(dtype)
    rtol = 1e-12 if dtype == "float64" else 1e-6
    _same(es.gammaln(engine.tensor(x)), torch.special.gammaln(torch.tensor(x)), rtol)
    _same(engine.tensor(x).lgamma(), torch.tensor(x).lgamma(), rtol)
    _same(es.multigammaln(engine.tensor(x) + 0.5, 2), torch.special.multigammaln(torch.tensor(x) + 0.5, 2), rtol)


def test_lgamma_near_one_on_cuda(cuda):
    x = 1 + np.random.default_rng(4).uniform(-1e-3, 1e-3, 5)
    ours = engine.lgamma(engine.tensor(x, device="cuda"))
    assert ours.device.type == "cuda"
    _same(ours.cpu(), torch.lgamma(torch.tensor(x)), 1e-12)


@pytest.mark.parametrize("call", [lambda S, L: S.polygamma(1.0, L.tensor([1.5])),
                                  lambda S, L: S.polygamma(True, L.tensor([1.5])),
                                  lambda S, L: S.polygamma(2, 1.5),
                                  lambda S, L: S.multigammaln(L.tensor([3.5]), 2.0),
                                  lambda S, L: S.multigammaln(2.5, 1),
                                  lambda S, L: S.round(L.tensor([1.25]), decimals=1.0),
                                  lambda S, L: S.sinc(2.0),
                                  lambda S, L: S.psi(2),
                                  lambda S, L: S.i1(3),
                                  lambda S, L: S.i0e(0.5)])
def test_argument_types_refused_as_by_torch(call):
    assert _message(lambda: call(es, engine)) == _message(lambda: call(torch.special, torch))


def test_integer_arguments_may_be_zero_dim_integer_tensors():
    for lib, special in ((engine, es), (torch, torch.special)):
        x = lib.tensor([1.5, 2.25, 3.125])
        got = [special.polygamma(lib.tensor(2), x), special.multigammaln(x + 1, lib.tensor(2)),
               special.round(x, decimals=lib.tensor(1))]
        if lib is engine:
            ours = got
        else:
            for a, b in zip(ours, got):
                _same(a, b, 1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_gradient_at_infinities(n):
    # the gradient is polygamma(n + 1, x), NaN at +inf for n + 1 >= 2 in torch (scipy: 0)
    x = np.array([[np.inf, -np.inf, 2.5], [-2.5, 0.75, 40.0]])
    grads = []
    for lib in (engine, torch):
        t = lib.tensor(x, requires_grad=True)
        lib.special.polygamma(n, t).backward(lib.ones_like(t))
        grads.append(t.grad)
    _same(*grads, 1e-8)  # torch's trigamma is 4e-10 relative from the exact value, scipy's within 1e-15


POINTWISE_EDGES = {
    "logit_eps_past_half": lambda m: m.logit(m.tensor([0.1, 0.5, 0.9]), eps=0.6),
    "sinc_float16": lambda m: m.sinc(m.tensor([2.04, -6.0, 0.3], dtype=m.float16)),
    "round_float16_decimals": lambda m: m.round(m.tensor([-1005.0, 3.14159], dtype=m.float16), decimals=3),
    "xlogy_number_rounds_to_zero": lambda m: m.xlogy(4.98e-16, m.tensor([-4.0, 2.0], dtype=m.float16)),
}


@pytest.mark.parametrize("name", sorted(POINTWISE_EDGES))
def test_pointwise_edges_as_torch(name):
    ours, theirs = POINTWISE_EDGES[name](engine), POINTWISE_EDGES[name](torch)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=1e-6, atol=0)


def test_igamma_input_derivative_is_not_implemented():
    def call(m):
        a = m.tensor([1.0, 2.0], requires_grad=True)
        m.special.gammainc(a, m.tensor([0.5, 1.0])).sum().backward()
    assert_same_error(lambda: call(engine), lambda: call(torch))
