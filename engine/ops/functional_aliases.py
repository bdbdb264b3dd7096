"""torch's top-level twins of ``nn.functional`` (``torch.conv2d``, ``torch.layer_norm``, ``torch.dropout`` ...).

PyTorch exposes its native ops at the top level with the native signatures, which are not always
``nn.functional``'s: reductions are integers (0 none, 1 mean, 2 sum), ``torch.dropout(input, p, train)``
takes everything positionally, ``torch.batch_norm`` puts the affine weights before the running
statistics, ``torch.embedding`` takes the weight first, pooling never returns indices unless its name
says so. Each name here maps its native signature onto the functional op that does the work, so
the two stay one implementation.
"""
import numpy as np

from .._device import device_of, move
from ..nn import functional as F
from ..nn.functional.dropout import _check_p, _dropout, _feature_shape
from ..nn.functional.sparse import _bag_of_each_index
from ..tensor import _new
from ._common import int_arg

REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}  # torch's at::Reduction enum
GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}  # GridSamplerInterpolation
GRID_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}  # GridSamplerPadding
BAG_MODES = {0: "sum", 1: "mean", 2: "max"}  # EmbeddingBagMode


def _enum(table, value, what):
    value = int_arg(value)
    if value not in table:
        raise ValueError(f"{what} must be one of {sorted(table)}, got {value}")
    return table[value]


def _reduction(value):
    return _enum(REDUCTIONS, value, "reduction")


# ---- convolution and pooling: the functional signatures, less the indices ---------------------------------
conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
avg_pool1d, adaptive_avg_pool1d = F.avg_pool1d, F.adaptive_avg_pool1d
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle
cosine_similarity, pairwise_distance, pdist, bilinear = F.cosine_similarity, F.pairwise_distance, F.pdist, F.bilinear
rms_norm = F.rms_norm


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, stride or None, padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """(values, indices) of ``max_pool1d``."""
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input, output_size):
    """(values, indices), as ``torch.adaptive_max_pool1d`` always returns both."""
    return F.adaptive_max_pool1d(input, output_size, True)


# ---- normalization: native argument order ------------------------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


# ---- dropout: (input, p, train), and in-place twins ------------------------------------------------------
def dropout(input, p, train):
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input, p, train, inplace):
    """Dropout of whole (N, C) channels of an (N, C, ...) input, whatever its number of dims."""
    _check_p(p)
    if input.ndim < 2:
        raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input, got shape "
                           f"{list(input.shape)}")
    return _dropout(input, p, train, inplace, _feature_shape(input))


def feature_dropout(input, p, train):
    return _feature_dropout(input, p, train, False)


def feature_dropout_(input, p, train):
    return _feature_dropout(input, p, train, True)


# ---- embeddings --------------------------------------------------------------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``indices``; a negative ``padding_idx`` means none (``nn.functional`` has already
    made the user's negative index positive when it calls this)."""
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """``(output, offset2bag, bag_size, max_indices)`` as PyTorch's CPU kernel gives them, in the indices' integer
    type: the bag of each index (left empty by the kernel's fast path: plain sums of float32, float16 or bfloat16
    rows), the number of non-padding indices in each bag (zeros for sums), and for 'max' the row each maximum
    came from (for 'mean' a copy of bag_size, for sums zeros)."""
    name = _enum(BAG_MODES, mode, "mode")
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq, mode=name,
                             sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding_idx)
    idx = move(indices._data, "cpu").reshape(-1).astype(np.int64)
    n_bags, bag = _bag_of_each_index(np, move(offsets._data, "cpu").astype(np.int64), idx.size, include_last_offset)
    counted = bag >= 0
    if padding_idx is not None:
        counted &= idx != padding_idx % weight.shape[0]
    bag_size = np.bincount(bag[counted], minlength=n_bags)
    fast_path = (name == "sum" and per_sample_weights is None and padding_idx is None
                 and weight.dtype.itemsize <= 4)
    offset2bag = idx[:0] if fast_path else np.maximum(bag, 0)
    if name == "sum":
        bag_size = max_indices = np.zeros(n_bags, np.int64)
    elif name == "mean":
        max_indices = bag_size
    else:
        max_indices = _max_rows(move(weight._data, "cpu"), move(output._data, "cpu"), idx, bag, counted)
    device, int_type = device_of(output._data), indices._data.dtype
    aux = (_new(move(a.astype(int_type), device)) for a in (offset2bag, bag_size, max_indices))
    return (output, *aux)


def _max_rows(weight, output, idx, bag, counted):
    """For each bag and column, the first index of the bag whose row holds the bag's maximum (0 if empty)."""
    n = idx.size
    first = np.full(output.shape, n, np.int64)
    members = np.nonzero(counted)[0]
    hits = weight[idx[members]] == output[bag[members]]
    np.minimum.at(first, bag[members], np.where(hits, members[:, None], n))
    return np.where(first < n, np.append(idx, 0)[first], 0)


# ---- losses: reductions as integers ------------------------------------------------------------------------
# torch's Python bindings of these ``torch.*`` forms default ``reduction`` to 0 (no reduction), not to the schema's
# Mean: called without one they return the pointwise losses, and so do these.
def kl_div(input, target, reduction=0, *, log_target=False):
    """Element-wise mean for reduction 1 (``nn.functional``'s 'mean', without its advice to use 'batchmean')."""
    pointwise = F.kl_div(input, target, reduction="none", log_target=log_target)
    return _reduce(pointwise, _reduction(reduction))


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0, zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


# ---- padding and sampling ----------------------------------------------------------------------------------
def constant_pad_nd(input, pad, value=0):
    return F.pad(input, pad, "constant", value)


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sample`` with its modes as integers (0 bilinear, 1 nearest, 2 bicubic; 0 zeros, 1 border,
    2 reflection)."""
    return F.grid_sample(input, grid, _enum(GRID_MODES, interpolation_mode, "interpolation_mode"),
                         _enum(GRID_PADDINGS, padding_mode, "padding_mode"), align_corners)


def affine_grid_generator(theta, size, align_corners):
    return F.affine_grid(theta, list(size), align_corners)


__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "avg_pool1d",
           "adaptive_avg_pool1d", "adaptive_max_pool1d", "max_pool1d", "max_pool2d", "max_pool3d",
           "max_pool1d_with_indices", "pixel_shuffle", "pixel_unshuffle", "cosine_similarity", "pairwise_distance",
           "pdist", "bilinear", "batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "dropout",
           "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
           "feature_dropout", "feature_dropout_", "embedding", "embedding_bag", "kl_div", "margin_ranking_loss",
           "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss", "ctc_loss",
           "binary_cross_entropy_with_logits", "constant_pad_nd", "grid_sampler", "affine_grid_generator"]
