"""engine.linalg's spectral functions (pinv, matrix_rank, cond, spectral matrix norms, polar, matrix_sqrth), its
plain products and views, and the namespace as a whole, against torch.linalg (float64 gradients of every input)."""
import math

import numpy as np
import pytest
import torch

import engine
import engine.linalg as L
from op_check import check_op

pytestmark = pytest.mark.slow  # over 2 s together (the first call of each kind warms torch and scipy up)

RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape)


def sym(*shape):
    a = rand(*shape)
    return a + a.swapaxes(-1, -2)


def test_every_torch_linalg_name_is_there():
    names = {n for n in dir(torch.linalg) if not n.startswith("_") and n != "common_notes"}
    assert names <= set(dir(L)), names - set(dir(L))
    assert set(L.__all__) == names


@pytest.mark.parametrize("shape", [(5, 3), (2, 3, 4), (3, 3)])
def test_pinv(shape):
    check_op(L.pinv, torch.linalg.pinv, [rand(*shape)], rtol=1e-9)
    check_op(lambda a: L.pinv(a, rtol=0.3), lambda a: torch.linalg.pinv(a, rtol=0.3), [rand(*shape)], rtol=1e-9)


def test_pinv_hermitian_and_tolerances():
    check_op(lambda a: L.pinv(a, hermitian=True), lambda a: torch.linalg.pinv(a, hermitian=True), [sym(2, 4, 4)],
             rtol=1e-9)
    a = rand(2, 4, 3)
    for kwargs in (dict(atol=1.0), dict(atol=0.5, rtol=0.2)):
        check_op(lambda a: L.pinv(a, **kwargs), lambda a: torch.linalg.pinv(a, **kwargs), [a], rtol=1e-9)
    atol = np.array([0.1, 1.5])
    ours = L.pinv(engine.tensor(a), atol=engine.tensor(atol))
    np.testing.assert_allclose(ours.numpy(), torch.linalg.pinv(torch.tensor(a), atol=torch.tensor(atol)).numpy(),
                               rtol=1e-9)


def test_matrix_rank():
    low = rand(2, 6, 2) @ rand(2, 2, 5)
    for kwargs in ({}, dict(atol=1.0), dict(rtol=0.5), dict(hermitian=True)):
        a = low @ low.swapaxes(-1, -2) if kwargs.get("hermitian") else low
        check_op(lambda a: L.matrix_rank(a, **kwargs), lambda a: torch.linalg.matrix_rank(a, **kwargs), [a],
                 grad=False)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1])
def test_cond(p):
    a = rand(2, 4, 4)
    check_op(lambda a: L.cond(a, p), lambda a: torch.linalg.cond(a, p), [a], rtol=1e-9, grad=p in (None, 2, -2))
    if p in (None, 2, -2):
        check_op(lambda a: L.cond(a, p), lambda a: torch.linalg.cond(a, p), [rand(3, 5)], rtol=1e-9)


def test_cond_of_a_singular_matrix_is_infinite():
    singular = engine.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=engine.float64)
    assert math.isinf(float(L.cond(singular, 1)))


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_spectral_matrix_norms(ord):
    check_op(lambda a: L.matrix_norm(a, ord), lambda a: torch.linalg.matrix_norm(a, ord), [rand(2, 5, 3)], rtol=1e-9)
    check_op(lambda a: L.matrix_norm(a, ord, dim=(0, 2), keepdim=True),
             lambda a: torch.linalg.matrix_norm(a, ord, dim=(0, 2), keepdim=True), [rand(4, 2, 3)], rtol=1e-9)
    check_op(lambda a: L.norm(a, ord), lambda a: torch.linalg.norm(a, ord), [rand(3, 4)], rtol=1e-9)


def test_polar_and_matrix_sqrth():
    check_op(L.polar, torch.linalg.polar, [rand(2, 5, 3)], rtol=1e-9)
    a = rand(2, 4, 4)
    check_op(L.matrix_sqrth, torch.linalg.matrix_sqrth, [a @ a.swapaxes(-1, -2) + np.eye(4)], rtol=1e-9)
    assert L.polar(engine.tensor(rand(3, 2)))._fields == ("U", "H")


def test_multi_dot_with_vector_ends():
    shapes = [(3,), (3, 8), (8, 2), (2, 6), (6,)]
    check_op(lambda *x: L.multi_dot(x), lambda *x: torch.linalg.multi_dot(x), [rand(*s) for s in shapes], rtol=1e-9)
    check_op(lambda *x: L.multi_dot(list(x)), lambda *x: torch.linalg.multi_dot(list(x)),
             [rand(2, 7), rand(7, 3)], rtol=1e-9)


def test_vecdot_cross_diagonal_vander():
    check_op(lambda x, y: L.vecdot(x, y, dim=0), lambda x, y: torch.linalg.vecdot(x, y, dim=0),
             [rand(4, 3), rand(4, 1)], rtol=1e-10)
    check_op(L.cross, torch.linalg.cross, [rand(2, 4, 3), rand(1, 4, 3)], rtol=1e-10)
    check_op(lambda x, y: L.cross(x, y, dim=0), lambda x, y: torch.linalg.cross(x, y, dim=0), [rand(3, 2), rand(3, 2)],
             rtol=1e-10)
    check_op(lambda a: L.diagonal(a, offset=-1), lambda a: torch.linalg.diagonal(a, offset=-1), [rand(2, 4, 5)])
    x = rand(2, 4)
    x[0, 1] = 0.0  # the running product keeps the gradient finite at zero
    check_op(L.vander, torch.linalg.vander, [x], rtol=1e-10)
    check_op(lambda x: L.vander(x, N=6), lambda x: torch.linalg.vander(x, N=6), [rand(3)], rtol=1e-10)


def test_matrix_power_slogdet_matrix_exp_det():
    a = rand(2, 4, 4)
    for n in (0, 1, 3, -2):  # n = 0: the identity, with a zero gradient as torch's
        check_op(lambda a: L.matrix_power(a, n), lambda a: torch.linalg.matrix_power(a, n), [a], rtol=1e-9)
    check_op(L.slogdet, torch.linalg.slogdet, [a], rtol=1e-10)
    assert L.slogdet(engine.tensor(a))._fields == ("sign", "logabsdet")
    check_op(L.matrix_exp, torch.linalg.matrix_exp, [0.3 * a], rtol=1e-9)
    check_op(L.det, torch.linalg.det, [a], rtol=1e-9)


def test_householder_product():
    a, tau = torch.geqrf(torch.tensor(rand(2, 5, 3)))
    check_op(L.householder_product, torch.linalg.householder_product, [a.numpy(), tau.numpy()], rtol=1e-10)


ERRORS = [
    lambda lib: lib.linalg.multi_dot([lib.ones(2, 2)]),
    lambda lib: lib.linalg.multi_dot([lib.ones(2, 2, 2), lib.ones(2, 2)]),
    lambda lib: lib.linalg.multi_dot([lib.ones(2, 2), lib.ones(2, 2, 2)]),
    lambda lib: lib.linalg.multi_dot([lib.ones(2), lib.ones(2, 2, 2), lib.ones(2)]),
    lambda lib: lib.linalg.multi_dot([lib.ones(2, 3), lib.ones(2, 2)]),
    lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3, dtype=lib.float64)),
    lambda lib: lib.linalg.vander(lib.ones(3), N=1),
    lambda lib: lib.linalg.matrix_rank(lib.ones(3)),
    lambda lib: lib.linalg.pinv(lib.ones(3)),
    lambda lib: lib.linalg.cond(lib.ones(2, 3), p=1),
    lambda lib: lib.linalg.cond(lib.ones(2, 2), p="foo"),
    lambda lib: lib.linalg.matrix_power(lib.ones(2, 3), 2),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_torch(index):
    with pytest.raises(Exception) as expected:
        ERRORS[index](torch)
    with pytest.raises(type(expected.value)) as raised:
        ERRORS[index](engine)
    assert str(raised.value) == str(expected.value).splitlines()[0]


def test_method_forms_of_these_functions():
    a = engine.tensor(rand(3, 3))
    for name in ("matrix_power", "slogdet", "logdet", "det", "inverse", "pinverse", "matrix_exp", "svd",
                 "cholesky_solve", "cholesky_inverse", "triangular_solve", "orgqr", "ormqr", "geqrf", "diagonal",
                 "cross"):
        assert hasattr(torch.Tensor, name) and hasattr(type(a), name), name


def test_spectral_functions_on_cuda(cuda):
    check_op(L.pinv, torch.linalg.pinv, [rand(2, 5, 3)], rtol=1e-9, device="cuda")
    check_op(lambda a, b: L.lstsq(a, b).solution, lambda a, b: torch.linalg.lstsq(a, b).solution,
             [rand(2, 5, 3), rand(2, 5, 2)], rtol=1e-9, device="cuda")
    check_op(lambda a: L.matrix_norm(a, "nuc"), lambda a: torch.linalg.matrix_norm(a, "nuc"), [rand(4, 3)],
             rtol=1e-9, device="cuda")


def test_top_level_inverse_is_linalg_inv_with_its_error():
    singular = engine.zeros(3, 3)
    for call in (engine.inverse, lambda a: a.inverse()):
        with pytest.raises(L.LinAlgError, match="linalg.inv: The diagonal element 1 is zero"):
            call(singular)
