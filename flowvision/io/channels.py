"""Turning a decoded Pillow image into the channels an ``ImageReadMode`` asks for, with torchvision's
values.

- Grey from colour uses libpng's integer weights (0.2989, 0.587, 0.114 in 15-bit fixed point,
  truncated; a pixel whose three values are equal keeps that value), as torchvision's PNG decoder.
- An alpha channel that the file lacks is opaque (255, or 65535 for 16-bit grey).
- Colour from grey repeats the grey value; an alpha channel that is not asked for is dropped.
- A palette image is first expanded to RGB (RGBA when it has a transparent colour), a 1-bit image to
  0/255 grey. (torchvision returns unexpanded bytes for an unchanged palette PNG, a malformed alpha
  channel for palette PNGs without transparency, and an alpha of 2**depth - 1 instead of 255 for 1-, 2-
  and 4-bit grey PNGs; those cases are not reproduced.)
"""
import numpy as np

from .read_mode import ImageReadMode

_GREY_WEIGHTS = (9794, 19234, 3740)  # libpng's fixed-point weights for 0.2989, 0.587 (blue takes the rest)


def grey_from_rgb(rgb):
    """(H, W) grey of an (H, W, 3) uint8 or uint16 array, as libpng computes it (it rounds 16-bit values
    and truncates 8-bit ones)."""
    red, green, blue = (rgb[..., i].astype(np.int64) for i in range(3))
    rounding = 1 << 14 if rgb.dtype == np.uint16 else 0
    weighted = (_GREY_WEIGHTS[0] * red + _GREY_WEIGHTS[1] * green + _GREY_WEIGHTS[2] * blue + rounding) >> 15
    return np.where((red == green) & (red == blue), red, weighted).astype(rgb.dtype)


def expanded(image):
    """``image`` with a palette or 1-bit pixels replaced by plain RGB(A) or grey."""
    if image.mode == "P":
        return image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode == "1":
        return image.convert("L")
    return image


def _colour_and_alpha(image):
    """(H, W, C) colour or grey values and the (H, W) alpha (None when the image has none)."""
    pixels = np.asarray(image)
    if pixels.ndim == 2:
        return pixels[..., None], None
    if image.mode in ("LA", "RGBA"):
        return pixels[..., :-1], pixels[..., -1]
    return pixels, None


def hwc_in_mode(image, mode):
    """The (H, W, C) array of ``image`` (already expanded) in read mode ``mode``."""
    return channels_in_mode(*_colour_and_alpha(image), mode)


def channels_in_mode(colour, alpha, mode):
    """The (H, W, C) array in read mode ``mode`` of (H, W, 1 or 3) ``colour`` values and their (H, W)
    ``alpha`` (None when the image has none)."""
    if mode is ImageReadMode.UNCHANGED:
        return colour if alpha is None else np.dstack([colour, alpha])
    if mode in (ImageReadMode.GRAY, ImageReadMode.GRAY_ALPHA):
        channels = colour if colour.shape[-1] == 1 else grey_from_rgb(colour)[..., None]
    else:
        channels = colour if colour.shape[-1] == 3 else np.repeat(colour, 3, axis=-1)
    if mode in (ImageReadMode.GRAY, ImageReadMode.RGB):
        return channels
    if alpha is None:
        alpha = np.full(channels.shape[:2], np.iinfo(channels.dtype).max, channels.dtype)
    return np.dstack([channels, alpha])
