"""``torch.backends.mkldnn``'s switches, for scripts that set them: the engine has no oneDNN (CPU
convolutions are numpy GEMMs), so ``is_available()`` is False and ``enabled`` / ``deterministic``
(bools, torch's defaults) change nothing."""
import sys

from .flag_module import BoolFlag, FlagModule, switched


def is_available():
    """False: no oneDNN is used (the switches are accepted)."""
    return False


def flags(enabled=False, deterministic=False):
    """Set the switches for a ``with`` block, then restore them."""
    return switched(sys.modules[__name__], enabled=enabled, deterministic=deterministic)


class _MkldnnModule(FlagModule):
    enabled = BoolFlag(True)
    deterministic = BoolFlag(False)


sys.modules[__name__].__class__ = _MkldnnModule
