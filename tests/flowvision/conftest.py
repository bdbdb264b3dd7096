"""Fixtures shared by the flowvision tests."""
import pytest
import torch

import engine
from engine.nn import init


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No network and an empty cache: anything that tries to download fails."""
    monkeypatch.setenv("FLOWVISION_OFFLINE", "1")
    monkeypatch.setenv("FLOWVISION_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def one_thread():
    """One BLAS thread on each side: the attention's many small matrix products pay for every thread handoff,
    and on the shared 2-core test machine a second thread made the transformer tests several times slower."""
    engine_threads, torch_threads = engine.get_num_threads(), torch.get_num_threads()
    engine.set_num_threads(1)
    torch.set_num_threads(1)
    yield
    engine.set_num_threads(engine_threads)
    torch.set_num_threads(torch_threads)


@pytest.fixture
def no_init(monkeypatch):
    """Random initialisation replaced by zeros: big models build in a fraction of a second, for tests that only
    look at the structure or load every weight from torchvision's model."""
    zeros_ = init.zeros_
    for name in ("trunc_normal_", "normal_", "uniform_", "xavier_uniform_", "kaiming_uniform_"):
        monkeypatch.setattr(init, name, lambda tensor, *args, **kwargs: zeros_(tensor))
