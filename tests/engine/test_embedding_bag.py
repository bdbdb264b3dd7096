"""F.embedding_bag and nn.EmbeddingBag against PyTorch: every mode with offsets (empty bags included),
include_last_offset, padding_idx, per_sample_weights, scale_grad_by_freq, max_norm, 2-D inputs;
gradients to the weight (and to the per-sample weights); the module; PyTorch's errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import check_op

rng = np.random.default_rng(0)
MODES = ["sum", "mean", "max"]
NUM, DIM = 9, 5


def weight(dtype=np.float32):
    return rng.standard_normal((NUM, DIM)).astype(dtype)


def bags(n=13):
    """n indices (with repeats) and offsets with an empty bag in the middle and an empty last bag."""
    return rng.integers(0, NUM, n), np.array([0, 4, 4, 9, n])


def both(**kw):
    return (lambda i, w, o: F.embedding_bag(i, w, o, **kw)), (lambda i, w, o: TF.embedding_bag(i, w, o, **kw))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_idx", [None, 3, -2])
def test_offsets(mode, padding_idx):
    idx, offsets = bags()
    idx[[1, 5, 6, 7, 8]] = np.array([3, 7, 7, 7, 7])  # padding entries, and a bag of padding only (-2 -> 7)
    check_op(*both(mode=mode, padding_idx=padding_idx), [idx, weight(), offsets])


@pytest.mark.parametrize("mode", MODES)
def test_include_last_offset(mode):
    idx, _ = bags(11)
    offsets = np.array([0, 2, 2, 7, 11])  # CSR offsets: the last one is the input's length
    check_op(*both(mode=mode, include_last_offset=True), [idx, weight(np.float64), offsets])


def test_include_last_offset_short_of_the_end():
    """The last bag ends at the last offset (PyTorch's sum does so too; its mean and max read on to the end)."""
    out = F.embedding_bag(engine.arange(6), engine.arange(6.0)[:, None], engine.tensor([0, 2, 4]), mode="sum",
                          include_last_offset=True)
    np.testing.assert_array_equal(out.numpy(), [[1.0], [5.0]])


@pytest.mark.parametrize("mode", MODES)
def test_2d_input(mode):
    check_op(lambda i, w: F.embedding_bag(i, w, mode=mode), lambda i, w: TF.embedding_bag(i, w, mode=mode),
             [rng.integers(0, NUM, (4, 3)), weight()])


def test_max_ties_take_the_first_row():
    w = np.zeros((NUM, DIM), np.float32)  # every row ties: the gradient goes to the bag's first index
    check_op(*both(mode="max"), [np.array([2, 5, 1, 1, 6]), w, np.array([0, 3])])


def test_per_sample_weights():
    idx, offsets = bags()
    psw = rng.uniform(-1, 2, idx.shape).astype(np.float32)
    ours = lambda i, w, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p, padding_idx=0)  # noqa: E731
    theirs = lambda i, w, o, p: TF.embedding_bag(i, w, o, mode="sum", per_sample_weights=p, padding_idx=0)  # noqa: E731
    idx[2] = 0
    check_op(ours, theirs, [idx, weight(), offsets, psw])
    check_op(lambda i, w, p: F.embedding_bag(i, w, mode="sum", per_sample_weights=p),
             lambda i, w, p: TF.embedding_bag(i, w, mode="sum", per_sample_weights=p),
             [rng.integers(0, NUM, (3, 4)), weight(), rng.standard_normal((3, 4)).astype(np.float32)])


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq(mode):
    idx, offsets = bags()
    idx[:4] = 2
    check_op(*both(mode=mode, scale_grad_by_freq=True), [idx, weight(), offsets])


def test_max_norm_renormalises_used_rows_in_place():
    w = weight() * 3
    idx, offsets = bags(6)
    ours, theirs = engine.tensor(w), torch.tensor(w)
    out = F.embedding_bag(engine.tensor(idx), ours, engine.tensor(offsets[:3]), max_norm=1.5, mode="sum")
    ref = TF.embedding_bag(torch.tensor(idx), theirs, torch.tensor(offsets[:3]), max_norm=1.5, mode="sum")
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_empty_input_and_int32_indices():
    for mode in MODES:
        check_op(*both(mode=mode), [np.zeros(0, np.int64), weight(), np.array([0, 0])])
    check_op(*both(mode="max"), [rng.integers(0, NUM, 6).astype(np.int32), weight(), np.array([0, 2], np.int32)])


def test_module():
    engine.manual_seed(3)
    torch.manual_seed(3)
    ours = engine.nn.EmbeddingBag(NUM, DIM, mode="max", padding_idx=-1, include_last_offset=True)
    theirs = torch.nn.EmbeddingBag(NUM, DIM, mode="max", padding_idx=-1, include_last_offset=True)
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    assert ours.padding_idx == theirs.padding_idx == NUM - 1
    assert not ours.weight.detach().numpy()[NUM - 1].any()
    assert repr(ours) == repr(theirs) == "EmbeddingBag(9, 5, mode='max', padding_idx=8)"
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    idx, offsets = np.array([0, 8, 3, 2, 2]), np.array([0, 2, 5])
    out = ours(engine.tensor(idx), engine.tensor(offsets))
    ref = theirs(torch.tensor(idx), torch.tensor(offsets))
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    sums = engine.nn.EmbeddingBag(NUM, DIM, mode="sum", norm_type=1.0, max_norm=2.0, scale_grad_by_freq=True)
    assert repr(sums) == repr(torch.nn.EmbeddingBag(NUM, DIM, mode="sum", norm_type=1.0, max_norm=2.0,
                                                     scale_grad_by_freq=True))
    w = weight()
    frozen = engine.nn.EmbeddingBag.from_pretrained(engine.tensor(w), mode="sum")
    assert not frozen.weight.requires_grad and frozen.mode == "sum"
    np.testing.assert_array_equal(frozen.weight.detach().numpy(), w)
    with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
        engine.nn.EmbeddingBag(NUM, DIM, padding_idx=NUM)
    with pytest.raises(AssertionError, match="Shape of weight"):
        engine.nn.EmbeddingBag(NUM, DIM + 1, _weight=engine.tensor(w))


def test_errors():
    w, idx = engine.tensor(weight()), engine.tensor([0, 1, 2, 4])
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0.*got 1"):
        F.embedding_bag(idx, w, engine.tensor([1, 3]))
    with pytest.raises(RuntimeError, match="input's length 4 but got offsets\\[-1\\] of 9"):
        F.embedding_bag(idx, w, engine.tensor([0, 9]))
    with pytest.raises(RuntimeError, match="non-decreasing"):
        F.embedding_bag(idx, w, engine.tensor([0, 3, 2]))
    with pytest.raises(RuntimeError, match=r"Index 1 of input takes value 9 which is not in the valid range \[0, 9\)"):
        F.embedding_bag(engine.tensor([0, 9]), w, engine.tensor([0]))
    with pytest.raises(RuntimeError, match="-9 through 8, but got 9"):
        F.embedding_bag(idx, w, engine.tensor([0]), padding_idx=9)
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(idx, w, engine.tensor([0]), mode="min")
    with pytest.raises(NotImplementedError, match="got mode='max'"):
        F.embedding_bag(idx, w, engine.tensor([0]), mode="max", per_sample_weights=engine.ones(4))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        F.embedding_bag(idx, w, engine.tensor([0]), mode="sum", per_sample_weights=engine.ones(3))
    with pytest.raises(ValueError, match="scaling the gradient by the frequency"):
        F.embedding_bag(idx, w, engine.tensor([0]), mode="max", scale_grad_by_freq=True)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(idx, w)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        F.embedding_bag(idx, w, engine.tensor([[0]]))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(idx.reshape(2, 2), w, engine.tensor([0]))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor, but got Tensor of dimension 3"):
        F.embedding_bag(idx.reshape(1, 2, 2), w)
    with pytest.raises(ValueError, match="weight has to be a 2D Tensor, but got Tensor of dimension 1"):
        F.embedding_bag(idx, w.reshape(-1), engine.tensor([0]))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        F.embedding_bag(idx.float(), w, engine.tensor([0]))


@pytest.mark.parametrize("mode", MODES)
def test_on_cuda(cuda, mode):
    idx, offsets = bags()
    idx[3] = 7
    check_op(*both(mode=mode, padding_idx=7), [idx, weight(), offsets], device="cuda")
    if mode == "sum":
        psw = rng.standard_normal(idx.shape).astype(np.float32)
        check_op(lambda i, w, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                 lambda i, w, o, p: TF.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
                 [idx, weight(), offsets, psw], device="cuda")
    else:
        check_op(lambda i, w: F.embedding_bag(i, w, mode=mode, scale_grad_by_freq=mode == "mean"),
                 lambda i, w: TF.embedding_bag(i, w, mode=mode, scale_grad_by_freq=mode == "mean"),
                 [rng.integers(0, NUM, (3, 4)), weight()], device="cuda")
