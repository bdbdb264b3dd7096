"""torch's integer resize of uint8 CPU images (bilinear and bicubic), which torchvision v2 calls on uint8 tensors,
reproduced bit for bit.

torch resizes in separable passes, the width then the height, each only where that size changes. An output pixel
is a window of input pixels weighted by Pillow's filters (bilinear; bicubic with a = -0.5; the window widened by
the scale when antialiasing a reduction) or, for bicubic without antialias, four taps with a = -0.75 and the border
pixels repeated. The float64 weights are quantised to int16 fixed point; each pass's sums are rounded, shifted and
clamped to uint8.

Each pass here is a band of small matrix products: the output is cut into blocks of ``_BLOCK`` pixels and each
block multiplies only the input span its windows cover. The products are exact: every term and every partial sum
is an integer, the input is centred on zero (x - 128) to halve their size, and they run in float32 where no partial
sum can reach 2**24 (every case but strong reductions), else in float64.
"""
import numpy as np

__all__ = ["resize_uint8"]

# output pixels per matrix product. Blocks of 8, 16, 32 and 64, antialiased, one thread, best of 15 (ms): 480x640
# to 256x341 bilinear 7.7, 2.3, 2.7, 4.1 (one dense product per pass took 45); to 224x224 bicubic 3.6, 2.2, 2.6,
# 3.3; to 960x1280 bilinear 18.5, 19.1, 16.7, 18.9
_BLOCK = 16


def _cubic(x, a):
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _window_taps(n_in, n_out, mode, antialias):
    """Each output pixel's first input index and its window's weights [n_out, taps], cut at the borders and
    normalised (summed in order, as torch sums them); taps past a window's end weigh 0."""
    support = 1.0 if mode == "bilinear" else 2.0
    scale = n_in / n_out
    stretch = scale if antialias and scale >= 1.0 else 1.0
    center = scale * (np.arange(n_out) + 0.5)
    low = np.maximum((center - support * stretch + 0.5).astype(np.int64), 0)
    high = np.minimum((center + support * stretch + 0.5).astype(np.int64), n_in)
    index = low[:, None] + np.arange((high - low).max())
    x = (index - center[:, None] + 0.5) * (1.0 / stretch)
    weights = np.maximum(0.0, 1.0 - np.abs(x)) if mode == "bilinear" else _cubic(x, -0.5)
    weights = np.where(index < high[:, None], weights, 0.0)
    totals = np.cumsum(weights, axis=1)[:, -1:]
    return low, weights / np.where(totals == 0, 1.0, totals)


def _cubic_taps(n_in, n_out):
    """Each output pixel's first input index and the weights [n_out, 4] of plain bicubic interpolation
    (a = -0.75); a tap past a border adds its weight to the border pixel's."""
    center = n_in / n_out * (np.arange(n_out) + 0.5) - 0.5
    start = np.floor(center).astype(np.int64)
    first = np.clip(start - 1, 0, n_in - 1)
    weights = np.zeros((n_out, 4))
    rows = np.arange(n_out)
    for offset in range(-1, 3):
        column = np.clip(start + offset, 0, n_in - 1) - first
        np.add.at(weights, (rows, column), _cubic(center - start - offset, -0.75))
    return first, weights


def _fixed_point(weights):
    """``weights`` as integers scaled by 2**precision, the largest precision keeping them within int16."""
    precision = 0
    while precision < 22 and int(0.5 + weights.max() * (1 << (precision + 1))) < (1 << 15):
        precision += 1
    return np.trunc(weights * (1 << precision) + np.where(weights < 0, -0.5, 0.5)), precision


def _pass(array, n_out, axis, mode, antialias):
    """One pass of ``n_out`` pixels along ``axis`` (the last or the one before) of uint8 ``array``."""
    n_in = array.shape[axis]
    first, weights = (_cubic_taps(n_in, n_out) if mode == "bicubic" and not antialias
                      else _window_taps(n_in, n_out, mode, antialias))
    weights, precision = _fixed_point(weights)
    exact_in_float32 = 128 * np.abs(weights).sum(1).max() < 1 << 24
    dtype = np.float32 if exact_in_float32 else np.float64
    taps = weights.shape[1]
    dense = np.zeros((n_out, n_in + taps), dtype)  # columns past n_in only ever hold zeros
    dense[np.arange(n_out)[:, None], first[:, None] + np.arange(taps)] = weights
    centred = np.subtract(array, dtype(128), dtype=dtype)
    shape = list(array.shape)
    shape[axis] = n_out
    sums = np.empty(shape, dtype)
    last = axis == array.ndim - 1
    for start in range(0, n_out, _BLOCK):
        stop = min(start + _BLOCK, n_out)
        low = first[start:stop].min()
        high = min(first[start:stop].max() + taps, n_in)
        block = dense[start:stop, low:high]
        if last:
            np.matmul(centred[..., low:high], block.T, out=sums[..., start:stop])
        else:
            np.matmul(block, centred[..., low:high, :], out=sums[..., start:stop, :])
    # back to x's scale, rounded: + 128 * (the row's weights) + half of 2**precision, then shifted. In int32,
    # which holds every sum (< 255 * 2**22 * 1.2); clipping int64 took 3.5 ms of a 17.5 ms resize, int32 0.1 ms
    offset = (128 * weights.sum(1) + (1 << (precision - 1))).astype(np.int32)
    totals = sums.astype(np.int32)
    totals += offset if last else offset[:, None]
    totals >>= precision
    np.clip(totals, 0, 255, out=totals)
    return totals.astype(np.uint8)


def resize_uint8(array, size, mode, antialias):
    """The uint8 array [..., H, W] resized to ``size`` (height, width) as torch's uint8 kernel resizes it."""
    if size[1] != array.shape[-1]:
        array = _pass(array, size[1], array.ndim - 1, mode, antialias)
    if size[0] != array.shape[-2]:
        array = _pass(array, size[0], array.ndim - 2, mode, antialias)
    return array
