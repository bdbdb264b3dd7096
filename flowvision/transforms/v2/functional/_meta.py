"""Metadata functionals: sizes, channels and frames of any input; box format conversion; clamping to the canvas."""
import PIL.Image

import engine

from .... import tv_tensors
from ....tv_tensors import BoundingBoxFormat
from ....tv_tensors._bounding_boxes import _format
from ... import functional as F1
from . import _rotated
from ._utils import _register_kernel_internal, dispatch, is_pure_tensor


def get_dimensions(inpt):
    """[channels, height, width] of an image or video (the last three dimensions)."""
    return dispatch(get_dimensions, inpt)


@_register_kernel_internal(get_dimensions, engine.Tensor)
@_register_kernel_internal(get_dimensions, tv_tensors.Image, tv_tensor_wrapper=False)
def get_dimensions_image(image):
    chw = list(image.shape[-3:])
    if len(chw) == 2:
        return [1, *chw]
    if len(chw) != 3:
        raise TypeError(f"Input tensor should have at least two dimensions, but got {len(chw)}")
    return chw


_register_kernel_internal(get_dimensions, PIL.Image.Image)(F1.get_dimensions)


@_register_kernel_internal(get_dimensions, tv_tensors.Video, tv_tensor_wrapper=False)
def get_dimensions_video(video):
    return get_dimensions_image(video)


def get_num_channels(inpt):
    return dispatch(get_num_channels, inpt)


@_register_kernel_internal(get_num_channels, engine.Tensor)
@_register_kernel_internal(get_num_channels, tv_tensors.Image, tv_tensor_wrapper=False)
def get_num_channels_image(image):
    if image.ndim == 2:
        return 1
    if image.ndim < 2:
        raise TypeError(f"Input tensor should have at least two dimensions, but got {image.ndim}")
    return image.shape[-3]


_register_kernel_internal(get_num_channels, PIL.Image.Image)(F1.get_image_num_channels)


@_register_kernel_internal(get_num_channels, tv_tensors.Video, tv_tensor_wrapper=False)
def get_num_channels_video(video):
    return get_num_channels_image(video)


def get_image_num_channels(inpt):
    """The number of channels (v1's name for ``get_num_channels``)."""
    return get_num_channels(inpt)


def get_size(inpt):
    """[height, width] of an image, video, mask, or of the canvas of boxes and key points."""
    return dispatch(get_size, inpt)


@_register_kernel_internal(get_size, engine.Tensor)
@_register_kernel_internal(get_size, tv_tensors.Image, tv_tensor_wrapper=False)
def get_size_image(image):
    if image.ndim < 2:
        raise TypeError(f"Input tensor should have at least two dimensions, but got {image.ndim}")
    return list(image.shape[-2:])


@_register_kernel_internal(get_size, PIL.Image.Image)
def _get_size_image_pil(image):
    width, height = image.size
    return [height, width]


@_register_kernel_internal(get_size, tv_tensors.Video, tv_tensor_wrapper=False)
def get_size_video(video):
    return get_size_image(video)


@_register_kernel_internal(get_size, tv_tensors.Mask, tv_tensor_wrapper=False)
def get_size_mask(mask):
    return get_size_image(mask)


@_register_kernel_internal(get_size, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def get_size_bounding_boxes(bounding_box):
    return list(bounding_box.canvas_size)


@_register_kernel_internal(get_size, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def get_size_keypoints(keypoints):
    return list(keypoints.canvas_size)


def get_num_frames(inpt):
    return dispatch(get_num_frames, inpt)


@_register_kernel_internal(get_num_frames, engine.Tensor)
@_register_kernel_internal(get_num_frames, tv_tensors.Video, tv_tensor_wrapper=False)
def get_num_frames_video(video):
    return video.shape[-4]


# ---- box formats: each conversion goes through XYXY, except XYWH <-> CXCYWH (torchvision's order of operations,
# so integer boxes round as there) -------------------------------------------------------------------------------
def _divide(x, divisor):
    """x / divisor, floored for integer boxes."""
    return x / divisor if x.is_floating_point() else x.div(divisor, rounding_mode="floor")


def _xywh_to_xyxy(xywh, inplace):
    xyxy = xywh if inplace else xywh.clone()
    xyxy[..., 2:] += xyxy[..., :2]
    return xyxy


def _xyxy_to_xywh(xyxy, inplace):
    xywh = xyxy if inplace else xyxy.clone()
    xywh[..., 2:] -= xywh[..., :2]
    return xywh


def _xywh_to_cxcywh(xywh, inplace):
    cxcywh = xywh if inplace else xywh.clone()
    cxcywh[..., :2] += _divide(cxcywh[..., 2:], 2)
    return cxcywh


def _from_centre(cxcywh, inplace, to_corners):
    """CXCYWH to XYXY (``to_corners``) or XYWH, in float32 for integer boxes (then truncated, with the width and
    height of XYWH recomputed from the truncated corners, as the two-step conversion gives)."""
    original, dtype = cxcywh, cxcywh.dtype
    integer = not cxcywh.is_floating_point()
    boxes = cxcywh.float() if integer else cxcywh if inplace else cxcywh.clone()
    boxes[..., :2] -= boxes[..., 2:] / 2
    if to_corners:
        boxes[..., 2:] += boxes[..., :2]
        if integer:
            boxes = boxes.to(dtype)
    elif integer:
        far = (boxes[..., :2] + boxes[..., 2:]).to(dtype)
        boxes = boxes.to(dtype)
        boxes[..., 2:] = far - boxes[..., :2]
    if integer and inplace:
        original[...] = boxes
        return original
    return boxes


def _xyxy_to_cxcywh(xyxy, inplace):
    boxes = xyxy if inplace else xyxy.clone()
    boxes[..., 2:] -= boxes[..., :2]
    boxes[..., :2] = _divide(boxes[..., :2] * 2 + boxes[..., 2:], 2)
    return boxes


_CXCYWHR, _XYXYXYXY = BoundingBoxFormat.CXCYWHR, BoundingBoxFormat.XYXYXYXY


def _convert_rotated(bounding_boxes, old_format, new_format, inplace):
    """Rotated boxes in another rotated format, through XYWHR (torchvision's path, which sets the rounding).
    ``inplace`` writes the result into the input where the shape stays (XYWHR <-> CXCYWHR)."""
    boxes = bounding_boxes
    if old_format == _CXCYWHR:
        boxes = _rotated.cxcywhr_to_xywhr(boxes)
    elif old_format == _XYXYXYXY:
        boxes = _rotated.xyxyxyxy_to_xywhr(boxes)
    if new_format == _CXCYWHR:
        boxes = _rotated.xywhr_to_cxcywhr(boxes)
    elif new_format == _XYXYXYXY:
        boxes = _rotated.xywhr_to_xyxyxyxy(boxes)
    if inplace and boxes.shape == bounding_boxes.shape:
        bounding_boxes[...] = boxes
        return bounding_boxes
    return boxes


def _convert_bounding_box_format(bounding_boxes, old_format, new_format, inplace=False):
    old_format, new_format = _format(old_format), _format(new_format)
    if new_format == old_format:
        return bounding_boxes
    rotated = tv_tensors.is_rotated_bounding_format(old_format)
    if rotated != tv_tensors.is_rotated_bounding_format(new_format):
        raise ValueError("Cannot convert between rotated and unrotated bounding boxes.")
    if rotated:
        return _convert_rotated(bounding_boxes, old_format, new_format, inplace)
    if old_format == BoundingBoxFormat.XYWH and new_format == BoundingBoxFormat.CXCYWH:
        return _xywh_to_cxcywh(bounding_boxes, inplace)
    if old_format == BoundingBoxFormat.CXCYWH and new_format == BoundingBoxFormat.XYWH:
        return _from_centre(bounding_boxes, inplace, to_corners=False)
    if old_format == BoundingBoxFormat.XYWH:
        bounding_boxes = _xywh_to_xyxy(bounding_boxes, inplace)
    elif old_format == BoundingBoxFormat.CXCYWH:
        bounding_boxes = _from_centre(bounding_boxes, inplace, to_corners=True)
    if new_format == BoundingBoxFormat.XYWH:
        bounding_boxes = _xyxy_to_xywh(bounding_boxes, inplace)
    elif new_format == BoundingBoxFormat.CXCYWH:
        bounding_boxes = _xyxy_to_cxcywh(bounding_boxes, inplace)
    return bounding_boxes


def convert_bounding_box_format(inpt, old_format=None, new_format=None, inplace=False):
    """Boxes in ``new_format``: a pure tensor needs ``old_format``; ``BoundingBoxes`` know theirs."""
    if new_format is None:
        raise TypeError("convert_bounding_box_format() missing 1 required argument: 'new_format'")
    if is_pure_tensor(inpt):
        if old_format is None:
            raise ValueError("For pure tensor inputs, `old_format` has to be passed.")
        return _convert_bounding_box_format(inpt, old_format, new_format, inplace)
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if old_format is not None:
            raise ValueError("For bounding box tv_tensor inputs, `old_format` must not be passed.")
        output = _convert_bounding_box_format(inpt.as_subclass(engine.Tensor), inpt.format, new_format, inplace)
        return tv_tensors.wrap(output, like=inpt, format=_format(new_format))
    raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but got {type(inpt)} instead.")


def _clamp_rotated_bounding_boxes(bounding_boxes, format, canvas_size, clamping_mode):
    """Rotated boxes clamped to the canvas with their angle kept (see ``_rotated.clamp_rotated``)."""
    corners = _convert_bounding_box_format(bounding_boxes, format, _XYXYXYXY).reshape(-1, 8)
    clamped = _rotated.clamp_rotated(corners, canvas_size, clamping_mode)
    return _convert_bounding_box_format(clamped, _XYXYXYXY, format).reshape(bounding_boxes.shape)


def _clamp_bounding_boxes(bounding_boxes, format, canvas_size, clamping_mode="soft"):
    """Boxes clamped to [0, width] x [0, height] (soft and hard clamp axis-aligned boxes alike; rotated boxes as
    ``_clamp_rotated_bounding_boxes``); a copy as is for ``clamping_mode=None``."""
    if clamping_mode is None:
        return bounding_boxes.clone()
    format = _format(format)
    if tv_tensors.is_rotated_bounding_format(format):
        return _clamp_rotated_bounding_boxes(bounding_boxes, format, canvas_size, clamping_mode)
    in_dtype = bounding_boxes.dtype
    boxes = bounding_boxes.clone() if bounding_boxes.is_floating_point() else bounding_boxes.float()
    xyxy = _convert_bounding_box_format(boxes, format, BoundingBoxFormat.XYXY, inplace=True)
    xyxy[..., 0::2] = xyxy[..., 0::2].clamp(min=0, max=canvas_size[1])
    xyxy[..., 1::2] = xyxy[..., 1::2].clamp(min=0, max=canvas_size[0])
    return _convert_bounding_box_format(xyxy, BoundingBoxFormat.XYXY, format, inplace=True).to(in_dtype)


def clamp_bounding_boxes(inpt, format=None, canvas_size=None, clamping_mode="auto"):
    """Boxes clamped to their canvas. ``clamping_mode="auto"`` takes the boxes' own mode."""
    if clamping_mode is not None and clamping_mode not in ("soft", "hard", "auto"):
        raise ValueError(f"clamping_mode must be soft, hard, auto or None, got {clamping_mode}")
    if is_pure_tensor(inpt):
        if format is None or canvas_size is None or clamping_mode == "auto":
            raise ValueError("For pure tensor inputs, `format`, `canvas_size` and `clamping_mode` have to be passed.")
        return _clamp_bounding_boxes(inpt, format=format, canvas_size=canvas_size, clamping_mode=clamping_mode)
    if isinstance(inpt, tv_tensors.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError("For bounding box tv_tensor inputs, `format` and `canvas_size` must not be passed.")
        mode = inpt.clamping_mode if clamping_mode == "auto" else clamping_mode
        output = _clamp_bounding_boxes(inpt.as_subclass(engine.Tensor), format=inpt.format,
                                       canvas_size=inpt.canvas_size, clamping_mode=mode)
        return tv_tensors.wrap(output, like=inpt)
    raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but got {type(inpt)} instead.")


def _clamp_keypoints(keypoints, canvas_size):
    """Points clamped to the pixel grid: [0, width - 1] x [0, height - 1]."""
    dtype = keypoints.dtype
    points = keypoints.clone() if keypoints.is_floating_point() else keypoints.float()
    points[..., 0] = points[..., 0].clamp(min=0, max=canvas_size[1] - 1)
    points[..., 1] = points[..., 1].clamp(min=0, max=canvas_size[0] - 1)
    return points.to(dtype)


def clamp_keypoints(inpt, canvas_size=None):
    if is_pure_tensor(inpt):
        if canvas_size is None:
            raise ValueError("For pure tensor inputs, `canvas_size` has to be passed.")
        return _clamp_keypoints(inpt, canvas_size)
    if isinstance(inpt, tv_tensors.KeyPoints):
        if canvas_size is not None:
            raise ValueError("For keypoints tv_tensor inputs, `canvas_size` must not be passed.")
        return tv_tensors.wrap(_clamp_keypoints(inpt.as_subclass(engine.Tensor), inpt.canvas_size), like=inpt)
    raise TypeError(f"Input can either be a plain tensor or a keypoints tv_tensor, but got {type(inpt)} instead.")
