"""Cases found by differential fuzzing of the losses against PyTorch: output dtypes of mixed-type inputs,
gradients at infinite/NaN and boundary values, and torch's errors (type and message) for bad shapes and targets.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as EF
from tests.op_check import check_op

RNG = np.random.default_rng(2025)


@pytest.fixture(autouse=True)
def _seeded():
    """Every test draws the same values however the tests are ordered or spread over workers."""
    global RNG
    RNG = np.random.default_rng(2025)


def _rand(*shape, low=None, high=None):
    if low is None:
        return RNG.standard_normal(shape).astype(np.float32)
    return RNG.uniform(low, high, shape).astype(np.float32)


def _cast(lib, name):
    return getattr(lib, name)


# ---- output dtypes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_pointwise_0dim_target_takes_part_in_promotion(name, reduction):
    """torch broadcasts input and target first, so a 0-dim float64 target makes a float32 loss float64."""
    x, t = _rand(5), np.asarray(0.3)
    out = check_op(lambda a, b: getattr(EF, name)(a, b, reduction=reduction),
                   lambda a, b: getattr(TF, name)(a, b, reduction=reduction), [x, t])
    assert out[0].dtype is engine.float64


@pytest.mark.parametrize("in_dt,t_dt", [("bfloat16", "float32"), ("float32", "float64"), ("float16", "bfloat16"),
                                        ("float64", "float32")])
def test_huber_loss_has_the_input_dtype(in_dt, t_dt):
    x, t = _rand(3, 4), _rand(3, 4)

    def run(lib, fn):
        return lambda a, b: fn(a.to(_cast(lib, in_dt)), b.to(_cast(lib, t_dt)), reduction="none", delta=0.7)
    check_op(run(engine, EF.huber_loss), run(torch, TF.huber_loss), [x, t], rtol=1e-2, grad=False)


@pytest.mark.parametrize("in_dt,t_dt,w_dt", [("float32", "float64", None), ("bfloat16", "float32", "bfloat16"),
                                             ("float32", "float32", "float64"), ("float16", "float64", "float16")])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities_promote_input_target_and_weight(in_dt, t_dt, w_dt, smoothing):
    x = _rand(3, 4, 2)
    t = RNG.dirichlet(np.ones(4), size=6).reshape(3, 2, 4).transpose(0, 2, 1).astype(np.float32)
    w = _rand(4, low=0.5, high=2.0)

    def run(lib, fn):
        def loss(a, b, c):
            weight = None if w_dt is None else c.to(_cast(lib, w_dt))
            return fn(a.to(_cast(lib, in_dt)), b.to(_cast(lib, t_dt)), weight=weight, label_smoothing=smoothing,
                      reduction="sum")
        return loss
    tol = 1e-2 if "16" in in_dt + t_dt + str(w_dt) else 1e-5
    check_op(run(engine, EF.cross_entropy), run(torch, TF.cross_entropy), [x, t, w], rtol=tol)


@pytest.mark.parametrize("x_shape,t_shape,w_shape", [((4,), (3, 4), None), ((2, 4), (3, 2, 4), (4,)),
                                                     ((3, 4), (3, 4), (2, 1, 1))])
@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_multilabel_soft_margin_sums_the_inputs_last_dim_of_the_broadcast_loss(x_shape, t_shape, w_shape,
                                                                                reduction):
    x, t = _rand(*x_shape), _rand(*t_shape, low=0.0, high=1.0)
    w = None if w_shape is None else _rand(*w_shape, low=0.5, high=2.0)

    def run(lib, fn):
        return lambda a, b: fn(a, b, weight=None if w is None else lib.tensor(w), reduction=reduction)
    check_op(run(engine, EF.multilabel_soft_margin_loss), run(torch, TF.multilabel_soft_margin_loss), [x, t])


@pytest.mark.parametrize("shape1,shape2", [((3, 4), (1, 4)), ((3, 4), (3, 1)), ((1, 4), (3, 4))])
def test_cosine_embedding_broadcasts_its_inputs(shape1, shape2):
    x1, x2 = _rand(*shape1), _rand(*shape2)
    y = engine.tensor([1.0, -1.0, 1.0]), torch.tensor([1.0, -1.0, 1.0])
    check_op(lambda a, b: EF.cosine_embedding_loss(a, b, y[0], margin=-0.5, reduction="none"),
             lambda a, b: TF.cosine_embedding_loss(a, b, y[1], margin=-0.5, reduction="none"), [x1, x2])


# ---- gradients at special values ----------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lambda F, a, b: F.l1_loss(a, b, reduction="sum"),
                                lambda F, a, b: F.smooth_l1_loss(a, b, reduction="sum", beta=0.0)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_l1_gradient_is_zero_where_the_difference_is_nan(fn, dtype):
    x = np.array([np.inf, 1.0, np.nan, -np.inf, 2.0, 0.5, -1.0], np.float32)
    t = np.array([np.inf, np.inf, 0.0, -np.inf, 1.0, 0.5, np.nan], np.float32)
    check_op(lambda a, b: fn(EF, a, b), lambda a, b: fn(TF, a, b), [x, t], dtype=dtype)


def test_l1_gradient_at_nan_on_cuda(cuda):
    x = np.array([[np.inf, 1.0, np.nan], [2.0, -np.inf, 0.0]], np.float32)
    t = np.array([[np.inf, np.inf, 0.0], [1.0, -np.inf, 0.0]], np.float32)
    check_op(lambda a, b: EF.l1_loss(a, b), lambda a, b: TF.l1_loss(a, b), [x, t], device="cuda")


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_binary_cross_entropy_target_gradient_is_infinite_at_0_and_1(reduction):
    x = np.array([[0.0, 0.3, 1.0], [1.0, 0.5, 0.0]], np.float64)
    t = np.array([[0.2, 0.4, 0.9], [0.0, 0.5, 1.0]], np.float64)
    w = np.array([1.5, 0.5, 2.0])
    check_op(lambda a, b: EF.binary_cross_entropy(a, b, weight=engine.tensor(w), reduction=reduction),
             lambda a, b: TF.binary_cross_entropy(a, b, weight=torch.tensor(w), reduction=reduction),
             [x, t], grad=False)
    ex, et = engine.tensor(x, requires_grad=True), engine.tensor(t, requires_grad=True)
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(t, requires_grad=True)
    EF.binary_cross_entropy(ex, et, weight=engine.tensor(w), reduction=reduction).sum().backward()
    TF.binary_cross_entropy(tx, tt, weight=torch.tensor(w), reduction=reduction).sum().backward()
    np.testing.assert_allclose(et.grad.numpy(), tt.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_kl_div_target_gradient_is_nan_where_the_target_is_0(dtype):
    x, t = _rand(3, 4), _rand(3, 4, low=0.0, high=1.0)
    t[0, 1] = t[2, 3] = 0.0
    check_op(lambda a, b: EF.kl_div(a, b, reduction="batchmean"),
             lambda a, b: TF.kl_div(a, b, reduction="batchmean"), [x.astype(np.float64), t.astype(np.float64)],
             dtype=dtype, rtol=1e-2 if dtype == "float16" else 1e-6)


def test_kl_div_target_gradient_on_cuda(cuda):
    x, t = _rand(2, 3), np.array([[0.0, 0.5, 0.5], [0.2, 0.0, 0.8]], np.float32)
    check_op(lambda a, b: EF.kl_div(a, b, reduction="sum"), lambda a, b: TF.kl_div(a, b, reduction="sum"),
             [x, t], device="cuda")


def test_kl_div_double_backward_matches():
    x, t = _rand(3, 4), _rand(3, 4, low=0.1, high=1.0)
    results = []
    for lib, F in ((engine, EF), (torch, TF)):
        a, b = lib.tensor(x, requires_grad=True), lib.tensor(t, requires_grad=True)
        ga, gb = lib.autograd.grad(F.kl_div(a, b, reduction="sum"), [a, b], create_graph=True)
        results.append([g.detach().numpy() for g in lib.autograd.grad((ga * ga).sum() + (gb * gb).sum(), [a, b])])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


# ---- class-index targets --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_1d_input_with_a_size_1_target(name, reduction):
    """Values only: torch's own backward of this case fails (a size mismatch in its kernel)."""
    x = _rand(5)
    check_op(lambda a: getattr(EF, name)(a, engine.tensor([3]), reduction=reduction),
             lambda a: getattr(TF, name)(a, torch.tensor([3]), reduction=reduction), [x], grad=False)


@pytest.mark.parametrize("name,smoothing,reduction", [("nll_loss", 0.0, "none"), ("nll_loss", 0.0, "mean"),
                                                      ("cross_entropy", 0.0, "sum"), ("cross_entropy", 0.3, "mean")])
def test_ignored_elements_with_infinite_or_nan_inputs_add_nothing(name, smoothing, reduction):
    x = _rand(3, 4, 2)
    x[0, :, 1] = [np.inf, 1.0, np.nan, -np.inf]
    x[2, 1, 0] = np.nan
    t = np.array([[1, 0], [2, 3], [0, 3]])
    kw = {"ignore_index": 0, "reduction": reduction}
    if smoothing:
        kw["label_smoothing"] = smoothing
    check_op(lambda a: getattr(EF, name)(a, engine.tensor(t), **kw),
             lambda a: getattr(TF, name)(a, torch.tensor(t), **kw), [x])


def test_uint8_target_of_an_empty_spatial_batch_is_accepted():
    x = np.zeros((0, 3, 2), np.float32)
    check_op(lambda a: EF.nll_loss(a, engine.zeros(0, 2, dtype=engine.uint8), reduction="sum"),
             lambda a: TF.nll_loss(a, torch.zeros(0, 2, dtype=torch.uint8), reduction="sum"), [x], grad=False)


def _raises_like_torch(call):
    """``call(F, lib)`` raises in torch and here: the same exception type and message."""
    with pytest.raises(Exception) as theirs:
        call(TF, torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(EF, engine)
    assert str(ours.value) == str(theirs.value).replace("torch.Size", "engine.Size")


_X = _rand(3, 4)
_X4 = _rand(3, 4, 2, 2)
_ERRORS = {
    "int32 target": lambda F, L: F.nll_loss(L.tensor(_X), L.tensor([0, 1, 2], dtype=L.int32)),
    "int32 target ce": lambda F, L: F.cross_entropy(L.tensor(_X), L.tensor([0, 5, 2], dtype=L.int32)),
    "weight of another dtype": lambda F, L: F.nll_loss(L.tensor(_X), L.tensor([0, 1, 2]), weight=L.ones(4).double()),
    "weight dtype before target checks": lambda F, L: F.cross_entropy(L.tensor(_X4).half(), L.zeros(3, 2, 2).byte(),
                                                                      weight=L.ones(4)),
    "uint8 spatial target": lambda F, L: F.nll_loss(L.tensor(_X4), L.zeros(3, 2, 2, dtype=L.uint8)),
    "1d input, target of size 2": lambda F, L: F.nll_loss(L.tensor(_X[0]), L.tensor([1, 2])),
    "2d input, 0d target": lambda F, L: F.nll_loss(L.tensor(_X), L.tensor(1)),
    "4d input, 2d target": lambda F, L: F.nll_loss(L.tensor(_X4), L.zeros(3, 2, dtype=L.int64)),
    "4d input, 4d target": lambda F, L: F.nll_loss(L.tensor(_X4), L.zeros(3, 2, 2, 1, dtype=L.int64)),
    "4d input, wrong spatial size": lambda F, L: F.nll_loss(L.tensor(_X4), L.zeros(3, 2, 3, dtype=L.int64)),
    "multi_margin int32 target": lambda F, L: F.multi_margin_loss(L.tensor(_X), L.tensor([0, 1, 1], dtype=L.int32)),
    "multilabel_margin int32 target": lambda F, L: F.multilabel_margin_loss(L.tensor(_X),
                                                                           L.zeros(3, 4, dtype=L.int32)),
    "multilabel_margin out of range": lambda F, L: F.multilabel_margin_loss(L.tensor(_X), L.full((3, 4), 5)),
    "cosine 1d target, 3d inputs": lambda F, L: F.cosine_embedding_loss(L.ones(2, 3, 4), L.ones(2, 3, 4),
                                                                        L.ones(2)),
    "cosine 1d target, 1d inputs": lambda F, L: F.cosine_embedding_loss(L.ones(4), L.ones(4), L.ones(3)),
    "cosine 0d target, 2d inputs": lambda F, L: F.cosine_embedding_loss(L.ones(3, 4), L.ones(3, 4), L.tensor(1.)),
    "cosine 2d target": lambda F, L: F.cosine_embedding_loss(L.ones(3, 4), L.ones(3, 4), L.ones(3, 1)),
    "cosine input sizes": lambda F, L: F.cosine_embedding_loss(L.ones(3, 4), L.ones(3, 5), L.ones(3)),
    "cosine batch sizes": lambda F, L: F.cosine_embedding_loss(L.ones(3, 4), L.ones(2, 4), L.ones(3)),
    "multilabel_soft_margin 0-dim input": lambda F, L: F.multilabel_soft_margin_loss(L.tensor(1.), L.ones(3)),
    "kl_div sizes": lambda F, L: F.kl_div(L.ones(3), L.ones(4)),
    "hinge sizes": lambda F, L: F.hinge_embedding_loss(L.ones(3), L.ones(4)),
    "bce weight size": lambda F, L: F.binary_cross_entropy(L.full((3, 2), 0.5), L.full((3, 2), 0.5),
                                                           weight=L.ones(3)),
    "bce weight of more dims": lambda F, L: F.binary_cross_entropy(L.full((3,), 0.5), L.full((3,), 0.5),
                                                                   weight=L.ones(2, 3)),
    "bce logits weight size": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3, 2), L.ones(3, 2),
                                                                              weight=L.ones(3)),
    "bce logits pos_weight size": lambda F, L: F.binary_cross_entropy_with_logits(L.ones(3, 2), L.ones(3, 2),
                                                                                  pos_weight=L.ones(3)),
    "triplet sizes": lambda F, L: F.triplet_margin_loss(L.ones(3, 4), L.ones(3, 4), L.ones(3, 5)),
    "mse sizes before reduction": lambda F, L: F.mse_loss(L.ones(2, 3, 5), L.ones(3), reduction="bogus"),
    "huber sizes before reduction": lambda F, L: F.huber_loss(L.ones(5), L.ones(3), reduction="bogus"),
}


@pytest.mark.parametrize("case", sorted(_ERRORS))
def test_errors_as_torch(case):
    _raises_like_torch(_ERRORS[case])
