"""``engine.cpu`` against ``torch.cpu``, ``get_device_module``, the deterministic debug mode, inter-op threads,
``set_flush_denormal`` and ``newaxis``."""
import platform
import subprocess
import sys

import numpy as np
import pytest
import torch

import engine

ROOT = __file__.rsplit("/tests/", 1)[0]


def test_cpu_module_answers_as_torch_cpu():
    for name in ("is_available", "is_initialized", "device_count", "current_device"):
        assert getattr(engine.cpu, name)() == getattr(torch.cpu, name)()
    public = {n for n in dir(torch.cpu) if not n.startswith("_") and n[0].islower() or n in ("Stream", "Event")}
    missing = {n for n in public if not hasattr(engine.cpu, n)} - {"lru_cache", "torch", "amp"}
    assert not missing
    engine.cpu.synchronize()
    engine.cpu.set_device("cpu")
    event = engine.cpu.Event()
    event.record()
    assert event.query()


def test_stream_context_swaps_the_current_stream_and_restores_it():
    default = engine.cpu.current_stream()
    inner = engine.cpu.Stream()
    with engine.cpu.stream(inner) as entered:
        assert entered is inner and engine.cpu.current_stream() is inner
    assert engine.cpu.current_stream() is default
    assert inner.record_event() is None and inner.wait_stream(default) is None


def test_capabilities_match_torch_where_both_report_them():
    ours, ref = engine.cpu.get_capabilities(), torch.cpu.get_capabilities()
    assert ours["num_logical_cores"] == ref["num_logical_cores"]
    differing = {k: (ours[k], ref[k]) for k in ours if k in ref and ours[k] != ref[k]}
    assert not differing


def test_cpu_amp_spellings_are_deprecated_twins():
    with pytest.warns(FutureWarning, match=r"torch.amp.autocast\('cpu'"):
        cast = engine.cpu.amp.autocast()
    assert cast.fast_dtype == engine.bfloat16 and cast.device == "cpu"
    with pytest.warns(FutureWarning, match=r"torch.amp.GradScaler\('cpu'"):
        engine.cpu.amp.GradScaler()


def test_get_device_module():
    assert engine.get_device_module("cpu") is engine.cpu
    assert engine.get_device_module(engine.device("cuda", 0)) is engine.cuda
    assert engine.get_device_module() in (engine.cpu, engine.cuda)
    with pytest.raises(RuntimeError, match="Invalid value of device '3', expect torch.device, str, or None"):
        engine.get_device_module(3)


@pytest.mark.parametrize("mode, expected", [("default", 0), ("warn", 1), ("error", 2), (0, 0), (1, 1), (2, 2),
                                            (True, 1)])
def test_deterministic_debug_mode_as_torch(mode, expected):
    try:
        engine.set_deterministic_debug_mode(mode)
        torch.set_deterministic_debug_mode(mode)
        assert engine.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == expected
        assert engine.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
        assert (engine.is_deterministic_algorithms_warn_only_enabled()
                == torch.is_deterministic_algorithms_warn_only_enabled())
    finally:
        engine.set_deterministic_debug_mode(0)
        torch.set_deterministic_debug_mode(0)


@pytest.mark.parametrize("mode, error", [("x", "expected one of `default`, `warn`, `error`, but got x"),
                                         (3, "expected 0, 1, or 2, but got 3"), (1.0, "must be str or int")])
def test_deterministic_debug_mode_errors(mode, error):
    with pytest.raises((RuntimeError, TypeError), match=error.replace("(", r"\(")):
        engine.set_deterministic_debug_mode(mode)


def test_interop_threads_are_set_once_as_torch_allows():
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import engine\n"
              "assert engine.get_num_interop_threads() >= 1\n"
              "engine.set_num_interop_threads(3); assert engine.get_num_interop_threads() == 3\n"
              "try:\n    engine.set_num_interop_threads(4)\nexcept RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script, ROOT], capture_output=True, text=True, check=True).stdout
    assert "cannot set number of interop threads after parallel work has started" in out
    with pytest.raises(RuntimeError, match="expects a positive integer"):
        engine.set_num_interop_threads(0)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="flush-to-zero is an x86 MXCSR switch")
def test_flush_denormal_zeroes_denormals_in_this_thread():
    values = np.array([1e-323, 1e-310, 1.0])
    try:
        assert engine.set_flush_denormal(True)
        np.testing.assert_array_equal(values * 1.0, [0.0, 0.0, 1.0])
        assert np.float32(1e-40) * np.float32(1) == 0
    finally:
        assert engine.set_flush_denormal(False)
    np.testing.assert_array_equal(values * 1.0, values)


def test_newaxis_indexes_as_none():
    x = engine.arange(6).reshape(2, 3)
    assert engine.newaxis is torch.newaxis is None
    assert tuple(x[:, engine.newaxis].shape) == (2, 1, 3)
