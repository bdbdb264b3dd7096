"""A seeded sample of the differential fuzzing of ``flowvision.io`` against ``torchvision.io``: the cases it
found wrong. 16-bit colour PNGs (RGB, RGBA, grey with alpha; filtered rows, interlaced, EXIF-rotated) decode
to torchvision's uint16 tensors in every read mode; GIF frames are composed as torchvision composes them
(background, disposal, transparency, frame offsets, local palettes); and torchvision's errors for a GIF
without its trailer, an empty file and an empty list of JPEGs."""
import io
import struct
import warnings
import zlib

import numpy as np
import pytest
import torch
import torchvision.io as tio
from PIL import Image

import engine
import flowvision.io as fio

MODES = ["UNCHANGED", "GRAY", "GRAY_ALPHA", "RGB", "RGB_ALPHA"]
CHANNELS = {2: 3, 4: 2, 6: 4}  # PNG colour type -> channels
ADAM7 = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2), (1, 0, 2, 1)]


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _filtered(line, prior, bpp, kind):
    """One scanline with PNG filter ``kind`` (0 none, 1 sub, 2 up, 3 average, 4 Paeth) applied."""
    raw, up = line.astype(np.int64), prior.astype(np.int64)
    left = np.concatenate([np.zeros(bpp, np.int64), raw[:-bpp]])
    up_left = np.concatenate([np.zeros(bpp, np.int64), up[:-bpp]])
    estimate = left + up - up_left
    paeth = np.where((abs(estimate - left) <= abs(estimate - up)) & (abs(estimate - left) <= abs(estimate - up_left)),
                     left, np.where(abs(estimate - up) <= abs(estimate - up_left), up, up_left))
    predicted = [0, left, up, (left + up) // 2, paeth][kind]
    return bytes([kind]) + ((raw - predicted) % 256).astype(np.uint8).tobytes()


def _scanlines(pixels, rng):
    lines, prior = b"", None
    for row in pixels:
        line = np.frombuffer(row.astype(">u2").tobytes(), np.uint8)
        prior = np.zeros_like(line) if prior is None else prior
        lines += _filtered(line, prior, 2 * pixels.shape[-1], int(rng.integers(5)))
        prior = line
    return lines


def _png16(pixels, colour_type, interlaced, rng, exif=b""):
    """A 16-bit PNG of (H, W, C) ``pixels`` with random row filters, written by hand (Pillow cannot)."""
    height, width, _ = pixels.shape
    if interlaced:
        passes = [pixels[top::down, left::right] for top, left, down, right in ADAM7]
        data = b"".join(_scanlines(part, rng) for part in passes if part.size)
    else:
        data = _scanlines(pixels, rng)
    header = struct.pack(">IIBBBBB", width, height, 16, colour_type, 0, 0, int(interlaced))
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + (_chunk(b"eXIf", exif) if exif else b"")
            + _chunk(b"IDAT", zlib.compress(data)) + _chunk(b"IEND", b""))


def _ours(decode, data, *args, **options):
    return decode(engine.from_numpy(np.frombuffer(data, np.uint8).copy()), *args, **options).numpy()


def _theirs(decode, data, *args, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision 0.29 deprecates its image io
        return decode(torch.frombuffer(bytearray(data), dtype=torch.uint8), *args, **options).numpy()


def _assert_same(ours, theirs):
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("colour_type", sorted(CHANNELS))
def test_16_bit_colour_png_in_every_mode(colour_type, seed):
    rng = np.random.default_rng(seed)
    height, width = (int(n) for n in rng.integers(1, 12, 2))
    pixels = rng.integers(0, 1 << 16, (height, width, CHANNELS[colour_type]))
    data = _png16(pixels, colour_type, interlaced=seed % 2, rng=rng)
    for mode in MODES:
        ours = _ours(fio.decode_png, data, mode)
        _assert_same(ours, _theirs(tio.decode_png, data, getattr(tio.ImageReadMode, mode)))
    assert np.array_equal(_ours(fio.decode_image, data).transpose(1, 2, 0), pixels)


def test_16_bit_colour_png_turned_upright_by_its_exif_orientation():
    rng = np.random.default_rng(5)
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees
    data = _png16(rng.integers(0, 1 << 16, (3, 5, 3)), 2, False, rng, exif.tobytes()[6:])
    ours = _ours(fio.decode_image, data, "RGB", apply_exif_orientation=True)
    assert ours.shape == (3, 5, 3)
    _assert_same(ours, _theirs(tio.decode_image, data, tio.ImageReadMode.RGB, apply_exif_orientation=True))


def _lzw(indices):
    """The LZW data (code size byte and sub-blocks) of a frame's palette ``indices``, encoded by Pillow."""
    image = Image.fromarray(indices.astype(np.uint8), "P")
    image.putpalette(list(range(256)) * 3)
    buffer = io.BytesIO()
    image.save(buffer, "GIF", optimize=False)
    data = buffer.getvalue()
    return data[data.index(b",", 13 + 768) + 10:-1]


def _gif(width, height, background, frames, global_palette=True):
    """A GIF written block by block; ``frames``: (left, top, indices, disposal, transparent, local palette)."""
    grey = np.repeat(np.arange(256, dtype=np.uint8), 3).tobytes()
    data = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x87 if global_palette else 0, background, 0)
    data += grey if global_palette else b""
    for left, top, indices, disposal, transparent, palette in frames:
        flags = (disposal << 2) | (transparent is not None)
        data += b"\x21\xf9\x04" + bytes([flags, 0, 0, transparent or 0, 0])
        data += b"," + struct.pack("<HHHHB", left, top, indices.shape[1], indices.shape[0],
                                        0 if palette is None else 0x87)
        data += palette[::-1].tobytes() if palette is not None else b""
        data += _lzw(indices)
    return data + b";"


SQUARE = np.arange(9).reshape(3, 3) + 20
CORNER = np.array([[5, 6], [7, 8]])
GIFS = {
    "transparent first frame shows the background": (3, 3, 9, [(0, 0, SQUARE, 0, 24, None)]),
    "transparent pixels keep the previous frame": (3, 3, 9, [(0, 0, SQUARE, 0, None, None),
                                                            (0, 0, SQUARE + 40, 0, 62, None)]),
    "disposal 'background' clears the whole canvas": (3, 3, 9, [(0, 0, SQUARE, 1, None, None),
                                                               (1, 1, CORNER, 2, None, None)]),
    "other disposals keep the previous frame": (3, 3, 9, [(0, 0, SQUARE, 2, None, None), (1, 0, CORNER, 3, 6, None),
                                                          (0, 1, CORNER, 1, None, None)]),
    "local palette": (3, 3, 4, [(0, 0, SQUARE, 0, None, np.repeat(np.arange(256, dtype=np.uint8), 3)),
                                (0, 0, CORNER, 0, 7, None)]),
}


@pytest.mark.parametrize("name", sorted(GIFS))
def test_gif_frames_composed_as_torchvision(name):
    data = _gif(*GIFS[name])
    _assert_same(_ours(fio.decode_gif, data), _theirs(tio.decode_gif, data))
    _assert_same(_ours(fio.decode_image, data), _theirs(tio.decode_image, data))


def test_gif_without_global_palette_has_a_black_background():
    palette = np.repeat(np.arange(256, dtype=np.uint8), 3)
    data = _gif(3, 3, 0, [(0, 0, SQUARE, 0, 20, palette)], global_palette=False)
    ours = _ours(fio.decode_gif, data)
    _assert_same(ours, _theirs(tio.decode_gif, data))
    assert (ours[:, 0, 0] == 0).all()


@pytest.mark.parametrize("seed", range(3))
def test_animated_gifs_saved_by_pillow(seed):
    """Pillow crops later frames to what changed and marks unchanged pixels transparent."""
    rng = np.random.default_rng(seed)
    height, width = (int(n) for n in rng.integers(2, 16, 2))
    first = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    second = first.copy()
    second[height // 2:, : width // 2 + 1] = rng.integers(0, 256, 3)
    third = np.where(rng.random((height, width, 1)) < 0.5, second, 255 - second).astype(np.uint8)
    frames = [Image.fromarray(pixels) for pixels in (first, second, third)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:], disposal=int(rng.integers(4)))
    data = buffer.getvalue()
    _assert_same(_ours(fio.decode_gif, data), _theirs(tio.decode_gif, data))


def test_gif_without_its_trailer_raises_as_torchvision():
    data = _gif(*GIFS["local palette"])[:-2]
    with pytest.raises(RuntimeError):
        _theirs(tio.decode_gif, data)
    with pytest.raises(RuntimeError, match="the GIF file ends before its trailer"):
        _ours(fio.decode_gif, data)


def test_empty_file_raises_as_torchvision(tmp_path):
    path = tmp_path / "empty.png"
    path.write_bytes(b"")
    with pytest.raises(RuntimeError, match="Expected a non empty file"):
        tio.read_file(str(path))
    with pytest.raises(RuntimeError, match="Expected a non empty file"):
        fio.read_file(str(path))


def test_empty_list_of_jpegs_raises_as_torchvision():
    with pytest.raises(ValueError, match="Input list must contain at least one element"):
        tio.decode_jpeg([])
    with pytest.raises(ValueError, match="Input list must contain at least one element"):
        fio.decode_jpeg([])
