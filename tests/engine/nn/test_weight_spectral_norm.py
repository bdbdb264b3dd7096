"""The hook-based ``weight_norm`` / ``remove_weight_norm`` and ``spectral_norm`` / ``remove_spectral_norm`` against
torch's: parameter and buffer names, state-dict keys, outputs for the same u/v, gradients, power iterations in
training mode only, loading torch's state dicts, removal, and torch's error messages."""
import warnings

import numpy as np
import pytest
import torch

import engine
from engine.nn import utils as U

RTOL = 1e-10


def _same(ours, theirs, rtol=RTOL):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=rtol, atol=rtol)


def _torch_weight_norm(module, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return torch.nn.utils.weight_norm(module, **kwargs)


def _pair(maker):
    theirs = maker(torch).double()
    ours = maker(engine).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _check_state(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        _same(ours.state_dict()[key], value)


def _forward_backward(ours, theirs, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    out_o, out_t = ours(engine.tensor(x)), theirs(torch.tensor(x))
    _same(out_o, out_t)
    w = np.random.default_rng(1).standard_normal(tuple(out_t.shape))
    (out_o * engine.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    params_t = dict(theirs.named_parameters())
    assert list(dict(ours.named_parameters())) == list(params_t)
    for name, p in ours.named_parameters():
        _same(p.grad, params_t[name].grad)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_as_torch(dim):
    ours, theirs = _pair(lambda lib: lib.nn.Conv1d(3, 4, 3))
    with pytest.warns(FutureWarning, match="`torch.nn.utils.weight_norm` is deprecated in favor of "
                                           "`torch.nn.utils.parametrizations.weight_norm`."):
        assert U.weight_norm(ours, dim=dim) is ours
    _torch_weight_norm(theirs, dim=dim)
    assert list(ours.state_dict()) == ["bias", "weight_g", "weight_v"]
    _check_state(ours, theirs)
    _same(ours.weight, theirs.weight)
    _forward_backward(ours, theirs, (2, 3, 7))
    U.remove_weight_norm(ours)
    torch.nn.utils.remove_weight_norm(theirs)
    assert list(ours.state_dict()) == ["bias", "weight"] and isinstance(ours.weight, engine.nn.Parameter)
    assert not ours._forward_pre_hooks
    _check_state(ours, theirs)


def test_weight_norm_loads_a_torch_state_dict():
    ours, theirs = _pair(lambda lib: lib.nn.Linear(3, 4))
    _torch_weight_norm(theirs, name="weight")
    theirs.weight_g.data.mul_(3)  # a magnitude that is not the weight's norm
    with pytest.warns(FutureWarning):
        U.weight_norm(ours)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    _forward_backward(ours, theirs, (2, 3))


def test_weight_norm_errors():
    ours, _ = _pair(lambda lib: lib.nn.Linear(3, 4))
    with pytest.warns(FutureWarning):
        U.weight_norm(ours)
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
            U.weight_norm(ours)
    with pytest.raises(ValueError, match="weight_norm of 'bias' not found in Linear"):
        U.remove_weight_norm(ours, "bias")
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match="The module passed to `WeightNorm` can't "
                                                                      "have uninitialized parameters."):
        U.weight_norm(engine.nn.LazyLinear(3))


@pytest.mark.parametrize("maker,shape,dim", [
    (lambda lib: lib.nn.Linear(5, 3), (4, 5), None),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), (2, 2, 5, 5), None),
    (lambda lib: lib.nn.ConvTranspose2d(2, 3, 3), (2, 2, 4, 4), None),
    (lambda lib: lib.nn.Conv2d(2, 3, 3), (2, 2, 5, 5), 1)])
def test_spectral_norm_as_torch(maker, shape, dim):
    ours, theirs = _pair(maker)
    torch.manual_seed(11)
    engine.manual_seed(11)
    assert U.spectral_norm(ours, n_power_iterations=3, dim=dim) is ours
    torch.nn.utils.spectral_norm(theirs, n_power_iterations=3, dim=dim)
    assert list(ours.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    _check_state(ours, theirs)
    _forward_backward(ours, theirs, shape)  # training: u and v advance
    _check_state(ours, theirs)
    ours.eval()
    theirs.eval()
    u = ours.weight_u.numpy().copy()
    _same(ours(engine.tensor(np.ones(shape))), theirs(torch.tensor(np.ones(shape))))
    np.testing.assert_array_equal(ours.weight_u.numpy(), u)
    U.remove_spectral_norm(ours)
    torch.nn.utils.remove_spectral_norm(theirs)
    assert list(ours.state_dict()) == ["bias", "weight"] == list(theirs.state_dict())
    _same(ours.weight, theirs.weight)


def test_spectral_norm_loads_a_torch_state_dict():
    ours, theirs = _pair(lambda lib: lib.nn.Linear(4, 6))
    torch.nn.utils.spectral_norm(theirs)
    theirs(torch.ones(1, 4, dtype=torch.float64))
    U.spectral_norm(ours)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    _check_state(ours, theirs)
    _forward_backward(ours, theirs, (3, 4))


def test_spectral_norm_errors():
    ours, _ = _pair(lambda lib: lib.nn.Linear(3, 4))
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        U.spectral_norm(ours, n_power_iterations=0)
    U.spectral_norm(ours)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks on the same parameter weight"):
        U.spectral_norm(ours)
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found in Linear"):
        U.remove_spectral_norm(ours, "bias")
    with pytest.raises(ValueError, match="`SpectralNorm` cannot be applied as parameter `bias` is None"):
        U.spectral_norm(engine.nn.Linear(3, 4, bias=False), "bias")
    with pytest.raises(ValueError, match="The module passed to `SpectralNorm` can't have uninitialized parameters."):
        U.spectral_norm(engine.nn.LazyLinear(3))


def test_spectral_norm_on_the_cuda_backend(cuda):
    ours, theirs = _pair(lambda lib: lib.nn.Linear(5, 3))
    torch.manual_seed(4)
    engine.manual_seed(4)
    U.spectral_norm(ours)
    torch.nn.utils.spectral_norm(theirs)
    ours.to("cuda")
    x = np.random.default_rng(0).standard_normal((2, 5))
    out, out_t = ours(engine.tensor(x, device="cuda")), theirs(torch.tensor(x))
    assert out.device.type == "cuda" and ours.weight_u.device.type == "cuda"
    _same(out, out_t)
    out.sum().backward()
    out_t.sum().backward()
    _same(ours.weight_orig.grad, theirs.weight_orig.grad)
