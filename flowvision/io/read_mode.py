"""``ImageReadMode``: the channels a decoder returns (torchvision's enum; strings such as ``"rgb"`` too)."""
from enum import Enum


class ImageReadMode(Enum):
    """UNCHANGED keeps the file's channels; GRAY, GRAY_ALPHA, RGB and RGB_ALPHA (alias RGBA) convert."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = RGB_ALPHA


def read_mode(mode):
    """``mode`` as an ``ImageReadMode`` (a name in any case is accepted, as torchvision accepts it)."""
    if isinstance(mode, str):
        return ImageReadMode[mode.upper()]
    if not isinstance(mode, ImageReadMode):
        raise TypeError(f"mode should be an ImageReadMode or its name, got {type(mode).__name__}")
    return mode
