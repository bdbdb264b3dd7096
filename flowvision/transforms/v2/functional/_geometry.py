"""Geometry functionals of v2: flips, resize, crops and pad, for images (tensor, ``Image``, PIL), videos, masks,
bounding boxes and key points.

Images, videos and masks reuse the v1 kernels (``flowvision.transforms.functional``), which take any number of
leading dimensions, except for uint8 CPU images resized bilinearly or bicubically: those go through a copy of
torch's integer kernel, which torchvision v2 calls (v1 resizes them in float). Boxes and key points move with
the pixels: their kernels take and return plain tensors, and the ones that change the canvas return
``(tensor, canvas_size)``; boxes that may leave the canvas are clamped back according to their
``clamping_mode``, key points never are. Rotated boxes (XYWHR, CXCYWHR, XYXYXYXY) keep their angle through
crops and pads; flips mirror it; a resize that scales x and y differently turns them into parallelograms, which
become rectangles again (``_rotated.parallelogram_to_rectangle``), as in torchvision.
"""
import numbers
import warnings

import PIL.Image

import engine

from .... import tv_tensors
from ....tv_tensors import BoundingBoxFormat
from ....tv_tensors._bounding_boxes import _format
from ... import functional as F1
from ...functional import InterpolationMode, _interpolation_modes_from_int
from . import _rotated
from ._meta import _clamp_bounding_boxes, _convert_bounding_box_format
from ._resize_uint8 import resize_uint8
from ._utils import _register_five_ten_crop_kernel_internal, _register_kernel_internal, dispatch

__all__ = [
    "horizontal_flip", "hflip", "horizontal_flip_image", "horizontal_flip_mask", "horizontal_flip_video",
    "horizontal_flip_bounding_boxes", "horizontal_flip_keypoints",
    "vertical_flip", "vflip", "vertical_flip_image", "vertical_flip_mask", "vertical_flip_video",
    "vertical_flip_bounding_boxes", "vertical_flip_keypoints",
    "resize", "resize_image", "resize_mask", "resize_video", "resize_bounding_boxes", "resize_keypoints",
    "pad", "pad_image", "pad_mask", "pad_video", "pad_bounding_boxes", "pad_keypoints",
    "crop", "crop_image", "crop_mask", "crop_video", "crop_bounding_boxes", "crop_keypoints",
    "center_crop", "center_crop_image", "center_crop_mask", "center_crop_video", "center_crop_bounding_boxes",
    "center_crop_keypoints",
    "resized_crop", "resized_crop_image", "resized_crop_mask", "resized_crop_video", "resized_crop_bounding_boxes",
    "resized_crop_keypoints",
    "five_crop", "five_crop_image", "five_crop_video", "ten_crop", "ten_crop_image", "ten_crop_video",
]

_MODES_BY_NAME = {mode.value: mode for mode in InterpolationMode}


def _check_interpolation(interpolation):
    """An ``InterpolationMode`` from itself, its name ("bilinear") or a Pillow filter constant."""
    if isinstance(interpolation, str):
        if interpolation not in _MODES_BY_NAME:
            raise ValueError(f"Invalid interpolation mode: '{interpolation}'. "
                             f"Supported string values are: {list(_MODES_BY_NAME)}.")
        return _MODES_BY_NAME[interpolation]
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise ValueError(f"Argument interpolation should be an `InterpolationMode` or a corresponding Pillow integer "
                         f"constant, but got {interpolation}.")
    return interpolation


def _pure(inpt):
    return inpt.as_subclass(engine.Tensor)


def _as_batch_of_images(kernel, mask, *args, **kwargs):
    """``kernel`` on a mask, which may lack the channel dimension of an image ([H, W] masks)."""
    if mask.ndim >= 3:
        return kernel(mask, *args, **kwargs)
    return kernel(mask.unsqueeze(0), *args, **kwargs).squeeze(0)


def _offset(boxes_or_points, values):
    """``values`` (one per coordinate) as a tensor of the data's dtype, to add or subtract."""
    return engine.tensor(values, dtype=boxes_or_points.dtype, device=boxes_or_points.device)


_XYXY, _XYXYXYXY = BoundingBoxFormat.XYXY, BoundingBoxFormat.XYXYXYXY
_ROTATED_WITH_SIZE = (BoundingBoxFormat.XYWHR, BoundingBoxFormat.CXCYWHR)


def _box_shift(format, dx, dy):
    """What moving a box by (dx, dy) adds to each of its numbers: every corner moves, sizes and angles stay."""
    if format == _XYXY:
        return [dx, dy, dx, dy]
    if format == _XYXYXYXY:
        return [dx, dy] * 4
    if format in _ROTATED_WITH_SIZE:
        return [dx, dy, 0, 0, 0]
    return [dx, dy, 0, 0]


def _box_length(format):
    """How many numbers a box has in ``format``."""
    return 8 if format == _XYXYXYXY else 5 if format in _ROTATED_WITH_SIZE else 4


# ---- flips ------------------------------------------------------------------------------------------------------
def horizontal_flip(inpt):
    """Mirror left-right (see ``RandomHorizontalFlip``)."""
    return dispatch(horizontal_flip, inpt)


@_register_kernel_internal(horizontal_flip, engine.Tensor)
@_register_kernel_internal(horizontal_flip, tv_tensors.Image)
def horizontal_flip_image(image):
    return F1.hflip(image)


_register_kernel_internal(horizontal_flip, PIL.Image.Image)(F1.hflip)


@_register_kernel_internal(horizontal_flip, tv_tensors.Mask)
def horizontal_flip_mask(mask):
    return horizontal_flip_image(mask)


@_register_kernel_internal(horizontal_flip, tv_tensors.Video)
def horizontal_flip_video(video):
    return horizontal_flip_image(video)


def horizontal_flip_keypoints(keypoints, canvas_size):
    """Points mirrored about the centre of the pixel grid: x -> width - 1 - x."""
    points = keypoints.clone()
    points[..., 0] = (points[..., 0] - (canvas_size[1] - 1)).neg()
    return points


_MIRRORED_CORNERS = [2, 3, 0, 1, 6, 7, 4, 5]  # a mirrored XYXYXYXY box renumbered to keep its turning sense


def _flip_rotated(boxes, format, canvas_size, vertical):
    """[N, 5 or 8] rotated boxes mirrored left-right (or top-bottom): the angle turns to -r (180 - r); an XYWHR
    box's first corner becomes the mirror of its neighbour along the width; XYXYXYXY corners swap in pairs."""
    axis, extent = (1, canvas_size[0]) if vertical else (0, canvas_size[1])
    if format == _XYXYXYXY:
        mirrored = boxes.clone()
        mirrored[:, axis::2] = (boxes[:, axis::2] - extent).neg()
        return mirrored[:, _MIRRORED_CORNERS]
    x, y, w, h, angle = boxes.unbind(-1)
    if format == BoundingBoxFormat.XYWHR:
        rad = _rotated.radians(angle)
        along_x, along_y = w * rad.cos(), w * rad.sin()  # the first edge, from the first corner to the second
        if vertical:
            x, y = x + along_x, (y - along_y - extent).neg()
        else:
            x, y = (x + along_x - extent).neg(), y - along_y
    elif vertical:
        y = (y - extent).neg()
    else:
        x = (x - extent).neg()
    angle = angle.neg() + 180 if vertical else angle.neg()
    return engine.stack([x, y, w, h, angle], dim=-1)


def horizontal_flip_bounding_boxes(bounding_boxes, format, canvas_size):
    """Boxes mirrored about the vertical centre line of the canvas (their edges swap sides)."""
    format, width = _format(format), canvas_size[1]
    if tv_tensors.is_rotated_bounding_format(format):
        boxes = bounding_boxes.reshape(-1, _box_length(format))
        return _flip_rotated(boxes, format, canvas_size, vertical=False).reshape(bounding_boxes.shape)
    boxes = bounding_boxes.clone().reshape(-1, 4)
    if format == BoundingBoxFormat.XYXY:
        left = (boxes[:, 2] - width).neg()
        boxes[:, 2] = (boxes[:, 0] - width).neg()
        boxes[:, 0] = left
    elif format == BoundingBoxFormat.XYWH:
        boxes[:, 0] = (boxes[:, 0] + boxes[:, 2] - width).neg()
    else:
        boxes[:, 0] = (boxes[:, 0] - width).neg()
    return boxes.reshape(bounding_boxes.shape)


@_register_kernel_internal(horizontal_flip, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _horizontal_flip_keypoints_dispatch(inpt):
    return tv_tensors.wrap(horizontal_flip_keypoints(_pure(inpt), inpt.canvas_size), like=inpt)


@_register_kernel_internal(horizontal_flip, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _horizontal_flip_bounding_boxes_dispatch(inpt):
    return tv_tensors.wrap(horizontal_flip_bounding_boxes(_pure(inpt), inpt.format, inpt.canvas_size), like=inpt)


def vertical_flip(inpt):
    """Mirror top-bottom (see ``RandomVerticalFlip``)."""
    return dispatch(vertical_flip, inpt)


@_register_kernel_internal(vertical_flip, engine.Tensor)
@_register_kernel_internal(vertical_flip, tv_tensors.Image)
def vertical_flip_image(image):
    return F1.vflip(image)


_register_kernel_internal(vertical_flip, PIL.Image.Image)(F1.vflip)


@_register_kernel_internal(vertical_flip, tv_tensors.Mask)
def vertical_flip_mask(mask):
    return vertical_flip_image(mask)


@_register_kernel_internal(vertical_flip, tv_tensors.Video)
def vertical_flip_video(video):
    return vertical_flip_image(video)


def vertical_flip_keypoints(keypoints, canvas_size):
    """Points mirrored about the centre of the pixel grid: y -> height - 1 - y."""
    points = keypoints.clone()
    points[..., 1] = (points[..., 1] - (canvas_size[0] - 1)).neg()
    return points


def vertical_flip_bounding_boxes(bounding_boxes, format, canvas_size):
    """Boxes mirrored about the horizontal centre line of the canvas."""
    format, height = _format(format), canvas_size[0]
    if tv_tensors.is_rotated_bounding_format(format):
        boxes = bounding_boxes.reshape(-1, _box_length(format))
        return _flip_rotated(boxes, format, canvas_size, vertical=True).reshape(bounding_boxes.shape)
    boxes = bounding_boxes.clone().reshape(-1, 4)
    if format == BoundingBoxFormat.XYXY:
        top = (boxes[:, 3] - height).neg()
        boxes[:, 3] = (boxes[:, 1] - height).neg()
        boxes[:, 1] = top
    elif format == BoundingBoxFormat.XYWH:
        boxes[:, 1] = (boxes[:, 1] + boxes[:, 3] - height).neg()
    else:
        boxes[:, 1] = (boxes[:, 1] - height).neg()
    return boxes.reshape(bounding_boxes.shape)


@_register_kernel_internal(vertical_flip, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _vertical_flip_keypoints_dispatch(inpt):
    return tv_tensors.wrap(vertical_flip_keypoints(_pure(inpt), inpt.canvas_size), like=inpt)


@_register_kernel_internal(vertical_flip, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _vertical_flip_bounding_boxes_dispatch(inpt):
    return tv_tensors.wrap(vertical_flip_bounding_boxes(_pure(inpt), inpt.format, inpt.canvas_size), like=inpt)


hflip = horizontal_flip
vflip = vertical_flip


# ---- resize -----------------------------------------------------------------------------------------------------
def _compute_resized_output_size(canvas_size, size, max_size=None):
    """[new_height, new_width]: ``size`` (h, w) as is; one number for the shorter edge (the longer one capped at
    ``max_size``); None to fit the longer edge to ``max_size``."""
    if isinstance(size, int):
        size = [size]
    elif max_size is not None and size is not None and len(size) != 1:
        raise ValueError("max_size should only be passed if size is None or specifies the length of the smaller "
                         "edge, i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    if size is not None:
        return F1._compute_resized_output_size(canvas_size, list(size), max_size)
    if not isinstance(max_size, int):
        raise ValueError(f"max_size must be an integer when size is None, but got {max_size} instead.")
    height, width = canvas_size
    short, long = min(height, width), max(height, width)
    new_short = int(max_size * short / long)
    return [max_size, new_short] if width <= height else [new_short, max_size]


def _resize_uint8_native(image, size, mode, antialias):
    """A uint8 CPU image [..., H, W] resized as torch's uint8 kernel resizes it."""
    return engine.from_numpy(resize_uint8(image.numpy(), size, mode, antialias))


def resize(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to ``size`` (see ``Resize``); boxes and key points are scaled with the canvas."""
    return dispatch(resize, inpt, size=size, interpolation=interpolation, max_size=max_size, antialias=antialias)


@_register_kernel_internal(resize, engine.Tensor)
@_register_kernel_internal(resize, tv_tensors.Image)
def resize_image(image, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize [..., C, H, W]; antialiasing applies to bilinear and bicubic only (None means False)."""
    interpolation = _check_interpolation(interpolation)
    antialias = bool(antialias) and interpolation in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC,
                                                      InterpolationMode.LANCZOS)
    if interpolation == InterpolationMode.LANCZOS and not antialias:
        raise ValueError("InterpolationMode.LANCZOS requires antialias=True")
    new_size = _compute_resized_output_size(tuple(image.shape[-2:]), size=size, max_size=max_size)
    if new_size == list(image.shape[-2:]):
        return image
    if image.numel() == 0:
        return image.reshape(tuple(image.shape[:-2]) + tuple(new_size))
    F1._check_resize_sizes(tuple(image.shape[-2:]), new_size)
    if (image.dtype == engine.uint8 and image.device.type == "cpu"
            and interpolation in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC)):
        return _resize_uint8_native(image, new_size, interpolation.value, antialias)
    return F1.resize(image, new_size, interpolation=interpolation, antialias=antialias)


def _resize_image_pil(image, size, interpolation=InterpolationMode.BILINEAR, max_size=None):
    """Pillow's resize (always antialiased); NEAREST_EXACT is Pillow's NEAREST."""
    new_height, new_width = _compute_resized_output_size((image.height, image.width), size=size, max_size=max_size)
    interpolation = _check_interpolation(interpolation)
    if (new_height, new_width) == (image.height, image.width):
        return image
    return image.resize((new_width, new_height), resample=F1.pil_modes_mapping[interpolation])


@_register_kernel_internal(resize, PIL.Image.Image)
def _resize_image_pil_dispatch(image, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                               antialias=True):
    if antialias is False:
        warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.")
    return _resize_image_pil(image, size, interpolation=interpolation, max_size=max_size)


def resize_mask(mask, size, interpolation=InterpolationMode.BILINEAR, max_size=None):
    """Masks take nearest neighbours only: any other interpolation becomes NEAREST (labels must not blend)."""
    interpolation = _check_interpolation(interpolation)
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
        interpolation = InterpolationMode.NEAREST
    return _as_batch_of_images(resize_image, mask, size=size, interpolation=interpolation, max_size=max_size)


@_register_kernel_internal(resize, tv_tensors.Mask, tv_tensor_wrapper=False)
def _resize_mask_dispatch(inpt, size, interpolation=InterpolationMode.BILINEAR, max_size=None, **kwargs):
    output = resize_mask(_pure(inpt), size, interpolation=interpolation, max_size=max_size)
    return tv_tensors.wrap(output, like=inpt)


@_register_kernel_internal(resize, tv_tensors.Video)
def resize_video(video, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    return resize_image(video, size, interpolation=interpolation, max_size=max_size, antialias=antialias)


def _scale(data, ratios):
    """``data`` times float32 ``ratios`` (one per coordinate), back in its dtype (integers truncate)."""
    return data.mul(engine.tensor(ratios, device=data.device)).to(data.dtype)


def resize_keypoints(keypoints, size, canvas_size, max_size=None):
    """Points scaled with the canvas; returns (points, new canvas_size)."""
    new_height, new_width = _compute_resized_output_size(canvas_size, size=size, max_size=max_size)
    if (new_height, new_width) == tuple(canvas_size):
        return keypoints, canvas_size
    ratios = [new_width / canvas_size[1], new_height / canvas_size[0]]
    return _scale(keypoints, ratios), (new_height, new_width)


def _resize_rotated(bounding_boxes, format, ratios, canvas_size, clamping_mode):
    """Rotated boxes scaled with the canvas: their corners scale, and the parallelogram they make (unless the
    scale is uniform or the box axis-aligned) becomes a rectangle again, clamped to the new canvas."""
    corners = _convert_bounding_box_format(bounding_boxes, format, _XYXYXYXY).reshape(-1, 8)
    scaled = corners.mul(engine.tensor(ratios * 4, device=corners.device))
    boxes = _clamp_bounding_boxes(_rotated.parallelogram_to_rectangle(scaled), _XYXYXYXY, canvas_size,
                                  clamping_mode)
    boxes = _convert_bounding_box_format(boxes, _XYXYXYXY, format)
    return boxes.to(bounding_boxes.dtype).reshape(bounding_boxes.shape)


def resize_bounding_boxes(bounding_boxes, canvas_size, size, max_size=None, format=BoundingBoxFormat.XYXY,
                          clamping_mode="soft"):
    """Boxes scaled with the canvas (any axis-aligned format scales coordinate-wise; rotated boxes as
    ``_resize_rotated``); returns (boxes, canvas)."""
    new_height, new_width = _compute_resized_output_size(canvas_size, size=size, max_size=max_size)
    if (new_height, new_width) == tuple(canvas_size):
        return bounding_boxes, canvas_size
    ratios, format = [new_width / canvas_size[1], new_height / canvas_size[0]], _format(format)
    if tv_tensors.is_rotated_bounding_format(format):
        return (_resize_rotated(bounding_boxes, format, ratios, (new_height, new_width), clamping_mode),
                (new_height, new_width))
    return _scale(bounding_boxes, ratios * 2), (new_height, new_width)


@_register_kernel_internal(resize, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _resize_keypoints_dispatch(inpt, size, max_size=None, **kwargs):
    output, canvas_size = resize_keypoints(_pure(inpt), size, canvas_size=inpt.canvas_size, max_size=max_size)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


@_register_kernel_internal(resize, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _resize_bounding_boxes_dispatch(inpt, size, max_size=None, **kwargs):
    output, canvas_size = resize_bounding_boxes(_pure(inpt), inpt.canvas_size, size, max_size=max_size,
                                                format=inpt.format, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# ---- pad --------------------------------------------------------------------------------------------------------
def pad(inpt, padding, fill=None, padding_mode="constant"):
    """Pad the borders (see ``Pad``); boxes and key points shift by the left and top padding."""
    return dispatch(pad, inpt, padding=padding, fill=fill, padding_mode=padding_mode)


def _parse_pad_padding(padding):
    """``padding`` (an int, or 1, 2 or 4 of them in PIL's left, top, right, bottom order) as [left, right, top,
    bottom]."""
    if isinstance(padding, int):
        return [padding] * 4
    if not isinstance(padding, (tuple, list)):
        raise TypeError(f"`padding` should be an integer or tuple or list of integers, but got {padding}")
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[0], padding[1], padding[1]]
    if len(padding) == 4:
        return [padding[0], padding[2], padding[1], padding[3]]
    raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple or list. Found {len(padding)}")


def _fill_borders(output, left, right, top, bottom, fill):
    """Set the padded borders of ``output`` to one value per channel (``fill`` cast to the image dtype)."""
    values = engine.tensor(fill, device=output.device).to(output.dtype).reshape(-1, 1, 1)
    if top > 0:
        output[..., :top, :] = values
    if left > 0:
        output[..., :, :left] = values
    if bottom > 0:
        output[..., -bottom:, :] = values
    if right > 0:
        output[..., :, -right:] = values
    return output


@_register_kernel_internal(pad, engine.Tensor)
@_register_kernel_internal(pad, tv_tensors.Image)
def pad_image(image, padding, fill=None, padding_mode="constant"):
    """Pad [..., C, H, W]; a fill of one value per channel works with constant padding only."""
    left, right, top, bottom = _parse_pad_padding(padding)
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"`padding_mode` should be either `'constant'`, `'edge'`, `'reflect'` or `'symmetric'`, "
                         f"but got `'{padding_mode}'`.")
    fill = 0 if fill is None else fill
    if isinstance(fill, (tuple, list)) and len(fill) == 1:
        fill = fill[0]
    if isinstance(fill, numbers.Number):
        return F1.pad(image, [left, top, right, bottom], fill=float(fill), padding_mode=padding_mode)
    if padding_mode != "constant":
        raise ValueError(f"Padding mode '{padding_mode}' is not supported if fill is not scalar")
    output = F1.pad(image, [left, top, right, bottom], fill=0, padding_mode="constant")
    return _fill_borders(output, left, right, top, bottom, fill)


_register_kernel_internal(pad, PIL.Image.Image)(F1.pad)


@_register_kernel_internal(pad, tv_tensors.Mask)
def pad_mask(mask, padding, fill=None, padding_mode="constant"):
    fill = 0 if fill is None else fill
    if isinstance(fill, (tuple, list)):
        raise ValueError("Non-scalar fill value is not supported")
    return _as_batch_of_images(pad_image, mask, padding=padding, fill=fill, padding_mode=padding_mode)


@_register_kernel_internal(pad, tv_tensors.Video)
def pad_video(video, padding, fill=None, padding_mode="constant"):
    return pad_image(video, padding, fill=fill, padding_mode=padding_mode)


def pad_keypoints(keypoints, canvas_size, padding, padding_mode="constant"):
    """Points shifted by the left and top padding; returns (points, new canvas_size). Constant padding only."""
    if padding_mode != "constant":
        raise ValueError(f"Padding mode '{padding_mode}' is not supported with KeyPoints "
                         f"(supported modes are constant)")
    left, right, top, bottom = _parse_pad_padding(padding)
    canvas_size = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return keypoints + _offset(keypoints, [left, top]), canvas_size


def pad_bounding_boxes(bounding_boxes, format, canvas_size, padding, padding_mode="constant", clamping_mode="soft"):
    """Boxes shifted by the left and top padding and clamped to the new canvas; returns (boxes, canvas_size)."""
    if padding_mode != "constant":
        raise ValueError(f"Padding mode '{padding_mode}' is not supported with bounding boxes")
    left, right, top, bottom = _parse_pad_padding(padding)
    shift = _box_shift(_format(format), left, top)
    canvas_size = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    boxes = bounding_boxes + _offset(bounding_boxes, shift)
    return _clamp_bounding_boxes(boxes, format, canvas_size, clamping_mode), canvas_size


@_register_kernel_internal(pad, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _pad_keypoints_dispatch(inpt, padding, padding_mode="constant", **kwargs):
    output, canvas_size = pad_keypoints(_pure(inpt), inpt.canvas_size, padding, padding_mode=padding_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


@_register_kernel_internal(pad, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _pad_bounding_boxes_dispatch(inpt, padding, padding_mode="constant", **kwargs):
    output, canvas_size = pad_bounding_boxes(_pure(inpt), inpt.format, inpt.canvas_size, padding,
                                             padding_mode=padding_mode, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# ---- crop -------------------------------------------------------------------------------------------------------
def crop(inpt, top, left, height, width):
    """The ``height`` x ``width`` window at (``top``, ``left``); image parts outside the input are zero."""
    return dispatch(crop, inpt, top=top, left=left, height=height, width=width)


@_register_kernel_internal(crop, engine.Tensor)
@_register_kernel_internal(crop, tv_tensors.Image)
def crop_image(image, top, left, height, width):
    return F1.crop(image, top, left, height, width)


_register_kernel_internal(crop, PIL.Image.Image)(F1.crop)


@_register_kernel_internal(crop, tv_tensors.Mask)
def crop_mask(mask, top, left, height, width):
    return _as_batch_of_images(crop_image, mask, top, left, height, width)


@_register_kernel_internal(crop, tv_tensors.Video)
def crop_video(video, top, left, height, width):
    return crop_image(video, top, left, height, width)


def crop_keypoints(keypoints, top, left, height, width):
    """Points in the window's coordinates (not clamped); returns (points, (height, width))."""
    return keypoints - _offset(keypoints, [left, top]), (height, width)


def crop_bounding_boxes(bounding_boxes, format, top, left, height, width, clamping_mode="soft"):
    """Boxes in the window's coordinates, clamped to it; returns (boxes, (height, width)). XYXYXYXY boxes are
    squared into rectangles first (torchvision does so for that format only)."""
    format = _format(format)
    boxes = bounding_boxes - _offset(bounding_boxes, _box_shift(format, left, top))
    if format == _XYXYXYXY:
        boxes = _rotated.parallelogram_to_rectangle(boxes)
    return _clamp_bounding_boxes(boxes, format, (height, width), clamping_mode), (height, width)


@_register_kernel_internal(crop, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _crop_keypoints_dispatch(inpt, top, left, height, width):
    output, canvas_size = crop_keypoints(_pure(inpt), top=top, left=left, height=height, width=width)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


@_register_kernel_internal(crop, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _crop_bounding_boxes_dispatch(inpt, top, left, height, width):
    output, canvas_size = crop_bounding_boxes(_pure(inpt), inpt.format, top=top, left=left, height=height,
                                              width=width, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# ---- center crop ------------------------------------------------------------------------------------------------
def center_crop(inpt, output_size):
    """The centred window of ``output_size`` (see ``CenterCrop``); images smaller than it are zero-padded."""
    return dispatch(center_crop, inpt, output_size=output_size)


def _center_crop_parse_output_size(output_size):
    """[height, width] from a number, a one-element or a two-element sequence."""
    if isinstance(output_size, numbers.Number):
        return [int(output_size)] * 2
    if isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        return [output_size[0]] * 2
    return list(output_size)


def _center_crop_anchor(crop_height, crop_width, canvas_height, canvas_width):
    """(top, left) of the centred window (negative where the window is larger than the canvas)."""
    return int(round((canvas_height - crop_height) / 2.0)), int(round((canvas_width - crop_width) / 2.0))


@_register_kernel_internal(center_crop, engine.Tensor)
@_register_kernel_internal(center_crop, tv_tensors.Image)
def center_crop_image(image, output_size):
    """The centred window (an empty input just takes the output shape)."""
    crop_height, crop_width = _center_crop_parse_output_size(output_size)
    if image.numel() == 0:
        return image.reshape(tuple(image.shape[:-2]) + (crop_height, crop_width))
    return F1.center_crop(image, [crop_height, crop_width])


@_register_kernel_internal(center_crop, PIL.Image.Image)
def _center_crop_image_pil(image, output_size):
    return F1.center_crop(image, _center_crop_parse_output_size(output_size))


@_register_kernel_internal(center_crop, tv_tensors.Mask)
def center_crop_mask(mask, output_size):
    return _as_batch_of_images(center_crop_image, mask, output_size)


@_register_kernel_internal(center_crop, tv_tensors.Video)
def center_crop_video(video, output_size):
    return center_crop_image(video, output_size)


def center_crop_keypoints(inpt, canvas_size, output_size):
    crop_height, crop_width = _center_crop_parse_output_size(output_size)
    top, left = _center_crop_anchor(crop_height, crop_width, *canvas_size)
    return crop_keypoints(inpt, top=top, left=left, height=crop_height, width=crop_width)


def center_crop_bounding_boxes(bounding_boxes, format, canvas_size, output_size, clamping_mode="soft"):
    crop_height, crop_width = _center_crop_parse_output_size(output_size)
    top, left = _center_crop_anchor(crop_height, crop_width, *canvas_size)
    return crop_bounding_boxes(bounding_boxes, format, top=top, left=left, height=crop_height, width=crop_width,
                               clamping_mode=clamping_mode)


@_register_kernel_internal(center_crop, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _center_crop_keypoints_dispatch(inpt, output_size):
    output, canvas_size = center_crop_keypoints(_pure(inpt), inpt.canvas_size, output_size)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


@_register_kernel_internal(center_crop, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _center_crop_bounding_boxes_dispatch(inpt, output_size):
    output, canvas_size = center_crop_bounding_boxes(_pure(inpt), inpt.format, inpt.canvas_size, output_size,
                                                     clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# ---- resized crop -----------------------------------------------------------------------------------------------
def resized_crop(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """``crop`` then ``resize`` to ``size`` (see ``RandomResizedCrop``)."""
    return dispatch(resized_crop, inpt, top=top, left=left, height=height, width=width, size=size,
                    interpolation=interpolation, antialias=antialias)


@_register_kernel_internal(resized_crop, engine.Tensor)
@_register_kernel_internal(resized_crop, tv_tensors.Image)
def resized_crop_image(image, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                       antialias=True):
    image = crop_image(image, top, left, height, width)
    return resize_image(image, size, interpolation=interpolation, antialias=antialias)


@_register_kernel_internal(resized_crop, PIL.Image.Image)
def _resized_crop_image_pil_dispatch(image, top, left, height, width, size,
                                     interpolation=InterpolationMode.BILINEAR, antialias=True):
    if antialias is False:
        warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.")
    return _resize_image_pil(F1.crop(image, top, left, height, width), size, interpolation=interpolation)


def resized_crop_mask(mask, top, left, height, width, size):
    return resize_mask(crop_mask(mask, top, left, height, width), size)


@_register_kernel_internal(resized_crop, tv_tensors.Mask, tv_tensor_wrapper=False)
def _resized_crop_mask_dispatch(inpt, top, left, height, width, size, **kwargs):
    return tv_tensors.wrap(resized_crop_mask(_pure(inpt), top, left, height, width, size), like=inpt)


@_register_kernel_internal(resized_crop, tv_tensors.Video)
def resized_crop_video(video, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                       antialias=True):
    return resized_crop_image(video, top, left, height, width, size, interpolation=interpolation,
                              antialias=antialias)


def resized_crop_keypoints(keypoints, top, left, height, width, size):
    keypoints, canvas_size = crop_keypoints(keypoints, top, left, height, width)
    return resize_keypoints(keypoints, size=size, canvas_size=canvas_size)


def resized_crop_bounding_boxes(bounding_boxes, format, top, left, height, width, size, clamping_mode="soft"):
    boxes, canvas_size = crop_bounding_boxes(bounding_boxes, format, top, left, height, width,
                                             clamping_mode=clamping_mode)
    return resize_bounding_boxes(boxes, canvas_size=canvas_size, size=size, format=format,
                                 clamping_mode=clamping_mode)


@_register_kernel_internal(resized_crop, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _resized_crop_keypoints_dispatch(inpt, top, left, height, width, size, **kwargs):
    output, canvas_size = resized_crop_keypoints(_pure(inpt), top, left, height, width, size)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


@_register_kernel_internal(resized_crop, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _resized_crop_bounding_boxes_dispatch(inpt, top, left, height, width, size, **kwargs):
    output, canvas_size = resized_crop_bounding_boxes(_pure(inpt), inpt.format, top, left, height, width, size,
                                                      clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# ---- five and ten crops -----------------------------------------------------------------------------------------
def five_crop(inpt, size):
    """The four corner windows and the centred one, of ``size`` (see ``FiveCrop``)."""
    return dispatch(five_crop, inpt, size=size)


def _parse_five_crop_size(size):
    if isinstance(size, numbers.Number):
        size = [int(size)] * 2
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = [size[0]] * 2
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    return size


def _five_windows(image, size, canvas_size, crop_fn, center_crop_fn):
    """(top-left, top-right, bottom-left, bottom-right, centre) windows of ``size`` cut by ``crop_fn``."""
    crop_height, crop_width = _parse_five_crop_size(size)
    height, width = canvas_size
    if crop_width > width or crop_height > height:
        raise ValueError(f"Requested crop size {size} is bigger than input size {(height, width)}")
    corners = [(0, 0), (0, width - crop_width), (height - crop_height, 0), (height - crop_height, width - crop_width)]
    crops = [crop_fn(image, top, left, crop_height, crop_width) for top, left in corners]
    return (*crops, center_crop_fn(image, [crop_height, crop_width]))


@_register_five_ten_crop_kernel_internal(five_crop, engine.Tensor)
@_register_five_ten_crop_kernel_internal(five_crop, tv_tensors.Image)
def five_crop_image(image, size):
    return _five_windows(image, size, tuple(image.shape[-2:]), crop_image, center_crop_image)


@_register_five_ten_crop_kernel_internal(five_crop, PIL.Image.Image)
def _five_crop_image_pil(image, size):
    return _five_windows(image, size, (image.height, image.width), F1.crop, _center_crop_image_pil)


@_register_five_ten_crop_kernel_internal(five_crop, tv_tensors.Video)
def five_crop_video(video, size):
    return five_crop_image(video, size)


def ten_crop(inpt, size, vertical_flip=False):
    """``five_crop`` of the input, then of its horizontal (or vertical) mirror image (see ``TenCrop``)."""
    return dispatch(ten_crop, inpt, size=size, vertical_flip=vertical_flip)


@_register_five_ten_crop_kernel_internal(ten_crop, engine.Tensor)
@_register_five_ten_crop_kernel_internal(ten_crop, tv_tensors.Image)
def ten_crop_image(image, size, vertical_flip=False):
    flipped = vertical_flip_image(image) if vertical_flip else horizontal_flip_image(image)
    return five_crop_image(image, size) + five_crop_image(flipped, size)


@_register_five_ten_crop_kernel_internal(ten_crop, PIL.Image.Image)
def _ten_crop_image_pil(image, size, vertical_flip=False):
    flipped = F1.vflip(image) if vertical_flip else F1.hflip(image)
    return _five_crop_image_pil(image, size) + _five_crop_image_pil(flipped, size)


@_register_five_ten_crop_kernel_internal(ten_crop, tv_tensors.Video)
def ten_crop_video(video, size, vertical_flip=False):
    return ten_crop_image(video, size, vertical_flip=vertical_flip)
