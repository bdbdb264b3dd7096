"""torchvision-compatible image transforms (Pillow + numpy) for flowvision."""
from . import functional
from .autoaugment import *  # noqa: F401,F403
from .autoaugment import __all__ as _autoaugment_all
from .transforms import *  # noqa: F401,F403
from .transforms import __all__ as _transforms_all

__all__ = ["functional", *_transforms_all, *_autoaugment_all]
