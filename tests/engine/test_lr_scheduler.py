"""engine.optim.lr_scheduler against torch.optim.lr_scheduler: lr (and momentum) sequences, state_dict."""
import copy
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.optim
from engine.optim import lr_scheduler as ours_lrs
from torch.optim import lr_scheduler as torch_lrs

N_STEPS = 30


def _optimizer(lib, kind="SGD", two_groups=True):
    """An optimizer with two param groups of different lr on either library."""
    p1 = lib.tensor(np.ones(3, np.float32), requires_grad=True)
    p2 = lib.tensor(np.ones(2, np.float32), requires_grad=True)
    groups = [{"params": [p1]}, {"params": [p2], "lr": 0.05}] if two_groups else [p1, p2]
    if kind == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.1)


def _hyper(opt):
    """What a scheduler may change: lr, momentum and beta1 of every group."""
    return [(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups]


def _sequence(lib, lrs, make, kind="SGD", steps=N_STEPS, metrics=None):
    opt = _optimizer(lib, kind)
    sched = make(lrs, opt)
    seq = [(_hyper(opt), list(sched.get_last_lr()))]
    for i in range(steps):
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
        seq.append((_hyper(opt), list(sched.get_last_lr())))
    return seq


SCHEDULERS = {
    "StepLR": lambda L, o: L.StepLR(o, step_size=3, gamma=0.5),
    "MultiStepLR": lambda L, o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "ExponentialLR": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda L, o: L.CosineAnnealingLR(o, T_max=10),
    "CosineAnnealingLR_eta_min": lambda L, o: L.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "LambdaLR": lambda L, o: L.LambdaLR(o, lr_lambda=lambda e: 0.95 ** e),
    "LambdaLR_per_group": lambda L, o: L.LambdaLR(o, lr_lambda=[lambda e: 1 / (e + 1), lambda e: 0.9 ** e]),
    "MultiplicativeLR": lambda L, o: L.MultiplicativeLR(o, lr_lambda=lambda e: 0.97),
    "LinearLR": lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=7),
    "LinearLR_decay": lambda L, o: L.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=12),
    "ConstantLR": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda L, o: L.PolynomialLR(o, total_iters=12, power=2.0),
    "CosineAnnealingWarmRestarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=0.001),
    "CosineAnnealingWarmRestarts_T1": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=5),
    "SequentialLR": lambda L, o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, total_iters=5),
                                                    L.CosineAnnealingLR(o, T_max=20)], milestones=[5]),
    "SequentialLR_three": lambda L, o: L.SequentialLR(o, [L.ConstantLR(o, factor=0.2, total_iters=3),
                                                          L.ExponentialLR(o, gamma=0.8),
                                                          L.StepLR(o, step_size=4)], milestones=[4, 12]),
    "ChainedScheduler": lambda L, o: L.ChainedScheduler([L.ExponentialLR(o, gamma=0.9),
                                                         L.MultiStepLR(o, milestones=[4, 8], gamma=0.5)]),
    "OneCycleLR_cos": lambda L, o: L.OneCycleLR(o, max_lr=1.0, total_steps=N_STEPS),
    "OneCycleLR_linear_three_phase": lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 2.0], epochs=5, steps_per_epoch=7,
                                                               anneal_strategy="linear", three_phase=True,
                                                               div_factor=10.0, final_div_factor=100.0),
    "OneCycleLR_pct_no_momentum": lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=40, pct_start=0.45,
                                                            cycle_momentum=False),
    "CyclicLR_triangular2": lambda L, o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4, step_size_down=3,
                                                    mode="triangular2"),
    "CyclicLR_exp_range": lambda L, o: L.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=0.2, step_size_up=5,
                                                  mode="exp_range", gamma=0.95),
}


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_sequence_matches_torch(name):
    make = SCHEDULERS[name]
    assert _sequence(engine, ours_lrs, make) == _sequence(torch, torch_lrs, make)


@pytest.mark.parametrize("name", ["OneCycleLR_cos", "OneCycleLR_linear_three_phase", "CyclicLR_triangular2"])
def test_cycle_momentum_on_adam_betas(name):
    make = SCHEDULERS[name]
    assert _sequence(engine, ours_lrs, make, "Adam") == _sequence(torch, torch_lrs, make, "Adam")


def test_two_schedulers_chained_by_hand():
    def both(L, o):
        first = L.StepLR(o, step_size=3, gamma=0.5)
        second = L.CosineAnnealingLR(o, T_max=6)
        return L.ChainedScheduler([first, second])
    assert _sequence(engine, ours_lrs, both) == _sequence(torch, torch_lrs, both)


@pytest.mark.parametrize("kwargs", [dict(), dict(mode="max", factor=0.5, patience=2, cooldown=2),
                                    dict(threshold_mode="abs", threshold=0.1, patience=1, min_lr=[0.02, 0.03]),
                                    dict(mode="max", threshold_mode="abs", patience=0, min_lr=0.01, eps=1e-3)])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.9, 0.9, 0.9, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0] * 2
    make = lambda L, o: L.ReduceLROnPlateau(o, **kwargs)  # noqa: E731
    ours = _sequence(engine, ours_lrs, make, metrics=metrics)
    assert ours == _sequence(torch, torch_lrs, make, metrics=metrics)


@pytest.mark.parametrize("name", ["StepLR", "SequentialLR", "OneCycleLR_cos", "CosineAnnealingWarmRestarts",
                                  "LambdaLR", "ChainedScheduler", "CyclicLR_exp_range"])
def test_state_dict_round_trip(name):
    make = SCHEDULERS[name]
    opt = _optimizer(engine)
    sched = make(ours_lrs, opt)
    for _ in range(10):
        opt.step()
        sched.step()
    saved = copy.deepcopy(sched.state_dict())
    opt_state = copy.deepcopy(opt.state_dict())
    assert "optimizer" not in saved
    fresh_opt = _optimizer(engine)
    fresh = make(ours_lrs, fresh_opt)
    fresh.load_state_dict(saved)
    fresh_opt.load_state_dict(opt_state)
    for _ in range(10):
        opt.step()
        fresh_opt.step()
        sched.step()
        fresh.step()
        assert fresh.get_last_lr() == sched.get_last_lr()
        assert _hyper(fresh_opt) == _hyper(opt)


def test_reduce_lr_on_plateau_state_dict_round_trip():
    opt = _optimizer(engine)
    sched = ours_lrs.ReduceLROnPlateau(opt, patience=1)
    for m in [1.0, 1.0, 1.0]:
        sched.step(m)
    fresh = ours_lrs.ReduceLROnPlateau(_optimizer(engine), patience=5)
    fresh.load_state_dict(sched.state_dict())
    assert fresh.patience == 1 and fresh.best == 1.0 and fresh.num_bad_epochs == sched.num_bad_epochs


def test_initial_lr_and_base_lrs_like_torch():
    for lib, L in ((engine, ours_lrs), (torch, torch_lrs)):
        opt = _optimizer(lib)
        sched = L.StepLR(opt, step_size=2)
        assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
        assert sched.base_lrs == [0.1, 0.05] and sched.last_epoch == 0
    opt = _optimizer(engine)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        ours_lrs.StepLR(opt, step_size=2, last_epoch=3)


def test_resume_with_last_epoch_matches_torch():
    def run(lib, L):
        opt = _optimizer(lib)
        for g in opt.param_groups:
            g["initial_lr"] = g["lr"]
        sched = L.CosineAnnealingLR(opt, T_max=10, last_epoch=4)
        out = [sched.get_last_lr()]
        for _ in range(8):
            opt.step()
            sched.step()
            out.append(sched.get_last_lr())
        return out
    assert run(engine, ours_lrs) == run(torch, torch_lrs)


@pytest.mark.parametrize("name,epochs", [("StepLR", [7, 3, 12]), ("ExponentialLR", [4, 9]),
                                         ("CosineAnnealingLR", [13, 2]), ("LinearLR", [3, 20]),
                                         ("CosineAnnealingWarmRestarts", [0, 5, 13, 2.5])])
def test_step_with_epoch_uses_closed_form(name, epochs):
    def run(lib, L):
        opt = _optimizer(lib)
        sched = SCHEDULERS[name](L, opt)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for e in epochs:
                opt.step()
                sched.step(e)
                out.append(sched.get_last_lr())
        return out
    assert run(engine, ours_lrs) == run(torch, torch_lrs)


def test_warnings():
    opt = _optimizer(engine)
    sched = ours_lrs.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        sched.get_lr()
    opt = _optimizer(engine)
    sched = ours_lrs.StepLR(opt, step_size=2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched.step()


def test_errors():
    opt = _optimizer(engine)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        ours_lrs.StepLR([], step_size=1)
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total steps is 3"):
        sched = ours_lrs.OneCycleLR(opt, max_lr=1.0, total_steps=3)
        for _ in range(4):
            opt.step()
            sched.step()
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        ours_lrs.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        ours_lrs.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(ValueError, match="number of milestones to be equal to 0"):
        ours_lrs.SequentialLR(opt, [ours_lrs.StepLR(opt, 1), ours_lrs.StepLR(opt, 2)], milestones=[])
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        ours_lrs.ReduceLROnPlateau(opt, factor=1.5)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        ours_lrs.CosineAnnealingWarmRestarts(opt, T_0=0)
