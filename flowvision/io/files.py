"""``read_file`` / ``write_file``: a file's bytes as a 1-D uint8 tensor, and back."""
import numpy as np

import engine


def read_file(path):
    """The bytes of the file at ``path`` as a 1-D uint8 tensor (RuntimeError when it cannot be read or is
    empty, as torchvision)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise RuntimeError(str(e)) from None
    if not data:
        raise RuntimeError("Expected a non empty file")
    return engine.from_numpy(np.frombuffer(data, np.uint8).copy())


def check_uint8(data, what, ndim):
    """Refuse anything but an ``ndim``-dimensional uint8 tensor, with torchvision's messages naming ``what``."""
    if not isinstance(data, engine.Tensor):
        raise TypeError(f"{what} expects a tensor, got {type(data).__name__}")
    if data.dtype != engine.uint8:
        raise RuntimeError(f"{what}: Input tensor dtype should be uint8, got {data.dtype}")
    if data.dim() != ndim:
        raise RuntimeError(f"{what}: Input data should be a {ndim}-dimensional tensor, got {data.dim()} dimensions")


def bytes_of(data, what):
    """The bytes of a 1-D uint8 tensor (RuntimeError naming ``what`` otherwise)."""
    check_uint8(data, what, 1)
    return data.cpu().numpy().tobytes()


def write_file(filename, data):
    """Write the bytes of the 1-D uint8 tensor ``data`` to ``filename``; returns ``data``."""
    content = bytes_of(data, "write_file")
    with open(filename, "wb") as f:
        f.write(content)
    return data
