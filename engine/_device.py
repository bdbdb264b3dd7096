"""Devices: ``cpu`` (numpy arrays) and ``cuda`` (CuPy arrays, when CuPy and a GPU are present)."""
import numpy as np

try:  # CuPy is an optional dependency: the GPU extra.
    import cupy as _cupy
except Exception:  # pragma: no cover - depends on the machine
    _cupy = None


class device:
    """A device such as ``device("cpu")`` or ``device("cuda", 0)``."""

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, str) and ":" in type:
            type, idx = type.split(":", 1)
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and (self.index or 0) == (other.index or 0)

    def __hash__(self):
        return hash((self.type, self.index or 0))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"


CPU = device("cpu")


def cuda_available():
    if _cupy is None:
        return False
    try:
        return _cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def array_module(arr):
    """numpy or cupy, whichever owns ``arr``."""
    if _cupy is not None and isinstance(arr, _cupy.ndarray):
        return _cupy
    return np


def device_of(arr):
    if _cupy is not None and isinstance(arr, _cupy.ndarray):
        return device("cuda", arr.device.id)
    return CPU


def xp_for(dev):
    """The array module that holds arrays of device ``dev``."""
    dev = device(dev)
    if dev.type == "cpu":
        return np
    if not cuda_available():
        raise RuntimeError("CUDA is not available: install the 'gpu' extra (cupy) on a machine with an NVIDIA GPU")
    return _cupy


def move(arr, dev):
    """Copy ``arr`` to device ``dev`` (no copy when it is already there)."""
    dev = device(dev)
    if device_of(arr) == dev:
        return arr
    if dev.type == "cpu":
        return _cupy.asnumpy(arr)
    xp = xp_for(dev)
    with xp.cuda.Device(dev.index or 0):
        return xp.asarray(arr)
