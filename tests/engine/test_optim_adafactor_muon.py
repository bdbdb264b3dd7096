"""Adafactor and Muon against torch.optim: parameters after several steps, state_dict layout and round trip,
options, constructor errors, and CUDA parameters (CuPy)."""
import copy

import numpy as np
import pytest
import torch
from op_check import assert_close
from test_optim import _assert_state_dicts, _pair, _set_grads

import engine
import engine.optim

ADAFACTOR_SHAPES = [(3, 5), (7,), (2, 4, 3), (2, 1, 3, 2), (1,)]
MUON_SHAPES = [(3, 5), (6, 2), (4, 4)]
ADAFACTOR_CONFIGS = [dict(), dict(lr=0.05, weight_decay=0.1), dict(beta2_decay=-0.5, d=2.0),
                     dict(eps=(1e-20, 1e-2), maximize=True), dict(foreach=True, lr=0.2),
                     dict(lr=0.03, weight_decay=0.05, maximize=True, foreach=False)]
MUON_CONFIGS = [dict(), dict(lr=0.02, momentum=0.9), dict(lr=0.02, nesterov=False, weight_decay=0.0),
                dict(lr=0.01, adjust_lr_fn="match_rms_adamw"), dict(lr=0.01, adjust_lr_fn="spectral_unclamped"),
                dict(lr=0.05, ns_steps=3, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3)]
MUON_ATOL = 1e-6  # bfloat16 iterations rounded as torch's: measured differences <= 1.2e-7 over these configs


def _arrays(shapes, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


def _run(name, shapes, kwargs, steps, dtype, check):
    ours, theirs = _pair(_arrays(shapes, dtype))
    opt_ours, opt_theirs = getattr(engine.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    for step in range(steps):
        _set_grads(step, ours, theirs)
        opt_ours.step()
        opt_theirs.step()
        for i, (a, b) in enumerate(zip(ours, theirs)):
            check(a.detach().numpy(), b.detach().numpy(), f"{name}{kwargs} step {step} param {i}")
    return (ours, opt_ours), (theirs, opt_theirs)


def _close(rtol):
    return lambda a, b, what: assert_close(a, b, rtol=rtol, what=what)


def _muon_close(a, b, what):
    np.testing.assert_allclose(a, b, atol=MUON_ATOL, rtol=0, err_msg=what)


@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("kwargs", ADAFACTOR_CONFIGS)
def test_adafactor_matches_torch(kwargs, dtype, rtol):
    (_, opt_ours), (_, opt_theirs) = _run("Adafactor", ADAFACTOR_SHAPES, kwargs, 6, dtype, _close(rtol))
    _assert_state_dicts(opt_ours.state_dict(), opt_theirs.state_dict(), rtol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", MUON_CONFIGS)
def test_muon_matches_torch(kwargs, dtype):
    (_, opt_ours), (_, opt_theirs) = _run("Muon", MUON_SHAPES, kwargs, 5, dtype, _muon_close)
    _assert_state_dicts(opt_ours.state_dict(), opt_theirs.state_dict(), 1e-5)


def test_muon_orthogonalizes_the_update():
    """The first step (zero weight decay, no Nesterov) moves a square parameter by ``lr`` times a matrix whose
    singular values all lie in the quintic's band around 1 (roughly 0.7 to 1.2)."""
    start = _arrays([(6, 6)], np.float32, seed=3)[0]
    p = engine.tensor(start.copy(), requires_grad=True)
    opt = engine.optim.Muon([p], lr=1.0, weight_decay=0, momentum=0.0, nesterov=False)
    p.grad = engine.tensor(_arrays([(6, 6)], np.float32, seed=4)[0])
    opt.step()
    singular = np.linalg.svd(start - p.detach().numpy(), compute_uv=False)
    assert 0.6 < singular.min() and singular.max() < 1.3, singular


@pytest.mark.parametrize("name,shapes,kwargs", [("Adafactor", ADAFACTOR_SHAPES, dict(lr=0.05, weight_decay=0.1)),
                                                ("Muon", MUON_SHAPES, dict(lr=0.02))])
def test_state_dict_round_trip_resumes_identically(name, shapes, kwargs):
    check = _muon_close if name == "Muon" else _close(1e-5)
    (ours, opt_ours), (theirs, opt_theirs) = _run(name, shapes, kwargs, 3, np.float32, check)
    copies = [engine.tensor(p.detach().numpy(), requires_grad=True) for p in ours]
    resumed = getattr(engine.optim, name)(copies, **kwargs)
    resumed.load_state_dict(copy.deepcopy(opt_ours.state_dict()))
    assert resumed.state_dict()["param_groups"] == opt_ours.state_dict()["param_groups"]
    torch_copies = [engine.tensor(p.detach().numpy(), requires_grad=True) for p in theirs]
    from_torch = getattr(engine.optim, name)(torch_copies, **kwargs)
    from_torch.load_state_dict(_torch_state_as_engine(opt_theirs.state_dict()))
    for step in range(3, 6):
        _set_grads(step, ours, theirs)
        for p, q in zip(copies + torch_copies, ours + ours):
            p.grad = q.grad.clone()
        for opt in (opt_ours, resumed, opt_theirs, from_torch):
            opt.step()
    for i, (a, b, c, d) in enumerate(zip(copies, ours, theirs, torch_copies)):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy(), err_msg=f"param {i}")
        check(d.detach().numpy(), c.detach().numpy(), f"param {i} resumed from torch's state")


def _torch_state_as_engine(state_dict):
    """torch's state_dict with its tensors as engine tensors (as a checkpoint loads)."""
    state = {idx: {key: engine.tensor(value.numpy()) for key, value in entry.items()}
             for idx, entry in state_dict["state"].items()}
    return {"state": state, "param_groups": state_dict["param_groups"]}


def test_adafactor_state_shapes():
    ours, _ = _pair(_arrays(ADAFACTOR_SHAPES, np.float32))
    opt = engine.optim.Adafactor(ours)
    for p in ours:
        p.grad = engine.ones_like(p)
    opt.step()
    assert list(opt.state[ours[2]]) == ["step", "row_var", "col_var"]
    assert opt.state[ours[2]]["row_var"].shape == (2, 4, 1) and opt.state[ours[2]]["col_var"].shape == (2, 1, 3)
    assert list(opt.state[ours[1]]) == ["step", "variance"]
    assert opt.state[ours[1]]["step"].dtype is engine.float32


@pytest.mark.parametrize("make,match", [
    (lambda p: engine.optim.Adafactor(p, lr=-1), "Learning rate should be >= 0 but is: -1"),
    (lambda p: engine.optim.Adafactor(p, beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    (lambda p: engine.optim.Adafactor(p, eps=(-1, 1e-3)), "epsilon1 should be >= 0"),
    (lambda p: engine.optim.Adafactor(p, eps=(None, -1)), "epsilon2 should be >= 0"),
    (lambda p: engine.optim.Adafactor(p, d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    (lambda p: engine.optim.Adafactor(p, weight_decay=-0.1), "weight_decay should be >= 0"),
    (lambda p: engine.optim.Muon(p, lr=-1), "Learning rate should be >= 0"),
    (lambda p: engine.optim.Muon(p, momentum=-1), "momentum should be >= 0"),
    (lambda p: engine.optim.Muon(p, weight_decay=-1), "weight decay should be >= 0"),
    (lambda p: engine.optim.Muon(p, adjust_lr_fn="spectral"), "Adjust learning rate function spectral is not"),
    (lambda p: engine.optim.Muon(p + [engine.zeros(3, requires_grad=True)]), "Muon only supports 2D parameters"),
    (lambda p: engine.optim.Muon(p + [engine.zeros(2, 3, 4, requires_grad=True)]), r"size: engine.Size\(\[2, 3, 4"),
])
def test_invalid_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make([engine.zeros(2, 3, requires_grad=True)])


def test_muon_ns_steps_limit():
    p = engine.zeros(2, 3, requires_grad=True)
    opt = engine.optim.Muon([p], ns_steps=100)
    p.grad = engine.ones(2, 3)
    with pytest.raises(ValueError, match="less than 100"):
        opt.step()


@pytest.mark.parametrize("name,shapes,kwargs", [("Adafactor", ADAFACTOR_SHAPES, dict(lr=0.05, weight_decay=0.1)),
                                                ("Muon", MUON_SHAPES, dict(lr=0.02))])
def test_on_cuda(cuda, name, shapes, kwargs):
    """CuPy parameters take the same steps as torch's CPU ones."""
    ours, theirs = _pair(_arrays(shapes, np.float32))
    ours = [engine.tensor(p.detach().numpy(), requires_grad=True, device="cuda") for p in ours]
    opt_ours, opt_theirs = getattr(engine.optim, name)(ours, **kwargs), getattr(torch.optim, name)(theirs, **kwargs)
    check = _muon_close if name == "Muon" else _close(1e-5)
    for step in range(3):
        for i, (a, b) in enumerate(zip(ours, theirs)):
            grad = np.random.default_rng(10 * step + i).standard_normal(tuple(b.shape)).astype(np.float32)
            a.grad, b.grad = engine.tensor(grad, device="cuda"), torch.tensor(grad)
        opt_ours.step()
        opt_theirs.step()
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a.device.type == "cuda"
        check(a.detach().cpu().numpy(), b.detach().numpy(), f"{name} param {i}")
    for value in opt_ours.state[ours[0]].values():
        if value.dim() > 0:
            assert value.device.type == "cuda"
