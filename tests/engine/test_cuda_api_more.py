"""The rest of ``torch.cuda``'s user API in ``engine.cuda``: device properties and queries, the device and stream
contexts, memory statistics and the allocator calls, out-of-memory errors, the GPUs' random number states and
NVTX ranges; on the CUDA emulation, on a GPU (marked ``cuda``), and without a GPU against torch's answers."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.cuda
import engine.cuda.nvtx
from conftest import REAL_GPU

pytestmark = pytest.mark.slow  # 70 cases on the CUDA emulation: the full suite runs them


def _enter(context):
    with context:
        return "entered"


# (label, call) run alike on both libraries without a GPU; ``lib`` is torch or engine.
NO_GPU_CALLS = [
    ("get_device_properties(0)", lambda lib: lib.cuda.get_device_properties(0)),
    ("is_initialized()", lambda lib: lib.cuda.is_initialized()),
    ("init()", lambda lib: lib.cuda.init()),
    ("is_bf16_supported()", lambda lib: lib.cuda.is_bf16_supported()),
    ("is_bf16_supported(False)", lambda lib: lib.cuda.is_bf16_supported(False)),
    ("is_tf32_supported()", lambda lib: lib.cuda.is_tf32_supported()),
    ("can_device_access_peer(0, 1)", lambda lib: lib.cuda.can_device_access_peer(0, 1)),
    ("device(0)", lambda lib: _enter(lib.cuda.device(0))),
    ("device(-1)", lambda lib: _enter(lib.cuda.device(-1))),
    ("device_of(cpu tensor)", lambda lib: _enter(lib.cuda.device_of(lib.zeros(1)))),
    ("StreamContext(None)", lambda lib: _enter(lib.cuda.StreamContext(None))),
    ("set_stream(None)", lambda lib: lib.cuda.set_stream(None)),
    ("ExternalStream(0)", lambda lib: lib.cuda.ExternalStream(0)),
    ("get_stream_from_external(0)", lambda lib: lib.cuda.get_stream_from_external(0)),
    ("is_current_stream_capturing()", lambda lib: lib.cuda.is_current_stream_capturing()),
    ("clock_rate()", lambda lib: lib.cuda.clock_rate()),
    ("utilization()", lambda lib: lib.cuda.utilization()),
    ("temperature()", lambda lib: lib.cuda.temperature()),
    ("power_draw()", lambda lib: lib.cuda.power_draw()),
    ("memory_usage()", lambda lib: lib.cuda.memory_usage()),
    ("list_gpu_processes()", lambda lib: lib.cuda.list_gpu_processes()),
    ("memory_stats()", lambda lib: dict(lib.cuda.memory_stats())),
    ("memory_stats_as_nested_dict()", lambda lib: lib.cuda.memory_stats_as_nested_dict()),
    ("memory_snapshot()", lambda lib: lib.cuda.memory_snapshot()),
    ("max_memory_reserved()", lambda lib: lib.cuda.max_memory_reserved()),
    ("memory_cached()", lambda lib: lib.cuda.memory_cached()),
    ("max_memory_cached()", lambda lib: lib.cuda.max_memory_cached()),
    ("reset_max_memory_allocated()", lambda lib: lib.cuda.reset_max_memory_allocated()),
    ("reset_max_memory_cached()", lambda lib: lib.cuda.reset_max_memory_cached()),
    ("reset_accumulated_memory_stats()", lambda lib: lib.cuda.reset_accumulated_memory_stats()),
    ("set_per_process_memory_fraction(0.5)", lambda lib: lib.cuda.set_per_process_memory_fraction(0.5)),
    ("get_per_process_memory_fraction()", lambda lib: lib.cuda.get_per_process_memory_fraction()),
    ("caching_allocator_alloc(10)", lambda lib: lib.cuda.caching_allocator_alloc(10)),
    ("caching_allocator_delete(0)", lambda lib: lib.cuda.caching_allocator_delete(0)),
    ("ipc_collect()", lambda lib: lib.cuda.ipc_collect()),
    ("mem_get_info()", lambda lib: lib.cuda.mem_get_info()),
    ("get_rng_state()", lambda lib: lib.cuda.get_rng_state()),
    ("get_rng_state_all()", lambda lib: lib.cuda.get_rng_state_all()),
    ("set_rng_state(zeros)", lambda lib: lib.cuda.set_rng_state(lib.zeros(16, dtype=lib.uint8))),
    ("set_rng_state_all([zeros])", lambda lib: lib.cuda.set_rng_state_all([lib.zeros(16, dtype=lib.uint8)])),
    ("seed()", lambda lib: lib.cuda.seed()),
    ("seed_all()", lambda lib: lib.cuda.seed_all()),
    ("initial_seed()", lambda lib: lib.cuda.initial_seed()),
    ("default_generators", lambda lib: lib.cuda.default_generators),
    ("nvtx.mark('m')", lambda lib: lib.cuda.nvtx.mark("m")),
    ("nvtx.range('r')", lambda lib: _enter(lib.cuda.nvtx.range("r"))),
    ("OutOfMemoryError is a RuntimeError", lambda lib: issubclass(lib.cuda.OutOfMemoryError, RuntimeError)),
]


def _outcome(call, lib):
    """What ``call`` gives: its value, or the type of what it raised (torch's AcceleratorError is a RuntimeError,
    and the engine raises RuntimeError where it has no GPU)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = call(lib)
    except Exception as e:
        return ("raised", "RuntimeError" if isinstance(e, torch.AcceleratorError) else type(e).__name__)
    return ("value", value)


no_gpu = pytest.mark.skipif(REAL_GPU or engine.cuda.is_available(), reason="compares with torch without a GPU")


@no_gpu
@pytest.mark.parametrize("label,call", NO_GPU_CALLS, ids=[label for label, _ in NO_GPU_CALLS])
def test_without_a_gpu_answers_as_torch(label, call):
    assert _outcome(call, engine) == _outcome(call, torch)


@no_gpu
def test_without_a_gpu_the_error_says_what_is_missing():
    with pytest.raises(RuntimeError, match="^CUDA is not available: "):
        engine.cuda.get_device_properties()


@no_gpu
@pytest.mark.parametrize("name", ["memory_cached", "max_memory_cached"])
def test_deprecated_memory_names_warn_as_torch(name):
    with pytest.warns(FutureWarning, match=f"`torch.cuda.{name}` has been renamed"):
        getattr(engine.cuda, name)()


def test_the_exported_names_exist():
    assert all(hasattr(engine.cuda, name) for name in engine.cuda.__all__)


def test_nvrtc_architectures():
    archs = engine.cuda.get_arch_list()
    assert all(a.startswith("sm_") for a in archs)
    flags = engine.cuda.get_gencode_flags()
    assert flags.count("-gencode") == len(archs)


def test_nvtx_ranges_nest(monkeypatch):
    """Depths as torch's range_push/range_pop give them (or -2 where NVTX is missing)."""
    pushed = [engine.cuda.nvtx.range_push("a"), engine.cuda.nvtx.range_push("b")]
    popped = [engine.cuda.nvtx.range_pop(), engine.cuda.nvtx.range_pop()]
    assert (pushed, popped) in (([0, 1], [1, 0]), ([-2, -2], [-2, -2]))


def test_set_per_process_memory_fraction_checks_its_argument():
    with pytest.raises(TypeError, match="Invalid type for fraction argument, must be `float`"):
        engine.cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Invalid fraction value: 1.5. Allowed range: 0~1"):
        engine.cuda.set_per_process_memory_fraction(1.5)


# ---- on the emulation and on a GPU ---------------------------------------------------------------
def test_device_properties(cuda):
    props = engine.cuda.get_device_properties(0)
    assert props == props and props.name == engine.cuda.get_device_name(0)
    assert (props.major, props.minor) == engine.cuda.get_device_capability(0)
    assert props.total_memory == engine.cuda.mem_get_info()[1]
    assert props.multi_processor_count >= 1 and props.warp_size == 32 and props.clock_rate > 0
    assert len(props.uuid) == 36 and props.uuid.count("-") == 4
    assert repr(props).startswith(f"_CudaDeviceProperties(name='{props.name}', major={props.major}")
    assert repr(engine.cuda.get_device_properties("cuda:0")) == repr(props)
    with pytest.raises(AssertionError, match="Invalid device id"):
        engine.cuda.get_device_properties(engine.cuda.device_count())
    engine.cuda.init()
    assert engine.cuda.is_initialized()
    assert engine.cuda.is_bf16_supported() and engine.cuda.is_tf32_supported() == (props.major >= 8)
    assert engine.cuda.can_device_access_peer(0, 0) is False


def test_device_contexts(cuda):
    with engine.cuda.device(0) as context:
        assert context.idx == 0 and engine.cuda.current_device() == 0
    with engine.cuda.device("cuda:0"), engine.cuda.device(-1):
        assert engine.cuda.current_device() == 0
    x = engine.ones(2, device="cuda")
    with engine.cuda.device_of(x) as context:
        assert context.idx == 0
    assert engine.cuda.device_of(engine.ones(2)).idx == -1
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        engine.cuda.device("cpu")


def test_stream_contexts(cuda):
    s = engine.cuda.Stream()
    with engine.cuda.StreamContext(s):
        assert engine.cuda.current_stream() == s
        assert engine.cuda.is_current_stream_capturing() is False
    assert engine.cuda.current_stream() != s
    external = engine.cuda.ExternalStream(s.cuda_stream)
    assert isinstance(external, engine.cuda.Stream) and external.cuda_stream == s.cuda_stream
    assert engine.cuda.get_stream_from_external(s.cuda_stream) == external
    engine.cuda.set_stream(s)
    try:
        assert engine.cuda.current_stream() == s
    finally:
        engine.cuda.set_stream(engine.cuda.default_stream())


def test_memory_statistics(cuda):
    engine.cuda.reset_peak_memory_stats()
    engine.cuda.reset_accumulated_memory_stats()
    stats = engine.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] == engine.cuda.memory_allocated()
    assert stats["reserved_bytes.all.current"] == engine.cuda.memory_reserved()
    assert stats["num_ooms"] == stats["num_alloc_retries"] == stats["allocation.all.allocated"] == 0
    assert list(stats) == sorted(stats)
    address = engine.cuda.caching_allocator_alloc(1000)
    stats = engine.cuda.memory_stats()
    assert address > 0 and stats["allocation.all.allocated"] == 1 and stats["allocated_bytes.all.allocated"] >= 1000
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"] >= 1000
    assert len({len(line) for line in engine.cuda.memory_summary().splitlines()}) == 1  # a rectangle, as torch's
    engine.cuda.caching_allocator_delete(address)
    assert engine.cuda.max_memory_allocated() >= engine.cuda.memory_allocated()
    assert engine.cuda.max_memory_reserved() >= engine.cuda.memory_reserved()
    nested = engine.cuda.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["peak"] == engine.cuda.max_memory_allocated()
    summary = engine.cuda.memory_summary()
    assert "CUDA memory summary, device ID 0" in summary and "| Allocated memory" in summary
    assert engine.cuda.memory_snapshot() == []
    with pytest.warns(FutureWarning):
        engine.cuda.reset_max_memory_allocated()
    engine.cuda.ipc_collect()


def test_out_of_memory_is_torchs_error(cuda):
    if cuda == "gpu":
        engine.cuda.init()  # from the first call into engine.cuda, allocations go through its allocator
        with pytest.raises(engine.cuda.OutOfMemoryError, match="^CUDA out of memory. Tried to allocate"):
            engine.empty(1 << 50, dtype=engine.uint8, device="cuda")
        return
    engine.cuda.set_per_process_memory_fraction(0.25)
    try:
        assert engine.cuda.get_per_process_memory_fraction() == 0.25
        ooms = engine.cuda.memory_stats()["num_ooms"]
        with pytest.raises(engine.cuda.OutOfMemoryError, match="^CUDA out of memory. Tried to allocate 8.00 GiB"):
            engine.cuda.caching_allocator_alloc(1 << 33)
        assert engine.cuda.memory_stats()["num_ooms"] == ooms + 1
    finally:
        engine.cuda.set_per_process_memory_fraction(1.0)
        import cupy
        cupy.get_default_memory_pool().set_limit(size=0)
    assert engine.cuda.get_per_process_memory_fraction() == 1.0


def test_rng_state_round_trips(cuda, monkeypatch):
    monkeypatch.setattr(engine.random, "_cuda_seed", engine.random._cuda_seed)  # seed_all below changes it
    engine.cuda.manual_seed(5)
    assert engine.cuda.initial_seed() == 5
    state = engine.cuda.get_rng_state()
    assert state.dtype == engine.uint8 and state.shape == (16,) and state.device.type == "cpu"
    first = engine.rand(7, 3, device="cuda").cpu().numpy()
    engine.cuda.set_rng_state(state)
    np.testing.assert_array_equal(engine.rand(7, 3, device="cuda").cpu().numpy(), first)
    states = engine.cuda.get_rng_state_all()
    assert len(states) == engine.cuda.device_count()
    engine.cuda.set_rng_state_all(states)
    assert len(engine.cuda.default_generators) == engine.cuda.device_count()
    engine.cuda.seed()
    engine.cuda.seed_all()
    assert engine.cuda.initial_seed() != 5
    with pytest.raises(RuntimeError, match="Expected a CUDA generator state of 16 bytes, but got 3"):
        engine.cuda.set_rng_state(engine.zeros(3, dtype=engine.uint8))


def test_nvtx_calls_reach_cupy(cuda):
    if cuda == "gpu":
        pytest.skip("a real NVTX shows its ranges in a profiler only")
    import cupy
    calls = cupy.cuda.nvtx.calls
    del calls[:]

    @engine.cuda.nvtx.range("step {}", 3)
    def step():
        engine.cuda.nvtx.mark("inside")
    step()
    engine.cuda.nvtx.range_end(engine.cuda.nvtx.range_start("span"))
    assert calls[:3] == [("push", "step 3"), ("mark", "inside"), ("pop",)]
    assert calls[3][:2] == ("start", "span") and calls[4] == ("end", calls[3][2])


def test_nvml_readings_come_from_pynvml(cuda, monkeypatch):
    """Through a stand-in pynvml with NVML's names: each reading asks NVML about the GPU given."""
    import sys
    import types
    nvml = types.ModuleType("pynvml")
    nvml.NVML_CLOCK_SM = 1
    nvml.nvmlInit = lambda: None
    nvml.nvmlDeviceGetHandleByIndex = lambda index: ("handle", index)
    nvml.nvmlDeviceGetClockInfo = lambda handle, kind: 1980 if (handle, kind) == (("handle", 0), 1) else -1
    nvml.nvmlDeviceGetUtilizationRates = lambda handle: types.SimpleNamespace(gpu=42, memory=7)
    nvml.nvmlDeviceGetTemperature = lambda handle, sensor: 55
    nvml.nvmlDeviceGetPowerUsage = lambda handle: 123456
    nvml.nvmlDeviceGetComputeRunningProcesses = lambda handle: [types.SimpleNamespace(pid=99, usedGpuMemory=1 << 21)]
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    assert (engine.cuda.clock_rate(), engine.cuda.utilization(0), engine.cuda.memory_usage("cuda:0"),
            engine.cuda.temperature(), engine.cuda.power_draw()) == (1980, 42, 7, 55, 123456)
    assert engine.cuda.list_gpu_processes() == "GPU:0\nprocess         99 uses        2.000 MB GPU memory"
