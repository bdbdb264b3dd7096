"""engine.linalg on complex matrices, and linalg.eig / eigvals for real and complex ones, against torch: values,
dtypes, and every input gradient in torch's complex convention (check_op), on well-conditioned seeded random
matrices of odd sizes with batches; the phase-dependence errors of eig, eigh and svd; eig on the CUDA emulation."""
import math

import numpy as np
import pytest
import torch

import engine
import engine.linalg as L
from op_check import check_op

pytestmark = pytest.mark.slow  # about 2.2 s of tests


def _z(shape, seed=0, dtype=np.complex128):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _hermitian(n, batch=2, seed=0, dtype=np.complex128):
    """Well-conditioned Hermitian positive-definite matrices."""
    a = _z((batch, n, n), seed, np.complex128)
    return (a @ a.conj().swapaxes(-1, -2) + n * np.eye(n)).astype(dtype)


def _general(shape, seed=0, dtype=np.complex128):
    """Random matrices (real or complex ``dtype``) with well separated eigenvalues."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else 0)
    return (a + np.diag(np.arange(n) * 2.0)).astype(dtype)


# ---- eig / eigvals -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-4), (np.float64, 1e-10), (np.complex64, 1e-4),
                                        (np.complex128, 1e-10)])
def test_eig_values_dtypes_and_vectors(dtype, rtol):
    a = _general((3, 5, 5), dtype=dtype)
    values, vectors = L.eig(engine.tensor(a))
    expected_values, expected_vectors = torch.linalg.eig(torch.tensor(a))
    assert str(values.dtype).split(".")[-1] == str(expected_values.dtype).split(".")[-1]
    assert vectors.dtype is values.dtype
    # LAPACK implementations may list the eigenvalues in different orders: torch's order, matched by value
    order = np.abs(values.numpy()[..., None, :] - expected_values.numpy()[..., :, None]).argmin(-1)
    assert (np.sort(order, -1) == np.arange(5)).all()
    values = np.take_along_axis(values.numpy(), order, -1)
    v = np.take_along_axis(vectors.numpy(), order[..., None, :], -1)
    np.testing.assert_allclose(values, expected_values.numpy(), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(np.take_along_axis(L.eigvals(engine.tensor(a)).numpy(), order, -1), values)
    tv = expected_vectors.numpy()
    # LAPACK's normalisation: unit columns; each matches torch's up to the phase geev leaves free
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, rtol=rtol)
    phase = (tv.conj() * v).sum(-2, keepdims=True)
    np.testing.assert_allclose(np.abs(phase), 1, rtol=10 * rtol)
    np.testing.assert_allclose(v, tv * phase, atol=10 * rtol)
    np.testing.assert_allclose(a @ v, v * values[..., None, :], atol=100 * rtol)


def _invariant_vectors(module):
    """eig's values and eigenvectors each scaled to a first component of 1 (free of eig's phases)."""
    def f(a):
        values, vectors = module.linalg.eig(a)
        return values, vectors / vectors[..., :1, :]
    return f


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eig_gradients(dtype):
    check_op(_invariant_vectors(engine), _invariant_vectors(torch), [_general((2, 5, 5), 3, dtype)],
             rtol=1e-9, grad_rtol=1e-8)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_eigvals_gradients(dtype):
    check_op(L.eigvals, torch.linalg.eigvals, [_general((3, 3, 3), 4, dtype)], rtol=1e-9, grad_rtol=1e-8)


def test_eig_float32_gradient():
    check_op(_invariant_vectors(engine), _invariant_vectors(torch), [_general((2, 3, 3), 5, np.float32)],
             rtol=1e-4, grad_rtol=1e-3)


def test_eig_vector_phase_dependence_is_torchs_error():
    a = engine.tensor(_general((3, 3), 6), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^linalg_eig_backward: The eigenvectors in the complex case are "
                                           r"specified up to multiplication by e\^\{i phi\}. The specified loss "
                                           r"function depends on this quantity, so it is ill-defined."):
        L.eig(a).eigenvectors.real.sum().backward()


@pytest.mark.parametrize("make,error,message", [
    (lambda: engine.ones(3), RuntimeError, "linalg.eig: The input tensor A must have at least 2 dimensions."),
    (lambda: engine.ones(3, 4), RuntimeError,
     "linalg.eig: A must be batches of square matrices, but they are 3 by 4 matrices"),
    (lambda: engine.ones(3, 3, dtype=engine.int64), RuntimeError, "Unknown Complex ScalarType for Long"),
    (lambda: engine.ones(3, 3, dtype=engine.float16), NotImplementedError,
     "\"linalg_eig_out_cpu\" not implemented for 'Half'"),
])
def test_eig_input_errors(make, error, message):
    with pytest.raises(error) as raised:
        L.eig(make())
    assert str(raised.value) == message


def test_eig_on_cuda(cuda):
    a = _general((2, 5, 5), 7)
    check_op(_invariant_vectors(engine), _invariant_vectors(torch), [a], rtol=1e-9, grad_rtol=1e-8,
             device="cuda")


# ---- complex inputs everywhere torch takes them ------------------------------------------------
def _svd_product(module):
    def f(a):
        u, s, vh = module.linalg.svd(a, full_matrices=False)
        return s, (u * s.unsqueeze(-2).to(u.dtype)) @ vh
    return f


def _eigh_invariant(module):
    def f(a):
        values, vectors = module.linalg.eigh(a)
        return values, vectors @ vectors.mH * 1 + (vectors * vectors.conj()).real
    return f


CASES = {
    "det": (lambda m: m.linalg.det, [_general((2, 3, 3))]),
    "slogdet": (lambda m: m.linalg.slogdet, [_general((2, 3, 3))]),
    "inv": (lambda m: m.linalg.inv, [_general((2, 5, 5))]),
    "inv_ex": (lambda m: lambda a: m.linalg.inv_ex(a).inverse, [_general((2, 3, 3))]),
    "solve": (lambda m: m.linalg.solve, [_general((2, 3, 3)), _z((2, 3, 2), 1)]),
    "solve_vector": (lambda m: m.linalg.solve, [_general((2, 3, 3)), _z((2, 3), 1)]),
    "solve_left_false": (lambda m: lambda a, b: m.linalg.solve(a, b, left=False),
                         [_general((2, 3, 3)), _z((2, 5, 3), 1)]),
    "solve_ex": (lambda m: lambda a, b: m.linalg.solve_ex(a, b).result, [_general((3, 3)), _z((3, 2), 1)]),
    "matrix_norm_fro": (lambda m: m.linalg.matrix_norm, [_z((2, 3, 5))]),
    "matrix_norm_nuc": (lambda m: lambda a: m.linalg.matrix_norm(a, "nuc"), [_z((2, 3, 5))]),
    "matrix_norm_2": (lambda m: lambda a: m.linalg.matrix_norm(a, 2), [_z((2, 5, 3))]),
    "matrix_norm_-2": (lambda m: lambda a: m.linalg.matrix_norm(a, -2), [_z((2, 5, 3))]),
    "matrix_norm_1": (lambda m: lambda a: m.linalg.matrix_norm(a, 1), [_z((2, 3, 5))]),
    "matrix_norm_-inf": (lambda m: lambda a: m.linalg.matrix_norm(a, -math.inf), [_z((2, 3, 5))]),
    "vector_norm_3": (lambda m: lambda a: m.linalg.vector_norm(a, 3, dim=-1), [_z((2, 5))]),
    "vector_norm_inf": (lambda m: lambda a: m.linalg.vector_norm(a, math.inf), [_z((2, 5))]),
    "vector_norm_0": (lambda m: lambda a: m.linalg.vector_norm(a, 0, dim=0), [_z((2, 5))]),
    "norm": (lambda m: lambda a: m.linalg.norm(a, dim=(0, 1)), [_z((3, 5))]),
    "svd": (_svd_product, [_z((2, 3, 5))]),
    "svd_tall": (_svd_product, [_z((2, 5, 3))]),
    "svdvals": (lambda m: m.linalg.svdvals, [_z((2, 5, 3))]),
    "qr": (lambda m: m.linalg.qr, [_z((2, 5, 3))]),
    "qr_wide": (lambda m: m.linalg.qr, [_z((2, 3, 5))]),
    "qr_complete_square": (lambda m: lambda a: m.linalg.qr(a, "complete"), [_z((2, 3, 3))]),
    "eigh": (_eigh_invariant, [_hermitian(5)]),
    "eigvalsh": (lambda m: m.linalg.eigvalsh, [_hermitian(5)]),
    "eigvalsh_upper": (lambda m: lambda a: m.linalg.eigvalsh(a, "U"), [_hermitian(3)]),
    "cholesky": (lambda m: m.linalg.cholesky, [_hermitian(5)]),
    "cholesky_upper": (lambda m: lambda a: m.linalg.cholesky(a, upper=True), [_hermitian(3)]),
    "cholesky_ex": (lambda m: lambda a: m.linalg.cholesky_ex(a).L, [_hermitian(3)]),
    "lstsq": (lambda m: lambda a, b: m.linalg.lstsq(a, b).solution, [_z((2, 5, 3)), _z((2, 5, 2), 1)]),
    "pinv": (lambda m: m.linalg.pinv, [_z((2, 5, 3))]),
    "pinv_hermitian": (lambda m: lambda a: m.linalg.pinv(a, hermitian=True), [_hermitian(3)]),
    "matrix_rank": (lambda m: m.linalg.matrix_rank, [_z((2, 5, 3))]),
    "matrix_power": (lambda m: lambda a: m.linalg.matrix_power(a, 3), [_z((2, 3, 3))]),
    "matrix_power_negative": (lambda m: lambda a: m.linalg.matrix_power(a, -2), [_general((2, 3, 3))]),
    "matrix_exp": (lambda m: m.linalg.matrix_exp, [_z((2, 3, 3))]),
    "solve_triangular": (lambda m: lambda a, b: m.linalg.solve_triangular(a, b, upper=True),
                         [_general((2, 3, 3)), _z((2, 3, 2), 1)]),
    "solve_triangular_right": (lambda m: lambda a, b: m.linalg.solve_triangular(a, b, upper=False, left=False,
                                                                                unitriangular=True),
                               [_z((2, 3, 3)), _z((2, 2, 3), 1)]),
    "cross": (lambda m: m.linalg.cross, [_z((2, 3)), _z((2, 3), 1)]),
    "vecdot": (lambda m: m.linalg.vecdot, [_z((2, 5)), _z((2, 5), 1)]),
    "multi_dot": (lambda m: lambda a, b, c: m.linalg.multi_dot([a, b, c]), [_z((3,)), _z((3, 5), 1), _z((5,), 2)]),
    "householder_product": (lambda m: m.linalg.householder_product, [_z((2, 5, 3)), _z((2, 2), 1)]),
    "tensorinv": (lambda m: lambda a: m.linalg.tensorinv(a, 1), [_general((6, 6)).reshape(6, 2, 3)]),
    "tensorsolve": (lambda m: m.linalg.tensorsolve, [_general((6, 6)).reshape(6, 2, 3), _z((6,), 1)]),
    "cond": (lambda m: m.linalg.cond, [_z((2, 3, 3))]),
    "legacy_svd": (lambda m: lambda a: (lambda u, s, v: (s, (u * s.unsqueeze(-2).to(u.dtype)) @ v.mH))(*m.svd(a)),
                   [_z((2, 5, 3))]),
    "legacy_slogdet": (lambda m: m.slogdet, [_general((2, 3, 3))]),
    "logdet": (lambda m: m.logdet, [_general((2, 3, 3))]),
    "pinverse": (lambda m: m.pinverse, [_z((2, 3, 5))]),
    "cholesky_solve": (lambda m: m.cholesky_solve, [_z((2, 3, 2)), np.linalg.cholesky(_hermitian(3))]),
    "cholesky_inverse": (lambda m: m.cholesky_inverse, [np.linalg.cholesky(_hermitian(3))[0]]),
    "ormqr_transpose": (lambda m: lambda a, t, c: m.ormqr(a, t, c, transpose=True),
                        [_z((2, 5, 3)), _z((2, 3), 1), _z((2, 5, 2), 2)]),
    "ormqr_right": (lambda m: lambda a, t, c: m.ormqr(a, t, c, left=False), [_z((2, 5, 3)), _z((2, 3), 1),
                                                                            _z((2, 2, 5), 2)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex128(name):
    make, inputs = CASES[name]
    check_op(make(engine), make(torch), inputs, rtol=1e-9, grad_rtol=1e-7)


@pytest.mark.parametrize("name", ["det", "inv", "solve", "svd", "qr", "eigh", "cholesky", "matrix_norm_nuc"])
def test_complex64(name):
    make, inputs = CASES[name]
    check_op(make(engine), make(torch), [x.astype(np.complex64) for x in inputs], rtol=1e-4, grad_rtol=1e-3)


def test_cond_other_norms_forward():
    """torch's own backward of these fails for complex input (an in-place write it makes), so values only."""
    a = _general((2, 3, 3))
    for p in ("fro", "nuc", math.inf, -math.inf, 1, -1, -2):
        check_op(lambda x: L.cond(x, p), lambda x: torch.linalg.cond(x, p), [a], rtol=1e-9, grad=False)


def test_slogdet_sign_gradient():
    check_op(lambda a: L.slogdet(a).sign, lambda a: torch.linalg.slogdet(a).sign, [_general((2, 3, 3))],
             rtol=1e-9, grad_rtol=1e-8)


def test_forward_only_factorisations():
    a = _z((2, 5, 3))
    check_op(engine.geqrf, torch.geqrf, [a], rtol=1e-9, grad=False)
    h = _hermitian(4)
    symmetric = a[:, :3] + a[:, :3].swapaxes(-1, -2)
    for matrix, hermitian in ((h, True), (symmetric, False)):
        ours = L.ldl_factor(engine.tensor(matrix), hermitian=hermitian)
        theirs = torch.linalg.ldl_factor(torch.tensor(matrix), hermitian=hermitian)
        np.testing.assert_allclose(ours.LD.numpy(), theirs.LD.numpy(), atol=1e-12)
        np.testing.assert_array_equal(ours.pivots.numpy(), theirs.pivots.numpy())
        b = _z(matrix.shape[:-1] + (2,), 3)
        solution = L.ldl_solve(ours.LD, ours.pivots, engine.tensor(b), hermitian=hermitian)
        np.testing.assert_allclose(matrix @ solution.numpy(), b, atol=1e-10)


def test_svd_lowrank_draws_torchs_numbers():
    a = _z((2, 6, 5))
    torch.manual_seed(3)
    engine.manual_seed(3)
    check_op(lambda x: engine.svd_lowrank(x, q=3)[1], lambda x: torch.svd_lowrank(x, q=3)[1], [a], rtol=1e-9,
             grad=False)


def test_singular_and_not_positive_definite_infos():
    singular = _z((2, 5, 5))
    singular[1, :, 2] = 0  # an exact zero pivot (a repeated column leaves one only as rounding allows)
    not_definite = _hermitian(3)
    not_definite[1] *= -1
    for ours, theirs, matrix in ((lambda a: L.inv_ex(a).info, lambda a: torch.linalg.inv_ex(a).info, singular),
                                 (lambda a: L.solve_ex(a, a).info, lambda a: torch.linalg.solve_ex(a, a).info,
                                  singular),
                                 (lambda a: L.cholesky_ex(a).info, lambda a: torch.linalg.cholesky_ex(a).info,
                                  not_definite)):
        np.testing.assert_array_equal(ours(engine.tensor(matrix)).numpy(), theirs(torch.tensor(matrix)).numpy())
    with pytest.raises(L.LinAlgError, match=r"^linalg.inv: \(Batch element 1\): The diagonal element 3 is zero"):
        L.inv(engine.tensor(singular))


def test_rounding_size_pivot_counts_as_lapacks_zero():
    """Where LAPACK refused a matrix, the info comes from the engine's own LU, whose complex elimination leaves a
    repeated column's pivot at rounding size rather than zero."""
    from engine.ops.linalg_solvers import _lu_info
    repeated = _z((2, 5, 5))
    repeated[1, :, 2] = repeated[1, :, 0]
    np.testing.assert_array_equal(_lu_info(engine.tensor(repeated)), [0, 3])


def test_svd_and_eigh_vector_phase_dependence_are_torchs_errors():
    a = engine.tensor(_z((3, 3)), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^svd_backward: The singular vectors in the complex case are specified "
                                           r"up to multiplication by e\^\{i phi\}. The specified loss function "
                                           r"depends on this phase term, making it ill-defined."):
        L.svd(a).U.real.sum().backward()
    h = engine.tensor(_hermitian(3)[0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^linalg_eigh_backward: The eigenvectors in the complex case .* so it "
                                           r"is ill-defined."):
        L.eigh(h).eigenvectors.real.sum().backward()


def test_complex_on_cuda(cuda):
    for name in ("det", "inv", "solve", "svd", "cholesky", "eigh"):
        make, inputs = CASES[name]
        check_op(make(engine), make(torch), inputs, rtol=1e-9, grad_rtol=1e-7, device="cuda")
