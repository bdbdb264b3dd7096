"""Every kernel source of the CUDA backend compiles, for each element type: with NVRTC through CuPy (what
runs on a GPU, no GPU needed to compile) and with ``nvcc -arch=sm_90 --ptx``. Each is skipped where its
compiler is absent."""
import shutil
import subprocess

import numpy as np
import pytest

from engine.backends.cuda.source import C_TYPES, KERNEL_DIR

SOURCES = sorted(p.stem for p in KERNEL_DIR.glob("*.cu"))
DTYPES = sorted(C_TYPES, key=str)


def _source(name, dtype):
    try:
        from engine.backends.cuda import source
    except ImportError:  # the module imports CuPy
        pytest.skip("CuPy is not installed")
    return source.source(name, dtype)


def test_every_source_is_tested():
    assert SOURCES == ["bfloat16", "conv", "deform_conv", "interpolate", "nms", "pool", "ps_roi", "random", "roi"]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", SOURCES)
def test_nvrtc_compiles(name, dtype):
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    code = _source(name, dtype)
    program = nvrtc.createProgram(code, f"{name}.cu", [], [])
    try:
        nvrtc.compileProgram(program, ["--std=c++14", "-arch=compute_90"])
    except nvrtc.NVRTCError:
        pytest.fail(nvrtc.getProgramLog(program))
    finally:
        nvrtc.destroyProgram(program)


@pytest.mark.slow  # one nvcc run per source, 5 s in all: outside the quick subset (NVRTC's check above is in it)
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("name", SOURCES)
def test_nvcc_compiles(name, tmp_path):
    for dtype in DTYPES:
        src = tmp_path / f"{name}_{np.dtype(dtype).name}.cu"
        src.write_text(_source(name, dtype))
        result = subprocess.run(["nvcc", "-arch=sm_90", "--ptx", "-o", str(src.with_suffix(".ptx")), str(src)],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
