"""``torch.nn.utils.rnn``: variable-length sequences as one padded batch or as a ``PackedSequence``.

A packed sequence holds the valid time steps of a batch only: ``data`` stacks, step after step, the rows of
the sequences still running at that step, longest sequence first, and ``batch_sizes`` (an int64 CPU tensor)
says how many rows each step has. The recurrent layers take one and run each sequence for its own length.
Packing sorts the batch by decreasing length (``sorted_indices``, and its inverse ``unsorted_indices``, both on
the data's device); ``enforce_sorted=True`` instead requires the lengths sorted already and keeps both None.
Packing and padding are one row gather each (``index_select``), so gradients reach the padded input; our sort
of the lengths is stable, where torch's keeps ties in order only for small batches (results in the original
batch order are the same either way).
"""
from collections import namedtuple

import numpy as np

from ... import _dtype, ops
from ...tensor import Tensor
from .. import functional as F

_NOT_SORTED = ("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
               "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
               "if you do not need ONNX exportability.")


def _index(array, device):
    """A host int64 index array as a tensor on ``device`` (for ``index_select``)."""
    return ops.tensor(np.asarray(array, dtype=np.int64), device=device)


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """A packed batch of sequences (see the module docstring); made by ``pack_padded_sequence`` and
    ``pack_sequence``, read back by ``pad_packed_sequence``. Without ``unsorted_indices`` it is the inverse of
    ``sorted_indices``; ``batch_sizes=None`` takes ``data`` as a (data, batch_sizes) pair, as torch does."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:
            data, batch_sizes = data
        if batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data):
        """This sequence around other ``data`` (itself when unchanged), its indices moved to the data's device."""
        if data is self.data:
            return self
        move = lambda index: None if index is None else index.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def to(self, *args, **kwargs):
        """``data.to(*args, **kwargs)``; the indices follow the data's device, ``batch_sizes`` stays on the CPU."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cuda(self, device=None, non_blocking=False):
        return self._with_data(self.data.cuda(device, non_blocking))

    def cpu(self):
        return self._with_data(self.data.cpu())

    def pin_memory(self):
        return self._with_data(self.data.pin_memory())

    def is_pinned(self):
        return self.data.is_pinned()

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def double(self):
        return self.to(dtype=_dtype.float64)

    def float(self):
        return self.to(dtype=_dtype.float32)

    def half(self):
        return self.to(dtype=_dtype.float16)

    def long(self):
        return self.to(dtype=_dtype.int64)

    def int(self):
        return self.to(dtype=_dtype.int32)

    def short(self):
        return self.to(dtype=_dtype.int16)

    def char(self):
        return self.to(dtype=_dtype.int8)

    def byte(self):
        return self.to(dtype=_dtype.uint8)


def invert_permutation(permutation):
    """The inverse of the index permutation ``permutation`` (None stays None), on its device."""
    if permutation is None:
        return None
    order = permutation.cpu().numpy()
    inverse = np.empty_like(order, dtype=np.int64)
    inverse[order] = np.arange(order.size)
    return _index(inverse, permutation.device)


def _host_lengths(lengths):
    """``lengths`` (a list, a numpy array or a CPU tensor of any number type) as a 1-D int64 numpy array."""
    device = lengths.device if isinstance(lengths, Tensor) else "cpu"
    array = lengths.detach().cpu().numpy() if isinstance(lengths, Tensor) else np.asarray(lengths)
    if array.ndim != 1 or str(device) != "cpu":
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {array.ndim}D {device} "
                           "Long tensor")
    return array.astype(np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (``batch_first``: (B, T, *)) whose sequence ``b`` has ``lengths[b]`` valid
    steps. ``enforce_sorted`` requires the lengths in decreasing order; otherwise the batch is sorted here."""
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    lengths = _host_lengths(lengths)
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    if lengths.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} "
                           f"(batch_size={batch})")
    if enforce_sorted:
        if np.any(lengths[1:] > lengths[:-1]):
            raise RuntimeError(_NOT_SORTED)
        order, sorted_indices = np.arange(batch), None
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices = _index(order, input.device)
    if lengths.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    if lengths.max() > steps:
        raise RuntimeError(f"Found a length of {lengths.max()} in 'lengths', longer than the input's {steps} steps")
    lengths = lengths[order]
    batch_sizes = (lengths[None, :] > np.arange(lengths[0])[:, None]).sum(1)
    step, slot = np.nonzero(np.arange(batch)[None, :] < batch_sizes[:, None])  # step-major: the packed order
    rows = order[slot] * steps + step if batch_first else step * batch + order[slot]
    data = input.reshape(steps * batch, *input.shape[2:]).index_select(0, _index(rows, input.device))
    return PackedSequence(data, _index(batch_sizes, "cpu"), sorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """The inverse of ``pack_padded_sequence``: (padded batch in the original order, lengths as an int64 CPU
    tensor). Steps past a sequence's end hold ``padding_value``; ``total_length`` pads to that many steps."""
    batch_sizes = sequence.batch_sizes.numpy()
    steps, batch = batch_sizes.size, int(batch_sizes[0])
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
        steps = total_length
    data = sequence.data
    slots = np.arange(batch)
    if sequence.unsorted_indices is not None:
        slots = sequence.unsorted_indices.cpu().numpy()
    starts = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    rows = np.full((steps, batch), data.shape[0], dtype=np.int64)  # the padding row appended below
    rows[:batch_sizes.size] = np.where(slots[None, :] < batch_sizes[:, None], starts[:, None] + slots[None, :],
                                       data.shape[0])
    lengths = (batch_sizes[:, None] > slots[None, :]).sum(0)
    if batch_first:
        rows = rows.T
    padding = ops.full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = ops.cat([data, padding], 0).index_select(0, _index(rows.reshape(-1), data.device))
    return padded.reshape(*rows.shape, *data.shape[1:]), _index(lengths, "cpu")


def _like_first(sequence, first):
    """``sequence`` with ``first``'s dtype, device and trailing shape, as torch's ``copy_`` into its padded output
    makes it (cast, broadcast over the trailing dims, or torch's error); unchanged when it has them already."""
    trailing = tuple(first.shape[1:])
    if sequence.dtype == first.dtype and tuple(sequence.shape[1:]) == trailing and sequence.device == first.device:
        return sequence
    target = ops.empty((sequence.size(0),) + trailing, dtype=first.dtype, device=first.device)
    return target.copy_(sequence)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *) with ``batch_first``), each padded
    with ``padding_value`` after its elements (``padding_side="left"``: before). As in torch, the result has the
    first sequence's dtype, device and trailing shape, the others cast and broadcast to them. Differentiable: each
    one is padded by ``F.pad``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    first = sequences[0]
    if first.dim() == 0:
        raise RuntimeError("ArrayRef: invalid slice, N = 1; size = 0")
    longest = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        s = _like_first(s, first)
        missing = longest - s.shape[0]
        first_dim = (missing, 0) if padding_side == "left" else (0, missing)
        padded.append(F.pad(s, (0, 0) * (s.dim() - 1) + first_dim, value=padding_value))
    return ops.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The inverse of ``pad_sequence``: the list of sequences ``b``, each its steps ``t < lengths[b]`` (torch's
    mask: ``lengths`` on any device, a length past the padded one takes every step, a negative one none, a
    fractional one rounds up); as many lengths as sequences, or torch's ``zip(..., strict=True)`` error."""
    lengths = lengths.detach().cpu().numpy() if isinstance(lengths, Tensor) else np.asarray(lengths)
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    steps = padded.shape[1]
    counts = np.clip(np.ceil(lengths.astype(np.float64)), 0, steps).astype(np.int64)
    return [padded[b, :count] for b, count in zip(range(padded.shape[0]), counts.tolist(), strict=True)]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *) (with ``enforce_sorted``, longest first)."""
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The inverse of ``pack_sequence``: the list of sequences in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]
