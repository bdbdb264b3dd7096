"""CPU tensors in memory that several processes map: ``Tensor.share_memory_()``, ``Tensor.is_shared()``.

A shared tensor's array lives in an anonymous shared-memory file (Linux ``memfd``; elsewhere an
unlinked temporary file) mapped into the process. The segment keeps the file open, so that it can be
passed to other processes (by file descriptor, as PyTorch's default ``file_descriptor`` strategy does),
and closes it once no array uses the mapping; the memory goes when the last process unmaps it, so
nothing is left behind in ``/dev/shm``.

Differences from PyTorch, which moves a tensor's whole storage: a tensor that views part of another
tensor's memory gets a shared copy of its own elements (the other tensor stays where it was); CUDA
tensors cannot be shared between processes here (``share_memory_()`` leaves them as they are, as in
torch, and ``is_shared()`` is False).
"""
import mmap
import os
import tempfile
import weakref

import numpy as np

from ..tensor import register_method


class SharedSegment(mmap.mmap):
    """A shared-memory file mapped here; ``fd`` is the open file, ``address`` where the mapping starts."""

    @classmethod
    def create(cls, nbytes):
        """A new zero-filled segment of ``nbytes`` bytes (at least one)."""
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("engine-shared-tensor", os.MFD_CLOEXEC)
        else:
            fd, path = tempfile.mkstemp(prefix="engine-shared-tensor-")
            os.unlink(path)
        size = max(nbytes, 1)
        os.ftruncate(fd, size)
        return cls.attach(fd, size)

    @classmethod
    def attach(cls, fd, size):
        """Map the shared-memory file ``fd`` (which the segment then owns and closes)."""
        segment = cls(fd, size)
        segment.fd = fd
        segment.address = np.ndarray((size,), np.uint8, buffer=segment).__array_interface__["data"][0]
        weakref.finalize(segment, os.close, fd)
        return segment


def segment_of(array):
    """The ``SharedSegment`` that holds ``array``'s elements, or None."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, SharedSegment) else None


def share_array(array):
    """``array`` itself when it is in shared memory already (or on a GPU), else a copy in shared memory."""
    if not isinstance(array, np.ndarray) or segment_of(array) is not None:
        return array
    segment = SharedSegment.create(array.nbytes)
    shared = np.ndarray(array.shape, array.dtype, buffer=segment)
    shared[...] = array
    return shared


def array_in(segment, dtype, shape, strides, offset):
    """The array of ``shape`` and ``strides`` that starts ``offset`` bytes into ``segment``."""
    return np.ndarray(shape, np.dtype(dtype), buffer=segment, offset=offset, strides=strides)


def share_memory_(self):
    """Move this CPU tensor's elements into shared memory (nothing to do when they are there, or for a
    CUDA tensor); returns the tensor."""
    self._data = share_array(self._data)
    return self


def is_shared(self):
    """Whether this tensor's elements are in shared memory."""
    return isinstance(self._data, np.ndarray) and segment_of(self._data) is not None


register_method(share_memory_)
register_method(is_shared)
