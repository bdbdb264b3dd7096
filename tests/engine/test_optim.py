"""engine.optim optimizers against torch.optim on identical parameters and gradients."""
import copy

import numpy as np
import pytest
import torch
from op_check import assert_close

import engine
import engine.optim

SHAPES = [(3, 5), (7,), (2, 1, 3)]
N_STEPS = 7


def _init_arrays(dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def _pair(arrays):
    """The same parameters on both sides."""
    ours = [engine.tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in arrays]
    return ours, theirs


def _grad(step, i, param_values):
    """A seeded gradient that also depends on the parameter (so the trajectories interact)."""
    noise = np.random.default_rng(100 * step + i).standard_normal(param_values.shape)
    return (noise + 0.5 * np.sin(param_values)).astype(param_values.dtype)


def _set_grads(step, ours, theirs, skip=()):
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if i in skip:
            continue
        a.grad = engine.tensor(_grad(step, i, a.detach().numpy()))
        b.grad = torch.tensor(_grad(step, i, b.detach().numpy()))


def _assert_params(ours, theirs, rtol, what):
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a.detach().numpy(), b.detach().numpy(), rtol=rtol, what=f"{what} param {i}")


def _assert_state_dicts(ours, theirs, rtol=1e-6):
    assert ours["param_groups"] == theirs["param_groups"]
    assert sorted(ours["state"]) == sorted(theirs["state"])
    for idx, state in theirs["state"].items():
        assert list(ours["state"][idx]) == list(state), f"state keys of param {idx}"
        for key, value in state.items():
            mine = ours["state"][idx][key]
            assert isinstance(mine, engine.Tensor)
            assert mine.numpy().dtype == value.numpy().dtype, f"dtype of state[{idx}][{key!r}]"
            assert_close(mine.numpy(), value.numpy(), rtol=rtol, what=f"state[{idx}][{key!r}]")


def _run_both(ours_cls, torch_cls, kwargs, steps=N_STEPS, rtol=1e-6, dtype=np.float32, skip=()):
    ours, theirs = _pair(_init_arrays(dtype))
    opt_ours, opt_theirs = ours_cls(ours, **kwargs), torch_cls(theirs, **kwargs)
    for step in range(steps):
        _set_grads(step, ours, theirs, skip)
        opt_ours.step()
        opt_theirs.step()
        _assert_params(ours, theirs, rtol, f"{torch_cls.__name__}{kwargs} step {step}")
    _assert_state_dicts(opt_ours.state_dict(), opt_theirs.state_dict(), rtol)
    return opt_ours, ours


SGD_CONFIGS = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.9, dampening=0.3),
               dict(lr=0.1, momentum=0.9, nesterov=True), dict(lr=0.1, weight_decay=0.05),
               dict(lr=0.1, maximize=True), dict(lr=0.02, momentum=0.7, nesterov=True, weight_decay=0.1,
                                                   maximize=True)]
ADAM_CONFIGS = [dict(), dict(lr=0.01, weight_decay=0.1), dict(lr=0.01, amsgrad=True), dict(lr=0.01, maximize=True),
                dict(lr=0.02, amsgrad=True, weight_decay=0.05, maximize=True), dict(lr=0.01, betas=(0.4, 0.6)),
                dict(lr=0.01, eps=1e-3)]
ADAMW_CONFIGS = [dict(), dict(lr=0.01, weight_decay=0.3, amsgrad=True), dict(lr=0.01, maximize=True),
                 dict(lr=0.01, weight_decay=0)]
RMSPROP_CONFIGS = [dict(), dict(centered=True), dict(momentum=0.8), dict(centered=True, momentum=0.5, weight_decay=0.1),
                   dict(maximize=True, lr=0.003), dict(alpha=0.3)]
ADAGRAD_CONFIGS = [dict(), dict(lr=0.1, lr_decay=0.1), dict(weight_decay=0.2), dict(initial_accumulator_value=0.5),
                   dict(maximize=True, eps=1e-3)]


@pytest.mark.parametrize("kwargs", SGD_CONFIGS)
def test_sgd_matches_torch(kwargs):
    _run_both(engine.optim.SGD, torch.optim.SGD, kwargs)


@pytest.mark.parametrize("kwargs", ADAM_CONFIGS)
def test_adam_matches_torch(kwargs):
    _run_both(engine.optim.Adam, torch.optim.Adam, kwargs)


@pytest.mark.parametrize("kwargs", ADAMW_CONFIGS)
def test_adamw_matches_torch(kwargs):
    _run_both(engine.optim.AdamW, torch.optim.AdamW, kwargs)


@pytest.mark.parametrize("kwargs", RMSPROP_CONFIGS)
def test_rmsprop_matches_torch(kwargs):
    _run_both(engine.optim.RMSprop, torch.optim.RMSprop, kwargs)


@pytest.mark.parametrize("kwargs", ADAGRAD_CONFIGS)
def test_adagrad_matches_torch(kwargs):
    _run_both(engine.optim.Adagrad, torch.optim.Adagrad, kwargs)


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.01, amsgrad=True)),
                                         ("RMSprop", dict(centered=True))])
def test_float64_params(name, kwargs):
    _run_both(getattr(engine.optim, name), getattr(torch.optim, name), kwargs, rtol=1e-12, dtype=np.float64)


def test_adam_decoupled_weight_decay_flag_is_adamw():
    _run_both(engine.optim.Adam, torch.optim.Adam, dict(lr=0.01, weight_decay=0.2, decoupled_weight_decay=True))
    opt = engine.optim.AdamW([engine.zeros(2, requires_grad=True)])
    assert isinstance(opt, engine.optim.Adam) and opt.defaults["weight_decay"] == 1e-2


def test_param_without_grad_is_skipped():
    opt, ours = _run_both(engine.optim.Adam, torch.optim.Adam, dict(lr=0.01), skip=(1,))
    assert ours[1] not in opt.state
    np.testing.assert_array_equal(ours[1].detach().numpy(), _init_arrays()[1])


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_param_groups_with_different_lr(name):
    arrays = _init_arrays()
    ours, theirs = _pair(arrays)
    extra = dict(momentum=0.9) if name in ("SGD", "RMSprop") else {}
    opt_ours = getattr(engine.optim, name)([{"params": ours[:2]}, {"params": ours[2:], "lr": 0.3, **extra}], lr=0.01)
    opt_theirs = getattr(torch.optim, name)([{"params": theirs[:2]}, {"params": theirs[2:], "lr": 0.3, **extra}],
                                            lr=0.01)
    for step in range(N_STEPS):
        _set_grads(step, ours, theirs)
        opt_ours.step()
        opt_theirs.step()
        _assert_params(ours, theirs, 1e-6, f"{name} groups step {step}")
    _assert_state_dicts(opt_ours.state_dict(), opt_theirs.state_dict())


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                         ("Adam", dict(lr=0.01, amsgrad=True)), ("AdamW", dict(lr=0.01)),
                                         ("RMSprop", dict(centered=True, momentum=0.3)),
                                         ("Adagrad", dict(lr_decay=0.01))])
def test_state_dict_save_load_resumes_identically(name, kwargs):
    cls = getattr(engine.optim, name)
    arrays = _init_arrays()
    params = [engine.tensor(a.copy(), requires_grad=True) for a in arrays]
    opt = cls(params, **kwargs)
    dummy = [torch.nn.Parameter(torch.tensor(a.copy())) for a in arrays]  # grads only
    for step in range(3):
        _set_grads(step, params, dummy)
        opt.step()
    saved = copy.deepcopy(opt.state_dict())
    resumed_params = [engine.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    resumed = cls(resumed_params, **{**kwargs, "lr": 123.0})
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert all(a is b for a, b in zip(resumed.param_groups[0]["params"], resumed_params))
    for step in range(3, 7):
        _set_grads(step, params, dummy)
        _set_grads(step, resumed_params, dummy)
        opt.step()
        resumed.step()
        for a, b in zip(params, resumed_params):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_load_state_dict_from_torch_layout_mismatch_errors():
    ours, _ = _pair(_init_arrays())
    opt = engine.optim.SGD(ours, lr=0.1)
    small = engine.optim.SGD(ours[:2], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the "
                                         "size of optimizer's group"):
        opt.load_state_dict(small)
    two_groups = engine.optim.SGD([{"params": ours[:1]}, {"params": ours[1:]}], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict(two_groups)


def test_loaded_state_moves_to_param_dtype():
    params = [engine.tensor(np.ones(3, np.float64), requires_grad=True)]
    opt = engine.optim.Adam(params)
    params[0].grad = engine.tensor(np.ones(3, np.float64))
    opt.step()
    sd = opt.state_dict()
    f32 = [engine.tensor(np.ones(3, np.float32), requires_grad=True)]
    other = engine.optim.Adam(f32)
    other.load_state_dict(sd)
    assert other.state[f32[0]]["exp_avg"].dtype == engine.float32
    assert other.state[f32[0]]["step"].dtype == engine.float32


def test_zero_grad_set_to_none_semantics():
    ours, _ = _pair(_init_arrays())
    opt = engine.optim.SGD(ours, lr=0.1)
    for p in ours:
        p.grad = engine.ones(*p.shape)
    grad_array = ours[0].grad._data
    opt.zero_grad(set_to_none=False)
    assert ours[0].grad._data is grad_array
    assert all((p.grad.numpy() == 0).all() for p in ours)
    opt.zero_grad()
    assert all(p.grad is None for p in ours)


def test_updates_in_place_and_bump_version():
    ours, theirs = _pair(_init_arrays())
    opt = engine.optim.Adam(ours, lr=0.01)
    arrays = [p._data for p in ours]
    versions = [p._version for p in ours]
    _set_grads(0, ours, theirs)
    opt.step()
    assert all(p._data is a for p, a in zip(ours, arrays))
    assert all(p._version > v for p, v in zip(ours, versions))
    assert not opt.state[ours[0]]["exp_avg"].requires_grad


def test_step_returns_closure_loss_and_params_from_generator():
    ours, theirs = _pair(_init_arrays())
    opt = engine.optim.SGD((p for p in ours), lr=0.1)
    calls = []

    def closure():
        calls.append(engine.is_grad_enabled())
        _set_grads(0, ours, theirs)
        return 1.5

    assert opt.step(closure) == 1.5
    assert calls == [True]
    assert opt.step() is None


def test_step_hooks():
    ours, _ = _pair(_init_arrays())
    opt = engine.optim.SGD(ours, lr=0.1)
    seen = []
    handle = opt.register_step_pre_hook(lambda o, args, kwargs: seen.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append("post"))
    opt.step()
    handle.remove()
    opt.step()
    assert seen == ["pre", "post", "post"]


@pytest.mark.parametrize("make,match", [
    (lambda p: engine.optim.SGD(p, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda p: engine.optim.SGD(p, lr=0.1, momentum=-1), "Invalid momentum value: -1"),
    (lambda p: engine.optim.SGD(p, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum"),
    (lambda p: engine.optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda p: engine.optim.Adam(p, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda p: engine.optim.AdamW(p, weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    (lambda p: engine.optim.RMSprop(p, alpha=-0.5), "Invalid alpha value: -0.5"),
    (lambda p: engine.optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value: -1"),
])
def test_invalid_hyper_parameters(make, match):
    ours, _ = _pair(_init_arrays())
    with pytest.raises(ValueError, match=match):
        make(ours)


def test_invalid_params():
    ours, _ = _pair(_init_arrays())
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        engine.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        engine.optim.SGD(ours[0], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        engine.optim.SGD([{"params": ours[:2]}, {"params": ours[1:]}], lr=0.1)
    opt = engine.optim.SGD(ours[:1], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": ours[0]})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        engine.optim.SGD([np.zeros(3)], lr=0.1)


def test_add_param_group_fills_defaults_and_state_dict_format():
    ours, theirs = _pair(_init_arrays())
    opt_ours = engine.optim.SGD(ours[:1], lr=0.1, momentum=0.9)
    opt_theirs = torch.optim.SGD(theirs[:1], lr=0.1, momentum=0.9)
    opt_ours.add_param_group({"params": ours[1:], "lr": 0.5})
    opt_theirs.add_param_group({"params": theirs[1:], "lr": 0.5})
    assert opt_ours.state_dict()["param_groups"] == opt_theirs.state_dict()["param_groups"]
    assert repr(opt_ours).replace("engine", "torch") == repr(opt_theirs)


def test_default_step_runs_hooks_and_tells_the_scheduler():
    """Optimizers that keep the base step() (Adam, AdamW, ...) run step hooks and mark the step taken, so a
    scheduler stepped after them does not warn."""
    import warnings

    model = engine.nn.Linear(2, 2)
    optimizer = engine.optim.Adam(model.parameters(), lr=0.1)
    scheduler = engine.optim.lr_scheduler.CosineAnnealingLR(optimizer, 5)
    calls = []
    optimizer.register_step_post_hook(lambda opt, args, kwargs: calls.append(opt))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(engine.ones(1, 2)).sum().backward()
        optimizer.step()
        scheduler.step()
    assert calls == [optimizer]
