"""engine.linalg's factorisations and solvers against torch.linalg: values, named-tuple fields, float64 gradients
of every input (distinct eigenvalues and singular values; eigenvectors and singular vectors compared with their
signs fixed, since either sign is a valid answer), LAPACK's ``info`` and LinAlgError's messages."""
import numpy as np
import pytest
import torch

import engine
import engine.linalg as L
from op_check import check_op

pytestmark = pytest.mark.slow  # over 2 s together (the first call of each kind warms torch and scipy up)

RNG = np.random.default_rng(20261207)


def rand(*shape):
    return RNG.standard_normal(shape)


def spd(*shape):
    a = rand(*shape)
    return a @ a.swapaxes(-1, -2) + shape[-1] * np.eye(shape[-1])


def sym(*shape):
    a = rand(*shape)
    return a + a.swapaxes(-1, -2)


def lib_of(x):
    return torch if isinstance(x, torch.Tensor) else engine


def signs_fixed(u, *others):
    """u's columns (and the rows of the matrices in ``others``, e.g. V^T) with the first row of u made
    non-negative: one representative of each sign choice."""
    k = min(u.shape[-1], *(o.shape[-2] for o in others)) if others else u.shape[-1]
    sign = lib_of(u).sign(u[..., :1, :k])
    return (u[..., :k] * sign,) + tuple(o[..., :k, :] * sign.mT for o in others)


# ---- Cholesky ----------------------------------------------------------------------------------
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", [(5, 5), (2, 3, 4, 4)])
def test_cholesky(shape, upper):
    check_op(lambda a: L.cholesky(a, upper=upper), lambda a: torch.linalg.cholesky(a, upper=upper), [spd(*shape)],
             rtol=1e-10)


def test_cholesky_float32():
    check_op(lambda a: L.cholesky(a), lambda a: torch.linalg.cholesky(a), [spd(3, 4, 4).astype(np.float32)],
             rtol=1e-4)


def test_cholesky_ex_reports_the_failing_minor_and_raises_like_torch():
    a = np.stack([spd(4, 4), spd(4, 4)])
    a[1, 2, 2] = -50.0
    ours, theirs = L.cholesky_ex(engine.tensor(a)), torch.linalg.cholesky_ex(torch.tensor(a))
    assert ours._fields == ("L", "info") and ours.info.dtype is engine.int32
    np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
    np.testing.assert_allclose(ours.L[0].numpy(), theirs.L[0].numpy(), rtol=1e-10)
    for fn in (lambda lib, x: lib.linalg.cholesky(x), lambda lib, x: lib.linalg.cholesky_ex(x, check_errors=True)):
        with pytest.raises(torch.linalg.LinAlgError) as expected:
            fn(torch, torch.tensor(a))
        with pytest.raises(L.LinAlgError, match=None) as raised:
            fn(engine, engine.tensor(a))
        assert str(raised.value) == str(expected.value).splitlines()[0]
    assert issubclass(L.LinAlgError, RuntimeError)


# ---- QR ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(6, 4), (2, 3, 5), (2, 4, 4)])
def test_qr(shape, mode):
    differentiable = mode != "r" and not (mode == "complete" and shape[-2] > shape[-1])
    out = check_op(lambda a: L.qr(a, mode), lambda a: torch.linalg.qr(a, mode), [rand(*shape)], rtol=1e-10,
                   grad=differentiable)
    assert type(out[0]).__name__ == "Tensor"
    assert L.qr(engine.tensor(rand(*shape)), mode)._fields == ("Q", "R")


def test_qr_backward_errors_match_torch():
    for mode in ("r", "complete"):
        a = rand(5, 3)
        theirs = torch.tensor(a, requires_grad=True)
        ours = engine.tensor(a, requires_grad=True)
        with pytest.raises(RuntimeError) as expected:
            torch.linalg.qr(theirs, mode)[1].sum().backward()
        with pytest.raises(RuntimeError) as raised:
            L.qr(ours, mode)[1].sum().backward()
        assert str(raised.value) == str(expected.value)


# ---- eigh, SVD ---------------------------------------------------------------------------------
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_and_eigvalsh(uplo):
    def eigh(a):
        values, vectors = lib_of(a).linalg.eigh(a, uplo)
        return (values,) + signs_fixed(vectors)

    check_op(eigh, eigh, [sym(2, 3, 5, 5)], rtol=1e-9)
    check_op(lambda a: L.eigvalsh(a, uplo), lambda a: torch.linalg.eigvalsh(a, uplo), [sym(4, 4)], rtol=1e-10)
    lopsided = rand(2, 4, 4)  # not symmetric: only the triangle UPLO names is read
    check_op(lambda a: L.eigvalsh(a, uplo), lambda a: torch.linalg.eigvalsh(a, uplo), [lopsided], rtol=1e-10,
             grad=False)
    assert L.eigh(engine.tensor(sym(3, 3)))._fields == ("eigenvalues", "eigenvectors")


@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 6), (4, 4)])
def test_svd(shape, full_matrices):
    def svd(a):
        u, s, vh = lib_of(a).linalg.svd(a, full_matrices=full_matrices)
        u_fixed, vh_fixed = signs_fixed(u, vh)
        return u_fixed, s, vh_fixed

    check_op(svd, svd, [rand(*shape)], rtol=1e-9)
    u, s, vh = L.svd(engine.tensor(rand(*shape)), full_matrices=full_matrices)
    reference = torch.linalg.svd(torch.tensor(rand(*shape)), full_matrices=full_matrices)
    assert [tuple(x.shape) for x in (u, s, vh)] == [tuple(x.shape) for x in reference]
    check_op(L.svdvals, torch.linalg.svdvals, [rand(*shape)], rtol=1e-10)


def test_svd_fields_and_float32():
    assert L.svd(engine.tensor(rand(3, 2)))._fields == ("U", "S", "Vh")
    check_op(L.svdvals, torch.linalg.svdvals, [rand(2, 5, 3).astype(np.float32)], rtol=1e-5)


def test_half_precision_is_refused():
    with pytest.raises(NotImplementedError, match="\"cholesky_cpu\" not implemented for 'Half'"):
        L.cholesky(engine.ones(2, 2, dtype=engine.float16))


# ---- solvers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("upper,left,unitriangular", [(True, True, False), (False, True, True), (True, False, True),
                                                       (False, False, False)])
def test_solve_triangular(upper, left, unitriangular):
    a = rand(2, 1, 4, 4) + 4 * np.eye(4)
    b = rand(3, 4, 2) if left else rand(3, 2, 4)
    check_op(lambda a, b: L.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular),
             lambda a, b: torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unitriangular),
             [a, b], rtol=1e-10)


@pytest.mark.parametrize("left", [True, False])
def test_solve_and_solve_ex(left):
    a = rand(2, 4, 4)
    check_op(lambda a, b: L.solve(a, b, left=left), lambda a, b: torch.linalg.solve(a, b, left=left),
             [a, rand(2, 4, 3) if left else rand(2, 3, 4)], rtol=1e-9)
    check_op(lambda a, b: L.solve_ex(a, b), lambda a, b: torch.linalg.solve_ex(a, b), [a, rand(4)], rtol=1e-9)


def test_inv_and_inv_ex():
    check_op(L.inv, torch.linalg.inv, [rand(3, 5, 5)], rtol=1e-9)
    check_op(L.inv_ex, torch.linalg.inv_ex, [rand(2, 4, 4)], rtol=1e-9)
    assert L.inv_ex(engine.tensor(rand(2, 2)))._fields == ("inverse", "info")


def _singular_batch():
    a = np.stack([rand(3, 3), np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])])
    return a


def test_singular_matrices_give_info_and_linalg_error_as_torch():
    a = _singular_batch()
    ours, theirs = L.inv_ex(engine.tensor(a)), torch.linalg.inv_ex(torch.tensor(a))
    np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
    np.testing.assert_allclose(ours.inverse[0].numpy(), theirs.inverse[0].numpy(), rtol=1e-10)
    b = rand(2, 3, 1)
    solved = L.solve_ex(engine.tensor(a), engine.tensor(b))
    np.testing.assert_array_equal(solved.info.numpy(), torch.linalg.solve_ex(torch.tensor(a), torch.tensor(b)).info)
    cases = [(lambda lib, x: lib.linalg.inv(x), a), (lambda lib, x: lib.linalg.inv(x), a[1]),
             (lambda lib, x: lib.linalg.solve(x, lib.ones(2, 3, 1, dtype=lib.float64)), a),
             (lambda lib, x: lib.linalg.solve(x, lib.ones(3, dtype=lib.float64)), a[1])]
    for fn, x in cases:
        with pytest.raises(torch.linalg.LinAlgError) as expected:
            fn(torch, torch.tensor(x))
        with pytest.raises(L.LinAlgError) as raised:
            fn(engine, engine.tensor(x))
        assert str(raised.value) == str(expected.value)


def test_tensorinv_and_tensorsolve():
    check_op(lambda a: L.tensorinv(a, ind=2), lambda a: torch.linalg.tensorinv(a, ind=2), [rand(4, 6, 8, 3)],
             rtol=1e-9)
    check_op(lambda a: L.tensorinv(a, ind=1), lambda a: torch.linalg.tensorinv(a, ind=1), [rand(6, 2, 3)],
             rtol=1e-9)
    for dims in (None, (2,)):
        check_op(lambda a, b: L.tensorsolve(a, b, dims), lambda a, b: torch.linalg.tensorsolve(a, b, dims),
                 [rand(6, 4, 2, 3, 4), rand(6, 4)], rtol=1e-9)


def test_ldl_factor_and_solve():
    a = sym(2, 5, 5)
    ours, theirs = L.ldl_factor_ex(engine.tensor(a)), torch.linalg.ldl_factor_ex(torch.tensor(a))
    assert ours._fields == ("LD", "pivots", "info")
    np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
    np.testing.assert_array_equal(ours.info.numpy(), theirs.info.numpy())
    ld, pivots = L.ldl_factor(engine.tensor(a))
    b = rand(2, 5, 3)
    np.testing.assert_allclose(L.ldl_solve(ld, pivots, engine.tensor(b)).numpy(),
                               torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(b)).numpy(), rtol=1e-9)
    zero = L.ldl_factor_ex(engine.zeros(2, 2))
    assert int(zero.info) == int(torch.linalg.ldl_factor_ex(torch.zeros(2, 2)).info)
    with pytest.raises(L.LinAlgError):
        L.ldl_factor(engine.zeros(2, 2))


@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gelss", "gels"])
def test_lstsq(driver):
    def lstsq(a, b):
        return tuple(lib_of(a).linalg.lstsq(a, b, driver=driver))

    check_op(lstsq, lstsq, [rand(2, 6, 3), rand(2, 6, 2)], rtol=1e-9)
    check_op(lstsq, lstsq, [rand(5, 3), rand(5)], rtol=1e-9)
    assert L.lstsq(engine.tensor(rand(3, 2)), engine.tensor(rand(3, 1)))._fields == (
        "solution", "residuals", "rank", "singular_values")


def test_lstsq_of_a_wide_and_a_rank_deficient_matrix():
    check_op(lambda a, b: L.lstsq(a, b).solution, lambda a, b: torch.linalg.lstsq(a, b).solution,
             [rand(2, 3, 5), rand(2, 3, 2)], rtol=1e-9)
    deficient = rand(6, 2) @ rand(2, 4)
    ours = L.lstsq(engine.tensor(deficient), engine.tensor(rand(6, 2)))
    theirs = torch.linalg.lstsq(torch.tensor(deficient), torch.ones(6, 2, dtype=torch.float64))
    assert int(ours.rank) == int(theirs.rank)


# ---- errors with torch's messages --------------------------------------------------------------
def _f64(lib, *shape):
    return lib.ones(*shape, dtype=lib.float64)


ERRORS = [
    lambda lib: lib.linalg.cholesky(_f64(lib, 2, 3)),
    lambda lib: lib.linalg.cholesky(lib.ones(2, 2, dtype=lib.int64)),
    lambda lib: lib.linalg.qr(_f64(lib, 2, 2), mode="x"),
    lambda lib: lib.linalg.eigh(_f64(lib, 2, 3)),
    lambda lib: lib.linalg.eigh(_f64(lib, 2, 2), UPLO="X"),
    lambda lib: lib.linalg.svd(_f64(lib, 3)),
    lambda lib: lib.linalg.solve_triangular(_f64(lib, 2, 2), _f64(lib, 3, 1), upper=True),
    lambda lib: lib.linalg.solve_triangular(_f64(lib, 2, 2), _f64(lib, 1, 3), upper=True, left=False),
    lambda lib: lib.linalg.lstsq(_f64(lib, 2, 2), _f64(lib, 3, 1)),
    lambda lib: lib.linalg.lstsq(_f64(lib, 3), _f64(lib, 3)),
    lambda lib: lib.linalg.lstsq(_f64(lib, 2, 2), _f64(lib, 2, 1), driver="foo"),
    lambda lib: lib.linalg.tensorinv(_f64(lib, 2, 2), ind=0),
    lambda lib: lib.linalg.tensorinv(_f64(lib, 2, 3), ind=1),
    lambda lib: lib.linalg.tensorsolve(_f64(lib, 2, 3), _f64(lib, 2)),
    lambda lib: lib.linalg.ldl_factor_ex(_f64(lib, 2, 3)),
    lambda lib: lib.linalg.inv(_f64(lib, 2, 3)),
    lambda lib: lib.linalg.solve(_f64(lib, 3), _f64(lib, 3)),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    with pytest.raises(Exception) as expected:
        ERRORS[index](torch)
    with pytest.raises(type(expected.value)) as raised:
        ERRORS[index](engine)
    assert str(raised.value) == str(expected.value).splitlines()[0]


# ---- the CUDA backend --------------------------------------------------------------------------
def test_factorisations_and_solvers_on_cuda(cuda):
    def qr(a):
        return tuple(lib_of(a).linalg.qr(a))

    def eigh(a):
        values, vectors = lib_of(a).linalg.eigh(a)
        return (values,) + signs_fixed(vectors)

    check_op(L.cholesky, torch.linalg.cholesky, [spd(2, 4, 4)], rtol=1e-9, device="cuda")
    check_op(qr, qr, [rand(2, 5, 3)], rtol=1e-9, device="cuda")
    check_op(eigh, eigh, [sym(2, 4, 4)], rtol=1e-9, device="cuda")
    check_op(L.svdvals, torch.linalg.svdvals, [rand(2, 3, 5)], rtol=1e-9, device="cuda")
    check_op(lambda a, b: L.solve_triangular(a, b, upper=True), lambda a, b: torch.linalg.solve_triangular(
        a, b, upper=True), [rand(4, 4) + 4 * np.eye(4), rand(2, 4, 3)], rtol=1e-9, device="cuda")
    check_op(L.inv_ex, torch.linalg.inv_ex, [rand(2, 4, 4)], rtol=1e-9, device="cuda")
    not_positive = np.stack([spd(3, 3), -np.eye(3)])
    info = L.cholesky_ex(engine.tensor(not_positive).to("cuda")).info
    assert info.device.type == "cuda" and info.cpu().tolist() == [0, 1]
    info = L.inv_ex(engine.tensor(_singular_batch()).to("cuda")).info
    assert info.cpu().tolist() == torch.linalg.inv_ex(torch.tensor(_singular_batch())).info.tolist()
