"""16-bit colour PNGs (RGB, RGBA, grey with alpha) at their full depth, as torchvision's uint16 tensors.

Pillow keeps only the high byte of each 16-bit colour value. Its own PNG decoder (which undoes the row
filters and the interlacing) is therefore run with other unpackers: once more with one that keeps the low
bytes for RGB and RGBA, and, for grey with alpha, once with the 8-bit RGBA unpacker, whose four bytes per
pixel are exactly the grey and alpha values' high and low bytes. The bytes are then joined into uint16.
"""
import numpy as np

_UNPACKERS = {2: ("RGB;16B", "RGB;16L"), 6: ("RGBA;16B", "RGBA;16L"), 4: ("RGBA",)}  # PNG colour type -> raw modes


def is_deep_colour(data):
    """Whether the PNG ``data`` holds 16-bit RGB, RGBA or grey-with-alpha pixels (read from its IHDR)."""
    return len(data) > 25 and data[24] == 16 and data[25] in _UNPACKERS


def colour_and_alpha(data, decoded):
    """The (H, W, C) uint16 colour or grey values of the PNG ``data`` and its (H, W) alpha (None when it has
    none). ``decoded(rawmode)`` is the file's Pillow image decoded with that raw mode (and turned upright)."""
    colour_type = data[25]
    planes = [np.asarray(decoded(rawmode)).astype(np.uint16) for rawmode in _UNPACKERS[colour_type]]
    if colour_type == 4:
        pixels = (planes[0][..., 0::2] << 8) | planes[0][..., 1::2]
    else:
        pixels = (planes[0] << 8) | planes[1]
    if colour_type == 2:
        return pixels, None
    return pixels[..., :-1], pixels[..., -1]
