"""``engine.load`` / ``engine.save``: read PyTorch and safetensors checkpoints without torch; write safetensors.

``load`` recognises the format from the file's first bytes: safetensors, PyTorch's zip format
(torch >= 1.6) or its legacy pickle format. Pickles go through a restricted unpickler, so a
checkpoint can never run code. Files on disk are memory-mapped; tensors are views into the map.
"""
import io
import os
from collections.abc import Mapping

import numpy as np

from .._device import device
from ..tensor import Tensor
from .legacy import load_legacy
from .safetensors_io import is_safetensors, load_safetensors, read_metadata, save_safetensors
from .torch_zip import load_zip
from .unpickler import UnpicklingError

__all__ = ["load", "save", "read_metadata", "UnpicklingError"]


def _map_file(path):
    """The file at ``path`` as a copy-on-write uint8 memory map (an empty array for an empty file)."""
    if os.path.getsize(path) == 0:
        return np.empty(0, dtype=np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="c")


def _source(f):
    """(display name, uint8 array of the bytes, is-a-path) for a path or a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"No such file or directory: '{path}'")
        return path, _map_file(path), True
    if not hasattr(f, "read"):
        raise TypeError(f"engine.load expects a path or a binary file object, got {type(f).__name__}")
    return getattr(f, "name", "<file>"), np.frombuffer(f.read(), dtype=np.uint8), False


def load(f, map_location=None, weights_only=True, mmap=None):
    """The object saved in ``f`` (a path or binary file), with every tensor an ``engine.Tensor``.

    Reads safetensors and PyTorch checkpoints (zip and legacy formats). ``map_location`` puts every
    tensor on a device: None or ``'cpu'`` (the file is read onto the CPU), ``'cuda'``, ``'cuda:1'``
    or an ``engine.device``; ``weights_only`` must stay True: nothing else than tensors and plain
    containers is ever unpickled. ``mmap`` is accepted for torch compatibility: files are always
    memory-mapped.
    """
    if not weights_only:
        raise ValueError("engine.load never runs code from a checkpoint: weights_only=False is not supported")
    target = _map_location(map_location)
    obj = _load_cpu(f)
    return obj if target is None else _to_device(obj, target)


def _map_location(map_location):
    """The device map_location names (None: stay on the CPU); a one-line error for what we don't take."""
    if map_location is None:
        return None
    if not isinstance(map_location, (str, device)):
        raise ValueError(f"engine.load takes map_location as a device or a device string, got "
                         f"{type(map_location).__name__}")
    target = device(map_location)
    return None if target.type == "cpu" else target


def _to_device(obj, target):
    """``obj`` with every tensor moved to ``target`` (nested dicts, lists and tuples)."""
    if isinstance(obj, Tensor):
        return obj.to(target)
    if isinstance(obj, Mapping):
        return type(obj)((k, _to_device(v, target)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(v, target) for v in obj)
    return obj


def _load_cpu(f):
    name, data, is_path = _source(f)
    head = bytes(data[:16])
    if not head:
        raise UnpicklingError(f"'{name}' is empty: not a checkpoint (was the download interrupted?)")
    if head[:4] == b"PK\x03\x04":
        return load_zip(name if is_path else io.BytesIO(data.tobytes()), data)
    if is_safetensors(head):
        return load_safetensors(data, name)
    if head[:1] == b"\x80":
        with (open(name, "rb") if is_path else io.BytesIO(data.tobytes())) as file:
            return load_legacy(file, data)
    raise UnpicklingError(f"'{name}' is not a checkpoint: expected a safetensors file or a PyTorch "
                          f"zip or legacy checkpoint, but it starts with {head[:8]!r}")


def save(obj, f, metadata=None):
    """Write a state_dict (a dict of name -> tensor) to ``f`` as safetensors with string ``metadata``."""
    if not isinstance(obj, Mapping):
        raise TypeError(f"engine.save writes a state_dict (a dict of tensors), got {type(obj).__name__}")
    save_safetensors(obj, os.fspath(f), metadata={"format": "pt", **(metadata or {})})
