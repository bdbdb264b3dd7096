"""Readers of the optical-flow and disparity file formats, as numpy arrays laid out as torchvision's datasets give
them (channels first, float32):

* ``.flo`` (Middlebury): b"PIEH", width and height as little-endian int32, then height x width (u, v) float32 pairs.
* ``.pfm`` (portable float map): a text header of b"PF" (3 channels) or b"Pf" (1), b"<width> <height>", and a
  scale whose sign gives the byte order (negative: little-endian), then float32 rows from the bottom up.
* KITTI's 16-bit PNG flow: R and G hold u and v as 64 * flow + 2**15, B is 1 where the flow is valid.

Each malformed file is one ValueError naming it.
"""
import re

import numpy as np

from .png_arrays import read_png_array

__all__ = ["read_flo", "read_pfm", "read_kitti_flow_png"]

_FLO_MAGIC = b"PIEH"
_PFM_DIMS = re.compile(rb"^(\d+)\s(\d+)\s$")


def read_flo(path):
    """The (2, H, W) float32 flow of a Middlebury ``.flo`` file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != _FLO_MAGIC:
        raise ValueError(f"{path} is not a .flo file: magic number {data[:4]!r}, expected {_FLO_MAGIC!r}")
    if len(data) < 12:
        raise ValueError(f"{path}: .flo header truncated ({len(data)} bytes)")
    width, height = (int(v) for v in np.frombuffer(data, "<i4", 2, 4))
    if width < 0 or height < 0 or len(data) - 12 != 8 * width * height:
        raise ValueError(f"{path}: .flo header says {width}x{height} (2 x {width * height} floats) but the file "
                         f"holds {len(data) - 12} bytes of data")
    flow = np.frombuffer(data, "<f4", 2 * width * height, 12).astype(np.float32)
    return flow.reshape(height, width, 2).transpose(2, 0, 1)


def read_pfm(path, channels=2):
    """The first ``channels`` planes of a ``.pfm`` file as a (channels, H, W) float32 array, top row first."""
    with open(path, "rb") as f:
        kind = f.readline().rstrip()
        if kind not in (b"PF", b"Pf"):
            raise ValueError(f"{path} is not a PFM file: header {kind[:16]!r}, expected b'PF' or b'Pf'")
        dims = _PFM_DIMS.match(f.readline())
        if not dims:
            raise ValueError(f"{path}: malformed PFM header: no '<width> <height>' line")
        width, height = (int(v) for v in dims.groups())
        try:
            scale = float(f.readline().rstrip())
        except ValueError:
            raise ValueError(f"{path}: malformed PFM header: the scale is not a number") from None
        data = f.read()
    planes = 3 if kind == b"PF" else 1
    if len(data) != 4 * planes * width * height:
        raise ValueError(f"{path}: PFM header says {width}x{height}x{planes} floats but the file holds "
                         f"{len(data)} bytes of data")
    values = np.frombuffer(data, ("<" if scale < 0 else ">") + "f4")
    return values.reshape(height, width, planes).transpose(2, 0, 1)[:channels, ::-1].astype(np.float32)


def read_kitti_flow_png(path):
    """(flow, valid): the (2, H, W) float32 flow and the (H, W) bool validity of a KITTI 16-bit flow PNG."""
    samples = read_png_array(path)
    if samples.shape[2] < 3:
        raise ValueError(f"{path}: a KITTI flow PNG has 3 channels (u, v, valid), this one has {samples.shape[2]}")
    planes = samples.transpose(2, 0, 1).astype(np.float32)
    flow = (planes[:2] - np.float32(2 ** 15)) / np.float32(64)
    return flow, planes[2].astype(bool)
