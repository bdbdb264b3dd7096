"""The rarer losses against PyTorch: Gaussian NLL, the multi-class / multi-label margin losses, the
multi-label soft margin loss, the triplet loss over a custom distance and NLLLoss2d: values and
gradients for every reduction and option, the modules, and PyTorch's errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import check_op

rng = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def rand(*shape, low=-2.0, high=2.0, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


def both(fn_name, **kw):
    return (lambda *a: getattr(F, fn_name)(*a, **kw)), (lambda *a: getattr(TF, fn_name)(*a, **kw))


# ---- gaussian_nll_loss ---------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("var_shape", [(4, 3, 5), (4, 3), (4, 1, 5), (4, 3, 1)])
def test_gaussian_nll_loss(reduction, full, var_shape):
    x, t = rand(4, 3, 5), rand(4, 3, 5)
    var = rand(*var_shape, low=0.0, high=2.0)
    var.flat[0] = 1e-8  # below eps: clamped for the value, the gradient passes through
    check_op(*both("gaussian_nll_loss", full=full, eps=1e-3, reduction=reduction), [x, t, var], rtol=1e-5)


def test_gaussian_nll_loss_float_var_and_module():
    x, t = rand(5, 2), rand(5, 2)
    check_op(lambda a, b: F.gaussian_nll_loss(a, b, 0.7), lambda a, b: TF.gaussian_nll_loss(a, b, 0.7), [x, t])
    ours, theirs = engine.nn.GaussianNLLLoss(full=True, eps=0.1), torch.nn.GaussianNLLLoss(full=True, eps=0.1)
    var = rand(5, 1, low=0.0, high=1.0)
    check_op(ours, theirs, [x, t, var])
    assert repr(ours) == repr(theirs) == "GaussianNLLLoss()"
    assert not ours.state_dict()


def test_gaussian_nll_loss_errors():
    x = engine.zeros(4, 3)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, engine.ones(4, 2))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(engine.zeros(4, 3, 2), engine.zeros(4, 3, 2), engine.ones(1, 3, 1))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, x, -engine.ones(4, 3))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="bad is not valid"):
        F.gaussian_nll_loss(x, x, engine.ones(4, 3), reduction="bad")


# ---- multi_margin_loss -----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss(reduction, p, weighted):
    x = rand(6, 7)
    t = rng.integers(0, 7, 6)
    # exactly on a hinge, margin - x[y] + x[i] = 0, in binary fractions: 0 whatever the order of the sums (with 0.8,
    # float32 rounding left either sign, and the gradient at the hinge differed with the values drawn)
    x[0, t[0]], x[0, (t[0] + 1) % 7] = 1.5, 0.75
    w = rand(7, low=0.1, high=2.0) if weighted else None
    ours = lambda a, b: F.multi_margin_loss(a, b, p=p, margin=0.75, reduction=reduction,  # noqa: E731
                                            weight=None if w is None else engine.tensor(w))
    theirs = lambda a, b: TF.multi_margin_loss(a, b, p=p, margin=0.75, reduction=reduction,  # noqa: E731
                                               weight=None if w is None else torch.tensor(w))
    check_op(ours, theirs, [x, t])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss_unbatched_empty_and_float64(reduction):
    check_op(*both("multi_margin_loss", reduction=reduction), [rand(5), np.array(3)])
    empty = F.multi_margin_loss(engine.zeros(0, 4), engine.zeros(0, dtype=engine.int64), reduction=reduction)
    assert tuple(empty.shape) == ((0,) if reduction == "none" else ()) and not empty.numpy().any()
    check_op(*both("multi_margin_loss", p=2, reduction=reduction),
             [rand(3, 4, dtype=np.float64), rng.integers(0, 4, 3)])


def test_multi_margin_loss_module():
    w = rand(5, low=0.5, high=1.5)
    ours = engine.nn.MultiMarginLoss(p=2, margin=0.5, weight=engine.tensor(w), reduction="sum")
    theirs = torch.nn.MultiMarginLoss(p=2, margin=0.5, weight=torch.tensor(w), reduction="sum")
    check_op(ours, theirs, [rand(4, 5), rng.integers(0, 5, 4)])
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    assert repr(ours) == repr(theirs)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        engine.nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="got 2D instead"):
        engine.nn.MultiMarginLoss(weight=engine.ones(2, 2))


def test_multi_margin_loss_errors():
    x = engine.zeros(3, 4)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, engine.tensor([0, 1, 4]))
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, engine.tensor([0, 1, -1]))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3\], but got \[2\]"):
        F.multi_margin_loss(x, engine.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"inconsistent weight size, expected 4 but got \[3\]"):
        F.multi_margin_loss(x, engine.tensor([0, 1, 2]), weight=engine.ones(3))
    with pytest.raises(RuntimeError, match=r"but got: \[2, 3, 4\]"):
        F.multi_margin_loss(engine.zeros(2, 3, 4), engine.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="Long"):
        F.multi_margin_loss(x, engine.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, engine.tensor([0, 1, 2]), p=3)
    with pytest.raises(ValueError, match="bad is not a valid value"):
        F.multi_margin_loss(x, engine.tensor([0, 1, 2]), reduction="bad")


# ---- multilabel_margin_loss ------------------------------------------------------------------------
def multilabel_targets(n, c):
    """Rows of class indices ended by -1 (sometimes none, sometimes at once), junk after the -1, a repeat."""
    t = rng.integers(0, c, (n, c))
    for row in t:
        k = rng.integers(0, c + 1)
        if k < c:
            row[k] = -1
    t[0, :3] = [2, 2, -1]
    t[1, 0] = -1
    return t


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(reduction):
    x = rand(7, 6)
    x[2, 0] = x[2, 1] + 1.0  # a hinge at exactly zero
    check_op(*both("multilabel_margin_loss", reduction=reduction), [x, multilabel_targets(7, 6)])
    check_op(*both("multilabel_margin_loss", reduction=reduction), [rand(5), np.array([3, 0, -1, 4, 4])])
    empty = F.multilabel_margin_loss(engine.zeros(0, 3), engine.zeros(0, 3, dtype=engine.int64), reduction=reduction)
    assert tuple(empty.shape) == ((0,) if reduction == "none" else ()) and not empty.numpy().any()


def test_multilabel_margin_loss_module_and_errors():
    check_op(engine.nn.MultiLabelMarginLoss(reduction="sum"), torch.nn.MultiLabelMarginLoss(reduction="sum"),
             [rand(3, 4, dtype=np.float64), multilabel_targets(3, 4)])
    assert repr(engine.nn.MultiLabelMarginLoss()) == "MultiLabelMarginLoss()"
    x = engine.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"inconsistent target size: \[3, 3\] for input of size: \[3, 4\]"):
        F.multilabel_margin_loss(x, engine.zeros(3, 3, dtype=engine.int64))
    with pytest.raises(RuntimeError, match="'target' is out of range"):
        F.multilabel_margin_loss(x, engine.tensor([[0, 7, -1, 0]] * 3))
    with pytest.raises(RuntimeError, match=r"but got: \[2, 3, 4\]"):
        F.multilabel_margin_loss(engine.zeros(2, 3, 4), engine.zeros(2, 3, 4, dtype=engine.int64))


# ---- multilabel_soft_margin_loss -------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_soft_margin_loss(reduction, weighted):
    x, t = rand(5, 7, low=-20, high=20), (rng.random((5, 7)) < 0.4).astype(np.float32)
    inputs = [x, t, rand(7, low=0.1, high=2.0)] if weighted else [x, t]
    check_op(*both("multilabel_soft_margin_loss", reduction=reduction), inputs)
    check_op(*both("multilabel_soft_margin_loss", reduction=reduction), [rand(4), rand(4, low=0, high=1)])


def test_multilabel_soft_margin_loss_module():
    w = rand(3, low=0.5, high=1.5)
    ours = engine.nn.MultiLabelSoftMarginLoss(weight=engine.tensor(w), reduction="none")
    theirs = torch.nn.MultiLabelSoftMarginLoss(weight=torch.tensor(w), reduction="none")
    check_op(ours, theirs, [rand(4, 3), rand(4, 3, low=0, high=1)])
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]
    with pytest.raises(ValueError, match="bad is not a valid value"):
        F.multilabel_soft_margin_loss(engine.zeros(2, 3), engine.zeros(2, 3), reduction="bad")


# ---- triplet_margin_with_distance_loss -------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss_default(reduction, swap):
    check_op(*both("triplet_margin_with_distance_loss", margin=1.5, swap=swap, reduction=reduction),
             [rand(6, 5), rand(6, 5), rand(6, 5)])


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_loss_custom_distance(swap):
    ours = lambda a, p, n: F.triplet_margin_with_distance_loss(  # noqa: E731
        a, p, n, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.5, swap=swap)
    theirs = lambda a, p, n: TF.triplet_margin_with_distance_loss(  # noqa: E731
        a, p, n, distance_function=lambda u, v: 1 - TF.cosine_similarity(u, v), margin=0.5, swap=swap)
    check_op(ours, theirs, [rand(7, 3), rand(7, 3), rand(7, 3)])


def test_triplet_margin_with_distance_loss_module_and_errors():
    ours = engine.nn.TripletMarginWithDistanceLoss(swap=True, reduction="sum")
    theirs = torch.nn.TripletMarginWithDistanceLoss(swap=True, reduction="sum")
    check_op(ours, theirs, [rand(4, 3), rand(4, 3), rand(4, 3)])
    assert repr(ours) == repr(theirs)
    custom = engine.nn.TripletMarginWithDistanceLoss(distance_function=engine.nn.PairwiseDistance(p=1))
    check_op(custom, torch.nn.TripletMarginWithDistanceLoss(distance_function=torch.nn.PairwiseDistance(p=1)),
             [rand(4, 3), rand(4, 3), rand(4, 3)])
    with pytest.raises(ValueError, match="greater than 0, got 0"):
        engine.nn.TripletMarginWithDistanceLoss(margin=0)
    x = engine.zeros(2, 3)
    with pytest.raises(ValueError, match="margin must be greater than 0, got -1"):
        F.triplet_margin_with_distance_loss(x, x, x, margin=-1)
    with pytest.raises(RuntimeError, match="anchor 2D, positive 1D, and negative 2D"):
        F.triplet_margin_with_distance_loss(x, engine.zeros(3), x)
    with pytest.raises(ValueError, match="bad is not a valid value"):
        F.triplet_margin_with_distance_loss(x, x, x, reduction="bad")


# ---- NLLLoss2d ------------------------------------------------------------------------------------
def test_nll_loss_2d():
    w = rand(4, low=0.5, high=1.5)
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        ours = engine.nn.NLLLoss2d(weight=engine.tensor(w), ignore_index=1)
    with pytest.warns(FutureWarning):
        theirs = torch.nn.NLLLoss2d(weight=torch.tensor(w), ignore_index=1)
    check_op(ours, theirs, [rand(2, 4, 3, 5), rng.integers(0, 4, (2, 3, 5))])
    assert isinstance(ours, engine.nn.NLLLoss)
    assert repr(ours) == repr(theirs) == "NLLLoss2d()"
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight"]


# ---- the CUDA backend -----------------------------------------------------------------------------
def test_losses_on_cuda(cuda):
    x, t = rand(4, 3, 5), rand(4, 3, 5)
    check_op(*both("gaussian_nll_loss", full=True), [x, t, rand(4, 1, 5, low=0, high=2)], device="cuda")
    w = rand(5, low=0.5, high=1.5)
    check_op(lambda a, b: F.multi_margin_loss(a, b, p=2, weight=engine.tensor(w).cuda(), reduction="none"),
             lambda a, b: TF.multi_margin_loss(a, b, p=2, weight=torch.tensor(w), reduction="none"),
             [rand(6, 5), rng.integers(0, 5, 6)], device="cuda")
    check_op(*both("multilabel_margin_loss"), [rand(5, 6), multilabel_targets(5, 6)], device="cuda")
    check_op(*both("multilabel_soft_margin_loss"), [rand(4, 5), rand(4, 5, low=0, high=1), rand(5)], device="cuda")
    check_op(*both("triplet_margin_with_distance_loss", swap=True), [rand(4, 3), rand(4, 3), rand(4, 3)],
             device="cuda")
