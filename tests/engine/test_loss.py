"""Loss functions against PyTorch: values and gradients for every reduction, weights, ignore_index,
label smoothing, probability targets, N-d (segmentation) inputs, and PyTorch's errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import check_op, noncontiguous

rng = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def rand(*shape, low=-2.0, high=2.0, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


def labels(shape, n_class, ignore=None, frac=0.2):
    t = rng.integers(0, n_class, shape).astype(np.int64)
    if ignore is not None:
        t[rng.random(shape) < frac] = ignore
    return t


def both(fn_name, **kw):
    return (lambda *a: getattr(F, fn_name)(*a, **kw)), (lambda *a: getattr(TF, fn_name)(*a, **kw))


def const(arr):
    """A weight passed as a constant (not differentiable in torch's fused losses)."""
    return (engine.tensor(arr), torch.tensor(arr))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(name, reduction):
    x, t = rand(3, 5, 7), rand(3, 5, 7)
    t.flat[:3] = x.flat[:3] + np.array([0.0, 1.0, -0.5], np.float32)  # kinks at |d| = 0, beta, delta/2
    ours, theirs = both(name, reduction=reduction)
    check_op(ours, theirs, [x, t])
    check_op(ours, theirs, [noncontiguous(x.astype(np.float64)), t.astype(np.float64)], rtol=1e-10)


@pytest.mark.parametrize("kw", [{"beta": 0.5}, {"beta": 0.0}, {"beta": 2.0, "reduction": "sum"}])
def test_smooth_l1_beta(kw):
    check_op(*both("smooth_l1_loss", **kw), [rand(4, 9), rand(4, 9)])


@pytest.mark.parametrize("kw", [{"delta": 0.3}, {"delta": 2.5, "reduction": "none"}])
def test_huber_delta(kw):
    check_op(*both("huber_loss", **kw), [rand(4, 9), rand(4, 9)])


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_weight(name, reduction):
    x, t, w = rand(3, 6), rand(3, 6), rand(3, 6, low=0.1, high=1.0)
    check_op(lambda a, b, c: getattr(F, name)(a, b, reduction=reduction, weight=c),
             lambda a, b, c: getattr(TF, name)(a, b, reduction=reduction, weight=c), [x, t, w])


def test_mse_broadcast_warns_and_promotes():
    x, t = rand(4, 1), rand(4, 3).astype(np.float64)
    with pytest.warns(UserWarning, match="different to the input size"):
        check_op(*both("mse_loss"), [x, t])
    check_op(*both("mse_loss"), [rand(5), np.arange(5, dtype=np.int64)])
    with pytest.warns(UserWarning, match="reduction='sum'"):
        out = F.mse_loss(engine.tensor(rand(3)), engine.tensor(rand(3)), size_average=False)
    assert out.shape == ()
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.l1_loss(engine.tensor(rand(3)), engine.tensor(rand(3)), reduction="foo")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    x, t = rand(4, 7, low=0.02, high=0.98), rand(4, 7, low=0.0, high=1.0)
    check_op(*both("binary_cross_entropy", reduction=reduction), [x, t])
    we, wt = const(rand(7, low=0.1, high=2.0))
    check_op(lambda a, b: F.binary_cross_entropy(a, b, weight=we, reduction=reduction),
             lambda a, b: TF.binary_cross_entropy(a, b, weight=wt, reduction=reduction),
             [x.astype(np.float64), t.astype(np.float64)], rtol=1e-10)


def test_binary_cross_entropy_clamps_log():
    x = np.array([0.0, 1.0, 0.5, 1e-30], np.float32)
    t = np.array([1.0, 0.0, 1.0, 1.0], np.float32)
    check_op(*both("binary_cross_entropy", reduction="none"), [x, t], grad=False)
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(engine.tensor([1.5]), engine.tensor([1.0]))
    with pytest.raises(ValueError, match="different to the input size"):
        F.binary_cross_entropy(engine.rand(3), engine.rand(3, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_with_logits(reduction, weighted):
    x = rand(5, 3, 4, low=-30, high=30)
    t = rand(5, 3, 4, low=0.0, high=1.0)
    if not weighted:
        check_op(*both("binary_cross_entropy_with_logits", reduction=reduction), [x, t])
        return
    we, wt = const(rand(3, 1, low=0.1, high=2.0))
    pe, pt = const(rand(4, low=0.5, high=3.0))
    check_op(lambda a, b: F.binary_cross_entropy_with_logits(a, b, weight=we, pos_weight=pe, reduction=reduction),
             lambda a, b: TF.binary_cross_entropy_with_logits(a, b, weight=wt, pos_weight=pt, reduction=reduction),
             [x, t])


def test_bce_with_logits_extreme_and_errors():
    x = np.array([-1000.0, 1000.0, 0.0, 88.0], np.float32)
    t = np.array([1.0, 0.0, 0.5, 1.0], np.float32)
    out = check_op(*both("binary_cross_entropy_with_logits", reduction="none"), [x, t])
    assert np.isfinite(out[0].detach().numpy()).all()
    with pytest.raises(ValueError, match=r"Target size \(engine.Size\(\[3, 1\]\)\) must be the same as input size"):
        F.binary_cross_entropy_with_logits(engine.rand(3), engine.rand(3, 1))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
def test_cross_entropy_class_indices(reduction, weighted, smoothing):
    x, t = rand(6, 5), labels((6,), 5, ignore=-100)
    t[0] = 3
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    if weighted:
        we, wt = const(rand(5, low=0.2, high=2.0))
        check_op(lambda a: F.cross_entropy(a, engine.tensor(t), weight=we, **kw),
                 lambda a: TF.cross_entropy(a, torch.tensor(t), weight=wt, **kw), [x])
    else:
        check_op(lambda a: F.cross_entropy(a, engine.tensor(t), **kw),
                 lambda a: TF.cross_entropy(a, torch.tensor(t), **kw), [x])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing,weighted", [(0.0, False), (0.1, True), (0.2, False), (0.0, True)])
def test_cross_entropy_segmentation_ignore_255(reduction, smoothing, weighted):
    x, t = rand(2, 5, 7, 9, low=-4, high=4), labels((2, 7, 9), 5, ignore=255, frac=0.3)
    kw = dict(reduction=reduction, label_smoothing=smoothing, ignore_index=255)
    we, wt = const(rand(5, low=0.2, high=2.0)) if weighted else (None, None)
    check_op(lambda a: F.cross_entropy(a, engine.tensor(t), weight=we, **kw),
             lambda a: TF.cross_entropy(a, torch.tensor(t), weight=wt, **kw), [x])
    check_op(lambda a: F.cross_entropy(a, engine.tensor(t), weight=we if we is None else we.double(), **kw),
             lambda a: TF.cross_entropy(a, torch.tensor(t), weight=wt if wt is None else wt.double(), **kw),
             [x.astype(np.float64)], rtol=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probability_targets(reduction, smoothing):
    x = rand(4, 6, 3)
    p = rng.random((4, 6, 3)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    w = rand(6, low=0.2, high=2.0)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    check_op(lambda a, b: F.cross_entropy(a, b, **kw), lambda a, b: TF.cross_entropy(a, b, **kw), [x, p])
    check_op(lambda a, b, c: F.cross_entropy(a, b, weight=c, **kw),
             lambda a, b, c: TF.cross_entropy(a, b, weight=c, **kw), [x, p, w])


def test_cross_entropy_unbatched_and_all_ignored():
    x = rand(7)
    for t in (3, -100):
        check_op(lambda a: F.cross_entropy(a, engine.tensor(t)), lambda a: TF.cross_entropy(a, torch.tensor(t)), [x])
    check_op(lambda a: F.cross_entropy(a, engine.tensor(4), reduction="none", label_smoothing=0.1),
             lambda a: TF.cross_entropy(a, torch.tensor(4), reduction="none", label_smoothing=0.1), [x])
    p = rng.random(7).astype(np.float32)
    check_op(*both("cross_entropy"), [x, p / p.sum()])
    t = np.full((3,), -100, np.int64)
    check_op(lambda a: F.cross_entropy(a, engine.tensor(t)), lambda a: TF.cross_entropy(a, torch.tensor(t)),
             [rand(3, 4)])
    check_op(lambda a: F.cross_entropy(a, engine.tensor(np.array([1, 2], np.uint8))),
             lambda a: TF.cross_entropy(a, torch.tensor(np.array([1, 2], np.uint8))), [rand(2, 4)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 6), (2, 3, 4, 5), (2, 3, 2, 3, 2)])
def test_nll_loss(reduction, shape):
    x = rand(*shape)
    t = labels((shape[0],) + shape[2:], shape[1], ignore=1, frac=0.3)
    we, wt = const(rand(shape[1], low=0.2, high=2.0))
    check_op(lambda a: F.nll_loss(a, engine.tensor(t), reduction=reduction),
             lambda a: TF.nll_loss(a, torch.tensor(t), reduction=reduction), [x])
    check_op(lambda a: F.nll_loss(a, engine.tensor(t), weight=we, ignore_index=1, reduction=reduction),
             lambda a: TF.nll_loss(a, torch.tensor(t), weight=wt, ignore_index=1, reduction=reduction), [x])


def test_class_loss_errors():
    x = engine.randn(3, 4)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(4\)\."):
        F.cross_entropy(x, engine.tensor([1, 0, 3, 1]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.cross_entropy(x, engine.tensor([1, 0, 7]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.nll_loss(x, engine.tensor([1, 0, -3]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, engine.rand(3))
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities"):
        F.cross_entropy(x, engine.ones(3, 4, dtype=engine.int64))
    with pytest.raises(RuntimeError, match=r"Expected target size \[2, 4\], got \[2, 5\]"):
        F.nll_loss(engine.randn(2, 3, 4), engine.zeros(2, 5, dtype=engine.int64))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        F.nll_loss(x, engine.zeros(3, 2, dtype=engine.int64))
    with pytest.raises(RuntimeError, match=r"for all 4 classes or no classes but got weight tensor of shape: \[5\]"):
        F.cross_entropy(x, engine.tensor([1, 0, 3]), weight=engine.ones(5))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, engine.rand(3, 4), ignore_index=1)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np.log(rng.dirichlet(np.ones(5), 4)).astype(np.float32)
    t = rng.dirichlet(np.ones(5), 4).astype(np.float32)
    if log_target:
        t = np.log(t)
    fns = both("kl_div", reduction=reduction, log_target=log_target)
    if reduction == "mean":
        with pytest.warns(UserWarning, match="batchmean"):
            check_op(*fns, [x, t])
    else:
        check_op(*fns, [x, t])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_and_misc_losses(reduction):
    x, y = rand(4, 6), np.sign(rand(4, 6)).astype(np.float32)
    check_op(lambda a: F.soft_margin_loss(a, engine.tensor(y), reduction=reduction),
             lambda a: TF.soft_margin_loss(a, torch.tensor(y), reduction=reduction), [x])
    check_op(*both("hinge_embedding_loss", margin=0.7, reduction=reduction), [x, y], grad=False)
    check_op(lambda a: F.hinge_embedding_loss(a, engine.tensor(y), margin=0.7, reduction=reduction),
             lambda a: TF.hinge_embedding_loss(a, torch.tensor(y), margin=0.7, reduction=reduction), [x])
    y1 = np.sign(rand(7)).astype(np.float32)
    check_op(*both("margin_ranking_loss", margin=0.3, reduction=reduction), [rand(7), rand(7), y1])
    check_op(lambda a, b: F.cosine_embedding_loss(a, b, engine.tensor(y1[:5]), margin=0.2, reduction=reduction),
             lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(y1[:5]), margin=0.2, reduction=reduction),
             [rand(5, 8), rand(5, 8)])
    for swap in (False, True):
        check_op(*both("triplet_margin_loss", margin=1.5, swap=swap, reduction=reduction),
                 [rand(6, 5), rand(6, 5), rand(6, 5)])
    check_op(*both("triplet_margin_loss", p=1, reduction=reduction), [rand(6, 5), rand(6, 5), rand(6, 5)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("log_input,full", [(True, False), (False, True), (True, True)])
def test_poisson_nll(reduction, log_input, full):
    x = rand(3, 5, low=0.1, high=2.0)
    t = rand(3, 5, low=0.2, high=4.0)
    check_op(*both("poisson_nll_loss", log_input=log_input, full=full, reduction=reduction), [x, t])


def test_losses_backward_on_graph():
    """A typical training step: logits from a linear layer, mean cross-entropy, grads on the weights."""
    x, w, t = rand(8, 10), rand(4, 10), labels((8,), 4)
    check_op(lambda a, b: F.cross_entropy(F.linear(a, b), engine.tensor(t)),
             lambda a, b: TF.cross_entropy(TF.linear(a, b), torch.tensor(t)), [x, w])


@pytest.mark.parametrize("input_dtype, target_dtype", [("float64", "float32"), ("float32", "float64"),
                                                       ("float16", "float32"), ("float32", "float16")])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_bce_with_logits_takes_the_targets_type(input_dtype, target_dtype, reduction):
    """torch's loss has the target's dtype (its kernel works on a tensor made from the target), the gradient the
    input's: Faster R-CNN in float64 gave a float64 objectness loss where torchvision gives float32."""
    rng = np.random.default_rng(8)
    x, t = rng.standard_normal(7), rng.random(7)
    results = []
    for lib, fn in ((engine, F), (torch, TF)):
        xi = lib.tensor(x, dtype=getattr(lib, input_dtype), requires_grad=True)
        loss = fn.binary_cross_entropy_with_logits(xi, lib.tensor(t, dtype=getattr(lib, target_dtype)),
                                                    reduction=reduction)
        loss.sum().backward()
        results.append((str(loss.dtype).split(".")[-1], str(xi.grad.dtype).split(".")[-1],
                        loss.detach().double().numpy()))
    assert results[0][:2] == results[1][:2]
    np.testing.assert_allclose(results[0][2], results[1][2], rtol=2e-3)
