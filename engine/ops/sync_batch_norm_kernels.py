"""The kernels of torch's ``SyncBatchNorm``: batch norm split into per-process statistics, their combination
across processes, the elementwise normalisation, and the two halves of its backward.

    mean, invstd = batch_norm_stats(x, eps)                        # each process, over its own batch
    mean, invstd = batch_norm_gather_stats_with_counts(x, all_means, all_invstds, running_mean, running_var,
                                                       momentum, eps, counts)   # after an all_gather
    y = batch_norm_elemt(x, weight, bias, mean, invstd, eps)
    sum_dy, sum_dy_xmu, grad_weight, grad_bias = batch_norm_backward_reduce(dy, x, mean, invstd, weight,
                                                                           True, True, True)
    grad_x = batch_norm_backward_elemt(dy, x, mean, invstd, weight, sum_dy, sum_dy_xmu, counts)
                                                                   # after an all_reduce of the two sums

They work on the channel dim 1 of (N, C, *) inputs, like torch's (which runs them on CUDA only), and carry no
gradient: ``SyncBatchNorm``'s own autograd function chains them. Statistics of float16 and bfloat16 inputs
are float32, as torch's.
"""
from ..tensor import _new
from ..nn.functional.normalization import _update_running
from ._common import xp_of


def _stat_dtype(array):
    """float32 for half-precision inputs (torch accumulates statistics in it), else the input's dtype."""
    return array.dtype if array.dtype.itemsize >= 4 else xp_of(array).dtype("float32")


def _per_channel(array):
    """A (C,) array reshaped to broadcast against an (N, C, *) input of ``ndim`` dims."""
    return lambda ndim: array.reshape((1, -1) + (1,) * (ndim - 2))


def _axes(x):
    return (0,) + tuple(range(2, x.ndim))


def _data(t):
    return None if t is None else t._data


def _check_input(input, name):
    if input.dim() < 2:
        raise RuntimeError(f"{name}: expected input with at least 2 dims (N, C, ...), got {input.dim()}")


def batch_norm_stats(input, eps):
    """``(mean, invstd)`` of each channel: the batch mean and 1 / sqrt(biased variance + eps)."""
    _check_input(input, "batch_norm_stats")
    x = input._data
    x = x.astype(_stat_dtype(x), copy=False)
    mean = x.mean(_axes(x))
    var = ((x - _per_channel(mean)(x.ndim)) ** 2).mean(_axes(x))
    return _new(mean), _new((1 / xp_of(x).sqrt(var + eps)).astype(mean.dtype, copy=False))


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    """``(mean, invstd)`` of the whole batch from each process's (rows of ``mean`` and ``invstd``, each over
    ``counts[i]`` values per channel); updates the running statistics in place (unbiased variance)."""
    m, inv = mean._data, invstd._data
    xp = xp_of(m)
    n = xp.asarray(counts._data, m.dtype).reshape(-1, 1)
    total = n.sum()
    global_mean = (n * m).sum(0) / total
    var = ((1 / (inv * inv) - eps + (m - global_mean) ** 2) * n).sum(0) / total
    _update_running(running_mean, global_mean, momentum)
    _update_running(running_var, var * (total / (total - 1)), momentum)
    return _new(global_mean), _new((1 / xp.sqrt(var + eps)).astype(m.dtype, copy=False))


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count):
    """``batch_norm_gather_stats_with_counts`` where every process saw ``count`` values per channel."""
    counts = _new(xp_of(mean._data).full(mean.shape[0], count, mean._data.dtype))
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps,
                                               counts)


def batch_norm_elemt(input, weight, bias, mean, invstd, eps):
    """(x - mean) * invstd * weight + bias, per channel, in the input's dtype (``eps`` is already in
    ``invstd``)."""
    _check_input(input, "batch_norm_elemt")
    x = input._data
    at = lambda a: _per_channel(a)(x.ndim)  # noqa: E731
    y = (x - at(mean._data)) * at(invstd._data)
    if weight is not None:
        y = y * at(weight._data)
    if bias is not None:
        y = y + at(bias._data)
    return _new(y.astype(x.dtype, copy=False))


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    """``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` per channel: the sums of dy and of dy * (x - mean) that
    the input gradient needs (None unless ``input_g``), and the affine weights' gradients (None unless
    asked for)."""
    _check_input(input, "batch_norm_backward_reduce")
    x, dy = input._data, grad_out._data
    ct = _stat_dtype(x)
    dy = dy.astype(ct, copy=False)
    sum_dy = dy.sum(_axes(x))
    sum_dy_xmu = (dy * (x.astype(ct, copy=False) - _per_channel(mean._data)(x.ndim))).sum(_axes(x))
    grad_weight = _new((sum_dy_xmu * invstd._data).astype(_dtype_of(weight, ct), copy=False)) if weight_g else None
    grad_bias = _new(sum_dy.astype(_dtype_of(weight, ct), copy=False)) if bias_g else None
    if not input_g:
        return None, None, grad_weight, grad_bias
    return _new(sum_dy), _new(sum_dy_xmu), grad_weight, grad_bias


def _dtype_of(weight, default):
    return default if weight is None else weight._data.dtype


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """The input gradient of batch norm from the whole batch's sums (``count``: the values per channel of
    each process): (dy - sum_dy / N - (x - mean) invstd^2 sum_dy_xmu / N) invstd weight, N = sum(count)."""
    _check_input(input, "batch_norm_backward_elemt")
    x, dy = input._data, grad_out._data
    ct = _stat_dtype(x)
    at = lambda a: _per_channel(a.astype(ct, copy=False))(x.ndim)  # noqa: E731
    total = ct.type(count._data.sum())
    inv = at(invstd._data)
    xmu = x.astype(ct, copy=False) - at(mean._data)
    grad = (dy.astype(ct, copy=False) - at(sum_dy._data) / total - xmu * inv * inv * at(sum_dy_xmu._data) / total)
    grad = grad * inv if weight is None else grad * (inv * at(weight._data))
    return _new(grad.astype(x.dtype, copy=False))


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """``(mean, var)`` of each channel (the biased variance, as torch returns it), and the running statistics
    moved towards them in place (the running variance towards the unbiased one, as batch norm's)."""
    _check_input(input, "batch_norm_update_stats")
    x = input._data
    x = x.astype(_stat_dtype(x), copy=False)
    n = x.size // x.shape[1]
    mean = x.mean(_axes(x))
    squares = ((x - _per_channel(mean)(x.ndim)) ** 2).sum(_axes(x))
    _update_running(running_mean, mean, momentum)
    _update_running(running_var, squares / max(n - 1, 0), momentum)
    return _new(mean), _new(squares / n)


__all__ = ["batch_norm_stats", "batch_norm_gather_stats", "batch_norm_gather_stats_with_counts",
           "batch_norm_elemt", "batch_norm_backward_reduce", "batch_norm_backward_elemt", "batch_norm_update_stats"]
