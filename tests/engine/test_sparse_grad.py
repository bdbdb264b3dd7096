"""Gradients of and through engine.sparse tensors against torch's: to_dense, values, sparse_coo_tensor in its
values, sparse.mm (both operands), sparse.sum, softmax, coalesce, scalar products and sums; Embedding(sparse=True)
and EmbeddingBag(sparse=True) giving sparse COO grads, their accumulation, SGD/SparseAdam/Adagrad steps on them,
the other optimizers' refusals, and clip_grad_norm_."""

import functools

import numpy as np
import pytest
import torch
from op_check import assert_same_error

import engine
import engine.sparse as sparse

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _data(seed, shape=(5, 7), nnz=9, dense=()):
    rng = np.random.default_rng(seed)
    indices = np.stack([rng.integers(0, n, nnz) for n in shape])
    return indices, rng.standard_normal((nnz,) + dense).astype(np.float32), tuple(shape) + tuple(dense)


def _leaves(seed, **kw):
    indices, values, size = _data(seed, **kw)
    ours = sparse.sparse_coo_tensor(engine.tensor(indices), engine.tensor(values), size, requires_grad=True)
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), size, requires_grad=True)
    return ours, theirs


def _weights(seed, shape):
    return np.random.default_rng(seed + 100).standard_normal(shape).astype(np.float32)


def _same_grad(ours, theirs, tol=1e-5):
    """Both sparse (same coalesced-ness, indices and values as given) or both dense, and equal."""
    assert ours.is_sparse == theirs.is_sparse
    if theirs.is_sparse:
        assert ours.is_coalesced() == theirs.is_coalesced()
        np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
        np.testing.assert_allclose(ours._values().numpy(), theirs._values().numpy(), rtol=tol, atol=tol)
    else:
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)


def test_to_dense_gradient_is_masked_sparse():
    for kw in (dict(), dict(dense=(3,)), dict(shape=(3, 4, 2), nnz=7)):
        a, ta = _leaves(1, **kw)
        w = _weights(1, ta.shape)
        (a.to_dense() * engine.tensor(w)).sum().backward()
        (ta.to_dense() * torch.tensor(w)).sum().backward()
        _same_grad(a.grad, ta.grad)


def test_values_and_coalesce_gradients():
    a, ta = _leaves(2, dense=(2,))
    assert not a._values().requires_grad and not ta._values().requires_grad  # torch's _values() has no gradient
    b, tb = _leaves(3)
    c, tc = b.coalesce(), tb.coalesce()
    wc = _weights(3, (tc._nnz(),))
    (c.values() * engine.tensor(wc)).sum().backward()
    (tc.values() * torch.tensor(wc)).sum().backward()
    _same_grad(b.grad, tb.grad)


def test_constructor_differentiable_in_values():
    indices, values, size = _data(4, dense=(2,))
    v = engine.tensor(values, requires_grad=True)
    tv = torch.tensor(values, requires_grad=True)
    s = sparse.sparse_coo_tensor(engine.tensor(indices), v, size)
    ts = torch.sparse_coo_tensor(torch.tensor(indices), tv, size)
    assert s.grad_fn is not None and not s.is_leaf
    w = _weights(4, size)
    (s.to_dense() * engine.tensor(w)).sum().backward()
    (ts.to_dense() * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-6)


def test_sparse_mm_gradients_to_both_operands():
    a, ta = _leaves(5)
    d = _weights(5, (7, 3))
    x, tx = engine.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    w = _weights(6, (5, 3))
    (sparse.mm(a, x) * engine.tensor(w)).sum().backward()
    (torch.sparse.mm(ta, tx) * torch.tensor(w)).sum().backward()
    _same_grad(a.grad, ta.grad)
    _same_grad(x.grad, tx.grad)


def test_addmm_gradients():
    a, ta = _leaves(7)
    c, d = _weights(7, (5, 3)), _weights(8, (7, 3))
    ours = [engine.tensor(c, requires_grad=True), engine.tensor(d, requires_grad=True)]
    theirs = [torch.tensor(c, requires_grad=True), torch.tensor(d, requires_grad=True)]
    sparse.addmm(ours[0], a, ours[1], beta=0.5, alpha=1.5).pow(2).sum().backward()
    torch.sparse.addmm(theirs[0], ta, theirs[1], beta=0.5, alpha=1.5).pow(2).sum().backward()
    _same_grad(a.grad, ta.grad, 1e-4)
    for o, t in zip(ours, theirs):
        _same_grad(o.grad, t.grad, 1e-4)


@pytest.mark.parametrize("dim", [None, 0, 1, 2, (0, 2)])
def test_sparse_sum_gradient(dim):
    a, ta = _leaves(9, dense=(2,))
    ours = sparse.sum(a) if dim is None else sparse.sum(a, dim)
    theirs = torch.sparse.sum(ta) if dim is None else torch.sparse.sum(ta, dim)
    w = _weights(9, tuple(theirs.shape))
    (ours.to_dense() if ours.is_sparse else ours).mul(engine.tensor(w)).sum().backward()
    (theirs.to_dense() if theirs.is_sparse else theirs).mul(torch.tensor(w)).sum().backward()
    _same_grad(a.grad, ta.grad)


@pytest.mark.parametrize("log", [False, True])
def test_softmax_gradient(log):
    a, ta = _leaves(10, dense=(2,))
    fn = "log_softmax" if log else "softmax"
    w = _weights(10, tuple(ta.shape))
    (getattr(sparse, fn)(a, 1).to_dense() * engine.tensor(w)).sum().backward()
    (getattr(torch.sparse, fn)(ta, 1).to_dense() * torch.tensor(w)).sum().backward()
    _same_grad(a.grad, ta.grad)


def test_scalar_products_and_sparse_sums_gradients():
    a, ta = _leaves(11)
    b, tb = _leaves(12)
    w = _weights(11, (5, 7))
    ((a * 2 - b / 4).to_dense() * engine.tensor(w)).sum().backward()
    ((ta * 2 - tb / 4).to_dense() * torch.tensor(w)).sum().backward()
    _same_grad(a.grad, ta.grad)
    _same_grad(b.grad, tb.grad)


def test_dense_mm_of_sparse_gives_dense_grad():
    """``engine.mm``/``@`` of a sparse leaf: torch's gradient of the sparse operand is dense there."""
    a, ta = _leaves(13)
    d = _weights(13, (7, 2))
    (a @ engine.tensor(d)).sum().backward()
    (ta @ torch.tensor(d)).sum().backward()
    np.testing.assert_allclose(a.grad.to_dense().numpy(), ta.grad.to_dense().numpy(), rtol=1e-5)


# ---- embeddings with sparse gradients -----------------------------------------------------------------------
def _embeddings(kwargs, num=11, dim=4, bag=False):
    w = _weights(20, (num, dim))
    ours = (engine.nn.EmbeddingBag if bag else engine.nn.Embedding)(num, dim, sparse=True, **kwargs)
    theirs = (torch.nn.EmbeddingBag if bag else torch.nn.Embedding)(num, dim, sparse=True, **kwargs)
    with engine.no_grad():
        ours.weight.copy_(engine.tensor(w))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
    return ours, theirs


@pytest.mark.parametrize("kwargs", [dict(), dict(padding_idx=2)])
def test_embedding_sparse_grad_and_accumulation(kwargs):
    ours, theirs = _embeddings(kwargs)
    rng = np.random.default_rng(21)
    for _ in range(2):  # the second backward accumulates into the sparse .grad as torch does
        index = rng.integers(0, 7, (3, 4))
        w = _weights(int(index.sum()), (3, 4, 4))
        (ours(engine.tensor(index)) * engine.tensor(w)).sum().backward()
        (theirs(torch.tensor(index)) * torch.tensor(w)).sum().backward()
        _same_grad(ours.weight.grad, theirs.weight.grad)
    f_ours = engine.nn.functional.embedding(engine.tensor(index), ours.weight, sparse=True)
    assert f_ours.requires_grad


@pytest.mark.parametrize("kwargs", [dict(mode="sum"), dict(mode="mean", padding_idx=1)])
def test_embedding_bag_sparse_grad(kwargs):
    ours, theirs = _embeddings(kwargs, bag=True)
    index, offsets = [1, 2, 4, 1, 5, 0, 2], [0, 3, 3]
    w = _weights(22, (3, 4))
    (ours(engine.tensor(index), engine.tensor(offsets)) * engine.tensor(w)).sum().backward()
    (theirs(torch.tensor(index), torch.tensor(offsets)) * torch.tensor(w)).sum().backward()
    _same_grad(ours.weight.grad, theirs.weight.grad)


def test_dense_then_sparse_grad_accumulates_dense():
    ours, theirs = _embeddings({})
    for lib, module in ((engine, ours), (torch, theirs)):
        (module.weight * 2).sum().backward()
        module(lib.tensor([1, 3, 1])).sum().backward()
    _same_grad(ours.weight.grad, theirs.weight.grad)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1)), ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("SGD", dict(lr=0.1, momentum=0.8, dampening=0.3)),
    ("SparseAdam", dict(lr=0.05)), ("SparseAdam", dict(lr=0.05, betas=(0.5, 0.7), maximize=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, maximize=True)),
])
def test_optimizers_step_sparse_grads_as_torch(name, kwargs):
    ours, theirs = _embeddings(dict(padding_idx=3), num=9)
    opt_ours = getattr(engine.optim, name)(ours.parameters(), **kwargs)
    opt_theirs = getattr(torch.optim, name)(theirs.parameters(), **kwargs)
    rng = np.random.default_rng(23)
    for _ in range(3):
        index, target = rng.integers(0, 6, (2, 5)), rng.standard_normal((2, 5, 4)).astype(np.float32)
        for module, opt, lib in ((ours, opt_ours, engine), (theirs, opt_theirs, torch)):
            opt.zero_grad()
            ((module(lib.tensor(index)) - lib.tensor(target)) ** 2).sum().backward()
            (module(lib.tensor(index[:, :2])) ** 2).sum().backward()
            opt.step()
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ours.weight.detach().numpy()[6:], _weights(20, (9, 4))[6:])


def test_sparse_adam_decays_looked_up_rows_with_zero_gradient():
    ours, theirs = _embeddings({}, num=5)
    opt_ours, opt_theirs = engine.optim.SparseAdam(ours.parameters(), lr=0.1), torch.optim.SparseAdam(
        theirs.parameters(), lr=0.1)
    for step in range(3):
        for module, opt, lib in ((ours, opt_ours, engine), (theirs, opt_theirs, torch)):
            opt.zero_grad()
            index = [0, 1] if step == 0 else [0]  # row 1: looked up later with a zero gradient
            (module(lib.tensor(index)) * lib.tensor([[1.0] * 4, [2.0] * 4][:len(index)])).sum().backward()
            module(lib.tensor([1])).mul(0).sum().backward()
            opt.step()
    np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), rtol=1e-6)


def test_clip_grad_norm_with_sparse_grads():
    ours, theirs = _embeddings({})
    for lib, module in ((engine, ours), (torch, theirs)):
        module(lib.tensor([[1, 2, 1], [4, 1, 0]])).pow(2).sum().backward()
    n_ours = engine.nn.utils.clip_grad_norm_(ours.parameters(), 1.0)
    n_theirs = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
    assert abs(n_ours.item() - n_theirs.item()) < 1e-4
    _same_grad(ours.weight.grad, theirs.weight.grad)


def test_sparse_grads_on_cuda(cuda):
    ours, theirs = _embeddings({})
    ours = ours.to("cuda")
    opt_ours = engine.optim.SparseAdam(ours.parameters(), lr=0.05)
    opt_theirs = torch.optim.SparseAdam(theirs.parameters(), lr=0.05)
    for module, opt, lib, dev in ((ours, opt_ours, engine, "cuda"), (theirs, opt_theirs, torch, "cpu")):
        for _ in range(2):
            opt.zero_grad()
            module(lib.tensor([[1, 2, 1], [4, 1, 0]], device=dev)).pow(2).sum().backward()
            opt.step()
    assert ours.weight.grad.is_sparse and ours.weight.grad.device.type == "cuda"
    np.testing.assert_allclose(ours.weight.detach().cpu().numpy(), theirs.weight.detach().numpy(), rtol=1e-5)


# ---- refusals, with torch's messages ------------------------------------------------------------------------
def _sparse_grad_param(lib):
    p = lib.nn.Parameter(lib.ones(3, 2))
    p.grad = (sparse if lib is engine else torch).sparse_coo_tensor(lib.tensor([[0, 2]]), lib.ones(2, 2), (3, 2))
    return p


# errors raised in a backward pass name the node on a second line: their first lines are compared
same_error = functools.partial(assert_same_error, first_line=True)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adamax", "NAdam", "RAdam", "Adadelta", "ASGD",
                                  "Rprop"])
def test_dense_optimizers_refuse_sparse_grads(name):
    same_error(lambda: getattr(engine.optim, name)([_sparse_grad_param(engine)]).step(),
                lambda: getattr(torch.optim, name)([_sparse_grad_param(torch)]).step())


def test_sparse_adam_refuses_dense_grads():
    def run(lib):
        p = lib.nn.Parameter(lib.ones(3, 2))
        p.grad = lib.ones(3, 2)
        lib.optim.SparseAdam([p]).step()
    same_error(lambda: run(engine), lambda: run(torch))


def test_adagrad_refuses_weight_decay_with_sparse_grads():
    same_error(lambda: engine.optim.Adagrad([_sparse_grad_param(engine)], weight_decay=0.1).step(),
                lambda: torch.optim.Adagrad([_sparse_grad_param(torch)], weight_decay=0.1).step())


def test_sgd_refuses_weight_decay_with_sparse_grads():
    same_error(lambda: engine.optim.SGD([_sparse_grad_param(engine)], lr=0.1, weight_decay=0.1).step(),
                lambda: torch.optim.SGD([_sparse_grad_param(torch)], lr=0.1, weight_decay=0.1).step())


def test_embedding_refuses_scale_grad_by_freq_with_sparse():
    def run(lib):
        lib.nn.Embedding(4, 2, sparse=True, scale_grad_by_freq=True)(lib.tensor([1, 1])).sum().backward()
    same_error(lambda: run(engine), lambda: run(torch))
