"""The default device (``set_default_device``, ``get_default_device``, ``with device(...)``) against PyTorch: which
factories follow it (torch's ``*_like`` follow their input, ``from_numpy`` stays on the CPU), that layers make their
parameters there, and that an explicit ``device=`` still wins. torch runs with the ``meta`` device, the engine with
``cuda`` (on the emulation here): what must agree is which results land on the default device."""
import warnings

import numpy as np
import pytest
import torch

import engine

FACTORIES = {
    "empty": lambda t: t.empty(2, 3),
    "zeros": lambda t: t.zeros(2, 3),
    "ones": lambda t: t.ones(4),
    "full": lambda t: t.full((2,), 1.5),
    "rand": lambda t: t.rand(3),
    "randn": lambda t: t.randn(2, 2),
    "randint": lambda t: t.randint(0, 5, (3,)),
    "randperm": lambda t: t.randperm(4),
    "normal": lambda t: t.normal(0.0, 1.0, (3,)),
    "arange": lambda t: t.arange(5),
    "linspace": lambda t: t.linspace(0, 1, 5),
    "logspace": lambda t: t.logspace(0, 1, 5),
    "eye": lambda t: t.eye(3),
    "tensor": lambda t: t.tensor([1.0, 2.0]),
    "tensor_of_cpu_tensor": lambda t: t.tensor(t.ones(2, device="cpu")),
    "as_tensor": lambda t: t.as_tensor([1, 2]),
    "scalar_tensor": lambda t: t.scalar_tensor(3.0),
    "hann_window": lambda t: t.hann_window(5),
    "tril_indices": lambda t: t.tril_indices(3, 3),
    "zeros_like": lambda t: t.zeros_like(t.ones(2, device="cpu")),
    "rand_like": lambda t: t.rand_like(t.ones(2, device="cpu")),
    "full_like": lambda t: t.full_like(t.ones(2, device="cpu"), 2.0),
    "from_numpy": lambda t: t.from_numpy(np.ones(2)),
    "explicit_cpu": lambda t: t.zeros(2, device="cpu"),
    "linear_weight": lambda t: t.nn.Linear(3, 2).weight,
    "conv_bias": lambda t: t.nn.Conv2d(2, 4, 3).bias,
    "batch_norm_buffer": lambda t: t.nn.BatchNorm2d(3).running_mean,
}


def _follows(lib, default, build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.tensor of a tensor
        with lib.device(default):
            return build(lib).device.type == default


@pytest.mark.parametrize("name", list(FACTORIES))
def test_the_same_factories_follow_the_default_device(cuda, name):
    build = FACTORIES[name]
    assert _follows(engine, "cuda", build) == _follows(torch, "meta", build)


def test_set_and_get_default_device_as_torchs(cuda):
    assert engine.get_default_device() == engine.device("cpu") and torch.get_default_device() == torch.device("cpu")
    try:
        engine.set_default_device("cuda")
        assert engine.get_default_device() == engine.device("cuda", 0)
        assert repr(engine.get_default_device()) == "device(type='cuda', index=0)"
        assert engine.ones(2).device.type == "cuda" and engine.nn.Linear(2, 2).weight.device.type == "cuda"
        with engine.device("cpu"):
            assert engine.get_default_device() == engine.device("cpu") and engine.ones(2).device.type == "cpu"
        assert engine.ones(2).device.type == "cuda"
        engine.set_default_device(engine.device("cpu"))
        assert engine.ones(2).device.type == "cpu"
    finally:
        engine.set_default_device(None)
    assert engine.get_default_device() == engine.device("cpu") and engine.zeros(1).device.type == "cpu"


def test_values_are_the_same_on_the_default_device(cuda):
    engine.manual_seed(3)
    with engine.device("cuda"):
        made = [engine.arange(0, 1, 0.25), engine.linspace(-1, 1, 7), engine.eye(2, 3), engine.full((2,), 7)]
    for x, want in zip(made, [torch.arange(0, 1, 0.25), torch.linspace(-1, 1, 7), torch.eye(2, 3),
                              torch.full((2,), 7)]):
        assert x.device.type == "cuda" and x.dtype.itemsize == want.dtype.itemsize
        np.testing.assert_allclose(x.cpu().numpy(), want.numpy(), rtol=1e-6)


def test_on_the_cpu_nothing_changes_without_a_default():
    assert engine.zeros(2).device.type == engine.tensor([1]).device.type == engine.arange(3).device.type == "cpu"
    with engine.device("cpu"):
        assert engine.get_default_device() == engine.device("cpu")
        assert engine.nn.Linear(2, 2).weight.device.type == "cpu"
