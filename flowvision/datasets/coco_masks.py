"""COCO segmentations (polygons, uncompressed and compressed run-length codes) as binary masks, without pycocotools.

COCO's run-length code counts alternating runs of 0s and 1s (0s first) down the columns of an (h, w) mask. The
compressed form packs each count, minus the count two places back from the third on, into 5-bit groups written as
characters from '0'. Polygons are rasterised the way pycocotools does: vertices scaled up 5 times and rounded,
edges walked pixel by pixel, and a column's pixel set where the walk crosses that column's centre line on the way
down; the same rounding steps give the same pixels, so masks match pycocotools' bit for bit.
"""
import numpy as np

__all__ = ["decode_rle_string", "rle_to_mask", "polygon_to_rle", "segmentation_to_mask"]

_UPSAMPLE = 5  # pycocotools' polygon upsampling factor: part of the rasterisation rule, so kept for parity


def decode_rle_string(text):
    """The list of run lengths packed in a compressed COCO ``counts`` string."""
    counts, pos = [], 0
    data = text.encode("ascii") if isinstance(text, str) else bytes(text)
    while pos < len(data):
        value, shift, more = 0, 0, True
        while more:
            chunk = data[pos] - 48
            value |= (chunk & 0x1F) << shift
            more = bool(chunk & 0x20)
            pos += 1
            shift += 5
            if not more and chunk & 0x10:
                value -= 1 << shift  # the group's top bit is the sign: extend it
        if len(counts) > 2:
            value += counts[-2]
        counts.append(value)
    return counts


def rle_to_mask(counts, height, width):
    """An (height, width) uint8 mask from run lengths (a list, or a compressed string)."""
    if isinstance(counts, (str, bytes)):
        counts = decode_rle_string(counts)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.sum() != height * width:
        raise ValueError(f"run lengths add up to {int(counts.sum())}, not height*width = {height}*{width}")
    values = np.arange(len(counts), dtype=np.uint8) % 2
    return np.repeat(values, counts).reshape(width, height).T.copy()


def _edge_points(xs, ys, xe, ye):
    """Upsampled pixels along one edge, walked along its longer axis, in pycocotools' order and rounding."""
    dx, dy = abs(xe - xs), abs(ye - ys)
    along_x = dx >= dy
    flip = (along_x and xs > xe) or (not along_x and ys > ye)
    if flip:
        xs, xe, ys, ye = xe, xs, ye, ys
    steps = dx if along_x else dy
    t = np.arange(steps + 1)
    if flip:
        t = steps - t
    if along_x:
        slope = (ye - ys) / dx if dx else 0.0
        return t + xs, np.trunc(ys + slope * t + 0.5).astype(np.int64)
    slope = (xe - xs) / dy
    return np.trunc(xs + slope * t + 0.5).astype(np.int64), t + ys


def polygon_to_rle(polygon, height, width):
    """Run lengths of the mask of one polygon ``[x0, y0, x1, y1, ...]`` on an (height, width) canvas."""
    xy = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    x = np.trunc(_UPSAMPLE * xy[:, 0] + 0.5).astype(np.int64)
    y = np.trunc(_UPSAMPLE * xy[:, 1] + 0.5).astype(np.int64)
    x, y = np.append(x, x[0]), np.append(y, y[0])
    edges = [_edge_points(int(x[j]), int(y[j]), int(x[j + 1]), int(y[j + 1])) for j in range(len(xy))]
    u = np.concatenate([e[0] for e in edges])
    v = np.concatenate([e[1] for e in edges])
    changed = np.nonzero(u[1:] != u[:-1])[0] + 1
    col = np.where(u[changed] < u[changed - 1], u[changed], u[changed] - 1).astype(np.float64)
    col = (col + 0.5) / _UPSAMPLE - 0.5
    row = np.minimum(v[changed], v[changed - 1]).astype(np.float64)
    row = np.ceil(np.clip((row + 0.5) / _UPSAMPLE - 0.5, 0, height))
    keep = (np.floor(col) == col) & (col >= 0) & (col <= width - 1)
    starts = np.sort(np.append(col[keep].astype(np.int64) * height + row[keep].astype(np.int64), height * width))
    runs = np.diff(starts, prepend=0).tolist()
    merged, j = [runs[0]], 1
    while j < len(runs):  # a zero-length run joins its neighbours: the parity of what follows flips back
        if runs[j] > 0:
            merged.append(runs[j])
            j += 1
        else:
            if j + 1 < len(runs):
                merged[-1] += runs[j + 1]
            j += 2
    return merged


def segmentation_to_mask(segmentation, height, width):
    """A COCO annotation's ``segmentation`` (an RLE dict, or a list of polygons) as an (height, width) uint8 mask;
    several polygons are united. A compressed RLE brings its own size."""
    if isinstance(segmentation, dict):
        return rle_to_mask(segmentation["counts"], *segmentation["size"])
    if not isinstance(segmentation, list):
        raise ValueError(f"COCO segmentation expected to be a dict or a list, got {type(segmentation)}")
    mask = np.zeros((height, width), dtype=np.uint8)
    for polygon in segmentation:
        mask |= rle_to_mask(polygon_to_rle(polygon, height, width), height, width)
    return mask
