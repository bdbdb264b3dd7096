"""LU factorisation against PyTorch: ``linalg.lu_factor``, ``lu_factor_ex``, ``lu``, ``lu_solve`` and the older
``torch.lu``, ``torch.lu_solve``, ``torch.lu_unpack``: factors, pivots (1-based, LAPACK's), ``info`` for singular
matrices, and the gradients of every differentiable output, for square, wide and tall batches."""
import warnings

import numpy as np
import pytest
import torch

import engine

RNG = np.random.default_rng(21)
SHAPES = [(3, 3), (2, 4, 4), (3, 5, 5), (2, 3, 5), (2, 6, 4), (2, 1, 3, 3), (1, 1)]


def pair(array, grad=False):
    return engine.tensor(array, requires_grad=grad), torch.tensor(array, requires_grad=grad)


def close(ours, theirs, tol=1e-10):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_ex_gives_torchs_factors_pivots_and_info(shape):
    ours, theirs = pair(RNG.standard_normal(shape))
    got, want = engine.linalg.lu_factor_ex(ours), torch.linalg.lu_factor_ex(theirs)
    close(got.LU, want.LU)
    assert got.pivots.dtype == engine.int32
    np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
    np.testing.assert_array_equal(got.info.numpy(), want.info.numpy())
    lu, pivots = engine.linalg.lu_factor(ours)
    close(lu, want.LU)
    np.testing.assert_array_equal(pivots.numpy(), want.pivots.numpy())


@pytest.mark.parametrize("matrix", [np.ones((3, 3)), np.zeros((3, 3)), np.array([[1., 2, 3], [2, 4, 6], [0, 0, 1]]),
                                    np.array([[0., 1], [1, 0]])])
def test_singular_and_permuted_matrices_as_torchs(matrix):
    batch = np.stack([matrix, matrix + np.eye(len(matrix)) * 5])
    ours, theirs = pair(batch)
    got, want = engine.linalg.lu_factor_ex(ours), torch.linalg.lu_factor_ex(theirs)
    close(got.LU, want.LU)
    np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
    np.testing.assert_array_equal(got.info.numpy(), want.info.numpy())


def test_singular_matrices_raise_torchs_error_where_torch_does():
    batch = RNG.standard_normal((3, 3, 3))
    batch[1, :, 2] = 0
    info = engine.linalg.lu_factor_ex(engine.tensor(batch)).info
    assert info.tolist() == torch.linalg.lu_factor_ex(torch.tensor(batch)).info.tolist() == [0, 3, 0]
    with pytest.raises(RuntimeError, match=r"lu_factor: \(Batch element 1\): U\[3,3\] is zero"):
        engine.linalg.lu_factor(engine.tensor(batch))
    with pytest.raises(RuntimeError, match=r"lu_factor_ex: U\[2,2\] is zero"):
        engine.linalg.lu_factor_ex(engine.ones(3, 3), check_errors=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert engine.lu(engine.tensor(batch), get_infos=True)[2].tolist() == [0, 3, 0]  # torch.lu: no error


@pytest.mark.parametrize("shape", SHAPES)
def test_linalg_lu_and_its_gradient(shape):
    ours, theirs = pair(RNG.standard_normal(shape), grad=True)
    got, want = engine.linalg.lu(ours), torch.linalg.lu(theirs)
    for g, w in zip(got, want):
        close(g, w)
    g_lower, g_upper = RNG.standard_normal(want.L.shape), RNG.standard_normal(want.U.shape)
    ((got.L * engine.tensor(g_lower)).sum() + (got.U * engine.tensor(g_upper)).sum()).backward()
    ((want.L * torch.tensor(g_lower)).sum() + (want.U * torch.tensor(g_upper)).sum()).backward()
    close(ours.grad, theirs.grad, 1e-9)


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_factor_gradient(shape):
    ours, theirs = pair(RNG.standard_normal(shape), grad=True)
    g = RNG.standard_normal(shape)
    (engine.linalg.lu_factor(ours).LU * engine.tensor(g)).sum().backward()
    (torch.linalg.lu_factor(theirs).LU * torch.tensor(g)).sum().backward()
    close(ours.grad, theirs.grad, 1e-9)


def test_lu_factor_gradient_matches_finite_differences():
    """Not only torch's numbers: the gradient of a scalar of LU against central differences."""
    a = RNG.standard_normal((2, 4, 3))
    g = RNG.standard_normal((2, 4, 3))

    def loss(x):
        return float((engine.linalg.lu_factor(engine.tensor(x)).LU.numpy() * g).sum())

    ours = engine.tensor(a, requires_grad=True)
    (engine.linalg.lu_factor(ours).LU * engine.tensor(g)).sum().backward()
    numeric = np.zeros_like(a)
    for index in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[index] = 1e-6
        numeric[index] = (loss(a + step) - loss(a - step)) / 2e-6
    np.testing.assert_allclose(ours.grad.numpy(), numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_and_its_gradients_with_broadcast_batches(left, adjoint):
    a = RNG.standard_normal((2, 4, 4))
    b = RNG.standard_normal((3, 1, 4, 2) if left else (3, 1, 2, 4))
    (oa, ta), (ob, tb) = pair(a, grad=True), pair(b, grad=True)
    got = engine.linalg.lu_solve(*engine.linalg.lu_factor(oa), ob, left=left, adjoint=adjoint)
    want = torch.linalg.lu_solve(*torch.linalg.lu_factor(ta), tb, left=left, adjoint=adjoint)
    close(got, want, 1e-9)
    g = RNG.standard_normal(tuple(want.shape))
    (got * engine.tensor(g)).sum().backward()
    (want * torch.tensor(g)).sum().backward()
    close(oa.grad, ta.grad, 1e-8)
    close(ob.grad, tb.grad, 1e-8)


def test_float32_follows_torch():
    a = RNG.standard_normal((3, 5, 5)).astype(np.float32)
    b = RNG.standard_normal((3, 5, 2)).astype(np.float32)
    got = engine.linalg.lu_solve(*engine.linalg.lu_factor(engine.tensor(a)), engine.tensor(b))
    want = torch.linalg.lu_solve(*torch.linalg.lu_factor(torch.tensor(a)), torch.tensor(b))
    assert got.dtype == engine.float32
    close(got, want, 1e-4)


@pytest.mark.parametrize("shape", [(2, 4, 4), (2, 3, 5), (2, 5, 3)])
def test_legacy_lu_lu_solve_and_lu_unpack(shape):
    ours, theirs = pair(RNG.standard_normal(shape), grad=True)
    with pytest.warns(UserWarning, match="torch.lu is deprecated"):
        lu, pivots = engine.lu(ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_lu, t_pivots = torch.lu(theirs)
        assert len(ours.lu(get_infos=True)) == 3
    close(lu, t_lu)
    got, want = engine.lu_unpack(lu, pivots), torch.lu_unpack(t_lu, t_pivots)
    for g, w in zip(got, want):
        close(g, w)
    g_lower, g_upper = RNG.standard_normal(want.L.shape), RNG.standard_normal(want.U.shape)
    ((got.L * engine.tensor(g_lower)).sum() + (got.U * engine.tensor(g_upper)).sum()).backward()
    ((want.L * torch.tensor(g_lower)).sum() + (want.U * torch.tensor(g_upper)).sum()).backward()
    close(ours.grad, theirs.grad, 1e-9)
    p_only = engine.lu_unpack(lu, pivots, unpack_data=False)
    assert p_only.L.numel() == p_only.U.numel() == 0
    close(p_only.P, want.P)
    assert engine.lu_unpack(lu, pivots, unpack_pivots=False).P.numel() == 0
    if shape[-1] == shape[-2]:
        b = RNG.standard_normal((shape[0], shape[-1], 2))
        with pytest.warns(UserWarning, match="torch.lu_solve is deprecated"):
            x = engine.lu_solve(engine.tensor(b), lu, pivots)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            close(x, torch.lu_solve(torch.tensor(b), t_lu, t_pivots), 1e-9)
            close(engine.tensor(b).lu_solve(lu, pivots), x)


def test_bad_inputs_raise_torchs_errors():
    a = engine.randn(2, 3, 3)
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        engine.linalg.lu_factor(a, pivot=False)
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        engine.linalg.lu(a, pivot=False)
    with pytest.raises(RuntimeError, match="Expected tensor with 2 or more dimensions. Got size: \\[3\\]"):
        engine.linalg.lu_factor(engine.ones(3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        engine.linalg.lu_factor(engine.ones(3, 3, dtype=engine.int64))
    lu, pivots = engine.linalg.lu_factor(a)
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x3\)"):
        engine.linalg.lu_solve(lu, pivots, engine.randn(2, 4, 3))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 3 by 4 matrices"):
        engine.linalg.lu_solve(engine.randn(3, 4), pivots[0], engine.randn(3, 3))
    with pytest.raises(RuntimeError, match="pivots should be a Tensor of scalar type torch.int32"):
        engine.linalg.lu_solve(lu, pivots.long(), engine.randn(2, 3, 3))
    with pytest.raises(RuntimeError, match="Number of pivots per batch should be same"):
        engine.linalg.lu_solve(lu, pivots[..., :2], engine.randn(2, 3, 3))
    with pytest.raises(RuntimeError, match="found LU of type Float and B of type Double"):
        engine.linalg.lu_solve(lu, pivots, engine.randn(2, 3, 3, dtype=engine.float64))
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of torch.int32"):
        engine.lu_unpack(lu, pivots.float())
    with pytest.raises(ValueError, match=r"Expected LU_pivots to have shape \[3\] but got \[2\]"):
        engine.lu_unpack(lu, pivots[..., :2])


def test_on_cuda_with_and_without_pivoting(cuda):
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)  # diagonally dominant: pivoting or not, stable factors
    b = RNG.standard_normal((2, 4, 3))
    ours = engine.tensor(a).cuda().requires_grad_()
    lu, pivots, info = engine.linalg.lu_factor_ex(ours)
    want = torch.linalg.lu_factor_ex(torch.tensor(a))
    assert lu.device.type == pivots.device.type == info.device.type == "cuda"
    np.testing.assert_allclose(lu.cpu().detach().numpy(), want.LU.numpy(), atol=1e-10)
    np.testing.assert_array_equal(pivots.cpu().numpy(), want.pivots.numpy())
    x = engine.linalg.lu_solve(lu, pivots, engine.tensor(b).cuda())
    np.testing.assert_allclose(x.cpu().detach().numpy(), np.linalg.solve(a, b), atol=1e-10)
    x.sum().backward()
    theirs = torch.tensor(a, requires_grad=True)
    torch.linalg.lu_solve(*torch.linalg.lu_factor(theirs), torch.tensor(b)).sum().backward()
    np.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), atol=1e-9)
    P, L, U = engine.linalg.lu(engine.tensor(a).cuda(), pivot=False)
    assert P.numel() == 0
    assert engine.linalg.lu_factor(engine.tensor(a).cuda(), pivot=False).pivots.cpu().tolist() == [[1, 2, 3, 4]] * 2
    np.testing.assert_allclose((L @ U).cpu().numpy(), a, atol=1e-12)
