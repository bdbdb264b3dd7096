"""Sparse tensors against torch, from a differential fuzz over random COO/CSR tensors (duplicates, empty, hybrid,
float/int/bool/complex): pointwise ops on the stored values, scalar products' dtypes, sums, the product and index
ops' result structure (stored entries, order, coalesced flag), block conversions, and the errors torch raises."""
import numpy as np
import pytest
import torch
from op_check import assert_same_error

import engine
import engine.sparse as sparse

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"), pytest.mark.slow]  # about 3 s in all

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.complex64]


def _coo(seed, shape=(4, 5), nnz=7, dense=(), dtype=torch.float32, coalesce=False):
    """A torch COO tensor with duplicates (nnz draws over the positions), and our copy of it."""
    rng = np.random.default_rng(seed)
    indices = np.stack([rng.integers(0, n, nnz) for n in shape]).reshape(len(shape), nnz)
    values = rng.standard_normal((nnz,) + dense)
    if dtype.is_complex:
        values = values + 1j * rng.standard_normal(values.shape)
    theirs = torch.tensor(values > 0) if dtype is torch.bool else torch.tensor(np.round(values * 3)).to(dtype)
    if dtype.is_floating_point or dtype.is_complex:
        theirs = torch.tensor(values).to(dtype)
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), theirs, tuple(shape) + dense)
    theirs = theirs.coalesce() if coalesce else theirs
    return _ours(theirs), theirs


def _ours(t):
    if t.layout == torch.sparse_csr:
        return sparse.sparse_csr_tensor(engine.tensor(t.crow_indices().numpy()), engine.tensor(t.col_indices().numpy()),
                                        engine.tensor(t.values().numpy()), tuple(t.shape))
    return sparse.sparse_coo_tensor(engine.tensor(t._indices().numpy()), engine.tensor(t._values().numpy()),
                                    tuple(t.shape), is_coalesced=t.is_coalesced())


def _same(ours, theirs):
    """Same layout, shape, dtype, stored entries in torch's order, coalesced flag and dense form."""
    assert ours.layout.name == str(theirs.layout).split(".")[1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    if theirs.layout == torch.sparse_coo:
        assert ours.is_coalesced() == theirs.is_coalesced()
        np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
        np.testing.assert_allclose(ours._values().detach().numpy(), theirs._values().detach().numpy(), rtol=1e-5)
    elif theirs.layout in (torch.sparse_csr, torch.sparse_bsr):
        np.testing.assert_array_equal(ours.crow_indices().numpy(), theirs.crow_indices().numpy())
        np.testing.assert_array_equal(ours.col_indices().numpy(), theirs.col_indices().numpy())
        np.testing.assert_allclose(ours.values().detach().numpy(), theirs.values().detach().numpy(), rtol=1e-5)
    elif theirs.layout != torch.strided:
        np.testing.assert_array_equal(ours.ccol_indices().numpy(), theirs.ccol_indices().numpy())
        np.testing.assert_array_equal(ours.row_indices().numpy(), theirs.row_indices().numpy())
        np.testing.assert_allclose(ours.values().detach().numpy(), theirs.values().detach().numpy(), rtol=1e-5)
    dense = (lambda t: t) if theirs.layout == torch.strided else (lambda t: t.detach().to_dense())
    np.testing.assert_allclose(dense(ours).numpy(), dense(theirs).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["abs", "sqrt", "sin", "tanh", "floor", "sign", "sgn", "expm1", "isnan", "signbit",
                                  "nan_to_num", "frac", "deg2rad", "asinh", "square", "relu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_zero_preserving_unary_on_coalesced_values(name, dtype):
    ours, theirs = _coo(0, dtype=dtype)
    if name == "frac" and dtype is torch.int64:
        assert_same_error(lambda: getattr(ours, name)(), lambda: getattr(theirs, name)())
        return
    _same(getattr(ours, name)(), getattr(theirs, name)())


@pytest.mark.parametrize("name", ["abs", "sin", "isinf", "angle"])
def test_unary_on_csr(name):
    ours, theirs = _coo(1, coalesce=True)
    _same(getattr(ours.to_sparse_csr(), name)(), getattr(theirs.to_sparse_csr(), name)())


@pytest.mark.parametrize("name", ["exp", "cos", "log", "sigmoid", "angle"])
def test_filling_unary_raises_torchs_error(name):
    """torch's message goes on with its dispatcher's backend list, which ours leaves out."""
    ours, theirs = _coo(2)
    with pytest.raises(NotImplementedError) as expected:
        getattr(theirs, name)()
    with pytest.raises(NotImplementedError) as got:
        getattr(ours, name)()
    assert str(expected.value).startswith(str(got.value))
    if name != "angle":
        assert_same_error(lambda: getattr(ours.coalesce().to_sparse_csr(), name)(),
                          lambda: getattr(theirs.coalesce().to_sparse_csr(), name)())


def test_pow_neg_conj():
    ours, theirs = _coo(3)
    _same(ours.pow(3), theirs.pow(3))
    _same(ours ** 2, theirs ** 2)
    assert_same_error(lambda: ours.pow(0), lambda: theirs.pow(0))
    _same(-ours, -theirs)
    _same(ours.neg(), theirs.neg())
    c_ours, c_theirs = _coo(3, dtype=torch.complex64)
    _same(c_ours.conj(), c_theirs.conj().resolve_conj())
    b_ours, b_theirs = _coo(3, dtype=torch.bool)
    assert_same_error(lambda: -b_ours, lambda: -b_theirs)
    assert_same_error(lambda: b_ours.square(), lambda: b_theirs.square())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, factor", [("mul", 2.5), ("div", 2), ("mul", 3), ("rmul", 2), ("mul", "0-d"),
                                        ("div", 4.0)])
def test_scalar_products_promote_as_torch(dtype, op, factor):
    ours, theirs = _coo(4, dtype=dtype)
    f_ours, f_theirs = (engine.tensor(1.5), torch.tensor(1.5)) if factor == "0-d" else (factor, factor)
    apply = {"mul": lambda t, f: t * f, "rmul": lambda t, f: f * t, "div": lambda t, f: t / f}[op]
    _same(apply(ours, f_ours), apply(theirs, f_theirs))


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float32])
def test_sums_dtypes_and_bool_duplicates(dtype):
    ours, theirs = _coo(5, shape=(3, 4, 2), nnz=9, dtype=dtype)
    for dim in (0, 2, (0, 1)):
        _same(ours.sum(dim), theirs.sum(dim))
    _same(ours.sum(), theirs.sum())
    _same(sparse.sum(ours), torch.sparse.sum(theirs))


def test_add_sub_alpha_and_bool_errors():
    ours, theirs = _coo(6)
    other_ours, other_theirs = _coo(7)
    _same(ours.add(other_ours, alpha=2), theirs.add(other_theirs, alpha=2))
    _same(ours.sub(other_ours, alpha=3), theirs.sub(other_theirs, alpha=3))
    b_ours, b_theirs = _coo(6, dtype=torch.bool)
    assert_same_error(lambda: b_ours + b_ours, lambda: b_theirs + b_theirs)
    assert_same_error(lambda: b_ours - b_ours, lambda: b_theirs - b_theirs)


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("dtypes", [(torch.float32, torch.float32), (torch.int64, torch.float32),
                                    (torch.float32, torch.complex64), (torch.int64, torch.float64)])
def test_sparse_times_dense_keeps_stored_entries(coalesce, dtypes):
    ours, theirs = _coo(8, dtype=dtypes[0], coalesce=coalesce)
    dense = torch.tensor(np.random.default_rng(8).standard_normal((4, 5))).to(dtypes[1])
    _same(ours * engine.tensor(dense.numpy()), theirs * dense)
    _same(engine.tensor(dense.numpy()) * ours, dense * theirs)
    other_ours, other_theirs = _coo(8, dtype=dtypes[1], coalesce=True)
    _same((ours + other_ours).coalesce(), (theirs + other_theirs).coalesce())
    _same((ours.coalesce() * other_ours).coalesce(), (theirs.coalesce() * other_theirs).coalesce())


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("shape", [(6,), (3, 4)])
def test_softmax_over_a_single_sparse_dim(log, shape):
    ours, theirs = _coo(9, shape=shape, nnz=5)
    ours_fn, theirs_fn = (sparse.log_softmax, torch.sparse.log_softmax) if log else (sparse.softmax,
                                                                                      torch.sparse.softmax)
    _same(ours_fn(ours, 0), theirs_fn(theirs, 0))


@pytest.mark.parametrize("coalesce", [False, True])
@pytest.mark.parametrize("nnz", [0, 1, 6])
def test_index_ops_order_and_flags(coalesce, nnz):
    ours, theirs = _coo(10, shape=(4, 5), nnz=nnz, dense=(2,), coalesce=coalesce)
    assert_same_error(lambda: ours.t(), lambda: theirs.t())  # a hybrid tensor has no t()
    _same(ours.transpose(0, 1), theirs.transpose(0, 1))
    _same(sparse.sum(ours, 2).t(), torch.sparse.sum(theirs, 2).t())
    for dim in (0, 1, 2):
        index = [1, 0, 1]
        _same(ours.index_select(dim, engine.tensor(index)), theirs.index_select(dim, torch.tensor(index)))
        _same(ours.narrow_copy(dim, 1, 1), theirs.narrow_copy(dim, 1, 1))
    assert_same_error(lambda: ours.index_select(0, engine.tensor([4])),
                      lambda: theirs.index_select(0, torch.tensor([4])))
    assert_same_error(lambda: ours.narrow_copy(1, 3, 3), lambda: theirs.narrow_copy(1, 3, 3))


@pytest.mark.parametrize("coalesce", [False, True])
def test_smm_hspmm_structure(coalesce):
    ours, theirs = _coo(11, shape=(5, 4), nnz=4, coalesce=coalesce)
    mat = torch.tensor(np.random.default_rng(11).standard_normal((4, 3)), dtype=torch.float32)
    mat[:, 1] = 0  # smm keeps the zero products of a row that has entries
    _same(sparse.smm(ours, engine.tensor(mat.numpy())), torch.smm(theirs, mat))
    _same(sparse.hspmm(ours, engine.tensor(mat.numpy())), torch.hspmm(theirs, mat))


def test_bool_duplicates_or_together():
    ours, theirs = _coo(12, shape=(2,), nnz=6, dtype=torch.bool)
    _same(ours.to_dense(), theirs.to_dense())
    _same(ours.coalesce(), theirs.coalesce())


@pytest.mark.parametrize("blocksize", [(1, 1), (2, 1), (2, 3)])
def test_block_conversions_keep_stored_zeros(blocksize):
    ours, theirs = _coo(13, shape=(4, 6), nnz=6, dtype=torch.int64, coalesce=True)  # rounding stores zeros
    _same(ours.to_sparse_bsr(blocksize), theirs.to_sparse_bsr(blocksize))
    _same(ours.to_sparse_csr().to_sparse_bsc(blocksize), theirs.to_sparse_csr().to_sparse_bsc(blocksize))
    dense = theirs.to_dense()
    _same(_dense(dense).to_sparse_bsr(blocksize), dense.to_sparse_bsr(blocksize))
    assert_same_error(lambda: ours.to_sparse_bsr((3, 4)), lambda: theirs.to_sparse_bsr((3, 4)))
    assert_same_error(lambda: _dense(dense).to_sparse_bsc((3, 4)), lambda: dense.to_sparse_bsc((3, 4)))


def _dense(t):
    return engine.tensor(t.numpy())


def test_empty_dense_to_hybrid():
    dense = torch.zeros(0, 3)
    _same(_dense(dense).to_sparse(1), dense.to_sparse(1))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_addmm_casts_factors_for_integers(dtype):
    ours, theirs = _coo(14, shape=(3, 4), nnz=5, dtype=dtype)
    mat = torch.tensor(np.random.default_rng(14).integers(-3, 4, (4, 2))).to(dtype)
    inp = torch.full((3, 2), 7).to(dtype)
    _same(sparse.addmm(_dense(inp), ours, _dense(mat), beta=0.5, alpha=2),
          torch.sparse.addmm(inp, theirs, mat, beta=0.5, alpha=2))


def _leaf_pair(seed):
    ours, theirs = _coo(seed, shape=(3, 4), nnz=6, dtype=torch.float64)
    return ours.requires_grad_(True), theirs.requires_grad_(True)


def _backward(out, weights):
    out = out.to_dense() if out.layout not in (torch.strided, engine.strided) else out
    (out * weights).sum().backward()


@pytest.mark.parametrize("case", ["sum", "times_dense", "to_double", "scale"])
def test_gradients(case):
    ours, theirs = _leaf_pair(15)
    weights = torch.tensor(np.random.default_rng(15).standard_normal((3, 4)))
    ops = {"sum": lambda t, w: t.sum() * 1.0,
           "times_dense": lambda t, w: t * w,
           "to_double": lambda t, w: (t.to(engine.float32) if isinstance(t, engine.Tensor) else t.float()),
           "scale": lambda t, w: t * 2.5 / 4}
    out_theirs = ops[case](theirs, weights)
    out_ours = ops[case](ours, _dense(weights))
    _backward(out_theirs, weights if out_theirs.ndim else torch.tensor(1.0, dtype=torch.float64))
    w = _dense(weights) if out_ours.ndim else engine.tensor(1.0, dtype=engine.float64)
    _backward(out_ours, w.to(out_ours.dtype))
    assert ours.grad.layout.name == str(theirs.grad.layout).split(".")[1]
    np.testing.assert_allclose(ours.grad.to_dense().numpy() if ours.grad.layout is not engine.strided
                               else ours.grad.numpy(), theirs.grad.to_dense().numpy(), rtol=1e-6)


@pytest.mark.parametrize("values", [[1, 2], [True, False], [1.5, 2.0], [1j, 2]])
def test_python_values_infer_dtype_as_tensor(values):
    _same(sparse.sparse_coo_tensor([[0, 2]], values, (3,)), torch.sparse_coo_tensor([[0, 2]], values, (3,)))


@pytest.mark.parametrize("layout", ["csr", "csc", "bsr"])
def test_compressed_transpose_swaps_layout(layout):
    ours, theirs = _coo(17, shape=(4, 6), nnz=8, coalesce=True)
    convert = {"csr": lambda t: t.to_sparse_csr(), "csc": lambda t: t.to_sparse_csc(),
               "bsr": lambda t: t.to_sparse_bsr((2, 3))}[layout]
    _same(convert(ours).t(), convert(theirs).t())
    _same(convert(ours).transpose(0, 1), convert(theirs).transpose(0, 1))


@pytest.mark.parametrize("offsets, shape", [([0, -1], (3, 3)), ([1, 2], (4, 4)), ([0, -2], (4, 2)), ([-1], (5, 3))])
@pytest.mark.parametrize("layout", [None, torch.sparse_csr])
def test_spdiags(offsets, shape, layout):
    diagonals = torch.tensor(np.random.default_rng(18).standard_normal((len(offsets), shape[1])), dtype=torch.float32)
    diagonals[0, 1] = 0  # stored as torch stores it
    ours_layout = None if layout is None else engine.sparse_csr
    _same(sparse.spdiags(_dense(diagonals), engine.tensor(offsets), shape, layout=ours_layout),
          torch.sparse.spdiags(diagonals, torch.tensor(offsets), shape, layout=layout))


def test_resize_and_invariant_errors():
    ours, theirs = _coo(19, shape=(4, 3, 2), nnz=5)
    assert_same_error(lambda: ours.sparse_resize_((3, 2, 1), 3, 0), lambda: theirs.sparse_resize_((3, 2, 1), 3, 0))
    for make_ours, make_theirs in ((sparse.sparse_csr_tensor, torch.sparse_csr_tensor),
                                   (sparse.sparse_csc_tensor, torch.sparse_csc_tensor)):
        args = ([0, 1, 2], [0, 3], [1.0, 2.0], (2, 2))
        assert_same_error(lambda: make_ours(*(engine.tensor(a) for a in args[:3]), args[3], check_invariants=True),
                          lambda: make_theirs(*(torch.tensor(a) for a in args[:3]), args[3], check_invariants=True))


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -1])
@pytest.mark.parametrize("nnz", [0, 5])
def test_stack(dim, nnz):
    ours, theirs = _coo(20, shape=(3, 2), nnz=nnz, dense=(2,), coalesce=True)
    other_ours, other_theirs = _coo(21, shape=(3, 2), nnz=4, dense=(2,))
    _same(sparse.stack([ours, other_ours], dim), torch.stack([theirs, other_theirs], dim))


def test_new_paths_on_cuda(cuda):
    """The values ops, scalar casts, bool densifying and block conversion run on the device's arrays."""
    ours, theirs = _coo(16, dtype=torch.int64)
    g = ours.to("cuda")
    _same((g * 2.5).cpu(), theirs * 2.5)
    _same(g.abs().cpu(), theirs.abs())
    _same(g.sum(0).cpu(), theirs.sum(0))
    _same(sparse.softmax(g.double(), 1).cpu(), torch.sparse.softmax(theirs.double(), 1))
    _same(g.coalesce().to_sparse_bsr((2, 1)).cpu(), theirs.coalesce().to_sparse_bsr((2, 1)))
    b_ours, b_theirs = _coo(16, dtype=torch.bool)
    _same(b_ours.to("cuda").to_dense().cpu(), b_theirs.to_dense())


FUNCTION_FORMS = {
    "stack": lambda m, s, d: m.stack([s, s * 2]), "cat": lambda m, s, d: m.cat([s, s], 1),
    "abs": lambda m, s, d: m.abs(-s), "sqrt": lambda m, s, d: m.sqrt(m.abs(s)), "neg": lambda m, s, d: m.neg(s),
    "add": lambda m, s, d: m.add(s, s), "add_dense": lambda m, s, d: m.add(d.mT, s),
    "sub_alpha": lambda m, s, d: m.sub(s, s * 3, alpha=2), "mul": lambda m, s, d: m.mul(s, s),
    "mul_dense_first": lambda m, s, d: m.mul(d.mT, s), "mul_scalar": lambda m, s, d: m.mul(s, 2.5),
    "div": lambda m, s, d: m.div(s, 2), "mm": lambda m, s, d: m.mm(s, d), "dense_mm": lambda m, s, d: m.mm(d, s),
    "dense_matmul": lambda m, s, d: d @ s,
}


@pytest.mark.parametrize("name", sorted(FUNCTION_FORMS))
def test_function_forms_reach_the_sparse_layout(name):
    """engine.stack/cat/abs/add/mul/mm(...) of sparse tensors as torch's (stack gave a broken strided tensor, the
    others raised)."""
    ours, theirs = _coo(3, shape=(5, 5), coalesce=True, dtype=torch.float64)
    dense = np.random.default_rng(4).standard_normal((5, 5))
    got = FUNCTION_FORMS[name](engine, ours, engine.tensor(dense))
    _same(got, FUNCTION_FORMS[name](torch, theirs, torch.tensor(dense)))


def test_dense_times_sparse_gradient():
    ours, theirs = _coo(5, shape=(3, 4), coalesce=True, dtype=torch.float64)
    x = np.random.default_rng(6).standard_normal((2, 3))
    ex, tx = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (engine.mm(ex, ours) ** 2).sum().backward()
    (torch.mm(tx, theirs) ** 2).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
