"""``torch.backends.cudnn``'s switches, for scripts that set them. Our convolutions run on cuBLAS (CuPy
gives no cuDNN), so ``benchmark`` and ``deterministic`` change nothing (every kernel here is
deterministic except the atomicAdd scatters of some backward passes); ``allow_tf32`` lets the
convolutions' float32 GEMMs use TF32 (off by default, see ``backends/cuda/tf32.py``)."""
import sys
import types

from .cuda import tf32 as _tf32

enabled = True
benchmark = False
deterministic = False


def is_available():
    """False: no cuDNN is used (the switches are accepted)."""
    return False


def version():
    return None


class _Module(types.ModuleType):
    @property
    def allow_tf32(self):
        return _tf32.convolution.allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        _tf32.convolution.allow_tf32 = value


sys.modules[__name__].__class__ = _Module
