"""The CUDA backend: CuPy kernels (cuBLAS GEMMs, CuPy array operations and the RawKernels of
``kernels/*.cu``), one module per family of ``engine.backends.KERNELS``, and the CUDA runtime.

As ``torch.backends.cuda``, it also holds ``matmul.allow_tf32`` (False by default: float32 GEMMs in
full precision). Importing it needs no CuPy; the kernel modules load with the first CUDA kernel.
"""
from . import runtime
from .tf32 import matmul


def families():
    """{family: kernel module} of the CUDA backend (imports CuPy)."""
    from . import conv, deform_conv, gemm, interpolate, nms, norm, pointwise, pool, roi
    return {"conv": conv, "pool": pool, "interpolate": interpolate, "roi": roi, "nms": nms,
            "deform_conv": deform_conv, "pointwise": pointwise, "norm": norm, "gemm": gemm}


__all__ = ["families", "matmul", "runtime"]
