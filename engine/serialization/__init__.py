"""``engine.load`` / ``engine.save``: PyTorch's checkpoint formats and safetensors, without torch.

``load`` recognises the format from the file's first bytes: safetensors, PyTorch's zip format
(torch >= 1.6) or its legacy pickle format. Pickles go through a restricted unpickler, so a
checkpoint can never run code: it builds what torch's weights-only loader builds, plus the classes a
user allows with ``add_safe_globals`` (``get_unsafe_globals_in_checkpoint`` lists what a file would
need). A file that cannot be loaded raises ``CheckpointError``, one line naming the file and what is
wrong. ``save`` writes what ``torch.save`` writes (a zip archive ``torch.load(f, weights_only=True)``
reads, or the legacy format), or safetensors for a ``.safetensors`` name. Loaded tensors view their
own storages (offsets and strides as torch's), which tensors saved sharing memory share again.
"""
import os
import pickle
import struct
import zipfile
import zlib
from collections.abc import Mapping

import numpy as np

from .._device import device
from .errors import CheckpointError
from .legacy import load_legacy, save_legacy
from .safe_globals import (add_safe_globals, clear_safe_globals, get_safe_globals, get_unsafe_globals_in_checkpoint,
                           safe_globals)
from .safetensors_io import is_safetensors, load_safetensors, read_metadata, save_safetensors
from .torch_save import save_torch
from .torch_zip import load_zip

__all__ = ["load", "save", "save_safetensors", "read_metadata", "CheckpointError", "UnpicklingError",
           "add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint"]

UnpicklingError = CheckpointError  # the name this error had before; callers still catch it by it

# what the zip, pickle and numpy machinery raise on bytes that are not a well-formed checkpoint
_MALFORMED = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, LookupError,
              NotImplementedError, OverflowError, struct.error, zipfile.BadZipFile, zlib.error)
_MAX_DETAIL = 300


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """The object saved in ``f`` (a path or binary file), with every tensor an ``engine.Tensor``.

    Reads safetensors and PyTorch checkpoints (zip and legacy formats). ``map_location`` puts every
    tensor on a device: None or ``'cpu'`` (the file is read onto the CPU), ``'cuda'``, ``'cuda:1'``,
    an ``engine.device``, a dict ``{saved location: device}`` or a function ``(tensor, saved location)``
    returning the tensor to use (None: the one read). ``weights_only`` must stay True (or None, which torch reads
    as True): nothing else than tensors and plain containers is ever unpickled. ``mmap`` (as ``torch.load``): False or None reads the file into
    memory, so the tensors are unaffected by later changes to the file; True memory-maps it (copy on
    write), which loads faster, but the tensors then read the file's pages as they are used, so the
    file must not be truncated or rewritten while they live (``Module.load_state_dict`` copies them
    into the module's own arrays). ``pickle_load_args`` may name the ``encoding`` (default ``'utf-8'``, as
    torch's; ``'latin1'``, ``'bytes'``) and ``errors`` that Python 2 strings in old pickles are decoded with.
    Raises ``CheckpointError`` for a file that is not a loadable checkpoint.
    """
    if weights_only is not None and not weights_only:
        raise ValueError("engine.load never runs code from a checkpoint: weights_only=False is not supported")
    if pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    unknown = set(pickle_load_args) - {"encoding", "errors"}
    if unknown:
        raise TypeError(f"engine.load got an unexpected keyword argument '{sorted(unknown)[0]}'")
    text = (pickle_load_args.get("encoding", "utf-8"), pickle_load_args.get("errors", "strict"))
    place = _placer(map_location)
    name, data = _read(f, mmap)
    return _parse(name, data, place, text)


def _placer(map_location):
    """``place(tensor, location)``: ``tensor`` (saved from device ``location``) on the device map_location names
    (None: tensors stay on the CPU). As torch's, map_location is a device, a device string, a dict from saved
    location to device, or a function ``(storage, location) -> storage or None`` (here given each tensor)."""
    if map_location is None:
        return None
    if isinstance(map_location, dict):
        mapping = {key: device(value) for key, value in map_location.items()}
        return lambda tensor, location: _to(tensor, mapping.get(location))
    if callable(map_location) and not isinstance(map_location, (str, device)):
        return lambda tensor, location: _mapped(map_location, tensor, location)
    if not isinstance(map_location, (str, device)):
        raise ValueError(f"engine.load takes map_location as a device, a device string, a dict or a function, got "
                         f"{type(map_location).__name__}")
    target = device(map_location)
    return lambda tensor, location: _to(tensor, target)


def _to(tensor, target):
    """``tensor`` moved to device ``target`` (None or the CPU: where it is, read from the file)."""
    return tensor if target is None or target.type == "cpu" else tensor.to(target)


class _CallerError(Exception):
    """Carries an error of the caller's map_location (or about what it returned) past the handlers that would
    report it as a corrupt file; ``_parse`` raises the original."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


def _mapped(function, tensor, location):
    """What map_location ``function`` makes of ``tensor``: its result, or the tensor itself for None."""
    from ..tensor import Tensor

    try:
        result = function(tensor, location)
    except Exception as e:
        raise _CallerError(e) from e
    if result is None:
        return tensor
    if not isinstance(result, Tensor):
        raise _CallerError(TypeError(f"map_location should return a storage (here a Tensor) or None, got "
                                     f"{type(result).__name__}"))
    return result


def _read(f, mmap):
    """(display name, the bytes as a writable uint8 array) of a path or a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"No such file or directory: '{path}'")
        if mmap and os.path.getsize(path) > 0:
            return path, np.memmap(path, dtype=np.uint8, mode="c")
        return path, np.fromfile(path, dtype=np.uint8)
    if not hasattr(f, "read"):
        raise TypeError(f"engine.load expects a path or a binary file object, got {type(f).__name__}")
    if mmap:
        raise ValueError("engine.load(mmap=True) maps a file: f must be a path, not a file object")
    content = f.read()
    if not isinstance(content, bytes):
        raise TypeError(f"engine.load expects a binary file object; reading it gave {type(content).__name__}")
    return getattr(f, "name", "<file>"), np.frombuffer(content, dtype=np.uint8).copy()


def _reader(head):
    """The reader of the format whose file starts with ``head`` (None when it is no checkpoint format)."""
    if head[:4] == b"PK\x03\x04":
        return load_zip
    if is_safetensors(head):
        return load_safetensors
    if head[:1] == b"\x80":
        return load_legacy
    return None


def _one_line(error):
    """An exception's message on one line, cut to a readable length."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


def _parse(name, data, place, text=("utf-8", "strict")):
    """The object in the checkpoint bytes ``data`` of the file ``name``; ``text``: the (encoding, errors) of
    Python 2 strings in its pickle."""
    head = bytes(data[:16])
    if not head:
        raise CheckpointError(f"'{name}' is empty: not a checkpoint (was the download interrupted?)")
    reader = _reader(head)
    if reader is None:
        raise CheckpointError(f"'{name}' is not a checkpoint: expected a safetensors file or a PyTorch "
                              f"zip or legacy checkpoint, but it starts with {head[:8]!r}")
    try:
        return reader(data, place) if reader is load_safetensors else reader(data, place, text)
    except _CallerError as e:
        raise e.error from None
    except CheckpointError as e:
        raise CheckpointError(f"cannot load '{name}': {_one_line(e)}") from e
    except _MALFORMED as e:
        raise CheckpointError(f"cannot load '{name}': corrupt or truncated checkpoint "
                              f"({type(e).__name__}: {_one_line(e)})") from e


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, metadata=None):
    """Write ``obj`` to ``f`` (a path or binary file object) as ``torch.save`` does.

    ``obj`` is any nesting of dicts (OrderedDicts stay ordered, with their ``_metadata``), Counters,
    lists, tuples and sets of tensors, parameters (with the public attributes set on them), numpy
    arrays (written as tensors), numbers, strings, bytes, bytearrays, bools, None, dtypes, sizes and
    devices: a state_dict, or a training checkpoint with the optimizer's and scheduler's state.
    Tensors that view the same memory share a storage, as in torch. A path ending in
    ``.safetensors`` gets a safetensors file of the flat dict of tensors ``obj`` with string
    ``metadata`` (also ``save_safetensors``). A path is written through a temporary file renamed
    at the end, so an interrupted save never leaves a partial checkpoint under its name.
    As torch's: ``pickle_protocol`` (2 to 5) is the protocol the pickle declares, and
    ``_use_new_zipfile_serialization=False`` writes the legacy format. The pickle is written by engine
    itself (it never imports torch), so ``pickle_module`` can only be the standard ``pickle``.
    """
    if pickle_module is not pickle:
        raise ValueError(f"engine.save writes its pickles itself: pickle_module must be the standard pickle "
                         f"module, got {pickle_module!r:.60}")
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"engine.save writes pickle protocols 2 to {pickle.HIGHEST_PROTOCOL}, got {pickle_protocol!r:.40}")
    if isinstance(f, (str, os.PathLike)) and os.fspath(f).lower().endswith(".safetensors"):
        if not isinstance(obj, Mapping):
            raise TypeError(f"a .safetensors file holds a state_dict (a dict of tensors), got {type(obj).__name__}")
        save_safetensors(obj, f, metadata={"format": "pt", **(metadata or {})})
        return
    if metadata is not None:
        raise ValueError("engine.save writes metadata= into safetensors files only: name the file "
                         "'*.safetensors' or call engine.serialization.save_safetensors")
    if _use_new_zipfile_serialization:
        save_torch(obj, f, pickle_protocol, byteorder_record=not _disable_byteorder_record)
    else:
        save_legacy(obj, f, pickle_protocol)
