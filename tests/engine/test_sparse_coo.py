"""engine.sparse COO tensors against torch's on the same data: construction (hybrid, duplicates), coalesce,
to_dense, the layout queries, repr, arithmetic, products, reductions, softmax, index ops, dtype moves, pickling,
and one test per error message."""
import pickle

import numpy as np
import pytest
import torch
from op_check import assert_same_error

import engine
import engine.sparse as sparse

warnings_off = pytest.mark.filterwarnings("ignore::UserWarning")
pytestmark = warnings_off


def _data(seed, shape=(5, 7), nnz=9, dense=(), dtype=np.float32):
    """Indices with duplicates (nnz draws over a few positions) and values with ``dense`` trailing dims."""
    rng = np.random.default_rng(seed)
    indices = np.stack([rng.integers(0, n, nnz) for n in shape])
    values = rng.standard_normal((nnz,) + dense).astype(dtype)
    return indices, values, tuple(shape) + tuple(dense)


def _pair(seed, **kw):
    indices, values, size = _data(seed, **kw)
    ours = sparse.sparse_coo_tensor(engine.tensor(indices), engine.tensor(values), size)
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size)
    return ours, theirs


def _same(ours, theirs, tol=1e-6, flag=True):
    """Same layout, shape, coalesced-ness (unless ``flag`` is False: torch's flag on empty results varies by
    kernel), and (coalesced) indices and values, and dense form."""
    assert ours.layout.name == str(theirs.layout).split(".")[1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    if theirs.layout == torch.sparse_coo:
        assert ours.is_coalesced() == theirs.is_coalesced() or not flag
        o, t = ours.detach().coalesce(), theirs.detach().coalesce()
        np.testing.assert_array_equal(o.indices().numpy(), t.indices().numpy())
        np.testing.assert_allclose(o.values().numpy(), t.values().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(ours.detach().to_dense().numpy(), theirs.detach().to_dense().numpy(), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("kw", [dict(), dict(shape=(4, 3, 5), nnz=11), dict(dense=(2,)), dict(dense=(2, 3), nnz=6),
                                dict(nnz=0), dict(dtype=np.float64)])
def test_construct_coalesce_to_dense(kw):
    ours, theirs = _pair(1, **kw)
    assert ours.is_sparse and not ours.is_sparse_csr and ours.layout is engine.sparse_coo
    assert ours.sparse_dim() == theirs.sparse_dim() and ours.dense_dim() == theirs.dense_dim()
    assert ours._nnz() == theirs._nnz() and ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
    _same(ours, theirs)
    _same(ours.coalesce(), theirs.coalesce())
    merged = ours.coalesce()
    assert merged.coalesce() is merged  # a coalesced tensor's coalesce is itself


def test_size_inferred_and_is_coalesced_flag():
    indices, values, _ = _data(2)
    ours = sparse.sparse_coo_tensor(engine.tensor(indices), engine.tensor(values))
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values))
    assert tuple(ours.shape) == tuple(theirs.shape)
    flagged = sparse.sparse_coo_tensor(engine.tensor([[0, 2]]), engine.tensor([1.0, 2.0]), (3,), is_coalesced=True)
    assert flagged.is_coalesced()


def test_to_sparse_of_dense_and_back():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5, 3)).astype(np.float32)
    x[rng.random((4, 5)) < 0.5] = 0
    _same(engine.tensor(x).to_sparse(), torch.tensor(x).to_sparse())
    for sparse_dim in (1, 2, 3):
        _same(engine.tensor(x).to_sparse(sparse_dim), torch.tensor(x).to_sparse(sparse_dim))


def test_repr_matches_torch():
    ours, theirs = _pair(4, shape=(2, 3), nnz=4)
    assert repr(ours) == repr(theirs).replace("torch.", "engine.")
    o64, t64 = ours.double(), theirs.double()
    assert repr(o64) == repr(t64).replace("torch.", "engine.")
    empty = sparse.sparse_coo_tensor(engine.zeros(1, 0, dtype=engine.int64), engine.zeros(0), (3,))
    assert repr(empty) == repr(torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0), (3,))) \
        .replace("torch.", "engine.")


def test_scalar_and_unary_arithmetic():
    ours, theirs = _pair(5, dense=(2,))
    _same(ours * 2.5, theirs * 2.5)
    _same(3 * ours, 3 * theirs)
    _same(ours / 4, theirs / 4)
    _same(-ours, -theirs)
    _same(ours.mul(engine.tensor(2.0)), theirs.mul(torch.tensor(2.0)))


@pytest.mark.parametrize("coalesce", [False, True])
def test_sparse_plus_sparse_merges_as_torch(coalesce):
    a, ta = _pair(6, dense=(2,))
    b, tb = _pair(7, dense=(2,))
    if coalesce:
        a, ta, b, tb = a.coalesce(), ta.coalesce(), b.coalesce(), tb.coalesce()
    for ours, theirs in ((a + b, ta + tb), (a - b, ta - tb), (a.add(b), ta.add(tb))):
        np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
        _same(ours, theirs)


def test_dense_plus_sparse_is_dense():
    a, ta = _pair(8)
    d = np.random.default_rng(8).standard_normal((5, 7)).astype(np.float32)
    ours, theirs = engine.tensor(d) + a, torch.tensor(d) + ta
    assert ours.layout is engine.strided
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    np.testing.assert_allclose((engine.tensor(d) - a).numpy(), (torch.tensor(d) - ta).numpy(), rtol=1e-6)


def test_elementwise_products():
    """torch keeps explicit zeros when multiplying uncoalesced operands: the dense forms agree there."""
    a, ta = _pair(9)
    b, tb = _pair(10)
    _same(a.coalesce() * b.coalesce(), ta.coalesce() * tb.coalesce())
    np.testing.assert_allclose((a * b).to_dense().numpy(), (ta * tb).to_dense().numpy(), rtol=1e-6)
    d = np.random.default_rng(9).standard_normal((5, 7)).astype(np.float32)
    _same(a * engine.tensor(d), ta * torch.tensor(d))


def test_transpose():
    a, ta = _pair(11, shape=(4, 3, 5))
    _same(a.transpose(0, 2), ta.transpose(0, 2))
    b, tb = _pair(12)
    _same(b.t(), tb.t())


@pytest.mark.parametrize("fn", ["mm", "matmul", "sparse.mm", "smm", "hspmm", "spmm", "@"])
def test_sparse_times_dense(fn):
    a, ta = _pair(13)
    d = np.random.default_rng(13).standard_normal((7, 3)).astype(np.float32)
    calls = {"mm": lambda s, x, lib: s.mm(x), "matmul": lambda s, x, lib: s.matmul(x),
             "sparse.mm": lambda s, x, lib: lib.sparse.mm(s, x), "@": lambda s, x, lib: s @ x,
             "smm": lambda s, x, lib: (sparse if lib is engine else torch).smm(s, x),
             "hspmm": lambda s, x, lib: (sparse if lib is engine else torch).hspmm(s, x),
             "spmm": lambda s, x, lib: (sparse if lib is engine else torch).spmm(s, x)}
    ours = calls[fn](a, engine.tensor(d), engine)
    theirs = calls[fn](ta, torch.tensor(d), torch)
    if theirs.layout == torch.sparse_coo:
        _same(ours, theirs, 1e-5)
    else:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
    vec = np.arange(7, dtype=np.float32)
    np.testing.assert_allclose((a @ engine.tensor(vec)).numpy(), (ta @ torch.tensor(vec)).numpy(), rtol=1e-5)


def test_sparse_times_sparse_and_addmm():
    a, ta = _pair(14)
    b, tb = _pair(15, shape=(7, 4))
    _same(sparse.mm(a, b), torch.sparse.mm(ta, tb), 1e-5)
    rng = np.random.default_rng(14)
    c, d = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32)
    ours = sparse.addmm(engine.tensor(c), a, engine.tensor(d), beta=0.5, alpha=2.0)
    theirs = torch.sparse.addmm(torch.tensor(c), ta, torch.tensor(d), beta=0.5, alpha=2.0)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [None, 0, 1, 2, (0, 1), (1, 2), (0, 2)])
def test_sum(dim):
    a, ta = _pair(16, dense=(3,))
    ours = sparse.sum(a) if dim is None else sparse.sum(a, dim)
    theirs = torch.sparse.sum(ta) if dim is None else torch.sparse.sum(ta, dim)
    if theirs.layout == torch.sparse_coo:
        _same(ours, theirs, 1e-5)
    else:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
    assert abs(a.sum().item() - ta.sum().item()) < 1e-4


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_softmax_over_specified_entries(log, dim):
    a, ta = _pair(17, dense=(2,))
    fn = "log_softmax" if log else "softmax"
    _same(getattr(sparse, fn)(a, dim), getattr(torch.sparse, fn)(ta, dim), 1e-5)


def test_index_select_narrow_cat():
    a, ta = _pair(18, dense=(2,))
    for dim, idx in ((0, [3, 0, 3, 4]), (1, [6, 0, 2]), (2, [1, 1, 0])):
        _same(a.index_select(dim, engine.tensor(idx)), ta.index_select(dim, torch.tensor(idx)))
        _same(a.narrow_copy(dim, 1, 1), ta.narrow_copy(dim, 1, 1), flag=False)
    b, tb = _pair(19, dense=(2,))
    for dim in (0, 1, 2):
        _same(sparse.cat([a, b], dim), torch.cat([ta, tb], dim))


def test_sparse_mask():
    a, ta = _pair(20)
    d = np.random.default_rng(20).standard_normal((5, 7)).astype(np.float32)
    _same(engine.tensor(d).sparse_mask(a), torch.tensor(d).sparse_mask(ta.coalesce()))


def test_clone_detach_to_dtype_requires_grad():
    a, ta = _pair(21)
    _same(a.clone(), ta.clone())
    c = a.to(engine.float64)
    assert c.dtype is engine.float64 and c.is_sparse
    _same(c, ta.to(torch.float64))
    leaf = a.detach().requires_grad_()
    assert leaf.requires_grad and leaf.is_leaf and not leaf.detach().requires_grad
    assert a.to("cpu") is a and a.device.type == "cpu"


def test_pickle_round_trip():
    a, ta = _pair(22, dense=(2,))
    back = pickle.loads(pickle.dumps(a))
    _same(back, ta)
    assert back.is_coalesced() == a.is_coalesced()


def test_on_cuda(cuda):
    a, ta = _pair(23, dense=(2,))
    g = a.to("cuda")
    assert g.device.type == "cuda" and g.is_sparse
    _same((g.coalesce() * 2).cpu(), ta.coalesce() * 2)
    _same((g + g).cpu(), ta + ta)
    assert abs(sparse.sum(g).item() - torch.sparse.sum(ta).item()) < 1e-4
    np.testing.assert_allclose(g.to_dense().cpu().numpy(), ta.to_dense().numpy(), rtol=1e-6)


# ---- errors, with torch's messages ------------------------------------------------------------------------
def test_error_values_of_uncoalesced():
    a, ta = _pair(30)
    assert_same_error(a.values, ta.values)


def test_error_indices_of_uncoalesced():
    a, ta = _pair(31)
    assert_same_error(a.indices, ta.indices)


def test_error_nnz_mismatch():
    assert_same_error(lambda: sparse.sparse_coo_tensor(engine.tensor([[0, 1]]), engine.tensor([1.0]), (2,)),
            lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1]]), torch.tensor([1.0]), (2,)))


def test_error_size_length():
    assert_same_error(lambda: sparse.sparse_coo_tensor(engine.tensor([[0, 1], [1, 0]]), engine.tensor([1.0, 2.0]), (2,)),
            lambda: torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0]), (2,)))


def test_error_negative_index():
    assert_same_error(lambda: sparse.sparse_coo_tensor(engine.tensor([[0, -1]]), engine.tensor([1.0, 2.0]), (2,),
                                             check_invariants=True),
            lambda: torch.sparse_coo_tensor(torch.tensor([[0, -1]]), torch.tensor([1.0, 2.0]), (2,),
                                            check_invariants=True))


def test_error_index_past_size():
    assert_same_error(lambda: sparse.sparse_coo_tensor(engine.tensor([[0, 2]]), engine.tensor([1.0, 2.0]), (2,),
                                             check_invariants=True),
            lambda: torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([1.0, 2.0]), (2,),
                                            check_invariants=True))


def test_error_mm_sizes():
    a, ta = _pair(32)
    assert_same_error(lambda: sparse.mm(a, engine.ones(4, 2)), lambda: torch.sparse.mm(ta, torch.ones(4, 2)))


def test_error_add_sizes():
    a, ta = _pair(33)
    b, tb = _pair(33, shape=(5, 8))
    assert_same_error(lambda: a + b, lambda: ta + tb)


def test_error_sparse_plus_dense():
    a, ta = _pair(34)
    assert_same_error(lambda: a + engine.ones(5, 7), lambda: ta + torch.ones(5, 7))


def test_error_to_sparse_dim_range():
    assert_same_error(lambda: engine.ones(2, 3).to_sparse(3), lambda: torch.ones(2, 3).to_sparse(3))


def test_error_crow_indices_of_coo():
    a, ta = _pair(35)
    assert_same_error(a.crow_indices, ta.crow_indices)


def _checkpoints_hold_sparse():
    from engine.serialization import unpickler
    return hasattr(unpickler, "_rebuild_sparse_tensor")


@pytest.mark.skipif(not _checkpoints_hold_sparse(), reason="engine.serialization writes no sparse tensors yet")
def test_save_load_round_trip_and_torch_reads_it(tmp_path):
    a, ta = _pair(24, dense=(2,))
    c = engine.tensor(np.eye(3, dtype=np.float32)).to_sparse_csr()
    engine.save({"a": a, "merged": a.coalesce(), "csr": c}, tmp_path / "ours.pt")
    back = engine.load(tmp_path / "ours.pt")
    _same(back["a"], ta)
    _same(back["merged"], ta.coalesce())
    theirs = torch.load(tmp_path / "ours.pt", weights_only=True)
    _same(a, theirs["a"])
    torch.save({"a": ta, "csr": theirs["csr"]}, tmp_path / "theirs.pt")
    loaded = engine.load(tmp_path / "theirs.pt")
    _same(loaded["a"], ta)
    np.testing.assert_array_equal(loaded["csr"].to_dense().numpy(), np.eye(3, dtype=np.float32))


def test_invariant_checks_by_context():
    with sparse.check_sparse_tensor_invariants():
        with pytest.raises(RuntimeError, match="found negative index -1 for dim 0"):
            sparse.sparse_coo_tensor(engine.tensor([[0, -1]]), engine.tensor([1.0, 2.0]), (2,))
    sparse.sparse_coo_tensor(engine.tensor([[0, -1]]), engine.tensor([1.0, 2.0]), (2,))  # unchecked by default


def test_sparse_resize_grows_dims():
    a, ta = _pair(25)
    _same(a.sparse_resize_((6, 9), 2, 0), ta.sparse_resize_((6, 9), 2, 0))
