"""``F.linear_cross_entropy``: cross-entropy of ``linear(input, W, b)`` against a target (torch 2.14).

Two paths, as in torch. ``options=None`` is the reference: ``cross_entropy(linear(input, W, b), target)``
built from the existing ops, so it supports everything they do (K-dimensional ``out_features``, label
smoothing, probability targets, any reduction, higher-order gradients). With a
``LinearCrossEntropyOptions`` the batch is cut into chunks and one Function computes the loss chunk by
chunk, so only a ``(batch_chunk_size, C)`` block of logits exists at a time; for the ``'mean'``/``'sum'``
reductions it also computes the gradients of input, weight and bias in the forward (a backward only
scales them), for ``'none'`` its backward recomputes them chunk by chunk from the saved inputs.
Configurations the chunked path does not handle fall back to the reference with torch's warning.

Measured peak of traced allocations (``tracemalloc``, float32, N=4096, in_features=64, C=8192, index
targets, bias, ``'mean'``, forward and backward of all three): reference path 672.2 MiB (the 128 MiB
logits and their softmax, log-softmax and gradient), chunked path with the default options (32-row
chunks) 9.1 MiB (the gradients of input and weight, one chunk's logits and one weight-gradient product).
"""
import math
import warnings

import numpy as np

from ... import _dtype
from ...autograd import grad_mode
from ...autograd.double_backward import constant
from ...autograd.function import Function
from ...ops._common import xp_of
from .linear import linear
from .loss import cross_entropy

_SECOND_BACKWARD = ("linear_cross_entropy chunked backward called twice; retain_graph=True / double backward "
                    "are not supported.")


def _accumulation_dtype(dtype, acc_dtype):
    """The numpy dtype the chunks are computed in: ``acc_dtype`` where torch allows one (float32 for a
    float16/bfloat16 input), else the input's own."""
    if acc_dtype is not dtype and not (dtype in (_dtype.float16, _dtype.bfloat16) and acc_dtype is _dtype.float32):
        raise RuntimeError(f"linear_cross_entropy supports float32 acc_dtype with float16/bfloat16 inputs, but got "
                           f"{acc_dtype} acc_dtype and {dtype} inputs.")
    return np.float32 if acc_dtype is _dtype.float32 else None


class _ChunkedLinearCrossEntropy(Function):
    """Loss of ``x @ W.T + b`` against index targets (or probability targets for mean/sum), one batch chunk
    at a time: per chunk a stable log-sum-exp, the loss rows, and ``dL/dlogits`` folded straight into the
    gradients of x, W and b, so the whole logits matrix is never held."""

    def __init__(self, reduction, ignore_index, chunk, acc, allow_retain_graph):
        self.reduction, self.ignore_index, self.chunk, self.acc = reduction, ignore_index, chunk, acc
        self.allow_retain_graph = allow_retain_graph
        self.uses_inputs = reduction == "none"  # the scalar reductions keep only their precomputed gradients

    def _rows(self, xp, x, W, t, b, w, start, stop):
        """For rows [start, stop): softmax of the logits (in place over them), the row loss, and the
        per-row target weight (index targets) or the weighted target (probability targets)."""
        z = x[start:stop] @ W.T
        if b is not None:
            z += b
        z -= z.max(axis=1, keepdims=True)
        tt = t[start:stop]
        if self.prob:
            wt = tt if w is None else tt * w
            picked = (wt * z).sum(axis=1)
        else:
            valid = tt != self.ignore_index
            idx = xp.where(valid, tt, 0)
            wt = valid.astype(z.dtype) if w is None else xp.where(valid, w[idx], 0).astype(z.dtype)
            picked = xp.take_along_axis(z, idx[:, None], axis=1)[:, 0] * wt
        xp.exp(z, out=z)
        sums = z.sum(axis=1, keepdims=True)
        z /= sums
        lse = xp.log(sums[:, 0])
        loss = (wt.sum(axis=1) if self.prob else wt) * lse - picked
        return z, loss, wt, idx if not self.prob else None

    def _dlogits(self, xp, p, wt, idx, scale):
        """``dL/dlogits`` of one chunk, in place over its softmax ``p``; ``scale`` per row or scalar."""
        if self.prob:
            p *= wt.sum(axis=1, keepdims=True)
            p -= wt
        else:
            p *= wt[:, None]
            rows = xp.arange(p.shape[0])
            p[rows, idx] -= wt
        p *= scale
        return p

    def _sweep(self, x, W, t, b, w, scale, need):
        """One pass over the chunks: the row losses and, where ``need`` says, the gradients of x, W, b."""
        xp = xp_of(x, W)
        n = x.shape[0]
        loss = xp.empty(n, dtype=x.dtype)
        gx = xp.empty_like(x) if need[0] else None
        gW = xp.zeros_like(W) if need[1] else None
        gb = xp.zeros_like(b) if need[3] else None
        for start in range(0, n, self.chunk):
            stop = min(start + self.chunk, n)
            p, loss[start:stop], wt, idx = self._rows(xp, x, W, t, b, w, start, stop)
            if gx is None and gW is None and gb is None:
                continue
            s = scale[start:stop, None] if getattr(scale, "ndim", 0) else scale
            d = self._dlogits(xp, p, wt, idx, s)
            if gx is not None:
                gx[start:stop] = d @ W
            if gW is not None:
                gW += d.T @ x[start:stop]
            if gb is not None:
                gb += d.sum(axis=0)
        return loss, (gx, gW, None, gb, None)

    def forward(self, x, W, t, b, w):
        xp = xp_of(x, W)
        out_dtype = x.dtype
        if self.acc is not None:
            x, W = x.astype(self.acc), W.astype(self.acc)
            b = None if b is None else b.astype(self.acc)
            w = None if w is None else w.astype(self.acc)
            t = t.astype(self.acc) if t.dtype.kind == "f" else t
        self.prob = t.dtype.kind == "f"
        out_of_range = (t != self.ignore_index) & ((t < 0) | (t >= W.shape[0])) if not self.prob else None
        if out_of_range is not None and out_of_range.any():
            bad = int(t[out_of_range][0])
            raise RuntimeError(f"index {bad} is out of bounds for dimension 1 with size {W.shape[0]}")
        need = tuple(self.needs_input_grad) + (False,) * (5 - len(self.needs_input_grad))
        if self.reduction == "none":
            self.saved = (x, W, t, b, w)
            loss, _ = self._sweep(x, W, t, b, w, 1, (False,) * 5)
            return loss.astype(out_dtype, copy=False)
        if self.reduction == "sum":
            denom = 1
        elif self.prob:
            denom = x.shape[0]
        else:
            valid = t != self.ignore_index
            denom = valid.sum() if w is None else w[xp.where(valid, t, 0)][valid].sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = (xp.asarray(1.0, dtype=x.dtype) / denom).astype(x.dtype)
            loss, grads = self._sweep(x, W, t, b, w, scale, need)
            total = loss.sum() * scale
        self.grads, self.grads_dtype = grads, x.dtype
        return xp.asarray(total, dtype=out_dtype)

    def backward(self, gy):
        if self.reduction == "none":
            x, W, t, b, w = self.saved
            _, grads = self._sweep(x, W, t, b, w, gy.astype(x.dtype), self.needs_input_grad)
            return grads
        if self.grads is None:
            raise RuntimeError(_SECOND_BACKWARD)
        grads, scale = self.grads, gy.astype(self.grads_dtype)
        if self.allow_retain_graph:
            return tuple(None if g is None else g * scale for g in grads)
        self.grads = None  # consumed in place, as torch's op does: no second gradient-sized copy
        for g in grads:
            if g is not None:
                g *= scale
        return grads

    def backward_tensors(self, gy):
        """Under ``create_graph=True`` the same gradients, detached: like torch's chunked op, this path has
        no higher-order gradients, so a second differentiation finds nothing that requires grad."""
        return tuple(None if g is None else constant(g) for g in self.backward(gy._data))


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options):
    """The chunked path on a batched (or unsqueezed) input."""
    batched = input.ndim == 2
    if not batched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    options = options._adjust(input.shape[0], input.shape[1], linear_weight.shape[0], input.dtype,
                              input.device, target.dtype.is_floating_point)
    acc = _accumulation_dtype(input.dtype, options.acc_dtype)
    fn = _ChunkedLinearCrossEntropy(reduction, ignore_index, options.batch_chunk_size, acc,
                                    options.allow_retain_graph)
    result = fn(input, linear_weight, target, linear_bias, weight)
    return result if batched else result.squeeze(0)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """Cross-entropy of ``linear(input, linear_weight, linear_bias)`` against ``target`` (class indices or
    probabilities); ``linear_weight`` of shape ``(C, d_1, ..., d_K, in_features)`` gives a K-dimensional
    loss. ``options`` (a ``LinearCrossEntropyOptions``) selects the chunked path, see the module docstring."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
                           f"requires batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    prob_target = tuple(target.shape) == logits_shape
    if prob_target and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    if options is not None:
        grad_on = grad_mode._State.enabled
        chunkable_prob = (prob_target and reduction in ("mean", "sum") and target.dtype is input.dtype
                          and not (target.requires_grad and grad_on))
        if (not out_features and reduction in ("mean", "sum", "none") and label_smoothing == 0.0
                and (target.dtype is _dtype.int64 or chunkable_prob)):
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options)
        bias_shape = tuple(linear_bias.shape) if linear_bias is not None else None
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
            "label_smoothing == 0, target.dtype == int64 (or a probability target with reduction in "
            "{'mean','sum'}, dtype matching input, and requires_grad == False), out_features == (). Got "
            f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
            f"out_features={out_features}, tracing=False, target.requires_grad={target.requires_grad}, "
            f"linear_bias.shape={bias_shape}.", stacklevel=2)
    if out_features:
        flat = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(flat, in_features)
        linear_bias = None if linear_bias is None else linear_bias.reshape(flat)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


__all__ = ["linear_cross_entropy"]
