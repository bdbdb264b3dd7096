"""Image layout and encoding for ``add_image``/``add_images``/``add_figure``/embedding sprites:
any of the NCHW/CHW/HWC/HW layouts to one HWC RGB(A) image (a batch tiled into a grid, as torch's
writer does), then PNG bytes through Pillow."""
import io

import numpy as np


def make_grid(images, ncols=8):
    """Tile an NCHW batch (C 1 or 3) into one 3-channel CHW canvas, ``ncols`` images per row."""
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"images should be a 4D array with 1 or 3 channels, got shape {images.shape}")
    n, _, h, w = images.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, h * nrows, w * ncols), dtype=images.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = images[i]
    return canvas


def to_hwc(array, dataformats):
    """``array`` laid out as ``dataformats`` (letters N, C, H, W, any order) as an HWC image with 3
    channels for grey input; a batch becomes a grid."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt):
        raise ValueError(f"You can not use the same dimension shorthand twice. input_format: {dataformats}")
    if array.ndim != len(fmt):
        raise ValueError(f"size of input tensor and input format are different. tensor shape: "
                         f"{array.shape}, input_format: {dataformats}")
    if len(fmt) == 4:
        return make_grid(array.transpose([fmt.find(c) for c in "NCHW"])).transpose(1, 2, 0)
    if len(fmt) == 3:
        hwc = array.transpose([fmt.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, 2) if hwc.shape[2] == 1 else hwc
    if len(fmt) == 2:
        return np.stack([array.transpose([fmt.find(c) for c in "HW"])] * 3, 2)
    raise ValueError(f"dataformats should have 2 to 4 letters of NCHW, got {dataformats!r}")


def to_uint8(hwc):
    """uint8 as is; anything else taken as [0, 1] and scaled by 255 (clipped), as torch's writer."""
    scale = 1 if hwc.dtype == np.uint8 else 255
    return (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def encode_png(hwc_uint8):
    """PNG bytes of an HWC uint8 image (1, 3 or 4 channels)."""
    from PIL import Image
    img = hwc_uint8[:, :, 0] if hwc_uint8.shape[2] == 1 else hwc_uint8
    with io.BytesIO() as buf:
        Image.fromarray(np.ascontiguousarray(img)).save(buf, format="PNG")
        return buf.getvalue()


def figure_to_chw(figure, close=True):
    """Render a matplotlib figure with the Agg canvas to a CHW uint8 RGB array."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    width, height = figure.canvas.get_width_height()
    rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)
    if close:
        plt.close(figure)
    return np.moveaxis(rgba[:, :, :3], 2, 0)
