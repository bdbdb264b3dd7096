"""engine.sparse CSR and CSC tensors against torch's: construction, conversions from dense and COO and back,
the index accessors, repr, products and sums with dense tensors, scalar products, sampled_addmm, to_dense's
gradient, and one test per error message."""

import numpy as np
import pytest
import torch
from op_check import assert_same_error

import engine
import engine.sparse as sparse
from engine import _layout

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _dense(seed, shape=(5, 7)):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    x[rng.random(shape) < 0.6] = 0
    return x


def _same(ours, theirs, tol=1e-6):
    assert ours.layout.name == str(theirs.layout).split(".")[1] and tuple(ours.shape) == tuple(theirs.shape)
    if theirs.layout in (torch.sparse_csr, torch.sparse_bsr):
        np.testing.assert_array_equal(ours.crow_indices().numpy(), theirs.crow_indices().numpy())
        np.testing.assert_array_equal(ours.col_indices().numpy(), theirs.col_indices().numpy())
    elif theirs.layout in (torch.sparse_csc, torch.sparse_bsc):
        np.testing.assert_array_equal(ours.ccol_indices().numpy(), theirs.ccol_indices().numpy())
        np.testing.assert_array_equal(ours.row_indices().numpy(), theirs.row_indices().numpy())
    if theirs.layout != torch.strided:
        np.testing.assert_allclose(ours.values().detach().numpy(), theirs.values().detach().numpy(), rtol=tol)
    np.testing.assert_allclose(ours.detach().to_dense().numpy(), theirs.detach().to_dense().numpy(), rtol=tol,
                               atol=tol)


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_from_dense_and_back(layout):
    x = _dense(1)
    ours, theirs = getattr(engine.tensor(x), f"to_sparse_{layout}")(), getattr(torch.tensor(x), f"to_sparse_{layout}")()
    _same(ours, theirs)
    assert ours.layout is getattr(_layout, f"sparse_{layout}") and ours.is_sparse_csr == (layout == "csr")
    assert not ours.is_sparse and ours._nnz() == theirs._nnz()
    coo, tcoo = ours.to_sparse(), theirs.to_sparse()
    assert coo.is_coalesced() == tcoo.is_coalesced()
    np.testing.assert_array_equal(coo._indices().numpy(), tcoo._indices().numpy())
    _same(ours.to_sparse_csr(), theirs.to_sparse_csr())
    _same(ours.to_sparse_csc(), theirs.to_sparse_csc())


def test_from_uncoalesced_coo():
    rng = np.random.default_rng(2)
    indices, values = np.stack([rng.integers(0, 4, 9), rng.integers(0, 6, 9)]), rng.standard_normal(9).astype(
        np.float32)
    ours = sparse.sparse_coo_tensor(engine.tensor(indices), engine.tensor(values), (4, 6))
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), (4, 6))
    _same(ours.to_sparse_csr(), theirs.to_sparse_csr())
    _same(ours.to_sparse_csc(), theirs.to_sparse_csc())


def test_constructors_and_inferred_size():
    crow, col, values = [0, 2, 2, 3], [1, 4, 0], [1.0, 2.0, 3.0]
    _same(sparse.sparse_csr_tensor(engine.tensor(crow), engine.tensor(col), engine.tensor(values), (3, 5)),
          torch.sparse_csr_tensor(torch.tensor(crow), torch.tensor(col), torch.tensor(values), (3, 5)))
    _same(sparse.sparse_csr_tensor(engine.tensor(crow), engine.tensor(col), engine.tensor(values)),
          torch.sparse_csr_tensor(torch.tensor(crow), torch.tensor(col), torch.tensor(values)))
    _same(sparse.sparse_csc_tensor(engine.tensor(crow), engine.tensor(col), engine.tensor(values), (5, 3)),
          torch.sparse_csc_tensor(torch.tensor(crow), torch.tensor(col), torch.tensor(values), (5, 3)))
    _same(sparse.sparse_compressed_tensor(engine.tensor(crow), engine.tensor(col), engine.tensor(values), (3, 5),
                                          layout=_layout.sparse_csr),
          torch.sparse_compressed_tensor(torch.tensor(crow), torch.tensor(col), torch.tensor(values), (3, 5),
                                         layout=torch.sparse_csr))


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_repr(layout):
    x = _dense(3, (2, 3))
    ours, theirs = getattr(engine.tensor(x), f"to_sparse_{layout}")(), getattr(torch.tensor(x), f"to_sparse_{layout}")()
    assert repr(ours) == repr(theirs).replace("torch.", "engine.")


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_products_and_sums_with_dense(layout):
    x, d, e = _dense(4), np.random.default_rng(4).standard_normal((7, 3)).astype(np.float32), _dense(5)
    ours, theirs = getattr(engine.tensor(x), f"to_sparse_{layout}")(), getattr(torch.tensor(x), f"to_sparse_{layout}")()
    np.testing.assert_allclose((ours @ engine.tensor(d)).numpy(), (theirs @ torch.tensor(d)).numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(sparse.mm(ours, engine.tensor(d)).numpy(), torch.sparse.mm(theirs, torch.tensor(d))
                               .numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((ours + engine.tensor(e)).numpy(), (theirs + torch.tensor(e)).numpy(), rtol=1e-6)
    np.testing.assert_allclose((engine.tensor(e) + ours).numpy(), (torch.tensor(e) + theirs).numpy(), rtol=1e-6)
    _same(ours * 2.5, theirs * 2.5)


def test_sampled_addmm():
    x = _dense(6, (4, 5))
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32)
    ours = sparse.sampled_addmm(engine.tensor(x).to_sparse_csr(), engine.tensor(a), engine.tensor(b), beta=0.5,
                                alpha=2.0)
    theirs = torch.sparse.sampled_addmm(torch.tensor(x).to_sparse_csr(), torch.tensor(a), torch.tensor(b), beta=0.5,
                                        alpha=2.0)
    _same(ours, theirs, 1e-5)


def test_to_dense_gradient():
    x = _dense(7)
    ours = engine.tensor(x).to_sparse_csr().detach().requires_grad_()
    theirs = torch.tensor(x).to_sparse_csr().detach().requires_grad_()
    w = np.random.default_rng(7).standard_normal(x.shape).astype(np.float32)
    (ours.to_dense() * engine.tensor(w)).sum().backward()
    (theirs.to_dense() * torch.tensor(w)).sum().backward()
    _same(ours.grad, theirs.grad)


def test_error_indices_of_csr():
    x = _dense(8)
    assert_same_error(engine.tensor(x).to_sparse_csr().indices, torch.tensor(x).to_sparse_csr().indices)


def test_error_crow_indices_of_csc():
    x = _dense(9)
    assert_same_error(engine.tensor(x).to_sparse_csc().crow_indices, torch.tensor(x).to_sparse_csc().crow_indices)


def test_error_ccol_indices_of_csr():
    x = _dense(10)
    assert_same_error(engine.tensor(x).to_sparse_csr().ccol_indices, torch.tensor(x).to_sparse_csr().ccol_indices)


def _checked(lib, crow, col, values, size):
    mod = sparse if lib is engine else torch
    return lambda: mod.sparse_csr_tensor(lib.tensor(crow), lib.tensor(col), lib.tensor(values), size,
                                         check_invariants=True)


def test_error_crow_length():
    assert_same_error(_checked(engine, [0, 1, 2], [0, 1], [1.0, 2.0], (3, 3)), _checked(torch, [0, 1, 2], [0, 1], [1.0, 2.0],
                                                                              (3, 3)))


def test_error_col_length():
    assert_same_error(_checked(engine, [0, 1, 2], [0, 1, 1], [1.0, 2.0], (2, 3)),
            _checked(torch, [0, 1, 2], [0, 1, 1], [1.0, 2.0], (2, 3)))


def test_error_last_crow_is_nnz():
    assert_same_error(_checked(engine, [0, 1, 3], [0, 1], [1.0, 2.0], (2, 3)), _checked(torch, [0, 1, 3], [0, 1], [1.0, 2.0],
                                                                              (2, 3)))


@pytest.mark.parametrize("name", ["indices", "values", "coalesce", "is_coalesced", "crow_indices", "col_indices",
                                  "ccol_indices", "row_indices"])
def test_error_sparse_accessors_of_dense(name):
    assert_same_error(getattr(engine.ones(2, 3), name), getattr(torch.ones(2, 3), name))


def test_error_coalesce_of_csr():
    x = _dense(11)
    assert_same_error(engine.tensor(x).to_sparse_csr().coalesce, torch.tensor(x).to_sparse_csr().coalesce)


def test_dense_queries_and_copies():
    x = _dense(12)
    assert engine.tensor(x).sparse_dim() == 0 and engine.tensor(x).dense_dim() == 2
    ours, theirs = engine.tensor(x).to_sparse_csr(), torch.tensor(x).to_sparse_csr()
    np.testing.assert_array_equal(sparse.crow_indices_copy(ours).numpy(), torch.crow_indices_copy(theirs).numpy())
    np.testing.assert_array_equal(sparse.values_copy(ours).numpy(), torch.values_copy(theirs).numpy())


@pytest.mark.parametrize("layout,blocksize", [("bsr", (2, 2)), ("bsc", (2, 3)), ("bsr", (1, 3))])
def test_block_layouts(layout, blocksize):
    x = _dense(13, (4, 6))
    x[:2, :3] = 0
    ours = getattr(engine.tensor(x), f"to_sparse_{layout}")(blocksize)
    theirs = getattr(torch.tensor(x), f"to_sparse_{layout}")(blocksize)
    assert ours.layout is getattr(_layout, f"sparse_{layout}") and ours._nnz() == theirs._nnz()
    _same(ours, theirs)
    assert repr(ours) == repr(theirs).replace("torch.", "engine.")
    d = np.random.default_rng(13).standard_normal((6, 2)).astype(np.float32)
    expected = torch.tensor(x) @ torch.tensor(d)  # torch multiplies square-block BSR only
    np.testing.assert_allclose((ours @ engine.tensor(d)).numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)
    make = getattr(sparse, f"sparse_{layout}_tensor")
    args = (ours.crow_indices(), ours.col_indices()) if layout == "bsr" else (ours.ccol_indices(), ours.row_indices())
    _same(make(*args, ours.values(), (4, 6)), theirs)
