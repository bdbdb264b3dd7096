"""Forward-mode automatic differentiation (``torch.autograd.forward_ad``).

Inside ``with dual_level():`` a tensor made by ``make_dual(primal, tangent)`` carries its tangent through
every op, and ``unpack_dual(out)`` gives the output's primal and its tangent ``J t``. As in torch, one level
is active at a time, numbered 0; exiting it forgets every tangent. How tangents are computed (one generic
rule over the reverse-mode machinery, installed only while a level is active): see ``_dual.py``.
"""
from collections import namedtuple

from .._dtype import is_floating
from . import _dual

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual"]

_current = {"level": -1}


class UnpackedDualTensor(namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """``unpack_dual``'s result: the primal (a view of the tensor, without tangent) and the tangent (or None)."""


def enter_dual_level():
    """Enter a forward AD level (the only one: nesting is not supported, as in torch) and return it (0)."""
    if _current["level"] >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _dual.install()
    _current["level"] = 0
    return 0


def exit_dual_level(*, level=None):
    """Exit the active level, forgetting all its tangents; only the last level entered may be exited."""
    if level is None:
        level = _current["level"]
    if level != _current["level"]:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _dual.uninstall()
    _current["level"] = -1


class dual_level:
    """Context manager (and decorator) for one forward AD level: ``with dual_level(): ...``."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapped


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` (kept as is, not copied) at the active level."""
    if level is None:
        level = _current["level"]
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    for what, t in (("primal", tensor), ("tangent", tangent)):
        if not (is_floating(t._data.dtype) or t.is_complex()):
            raise ValueError(f"Expected {what} to be floating point or complex, but got: {t.dtype}")
    if level != _current["level"]:
        raise RuntimeError("Invalid level given to _make_dual")
    if _dual.tangent_of(tensor) is not None:
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the "
                           f"same level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the "
                           f"given forward gradient is of size {list(tangent.shape)}.")
    dual = _dual.untracked(tensor.view_as, tensor)
    _dual.set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """``UnpackedDualTensor(primal, tangent)`` of ``tensor`` at the active level; outside one, the tensor
    itself and None."""
    if level is None:
        level = _current["level"]
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if level != _current["level"]:
        if _current["level"] >= 0:
            raise RuntimeError("Invalid level given to _fw_primal")
        return UnpackedDualTensor(tensor, None)
    primal = _dual.untracked(tensor.view_as, tensor)
    return UnpackedDualTensor(primal, _dual.tangent_of(tensor))
