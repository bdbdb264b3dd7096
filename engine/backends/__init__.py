"""Compute backends: array kernels the autograd functions call, one module per device type.

``kernels(array, family)`` picks the kernel module of a family (``conv``, ``pool``,
``interpolate``) for an array: ``engine.backends.cpu.<family>`` for numpy arrays,
``engine.backends.cuda.<family>`` for CuPy arrays. Twins expose the same function names.
"""
import importlib

from .._device import device_of


def kernels(array, family):
    """The ``family`` kernel module for ``array``'s device."""
    return importlib.import_module(f"{__name__}.{device_of(array).type}.{family}")
