"""Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop, LBFGS and SparseAdam against torch.optim; every optimizer's
signature against torch's; foreach/fused/capturable/differentiable/maximize on every optimizer."""
import copy
import inspect
import re

import numpy as np
import pytest
import torch
from op_check import assert_close
from test_optim import _assert_state_dicts, _pair, _init_arrays, _run_both, _set_grads

import engine
import engine.sparse  # noqa: F401  (Tensor.to_sparse)
import engine.optim

ADADELTA_CONFIGS = [dict(), dict(lr=0.5, rho=0.5), dict(weight_decay=0.1), dict(eps=1e-3, maximize=True),
                    dict(lr=0.3, rho=0.95, weight_decay=0.05, maximize=True)]
ADAMAX_CONFIGS = [dict(), dict(lr=0.01, weight_decay=0.1), dict(lr=0.02, betas=(0.5, 0.8)), dict(lr=0.01, maximize=True),
                  dict(lr=0.01, eps=1e-2, weight_decay=0.05, maximize=True)]
NADAM_CONFIGS = [dict(), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
                 dict(lr=0.01, momentum_decay=0.1), dict(lr=0.01, betas=(0.6, 0.7), maximize=True),
                 dict(lr=0.02, momentum_decay=0, weight_decay=0.05, decoupled_weight_decay=True, maximize=True)]
RADAM_CONFIGS = [dict(), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True),
                 dict(lr=0.01, betas=(0.5, 0.6)), dict(lr=0.01, maximize=True, eps=1e-3),
                 dict(lr=0.02, betas=(0.8, 0.5), weight_decay=0.2, decoupled_weight_decay=True, maximize=True)]
ASGD_CONFIGS = [dict(), dict(lr=0.1, lambd=0.1, alpha=0.5), dict(lr=0.05, t0=3), dict(lr=0.05, weight_decay=0.1, t0=2),
                dict(lr=0.05, maximize=True, t0=0, lambd=0.01)]
RPROP_CONFIGS = [dict(), dict(lr=0.1, etas=(0.3, 1.5)), dict(lr=0.05, step_sizes=(0.01, 0.2)), dict(lr=0.01, maximize=True),
                 dict(lr=0.2, etas=(0.7, 1.1), step_sizes=(0.05, 0.3), maximize=True)]
STEPS_PAST_WARMUP = 9  # RAdam's rectified step starts at step 6 with the default betas

TENSOR_STATE_OPTIMIZERS = [("Adadelta", ADADELTA_CONFIGS), ("Adamax", ADAMAX_CONFIGS), ("NAdam", NADAM_CONFIGS),
                           ("RAdam", RADAM_CONFIGS), ("ASGD", ASGD_CONFIGS), ("Rprop", RPROP_CONFIGS)]
CASES = [(name, kwargs) for name, configs in TENSOR_STATE_OPTIMIZERS for kwargs in configs]


@pytest.mark.parametrize("name,kwargs", CASES)
def test_matches_torch(name, kwargs):
    _run_both(getattr(engine.optim, name), getattr(torch.optim, name), kwargs, steps=STEPS_PAST_WARMUP)


@pytest.mark.parametrize("name,kwargs", [("Adadelta", dict(weight_decay=0.1)), ("NAdam", dict(lr=0.01)),
                                         ("RAdam", dict(lr=0.01)), ("ASGD", dict(t0=2)), ("Rprop", dict())])
def test_float64_params(name, kwargs):
    _run_both(getattr(engine.optim, name), getattr(torch.optim, name), kwargs, steps=STEPS_PAST_WARMUP, rtol=1e-12,
              dtype=np.float64)


# ---- a small model with a loss ---------------------------------------------------------------------
def _models(dtype=np.float32):
    """The same tanh MLP on both sides, and a fixed regression batch."""
    rng = np.random.default_rng(7)
    shapes = [(6, 5), (6,), (3, 6), (3,)]
    arrays = [(rng.standard_normal(s) * 0.5).astype(dtype) for s in shapes]
    x = rng.standard_normal((9, 5)).astype(dtype)
    y = rng.standard_normal((9, 3)).astype(dtype)
    ours = [engine.tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in arrays]
    return (ours, engine.tensor(x), engine.tensor(y)), (theirs, torch.tensor(x), torch.tensor(y))


def _loss(lib, params, x, y):
    w1, b1, w2, b2 = params
    hidden = lib.tanh(x @ w1.T + b1)
    return ((hidden @ w2.T + b2 - y) ** 2).mean()


def _closure(lib, optimizer, params, x, y):
    def closure():
        optimizer.zero_grad()
        loss = _loss(lib, params, x, y)
        loss.backward()
        return loss
    return closure


ALL_OPTIMIZERS = [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)), ("Adam", dict(lr=0.01, amsgrad=True)),
                  ("AdamW", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, centered=True)), ("Adagrad", dict(lr=0.1)),
                  ("Adadelta", dict()), ("Adamax", dict(lr=0.01)), ("NAdam", dict(lr=0.01)), ("RAdam", dict(lr=0.01)),
                  ("ASGD", dict(lr=0.05, t0=3)), ("Rprop", dict(lr=0.01))]


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS)
def test_training_a_model_matches_torch_with_a_scheduler(name, kwargs):
    """Gradients from a loss, param groups with different lrs and a StepLR driving them."""
    (ours, x, y), (theirs, tx, ty) = _models()
    opt_ours = getattr(engine.optim, name)([{"params": ours[:2]}, {"params": ours[2:], "lr": kwargs.get("lr", 1.0) / 2}],
                                           **kwargs)
    opt_theirs = getattr(torch.optim, name)([{"params": theirs[:2]}, {"params": theirs[2:],
                                                                       "lr": kwargs.get("lr", 1.0) / 2}], **kwargs)
    sched_ours = engine.optim.lr_scheduler.StepLR(opt_ours, step_size=3, gamma=0.5)
    sched_theirs = torch.optim.lr_scheduler.StepLR(opt_theirs, step_size=3, gamma=0.5)
    for step in range(10):
        loss_ours = opt_ours.step(_closure(engine, opt_ours, ours, x, y))
        loss_theirs = opt_theirs.step(_closure(torch, opt_theirs, theirs, tx, ty))
        sched_ours.step()
        sched_theirs.step()
        assert_close(loss_ours.item(), loss_theirs.item(), 1e-5, f"{name} loss at step {step}")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a.detach().numpy(), b.detach().numpy(), 1e-5, f"{name} param {i}")
    assert sched_ours.get_last_lr() == sched_theirs.get_last_lr()
    _assert_state_dicts(opt_ours.state_dict(), opt_theirs.state_dict(), 1e-5)


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS)
def test_state_dict_round_trip_mid_training_resumes_identically(name, kwargs):
    (ours, x, y), _ = _models()
    cls = getattr(engine.optim, name)
    optimizer = cls(ours, **kwargs)
    for _ in range(4):
        optimizer.step(_closure(engine, optimizer, ours, x, y))
    resumed_params = [engine.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ours]
    resumed = cls(resumed_params, **{**kwargs, "lr": 123.0})
    resumed.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    assert resumed.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"]
    for _ in range(4):
        optimizer.step(_closure(engine, optimizer, ours, x, y))
        resumed.step(_closure(engine, resumed, resumed_params, x, y))
    for a, b in zip(ours, resumed_params):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("name,kwargs", [("NAdam", dict(lr=0.01)), ("ASGD", dict(t0=1)), ("Rprop", dict())])
def test_torch_state_dict_loads_into_ours(name, kwargs):
    """A state_dict saved by torch mid-training (converted through numpy) continues identically here."""
    arrays = _init_arrays()
    ours, theirs = _pair(arrays)
    opt_theirs = getattr(torch.optim, name)(theirs, **kwargs)
    for step in range(3):
        _set_grads(step, ours, theirs)
        opt_theirs.step()
    saved = opt_theirs.state_dict()
    saved = {"param_groups": saved["param_groups"],
             "state": {i: {k: engine.tensor(v.numpy()) for k, v in s.items()} for i, s in saved["state"].items()}}
    ours = [engine.tensor(p.detach().numpy().copy(), requires_grad=True) for p in theirs]
    opt_ours = getattr(engine.optim, name)(ours, **kwargs)
    opt_ours.load_state_dict(saved)
    for step in range(3, 8):
        _set_grads(step, ours, theirs)
        opt_ours.step()
        opt_theirs.step()
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a.detach().numpy(), b.detach().numpy(), 1e-6, f"{name} param {i}")


# ---- LBFGS -------------------------------------------------------------------------------------------
def _lbfgs_pair(kwargs, dtype=np.float32):
    (ours, x, y), (theirs, tx, ty) = _models(dtype)
    return (ours, x, y, engine.optim.LBFGS(ours, **kwargs)), (theirs, tx, ty, torch.optim.LBFGS(theirs, **kwargs))


def _assert_lbfgs_state(ours, theirs, rtol):
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        mine = ours[key]
        if isinstance(value, list):
            assert len(mine) == len(value), key
            for i, (a, b) in enumerate(zip(mine, value)):
                if b is None:
                    assert a is None, f"{key}[{i}]"
                else:
                    assert_close(a.numpy(), b.numpy(), rtol, f"state {key}[{i}]")
        elif isinstance(value, torch.Tensor):
            assert isinstance(mine, engine.Tensor) and mine.numpy().dtype == value.numpy().dtype, key
            assert_close(mine.numpy(), value.numpy(), rtol, f"state {key}")
        else:
            assert type(mine) is type(value), key
            assert_close(mine, value, rtol, f"state {key}")


LBFGS_CONFIGS = [dict(), dict(lr=0.5, max_iter=4, history_size=3), dict(line_search_fn="strong_wolfe"),
                 dict(line_search_fn="strong_wolfe", max_iter=5, history_size=2, max_eval=7),
                 dict(maximize=True, max_iter=3, lr=0.1), dict(line_search_fn="strong_wolfe", maximize=True, max_iter=4),
                 dict(tolerance_grad=1e-2, tolerance_change=1e-4)]


@pytest.mark.parametrize("kwargs", LBFGS_CONFIGS)
def test_lbfgs_matches_torch(kwargs):
    """Float64, where torch's and our sums agree to rounding, so every branch of the search is taken alike."""
    (ours, x, y, opt_ours), (theirs, tx, ty, opt_theirs) = _lbfgs_pair(kwargs, np.float64)
    sign = -1 if kwargs.get("maximize") else 1

    def closure(lib, opt, params, xs, ys):
        def run():
            opt.zero_grad()
            loss = sign * _loss(lib, params, xs, ys)
            loss.backward()
            return loss
        return run

    for step in range(3):
        loss_ours = opt_ours.step(closure(engine, opt_ours, ours, x, y))
        loss_theirs = opt_theirs.step(closure(torch, opt_theirs, theirs, tx, ty))
        assert_close(loss_ours.item(), loss_theirs.item(), 1e-10, f"loss at step {step}")
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_close(a.detach().numpy(), b.detach().numpy(), 1e-9, f"param {i} after step {step}")
    _assert_lbfgs_state(opt_ours.state_dict()["state"][0], opt_theirs.state_dict()["state"][0], 1e-8)
    assert opt_ours.state_dict()["param_groups"] == opt_theirs.state_dict()["param_groups"]


@pytest.mark.parametrize("kwargs", [dict(max_iter=5), dict(line_search_fn="strong_wolfe", max_iter=5)])
def test_lbfgs_float32_stays_close_to_torch(kwargs):
    (ours, x, y, opt_ours), (theirs, tx, ty, opt_theirs) = _lbfgs_pair(kwargs)
    for _ in range(2):
        opt_ours.step(_closure(engine, opt_ours, ours, x, y))
        opt_theirs.step(_closure(torch, opt_theirs, theirs, tx, ty))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a.detach().numpy(), b.detach().numpy(), 1e-4, f"param {i}")
    state = opt_ours.state[ours[0]]
    assert state["d"].dtype == engine.float32 and state["ro"][0].dtype == engine.float32


def _rosenbrock(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


@pytest.mark.parametrize("kwargs", [dict(line_search_fn="strong_wolfe"),
                                    dict(line_search_fn="strong_wolfe", lr=3.0, max_iter=10, history_size=3)])
def test_lbfgs_strong_wolfe_on_rosenbrock_matches_torch(kwargs):
    """A curved valley: the line search brackets, zooms and moves trial steps away from the ends."""
    start = np.array([-1.5, 2.0, -0.5, 1.2, 0.3])
    ours, theirs = engine.tensor(start.copy(), requires_grad=True), torch.nn.Parameter(torch.tensor(start.copy()))
    opt_ours, opt_theirs = engine.optim.LBFGS([ours], **kwargs), torch.optim.LBFGS([theirs], **kwargs)

    def closure(optimizer, x):
        def run():
            optimizer.zero_grad()
            loss = _rosenbrock(x)
            loss.backward()
            return loss
        return run

    for step in range(4):
        opt_ours.step(closure(opt_ours, ours))
        opt_theirs.step(closure(opt_theirs, theirs))
        assert_close(ours.detach().numpy(), theirs.detach().numpy(), 1e-10, f"x after step {step}")
    _assert_lbfgs_state(opt_ours.state_dict()["state"][0], opt_theirs.state_dict()["state"][0], 1e-6)


def test_cubic_minimum_matches_torchs_interpolation():
    from torch.optim.lbfgs import _cubic_interpolate
    from engine.optim.line_search import cubic_minimum
    rng = np.random.default_rng(11)
    for _ in range(200):
        x1, x2 = rng.uniform(-2, 2, 2)
        f1, f2, g1, g2 = rng.standard_normal(4)
        bounds = tuple(sorted(rng.uniform(-3, 3, 2))) if rng.random() < 0.5 else None
        ours = cubic_minimum(x1, f1, np.float64(g1), x2, f2, np.float64(g2), bounds)
        theirs = _cubic_interpolate(x1, f1, torch.tensor(g1, dtype=torch.float64), x2, f2,
                                    torch.tensor(g2, dtype=torch.float64), bounds)
        assert_close(float(ours), float(theirs), 1e-12, f"cubic minimum of {x1, f1, g1, x2, f2, g2, bounds}")


def test_zoom_moves_trial_steps_away_from_the_interval_ends():
    from engine.optim.line_search import _keep_away_from_ends
    assert _keep_away_from_ends(0.5, [0.0, 1.0], False) == (0.5, False)
    assert _keep_away_from_ends(0.95, [0.0, 1.0], False) == (0.95, True)  # close to an end: allowed once
    assert _keep_away_from_ends(0.95, [0.0, 1.0], True) == (0.9, False)  # twice in a row: moved 10% inside
    assert _keep_away_from_ends(1.0, [1.0, 0.0], False) == (0.9, False)  # on an end: moved at once
    assert _keep_away_from_ends(0.02, [0.0, 1.0], True) == (0.1, False)


def test_lbfgs_state_dict_round_trip_resumes_identically():
    (ours, x, y), _ = _models(np.float64)
    optimizer = engine.optim.LBFGS(ours, max_iter=3, line_search_fn="strong_wolfe", history_size=4)
    optimizer.step(_closure(engine, optimizer, ours, x, y))
    resumed_params = [engine.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ours]
    resumed = engine.optim.LBFGS(resumed_params, max_iter=3, line_search_fn="strong_wolfe", history_size=4)
    resumed.load_state_dict(copy.deepcopy(optimizer.state_dict()))
    for _ in range(2):
        optimizer.step(_closure(engine, optimizer, ours, x, y))
        resumed.step(_closure(engine, resumed, resumed_params, x, y))
    for a, b in zip(ours, resumed_params):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_lbfgs_refusals():
    ours, _ = _pair(_init_arrays())
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        engine.optim.LBFGS([{"params": ours[:1]}, {"params": ours[1:]}])
    optimizer = engine.optim.LBFGS(ours, line_search_fn="armijo")
    for p in ours:
        p.grad = engine.ones(*p.shape)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        optimizer.step(lambda: engine.tensor(1.0))
    assert engine.optim.LBFGS(ours).defaults["max_eval"] == 25


# ---- SparseAdam --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.05, betas=(0.5, 0.7)), dict(lr=0.01, maximize=True, eps=1e-4)])
def test_sparse_adam_with_sparse_embedding_matches_torch(kwargs):
    """torch's sparse gradients of ``Embedding(sparse=True)`` against ours, dense with untouched rows zero."""
    rng = np.random.default_rng(5)
    weight = rng.standard_normal((11, 4)).astype(np.float32)
    ours = engine.nn.Embedding(11, 4, sparse=True, padding_idx=2)
    theirs = torch.nn.Embedding(11, 4, sparse=True, padding_idx=2)
    with engine.no_grad():
        ours.weight.copy_(engine.tensor(weight))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(weight))
    opt_ours = engine.optim.SparseAdam(ours.parameters(), **kwargs)
    opt_theirs = torch.optim.SparseAdam(theirs.parameters(), **kwargs)
    for step in range(6):
        index = rng.integers(0, 7, (3, 5))  # rows 7-10 are never looked up; row 2 is padding
        target = rng.standard_normal((3, 5, 4)).astype(np.float32)
        for module, opt, lib in ((ours, opt_ours, engine), (theirs, opt_theirs, torch)):
            opt.zero_grad()
            ((module(lib.tensor(index)) - lib.tensor(target)) ** 2).sum().backward()
            opt.step()
        assert_close(ours.weight.detach().numpy(), theirs.weight.detach().numpy(), 1e-6, f"weights at step {step}")
    np.testing.assert_array_equal(ours.weight.detach().numpy()[7:], weight[7:])
    state_ours, state_theirs = opt_ours.state_dict()["state"][0], opt_theirs.state_dict()["state"][0]
    assert state_ours["step"] == state_theirs["step"] == 6
    assert_close(state_ours["exp_avg_sq"].numpy(), state_theirs["exp_avg_sq"].numpy(), 1e-6, "exp_avg_sq")


def test_sparse_adam_refusals():
    ours, _ = _pair(_init_arrays())
    with pytest.raises(ValueError, match="Invalid learning rate: 0"):
        engine.optim.SparseAdam(ours, lr=0)
    with pytest.raises(ValueError, match="Invalid epsilon value: 0"):
        engine.optim.SparseAdam(ours, eps=0)


# ---- hyper-parameter checks ------------------------------------------------------------------------
@pytest.mark.parametrize("name,kwargs", [
    ("Adadelta", dict(rho=1.5)), ("Adadelta", dict(lr=-1)), ("Adamax", dict(betas=(0.9, 1.0))),
    ("NAdam", dict(momentum_decay=-1)), ("RAdam", dict(eps=-1)), ("ASGD", dict(weight_decay=-1)),
    ("Rprop", dict(etas=(1.2, 0.5))), ("LBFGS", dict(lr=-1)), ("SparseAdam", dict(betas=(-0.1, 0.9))),
])
def test_invalid_hyper_parameters_match_torch(name, kwargs):
    ours, theirs = _pair(_init_arrays())
    with pytest.raises(ValueError) as expected:
        getattr(torch.optim, name)(theirs, **kwargs)
    with pytest.raises(ValueError, match="^" + re.escape(str(expected.value)) + "$"):
        getattr(engine.optim, name)(ours, **kwargs)


# ---- signatures and the implementation switches -------------------------------------------------------
def _optimizer_names(module):
    return sorted(n for n in module.__all__ if inspect.isclass(getattr(module, n, None))
                  and issubclass(getattr(module, n), module.Optimizer) and n != "Optimizer")



def _shape(fn):
    """A signature's parameters as (name, kind, default), without annotations."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_every_torch_optimizer_exists_with_torchs_signature():
    ours, theirs = _optimizer_names(engine.optim), _optimizer_names(torch.optim)
    assert theirs == ours
    for name in ours:
        assert _shape(getattr(engine.optim, name).__init__) == _shape(getattr(torch.optim, name).__init__), name


@pytest.mark.parametrize("name", ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
                                  "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"])
def test_swa_utils_signatures_match_torch(name):
    ours, theirs = getattr(engine.optim.swa_utils, name), getattr(torch.optim.swa_utils, name)
    assert _shape(ours.__init__ if inspect.isclass(ours) else ours) == \
        _shape(theirs.__init__ if inspect.isclass(theirs) else theirs)


def _takes(name, switch):
    return switch in inspect.signature(getattr(torch.optim, name).__init__).parameters


@pytest.mark.parametrize("name", [n for n in _optimizer_names(engine.optim) if _takes(n, "foreach")])
def test_foreach_and_fused_keep_the_math(name):
    """``foreach=True``, and ``fused=True`` where torch has it (on the CPU too), step as torch does."""
    kwargs = dict(lr=0.01) if name != "Adadelta" else {}
    variants = [dict(foreach=True)] + ([dict(fused=True)] if _takes(name, "fused") else [])
    for variant in variants:
        _run_both(getattr(engine.optim, name), getattr(torch.optim, name), {**kwargs, **variant}, steps=4, rtol=1e-5)


@pytest.mark.parametrize("name", [n for n in _optimizer_names(engine.optim) if _takes(n, "differentiable")])
def test_capturable_and_differentiable_are_accepted_into_the_param_groups(name):
    ours, theirs = _pair(_init_arrays())
    flags = {s: True for s in ("capturable", "differentiable") if _takes(name, s)}
    opt_ours = getattr(engine.optim, name)(ours, **flags)
    opt_theirs = getattr(torch.optim, name)(theirs, **flags)
    assert opt_ours.state_dict()["param_groups"] == opt_theirs.state_dict()["param_groups"]


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_refusals_match_torch(name):
    ours, theirs = _pair(_init_arrays())
    for kwargs in (dict(fused=True, differentiable=True), dict(fused=True, foreach=True)):
        with pytest.raises(RuntimeError) as expected:
            getattr(torch.optim, name)(theirs, lr=0.1, **kwargs)
        with pytest.raises(RuntimeError, match="^" + re.escape(str(expected.value)) + "$"):
            getattr(engine.optim, name)(ours, lr=0.1, **kwargs)
    integer = engine.tensor(np.arange(3))
    integer.grad = engine.tensor(np.ones(3, np.int64))
    with pytest.raises(RuntimeError, match=r"`fused=True` requires all the params to be floating point Tensors"):
        getattr(engine.optim, name)([integer], lr=0.1, fused=True).step()


EXTRA = {"Adadelta": dict(lr=10.0), "LBFGS": dict(lr=0.1, max_iter=2)}  # visible steps; the MSE is unbounded above


@pytest.mark.parametrize("name", [n for n in _optimizer_names(engine.optim) if _takes(n, "maximize")
                                  and n != "SparseAdam"])  # sparse gradients only: test_sparse_adam_with_sparse...
def test_maximize_ascends(name):
    """maximize=True climbs the loss that the default descends (every optimizer but Muon takes it)."""
    results = []
    for maximize in (False, True):
        (ours, x, y), _ = _models()
        kwargs = dict(maximize=maximize, **EXTRA.get(name, {}))
        optimizer = getattr(engine.optim, name)(ours, **kwargs)
        before = _loss(engine, ours, x, y).item()
        for _ in range(3):
            optimizer.step(_closure(engine, optimizer, ours, x, y))
        results.append(_loss(engine, ours, x, y).item() - before)
    assert results[0] < 0 < results[1]


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_default_float64_dtype_gives_float64_step(name):
    """torch keeps scalar state in the default dtype (float64 when that is the default)."""
    previous = engine.get_default_dtype()
    torch_previous = torch.get_default_dtype()
    engine.set_default_dtype(engine.float64)
    torch.set_default_dtype(torch.float64)
    try:
        _run_both(getattr(engine.optim, name), getattr(torch.optim, name), {}, steps=2)
    finally:
        engine.set_default_dtype(previous)
        torch.set_default_dtype(torch_previous)


@pytest.mark.parametrize("name,kwargs", ALL_OPTIMIZERS[5:] + [("LBFGS", dict(line_search_fn="strong_wolfe", max_iter=4)),
                                                           ("SparseAdam", dict(lr=0.01))])
def test_on_cuda(cuda, name, kwargs):
    """The new optimizers step CUDA parameters with CuPy arrays, as torch steps the same model on the CPU."""
    (ours, x, y), (theirs, tx, ty) = _models()
    ours = [engine.tensor(p.detach().numpy(), requires_grad=True, device="cuda") for p in ours]
    x, y = x.to("cuda"), y.to("cuda")
    opt_ours = getattr(engine.optim, name)(ours, **kwargs)
    opt_theirs = getattr(torch.optim, name)(theirs, **kwargs)
    for _ in range(3):
        if name == "SparseAdam":  # sparse gradients only
            pairs = ((ours, opt_ours, engine, x, y), (theirs, opt_theirs, torch, tx, ty))
            for params, opt, lib, inputs, targets in pairs:
                opt.zero_grad()
                _loss(lib, params, inputs, targets).backward()
                for p in params:
                    p.grad = p.grad.to_sparse(1)
                opt.step()
        else:
            opt_ours.step(_closure(engine, opt_ours, ours, x, y))
            opt_theirs.step(_closure(torch, opt_theirs, theirs, tx, ty))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.device.type == "cuda"
        assert_close(a.detach().cpu().numpy(), b.detach().numpy(), 1e-4, f"{name} param {i}")
    for value in opt_ours.state[ours[0]].values():
        if isinstance(value, engine.Tensor) and value.dim() > 0:
            assert value.device.type == "cuda"
