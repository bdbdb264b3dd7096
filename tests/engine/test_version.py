"""``engine.version`` / ``flowvision.version``: torch.version's and torchvision.version's entries."""
import re

import pytest

import engine
import flowvision
from engine import _device


def test_version_entries_as_torch_version():
    assert engine.version.__version__ == engine.__version__
    assert engine.version.debug is False
    assert (engine.version.hip, engine.version.rocm, engine.version.xpu) == (None, None, None)
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        engine.version.nothing


def test_cuda_is_the_runtime_cupy_loads():
    cupy = _device.cupy_module()
    if cupy is None:
        assert engine.version.cuda is None
        return
    number = cupy.cuda.runtime.runtimeGetVersion()
    assert re.fullmatch(r"\d+\.\d", engine.version.cuda)
    assert engine.version.cuda == f"{number // 1000}.{number % 1000 // 10}"
    assert flowvision.version.cuda == engine.version.cuda


def test_cuda_is_none_without_cupy(monkeypatch):
    monkeypatch.setattr(_device, "cupy_module", lambda: None)
    assert engine.version.cuda is None
    assert flowvision.version.cuda is None
