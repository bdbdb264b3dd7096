"""``nn.parallel.comm``: copy tensors between devices for data parallelism, as torch's: ``broadcast`` (one
tensor to every device), ``broadcast_coalesced`` (several), ``reduce_add`` (the sum of one tensor's copies on
one device), ``reduce_add_coalesced``, ``scatter`` (chunks of a tensor, one per device) and ``gather`` (their
concatenation on one device).

Devices are ints (CUDA device indices; -1 is the CPU where torch allows it), names or ``engine.device``
objects, so the functions also run on the CPU. They move tensors with ``Tensor.to``, so what they return is
differentiable; a tensor already on its target device is returned as it is, as torch's broadcast returns the
source device's copy. torch fuses small tensors into buffers (``buffer_size``); here each tensor moves on its own.
"""
from ... import _device
from ...ops import cat

BUFFER_SIZE = 10485760


def as_device(device):
    """``device`` as an engine.device: an int is a CUDA index (-1: the CPU)."""
    if isinstance(device, int):
        return _device.CPU if device == -1 else _device.device("cuda", device)
    return _device.device(device)


def broadcast(tensor, devices=None, *, out=None):
    """``tensor`` copied to each of ``devices`` (or into each tensor of ``out``); a tuple."""
    if (devices is None) == (out is None):
        raise RuntimeError(f"Exactly one of 'devices' and 'out' must be specified, but got devices={devices} and "
                           f"out={out}")
    if out is not None:
        for target in out:
            target.copy_(tensor)
        return tuple(out)
    return tuple(tensor.to(as_device(d)) for d in devices)


def broadcast_coalesced(tensors, devices, buffer_size=BUFFER_SIZE):
    """Each of ``tensors`` copied to each of ``devices``: a list, per device, of the tensors' copies."""
    return [[t.to(as_device(d)) for t in tensors] for d in devices]


def reduce_add(inputs, destination=None):
    """The sum of ``inputs`` (same shape, any devices) on ``destination`` (default: the first input's device)."""
    expected = inputs[0].shape
    for i, t in enumerate(inputs):
        if t.shape != expected:
            raise ValueError(f"input {i} has invalid size: got {t.shape}, but expected {expected}")
    target = inputs[0].device if destination is None else as_device(destination)
    total = inputs[0].to(target)
    for t in inputs[1:]:
        total = total + t.to(target)
    return total


def reduce_add_coalesced(inputs, destination=None, buffer_size=BUFFER_SIZE):
    """``reduce_add`` of each tensor position across the lists in ``inputs`` (one list per device)."""
    return tuple(reduce_add(list(same), destination) for same in zip(*inputs))


def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    """``tensor`` split along ``dim`` (into ``chunk_sizes``, or ``chunk``'s near-equal pieces) with piece i on
    ``devices[i]``; or split into the tensors of ``out`` (their sizes along ``dim``). A tuple."""
    if out is not None:
        if devices is not None:
            raise RuntimeError(f"'devices' must not be specified when 'out' is specified, but got "
                               f"devices={devices}")
        if chunk_sizes is not None:
            raise RuntimeError(f"'chunk_sizes' must not be specified when 'out' is specified, but got "
                               f"chunk_sizes={chunk_sizes}")
        for target, piece in zip(out, tensor.split([t.shape[dim] for t in out], dim)):
            target.copy_(piece)
        return tuple(out)
    devices = [as_device(d) for d in devices]
    if chunk_sizes is not None:
        if sum(chunk_sizes) != tensor.shape[dim]:
            raise RuntimeError(f"Chunk sizes {list(chunk_sizes)} do not sum to the size {tensor.shape[dim]} of "
                               f"dim {dim}")
        pieces = tensor.split(list(chunk_sizes), dim)
    else:
        pieces = (tensor,) if len(devices) == 1 else tensor.chunk(len(devices), dim)
    return tuple(piece.to(d) for piece, d in zip(pieces, devices))


def gather(tensors, dim=0, destination=None, *, out=None):
    """``tensors`` (from any devices) concatenated along ``dim`` on ``destination`` (-1: the CPU; default: the
    first tensor's device), or into ``out``."""
    if out is not None:
        if destination is not None:
            raise RuntimeError(f"'destination' must not be specified when 'out' is specified, but got "
                               f"destination={destination}")
        out.copy_(cat([t.to(out.device) for t in tensors], dim))
        return out
    target = tensors[0].device if destination is None else as_device(destination)
    return cat([t.to(target) for t in tensors], dim)


__all__ = ["broadcast", "broadcast_coalesced", "reduce_add", "reduce_add_coalesced", "scatter", "gather"]
