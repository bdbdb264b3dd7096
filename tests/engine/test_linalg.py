"""Linear algebra against PyTorch: matmul broadcasting, mm/bmm/mv/dot/outer/addmm/baddbmm, einsum,
tensordot, inverse/det/solve and the ``engine.linalg`` norms; shape errors pinned."""
import numpy as np
import pytest
import torch

import engine
import engine.linalg
from op_check import check_op, noncontiguous

rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                 ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)),
                 ((5, 1, 2, 3), (4, 3, 2)), ((2, 3), (5, 3, 4)), ((4, 1, 2, 3), (1, 6, 3, 1)), ((1, 1), (1, 1)),
                 ((2, 3, 0), (0, 4))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul_broadcasting(shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    check_op(engine.matmul, torch.matmul, [a, b], rtol=1e-5)
    check_op(lambda x, y: x @ y, lambda x, y: x @ y, [noncontiguous(a), noncontiguous(b)], rtol=1e-5)
    check_op(engine.matmul, torch.matmul, [a.astype(np.float64), b.astype(np.float64)], rtol=1e-12)


def test_matmul_keeps_float32_and_ints():
    a, b = engine.randn(4, 3), engine.randn(3, 2)
    assert (a @ b).dtype is engine.float32
    x, y = np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)
    check_op(engine.matmul, torch.matmul, [x, y])
    check_op(lambda p: p.__rmatmul__(engine.from_numpy(x.astype(np.float32))),
             lambda p: p.__rmatmul__(torch.from_numpy(x.astype(np.float32))), [rand(3, 2)])


def test_matmul_one_side_requires_grad():
    a, b = rand(5, 2, 3), rand(3, 4)
    check_op(lambda x: x @ engine.from_numpy(b), lambda x: x @ torch.from_numpy(b), [a])
    check_op(lambda y: engine.from_numpy(a) @ y, lambda y: torch.from_numpy(a) @ y, [b])


@pytest.mark.parametrize("shapes,message", [
    (((2, 3), (4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (((2, 2, 3), (4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(4x3 and 4x5\)"),
    (((3,), (4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(1x3 and 4x5\)"),
    (((3,), (4,)), r"inconsistent tensor size, expected tensor \[3\] and src \[4\]"),
    (((2, 3), (4,)), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"),
    (((5, 2, 3), (5, 4, 5)), r"Expected size for first two dimensions of batch2 tensor to be: \[5, 3\] but got: \[5, 4\]"),
    (((2, 1, 2, 3), (3, 4, 5)), r"to be: \[6, 3\] but got: \[6, 4\]"),
    (((7, 2, 2, 3), (3, 3, 5)), r"The size of tensor a \(2\) must match the size of tensor b \(3\) at non-singleton "
                                r"dimension 1"),
    (((), (3,)), "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
])
def test_matmul_shape_errors(shapes, message):
    a, b = engine.zeros(*shapes[0]), engine.zeros(*shapes[1])
    with pytest.raises(RuntimeError, match=message):
        engine.matmul(a, b)


def test_dtype_errors():
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: float != double"):
        engine.zeros(2, 3) @ engine.zeros(3, 2, dtype=engine.float64)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        engine.bmm(engine.zeros(1, 2, 3), engine.zeros(1, 3, 2, dtype=engine.float64))


def test_mm_bmm_mv_dot():
    check_op(engine.mm, torch.mm, [rand(4, 3), noncontiguous(rand(3, 5))])
    check_op(lambda x, y: x.bmm(y), lambda x, y: x.bmm(y), [rand(2, 4, 3), noncontiguous(rand(2, 3, 5))])
    check_op(engine.mv, torch.mv, [rand(4, 3), rand(3)])
    check_op(lambda x, y: x.dot(y), lambda x, y: x.dot(y), [rand(7), rand(7)])
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        engine.mm(engine.zeros(2, 3), engine.zeros(4, 5))
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        engine.mm(engine.zeros(2, 3), engine.zeros(3))
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 tensor to be: "
                                           r"\[2, 3\] but got: \[3, 4\]\."):
        engine.bmm(engine.zeros(2, 2, 3), engine.zeros(3, 4, 5))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        engine.bmm(engine.zeros(2, 3), engine.zeros(2, 3, 4))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 3, 1"):
        engine.mv(engine.zeros(2, 3, 3), engine.zeros(3))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        engine.dot(engine.zeros(3, 1), engine.zeros(3))


def test_outer_addmm_baddbmm():
    check_op(engine.outer, torch.outer, [rand(4), rand(3)])
    check_op(lambda x, y: x.ger(y), lambda x, y: x.ger(y), [rand(4), rand(3, dtype=np.float64)])
    check_op(lambda c, a, b: engine.addmm(c, a, b, beta=0.5, alpha=2.0),
             lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [rand(5), rand(4, 3), rand(3, 5)])
    check_op(engine.addmm, torch.addmm, [rand(4, 5), rand(4, 3), noncontiguous(rand(3, 5))])
    check_op(lambda c, a, b: c.addmm(a, b, beta=0), lambda c, a, b: c.addmm(a, b, beta=0),
             [rand(4, 1), rand(4, 3), rand(3, 5)])
    check_op(lambda c, a, b: engine.baddbmm(c, a, b, beta=2, alpha=-1),
             lambda c, a, b: torch.baddbmm(c, a, b, beta=2, alpha=-1), [rand(1, 4, 5), rand(2, 4, 3), rand(2, 3, 5)])
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        engine.outer(engine.zeros(2, 3), engine.zeros(3))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        engine.addmm(engine.zeros(2, 5), engine.zeros(2, 3), engine.zeros(4, 5))


EINSUM_CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,jk", [(6, 2, 3, 4), (4, 5)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("ij,ij->i", [(3, 1), (3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("b i d, b j d -> b i j", [(2, 3, 4), (2, 5, 4)]),
    ("...d,...d->...", [(2, 1, 4), (3, 4)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]),
    ("Ba,ab", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum(eq, shapes):
    arrays = [rand(*s) for s in shapes]
    check_op(lambda *t: engine.einsum(eq, *t), lambda *t: torch.einsum(eq, *t), arrays, rtol=1e-5)


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES)
def test_einsum_on_the_cuda_backend(cuda, eq, shapes):
    """On the GPU each pair of operands is one batched GEMM (``_contract``): torch's values and gradients."""
    arrays = [rand(*s) for s in shapes]
    check_op(lambda *t: engine.einsum(eq, *t), lambda *t: torch.einsum(eq, *t), arrays, rtol=1e-5, device="cuda")


def test_einsum_list_form_and_errors():
    a, b = rand(3, 4), rand(4, 5)
    check_op(lambda x, y: engine.einsum("ij,jk->ik", [x, y]), lambda x, y: torch.einsum("ij,jk->ik", [x, y]), [a, b])
    with pytest.raises(RuntimeError, match="einsum\\(\\): fewer operands were provided than specified"):
        engine.einsum("ij,jk->ik", engine.zeros(2, 3))
    with pytest.raises(RuntimeError, match="subscript j has size 4 for operand 1 which does not broadcast with "
                                           "previously seen size 3"):
        engine.einsum("ij,jk", engine.zeros(2, 3), engine.zeros(4, 5))
    with pytest.raises(RuntimeError, match=r"number of subscripts in the equation \(3\) does not match the number of "
                                           r"dimensions \(2\) for operand 0"):
        engine.einsum("ijk->ij", engine.zeros(2, 3))


@pytest.mark.parametrize("dims,shapes", [(2, ((2, 3, 4), (3, 4, 5))), (1, ((2, 3, 4), (4, 5))), (0, ((2, 3), (4,))),
                                         (([1, 0], [0, 1]), ((2, 3, 4), (3, 2, 5))), (([2], [0]), ((2, 3, 4), (4, 5))),
                                         (([1], [0]), ((2, 3), (3, 4)))])
def test_tensordot(dims, shapes):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    check_op(lambda x, y: engine.tensordot(x, y, dims), lambda x, y: torch.tensordot(x, y, dims), [a, b])
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 3 in dim -1 and "
                                           "second has size 4 in dim 0"):
        engine.tensordot(engine.zeros(2, 3), engine.zeros(4, 5), 1)


def well_conditioned(*shape):
    return (rand(*shape) + 3 * np.eye(shape[-1], dtype=np.float32)).astype(np.float64)


def test_inverse_det_solve():
    a = well_conditioned(2, 4, 4)
    check_op(engine.inverse, torch.inverse, [a], rtol=1e-9)
    check_op(engine.linalg.inv, torch.linalg.inv, [a[0]], rtol=1e-9)
    check_op(lambda x: x.det(), lambda x: x.det(), [a], rtol=1e-9)
    check_op(engine.linalg.det, torch.linalg.det, [a[1]], rtol=1e-9)
    check_op(engine.linalg.solve, torch.linalg.solve, [a, rand(2, 4, 3).astype(np.float64)], rtol=1e-9)
    check_op(engine.linalg.solve, torch.linalg.solve, [a, rand(2, 4).astype(np.float64)], rtol=1e-9)
    check_op(engine.linalg.solve, torch.linalg.solve, [a[0], rand(4).astype(np.float64)], rtol=1e-9)
    check_op(engine.linalg.solve, torch.linalg.solve, [a[0], rand(3, 4, 2).astype(np.float64)], rtol=1e-9)
    with pytest.raises(RuntimeError, match="linalg.inv: A must be batches of square matrices, but they are 2 by 3"):
        engine.inverse(engine.zeros(2, 3))


@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, float("inf"), -float("inf")])
@pytest.mark.parametrize("dim", [None, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm(ord, dim, keepdim):
    x = noncontiguous(rand(3, 4, 5))
    check_op(lambda t: engine.linalg.vector_norm(t, ord, dim, keepdim),
             lambda t: torch.linalg.vector_norm(t, ord, dim, keepdim), [x])


@pytest.mark.parametrize("ord", ["fro", 1, -1, float("inf"), -float("inf")])
@pytest.mark.parametrize("dim", [(-2, -1), (0, 2), (2, 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm(ord, dim, keepdim):
    x = rand(3, 4, 5, dtype=np.float64)
    check_op(lambda t: engine.linalg.matrix_norm(t, ord, dim, keepdim),
             lambda t: torch.linalg.matrix_norm(t, ord, dim, keepdim), [x], rtol=1e-10)


def test_linalg_norm_dispatch():
    for args in [(), (None, 1), (2, 0), (1, (0, 1)), ("fro",), (float("inf"),)]:
        check_op(lambda t: engine.linalg.norm(t, *args), lambda t: torch.linalg.norm(t, *args), [rand(3, 4)])
    check_op(lambda t: engine.linalg.norm(t, 3), lambda t: torch.linalg.norm(t, 3), [rand(6)])
    check_op(lambda t: engine.linalg.norm(t, dtype=engine.float64), lambda t: torch.linalg.norm(t, dtype=torch.float64),
             [rand(2, 3, 4)])
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be 1D or 2D. Got 3D."):
        engine.linalg.norm(engine.zeros(2, 3, 4), 2)
