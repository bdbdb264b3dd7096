"""``torch.backends.cudnn``'s switches, for scripts that set them. Our convolutions run on cuBLAS (CuPy
gives no cuDNN), so ``is_available()`` is False and ``enabled``, ``benchmark`` and ``deterministic``
change nothing (every kernel here is deterministic except the atomicAdd scatters of some backward
passes); ``allow_tf32`` lets the convolutions' float32 GEMMs use TF32 (off by default, unlike torch's
True: see ``backends/cuda/tf32.py``). Each takes only a bool, as in torch."""
import sys

from .cuda import tf32 as _tf32
from .flag_module import BoolFlag, FlagModule, switched


def is_available():
    """False: no cuDNN is used (the switches are accepted)."""
    return False


def version():
    return None


def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True):
    """Set the switches for a ``with`` block (torch's defaults: TF32 allowed inside), then restore them."""
    return switched(sys.modules[__name__], enabled=enabled, benchmark=benchmark, deterministic=deterministic,
                    allow_tf32=allow_tf32)


class _CudnnModule(FlagModule):
    enabled = BoolFlag(True)
    benchmark = BoolFlag(False)
    deterministic = BoolFlag(False)

    @property
    def allow_tf32(self):
        return _tf32.convolution.allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        _tf32.convolution.allow_tf32 = value


sys.modules[__name__].__class__ = _CudnnModule
