"""Test configuration: make the shared test helpers importable, pin torch to 2 threads, keep numpy from asking
for huge pages, collect garbage less often, and a fixture that runs a test with 2 BLAS threads (batch streams
need more than one)."""
import gc
import os
import sys

# numpy advises the kernel to back each array of 4 MB or more with transparent huge pages. Where the kernel
# then compacts memory to find them (the development machine: enabled and defrag both "madvise"), a first touch
# can stall once the process's memory is fragmented, as it soon is in a suite that builds model after model:
# there a 400 MB float32 copy took 2.6 s instead of 0.24 s, and tests/flowvision/models/test_mobilenet_vgg.py
# 69 s instead of 37 s (VGG13's construction alone 18 s). The variable reaches subprocesses (MPI ranks, CLI
# runs); the call, this process, where pytest has imported numpy already. Values do not change, only how
# memory is paged.
os.environ["NUMPY_MADVISE_HUGEPAGE"] = "0"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

np._core.multiarray._set_madvise_hugepage(False)

sys.path.insert(0, os.path.dirname(__file__))

try:
    import torch

    torch.set_num_threads(2)
except ImportError:  # the parity tests import torch themselves and fail loudly without it
    pass


def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: large parity runs (few, but part of the suite)")
    config.addinivalue_line("markers", "cuda: needs an NVIDIA GPU with CuPy (skipped without one)")
    config.addinivalue_line("markers", "slow: whole-model runs, left out of the quick subset (-m 'not slow')")


def pytest_collection_finish(session):
    """Leave what exists after collection (modules, test items: millions of objects) out of garbage collection,
    and collect the youngest generation after 10000 allocations instead of 700. Each full collection walked
    every object the suite had made, and collections ran often as models were built: the timm and classic
    model tests took 84 s, 11.3 s of it in the collector, with the defaults; 70 s and 2.9 s so. Nothing a test
    frees later is kept alive: cycles are still collected, only less often."""
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


@pytest.fixture(scope="module")
def one_torch_thread():
    """torch on one thread for a whole test module, ours as it is (``op_check.torch_on_one_thread``: the quantized
    models' references ran 5 times slower with two)."""
    from op_check import torch_on_one_thread
    with torch_on_one_thread():
        yield


@pytest.fixture
def two_blas_threads():
    import engine
    before = engine.get_num_threads()
    engine.set_num_threads(2)
    yield
    engine.set_num_threads(before)


def _real_gpu():
    """Whether CuPy and an NVIDIA GPU are present (the ``cuda`` tests run on them)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


REAL_GPU = _real_gpu()
_SESSION_EMULATION = False  # True while ``parity_device`` keeps the emulation installed for the whole session


@pytest.fixture(autouse=True, scope="session")
def parity_device():
    """``FLOWVISION_PARITY_DEVICE=cuda`` (model_parity.PARITY_DEVICE): the model parity helpers run our side on the
    CUDA backend, and ``OP_CHECK_DEVICE=cuda`` (op_device_sweep) check_op's, so the whole session runs where there
    is no GPU on the CPU emulation of CuPy."""
    on_cuda = "cuda" in (os.environ.get("FLOWVISION_PARITY_DEVICE"), os.environ.get("OP_CHECK_DEVICE"))
    if not on_cuda or REAL_GPU:
        yield
        return
    import cuda_emulator
    if not cuda_emulator.available():
        pytest.exit("FLOWVISION_PARITY_DEVICE=cuda without a GPU needs g++ to emulate CUDA kernels", returncode=4)
    global _SESSION_EMULATION
    with cuda_emulator.installed():
        _SESSION_EMULATION = True
        yield
    _SESSION_EMULATION = False


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.cuda)])
def cuda(request):
    """Runs a test on the CUDA backend twice over: on the GPU (marked ``cuda``; skipped without one) and,
    where there is none, on the CPU emulation of CuPy (``cuda_emulator``: kernels compiled by g++)."""
    if request.param == "gpu":
        if not REAL_GPU:
            pytest.skip("no CUDA GPU here (CuPy with an NVIDIA GPU)")
        yield "gpu"
        return
    if REAL_GPU:
        pytest.skip("the GPU runs this test itself")
    import cuda_emulator
    if not cuda_emulator.available():
        pytest.skip("emulating CUDA kernels needs g++")
    if _SESSION_EMULATION:
        yield "emulated"
        return
    with cuda_emulator.installed():
        yield "emulated"


class _NumpyDraws:
    """The sampling calls ``engine.random.device_rng``'s states answer (CuPy's interface), on numpy's float32
    generator: the same distributions, not PyTorch's numbers."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    # scaled and shifted in place, and cast only to another dtype: the same values as ``(x * scale + shift)
    # .astype(dtype)``, without three fresh copies of every weight (0.45 s per 100M float32 values, 0.04 s so)
    def uniform(self, low, high, size, dtype):
        values = self.rng.random(size, dtype=np.float32)
        values *= np.float32(high - low)
        values += np.float32(low)
        return values.astype(dtype, copy=False)

    def normal(self, mean, std, size, dtype):
        values = self.rng.standard_normal(size, dtype=np.float32)
        values *= np.float32(std)
        values += np.float32(mean)
        return values.astype(dtype, copy=False)

    def random_sample(self, size, dtype=np.float64):
        return self.rng.random(size, dtype=np.float32).astype(dtype)

    def standard_normal(self, size, dtype=np.float64):
        return self.rng.standard_normal(size, dtype=np.float32).astype(dtype)

    def randint(self, low, high, size, dtype=np.int64):
        return self.rng.integers(low, high, size, dtype=dtype)

    def __getattr__(self, name):  # permutation, lognormal, exponential, ... as numpy names them
        return getattr(self.rng, name)


@pytest.fixture
def fast_random(monkeypatch):
    """Our uniform and normal draws on the CPU from numpy (seeded) instead of PyTorch's exact stream, for tests
    whose models load other weights or whose values only need the right scale: drawing VGG's 120M initial
    weights the exact way took 5 s."""
    import engine.random

    draws = _NumpyDraws(0)
    exact = engine.random.device_rng

    def device_rng(device, generator=None):
        state = exact(device, generator)
        if state is None and generator is None and (device is None or str(device).startswith("cpu")):
            return draws
        return state

    monkeypatch.setattr(engine.random, "device_rng", device_rng)
