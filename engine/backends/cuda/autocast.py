"""bfloat16 autocast of the GPU's GEMMs (``nn.Graph``'s ``config.enable_amp``, and the ops of bfloat16
tensors, which ``autograd/bfloat16.py`` runs on float32 copies: rounding those back is exact).

Inside ``bfloat16()``, the ops PyTorch's autocast puts in bfloat16 (convolutions, linear layers, matmul, mm,
bmm) round their float32 operands to bfloat16 and multiply them on the tensor cores with float32
accumulation; everything else (BatchNorm, the other norms, softmax, losses, the convolutions' epilogues) stays
in float32, as under ``torch.autocast("cuda", dtype=torch.bfloat16)``. float64 operands are not rounded.

One difference from PyTorch: a product is returned in float32, not rounded to bfloat16 again. Tensors keep
their dtype (no bfloat16 tensor is made), and results are a little closer to float32's. What gets
faster: the GEMMs (bfloat16's tensor-core rate is twice TF32's) and the convolutions' column matrices, which
im2col writes as bfloat16 in the same pass (half the bytes of the pass that dominates large batches).
Depthwise convolutions, direct kernels without a GEMM, run in float32.

bfloat16 values live in uint16 arrays of their bits (engine.bfloat16 tensors need the optional ml_dtypes);
``cublas.matmul_bfloat16`` multiplies them.
"""
import contextlib

import numpy as np

_enabled = False


def enabled():
    return _enabled


@contextlib.contextmanager
def bfloat16():
    """Inside, GEMMs of the ops autocast covers take bfloat16 operands (see the module docstring)."""
    global _enabled
    previous = _enabled
    _enabled = True
    try:
        yield
    finally:
        _enabled = previous


def rounds(*operands):
    """Whether a GEMM of these operands runs in bfloat16: autocast is on and each is float32, or already
    rounded to bfloat16 bits (uint16)."""
    return _enabled and all(a.dtype == np.float32 or a.dtype == np.uint16 for a in operands)


def bfloat16_bits(x):
    """``x`` rounded to bfloat16 (nearest even) as a uint16 array of the bits, of x's shape: a C-contiguous
    array, or the transpose of one where x is a transposed view; an array of bits is returned as it is."""
    import cupy

    from .source import launch
    if x.dtype == np.uint16:
        return x
    if x.ndim >= 2 and not x.flags.c_contiguous and x.swapaxes(-1, -2).flags.c_contiguous:
        return bfloat16_bits(x.swapaxes(-1, -2)).swapaxes(-1, -2)
    x = cupy.ascontiguousarray(x)
    bits = cupy.empty(x.shape, np.uint16)
    launch("bfloat16", "to_bfloat16_bits", x.dtype, x.size, x, bits, x.size)
    return bits
