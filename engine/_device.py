"""Devices: ``cpu`` (numpy arrays) and ``cuda`` (CuPy arrays, when CuPy and a GPU are present).

CuPy, an optional dependency (the GPU extra), is imported at its first use (``cupy_module``), not with engine:
with the ml_dtypes it imports, that took 0.7 s, more than half of ``import engine`` where CuPy is installed,
a cost every CLI run and worker process paid on machines without a GPU."""
import numpy as np

_cupy = None  # the CuPy module once imported: before that no array is CuPy's
_cupy_missing = False  # its import failed

_INSTALL_HINT = ("pip install 'flowvision[gpu]' (CuPy for CUDA 13; 'flowvision[cuda12]' for CUDA 12)")


class device:
    """A device such as ``device("cpu")`` or ``device("cuda", 0)``."""

    __slots__ = ("type", "index", "_context", "_prev_default")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        elif isinstance(type, str) and ":" in type:
            type, idx = type.split(":", 1)
            index = int(idx)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = index
        self._context = None

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

    def __enter__(self):
        """``with engine.device("cuda:1"):`` makes this the default device of the factories inside (as torch's),
        and for a GPU makes it the current one."""
        if self.type == "cuda":
            self._context = cupy().cuda.Device(self.index or 0)
            self._context.__enter__()
        self._prev_default = _Default.device
        _Default.device = self
        return self

    def __exit__(self, *exc):
        _Default.device = self._prev_default
        if self._context is not None:
            self._context.__exit__(*exc)
            self._context = None
        return False


CPU = device("cpu")


class _Default:
    """The device factories use when they are given none (``set_default_device``); None: the CPU."""

    device = None


def set_default_device(dev):
    """Make ``dev`` the device of tensors and parameters made without one (None: back to the CPU)."""
    _Default.device = None if dev is None else device(dev)


def get_default_device():
    """The default device, with the current GPU's index where it was set as plain ``cuda`` (as torch's)."""
    dev = _Default.device
    if dev is None:
        return CPU
    if dev.type == "cuda" and dev.index is None:
        return device("cuda", cupy().cuda.Device().id)
    return dev


def factory_device(dev):
    """The device a factory puts its result on: ``dev``, else the default device where one was set, else None
    (the factory's own choice: the CPU, or where its data already is)."""
    return dev if dev is not None else _Default.device


def cupy_module():
    """The CuPy module, imported here the first time it is asked for; None where it is not installed."""
    global _cupy, _cupy_missing
    if _cupy is None and not _cupy_missing:
        try:
            import cupy as module
        except Exception:  # pragma: no cover - depends on the machine
            _cupy_missing = True
        else:
            _cupy = module
    return _cupy


def cupy():
    """The CuPy module, or a one-line error saying what is missing and how to install it."""
    if cupy_module() is None:
        raise RuntimeError(f"CUDA is not available: CuPy is not installed; {_INSTALL_HINT}")
    return _cupy


def cuda_unavailable_reason():
    """Why no CUDA device can be used here (None when one can)."""
    if cupy_module() is None:
        return f"CuPy is not installed; {_INSTALL_HINT}"
    try:
        count = _cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, or the driver refuses
        return f"CuPy found no NVIDIA GPU or driver ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
    return None if count > 0 else "CuPy found no NVIDIA GPU"


def cuda_available():
    return cuda_unavailable_reason() is None


def is_cuda_array(arr):
    if _cupy is None:  # only an array made by CuPy imported elsewhere can be one: then import it here too
        return type(arr).__module__.startswith("cupy") and cupy_module() is not None and isinstance(arr, _cupy.ndarray)
    return isinstance(arr, _cupy.ndarray)


def array_module(arr):
    """numpy or cupy, whichever owns ``arr``."""
    return _cupy if is_cuda_array(arr) else np


def device_of(arr):
    return device("cuda", arr.device.id) if is_cuda_array(arr) else CPU


def xp_for(dev):
    """The array module that holds arrays of device ``dev``."""
    dev = device(dev)
    if dev.type == "cpu":
        return np
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"CUDA is not available: {reason}")
    return _cupy


def move(arr, dev, non_blocking=False):
    """Copy ``arr`` to device ``dev`` (no copy when it is already there). ``non_blocking`` copies from
    pinned host memory, or to the host, run on the current stream without waiting for it."""
    dev = device(dev)
    if device_of(arr) == dev:
        return arr
    if dev.type == "cpu":
        return _cupy.asnumpy(arr, blocking=not non_blocking)
    xp = xp_for(dev)
    with xp.cuda.Device(dev.index or 0):
        return xp.asarray(arr, blocking=not non_blocking)


def get_device_module(dev=None):
    """``torch.get_device_module``: the module of a device type's calls (``engine.cuda``, ``engine.cpu``); with no
    device, the current accelerator's, or ``engine.cpu``'s where there is none."""
    import importlib
    if dev is None:
        from . import accelerator
        current = accelerator.current_accelerator()
        kind = "cpu" if current is None else current.type
    elif isinstance(dev, (str, device)):
        kind = device(dev).type
    else:
        raise RuntimeError(f"Invalid value of device '{dev}', expect torch.device, str, or None")
    return importlib.import_module(f"engine.{kind}")
