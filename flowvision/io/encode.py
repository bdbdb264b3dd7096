"""Encoding CHW uint8 tensors as PNG or JPEG bytes (a 1-D uint8 tensor), with torchvision's checks; the
bytes are Pillow's, and decode to the same pixels as torchvision's."""
import io

import numpy as np
from PIL import Image

import engine

from .files import check_uint8, write_file


def _image_of(input, what):
    """The Pillow image of a (1 or 3, H, W) uint8 tensor (RuntimeError naming ``what`` otherwise)."""
    check_uint8(input, what, 3)
    if input.shape[0] not in (1, 3):
        raise RuntimeError(f"{what}: The number of channels should be 1 or 3, got: {input.shape[0]}")
    pixels = np.ascontiguousarray(input.detach().cpu().numpy().transpose(1, 2, 0))
    return Image.fromarray(pixels[..., 0] if pixels.shape[-1] == 1 else pixels)


def _encoded(image, **options):
    buffer = io.BytesIO()
    image.save(buffer, **options)
    return engine.from_numpy(np.frombuffer(buffer.getvalue(), np.uint8).copy())


def encode_png(input, compression_level=6):
    """PNG bytes of a (1 or 3, H, W) uint8 tensor; ``compression_level`` from 0 (none) to 9."""
    if not 0 <= compression_level <= 9:
        raise RuntimeError(f"Compression level should be between 0 and 9, got {compression_level}")
    return _encoded(_image_of(input, "encode_png"), format="PNG", compress_level=compression_level)


def write_png(input, filename, compression_level=6):
    """Write ``input`` as a PNG file; returns the bytes written (as a tensor)."""
    return write_file(filename, encode_png(input, compression_level))


def encode_jpeg(input, quality=75):
    """JPEG bytes of a (1 or 3, H, W) uint8 tensor, or a list of them for a list; ``quality`` 1 to 100."""
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if isinstance(input, (list, tuple)):
        if not input:
            raise ValueError("encode_jpeg requires at least one input tensor when a list is passed")
        return [encode_jpeg(one, quality) for one in input]
    return _encoded(_image_of(input, "encode_jpeg"), format="JPEG", quality=quality)


def write_jpeg(input, filename, quality=75):
    """Write ``input`` as a JPEG file; returns the bytes written (as a tensor)."""
    return write_file(filename, encode_jpeg(input, quality))
