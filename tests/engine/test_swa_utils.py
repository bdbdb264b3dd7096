"""engine.optim.swa_utils (AveragedModel, the averaging functions, update_bn, SWALR) against torch's."""
import re
import warnings

import numpy as np
import pytest
import torch
from op_check import assert_close

import engine
import engine.nn as nn
from engine.optim import swa_utils


def _net(lib):
    return lib.nn.Sequential(lib.nn.Linear(5, 7), lib.nn.BatchNorm1d(7), lib.nn.ReLU(), lib.nn.Linear(7, 3))


def _pair():
    """The same small network with BatchNorm on both sides."""
    torch.manual_seed(3)
    theirs = _net(torch)
    ours = _net(engine)
    ours.load_state_dict({k: v.detach().numpy().copy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _batches(n=5, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal((6, 3)).astype(np.float32))
            for _ in range(n)]


def _train_step(lib, model, optimizer, x, y):
    optimizer.zero_grad()
    ((model(lib.tensor(x)) - lib.tensor(y)) ** 2).mean().backward()
    optimizer.step()


def _assert_same_state(ours, theirs, rtol, what):
    ours_sd, theirs_sd = ours.state_dict(), theirs.state_dict()
    assert list(ours_sd) == list(theirs_sd)
    for key, value in theirs_sd.items():
        mine = ours_sd[key].numpy()
        assert mine.dtype == value.numpy().dtype, key
        assert_close(mine, value.numpy(), rtol, f"{what}: {key}")


AVERAGING = [
    ("swa", lambda m: m.AveragedModel),
    ("ema_multi_with_buffers", lambda m: lambda model: m.AveragedModel(model, multi_avg_fn=m.get_ema_multi_avg_fn(0.9),
                                                                       use_buffers=True)),
    ("ema_per_tensor", lambda m: lambda model: m.AveragedModel(model, avg_fn=m.get_ema_avg_fn(0.8))),
    ("swa_multi", lambda m: lambda model: m.AveragedModel(model, multi_avg_fn=m.get_swa_multi_avg_fn())),
    ("swa_per_tensor_with_buffers", lambda m: lambda model: m.AveragedModel(model, avg_fn=m.get_swa_avg_fn(),
                                                                            use_buffers=True)),
    ("custom_avg_fn", lambda m: lambda model: m.AveragedModel(model, avg_fn=lambda a, c, n: 0.25 * a + 0.75 * c)),
]


@pytest.mark.parametrize("name,make", AVERAGING, ids=[a[0] for a in AVERAGING])
def test_averaged_model_follows_torch_during_training(name, make):
    ours, theirs = _pair()
    avg_ours, avg_theirs = make(swa_utils)(ours), make(torch.optim.swa_utils)(theirs)
    opt_ours = engine.optim.SGD(ours.parameters(), lr=0.1, momentum=0.5)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.5)
    for step, (x, y) in enumerate(_batches()):
        _train_step(engine, ours, opt_ours, x, y)
        _train_step(torch, theirs, opt_theirs, x, y)
        avg_ours.update_parameters(ours)
        avg_theirs.update_parameters(theirs)
        _assert_same_state(avg_ours, avg_theirs, 1e-5, f"{name} after update {step}")
    assert int(avg_ours.n_averaged) == 5
    x = _batches(1, seed=9)[0][0]
    avg_ours.eval()
    avg_theirs.eval()
    assert_close(avg_ours(engine.tensor(x)).detach().numpy(), avg_theirs(torch.tensor(x)).detach().numpy(), 1e-5, "forward")


def test_averaged_model_leaves_the_model_alone_and_copies_first():
    ours, _ = _pair()
    before = {k: v.numpy().copy() for k, v in ours.state_dict().items()}
    averaged = swa_utils.AveragedModel(ours)
    assert averaged.module is not ours and averaged.module[0].weight is not ours[0].weight
    with engine.no_grad():
        ours[0].weight.add_(1.0)
    averaged.update_parameters(ours)
    np.testing.assert_array_equal(averaged.module[0].weight.detach().numpy(), before["0.weight"] + 1)
    assert averaged.module[0].weight.requires_grad
    with pytest.raises(AssertionError, match="^Only one of avg_fn and multi_avg_fn should be provided$"):
        swa_utils.AveragedModel(ours, avg_fn=swa_utils.get_swa_avg_fn(), multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    for make in (swa_utils.get_ema_avg_fn, swa_utils.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=re.escape("Invalid decay value 1.5 provided. Please provide a value in "
                                                       "[0,1] range.")):
            make(1.5)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_update_bn_matches_torch(momentum):
    ours, theirs = _pair()
    for model in (ours, theirs):
        model[1].momentum = momentum
        model.eval()
    loader = _batches(4, seed=2)
    swa_utils.update_bn([(engine.tensor(x), y) for x, y in loader], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(x), y) for x, y in loader], theirs)
    _assert_same_state(ours, theirs, 1e-5, "after update_bn")
    assert ours[1].momentum == momentum and not ours.training
    assert int(ours[1].num_batches_tracked) == 4


def test_update_bn_takes_plain_tensors_and_models_without_batchnorm():
    ours, theirs = _pair()
    loader = [x for x, _ in _batches(3)]
    swa_utils.update_bn([engine.tensor(x) for x in loader], ours)
    torch.optim.swa_utils.update_bn([torch.tensor(x) for x in loader], theirs)
    _assert_same_state(ours, theirs, 1e-5, "tensor batches")
    linear = nn.Linear(5, 3)
    before = linear.weight.detach().numpy().copy()
    swa_utils.update_bn([engine.tensor(x) for x in loader], linear)
    np.testing.assert_array_equal(linear.weight.detach().numpy(), before)


def _lr_sequences(make_ours, make_theirs, steps=8):
    ours, theirs = _pair()
    groups_ours = [{"params": list(ours[0].parameters())}, {"params": list(ours[3].parameters()), "lr": 0.3}]
    groups_theirs = [{"params": list(theirs[0].parameters())}, {"params": list(theirs[3].parameters()), "lr": 0.3}]
    opt_ours = engine.optim.SGD(groups_ours, lr=0.1)
    opt_theirs = torch.optim.SGD(groups_theirs, lr=0.1)
    sched_ours, sched_theirs = make_ours(opt_ours), make_theirs(opt_theirs)
    seq_ours, seq_theirs = [sched_ours.get_last_lr()], [sched_theirs.get_last_lr()]
    for _ in range(steps):
        opt_ours.step()
        opt_theirs.step()
        sched_ours.step()
        sched_theirs.step()
        seq_ours.append(sched_ours.get_last_lr())
        seq_theirs.append(sched_theirs.get_last_lr())
    return seq_ours, seq_theirs, sched_ours, opt_ours


@pytest.mark.parametrize("kwargs", [dict(swa_lr=0.05), dict(swa_lr=[0.05, 0.01], anneal_epochs=3),
                                    dict(swa_lr=0.02, anneal_strategy="linear", anneal_epochs=4),
                                    dict(swa_lr=0.2, anneal_epochs=0)])
def test_swalr_matches_torch(kwargs):
    seq_ours, seq_theirs, _, _ = _lr_sequences(lambda o: swa_utils.SWALR(o, **kwargs),
                                               lambda o: torch.optim.swa_utils.SWALR(o, **kwargs))
    np.testing.assert_allclose(seq_ours, seq_theirs, rtol=1e-12)


def test_swalr_state_dict_round_trip_and_warning():
    _, _, scheduler, optimizer = _lr_sequences(lambda o: swa_utils.SWALR(o, 0.05, anneal_strategy="linear"),
                                               lambda o: torch.optim.swa_utils.SWALR(o, 0.05, anneal_strategy="linear"),
                                               steps=3)
    state = scheduler.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state and state["_anneal_strategy"] == "linear"
    resumed = swa_utils.SWALR(optimizer, 0.05)
    resumed.load_state_dict(state)
    assert resumed.anneal_func(0.5) == 0.5 and resumed.last_epoch == scheduler.last_epoch
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        resumed.get_lr()


@pytest.mark.parametrize("kwargs", [dict(anneal_strategy="exp"), dict(anneal_epochs=-1), dict(anneal_epochs=2.5),
                                    dict(swa_lr=[0.1, 0.2, 0.3])])
def test_swalr_refusals_match_torch(kwargs):
    ours, theirs = _pair()
    kwargs = {"swa_lr": 0.1, **kwargs}
    with pytest.raises(ValueError) as expected:
        torch.optim.swa_utils.SWALR(torch.optim.SGD(theirs.parameters(), lr=0.1), **kwargs)
    with pytest.raises(ValueError, match="^" + re.escape(str(expected.value)) + "$"):
        swa_utils.SWALR(engine.optim.SGD(ours.parameters(), lr=0.1), **kwargs)


def test_averaged_model_on_cuda(cuda):
    ours, theirs = _pair()
    averaged_ours = swa_utils.AveragedModel(ours, device="cuda")
    averaged_theirs = torch.optim.swa_utils.AveragedModel(theirs)
    assert averaged_ours.module[0].weight.device.type == "cuda"
    assert averaged_ours.n_averaged.device.type == "cuda"
    opt_ours = engine.optim.SGD(ours.parameters(), lr=0.1)
    opt_theirs = torch.optim.SGD(theirs.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, y in _batches(3):
            _train_step(engine, ours, opt_ours, x, y)
            _train_step(torch, theirs, opt_theirs, x, y)
            averaged_ours.update_parameters(ours)
            averaged_theirs.update_parameters(theirs)
    for key, value in averaged_theirs.state_dict().items():
        mine = averaged_ours.state_dict()[key]
        assert mine.device.type == "cuda", key
        assert_close(mine.cpu().numpy(), value.numpy(), 1e-5, key)
