"""``engine.accelerator`` against ``torch.accelerator``: on a machine without a GPU both give the same
answers and raise the same exception types; on a GPU (marked ``cuda``) and on the CUDA emulation it is
the CUDA device API under torch's names."""
import importlib.util
import subprocess
import sys
import warnings

import pytest
import torch

import engine
from conftest import REAL_GPU

# (label, call) pairs run the same way on both libraries; ``lib`` is torch or engine.
CALLS = [
    ("is_available()", lambda lib: lib.accelerator.is_available()),
    ("current_accelerator()", lambda lib: lib.accelerator.current_accelerator()),
    ("current_accelerator(check_available=True)",
     lambda lib: lib.accelerator.current_accelerator(check_available=True)),
    ("device_count()", lambda lib: lib.accelerator.device_count()),
    ("current_device_index()", lambda lib: lib.accelerator.current_device_index()),
    ("set_device_index(0)", lambda lib: lib.accelerator.set_device_index(0)),
    ("set_device_index('cpu')", lambda lib: lib.accelerator.set_device_index("cpu")),
    ("set_device_index('cuda')", lambda lib: lib.accelerator.set_device_index("cuda")),
    ("set_device_index(device('cuda', 0))", lambda lib: lib.accelerator.set_device_index(lib.device("cuda", 0))),
    ("synchronize()", lambda lib: lib.accelerator.synchronize()),
    ("synchronize('cuda:0')", lambda lib: lib.accelerator.synchronize("cuda:0")),
    ("synchronize('cpu')", lambda lib: lib.accelerator.synchronize("cpu")),
    ("current_stream()", lambda lib: lib.accelerator.current_stream()),
    ("get_device_capability('cuda:0')", lambda lib: lib.accelerator.get_device_capability("cuda:0")),
    ("get_memory_info()", lambda lib: lib.accelerator.get_memory_info()),
    ("memory_allocated()", lambda lib: lib.accelerator.memory_allocated()),
    ("max_memory_allocated('cuda:0')", lambda lib: lib.accelerator.max_memory_allocated("cuda:0")),
    ("memory_reserved(0)", lambda lib: lib.accelerator.memory_reserved(0)),
    ("memory_stats()", lambda lib: dict(lib.accelerator.memory_stats())),
    ("memory.memory_allocated()", lambda lib: lib.accelerator.memory.memory_allocated()),
    ("empty_cache()", lambda lib: lib.accelerator.empty_cache()),
    ("empty_host_cache()", lambda lib: lib.accelerator.empty_host_cache()),
    ("reset_peak_memory_stats()", lambda lib: lib.accelerator.reset_peak_memory_stats()),
    ("device_index(None)", lambda lib: _enter(lib.accelerator.device_index(None))),
    ("device_index(0)", lambda lib: _enter(lib.accelerator.device_index(0))),
]


def _enter(context):
    with context:
        return "entered"


def _outcome(call, lib):
    """What ``call`` gives: its value (a device as its string) or the type of what it raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = call(lib)
    except Exception as e:
        return ("raised", type(e).__name__)
    return ("value", str(value) if isinstance(value, (torch.device, engine.device)) else value)


@pytest.mark.skipif(REAL_GPU, reason="compares with torch on a machine without a GPU (test_on_cuda covers the GPU)")
@pytest.mark.parametrize("label,call", CALLS, ids=[label for label, _ in CALLS])
def test_without_a_gpu_answers_as_torch(label, call):
    assert torch.backends.cuda.is_built() and engine._device.cupy_module() is not None, \
        "this comparison needs a CUDA build of torch and CuPy importable"
    assert _outcome(call, engine) == _outcome(call, torch)


@pytest.mark.skipif(REAL_GPU, reason="compares with torch on a machine without a GPU")
def test_deprecated_names_warn_then_answer_as_the_new_ones():
    for lib in (torch, engine):
        with pytest.warns(FutureWarning, match="current_device_index"), pytest.raises(RuntimeError):
            lib.accelerator.current_device_idx()
        with pytest.warns(FutureWarning, match="set_device_index"), pytest.raises(RuntimeError):
            lib.accelerator.set_device_idx(0)


def test_public_names_are_torchs():
    ours = set(engine.accelerator.__all__)
    theirs = set(torch.accelerator.__all__)
    left_out = {"Graph", "max_memory_reserved", "reset_accumulated_memory_stats"}  # see the module docs
    assert ours - theirs == {"memory"}
    assert theirs - ours == left_out


def _fresh_process(script):
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout.split()


@pytest.mark.slow  # a fresh interpreter (2 s): outside the quick subset
def test_cupy_is_imported_at_its_first_use():
    """``import engine`` (and flowvision's models) leaves CuPy, 0.7 s of import with the ml_dtypes it brings, to the
    first call that needs it; CPU work never imports it."""
    out = _fresh_process("import sys, engine, flowvision.models\n"
                         "engine.nn.functional.relu(engine.ones(2, requires_grad=True)).sum().backward()\n"
                         "print('cupy' in sys.modules, 'ml_dtypes' in sys.modules)\n"
                         "print(engine.cuda.is_available() or 'cupy' in sys.modules)")
    assert out == ["False", "False", str(importlib.util.find_spec("cupy") is not None)]


@pytest.mark.cuda
@pytest.mark.skipif(not REAL_GPU, reason="needs CuPy with an NVIDIA GPU")
def test_a_cupy_array_made_before_engine_used_cupy_is_a_cuda_tensor():
    out = _fresh_process("import cupy\nx = cupy.arange(3, dtype=cupy.float32)\nimport engine\n"
                         "t = engine.as_tensor(x)\nprint(t.device, (t * 2).sum().item())")
    assert out == ["cuda:0", "6.0"]


def test_without_cupy_there_is_no_accelerator(monkeypatch):
    """As a CPU-only build of torch: no accelerator, nothing counted, index calls raise one line."""
    monkeypatch.setattr(engine._device, "_cupy", None)
    monkeypatch.setattr(engine._device, "_cupy_missing", True)
    assert engine.accelerator.current_accelerator() is None
    assert engine.accelerator.is_available() is False
    assert engine.accelerator.device_count() == 0
    assert engine.accelerator.memory_allocated() == 0
    with pytest.raises(RuntimeError, match="CuPy is not installed"):
        engine.accelerator.current_device_index()
    with pytest.raises(RuntimeError, match="Accelerator expected"):
        engine.accelerator.synchronize("cuda:0")


def test_a_device_of_another_kind_is_one_clear_line():
    with pytest.raises(TypeError, match="not float"):
        engine.accelerator.synchronize(0.5)


def test_on_cuda(cuda):
    acc = engine.accelerator
    assert acc.is_available()
    assert acc.current_accelerator(check_available=True) == engine.device("cuda")
    assert acc.current_accelerator().index is None
    assert acc.device_count() == engine.cuda.device_count() >= 1
    assert acc.current_device_index() == engine.cuda.current_device() == 0
    acc.set_device_index(0)
    acc.set_device_index("cuda:0")
    acc.set_device_index(-1)  # a negative index changes nothing, as in torch
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    assert acc.current_device_index() == 0
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator cuda"):
        acc.synchronize("cpu")
    with pytest.raises(ValueError, match="with a specified index"):
        acc.set_device_index("cuda")
    x = engine.ones(5, device=acc.current_accelerator())
    acc.synchronize()
    acc.synchronize(0)
    assert x.device.type == "cuda"
    assert acc.current_stream() == engine.cuda.current_stream()
    stream = engine.cuda.Stream()
    acc.set_stream(stream)
    assert acc.current_stream() == stream
    acc.set_stream(engine.cuda.default_stream())
    with pytest.raises(TypeError, match="engine.cuda.Stream"):
        acc.set_stream(0)
    assert engine.float32 in acc.get_device_capability()["supported_dtypes"]
    stats = acc.memory_stats()
    assert list(stats) == ["allocated_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.current"]
    assert acc.memory_allocated() == engine.cuda.memory_allocated()
    assert acc.max_memory_allocated() >= acc.memory_allocated()
    assert acc.memory_reserved() == engine.cuda.memory_reserved()
    acc.reset_peak_memory_stats()
    acc.empty_cache()
    acc.empty_host_cache()
    if cuda == "gpu":  # the emulation has no memory information
        free, total = acc.get_memory_info()
        assert 0 < free <= total
