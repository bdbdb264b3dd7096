"""GIF frames composed as torchvision composes them (with giflib), which is not how Pillow or a browser
shows an animation: each frame starts from the previous output frame, or from the background colour of the
global palette (black without one) over the whole canvas for the first frame and for a frame whose own
disposal method is "restore to background"; the frame's pixels are then drawn at their offset, except
those of its transparent colour.

The file's blocks are read here; each frame's LZW data is decoded by Pillow, wrapped in a one-frame GIF
whose palette is not grey, so that Pillow returns the raw palette indices.
"""
import io
import struct

import numpy as np
from PIL import Image

_INDEX_PALETTE = bytes(np.stack([np.arange(256), 255 - np.arange(256), np.full(256, 7)], -1).astype(np.uint8))
_RESTORE_TO_BACKGROUND = 2


class _Reader:
    """Bytes read in order; running past the end is torchvision's (giflib's) one-line error."""

    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, count):
        if self.at + count > len(self.data):
            raise RuntimeError("DGifSlurp() failed: the GIF file ends before its trailer")
        self.at += count
        return self.data[self.at - count:self.at]

    def byte(self):
        return self.take(1)[0]

    def palette(self, flags):
        """The (N, 3) colour table announced by ``flags`` (None when it has none), padded to 256 colours."""
        if not flags & 0x80:
            return None
        colours = np.frombuffer(self.take(3 << ((flags & 7) + 1)), np.uint8).reshape(-1, 3)
        return np.concatenate([colours, np.zeros((256 - len(colours), 3), np.uint8)])

    def sub_blocks(self):
        """The concatenated data sub-blocks that follow, with their lengths and terminator."""
        start = self.at
        while (size := self.byte()) != 0:
            self.take(size)
        return self.data[start:self.at]


def _indices(width, height, interlaced, lzw):
    """The (height, width) palette indices of one frame's LZW data (``lzw``: its code size byte and
    sub-blocks), decoded by Pillow."""
    header = b"GIF89a" + struct.pack("<HHBBB", width, height, 0xF7, 0, 0) + _INDEX_PALETTE
    descriptor = b"," + struct.pack("<HHHHB", 0, 0, width, height, 0x40 if interlaced else 0)
    image = Image.open(io.BytesIO(header + descriptor + lzw + b";"))
    try:
        image.load()
    except Exception as e:
        raise RuntimeError(f"cannot decode this gif image: {e}") from None
    return np.asarray(image)


def _frames(reader):
    """(descriptor fields, local palette, indices, disposal, transparent index) of each frame."""
    frames, control = [], None
    while True:
        kind = reader.byte()
        if kind == 0x3B:
            return frames
        if kind == 0x21:
            label = reader.byte()
            body = reader.sub_blocks()
            if label == 0xF9 and body[0] == 4 and control is None:  # the first control block counts
                flags, transparent = body[1], body[4]
                control = ((flags >> 2) & 7, transparent if flags & 1 else -1)
        elif kind == 0x2C:
            left, top, width, height, flags = struct.unpack("<HHHHB", reader.take(9))
            palette = reader.palette(flags)
            code_size = reader.take(1)
            indices = _indices(width, height, flags & 0x40, code_size + reader.sub_blocks())
            frames.append(((left, top, width, height), palette, indices) + (control or (0, -1)))
            control = None
        else:
            raise RuntimeError(f"DGifSlurp() failed: unexpected block type {kind:#04x} in the GIF file")


def decode_frames(data):
    """(N, 3, H, W) uint8 frames of the GIF ``data`` (H, W: the canvas, at least the first frame's size), or
    (3, H, W) when it holds a single frame."""
    reader = _Reader(data)
    reader.take(6)
    canvas_width, canvas_height, flags, background, _ = struct.unpack("<HHBBB", reader.take(7))
    global_palette = reader.palette(flags)
    frames = _frames(reader)
    if not frames:
        raise RuntimeError("GIF file should contain at least one image!")
    height, width = max(canvas_height, frames[0][0][3]), max(canvas_width, frames[0][0][2])
    background = np.zeros(3, np.uint8) if global_palette is None else global_palette[background]
    out = np.empty((len(frames), height, width, 3), np.uint8)
    for i, ((left, top, frame_width, frame_height), palette, indices, disposal, transparent) in enumerate(frames):
        out[i] = out[i - 1] if i > 0 and disposal != _RESTORE_TO_BACKGROUND else background
        palette = global_palette if palette is None else palette
        if palette is None:
            raise RuntimeError("Global and local color maps are missing. This should never happen!")
        region = out[i, top:top + frame_height, left:left + frame_width]
        indices = indices[:region.shape[0], :region.shape[1]]
        drawn = indices != transparent
        region[drawn] = palette[indices[drawn]]
    out = out.transpose(0, 3, 1, 2)
    return np.ascontiguousarray(out[0] if len(frames) == 1 else out)
