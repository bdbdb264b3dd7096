"""Norm-based functions along a dim: ``F.normalize``, ``F.cosine_similarity``, ``F.pairwise_distance``,
``F.pdist``."""
import math

import numpy as np

from ..._layout import RowMajorResults
from ...amp import autocast_mode
from ...autograd.double_backward import constant, recomputed_backward
from ...autograd.function import Function
from ...ops._common import as_operand, check_broadcast, wrap_dim, xp_of
from ...ops.index_sets import triu_indices
from ...ops.reduction import vector_norm


def _norm(xp, x, p, axis):
    """The p-norm of ``x`` along ``axis`` (kept as a size-1 axis)."""
    if p == 2:
        return xp.sqrt((x * x).sum(axis=axis, keepdims=True))
    a = xp.abs(x)
    if p == math.inf:
        return a.max(axis=axis, keepdims=True)
    if p == 1:
        return a.sum(axis=axis, keepdims=True)
    if p == 0:
        return (x != 0).sum(axis=axis, keepdims=True).astype(x.dtype)
    return (a ** p).sum(axis=axis, keepdims=True) ** (1.0 / p)


def _norm_grad(xp, x, n, p, axis):
    """d||x||_p / dx given the kept-dim norm ``n``; zero where the norm is zero, ties of inf share."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 2:
            g = x / n
        elif p == math.inf:
            hit = xp.abs(x) == n
            g = xp.sign(x) * hit / hit.sum(axis=axis, keepdims=True)
        elif p == 1:
            g = xp.sign(x)
        elif p == 0:
            return xp.zeros_like(x)
        else:
            g = xp.sign(x) * xp.abs(x) ** (p - 1) / n ** (p - 1)
    return xp.where(n == 0, 0, g).astype(x.dtype, copy=False)


class _Normalize(Function):
    """x / max(||x||_p, eps) along ``dim``."""

    def __init__(self, p, dim, eps):
        self.p, self.dim, self.eps = p, dim, eps

    def forward(self, x):
        xp = xp_of(x)
        self.x = x
        self.n = _norm(xp, x, self.p, self.dim)
        self.d = xp.maximum(self.n, self.eps)
        return x / self.d

    def backward(self, gy):
        xp, x = xp_of(gy), self.x
        inner = (gy * x).sum(axis=self.dim, keepdims=True) / (self.d * self.d)
        dn = _norm_grad(xp, x, self.n, self.p, self.dim) * (self.n >= self.eps)
        return gy / self.d - inner * dn

    def backward_tensors(self, gy):
        return recomputed_backward(self, lambda x: x / vector_norm(x, self.p, self.dim, True).clamp_min(self.eps),
                                   [self.x], gy)


@autocast_mode.float32("cuda")
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input`` divided by its p-norm along ``dim`` (at least ``eps``)."""
    dim = wrap_dim(dim, input.ndim)
    if input.is_complex():  # the array kernel's norms and their gradients are the real ones
        result = input / vector_norm(input, p, dim, True).clamp_min(eps)
    else:
        result = _Normalize(float(p), dim, eps)(input)
    if out is None:
        return result
    out.copy_(result)
    return out


class _CosineSimilarity(RowMajorResults, Function):
    """sum(x1 x2) / (max(||x1||, eps) max(||x2||, eps)) along ``dim`` (PyTorch's clamped form)."""

    def __init__(self, dim, eps):
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        xp = xp_of(x1, x2)
        self.inputs = x1, x2
        x1, x2 = xp.broadcast_arrays(x1, x2)
        self.x1, self.x2 = x1, x2
        self.n1, self.n2 = _norm(xp, x1, 2, self.dim), _norm(xp, x2, 2, self.dim)
        self.c1, self.c2 = xp.maximum(self.n1, self.eps), xp.maximum(self.n2, self.eps)
        self.y = (x1 * x2).sum(axis=self.dim, keepdims=True) / (self.c1 * self.c2)
        return self.y.squeeze(self.dim)

    def backward(self, gy):
        xp = xp_of(gy)
        g = xp.expand_dims(gy, self.dim)
        gx1 = gx2 = None
        if self.needs_input_grad[0]:
            gx1 = g * (self.x2 / (self.c1 * self.c2) - self.y / self.c1 * _norm_grad(xp, self.x1, self.n1, 2, self.dim))
        if self.needs_input_grad[1]:
            gx2 = g * (self.x1 / (self.c1 * self.c2) - self.y / self.c2 * _norm_grad(xp, self.x2, self.n2, 2, self.dim))
        return gx1, gx2

    def backward_tensors(self, gy):
        """Recomputed from engine ops; the norms are raised to eps in value only (their gradient passes
        unclamped, as in the array backward and torch)."""
        def cosine(x1, x2):
            n1, n2 = vector_norm(x1, 2, self.dim, True), vector_norm(x2, 2, self.dim, True)
            c1, c2 = n1 + constant(self.c1 - n1._data), n2 + constant(self.c2 - n2._data)
            return ((x1 * x2).sum(self.dim, keepdim=True) / (c1 * c2)).squeeze(self.dim)
        return recomputed_backward(self, cosine, self.inputs, gy)


@autocast_mode.float32("cuda")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcasting)."""
    x1, x2 = as_operand(x1), as_operand(x2, like=x1)
    check_broadcast(x1, x2)
    ndim = max(x1.ndim, x2.ndim)
    return _CosineSimilarity(wrap_dim(dim, ndim), eps)(x1, x2)


class _CosineEmbedding(RowMajorResults, Function):
    """sum(x1 x2) / sqrt((||x1||^2 + 1e-12)(||x2||^2 + 1e-12)): the cosine of cosine_embedding_loss."""

    def __init__(self, dim):
        self.dim = dim

    def forward(self, x1, x2):
        self.x1, self.x2 = x1, x2
        self.m1 = (x1 * x1).sum(axis=self.dim, keepdims=True) + 1e-12
        self.m2 = (x2 * x2).sum(axis=self.dim, keepdims=True) + 1e-12
        self.den = xp_of(x1).sqrt(self.m1 * self.m2)
        self.cos = (x1 * x2).sum(axis=self.dim, keepdims=True) / self.den
        return self.cos.squeeze(self.dim)

    def backward(self, gy):
        g = xp_of(gy).expand_dims(gy, self.dim)
        return (g * (self.x2 / self.den - self.cos * self.x1 / self.m1),
                g * (self.x1 / self.den - self.cos * self.x2 / self.m2))

    def backward_tensors(self, gy):
        def cosine(x1, x2):
            m1, m2 = (x1 * x1).sum(self.dim, keepdim=True) + 1e-12, (x2 * x2).sum(self.dim, keepdim=True) + 1e-12
            return (x1 * x2).sum(self.dim) / (m1 * m2).sqrt().squeeze(self.dim)
        return recomputed_backward(self, cosine, [self.x1, self.x2], gy)


def _cosine_embedding(x1, x2, dim):
    return _CosineEmbedding(dim)(x1, x2)


class _PairwiseDistance(RowMajorResults, Function):
    """||x1 - x2 + eps||_p over the last dim."""

    def __init__(self, p, eps, keepdim):
        self.p, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        xp = xp_of(x1, x2)
        self.inputs = x1, x2
        self.d = x1 - x2 + self.eps
        self.n = _norm(xp, self.d, self.p, -1)
        return self.n if self.keepdim else self.n.squeeze(-1)

    def backward(self, gy):
        xp = xp_of(gy)
        g = gy if self.keepdim else xp.expand_dims(gy, -1)
        g = g * _norm_grad(xp, self.d, self.n, self.p, -1)
        return g, -g

    def backward_tensors(self, gy):
        return recomputed_backward(self, lambda x1, x2: vector_norm(x1 - x2 + self.eps, self.p, -1, self.keepdim),
                                   self.inputs, gy)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """p-norm of ``x1 - x2 + eps`` over the last dim (broadcasting)."""
    x1, x2 = as_operand(x1), as_operand(x2, like=x1)
    check_broadcast(x1, x2)
    return _PairwiseDistance(float(p), eps, keepdim)(x1, x2)


@autocast_mode.float32("cuda")
def pdist(input, p=2):
    """The p-norm distances between every pair of rows ``i < j`` of ``input`` (N, M), in row-major order of
    the pairs: the upper triangle of ``cdist(input, input)``. Composed from differentiable ops (the gradient
    at a zero distance is 0, as in torch)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    first, second = triu_indices(input.shape[0], input.shape[0], 1, device=input.device)
    return vector_norm(input.index_select(0, first) - input.index_select(0, second), p, dim=-1)


__all__ = ["normalize", "cosine_similarity", "pairwise_distance", "pdist"]
