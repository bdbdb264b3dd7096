"""``nn.utils.skip_init`` (no draw from the global generator), ``convert_conv2d/3d_weight_memory_format``, and
``nn.init``'s ``sparse_`` and deprecated names without the trailing underscore, against torch."""
import numpy as np
import pytest
import torch

import engine
from engine.nn import init
from engine.nn import utils as U


def test_skip_init_leaves_the_global_generator_alone():
    engine.manual_seed(0)
    before = engine.get_rng_state().numpy().copy()
    layer = U.skip_init(engine.nn.Linear, 4, 3, bias=False, dtype=engine.float64)
    np.testing.assert_array_equal(engine.get_rng_state().numpy(), before)
    assert isinstance(layer, engine.nn.Linear) and layer.weight.shape == (3, 4) and layer.bias is None
    assert layer.weight.dtype == engine.float64 and layer.weight.device.type == "cpu"
    assert U.init.skip_init is U.skip_init


def test_skip_init_errors():
    with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
        U.skip_init(int)

    class NoDevice(engine.nn.Module):
        def __init__(self, size):
            super().__init__()
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
        U.skip_init(NoDevice, 3)


def test_skip_init_on_the_cuda_backend(cuda):
    layer = U.skip_init(engine.nn.Conv2d, 2, 3, 3, device="cuda")
    assert layer.weight.device.type == "cuda"


@pytest.mark.parametrize("convert,layers,channels_last", [
    (U.convert_conv2d_weight_memory_format, lambda lib: [lib.nn.Conv2d(3, 4, 3), lib.nn.ConvTranspose2d(4, 2, 2)],
     "channels_last"),
    (U.convert_conv3d_weight_memory_format, lambda lib: [lib.nn.Conv3d(3, 4, 3), lib.nn.ConvTranspose3d(4, 2, 2)],
     "channels_last_3d")])
def test_convert_conv_weight_memory_format(convert, layers, channels_last):
    model = engine.nn.Sequential(engine.nn.Sequential(*layers(engine)), engine.nn.Linear(2, 2))
    weights = [m.weight for m in model[0]]
    values = [w.detach().numpy().copy() for w in weights]
    fmt = getattr(engine, channels_last)
    assert convert(model, fmt) is model
    for layer, weight, value in zip(model[0], weights, values):
        assert layer.weight is weight
        assert weight.is_contiguous(memory_format=fmt) and not weight.is_contiguous()
        np.testing.assert_array_equal(weight.detach().numpy(), value)
    assert model[1].weight.is_contiguous()
    convert(model, engine.contiguous_format)
    assert all(m.weight.is_contiguous() for m in model[0])
    assert U.memory_format.convert_conv2d_weight_memory_format is U.convert_conv2d_weight_memory_format


def test_sparse_as_torch():
    for lib in (engine, torch):
        lib.manual_seed(5)
    ours = init.sparse_(engine.empty(7, 4), 0.4, std=0.5)
    theirs = torch.nn.init.sparse_(torch.empty(7, 4), 0.4, std=0.5)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ((ours.numpy() == 0).sum(axis=0) == 3).all()
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(engine.empty(3), 0.5)


ALIASES = [("uniform", (), {"a": -2.0, "b": 1.0}), ("normal", (), {"std": 0.3}), ("constant", (0.5,), {}),
           ("eye", (), {}), ("xavier_uniform", (), {}), ("xavier_normal", (), {"gain": 2.0}),
           ("kaiming_uniform", (), {"a": 0.1}), ("kaiming_normal", (), {"mode": "fan_out"}),
           ("orthogonal", (), {}), ("sparse", (0.5,), {})]


@pytest.mark.parametrize("name,args,kwargs", ALIASES)
def test_deprecated_names_warn_and_fill_as_torch(name, args, kwargs):
    for lib in (engine, torch):
        lib.manual_seed(9)
    message = f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`."
    with pytest.warns(FutureWarning, match=message):
        ours = getattr(init, name)(engine.empty(5, 4), *args, **kwargs)
    with pytest.warns(FutureWarning, match=message):
        theirs = getattr(torch.nn.init, name)(torch.empty(5, 4), *args, **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
    assert getattr(init, name).__name__ == name


def test_deprecated_dirac():
    with pytest.warns(FutureWarning, match="`nn.init.dirac` is now deprecated in favor of `nn.init.dirac_`."):
        ours = init.dirac(engine.empty(4, 2, 3, 3), groups=2)
    theirs = torch.nn.init.dirac_(torch.empty(4, 2, 3, 3), groups=2)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_sparse_on_the_cuda_backend(cuda):
    weight = init.sparse_(engine.empty(6, 3, device="cuda"), 0.5)
    assert weight.device.type == "cuda"
    assert ((weight.cpu().numpy() == 0).sum(axis=0) == 3).all()
