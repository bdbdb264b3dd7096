"""``engine.special`` against ``torch.special``: every public name, the aliases of top-level ops, and the
differentiable functions torch has only there (erfcx, ndtr, ndtri, log_ndtr, entr, i0e, i1, i1e, xlog1py, zeta,
gammainc, gammaincc): values, dtypes and input gradients, integer inputs, ``out=``, and torch's errors.
The Bessel functions and the polynomials have their own files (test_special_bessel.py,
test_special_polynomials.py)."""
import numpy as np
import pytest
import torch

import engine
import engine.special as es
from op_check import check_op

pytestmark = pytest.mark.slow  # a sweep of every torch.special name: the full suite runs it

_RNG = np.random.default_rng(11)
_X = _RNG.standard_normal((3, 5))  # float64, odd sizes, batch > 1
_POS = np.abs(_X) + 0.1
_UNIT = _RNG.uniform(0.02, 0.98, (3, 5))

# name: (f(module, x), input)
UNARY = {
    "erfcx": (lambda S, x: S.erfcx(x), _X * 2),
    "ndtr": (lambda S, x: S.ndtr(x), _X * 3),
    "ndtri": (lambda S, x: S.ndtri(x), _UNIT),
    "log_ndtr": (lambda S, x: S.log_ndtr(x), _X * 4),  # both sides of torch's split at -1
    "entr": (lambda S, x: S.entr(x), _POS),
    "i0e": (lambda S, x: S.i0e(x), _X * 3),
    "i1": (lambda S, x: S.i1(x), _X * 3),
    "i1e": (lambda S, x: S.i1e(x), _X * 3),
    "erf": (lambda S, x: S.erf(x), _X),
    "erfc": (lambda S, x: S.erfc(x), _X),
    "erfinv": (lambda S, x: S.erfinv(x), _UNIT * 2 - 1),
    "expit": (lambda S, x: S.expit(x), _X),
    "exp2": (lambda S, x: S.exp2(x), _X),
    "expm1": (lambda S, x: S.expm1(x), _X),
    "log1p": (lambda S, x: S.log1p(x), _POS),
    "psi": (lambda S, x: S.psi(x), _POS),
    "digamma": (lambda S, x: S.digamma(x), _POS),
    "gammaln": (lambda S, x: S.gammaln(x), _POS),
    "i0": (lambda S, x: S.i0(x), _X),
    "sinc": (lambda S, x: S.sinc(x), _X),
    "logit": (lambda S, x: S.logit(x, eps=0.1), _UNIT),
    "round": (lambda S, x: S.round(x * 10, decimals=1), _X),
    "multigammaln": (lambda S, x: S.multigammaln(x + 2, 3), _POS),
    "polygamma": (lambda S, x: S.polygamma(2, x), _POS),
    "logsumexp": (lambda S, x: S.logsumexp(x, 1, keepdim=True), _X),
    "softmax": (lambda S, x: S.softmax(x, 0), _X),
    "log_softmax": (lambda S, x: S.log_softmax(x, -1, dtype=torch.float64 if S is torch.special else
                                               engine.float64), _X),
}


def test_every_public_name_of_torch_special():
    helpers = {"torch", "common_args", "multi_dim_common"}  # torch's docstring helpers, not functions
    names = {n for n in dir(torch.special) if not n.startswith("_")} - helpers
    assert sorted(names - set(dir(es))) == []
    assert sorted(set(es.__all__)) == sorted(names)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    f, x = UNARY[name]
    rtol = 1e-6 if dtype == "float64" else 1e-5
    check_op(lambda a: f(es, a), lambda a: f(torch.special, a), [x.astype(dtype)], rtol=rtol, grad_rtol=rtol * 10)


@pytest.mark.parametrize("name", ["erfcx", "ndtr", "ndtri", "log_ndtr", "entr", "i0e", "i1", "i1e", "expit",
                                  "gammaln"])
def test_integer_inputs_give_floats(name):
    values = np.array([-3, 0, 1, 4]) if name not in ("ndtri", "entr", "gammaln") else np.array([0, 1, 2])
    ours = getattr(es, name)(engine.tensor(values))
    theirs = getattr(torch.special, name)(torch.tensor(values))
    assert str(ours.dtype) == str(theirs.dtype).replace("torch", "engine")
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_edge_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -40.0, 40.0, 1e-300, 700.0, 720.0])
    for name in ("erfcx", "ndtr", "log_ndtr", "entr", "i0e", "i1", "i1e"):
        for dtype in ("float64", "float32"):
            ours = getattr(es, name)(engine.tensor(x).to(getattr(engine, dtype))).numpy()
            theirs = getattr(torch.special, name)(torch.tensor(x).to(getattr(torch, dtype))).numpy()
            np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-300, err_msg=f"{name} {dtype}")
    p = np.array([0.0, 1.0, -0.5, 1.5, np.nan, 1e-300, 0.5])
    np.testing.assert_allclose(es.ndtri(engine.tensor(p)).numpy(), torch.special.ndtri(torch.tensor(p)).numpy())


@pytest.mark.parametrize("name", ["i0e", "i1", "i1e", "entr", "ndtr"])
def test_half_types(name):
    """float16 and bfloat16 results within two of their ulps of torch's (torch evaluates some of these series in
    the half type itself, ours in float32 then rounds)."""
    x = np.array([0.5, -1.5, 2.25, 9.0])
    for dtype in ("float16", "bfloat16"):
        ours = getattr(es, name)(engine.tensor(x).to(getattr(engine, dtype)))
        theirs = getattr(torch.special, name)(torch.tensor(x).to(getattr(torch, dtype)))
        assert ours.dtype is getattr(engine, dtype)
        np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2e-2)


def test_xlog1py():
    a, b = _X.copy(), _POS.copy()
    a[0, :2] = 0.0
    check_op(es.xlog1py, torch.special.xlog1py, [a, b], rtol=1e-6)
    check_op(es.xlog1py, torch.special.xlog1py, [a.astype(np.float32), b[:1].astype(np.float32)])
    check_op(lambda y: es.xlog1py(2, y), lambda y: torch.special.xlog1py(2, y), [b])
    check_op(lambda x: es.xlog1py(x, 0.5), lambda x: torch.special.xlog1py(x, 0.5), [a.astype(np.float32)])
    ints = es.xlog1py(engine.tensor([0, 1, 2]), engine.tensor([3, 4, 5]))
    assert ints.dtype is engine.float32
    np.testing.assert_allclose(ints.numpy(), torch.special.xlog1py(torch.tensor([0, 1, 2]),
                                                                  torch.tensor([3, 4, 5])).numpy())
    nan = es.xlog1py(engine.tensor([0.0, 0.0]), engine.tensor([np.nan, -2.0]))
    np.testing.assert_array_equal(nan.numpy(), [np.nan, 0.0])


def test_zeta():
    x, q = _POS + 1.2, _POS + 0.3
    check_op(lambda a, b: es.zeta(a.detach(), b), lambda a, b: torch.special.zeta(a.detach(), b), [x, q])
    check_op(lambda b: es.zeta(3, b), lambda b: torch.special.zeta(3, b), [q.astype(np.float32)])
    check_op(lambda a: es.zeta(a, 2.0), lambda a: torch.special.zeta(a, 2.0), [x], grad=False)
    edges = (np.array([2.0, 2, 2, 0.5, 1, 2.5, 3]), np.array([0.0, -1, -1.5, 1, 1, -2.5, -3]))
    np.testing.assert_array_equal(es.zeta(*map(engine.tensor, edges)).numpy(),
                                  torch.special.zeta(*map(torch.tensor, edges)).numpy())
    assert es.zeta(engine.tensor([2, 3]), engine.tensor([1, 2])).dtype is engine.float32


def test_zeta_has_no_derivative_in_x():
    x = engine.tensor([2.5], requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented."):
        es.zeta(x, engine.tensor([1.5])).sum().backward()


def test_gammainc_gammaincc():
    a, x = _POS, _POS[::-1].copy()
    check_op(lambda u, v: es.gammainc(u.detach(), v), lambda u, v: torch.special.gammainc(u.detach(), v), [a, x])
    check_op(lambda u, v: es.gammaincc(u.detach(), v), lambda u, v: torch.special.gammaincc(u.detach(), v), [a, x])


def test_gammainc_takes_tensors_only():
    with pytest.raises(TypeError, match=r"special_gammainc\(\): argument 'other' \(position 2\) must be Tensor, "
                                        r"not int"):
        es.gammainc(engine.tensor([1.0]), 2)


def test_out():
    out = engine.empty(3)
    result = es.erfcx(engine.tensor([0.0, 1.0, -1.0]), out=out)
    assert result is out
    np.testing.assert_allclose(out.numpy(), torch.special.erfcx(torch.tensor([0.0, 1.0, -1.0])).numpy())
    out = engine.empty(2)
    es.xlog1py(engine.tensor([1.0, 2.0]), engine.tensor([1.0, 3.0]), out=out)
    np.testing.assert_allclose(out.numpy(), np.log1p([1.0, 3.0]) * [1, 2], rtol=1e-6)


@pytest.mark.parametrize("name", ["erfcx", "ndtri", "log_ndtr"])
def test_half_types_are_refused(name):
    with pytest.raises(NotImplementedError, match=f"\"{name}_cpu\" not implemented for 'Half'"):
        getattr(es, name)(engine.tensor([0.5]).half())


@pytest.mark.parametrize("name", ["erfcx", "i1e", "log_ndtr", "xlog1py", "zeta"])
def test_on_cuda(cuda, name):
    x = _POS.astype(np.float32)
    if name in ("xlog1py", "zeta"):
        f = getattr(es, name)
        check_op(lambda a: f(a + 1.5, a), lambda a: getattr(torch.special, name)(a + 1.5, a), [x], device="cuda",
                 grad=name == "xlog1py")
    else:
        check_op(getattr(es, name), getattr(torch.special, name), [x - 0.5], device="cuda")
