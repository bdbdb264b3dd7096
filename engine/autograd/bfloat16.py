"""bfloat16 ops compute in float32, as PyTorch's CPU and CUDA kernels do (their "opmath" type).

A ``Function`` given bfloat16 arrays runs its forward and its backward on float32 copies of them, and its
float32 outputs are rounded to bfloat16 once, at the end, where bfloat16 is the op's result type: its own
``dtype`` attribute where it has one (``.float()`` and ``sum(dtype=engine.float32)`` stay float32), else
torch's promotion over its tensor inputs. Without this, numpy (through ml_dtypes) and CuPy would round after
every step of a composite op (softmax, a norm, a loss), and every kernel (im2col, pooling, cuBLAS) would
need a bfloat16 variant. Views and ops that only move elements (``moves_only``: reshape, clone, a copy to
another device) compute nothing: they take the bfloat16 array itself.

On a GPU the op's GEMMs (convolutions, linear layers, matmuls) take bfloat16 operands with float32
accumulation, on the tensor cores (the device runtime's ``autocast``): exact for the inputs, which were
bfloat16, and as torch rounds the intermediates of an op such as attention.

The price is memory: what an op saves for its backward is float32, twice bfloat16's bytes.
"""
import contextlib
from collections import namedtuple

import numpy as np

from .. import _dtype, backends

_FLOAT32 = np.dtype(np.float32)
_Operand = namedtuple("_Operand", "shape dtype")  # what ``_dtype.result_type`` reads of a tensor


def forward(fn, arrays):
    """``fn.forward(*arrays)``, on float32 copies where any array is bfloat16 (``fn.widened`` then tells the
    backward engine to widen the gradients too), its float32 outputs rounded back where ``narrows``. Returns
    what ``forward`` returns. Eager calls and ``nn.Graph``'s replays both come here."""
    if fn.is_view or fn.moves_only or not holds_bfloat16(arrays):
        return fn.forward(*arrays)
    fn.widened = True
    rounds = narrows(fn, arrays)
    with _bfloat16_gemms(arrays):
        outs = fn.forward(*widen(arrays))
    if not rounds:
        return outs
    return narrow(outs) if isinstance(outs, tuple) else narrow((outs,))[0]


def backward(fn, grads):
    """``fn.backward(*grads)``; for an op whose forward was widened, on float32 copies of its bfloat16
    gradients, its GEMMs as in the forward."""
    if not fn.widened:
        return fn.backward(*grads)
    with _bfloat16_gemms(grads):
        return fn.backward(*widen(grads))


def _bfloat16_gemms(arrays):
    """The device runtime's bfloat16 GEMM context for these arrays' device (none on the CPU)."""
    first = next(a for a in arrays if hasattr(a, "dtype"))
    context = backends.runtime(first).autocast()
    return contextlib.nullcontext() if context is None else context


def holds_bfloat16(arrays):
    """Whether any of these arrays (or plain values) is bfloat16."""
    bfloat16 = _dtype.BFLOAT16_NP  # None until bfloat16 is used: then no array holds it
    return bfloat16 is not None and any(getattr(a, "dtype", None) is bfloat16 for a in arrays)


def widen(arrays):
    """The arrays with each bfloat16 one replaced by a float32 copy."""
    return tuple(_float32(a) if getattr(a, "dtype", None) is _dtype.BFLOAT16_NP else a for a in arrays)


def _float32(a):
    """A float32 copy of bfloat16 array ``a``. On the host, its bits shifted into a float32's upper half: exact,
    and 11x faster than ml_dtypes' element-by-element cast (6.1 vs 67.8 ms for 6.4M elements on this machine)."""
    if isinstance(a, np.ndarray):
        bits = a.view(np.uint16).astype(np.uint32)
        bits <<= 16
        return bits.view(np.float32)
    return a.astype(_FLOAT32)


def narrows(fn, arrays):
    """Whether ``fn``'s float32 outputs go back to bfloat16: its input 0 is bfloat16 where the op keeps that
    input's dtype (the norms), else its array inputs promote to bfloat16 (torch's rules: dimensioned arrays
    over 0-dim ones) and it has no dtype of its own, or its own dtype is bfloat16.
    An op's own bfloat16 (``Sum``'s result type, which it casts its input to) is turned into float32 on
    ``fn`` here, so that it computes in float32."""
    if fn.keeps_input_dtype:
        return arrays[0].dtype is _dtype.BFLOAT16_NP
    own = getattr(fn, "dtype", None)
    if own is None:
        operands = (_Operand(a.shape, _dtype.from_numpy_dtype(a.dtype)) for a in arrays if hasattr(a, "shape"))
        return _dtype.result_type(*operands) is _dtype.bfloat16
    if own is _dtype.bfloat16:
        fn.dtype = _dtype.float32
    elif own is _dtype.BFLOAT16_NP:
        fn.dtype = _FLOAT32
    else:
        return False
    return True


def narrow(arrays):
    """The arrays with each float32 one rounded to bfloat16."""
    return tuple(a.astype(_dtype.bfloat16.np) if a.dtype == _FLOAT32 else a for a in arrays)
