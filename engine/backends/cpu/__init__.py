"""The CPU backend: numpy kernels, one module per family of ``engine.backends.KERNELS``, and the CPU
runtime (thread pool, scratch, allocator, OpenBLAS threads)."""
from . import runtime


def families():
    """{family: kernel module} of the CPU backend."""
    from . import conv, deform_conv, gemm, interpolate, nms, norm, pointwise, pool, quantized, roi
    return {"conv": conv, "pool": pool, "interpolate": interpolate, "roi": roi, "nms": nms,
            "deform_conv": deform_conv, "pointwise": pointwise, "norm": norm, "gemm": gemm, "quantized": quantized}


__all__ = ["families", "runtime"]
