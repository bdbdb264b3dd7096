"""Dropout, linear/bilinear, one_hot/embedding and the norm-based functions against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import check_op, noncontiguous

rng = np.random.default_rng(0)


def rand(*shape, low=-2.0, high=2.0, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


# ---- dropout ----------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics_and_gradient(p):
    x = engine.ones(200, 500, requires_grad=True)
    y = F.dropout(x, p)
    out = y.detach().numpy()
    zeroed = (out == 0).mean()
    assert abs(zeroed - p) < 0.01
    np.testing.assert_allclose(out[out != 0], 1 / (1 - p), rtol=1e-6)
    assert abs(out.mean() - 1) < 0.03
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out)  # grad = mask / (1 - p)


def test_dropout_reproducible_identity_and_extremes():
    x = engine.randn(50, 40)
    engine.manual_seed(7)
    a = F.dropout(x, 0.3).numpy()
    engine.manual_seed(7)
    b = F.dropout(x, 0.3).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, F.dropout(x, 0.3).numpy())
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout2d(x[None, :, :, None], 0.5, training=False) is not None
    leaf = engine.randn(5, 5, requires_grad=True)
    z = F.dropout(leaf, 1.0)
    assert not z.detach().numpy().any()
    z.sum().backward()
    assert not leaf.grad.numpy().any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


def test_dropout_inplace_on_non_leaf():
    leaf = engine.ones(100, 100, requires_grad=True)
    h = leaf * 2
    arr = h._data
    out = F.dropout(h, 0.25, inplace=True)
    assert out is h and out._data is arr
    out.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), out.detach().numpy())  # both 2 * mask / (1 - p)


@pytest.mark.parametrize("fn,shape", [("dropout2d", (8, 30, 5, 6)), ("dropout1d", (8, 30, 7)),
                                      ("dropout1d", (30, 7)), ("dropout3d", (4, 30, 2, 3, 2))])
def test_channel_dropout(fn, shape):
    engine.manual_seed(0)
    x = engine.ones(*shape, requires_grad=True)
    y = getattr(F, fn)(x, 0.4)
    out = y.detach().numpy()
    flat = out.reshape(-1, shape[-1]) if fn == "dropout1d" else out.reshape(shape[0] * shape[1], -1)
    assert (flat.min(axis=1) == flat.max(axis=1)).all()  # whole channels kept or zeroed
    assert 0.25 < (flat[:, 0] == 0).mean() < 0.55
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(engine.ones(2, 3, 4, 5))


def test_alpha_dropout_keeps_mean_and_variance():
    x = engine.randn(400, 500)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert F.alpha_dropout(x, 0.2) is x


# ---- linear -------------------------------------------------------------------------------------
@pytest.mark.parametrize("xshape", [(6, 5), (2, 3, 5), (5,), (1, 1, 4, 5)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(xshape, bias):
    x, w, b = rand(*xshape), rand(3, 5), rand(3)
    if bias:
        check_op(F.linear, TF.linear, [x, w, b])
    else:
        check_op(F.linear, TF.linear, [x, w])
    check_op(F.linear, TF.linear, [noncontiguous(rand(7, 5).astype(np.float64)), rand(4, 5).astype(np.float64)],
             rtol=1e-10)


def test_linear_errors_and_1d_weight():
    check_op(F.linear, TF.linear, [rand(4, 5), rand(5)])
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(6x5 and 4x3\)"):
        F.linear(engine.randn(2, 3, 5), engine.randn(3, 4))
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: double != float"):
        F.linear(engine.randn(2, 4).double(), engine.randn(3, 4))


def test_bilinear():
    check_op(F.bilinear, TF.bilinear, [rand(4, 3), rand(4, 5), rand(2, 3, 5), rand(2)])
    check_op(F.bilinear, TF.bilinear, [rand(2, 4, 3), rand(2, 4, 5), rand(6, 3, 5)])


# ---- one_hot and embedding -------------------------------------------------------------------------
def test_one_hot():
    t = np.array([[0, 3], [2, 1], [3, 3]], np.int64)
    for n in (-1, 6):
        check_op(lambda a: F.one_hot(a, n), lambda a: TF.one_hot(a, n), [t])
    assert F.one_hot(engine.zeros(0, dtype=engine.int64), 3).shape == (0, 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(engine.tensor([1, -1]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(engine.tensor([1, 5]), 3)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(engine.zeros(0, dtype=engine.int64))
    with pytest.raises(RuntimeError, match="only applicable to index tensor of type LongTensor"):
        F.one_hot(engine.tensor([1.0]))


@pytest.mark.parametrize("kw", [{}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True}])
def test_embedding(kw):
    idx = np.array([[0, 2, 4, 2], [5, 2, 1, 0]], np.int64)
    check_op(lambda w: F.embedding(engine.tensor(idx), w, **kw),
             lambda w: TF.embedding(torch.tensor(idx), w, **kw), [rand(6, 3)])


def test_embedding_max_norm_and_errors():
    w = rand(6, 3, low=-3, high=3)
    idx = np.array([0, 2, 2, 5], np.int64)
    we, wt = engine.tensor(w.copy()), torch.tensor(w.copy())
    out_e = F.embedding(engine.tensor(idx), we, max_norm=1.0)
    out_t = TF.embedding(torch.tensor(idx), wt, max_norm=1.0)
    np.testing.assert_allclose(out_e.numpy(), out_t.numpy(), rtol=1e-6)
    np.testing.assert_allclose(we.numpy(), wt.numpy(), rtol=1e-6)  # rows renormalised in place
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(engine.tensor([6]), we)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        F.embedding(engine.tensor([1]), we, padding_idx=6)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        F.embedding(engine.tensor([1.0]), we)


# ---- normalize, cosine_similarity, pairwise_distance ---------------------------------------------
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("dim", [1, -1, 0])
def test_normalize(p, dim):
    x = rand(4, 5, 3)
    x[0, :, 0] = 0.0  # a zero vector: clamped by eps
    check_op(lambda a: F.normalize(a, p=p, dim=dim), lambda a: TF.normalize(a, p=p, dim=dim), [x])
    check_op(lambda a: F.normalize(a, p=p, dim=dim), lambda a: TF.normalize(a, p=p, dim=dim),
             [noncontiguous(x.astype(np.float64))], rtol=1e-10)


@pytest.mark.parametrize("shapes,dim", [(((4, 6), (4, 6)), 1), (((3, 1, 5), (4, 5)), -1), (((7,), (7,)), 0),
                                        (((2, 5, 3), (2, 5, 3)), 1)])
def test_cosine_similarity(shapes, dim):
    check_op(lambda a, b: F.cosine_similarity(a, b, dim=dim), lambda a, b: TF.cosine_similarity(a, b, dim=dim),
             [rand(*shapes[0]), rand(*shapes[1])])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
@pytest.mark.parametrize("keepdim", [False, True])
def test_pairwise_distance(p, keepdim):
    check_op(lambda a, b: F.pairwise_distance(a, b, p=p, keepdim=keepdim),
             lambda a, b: TF.pairwise_distance(a, b, p=p, keepdim=keepdim), [rand(5, 7), rand(5, 7)])
    check_op(lambda a, b: F.pairwise_distance(a, b, p=p), lambda a, b: TF.pairwise_distance(a, b, p=p),
             [rand(7), rand(3, 7)])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_as_torch(batch_first, side):
    from torch.nn.utils.rnn import pad_sequence as theirs

    from engine.nn.utils.rnn import pad_sequence as ours
    rng = np.random.default_rng(0)
    sequences = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 5, 1)]
    check_op(lambda *s: ours(list(s), batch_first, -1.5, side), lambda *s: theirs(list(s), batch_first, -1.5, side),
             sequences)
    for fn, lib in ((ours, engine), (theirs, torch)):
        with pytest.raises(RuntimeError, match="received an empty list of sequences"):
            fn([])
        with pytest.raises(RuntimeError, match="Expected padding_side to be one of left or right, but got mid."):
            fn([lib.ones(2)], padding_side="mid")
