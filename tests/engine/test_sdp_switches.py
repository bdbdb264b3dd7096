"""``engine.backends.cuda``'s switches of SDPA's backends against ``torch.backends.cuda``'s: the same record as
``nn.attention.sdpa_kernel`` after every sequence of calls, the deprecated ``sdp_kernel`` block, bad arguments."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention

import engine
import engine.nn.attention

SWITCHES = ["flash", "mem_efficient", "math", "cudnn"]


def _state(lib):
    return sorted(int(b) for b in lib.nn.attention._cur_sdpa_kernel_backends())


def _switch(lib, name, on):
    getattr(lib.backends.cuda, f"enable_{name}_sdp")(on)


@pytest.fixture(autouse=True)
def _restore():
    yield
    for lib in (engine, torch):
        for name in SWITCHES:
            _switch(lib, name, True)


def test_switches_keep_the_record_sdpa_kernel_keeps():
    rng = np.random.default_rng(5)
    for _ in range(12):
        name, on = SWITCHES[rng.integers(4)], bool(rng.integers(2))
        for lib in (engine, torch):
            _switch(lib, name, on)
        assert _state(engine) == _state(torch)
        for name in SWITCHES:
            assert getattr(engine.backends.cuda, f"{name}_sdp_enabled")() == \
                getattr(torch.backends.cuda, f"{name}_sdp_enabled")()
    with engine.nn.attention.sdpa_kernel([engine.nn.attention.SDPBackend.MATH]):
        assert engine.backends.cuda.math_sdp_enabled() and not engine.backends.cuda.flash_sdp_enabled()
    assert engine.backends.cuda.SDPBackend is engine.nn.attention.SDPBackend


@pytest.mark.parametrize("flags", [dict(enable_flash=False), dict(enable_math=False, enable_cudnn=False)])
def test_deprecated_sdp_kernel_block(flags):
    for lib in (engine, torch):
        before = _state(lib)
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with lib.backends.cuda.sdp_kernel(**flags):
                inside = _state(lib)
        assert _state(lib) == before
        if lib is engine:
            ours = inside
    assert ours == inside


@pytest.mark.parametrize("name", SWITCHES)
def test_switch_takes_a_bool_only(name):
    for lib in (engine, torch):
        with pytest.raises(RuntimeError, match="expects a bool, but got"):
            _switch(lib, name, 1)


def test_is_built_means_cupy_is_installed(monkeypatch):
    from engine import _device
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert engine.backends.cuda.is_built() == (_device.cupy_module() is not None)
    monkeypatch.setattr(_device, "cupy_module", lambda: None)
    assert engine.backends.cuda.is_built() is False
