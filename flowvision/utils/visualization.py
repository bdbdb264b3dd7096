"""Image grids, annotation drawing and optical-flow colouring on engine tensors (torchvision.utils semantics),
via numpy and PIL."""
import math
import warnings

import numpy as np
from PIL import Image, ImageColor, ImageDraw, ImageFont

import engine

__all__ = ["make_grid", "save_image", "draw_bounding_boxes", "draw_segmentation_masks", "draw_keypoints",
           "flow_to_image"]


def _array(t):
    """The numpy array behind a tensor (or array-like), detached and on the CPU."""
    return t.detach().cpu().numpy() if isinstance(t, engine.Tensor) else np.asarray(t)


def _normalize(arr, value_range):
    """Clamp to ``value_range`` (default: the array's min/max) and rescale to [0, 1], in arr's dtype."""
    low, high = value_range if value_range is not None else (float(arr.min()), float(arr.max()))
    arr = np.clip(arr, arr.dtype.type(low), arr.dtype.type(high))
    return (arr - arr.dtype.type(low)) / arr.dtype.type(max(high - low, 1e-5))


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0):
    """Tile a (B, C, H, W) batch (or list of images) into one (C, H', W') image, ``nrow`` per row."""
    if isinstance(tensor, (list, tuple)):
        arr = np.stack([_array(t) for t in tensor])
    elif isinstance(tensor, engine.Tensor):
        arr = _array(tensor)
    else:
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim == 3:
        arr = arr[None]
    if arr.ndim != 4:
        raise ValueError(f"make_grid expects 2-D, 3-D or 4-D images, got shape {arr.shape}")
    if arr.shape[1] == 1:
        arr = np.concatenate([arr] * 3, axis=1)
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        if scale_each:
            arr = np.stack([_normalize(img, value_range) for img in arr])
        else:
            arr = _normalize(arr, value_range)
    if arr.shape[0] == 1:
        return engine.from_numpy(np.ascontiguousarray(arr[0]))
    nmaps, channels, h, w = arr.shape
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(nmaps / xmaps))
    cell_h, cell_w = h + padding, w + padding
    grid = np.full((channels, cell_h * ymaps + padding, cell_w * xmaps + padding), pad_value, dtype=arr.dtype)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid[:, y * cell_h + padding:y * cell_h + padding + h, x * cell_w + padding:x * cell_w + padding + w] = arr[k]
    return engine.from_numpy(grid)


def save_image(tensor, fp, format=None, **kwargs):
    """Save an image (or a batch, as a ``make_grid`` grid) with values in [0, 1] to a file via PIL."""
    grid = _array(make_grid(tensor, **kwargs))
    pixels = np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    Image.fromarray(np.ascontiguousarray(pixels)).save(fp, format=format)


def _palette(num_objects):
    """torchvision's deterministic default colours: i * (2**25-1, 2**15-1, 2**21-1) mod 255."""
    base = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1], dtype=np.int64)
    return [tuple(int(v) for v in (i * base) % 255) for i in range(num_objects)]


def _parse_colors(colors, num_objects, floating=False):
    """One RGB tuple per object from None (palette), a single colour, or a list of colours."""
    if colors is None:
        colors = _palette(num_objects)
    elif isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError("Number of colors must be equal or larger than the number of objects, "
                             f"but got {len(colors)} < {num_objects}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got {colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * num_objects
    colors = [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]
    return [tuple(v / 255 for v in c) for c in colors] if floating else colors


def _check_image(image, channels, what):
    if not isinstance(image, engine.Tensor):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    if not (image.dtype == engine.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.size(0) not in channels:
        raise ValueError(what)


def _to_pil(image):
    """(C, H, W) uint8 or float-in-[0, 1] tensor -> RGB PIL image (grey is tiled to 3 channels)."""
    arr = _array(image)
    if image.is_floating_point():
        arr = (arr * (255 + 1.0 - 1e-3)).astype(np.uint8)
    if arr.shape[0] == 1:
        arr = np.concatenate([arr] * 3)
    return Image.fromarray(np.ascontiguousarray(arr.transpose(1, 2, 0)))


def _from_pil(img, like):
    """PIL image -> (3, H, W) tensor in ``like``'s dtype (floats rescaled to [0, 1])."""
    arr = np.asarray(img.convert("RGB")).transpose(2, 0, 1).copy()
    if like.is_floating_point():
        arr = arr.astype(like.dtype.np) * like.dtype.np.type(1.0 / 255)
    return engine.from_numpy(np.ascontiguousarray(arr))


def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None, font_size=None,
                        label_colors=None, label_background_colors=None, fill_labels=False):
    """Draw (xmin, ymin, xmax, ymax) boxes, optional labels and translucent fills on a (C, H, W) image.

    Without ``font``, labels use PIL's default font, at ``font_size`` when one is given.
    """
    _check_image(image, (1, 3), "Only grayscale and RGB images are supported")
    box_arr = _array(boxes)
    if box_arr.shape[-1] == 4 and ((box_arr[:, 0] > box_arr[:, 2]).any() or (box_arr[:, 1] > box_arr[:, 3]).any()):
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. "
                         "Use flowvision.ops.box_convert to convert them")
    num_boxes = box_arr.shape[0]
    if num_boxes == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn")
        return image
    if labels is None:
        labels = [None] * num_boxes
    elif len(labels) != num_boxes:
        raise ValueError(f"Number of boxes ({num_boxes}) and labels ({len(labels)}) mismatch. "
                         "Please specify labels for each box.")
    colors = _parse_colors(colors, num_boxes)
    if label_colors or fill_labels:
        label_colors = _parse_colors(label_colors or "black", num_boxes)
    else:
        label_colors = colors
    if fill_labels and label_background_colors:
        label_background_colors = _parse_colors(label_background_colors, num_boxes)
    else:
        label_background_colors = colors
    if font is None:
        txt_font = ImageFont.load_default() if font_size is None else ImageFont.load_default(size=font_size)
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)
    img = _to_pil(image)
    draw = ImageDraw.Draw(img, "RGBA" if fill else None)
    for bbox, color, label, label_color, bg_color in zip(box_arr.astype(np.int64).tolist(), colors, labels,
                                                         label_colors, label_background_colors):
        if len(bbox) > 4:
            draw.polygon(bbox, fill=color + (100,) if fill else None, outline=color, width=width)
        else:
            draw.rectangle(bbox, width=width, outline=color, fill=color + (100,) if fill else None)
        if label is not None:
            margin = width + 1
            origin = (bbox[0] + margin, bbox[1] + margin)
            if fill_labels:
                left, top, right, bottom = draw.textbbox(origin, label, font=txt_font)
                draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=bg_color)
            draw.text(origin, label, fill=label_color, font=txt_font)
    return _from_pil(img, image)


def draw_segmentation_masks(image, masks, alpha=0.8, colors=None):
    """Blend boolean (N, H, W) masks onto an RGB image with opacity ``alpha``; overlaps are painted black."""
    _check_image(image, (3,), "Pass an RGB image. Other Image formats are not supported")
    mask_arr = _array(masks)
    if mask_arr.ndim == 2:
        mask_arr = mask_arr[None]
    if mask_arr.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if mask_arr.dtype != np.bool_:
        raise ValueError(f"The masks must be of dtype bool. Got {engine.from_numpy(mask_arr).dtype}")
    if mask_arr.shape[-2:] != tuple(image.shape[-2:]):
        raise ValueError("The image and the masks must have the same height and width")
    if mask_arr.shape[0] == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn")
        return image
    arr = _array(image)
    drawn = arr.copy()
    for mask, color in zip(mask_arr, _parse_colors(colors, mask_arr.shape[0], image.is_floating_point())):
        drawn[:, mask] = np.asarray(color, dtype=arr.dtype)[:, None]
    drawn[:, mask_arr.sum(0) > 1] = 0
    compute = arr.dtype.type if image.is_floating_point() else np.float32
    out = arr.astype(compute) * compute(1 - alpha) + drawn.astype(compute) * compute(alpha)
    return engine.from_numpy(out.astype(arr.dtype))


def draw_keypoints(image, keypoints, connectivity=None, colors=None, radius=2, width=3, visibility=None):
    """Draw (N, K, 2) keypoints as discs of ``radius`` and the ``connectivity`` pairs as lines of ``width``."""
    _check_image(image, (3,), "Pass an RGB image. Other Image formats are not supported")
    kpts = _array(keypoints)
    if kpts.ndim != 3:
        raise ValueError("keypoints must be of shape (num_instances, K, 2)")
    vis = np.ones(kpts.shape[:-1], dtype=bool) if visibility is None else _array(visibility).astype(bool)
    if vis.ndim == 3:
        vis = vis.squeeze(-1)
    if vis.ndim != 2:
        raise ValueError(f"visibility must be of shape (num_instances, K). Got ndim={vis.ndim}")
    if vis.shape != kpts.shape[:-1]:
        raise ValueError("keypoints and visibility must have the same dimensionality for num_instances and K. "
                         f"Got visibility.shape={vis.shape} and keypoints.shape={kpts.shape}")
    img = _to_pil(image)
    draw = ImageDraw.Draw(img)
    for inst, inst_vis in zip(kpts.astype(np.int64).tolist(), vis.tolist()):
        for (x, y), visible in zip(inst, inst_vis):
            if visible:
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=colors, outline=None, width=0)
        for a, b in connectivity or ():
            if inst_vis[a] and inst_vis[b]:
                draw.line((tuple(inst[a]), tuple(inst[b])), width=width)
    return _from_pil(img, image)


#: hues of the Middlebury flow colour wheel (Baker et al. 2007): red-yellow, yellow-green, green-cyan,
#: cyan-blue, blue-magenta, magenta-red, each ramp this many steps long
COLORWHEEL_RAMPS = (15, 6, 4, 11, 13, 6)


def _colorwheel():
    """(55, 3) float32 RGB colour wheel: along each ramp one channel rises (or falls) in floor(255 * i / n) steps
    while the others stay at 0 or 255."""
    rows = []
    for ramp, length in enumerate(COLORWHEEL_RAMPS):
        step = np.floor(np.float32(255) * np.arange(length, dtype=np.float32) / np.float32(length))
        rising = ramp % 2 == 0            # even ramps raise the next channel, odd ones lower the current one
        channel = (ramp // 2 + (1 if rising else 0)) % 3
        full = ramp // 2 if rising else (ramp // 2 + 1) % 3
        colors = np.zeros((length, 3), np.float32)
        colors[:, full] = 255
        colors[:, channel] = step if rising else 255 - step
        rows.append(colors)
    return np.concatenate(rows)


def flow_to_image(flow):
    """The Middlebury colour coding of an optical flow: (2, H, W) or (N, 2, H, W) float32 -> uint8 (3, H, W) or
    (N, 3, H, W) on the flow's device. The hue gives the direction, the saturation the magnitude relative
    to the largest of the whole batch."""
    if flow.dtype != engine.float32:
        raise ValueError(f"Flow should be of dtype torch.float, got {flow.dtype}.")
    shape = tuple(flow.shape)
    arr = _array(flow)
    if arr.ndim == 3:
        arr = arr[None]
    if arr.ndim != 4 or arr.shape[1] != 2:
        raise ValueError(f"Input flow should have shape (2, H, W) or (N, 2, H, W), got {shape}.")
    max_norm = np.sqrt((arr ** 2).sum(1)).max(initial=np.float32(0))
    flow_n = arr / (max_norm + np.finfo(np.float32).eps)
    wheel = _colorwheel()
    norm = np.sqrt((flow_n ** 2).sum(1))
    fk = (np.arctan2(-flow_n[:, 1], -flow_n[:, 0]) / np.float32(np.pi) + 1) / 2 * (len(wheel) - 1)
    k0 = np.floor(fk).astype(np.int64)
    k1 = np.where(k0 + 1 == len(wheel), 0, k0 + 1)
    f = (fk - k0)[:, None]
    col0, col1 = wheel[k0].transpose(0, 3, 1, 2) / 255, wheel[k1].transpose(0, 3, 1, 2) / 255
    col = 1 - norm[:, None] * (1 - ((1 - f) * col0 + f * col1))
    img = np.floor(255 * col).astype(np.uint8)
    return engine.from_numpy(img[0] if len(shape) == 3 else img).to(flow.device)
