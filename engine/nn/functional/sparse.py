"""Index-based lookups: ``F.one_hot``, ``F.embedding`` and ``F.embedding_bag``."""
import copy

from ... import _dtype
from ...autograd import grad_mode
from ...autograd.double_backward import transposed_backward
from ...autograd.function import Function
from ...ops._common import check_same_device, xp_of
from ...ops.ranges import arange


def one_hot(input, num_classes=-1):
    """int64 tensor of shape (*, num_classes) with a 1 at each index (num_classes=-1: max + 1); ``input`` is the
    name torch's binding takes (its docstring still says ``tensor``). The values are checked where they are read
    (eagerly, and once when a graph is traced)."""
    if input.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = input._data
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size:
        if int(idx.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(idx.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=input.device)
    return (input.unsqueeze(-1) == classes).to(_dtype.int64)  # engine ops: traced by nn.Graph and the ONNX export


class _Embedding(Function):
    """weight[indices]; the gradient scatters back into the rows (never into ``padding_idx``)."""

    uses_inputs = False

    def __init__(self, padding_idx, scale_grad_by_freq, sparse=False):
        self.padding_idx, self.scale_grad_by_freq, self.sparse = padding_idx, scale_grad_by_freq, sparse

    def forward(self, indices, weight):
        self.indices, self.num = indices, weight.shape[0]
        return weight[indices]

    def backward(self, gy):
        xp = xp_of(gy)
        idx = self.indices.reshape(-1)
        rows = gy.reshape(idx.size, -1)
        if self.sparse:
            shape = (self.num,) + gy.shape[self.indices.ndim:]
            return None, _sparse_rows(idx, rows, self.padding_idx, shape, self.scale_grad_by_freq)
        if self.scale_grad_by_freq:
            counts = xp.bincount(idx, minlength=self.num)
            rows = rows / counts[idx][:, None]
        gw = xp.zeros((self.num, rows.shape[1]), gy.dtype)
        xp.add.at(gw, idx, rows)
        if self.padding_idx is not None:
            gw[self.padding_idx] = 0
        return None, gw.reshape((self.num,) + gy.shape[self.indices.ndim:])

    def backward_tensors(self, gy):
        """Linear in gy with the indices fixed: its transpose picks the rows again (``_PickRows``)."""
        return None, transposed_backward(_PickRows(copy.copy(self)), gy)


class _PickRows(Function):
    """The rows an embedding picked, as a linear op of the weight with the indices fixed, scaled and masked
    as its backward is (scale_grad_by_freq, padding_idx), so that the two are each other's transpose."""

    uses_inputs = False

    def __init__(self, embedding):
        self.embedding = embedding

    def forward(self, weight):
        e = self.embedding
        rows = weight[e.indices]
        tail = (1,) * (rows.ndim - e.indices.ndim)
        if e.scale_grad_by_freq:
            counts = xp_of(weight).bincount(e.indices.reshape(-1), minlength=e.num)
            rows = rows / counts[e.indices].reshape(e.indices.shape + tail)
        if e.padding_idx is not None:
            rows = rows * (e.indices != e.padding_idx).reshape(e.indices.shape + tail)
        return rows

    def backward(self, gy):
        return self.embedding.backward(gy)[1]

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def _sparse_rows(idx, rows, padding_idx, shape, scale_grad_by_freq):
    """The sparse COO gradient of an embedding table (``sparse=True``), as torch gives it: one entry per
    looked-up index (uncoalesced), except ``padding_idx``'s, holding that lookup's gradient row."""
    from ...sparse._coo import COOArray
    if scale_grad_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    xp = xp_of(rows)
    if padding_idx is not None:
        keep = xp.flatnonzero(idx != padding_idx)
        idx, rows = idx[keep], rows[keep]
    return COOArray(idx.astype(xp.int64)[None], rows.reshape((idx.size,) + shape[1:]), shape)


def _renorm_rows(weight, idx, max_norm, norm_type):
    """In place (no grad): rescale the rows used by ``idx`` whose norm exceeds ``max_norm``."""
    xp = xp_of(idx)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    norms = (xp.abs(w[rows]) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    w[rows] *= scale[:, None]
    weight._version_counter[0] += 1


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` picked by the integer ``input``; ``sparse=True`` makes the weight's gradient a sparse
    COO tensor (``_sparse_rows``)."""
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {input.type()} instead (while checking arguments "
                           f"for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= num
    idx = input._data
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        with grad_mode.no_grad():
            _renorm_rows(weight, idx, max_norm, norm_type)
    return _Embedding(padding_idx, scale_grad_by_freq, sparse)(input, weight)


class _EmbeddingBag(Function):
    """Per bag, the sum, mean or max of the ``weight`` rows its indices pick (``padding_idx`` rows left out,
    an empty bag giving zeros). ``bag`` holds each index's bag (-1 where it is in none); sum and mean scatter
    rows into their bags, max reads the bags padded to one length and keeps the first maximal row."""

    uses_inputs = False

    def __init__(self, mode, n_bags, bag, padding_idx, scale_grad_by_freq, sparse=False):
        self.mode, self.n_bags, self.bag = mode, n_bags, bag
        self.padding_idx, self.scale_grad_by_freq, self.sparse = padding_idx, scale_grad_by_freq, sparse

    def forward(self, indices, weight, per_sample_weights):
        xp = xp_of(weight)
        keep = self.bag >= 0
        if self.padding_idx is not None:
            keep &= indices != self.padding_idx
        self.pos = xp.nonzero(keep)[0]
        self.idx, self.kept_bag = indices[self.pos], self.bag[self.pos]
        self.num, self.weight, self.psw = weight.shape[0], weight, per_sample_weights
        if self.scale_grad_by_freq:
            self.freq = xp.bincount(indices, minlength=self.num)
        if self.mode == "max":
            return self._max_forward(xp, weight)
        rows = weight[self.idx]
        if per_sample_weights is not None:
            rows = rows * per_sample_weights[self.pos][:, None]
        out = xp.zeros((self.n_bags, weight.shape[1]), weight.dtype)
        xp.add.at(out, self.kept_bag, rows)
        if self.mode == "mean":
            counts = xp.bincount(self.kept_bag, minlength=self.n_bags)
            self.div = xp.maximum(counts, 1).astype(weight.dtype)[:, None]
            out /= self.div
        return out

    def _max_forward(self, xp, weight):
        """Bags laid out as (n_bags, longest) slots of positions (at least one, so that an empty bag has a
        slot); empty slots read -inf and hold position -1, which gives 0 and no gradient."""
        counts = xp.bincount(self.kept_bag, minlength=self.n_bags)
        longest = max(int(counts.max()) if self.n_bags else 0, 1)
        first = xp.cumsum(counts) - counts
        slot = xp.arange(self.pos.size) - first[self.kept_bag]
        grid = xp.full((self.n_bags, longest), -1, xp.int64)
        grid[self.kept_bag, slot] = xp.arange(self.pos.size)
        row_of_slot = xp.concatenate([self.idx, xp.zeros(1, self.idx.dtype)])[grid]  # -1: a stand-in row 0
        vals = xp.where((grid >= 0)[:, :, None], weight[row_of_slot], -xp.inf)
        pick = vals.argmax(axis=1)
        self.arg = xp.take_along_axis(grid, pick, axis=1)
        out = xp.take_along_axis(vals, pick[:, None], axis=1)[:, 0]
        return xp.where(self.arg >= 0, out, 0).astype(weight.dtype)

    def backward(self, gy):
        xp = xp_of(gy)
        gw = xp.zeros((self.num, gy.shape[1]), gy.dtype)
        if self.mode == "max":
            hit = self.arg >= 0
            cols = xp.broadcast_to(xp.arange(gy.shape[1]), gy.shape)
            xp.add.at(gw, (self.idx[self.arg[hit]], cols[hit]), gy[hit])
            return None, gw, None
        g = gy[self.kept_bag]
        if self.mode == "mean":
            g = g / self.div[self.kept_bag]
        gp = None
        if self.psw is not None and self.needs_input_grad[2]:
            gp = xp.zeros(self.psw.shape, gy.dtype)
            gp[self.pos] = (g * self.weight[self.idx]).sum(axis=1)
        if self.psw is not None:
            g = g * self.psw[self.pos][:, None]
        if self.sparse:
            return None, _sparse_rows(self.idx, g, None, gw.shape, self.scale_grad_by_freq), gp
        if self.scale_grad_by_freq:
            g = g / self.freq[self.idx][:, None]
        xp.add.at(gw, self.idx, g)
        return None, gw, gp


def _bag_of_each_index(xp, offsets, n, include_last_offset):
    """(number of bags, the bag of each of the n indices or -1) from the bags' start ``offsets``."""
    n_bags = offsets.size - 1 if include_last_offset else offsets.size
    if offsets.size and int(offsets[0]) != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                           f"from position 0. However, got {int(offsets[0])}")
    if offsets.size and int(offsets[-1]) > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                           f"{int(offsets[-1])}")
    if bool((offsets[1:] < offsets[:-1]).any()):
        raise RuntimeError(f"offsets must be non-decreasing, got {offsets.tolist()}")
    end = int(offsets[-1]) if include_last_offset else n
    positions = xp.arange(n)
    bag = xp.searchsorted(offsets[:max(n_bags, 0)], positions, side="right") - 1
    return max(n_bags, 0), xp.where(positions < end, bag, -1)


def _bag_args(input, offsets, per_sample_weights, include_last_offset):
    """(flat indices, offsets, per-sample weights, include_last_offset): a 2-D input is one bag per row."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                             f"of fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = arange(0, input.numel(), max(input.shape[1], 1), dtype=input.dtype, device=input.device)
        flat_weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
        return input.reshape(-1), offsets, flat_weights, False
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    return input, offsets, per_sample_weights, include_last_offset


def _check_bag_options(mode, scale_grad_by_freq, sparse, per_sample_weights):
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  f"on GitHub.")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embeddings without building the (indices, dim) lookup: a 1-D
    ``input`` split into bags at ``offsets``, or a 2-D input with one bag per row. ``per_sample_weights``
    (mode 'sum') scales each picked row; ``padding_idx`` entries are left out of their bag."""
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    for name, t in (("indices", input), ("offsets", offsets)):
        if t is not None and t.dtype not in (_dtype.int64, _dtype.int32):
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar "
                               f"types: Long, Int; but got {t.type()} instead (while checking arguments for "
                               f"embedding_bag)")
    input, offsets, per_sample_weights, include_last_offset = _bag_args(input, offsets, per_sample_weights,
                                                                        include_last_offset)
    _check_bag_options(mode, scale_grad_by_freq, sparse, per_sample_weights)
    check_same_device(weight, input, offsets)
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, {-num} through {num - 1}, "
                               f"but got {padding_idx}")
        padding_idx %= num
    idx = input._data.astype(xp_of(input._data).int64)
    bad = (idx < 0) | (idx >= num)
    if bool(bad.any()):
        where = int(bad.nonzero()[0][0])
        raise RuntimeError(f"Index {where} of input takes value {int(idx[where])} which is not in the valid range "
                           f"[0, {num})")
    if max_norm is not None:
        with grad_mode.no_grad():
            _renorm_rows(weight, idx, max_norm, norm_type)
    n_bags, bag = _bag_of_each_index(xp_of(idx), offsets._data.astype(idx.dtype), idx.size, include_last_offset)
    fn = _EmbeddingBag(mode, n_bags, bag, padding_idx, scale_grad_by_freq, sparse)
    return fn(input if input.dtype is _dtype.int64 else input.long(), weight, per_sample_weights)  # traced: ONNX


__all__ = ["one_hot", "embedding", "embedding_bag"]
