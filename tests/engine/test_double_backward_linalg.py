"""Higher-order gradients (``create_graph=True``) against torch: the factorisations (cholesky, qr, eigh,
eigvalsh, svd, svdvals, eig, eigvals, pinv, lu_factor and lu) for real and complex (built from two real inputs)
batches of odd sizes, the triangular, least-squares and Householder solvers, i0e/i1/i1e, igamma/igammac,
fake quantization and the linear sparse ops. Losses of eigen- and singular vectors are phase-invariant (torch
refuses the others). Helper: ``test_double_backward.check_double`` (float64, first and second gradients to 1e-6)."""
import numpy as np
import pytest

from test_double_backward import check_double

pytestmark = pytest.mark.slow  # torch imports sympy on its first create_graph call (about 3 s)

_R = np.random.default_rng(23)
TALL = _R.standard_normal((2, 5, 3))
WIDE = _R.standard_normal((2, 3, 5))
SQ = _R.standard_normal((2, 5, 5))
SQ2 = _R.standard_normal((2, 5, 5))
GEN = _R.standard_normal((2, 4, 4)) + np.diag([0.0, 2.0, 4.0, 6.0])  # well-separated real eigenvalues


def _spd(L, a):
    return a @ a.mT + 5 * L.eye(5, dtype=a.dtype, device=a.device)


def _hpd(L, x, y):
    a = L.complex(x, y)
    return a @ a.mH + 5 * L.eye(5, dtype=a.dtype, device=a.device)


def _sym(a):
    return a + a.mT


def _herm(L, x, y):
    a = L.complex(x, y)
    return a + a.mH


def _abs2(z):
    return z.real ** 2 + z.imag ** 2


def _projector(u, k):
    """u[:, :k] u[:, :k]^H: independent of the vectors' signs and phases."""
    return u[..., :k] @ u[..., :k].mH


def _m(x):
    """A per-matrix total: (batch,) from (batch, m, n)."""
    return x.sum((-2, -1))


CASES = {
    "cholesky": (lambda F, L, a: L.linalg.cholesky(_spd(L, a)) ** 2 + L.linalg.cholesky(_spd(L, a), upper=True).sin(),
                 [SQ]),
    "cholesky_complex": (lambda F, L, x, y: _abs2(L.linalg.cholesky(_hpd(L, x, y)) ** 2), [SQ, SQ2]),
    "qr_tall_wide": (lambda F, L, a, b: _m(L.linalg.qr(a)[0] ** 2 * a) + _m(L.linalg.qr(a)[1] ** 3)
                     + _m(L.linalg.qr(b)[0].cos()) + _m(L.linalg.qr(b, mode="complete")[1] ** 3), [TALL, WIDE]),
    "qr_complex": (lambda F, L, x, y: _m(_abs2(L.linalg.qr(L.complex(x, y))[0] ** 2) * x)
                   + _m(_abs2(L.linalg.qr(L.complex(x, y))[1]) ** 2), [TALL, TALL * 0.5 + 1]),
    "eigh": (lambda F, L, a: L.linalg.eigh(_sym(a))[0][:, :, None] ** 2 + _projector(L.linalg.eigh(_sym(a))[1], 2)
             + L.linalg.eigvalsh(_sym(a), UPLO="U")[:, :, None] ** 3, [SQ]),
    "eigh_complex": (lambda F, L, x, y: L.linalg.eigh(_herm(L, x, y))[0][:, :, None] ** 2
                     + _abs2(_projector(L.linalg.eigh(_herm(L, x, y))[1], 3)), [SQ, SQ2]),
    "svd": (lambda F, L, a, b: _m(L.linalg.svd(a, full_matrices=False)[1][:, :, None] ** 2 * a[:, :3])
            + _m(_projector(L.linalg.svd(a)[0], 2) ** 2) + _m(_projector(L.linalg.svd(b)[2].mT, 2) ** 2)
            + (L.linalg.svdvals(b * 1.5) ** 3).sum(-1), [TALL, WIDE]),
    "svd_complex": (lambda F, L, x, y: _m(_abs2(_projector(L.linalg.svd(L.complex(x, y), full_matrices=False)[0], 2)))
                    + (L.linalg.svd(L.complex(x, y))[1] ** 3).sum(-1)
                    + _m(_abs2(L.linalg.svd(L.complex(x, y))[0][:, :, :2] @ L.linalg.svd(L.complex(x, y))[2][:, :2])),
                    [WIDE, WIDE[:, ::-1] * 0.7]),
    "eig": (lambda F, L, a: _abs2(L.linalg.eig(a)[0] ** 2).sum(-1) + _m(_abs2(L.linalg.eig(a)[1]) ** 2)
            + L.linalg.eigvals(a * 1.5).real.sum(-1) ** 2 + _abs2(L.linalg.eigvals(a * 0.5)).sum(-1), [GEN]),
    "eig_complex": (lambda F, L, x, y: _m(_abs2(L.linalg.eig(L.complex(x, y))[1]) ** 2)
                    + _abs2(L.linalg.eigvals(L.complex(x, y)) ** 2).sum(-1), [GEN, GEN.mean(0) * 0.3]),
    "pinv": (lambda F, L, a, b, c: _m(L.linalg.pinv(a) ** 2) + _m(L.linalg.pinv(b).sin())
             + _m(L.linalg.pinv(_sym(c), hermitian=True)[:, :3, :3] ** 3), [TALL, WIDE, SQ]),
    "lu_factor": (lambda F, L, a, b, c: _m(L.linalg.lu_factor(a)[0] ** 2 * a) + _m(L.linalg.lu(b)[1].sin())
                  + _m(L.linalg.lu(b)[2] ** 3) + _m(L.linalg.lu(c)[1] ** 3) + _m(L.linalg.lu(c)[2].cos()),
                  [SQ, TALL, WIDE]),
    "lu_factor_complex": (lambda F, L, x, y: _m(_abs2(L.linalg.lu_factor(L.complex(x, y))[0] ** 2)), [SQ, SQ2]),
    "solvers": (lambda F, L, a, b, t: _m(L.linalg.solve_triangular(_sym(a) + 6 * L.eye(5, dtype=a.dtype), b,
                                                                     upper=True) ** 2)
                + _m(L.linalg.lstsq(t, b[:, :, :3]).solution ** 2)
                + _m(L.linalg.householder_product(t, t[:, 0, :3]).sin()),
                [SQ, SQ2, TALL]),
    "pinv_complex": (lambda F, L, x, y: _abs2(L.linalg.pinv(L.complex(x, y)) ** 2), [WIDE, WIDE * 0.3 + 0.2]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_factorisation_double_backward(name):
    f, inputs = CASES[name]
    check_double(f, inputs)


NEAR = _R.uniform(-3, 3, (3, 7))
NEAR[np.abs(NEAR) < 0.2] = 0.7  # away from 0, where the slopes are patched to 1/2


def test_bessel_double_backward():
    """i0e, i1 and i1e (torch's other Bessel and Airy functions have no gradient)."""
    check_double(lambda F, L, x: L.special.i0e(x) * x + L.special.i1(x) ** 2 + L.special.i1e(x).sin(), [NEAR])


def test_incomplete_gamma_double_backward():
    """igamma and igammac, differentiable w.r.t. x only (as torch: none w.r.t. a)."""
    a = np.abs(_R.standard_normal((3, 5))) + 0.8
    check_double(lambda F, L, x: L.igamma(L.tensor(a), x) ** 2 + L.special.gammaincc(L.tensor(a), x * 1.5),
                 [np.abs(NEAR[:, :5]) + 0.1])


def test_incomplete_gamma_refuses_input_gradient():
    import engine
    a = engine.tensor(np.full(3, 2.0), requires_grad=True)
    x = engine.tensor(np.full(3, 1.0), requires_grad=True)
    with pytest.raises(RuntimeError, match="the derivative for 'igamma: input' is not implemented"):
        engine.autograd.grad(engine.igamma(a, x).sum(), [a, x], create_graph=True)


def test_fake_quantize_double_backward():
    """The straight-through gradient (a mask) per tensor and per channel, through products of the input."""
    scales, zeros = np.array([0.1, 0.25, 0.05], np.float32), np.array([0, 3, -2], np.int32)

    def f(F, L, x):
        per_tensor = L.fake_quantize_per_tensor_affine(x * x, 0.1, 2, -20, 20)
        per_channel = L.fake_quantize_per_channel_affine(x.sin(), L.tensor(scales), L.tensor(zeros), 1, -8, 8)
        return per_tensor * x + per_channel * x ** 2
    check_double(f, [NEAR[:2, None, :6] * np.ones((2, 3, 6))])


SP_IDX = np.array([[0, 1, 1, 2, 1], [2, 0, 2, 1, 0]])  # (1, 0) twice: an uncoalesced input


def _sparse_chain(F, L, v):
    """Linear sparse ops (construction, coalesce, transpose, scaling, sums, to_dense, values) then dense
    non-linear ones. torch keeps no graph through sparse_coo_tensor's gradient, so its side builds the same
    matrix densely (index_put with accumulation): the engine goes further than torch here, and must agree with
    the dense computation."""
    if L.__name__ == "torch":
        d = L.zeros(3, 4, dtype=v.dtype).index_put((L.tensor(SP_IDX[0]), L.tensor(SP_IDX[1])), v, accumulate=True)
        return (d ** 3).sum(0) + (d.t() * 2).sum(1) ** 2 + d.sum() ** 2 + (d * d).sum() * d.sum(0) \
            + ((d - 0.5 * d.flip(0)) ** 2).sum(0)
    s = L.sparse_coo_tensor(L.tensor(SP_IDX), v, (3, 4))
    d = s.to_dense()
    return (d ** 3).sum(0) + (s.t() * 2).to_dense().sum(1) ** 2 + L.sparse.sum(s) ** 2 \
        + (s.coalesce().values() ** 2).sum() * d.sum(0) \
        + ((s - L.sparse_coo_tensor(L.tensor(SP_IDX * [[-1], [1]] + [[2], [0]]), v, (3, 4)) * 0.5)
           .to_dense() ** 2).sum(0)


def test_sparse_linear_ops_double_backward():
    check_double(_sparse_chain, [np.array([1.0, -2.0, 0.5, 1.5, 0.7])])


@pytest.mark.parametrize("name", ["cholesky", "qr_tall_wide", "eigh", "svd", "pinv", "lu_factor"])
def test_factorisation_double_backward_on_cuda(cuda, name):
    """The same on the CUDA backend (the emulation without a GPU): the backwards use the array module only."""
    f, inputs = CASES[name]
    check_double(f, inputs, device="cuda")
