"""engine.linalg and the legacy torch.* linear algebra against torch where a differential fuzz found them apart:
norms computed in their ``dtype=`` and its checks, the shape checks of the solvers (left=False, vector B, batch
broadcasting, empty batches), wrong values (torch.vander of complex input), result types and field dtypes
(torch.lu, lstsq of complex input), and torch's errors for inputs it refuses (dtypes, dims, kernels).

Each case is a seeded sample of the sweep (/tmp fuzzers, not kept) that failed before its fix.
"""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.linalg
from op_check import assert_same_error, check_op

pytestmark = pytest.mark.slow  # about 2 s in all

_RNG = np.random.default_rng(26)


def _rand(*shape, dtype=np.float64):
    x = _RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _RNG.standard_normal(shape)
    return x.astype(dtype)


def _both(fn):
    """``fn(module)`` for engine and torch: the pair check_op and assert_same_error take."""
    return (lambda *a: fn(engine)(*a)), (lambda *a: fn(torch)(*a))


def _same_error(fn, *arrays):
    """fn(module, *tensors) raises torch's error type and message for both."""
    def call(module):
        tensors = [module.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(module, *tensors)
    assert_same_error(lambda: call(engine), lambda: call(torch))


# ---- norms: dtype= -------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda m: lambda t: m.linalg.vector_norm(t, 2, dtype=m.complex128),
    lambda m: lambda t: m.linalg.vector_norm(t, 0.5, 1, keepdim=True, dtype=m.complex128),
], ids=["vector", "vector-dim"])
def test_complex_norms_take_magnitudes_in_their_dtype(fn):
    """complex64 input with dtype=complex128: torch casts first, so |z| is a float64 value (float32 before)."""
    x = (_rand(3, 4, dtype=np.complex128) * 1e3 + 1e-3j).astype(np.complex64)
    check_op(*_both(fn), [x], rtol=1e-12, grad_rtol=1e-5)  # the gradient is complex64


@pytest.mark.parametrize("case", [
    ("vector_norm", np.complex64, "float64"),   # complex input, real dtype
    ("vector_norm", np.complex128, "complex64"),  # narrowing: named with the complex dtypes
    ("matrix_norm", np.float64, "float32"),
    ("matrix_norm", np.complex64, "float32"),
    ("matrix_norm", np.float32, "complex128"),  # real input, complex dtype
    ("matrix_norm", np.float32, "int64"),
], ids=lambda c: "-".join(map(str, c)))
def test_norm_dtype_refusals(case):
    name, dtype, target = case
    _same_error(lambda m, t: getattr(m.linalg, name)(t, dtype=getattr(m, target)), _rand(3, 3, dtype=dtype))


@pytest.mark.parametrize("call", [
    lambda m, t: m.linalg.norm(t, 2, (0, 1, 2)),
    lambda m, t: m.linalg.norm(t, None, ()),
    lambda m, t: m.linalg.norm(t, "fro", (0,)),
    lambda m, t: m.linalg.matrix_norm(t.half(), 2),
    lambda m, t: m.linalg.matrix_norm(t.half(), "nuc"),
], ids=["dim-3", "dim-empty", "fro-one-dim", "half-2", "half-nuc"])
def test_norm_refusals(call):
    _same_error(call, _rand(2, 3, 3))


# ---- solvers: shapes -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["solve", "solve_ex"])
@pytest.mark.parametrize("a, b", [
    ((3, 3), (3,)), ((2, 3, 3), (2, 3)),  # a vector B has no left=False form
    ((1, 1), (1,)),  # ... with its own message where the shapes agree
    ((3, 3), (3, 2)), ((2, 3, 3), (4, 5, 3)),
], ids=["vector", "batched-vector", "1x1-vector", "XA-shape", "XA-batch"])
def test_solve_right_refusals(name, a, b):
    _same_error(lambda m, x, y: getattr(m.linalg, name)(x, y, left=False), _rand(*a), _rand(*b))


@pytest.mark.parametrize("a, b", [((2, 3, 3), (4, 3, 1)), ((3, 3), (4,)), ((3, 3), ()), ((2, 3, 3), (2, 1, 3))])
def test_solve_left_refusals(a, b):
    _same_error(lambda m, x, y: m.linalg.solve(x, y), _rand(*a), _rand(*b))


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True),
    lambda m, a, b: m.linalg.solve_triangular(a, b.mT, upper=False, left=False),
    lambda m, a, b: m.triangular_solve(b, a),
], ids=["left", "right", "legacy"])
def test_triangular_solves_refuse_batches_that_do_not_broadcast(call):
    _same_error(call, _rand(2, 3, 3, 3), _rand(2, 3, 3))


@pytest.mark.parametrize("upper", [True, False])
def test_solve_triangular_broadcasts_an_empty_batch(upper):
    """A batch of size 0 broadcast with B's none (a size 1 stretches to 0; the batch check had it 1)."""
    a = _rand(0, 2, 2, dtype=np.complex64)
    check_op(*_both(lambda m: lambda x, y: m.linalg.solve_triangular(x, y, upper=upper)), [a, _rand(2, 3,
                                                                                                      dtype=np.complex64)])


def test_matmul_refusal_names_an_empty_batch():
    """The batch of (0, 2, 3) and (1, 4, 2) is 0, not 1."""
    _same_error(lambda m, x, y: m.matmul(x, y), _rand(0, 2, 3), _rand(1, 4, 2))


@pytest.mark.parametrize("b, a", [((3,), (3, 3)), ((3, 2), (3,)), ((3, 2), (3, 4)), ((4, 2), (3, 3)),
                                  ((2, 3, 2), (3, 3, 3))])
def test_triangular_solve_refusals(b, a):
    _same_error(lambda m, x, y: m.triangular_solve(x, y), _rand(*b), _rand(*a))


@pytest.mark.parametrize("name", ["triangular_solve", "cholesky_solve"])
def test_legacy_solves_refuse_mixed_dtypes(name):
    _same_error(lambda m, x, y: getattr(m, name)(x, y), _rand(3, 2).astype(np.float32), _rand(3, 3))


@pytest.mark.parametrize("b, l", [((3,), (3, 3)), ((3, 2), (3,)), ((4, 2), (3, 3)), ((3, 2), (3, 4)),
                                  ((2, 3, 2), (3, 3, 3))])
def test_cholesky_solve_refusals(b, l):
    _same_error(lambda m, x, y: m.cholesky_solve(x, y), _rand(*b), _rand(*l))


@pytest.mark.parametrize("a, b", [((2, 3, 3), (3, 1)), ((2, 3, 3), (3,)), ((3, 3), ())])
def test_lstsq_refusals(a, b):
    _same_error(lambda m, x, y: m.linalg.lstsq(x, y), _rand(*a), _rand(*b))


@pytest.mark.parametrize("driver", ["gels", "gelsy"])
def test_lstsq_of_complex_input_has_real_residuals_and_singular_values(driver):
    """The empty fields too (they were complex)."""
    a, b = _rand(2, 4, 3, dtype=np.complex64), _rand(2, 4, 2, dtype=np.complex64)
    ours = engine.linalg.lstsq(engine.from_numpy(a), engine.from_numpy(b), driver=driver)
    theirs = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), driver=driver)
    for field in ("residuals", "singular_values"):
        assert str(getattr(ours, field).dtype) == str(getattr(theirs, field).dtype).replace("torch", "engine")
        assert tuple(getattr(ours, field).shape) == tuple(getattr(theirs, field).shape)


def test_ldl_solve_of_empty_matrices():
    ld, pivots = np.zeros((2, 0, 0)), np.zeros((2, 0), np.int32)
    check_op(*_both(lambda m: lambda x, p, y: m.linalg.ldl_solve(x, p, y)), [ld, pivots, _rand(2, 0, 3)], grad=False)


@pytest.mark.parametrize("b", [(4, 2), (3,), ()])
def test_ldl_solve_refusals(b):
    _same_error(lambda m, x, y: m.linalg.ldl_solve(*m.linalg.ldl_factor(x), y), _rand(3, 3) + 3 * np.eye(3),
                _rand(*b))


def test_ldl_solve_refuses_mixed_dtypes():
    _same_error(lambda m, x, y: m.linalg.ldl_solve(*m.linalg.ldl_factor(x), y.float()), _rand(3, 3) + 3 * np.eye(3),
                _rand(3, 2))


@pytest.mark.parametrize("b", [(3,), ()])
def test_lu_solve_refuses_a_vector(b):
    _same_error(lambda m, x, y: m.linalg.lu_solve(*m.linalg.lu_factor(x), y), _rand(3, 3), _rand(*b))


@pytest.mark.parametrize("a, b", [((3, 3), (3, 2)), ((2, 3, 6), (6,))])
def test_tensorsolve_refusal_names_the_right_sizes(a, b):
    _same_error(lambda m, x, y: m.linalg.tensorsolve(x, y), _rand(*a), _rand(*b))


# ---- negative powers, det and inverse through linalg.inv / linalg.det ---------------------------------
@pytest.mark.parametrize("fn", [lambda m: m.matrix_power, lambda m: m.linalg.matrix_power], ids=["torch", "linalg"])
def test_negative_power_of_a_singular_matrix(fn):
    """linalg.inv's LinAlgError (numpy's message before), a RuntimeError as torch's."""
    a = np.ones((2, 3, 3), np.float32)
    with pytest.raises(RuntimeError) as theirs:
        fn(torch)(torch.from_numpy(a), -2)
    with pytest.raises(engine.linalg.LinAlgError, match=str(theirs.value).replace("(", r"\(").replace(")", r"\)")):
        fn(engine)(engine.from_numpy(a), -2)


@pytest.mark.parametrize("fn", [lambda m: m.linalg.det, lambda m: m.det], ids=["linalg", "torch"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_det_gradient_is_zero_where_det_is(fn, dtype):
    """A batch with an exactly singular matrix (rank 3 of 4): torch's gradient there is 0 (ours raised)."""
    rng = np.random.default_rng(0)
    a = np.stack([rng.integers(-3, 4, (4, 3)) @ rng.integers(-3, 4, (3, 4)), 2 * np.eye(4)]).astype(dtype)
    check_op(*_both(lambda m: lambda x: fn(m)(x)), [a])


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_torch_det_refuses_integers(dtype):
    _same_error(lambda m, x: m.det(x), np.eye(3).astype(dtype))


# ---- results ----------------------------------------------------------------------------------------
def test_torch_lu_with_infos_is_named():
    a = engine.from_numpy(_rand(2, 3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = engine.lu(a, get_infos=True)
        plain = engine.lu(a)
    assert type(result).__name__ == "_lu_with_info" and result._fields == ("LU", "pivots", "info")
    assert type(plain) is tuple and len(plain) == 2


def test_lu_without_pivoting_of_empty_matrices():
    """The CPU's refusal of pivot=False spares empty matrices, as torch's."""
    check_op(*_both(lambda m: lambda x: m.linalg.lu(x, pivot=False)), [_rand(2, 0, 0)], grad=False)


@pytest.mark.parametrize("n, increasing", [(None, False), (4, True), (0, False)])
def test_torch_vander_keeps_complex_values(n, increasing):
    """Complex input was cast to int64."""
    check_op(*_both(lambda m: lambda x: m.vander(x, n, increasing)), [_rand(3, dtype=np.complex64)], rtol=1e-5,
             grad=False)


@pytest.mark.parametrize("shape, q", [((5, 4), None), ((2, 6, 3), 7), ((3, 8), 6)])
def test_svd_lowrank_with_q_past_a_dimension(shape, q):
    """torch's basis then has that dimension's size (ours raised); the same seeded test matrix."""
    a = _rand(*shape)

    def lowrank(m):
        m.manual_seed(3)
        return (m.svd_lowrank(m.from_numpy(a.copy())) if q is None else m.svd_lowrank(m.from_numpy(a.copy()), q=q))
    (u, s, v), (tu, ts, tv) = lowrank(engine), lowrank(torch)
    assert (tuple(u.shape), tuple(s.shape), tuple(v.shape)) == (tuple(tu.shape), tuple(ts.shape), tuple(tv.shape))
    np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-10)
    np.testing.assert_allclose((u * s.unsqueeze(-2)) @ v.mT, ((tu * ts.unsqueeze(-2)) @ tv.mT).numpy(), atol=1e-10)


# ---- refusals ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, dim, keepdim", [((3, 4, 5), (1, 2), False), ((3, 4, 5), (0, 2), True),
                                                 ((4, 5), None, False)])
def test_torch_norm_nuclear(shape, dim, keepdim):
    """``torch.norm(p='nuc')`` is linalg.matrix_norm's over ``dim`` (it raised 'not supported')."""
    a = _rand(*shape)
    ours = engine.norm(engine.from_numpy(a.copy()), p="nuc", dim=dim, keepdim=keepdim)
    theirs = torch.norm(torch.from_numpy(a.copy()), p="nuc", dim=dim, keepdim=keepdim)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    _same_error(lambda m, t: m.norm(t, p="nuc"), _rand(3, 4, 5))


@pytest.mark.parametrize("a, b, dim", [((3, 3), (3, 1), -1), ((2, 3, 3), (2, 3, 1), 2)])
def test_linalg_cross_does_not_broadcast_its_dim(a, b, dim):
    _same_error(lambda m, x, y: m.linalg.cross(x, y, dim=dim), _rand(*a), _rand(*b))
    _same_error(lambda m, x, y: m.cross(x, y, dim=dim), _rand(*a), _rand(*b))


@pytest.mark.parametrize("call, dtype", [
    (lambda m, t: m.linalg.cholesky(t), np.float16),
    (lambda m, t: m.linalg.det(t), np.float16),
    (lambda m, t: m.linalg.qr(t), np.float16),
    (lambda m, t: m.linalg.svdvals(t), np.float16),
    (lambda m, t: m.linalg.svdvals(t), np.int64),
    (lambda m, t: m.linalg.cond(t), np.int64),
    (lambda m, t: m.linalg.cond(t, "fro"), np.int64),
    (lambda m, t: m.linalg.eigh(t), np.int64),
    (lambda m, t: m.linalg.eigvalsh(t), np.float16),
    (lambda m, t: m.linalg.eigvalsh(t[0]), np.float32),
    (lambda m, t: m.linalg.solve_triangular(t, t, upper=True), np.int64),
    (lambda m, t: m.linalg.solve_triangular(t, t[0], upper=True), np.int64),
    (lambda m, t: m.linalg.solve(t, t), np.float16),
    (lambda m, t: m.linalg.solve(t, t[:2]), np.float16),
    (lambda m, t: m.linalg.ldl_factor(t), np.float16),
    (lambda m, t: m.logdet(t), np.int64),
    (lambda m, t: m.logdet(t), np.float16),
    (lambda m, t: m.pinverse(t), np.int64),
    (lambda m, t: m.pinverse(t[0]), np.float32),
    (lambda m, t: m.cholesky_inverse(t), np.int64),
    (lambda m, t: m.cholesky_solve(t, t), np.float16),
    (lambda m, t: m.ormqr(t, t[0], t), np.int64),
    (lambda m, t: m.svd(t[0]), np.float32),
    (lambda m, t: m.vander(t), np.float32),
    (lambda m, t: m.vander(t[0], -1), np.float32),
    (lambda m, t: m.linalg.multi_dot([t, t.double()]), np.float32),
    (lambda m, t: m.linalg.cond(t[0], "nuc"), np.float32),
])
def test_refusals(call, dtype):
    _same_error(call, (np.eye(3) * 2).astype(dtype))


@pytest.mark.parametrize("call", [
    lambda m, a, t, c: m.ormqr(a, t, c[0]),
    lambda m, a, t, c: m.ormqr(a[None].expand(2, 3, 3), t[None].expand(2, 3), c),
    lambda m, a, t, c: m.ormqr(a, t.double(), c),
    lambda m, a, t, c: m.ormqr(a, t, c.double()),
    lambda m, a, t, c: m.ormqr(a, t[None].expand(2, 3), c),
    lambda m, a, t, c: m.ormqr(a[None].expand(2, 3, 3), t[None].expand(2, 3), c[None].expand(3, 3, 3)),
    lambda m, a, t, c: m.linalg.householder_product(a[None].expand(2, 3, 3), t[None].expand(3, 3)),
    lambda m, a, t, c: m.linalg.householder_product(a[None].expand(2, 3, 3), t),
], ids=["other-1d", "ndim", "tau-dtype", "other-dtype", "tau-ndim", "other-batch", "hh-batch", "hh-ndim"])
def test_householder_refusals(call):
    _same_error(call, _rand(3, 3).astype(np.float32), _rand(3).astype(np.float32), _rand(3, 3).astype(np.float32))


# ---- the GPU code path (CuPy emulated on the CPU where there is no GPU) ------------------------------
def test_norm_dtype_right_solves_and_det_on_cuda(cuda):
    x = (_rand(3, 4, dtype=np.complex128) * 1e3 + 1e-3j).astype(np.complex64)
    check_op(*_both(lambda m: lambda t: m.linalg.vector_norm(t, 2, 1, dtype=m.complex128)), [x], rtol=1e-12,
             grad_rtol=1e-5, device="cuda")
    check_op(*_both(lambda m: lambda a, b: m.linalg.solve(a, b, left=False)), [_rand(2, 3, 3) + 3 * np.eye(3),
                                                                              _rand(2, 5, 3)], device="cuda")
    rng = np.random.default_rng(0)
    singular = np.stack([rng.integers(-3, 4, (4, 3)) @ rng.integers(-3, 4, (3, 4)), 2 * np.eye(4)]).astype(np.float64)
    check_op(*_both(lambda m: lambda x: m.linalg.det(x)), [singular], device="cuda")
