"""Cases found by differential fuzzing of the lr schedulers and SWALR against torch: random options on several
param groups (float, int and tensor lrs; SGD momentum and Adam betas), 50 steps compared to 1e-12 relative, the
state_dict and a resumed run; a tensor ``base_lr``/``max_lr``/``swa_lr`` shared by all groups (it must be copied
per group, not aliased), a param group added after the scheduler (torch refuses it where the schedule has a
per-group list), the resume KeyError, the ``_LRScheduler`` name and the epoch deprecation warning.
"""
import copy
import random
import warnings

import numpy as np
import pytest
import torch
from torch.optim import lr_scheduler as torch_lrs
from torch.optim import swa_utils as torch_swa

import engine
import engine.optim
from engine.optim import lr_scheduler as ours_lrs
from engine.optim import swa_utils as ours_swa

pytestmark = pytest.mark.slow

N_STEPS = 50
LIBS = {"torch": (torch, torch_lrs, torch_swa), "engine": (engine, ours_lrs, ours_swa)}


def _optimizer(lib, cfg):
    """An SGD (per-group momentum) or Adam optimizer with one parameter per group and the config's lrs."""
    mod = LIBS[lib][0]
    groups = []
    for lr, momentum in zip(cfg["lrs"], cfg["momenta"]):
        group = {"params": [mod.tensor(np.ones(2, np.float32), requires_grad=True)],
                 "lr": mod.tensor(lr, dtype=mod.float64) if cfg["tensor_lr"] else lr}
        if cfg["opt"] == "SGD":
            group["momentum"] = momentum
        groups.append(group)
    if cfg["opt"] == "SGD":
        return mod.optim.SGD(groups, lr=0.1, momentum=0.5)
    return mod.optim.Adam(groups, lr=0.1, betas=(0.9, 0.99))


def _value(v):
    """A hyper-parameter as (float, kind): tensors compare by value and dtype, numbers by value and type."""
    if isinstance(v, (torch.Tensor, engine.Tensor)):
        return float(v.item()), "tensor:" + str(v.dtype).split(".")[-1]
    return v, type(v).__name__


def _hyper(opt, sched):
    """Everything a scheduler may change: each group's lr, momentum and betas, and get_last_lr()."""
    groups = [(_value(g["lr"]), g.get("momentum"), g.get("betas")) for g in opt.param_groups]
    return groups, [_value(v) for v in sched.get_last_lr()]


def _assert_same(theirs, ours, where):
    """Nested dicts/lists/tuples equal: strings exactly, numbers to 1e-12 relative."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), where
        for key in theirs:
            _assert_same(theirs[key], ours[key], f"{where}.{key}")
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(theirs, ours)):
            _assert_same(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float) or isinstance(ours, float):
        assert ours == pytest.approx(theirs, rel=1e-12, abs=0), where
    else:
        assert ours == theirs, where


def _lambda(spec):
    """A plain function (not saved by state_dict) or a callable object (its __dict__ saved)."""
    kind, a = spec
    if kind == "object":
        return _Power(a)
    return (lambda e: a ** e) if kind == "pow" else (lambda e: 1.0 / (e + a))


class _Power:
    def __init__(self, a):
        self.a = a

    def __call__(self, epoch):
        return self.a ** epoch


CHAINABLE = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
             "PolynomialLR", "CosineAnnealingLR", "SWALR"]
ALL = CHAINABLE + ["CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR",
                   "ChainedScheduler"]


def _spec(r, n_groups, name):
    """Random options for scheduler ``name`` (a picklable description, built on either library by _build)."""
    per_group = r.random() < 0.5

    def lrs(low, high):
        return [r.uniform(low, high) for _ in range(n_groups)] if per_group else r.uniform(low, high)

    tensor = r.choice([None, "float32", "float64"]) if name in ("CyclicLR", "OneCycleLR", "SWALR") else None
    if name in ("LambdaLR", "MultiplicativeLR"):
        one = lambda: (r.choice(["pow", "inv", "object"]), r.uniform(0.85, 1.0))  # noqa: E731
        kw = dict(lr_lambda=[one() for _ in range(n_groups)] if per_group else one())
    elif name == "StepLR":
        kw = dict(step_size=r.randint(1, 8), gamma=r.uniform(0.1, 0.99))
    elif name == "MultiStepLR":
        kw = dict(milestones=[r.randint(1, 40) for _ in range(r.randint(1, 5))], gamma=r.uniform(0.1, 0.99))
    elif name == "ConstantLR":
        kw = dict(factor=r.uniform(0.01, 1.0), total_iters=r.randint(0, 20))
    elif name == "LinearLR":
        kw = dict(start_factor=r.uniform(0.01, 1.0), end_factor=r.uniform(0.0, 1.0), total_iters=r.randint(1, 30))
    elif name == "ExponentialLR":
        kw = dict(gamma=r.uniform(0.8, 1.0))
    elif name == "PolynomialLR":
        kw = dict(total_iters=r.randint(1, 40), power=r.uniform(0.1, 3))
    elif name == "CosineAnnealingLR":
        kw = dict(T_max=r.randint(1, 25), eta_min=r.choice([0.0, r.uniform(0, 0.01)]))
    elif name == "CosineAnnealingWarmRestarts":
        kw = dict(T_0=r.randint(1, 10), T_mult=r.randint(1, 3), eta_min=r.choice([0.0, r.uniform(0, 0.01)]))
    elif name == "CyclicLR":
        kw = dict(base_lr=lrs(0.001, 0.01), max_lr=lrs(0.05, 0.2), step_size_up=r.randint(1, 10),
                  step_size_down=r.choice([None, r.randint(1, 10)]),
                  mode=r.choice(["triangular", "triangular2", "exp_range"]), gamma=r.uniform(0.9, 1.0),
                  cycle_momentum=r.random() < 0.7, base_momentum=r.uniform(0.7, 0.85),
                  max_momentum=r.uniform(0.86, 0.95))
    elif name == "OneCycleLR":
        kw = dict(max_lr=lrs(0.05, 0.5), pct_start=r.uniform(0.05, 0.6), anneal_strategy=r.choice(["cos", "linear"]),
                  cycle_momentum=r.random() < 0.7, div_factor=r.uniform(5, 30),
                  final_div_factor=r.uniform(10, 1e4), three_phase=r.random() < 0.4)
        if r.random() < 0.5:
            kw["total_steps"] = r.randint(N_STEPS + 1, 80)
        else:
            kw.update(epochs=r.randint(5, 10), steps_per_epoch=r.randint(11, 15))
    elif name == "ReduceLROnPlateau":
        kw = dict(mode=r.choice(["min", "max"]), factor=r.uniform(0.1, 0.9), patience=r.randint(0, 5),
                  threshold=r.uniform(0, 0.1), threshold_mode=r.choice(["rel", "abs"]), cooldown=r.randint(0, 4),
                  min_lr=lrs(0, 0.01), eps=r.choice([1e-8, r.uniform(0, 1e-3)]))
    elif name == "SWALR":
        kw = dict(swa_lr=lrs(0.001, 0.2), anneal_epochs=r.choice([0, 1, r.randint(2, 30)]),
                  anneal_strategy=r.choice(["cos", "linear"]))
    else:
        subs = [_spec(r, n_groups, r.choice(CHAINABLE)) for _ in range(r.randint(1, 3))]
        kw = dict(schedulers=subs)
        if name == "SequentialLR":
            kw["milestones"] = sorted(r.randint(1, 40) for _ in range(len(subs) - 1))
    return name, kw, tensor


def _build(lib, opt, spec):
    mod, lrs, swa = LIBS[lib]
    name, kw, tensor = spec
    kw = dict(kw)
    if "lr_lambda" in kw:
        lam = kw["lr_lambda"]
        kw["lr_lambda"] = [_lambda(s) for s in lam] if isinstance(lam, list) else _lambda(lam)
    if tensor is not None:
        for key in ("base_lr", "max_lr", "swa_lr"):
            if key in kw:
                as_tensor = lambda v: mod.tensor(v, dtype=getattr(mod, tensor))  # noqa: E731
                kw[key] = [as_tensor(v) for v in kw[key]] if isinstance(kw[key], list) else as_tensor(kw[key])
    if "schedulers" in kw:
        kw["schedulers"] = [_build(lib, opt, s) for s in kw["schedulers"]]
        if name == "ChainedScheduler":
            return lrs.ChainedScheduler(kw["schedulers"], optimizer=opt)
    return (swa if name == "SWALR" else lrs).__dict__[name](opt, **kw)


def _config(seed, name):
    r = random.Random(seed)
    n_groups = r.randint(1, 3)
    cfg = dict(lrs=[r.choice([0.1, 1, r.uniform(0.001, 1)]) for _ in range(n_groups)],
               momenta=[r.uniform(0.5, 0.95) for _ in range(n_groups)], opt=r.choice(["SGD", "Adam"]),
               tensor_lr=r.random() < 0.2)
    metrics = [r.choice([1.0, r.random(), 0.5 - i * 0.001]) for i in range(N_STEPS)]
    return cfg, _spec(r, n_groups, name), metrics


def _step(sched, spec, metric):
    if spec[0] == "ReduceLROnPlateau":
        sched.step(metric)
    else:
        sched.step()


def _run(lib, cfg, spec, metrics, steps=N_STEPS):
    opt = _optimizer(lib, cfg)
    sched = _build(lib, opt, spec)
    out = [_hyper(opt, sched)]
    for metric in metrics[:steps]:
        opt.step()
        _step(sched, spec, metric)
        out.append(_hyper(opt, sched))
    return opt, sched, out


CASES = [(name, seed) for name in ALL for seed in range(3)]


@pytest.mark.parametrize("name,seed", CASES)
def test_random_schedule_matches_torch(name, seed):
    cfg, spec, metrics = _config(seed, name)
    _assert_same(_run("torch", cfg, spec, metrics)[2], _run("engine", cfg, spec, metrics)[2], f"{name} {spec}")


def _plain(v):
    """A state_dict value with tensors as (value, dtype) and Counters as dicts, for comparison."""
    if isinstance(v, (torch.Tensor, engine.Tensor)):
        return _value(v)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


@pytest.mark.parametrize("name,seed", [(name, 10 + seed) for name in ALL for seed in range(2)])
def test_state_dict_and_resume_match_torch(name, seed):
    cfg, spec, metrics = _config(seed, name)
    k = random.Random(seed).randint(0, 25)
    states = {}
    for lib in LIBS:
        opt, sched, _ = _run(lib, cfg, spec, metrics, k)
        states[lib] = (copy.deepcopy(sched.state_dict()), copy.deepcopy(opt.state_dict()))
    theirs, ours = (_plain(states[lib][0]) for lib in LIBS)
    _assert_same(theirs, ours, "state_dict")
    resumed = {}
    for lib in LIBS:
        opt = _optimizer(lib, cfg)
        sched = _build(lib, opt, spec)
        opt.load_state_dict(states[lib][1])
        sched.load_state_dict(states[lib][0])
        resumed[lib] = []
        for metric in metrics[k:k + 15]:
            opt.step()
            _step(sched, spec, metric)
            resumed[lib].append(_hyper(opt, sched))
    _assert_same(resumed["torch"], resumed["engine"], "resumed")


SHARED_TENSOR = {
    "CyclicLR": lambda mod, L, S, o: L.CyclicLR(o, mod.tensor(0.01), [0.1, 0.3], step_size_up=3),
    "CyclicLR_max": lambda mod, L, S, o: L.CyclicLR(o, [0.01, 0.02], mod.tensor(0.2), step_size_up=2,
                                                    mode="triangular2"),
    "OneCycleLR": lambda mod, L, S, o: L.OneCycleLR(o, mod.tensor(0.2), total_steps=12),
    "SWALR": lambda mod, L, S, o: S.SWALR(o, mod.tensor(0.01), anneal_epochs=4),
}


@pytest.mark.parametrize("name", sorted(SHARED_TENSOR))
def test_one_tensor_hyper_parameter_for_all_groups_is_copied_per_group(name):
    """A single tensor given for every group becomes one copy per group: the in-place updates of one
    group's lr must not move another's (before the fix every group followed the last one)."""
    cfg = dict(lrs=[0.1, 0.05], momenta=[0.9, 0.8], opt="SGD", tensor_lr=False)
    seqs = {}
    for lib, (mod, L, S) in LIBS.items():
        opt = _optimizer(lib, cfg)
        sched = SHARED_TENSOR[name](mod, L, S, opt)
        seqs[lib] = [_hyper(opt, sched)]
        for _ in range(10):
            opt.step()
            sched.step()
            seqs[lib].append(_hyper(opt, sched))
        shared = [g["lr"] for g in opt.param_groups]
        assert shared[0] is not shared[1]
        if name == "SWALR":
            assert opt.param_groups[0]["swa_lr"] is not opt.param_groups[1]["swa_lr"]
    _assert_same(seqs["torch"], seqs["engine"], name)


ADDED_GROUP = {
    "LambdaLR": lambda L, o: L.LambdaLR(o, lambda e: 0.9 ** e),
    "MultiplicativeLR": lambda L, o: L.MultiplicativeLR(o, lambda e: 0.9),
    "CosineAnnealingWarmRestarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, 3),
    "CyclicLR": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3),
    "CyclicLR_no_momentum": lambda L, o: L.CyclicLR(o, 0.01, 0.1, step_size_up=3, cycle_momentum=False),
    "CosineAnnealingLR": lambda L, o: L.CosineAnnealingLR(o, T_max=1),
}


@pytest.mark.parametrize("name", sorted(ADDED_GROUP))
def test_group_added_after_the_scheduler_is_refused_as_torch(name):
    """A schedule with one entry per group at construction cannot silently leave a later group unscheduled."""
    cfg = dict(lrs=[0.1, 0.05], momenta=[0.9, 0.8], opt="SGD", tensor_lr=False)
    errors = {}
    for lib, (mod, L, _) in LIBS.items():
        opt = _optimizer(lib, cfg)
        sched = ADDED_GROUP[name](L, opt)
        opt.step()
        sched.step()
        opt.add_param_group({"params": [mod.tensor(np.ones(2, np.float32), requires_grad=True)], "lr": 0.7})
        with pytest.raises(ValueError) as info:
            for _ in range(4):
                opt.step()
                sched.step()
        errors[lib] = str(info.value)
    assert errors["engine"] == errors["torch"]


def test_resume_without_initial_lr_raises_torch_key_error():
    cfg = dict(lrs=[0.1, 0.05], momenta=[0.9, 0.8], opt="SGD", tensor_lr=False)
    messages = {}
    for lib, (_, L, _) in LIBS.items():
        with pytest.raises(KeyError) as info:
            L.StepLR(_optimizer(lib, cfg), step_size=2, last_epoch=3)
        messages[lib] = info.value.args[0].split("\n")[0]
    assert messages["engine"] == messages["torch"]


def test_old_base_class_name_and_epoch_warning():
    """``_LRScheduler`` is still subclassed by older code; step(epoch) warns with EPOCH_DEPRECATION_WARNING."""
    class Warmup(ours_lrs._LRScheduler):
        def get_lr(self):
            return [base * min(1.0, (self.last_epoch + 1) / 4) for base in self.base_lrs]

    opt = _optimizer("engine", dict(lrs=[0.2], momenta=[0.9], opt="SGD", tensor_lr=False))
    sched = Warmup(opt)
    assert isinstance(sched, ours_lrs.LRScheduler)
    assert sched.get_last_lr() == [0.05]
    opt.step()
    with pytest.warns(UserWarning) as record:
        sched.step(2)
    assert [str(w.message) for w in record] == [ours_lrs.EPOCH_DEPRECATION_WARNING]
    assert sched.get_last_lr() == [0.15000000000000002]


def test_shared_tensor_lr_on_cuda(cuda):
    """The per-group copy of one tensor lr works for device tensors too."""
    p = [engine.tensor(np.ones(2, np.float32), device="cuda", requires_grad=True) for _ in range(2)]
    opt = engine.optim.SGD([{"params": [p[0]]}, {"params": [p[1]]}], lr=0.1, momentum=0.9)
    sched = ours_lrs.CyclicLR(opt, engine.tensor(0.01, device="cuda"), [0.1, 0.3], step_size_up=3)
    theirs_opt = torch.optim.SGD([{"params": [torch.ones(2, requires_grad=True)]} for _ in range(2)], lr=0.1,
                                 momentum=0.9)
    theirs = torch_lrs.CyclicLR(theirs_opt, torch.tensor(0.01), [0.1, 0.3], step_size_up=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(5):
            opt.step()
            sched.step()
            theirs_opt.step()
            theirs.step()
    assert opt.param_groups[0]["lr"].device.type == "cuda"
    ours = [float(g["lr"].item()) for g in opt.param_groups]
    assert ours == pytest.approx([float(g["lr"]) for g in theirs_opt.param_groups], rel=1e-6)
