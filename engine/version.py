"""``engine.version``: what this engine is and which CUDA its GPU side runs on, as ``torch.version``.

``cuda`` is the version ("13.2") of the CUDA runtime CuPy loads, read on first access so that ``import engine``
does not import CuPy; None where CuPy is not installed or cannot load its runtime (then no GPU code can run).
HIP, ROCm and XPU builds do not exist: their entries are None, as in torch's CUDA builds.
"""
from . import _device

__version__ = "0.1.0"
debug = False
hip = None
rocm = None
xpu = None


def _cuda_runtime_version():
    cupy = _device.cupy_module()
    if cupy is None:
        return None
    try:
        number = cupy.cuda.runtime.runtimeGetVersion()
    except Exception:  # pragma: no cover - CuPy without its CUDA runtime library
        return None
    return f"{number // 1000}.{number % 1000 // 10}"


def __getattr__(name):
    if name == "cuda":
        return _cuda_runtime_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
