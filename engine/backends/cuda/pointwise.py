"""Elementwise kernels the CPU runs on its thread pool, here as CuPy array operations (the twin of
``backends/cpu/pointwise.py``)."""
import contextlib

import cupy


def relu(x, inplace=False):
    """max(x, 0) of a float array (into x itself when ``inplace``); NaN propagates."""
    return cupy.maximum(x, 0, out=x if inplace else None)


def relu_backward(gy, y):
    """torch's relu gradient: ``gy`` where relu's output ``y`` is not <= 0 (NaN included), else 0."""
    return cupy.where(y <= 0, 0, gy).astype(gy.dtype, copy=False)


def masked_grad(gy, keep):
    """``gy`` where the boolean ``keep`` is True, else 0, even where gy is infinite or NaN."""
    return cupy.where(keep, gy, 0).astype(gy.dtype, copy=False)


def sigmoid(x):
    """1 / (1 + exp(-x)) of a float array, without overflow for large |x|."""
    e = cupy.exp(-cupy.abs(x))
    return cupy.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


def binary_context(a, b):
    """No context is needed around a binary op on the GPU."""
    return contextlib.nullcontext()
