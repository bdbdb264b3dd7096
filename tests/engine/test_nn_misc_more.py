"""FeatureAlphaDropout / F.feature_alpha_dropout (masks, statistics, gradients, eval identity),
AdaptiveLogSoftmaxWithLoss (output and loss, gradients, log_prob, predict) and torch.utils.data.StackDataset,
against PyTorch."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from engine.utils.data import DataLoader, StackDataset, TensorDataset
from op_check import check_op

rng = np.random.default_rng(0)


# ---- feature_alpha_dropout ------------------------------------------------------------------------
def test_feature_alpha_dropout_matches_torch_masks_and_grads():
    """On the CPU the engine draws torch's noise for the same seed, so even the masks agree."""
    x = rng.standard_normal((3, 5, 4, 2)).astype(np.float32)
    ours, theirs = engine.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    engine.manual_seed(11)
    torch.manual_seed(11)
    out, ref = F.feature_alpha_dropout(ours, 0.3, True), TF.feature_alpha_dropout(theirs, 0.3, True)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    g = rng.standard_normal(x.shape).astype(np.float32)
    out.backward(engine.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


SELU_SAT = 1.7580993408473766  # -scale * alpha of SELU


def alpha_affine(p):
    """(a, b): kept units become a x + b, dropped ones a (-SELU_SAT) + b."""
    a = 1 / np.sqrt((SELU_SAT ** 2 * p + 1) * (1 - p))
    return a, SELU_SAT * a * p


def test_feature_alpha_dropout_structure_and_statistics():
    p = 0.25
    x = engine.tensor(rng.standard_normal((400, 50, 6)).astype(np.float32))
    out = F.feature_alpha_dropout(x, p, training=True).numpy()
    a, b = alpha_affine(p)
    dropped = np.isclose(out, -SELU_SAT * a + b).all(axis=2)  # whole channels, one value
    kept = np.isclose(out, a * x.numpy() + b, atol=1e-6).all(axis=2)
    assert (dropped | kept).all()
    assert abs(dropped.mean() - p) < 0.02
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02  # SELU's zero mean, unit variance kept


def test_feature_alpha_dropout_eval_edges_and_module():
    x = engine.randn(2, 3, 4)
    assert F.feature_alpha_dropout(x, 0.5) is x  # training=False by default
    assert F.feature_alpha_dropout(x, 0.0, True) is x
    assert not F.feature_alpha_dropout(x, 1.0, True).numpy().any()
    y = x.clone()
    F.feature_alpha_dropout(y, 0.4, True, inplace=True)
    assert not np.allclose(y.numpy(), x.numpy())
    m = engine.nn.FeatureAlphaDropout(0.2)
    assert repr(m) == repr(torch.nn.FeatureAlphaDropout(0.2)) == "FeatureAlphaDropout(p=0.2, inplace=False)"
    assert not m.state_dict()
    assert m.eval()(x) is x
    assert m.train()(x).shape == x.shape
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.feature_alpha_dropout(x, 1.5, True)
    with pytest.raises(ValueError, match="between 0 and 1, but got -0.1"):
        engine.nn.FeatureAlphaDropout(-0.1)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(engine.ones(3), 0.3, True)


# ---- AdaptiveLogSoftmaxWithLoss -------------------------------------------------------------------
def asm_pair(*args, seed=0, **kwargs):
    engine.manual_seed(seed)
    ours = engine.nn.AdaptiveLogSoftmaxWithLoss(*args, **kwargs)
    torch.manual_seed(seed)
    return ours, torch.nn.AdaptiveLogSoftmaxWithLoss(*args, **kwargs)


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_forward_and_grads(head_bias):
    ours, theirs = asm_pair(11, 13, [3, 7, 9], div_value=2.0, head_bias=head_bias)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for a, b in zip(ours.state_dict().values(), theirs.state_dict().values()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # the same seed draws the same weights
    x = rng.standard_normal((9, 11)).astype(np.float32)
    target = np.array([0, 12, 4, 2, 8, 7, 3, 0, 11])
    check_op(ours, theirs, [x, target], rtol=1e-5)
    assert ours(engine.tensor(x), engine.tensor(target))._fields == ("output", "loss")
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7, err_msg=name)
    check_op(ours, theirs, [x[:3], np.array([1, 2, 0])])  # only the shortlist: no tail runs
    check_op(ours, theirs, [x[0], np.array(10)])  # unbatched: a 0-d output


def test_adaptive_log_softmax_log_prob_and_predict():
    ours, theirs = asm_pair(6, 10, [4, 8], div_value=2.0, head_bias=True, seed=4)
    x = rng.standard_normal((12, 6)).astype(np.float32)
    check_op(ours.log_prob, theirs.log_prob, [x], rtol=1e-5)
    for favoured in (None, 1, 4, 5):  # mixed rows; every row in the shortlist; every row in a cluster
        if favoured is not None:
            bias = np.zeros(6, np.float32)
            bias[favoured] = 50.0
            ours.head.bias.data = engine.tensor(bias)
            theirs.head.bias.data = torch.tensor(bias)
        np.testing.assert_array_equal(ours.predict(engine.tensor(x)).numpy(), theirs.predict(torch.tensor(x)).numpy())
    np.testing.assert_array_equal(ours.predict(engine.tensor(x)).numpy(),
                                  ours.log_prob(engine.tensor(x)).argmax(dim=1).numpy())


def test_adaptive_log_softmax_errors():
    for cutoffs in ([], [3, 2], [0, 4], [4, 10], [2, 2], [2.5]):
        with pytest.raises(ValueError, match="cutoffs should be a sequence"):
            engine.nn.AdaptiveLogSoftmaxWithLoss(4, 10, cutoffs)
    m = engine.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values in range \[0, 10\]"):
        m(engine.randn(2, 4), engine.tensor([0, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension, got 2 and 3"):
        m(engine.randn(2, 4), engine.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input tensors"):
        m(engine.randn(2, 4, 1), engine.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input tensors"):
        m(engine.randn(2, 4), engine.tensor(1))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(engine.randn(2, 4), engine.tensor([[1]]))


# ---- StackDataset ---------------------------------------------------------------------------------
class _Batched(TensorDataset):
    """A dataset with its own batch fetch (which StackDataset must use)."""

    calls = 0

    def __getitems__(self, indices):
        _Batched.calls += 1
        return [self[i] for i in indices]


def test_stack_dataset_tuple_and_dict():
    xs, ys = engine.arange(10.0).reshape(5, 2), list("abcde")
    stack = StackDataset(xs, ys)
    assert len(stack) == len(torch.utils.data.StackDataset(torch.arange(10.0).reshape(5, 2), ys)) == 5
    x1, y1 = stack[1]
    assert x1.tolist() == [2.0, 3.0] and y1 == "b"
    named = StackDataset(image=xs, text=ys)
    assert named[4]["text"] == "e" and named[4]["image"].tolist() == [8.0, 9.0]
    assert [d["text"] for d in named.__getitems__([3, 0])] == ["d", "a"]
    batched = _Batched(engine.arange(5))
    rows = StackDataset(batched, ys).__getitems__([2, 4])
    assert _Batched.calls == 1 and [(int(a[0]), b) for a, b in rows] == [(2, "c"), (4, "e")]
    batch = next(iter(DataLoader(StackDataset(image=xs, text=ys), batch_size=3)))
    assert batch["image"].shape == (3, 2) and batch["text"] == ["a", "b", "c"]


def test_stack_dataset_errors():
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="both types are given"):
        StackDataset([1], a=[2])
    with pytest.raises(ValueError, match=r"Size mismatch between datasets: lengths \[2, 3\]"):
        StackDataset([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset(a=[1, 2], b=[1])

    class Short(TensorDataset):
        def __getitems__(self, indices):
            return []

    with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 0"):
        StackDataset(Short(engine.arange(3)), [1, 2, 3]).__getitems__([0, 1])


# ---- the CUDA backend -----------------------------------------------------------------------------
def test_feature_alpha_dropout_and_adaptive_log_softmax_on_cuda(cuda):
    x = engine.tensor(rng.standard_normal((200, 40, 3)).astype(np.float32)).cuda().requires_grad_()
    out = F.feature_alpha_dropout(x, 0.3, training=True)
    assert out.device.type == "cuda"
    a, b = alpha_affine(0.3)
    dropped = np.isclose(out.detach().cpu().numpy(), -SELU_SAT * a + b).all(axis=2)
    assert abs(dropped.mean() - 0.3) < 0.03
    out.sum().backward()
    grad = x.grad.cpu().numpy()
    np.testing.assert_allclose(grad[~dropped], grad[~dropped].flat[0])
    assert not grad[dropped].any()
    ours, theirs = asm_pair(7, 9, [2, 5], div_value=2.0)
    ours.cuda()
    inputs = [rng.standard_normal((6, 7)).astype(np.float32), np.array([0, 8, 3, 1, 5, 6])]
    check_op(ours, theirs, inputs, device="cuda")
    check_op(ours.log_prob, theirs.log_prob, inputs[:1], device="cuda")
    np.testing.assert_array_equal(ours.predict(engine.tensor(inputs[0]).cuda()).cpu().numpy(),
                                  theirs.predict(torch.tensor(inputs[0])).numpy())
