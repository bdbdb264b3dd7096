"""The CUDA backend: CuPy kernels (cuBLAS GEMMs, CuPy array operations and the RawKernels of
``kernels/*.cu``), one module per family of ``engine.backends.KERNELS``, and the CUDA runtime.

As ``torch.backends.cuda``, it also holds ``matmul.allow_tf32`` (False by default: float32 GEMMs in
full precision), ``is_built`` and the switches of SDPA's backends (``sdp_switches``). Importing it needs no CuPy; the kernel modules load with the first CUDA kernel.
"""
from . import runtime
from .tf32 import matmul
from .sdp_switches import (cudnn_sdp_enabled, enable_cudnn_sdp, enable_flash_sdp, enable_math_sdp,
                           enable_mem_efficient_sdp, flash_sdp_enabled, is_built, math_sdp_enabled,
                           mem_efficient_sdp_enabled, sdp_kernel)


def families():
    """{family: kernel module} of the CUDA backend (imports CuPy)."""
    from . import conv, deform_conv, gemm, interpolate, nms, norm, pointwise, pool, roi
    return {"conv": conv, "pool": pool, "interpolate": interpolate, "roi": roi, "nms": nms,
            "deform_conv": deform_conv, "pointwise": pointwise, "norm": norm, "gemm": gemm}


def __getattr__(name):
    if name == "SDPBackend":  # torch.backends.cuda.SDPBackend, engine.nn's (which loads after this package)
        from ...nn.attention import SDPBackend
        return SDPBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["cudnn_sdp_enabled", "enable_cudnn_sdp", "enable_flash_sdp", "enable_math_sdp", "enable_mem_efficient_sdp",
           "families", "flash_sdp_enabled", "is_built", "math_sdp_enabled", "matmul", "mem_efficient_sdp_enabled",
           "runtime", "sdp_kernel"]
