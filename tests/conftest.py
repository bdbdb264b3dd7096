"""Test configuration: make the shared test helpers importable, pin torch to 2 threads, and a fixture
that runs a test with 2 BLAS threads (batch streams need more than one)."""
import os
import sys

import pytest

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
    with cuda_emulator.installed():
        yield "emulated"
