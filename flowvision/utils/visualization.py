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


def _as_tensor(t):
    """``t`` as an engine tensor (numpy arrays and nested lists are taken as torchvision takes tensors)."""
    return t if isinstance(t, engine.Tensor) else engine.as_tensor(np.asarray(t))


@engine.no_grad()
def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False, pad_value=0.0):
    """Tile a (B, C, H, W) batch (or list of images) into one (C, H', W') image, ``nrow`` per row.

    Written with engine ops in torchvision's steps, so the grid keeps the input's dtype and device, half precision
    normalizes as torch's does, and an integer image that cannot be normalized in place raises torch's error."""
    if not isinstance(tensor, engine.Tensor):
        if not isinstance(tensor, list):
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
        for t in tensor:
            if not isinstance(t, engine.Tensor):
                raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        tensor = engine.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.size(0) == 1:
            tensor = engine.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.size(1) == 1:
        tensor = engine.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        tensor = tensor.clone()
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")
        for part in (tensor if scale_each is True else (tensor,)):
            _normalize_(part, value_range)
    if tensor.size(0) == 1:
        return tensor.squeeze(0)
    nmaps, channels, h, w = tensor.size(0), tensor.size(1), tensor.size(2), tensor.size(3)
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    cell_h, cell_w = int(h + padding), int(w + padding)
    grid = tensor.new_full((channels, cell_h * ymaps + padding, cell_w * xmaps + padding), pad_value)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid.narrow(1, y * cell_h + padding, h).narrow(2, x * cell_w + padding, w).copy_(tensor[k])
    return grid


def _normalize_(t, value_range):
    """Clamp ``t`` in place to ``value_range`` (default: its min/max) and rescale it to [0, 1]."""
    low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
    t.clamp_(min=low, max=high)
    t.sub_(low).div_(max(high - low, 1e-5))


@engine.no_grad()
def save_image(tensor, fp, format=None, **kwargs):
    """Save an image (or a batch, as a ``make_grid`` grid) with values in [0, 1] to a file via PIL; the format
    comes from ``format`` or else the file name's extension. Rounds as torchvision does (x * 255 + 0.5 in the
    grid's dtype), so an integer grid raises torch's error."""
    grid = make_grid(tensor, **kwargs)
    pixels = grid.mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", engine.uint8).numpy()
    Image.fromarray(np.ascontiguousarray(pixels)).save(fp, format=format)


def _palette(num_objects, floating=False):
    """torchvision's deterministic default colours: i * (2**25-1, 2**15-1, 2**21-1) mod 255; for a float image
    scaled to [0, 1] in float32, as torchvision divides its int64 palette tensor."""
    base = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1], dtype=np.int64)
    if floating:
        return [tuple(float(v) for v in ((i * base) % 255).astype(np.float32) / np.float32(255))
                for i in range(num_objects)]
    return [tuple(int(v) for v in (i * base) % 255) for i in range(num_objects)]


def _parse_colors(colors, num_objects, floating=False):
    """One RGB tuple per object from None (palette), a single colour, or a list of colours; in [0, 1] for a
    float image."""
    if colors is None:
        return _palette(num_objects, floating)
    if isinstance(colors, list):
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


def _check_image(image, channels, what, not_tensor="The image must be a tensor, got {}"):
    if not isinstance(image, engine.Tensor):
        raise TypeError(not_tensor.format(type(image)))
    if not (image.dtype == engine.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.size(0) not in channels:
        raise ValueError(what)


def _to_pil(image):
    """(C, H, W) uint8 or float-in-[0, 1] tensor -> RGB PIL image (grey is tiled to 3 channels); floats are scaled
    as ``to_dtype(uint8, scale=True)`` scales them (in half precision, as torch computes it)."""
    from ..transforms.v2 import functional as F

    arr = _array(F.to_dtype(image, engine.uint8, scale=True))
    if arr.shape[0] == 1:
        arr = np.concatenate([arr] * 3)
    return Image.fromarray(np.ascontiguousarray(arr.transpose(1, 2, 0)))


def _from_pil(img, like):
    """PIL image -> (3, H, W) tensor in ``like``'s dtype (floats rescaled to [0, 1] as ``to_dtype`` does)."""
    from ..transforms.v2 import functional as F

    arr = np.asarray(img.convert("RGB")).transpose(2, 0, 1)
    return F.to_dtype(engine.from_numpy(np.ascontiguousarray(arr)), like.dtype, scale=True).to(like.device)


def _dashed_edge(draw, start, end, fill, width, dash=5):
    """The edge ``start`` -> ``end`` as dashes ``dash`` pixels long with gaps as long, the first edge of an oriented
    box in torchvision's drawing: each step heads from the pen's position to ``end``, the last one shortened."""
    (x, y), (x_end, y_end) = start, end
    left = ((x_end - x) ** 2 + (y_end - y) ** 2) ** 0.5
    pen_down = True
    while left > 0:
        step = min(left, dash)
        heading = math.atan2(y_end - y, x_end - x)
        next_x, next_y = x + math.cos(heading) * step, y + math.sin(heading) * step
        if pen_down:
            draw.line([(x, y), (next_x, next_y)], fill, width, None)
        left -= step
        x, y = next_x, next_y
        pen_down = not pen_down


def _oriented_box(draw, xy, fill, outline, width):
    """An (x1, y1, ..., x4, y4) box: its first edge dashed (it marks the orientation), the others solid, then the
    inside filled (over the edges) without an outline."""
    corners = list(zip(xy[0::2], xy[1::2]))
    _dashed_edge(draw, corners[0], corners[1], outline, width)
    for k in range(1, len(corners)):
        draw.line((corners[k], corners[(k + 1) % len(corners)]), width=width, fill=outline)
    draw.polygon(xy, fill=fill, outline=None, width=0)


@engine.no_grad()
def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None, font_size=None,
                        label_colors=None, label_background_colors=None, fill_labels=False):
    """Draw (xmin, ymin, xmax, ymax) boxes, or (x1, y1, ..., x4, y4) oriented ones (first edge dashed), optional
    labels and translucent fills on a (C, H, W) image; returns a 3-channel image of the input's dtype.

    Without ``font``, labels use PIL's default font and ``font_size`` is ignored (with a warning), as in torchvision.
    """
    _check_image(image, (1, 3), "Only grayscale and RGB images are supported", "Tensor expected, got {}")
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
        if font_size is not None:
            warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.")
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)
    img = _to_pil(image)
    draw = ImageDraw.Draw(img, "RGBA" if fill else None)
    for bbox, color, label, label_color, bg_color in zip(box_arr.astype(np.int64).tolist(), colors, labels,
                                                         label_colors, label_background_colors):
        if len(bbox) > 4:
            _oriented_box(draw, bbox, fill=color + (100,) if fill else None, outline=color, width=width)
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


@engine.no_grad()
def draw_segmentation_masks(image, masks, alpha=0.8, colors=None):
    """Blend boolean (N, H, W) masks onto an RGB image with opacity ``alpha``; overlaps are painted black.

    Blended with engine ops as torchvision blends (``image * (1 - alpha) + painted * alpha``, then cast back), so
    half precision rounds and uint8 truncates as torch's do, on the image's device."""
    _check_image(image, (3,), "Pass an RGB image. Other Image formats are not supported")
    masks = _as_tensor(masks)
    if masks.ndim == 2:
        masks = masks[None]
    if masks.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != engine.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if masks.shape[-2:] != image.shape[-2:]:
        raise ValueError("The image and the masks must have the same height and width")
    if masks.size(0) == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn")
        return image
    masks = masks.to(image.device)
    painted = image.detach().clone()
    for mask, color in zip(masks, _parse_colors(colors, masks.size(0), image.is_floating_point())):
        painted[:, mask] = engine.tensor(color, dtype=image.dtype, device=image.device)[:, None]
    painted[:, masks.sum(dim=0) > 1] = 0
    return (image * (1 - alpha) + painted * alpha).to(image.dtype)


@engine.no_grad()
def draw_keypoints(image, keypoints, connectivity=None, colors=None, radius=2, width=3, visibility=None):
    """Draw (N, K, 2) keypoints as discs of ``radius`` and the ``connectivity`` pairs as lines of ``width``; a
    keypoint or a connection touching one with a false ``visibility`` is left out."""
    _check_image(image, (3,), "Pass an RGB image. Other Image formats are not supported")
    keypoints = _as_tensor(keypoints)
    if keypoints.ndim != 3:
        raise ValueError("keypoints must be of shape (num_instances, K, 2)")
    if visibility is None:
        visibility = engine.ones(keypoints.shape[:-1], dtype=engine.bool)
    visibility = _as_tensor(visibility)
    if visibility.ndim == 3:
        visibility = visibility.squeeze(-1)
    if visibility.ndim != 2:
        raise ValueError(f"visibility must be of shape (num_instances, K). Got ndim={visibility.ndim}")
    if visibility.shape != keypoints.shape[:-1]:
        raise ValueError("keypoints and visibility must have the same dimensionality for num_instances and K. "
                         f"Got visibility.shape={visibility.shape} and keypoints.shape={keypoints.shape}")
    img = _to_pil(image)
    draw = ImageDraw.Draw(img)
    points = _array(keypoints).astype(np.int64).tolist()
    for inst, inst_vis in zip(points, _array(visibility).astype(bool).tolist()):
        for point, visible in zip(inst, inst_vis):
            if visible:
                x, y = point[0], point[1]
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=colors, outline=None, width=0)
        for pair in connectivity or ():
            a, b = pair[0], pair[1]
            if inst_vis[a] and inst_vis[b]:
                draw.line(((inst[a][0], inst[a][1]), (inst[b][0], inst[b][1])), width=width)
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
