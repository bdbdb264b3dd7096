"""SyncBatchNorm's training step inside a process group: batch statistics over every rank's samples.

Each rank sums its samples per channel; one all-reduce of (sums, count) gives the global mean, and a
second of the squared deviations from it gives the variance, both in float64 (the two-pass variance
BatchNorm itself computes, so a batch split over ranks normalises as the whole batch would). The
backward all-reduces the per-channel sums of the output gradient and of its product with the centred
input, from which each rank computes its samples' input gradient; the weight and bias gradients stay
this rank's own share, which DistributedDataParallel then averages (as torch's SyncBatchNorm).
Ranks may hold different numbers of samples, or none.
"""
import numpy as np

from .. import backends
from .._device import array_module
from ..autograd.function import Function
from ..nn.functional.normalization import _as_ncl, _channel_sums, _compute_dtype, _update_running
from ..tensor import _new
from .collectives import all_reduce


def _summed_over_ranks(array, group):
    """``array`` summed over the group's ranks (in place)."""
    all_reduce(_new(array), group=group)
    return array


class SyncBatchNormFunction(Function):
    """Batch norm in training with statistics reduced over a process group (see the module docstring)."""

    def __init__(self, eps, running_mean, running_var, momentum, group):
        self.eps = eps
        self.running = (running_mean, running_var)
        self.momentum = momentum
        self.group = group

    def forward(self, x, weight, bias):
        ct = _compute_dtype(x.dtype)
        x3 = _as_ncl(x, ct)
        xp = array_module(x3)
        n, c, length = x3.shape
        norm = backends.kernels(x3, "norm")
        totals = xp.zeros(c + 1, np.float64)
        totals[:c] = _channel_sums(x3)
        totals[c] = n * length
        _summed_over_ranks(totals, self.group)
        count = float(totals[c])
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got {count:g} over the "
                             "process group")
        mean = totals[:c] / count
        centred, squares = norm.centred(x3, mean) if x3.size else (x3.copy(), xp.zeros(c, np.float64))
        var = _summed_over_ranks(xp.ascontiguousarray(squares, np.float64), self.group) / count
        _update_running(self.running[0], mean, self.momentum)
        _update_running(self.running[1], var * (count / (count - 1)), self.momentum)
        invstd = 1 / xp.sqrt(var + self.eps)
        scale = invstd if weight is None else invstd * weight
        out = norm.affine_(centred, scale, bias) if x3.size else centred
        if any(self.needs_input_grad):
            self.x3, self.mean, self.invstd, self.weight, self.count = x3, mean, invstd, weight, count
        return out.reshape(x.shape).astype(x.dtype, copy=False)

    def backward(self, gy):
        need_x, need_w, need_b = self.needs_input_grad
        x3, mean, invstd = self.x3, self.mean, self.invstd
        xp = array_module(x3)
        c = x3.shape[1]
        g3 = _as_ncl(gy, x3.dtype)
        norm = backends.kernels(g3, "norm")
        sums = xp.zeros(2 * c, np.float64)
        centred = None
        if x3.size:
            sums[:c] = _channel_sums(g3)
            centred, dot = norm.centred(x3, mean, g3)
            sums[c:] = dot
        local_sum_gy, local_dot = sums[:c].copy(), sums[c:].copy()
        gx = None
        if need_x:
            _summed_over_ranks(sums, self.group)
            k = invstd if self.weight is None else invstd * self.weight
            coef = k * invstd * invstd * sums[c:] / self.count
            if x3.size:
                gx = norm.affine_(centred, -coef, -k * sums[:c] / self.count, g3, k).reshape(gy.shape)
            else:
                gx = xp.zeros_like(gy)
        return gx, local_dot * invstd if need_w else None, local_sum_gy if need_b else None


def sync_batch_norm(input, running_mean, running_var, weight, bias, momentum, eps, group):
    """Training-mode batch norm of ``input`` (N, C, ...) with statistics over every rank of ``group``;
    updates the running statistics in place."""
    return SyncBatchNormFunction(eps, running_mean, running_var, momentum, group)(input, weight, bias)


def forward_synchronised(module, input):
    """``nn.SyncBatchNorm.forward`` in training inside a process group of two or more ranks: the
    momentum factor and ``num_batches_tracked`` as BatchNorm's, the statistics over the group."""
    from ..autograd.grad_mode import no_grad
    factor = 0.0 if module.momentum is None else module.momentum
    if module.track_running_stats and module.num_batches_tracked is not None:
        with no_grad():
            module.num_batches_tracked.add_(1)
        factor = 1.0 / float(module.num_batches_tracked) if module.momentum is None else module.momentum
    running_mean = module.running_mean if module.track_running_stats else None
    running_var = module.running_var if module.track_running_stats else None
    return sync_batch_norm(input, running_mean, running_var, module.weight, module.bias, factor, module.eps,
                           module.process_group)
