"""cuBLAS GEMMs called through ``ctypes``, for CUDA graph capture.

CuPy refuses every cuBLAS call while a stream is being captured (its ``cublas.setStream`` raises
``NotImplementedError: calling cuBLAS API during stream capture is currently unsupported``), yet
cuBLAS itself captures GEMMs correctly. This module calls the same libcublas CuPy loaded, on a handle
of its own whose stream is set to the capture stream before capture begins (``set_stream``), with
``cublasGemmEx`` / ``cublasGemmStridedBatchedEx``.

Arrays are row-major; cuBLAS is column-major. A row-major (r, c) matrix with row stride ``ld`` is the
column-major (c, r) matrix of its transpose with the same ``ld``, so ``C = A @ B`` is computed as the
column-major ``C^T = B^T A^T``: B's memory first, then A's, no copies. A transposed view (unit row
stride) is passed as the transposed operand. ``matmul`` takes what ``cupy.matmul`` takes for float16,
bfloat16, float32 and float64 (1-D operands, broadcast batches); tests check it against CuPy's matmul.
``matmul_bfloat16`` multiplies bfloat16 bit patterns (uint16 arrays) into float32, for autocast's GEMMs. Outside
a capture, the handle follows CuPy's current stream.
"""
import ctypes
import functools
import math

import cupy
import numpy as np

_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32, _COMPUTE_64F = 68, 77, 70
#: dtype name -> (cudaDataType, compute type, scalar type of alpha and beta)
_FLOAT32, _BFLOAT16 = 0, 14
_TYPES = {"float16": (2, _COMPUTE_32F, ctypes.c_float), "bfloat16": (_BFLOAT16, _COMPUTE_32F, ctypes.c_float),
          "float32": (_FLOAT32, _COMPUTE_32F, ctypes.c_float), "float64": (1, _COMPUTE_64F, ctypes.c_double)}


class CublasError(RuntimeError):
    pass


def _library_path():
    """The libcublas CuPy loaded: made to load it, then found among the process's mapped files."""
    cupy.cuda.device.get_cublas_handle()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libcublas.so" in path.rsplit("/", 1)[-1]:
                return path
    raise CublasError("cuBLAS: CuPy did not load libcublas (no libcublas.so among the process's libraries)")


def _open_library():
    return ctypes.CDLL(_library_path())


@functools.lru_cache(maxsize=None)
def _library():
    lib = _open_library()
    p, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
    lib.cublasCreate_v2.argtypes = [ctypes.POINTER(p)]
    lib.cublasSetStream_v2.argtypes = [p, p]
    lib.cublasGemmEx.argtypes = [p, i, i, i, i, i, p, p, i, i, p, i, i, p, p, i, i, i, i]
    lib.cublasGemmStridedBatchedEx.argtypes = [p, i, i, i, i, i, p, p, i, i, ll, p, i, i, ll, p, p, i, i, ll,
                                               i, i, i]
    for fn in (lib.cublasCreate_v2, lib.cublasSetStream_v2, lib.cublasGemmEx, lib.cublasGemmStridedBatchedEx):
        fn.restype = i
    return lib


def _check(status, call):
    if status != 0:
        raise CublasError(f"cuBLAS: {call} failed with status {status}")


@functools.lru_cache(maxsize=None)
def _handle(device_id):
    """This module's cuBLAS handle on a device (one per device, kept for the process)."""
    handle = ctypes.c_void_p()
    _check(_library().cublasCreate_v2(ctypes.byref(handle)), "cublasCreate")
    return handle


def handle():
    return _handle(cupy.cuda.Device().id)


_stream_of_handle = {}  # device id -> the stream pointer this module's handle was last set to


def set_stream(stream):
    """Run this module's GEMMs on ``stream`` (a CuPy stream): call it before a capture on that stream begins."""
    _check(_library().cublasSetStream_v2(handle(), ctypes.c_void_p(stream.ptr)), "cublasSetStream")
    _stream_of_handle[cupy.cuda.Device().id] = stream.ptr


def _follow_current_stream():
    """Point the handle at CuPy's current stream where it points elsewhere (GEMMs outside a capture run in
    order with CuPy's kernels; inside one, the capture stream is current and already set)."""
    stream = cupy.cuda.get_current_stream()
    if _stream_of_handle.get(cupy.cuda.Device().id) != stream.ptr:
        set_stream(stream)


def _operand(x):
    """(op, ld) describing x's last two axes to cuBLAS, or None where neither axis has unit stride."""
    rows, cols = x.shape[-2:]
    row_stride, col_stride = (s // x.itemsize for s in x.strides[-2:])
    if col_stride == 1 or cols == 1:
        ld = row_stride if rows > 1 else cols
        if ld >= max(cols, 1):
            return _OP_N, ld
    if row_stride == 1 or rows == 1:
        ld = col_stride if cols > 1 else rows
        if ld >= max(rows, 1):
            return _OP_T, ld
    return None


def _batched(x, batch, count):
    """x as (count, r, c) with one batch stride (0 where x has no batch), and its (op, ld)."""
    matrix = x.shape[-2:]
    if math.prod(x.shape[:-2]) == 1:
        x = x.reshape(matrix)
        stride = 0
    else:
        if x.shape[:-2] != batch:
            x = cupy.broadcast_to(x, batch + matrix)
        x = x.reshape((count,) + matrix)  # a view where one batch stride spans the batch, else a copy
        stride = x.strides[0] // x.itemsize
    layout = _operand(x)
    if layout is None:
        x = cupy.ascontiguousarray(x)
        layout = _operand(x)
        if stride:
            stride = math.prod(matrix)
    return x, stride, layout


def takes(a, b):
    """Whether ``matmul`` multiplies arrays of these dtypes (two of float16, bfloat16, float32 or float64)."""
    return a.dtype == b.dtype and a.dtype.name in _TYPES


def matmul(a, b, out=None, tf32=False):
    """``a @ b`` as ``cupy.matmul`` computes it, through cuBLAS directly (``tf32``: float32 on TF32 tensor cores).

    ``out``, where given, must be C-contiguous with the result's shape and dtype."""
    if not takes(a, b):
        raise TypeError(f"cuBLAS matmul takes two arrays of one of {sorted(_TYPES)}, got {a.dtype} and {b.dtype}")
    data_type, compute, scalar = _TYPES[a.dtype.name]
    if tf32 and a.dtype == np.float32:
        compute = _COMPUTE_32F_FAST_TF32
    return _gemm(a, b, out, a.dtype, data_type, data_type, compute, scalar)


def matmul_bfloat16(a, b, out=None):
    """``a @ b`` of bfloat16 operands held as their bits in uint16 arrays (``autocast.bfloat16_bits``),
    accumulated and returned in float32 (``cublasGemmEx`` with CUDA_R_16BF operands, a CUDA_R_32F result and
    CUBLAS_COMPUTE_32F: the tensor cores' bfloat16 rate). ``out``: as in ``matmul``, float32."""
    if a.dtype != np.uint16 or b.dtype != np.uint16:
        raise TypeError(f"cuBLAS bfloat16 matmul takes two uint16 arrays of bfloat16 bits, got {a.dtype} and "
                        f"{b.dtype}")
    return _gemm(a, b, out, np.dtype(np.float32), _BFLOAT16, _FLOAT32, _COMPUTE_32F, ctypes.c_float)


def _gemm(a, b, out, out_dtype, data_type, out_type, compute, scalar):
    """``a @ b`` into ``out`` (made where None) of ``out_dtype``: the operands of cuBLAS type ``data_type``, the
    result of ``out_type``, computed in ``compute`` with alpha and beta of C type ``scalar``."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: both operands need at least one dimension")
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    m, k = a2.shape[-2:]
    if b2.shape[-2] != k:
        raise ValueError(f"matmul: mismatch in the contracted dimension ({a.shape} and {b.shape})")
    n = b2.shape[-1]
    batch = tuple(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]))
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    if out is None:
        out = cupy.empty(shape, out_dtype)
    elif out.shape != shape or out.dtype != out_dtype or not out.flags.c_contiguous:
        raise ValueError(f"matmul: out must be a C-contiguous {out_dtype} array of shape {shape}, got {out.dtype} "
                         f"{out.shape}")
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    count = math.prod(batch)
    a3, stride_a, (op_a, ld_a) = _batched(a2, batch, count)
    b3, stride_b, (op_b, ld_b) = _batched(b2, batch, count)
    _follow_current_stream()
    one, zero = scalar(1), scalar(0)
    lib = _library()
    # column-major C^T (n x m, ld n) = B^T (n x k) times A^T (k x m)
    if count == 1:
        status = lib.cublasGemmEx(handle(), op_b, op_a, n, m, k, ctypes.byref(one), b3.data.ptr, data_type, ld_b,
                                  a3.data.ptr, data_type, ld_a, ctypes.byref(zero), out.data.ptr, out_type, n,
                                  compute, _GEMM_DEFAULT)
        _check(status, "cublasGemmEx")
    else:
        status = lib.cublasGemmStridedBatchedEx(
            handle(), op_b, op_a, n, m, k, ctypes.byref(one), b3.data.ptr, data_type, ld_b, stride_b,
            a3.data.ptr, data_type, ld_a, stride_a, ctypes.byref(zero), out.data.ptr, out_type, n, m * n,
            count, compute, _GEMM_DEFAULT)
        _check(status, "cublasGemmStridedBatchedEx")
    return out
