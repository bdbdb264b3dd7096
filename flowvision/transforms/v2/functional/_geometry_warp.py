"""The warping functionals of v2: rotate, affine, perspective and elastic, for images (tensor, ``Image``, PIL),
videos, masks, bounding boxes and key points.

Images, videos and masks are resampled on v1's grids (bit for bit torch's) with v2's fill arithmetic and v2's
affine matrix (its floating-point order differs from v1's). Boxes and key points move with the same geometry:
affine and rotate map box corners and points with the forward matrix, perspective with the inverted
coefficients, elastic with the approximate inverse grid ``identity - displacement``; a box becomes the box
enclosing its moved corners, clamped to the canvas as the boxes' ``clamping_mode`` says. A rotated box's corners
move the same way and the parallelogram they make becomes a rectangle again; under elastic only a rotated box's
centre moves (torchvision's approximation).
"""
import math

import numpy as np
import PIL.Image

import engine
from engine._device import array_module

from .... import tv_tensors
from ....tv_tensors import BoundingBoxFormat
from ....tv_tensors._bounding_boxes import _format
from ... import functional as F1
from ...functional import InterpolationMode, pil_modes_mapping
from . import _rotated
from ._geometry import _check_interpolation
from ._meta import _clamp_bounding_boxes, _convert_bounding_box_format
from ._utils import _register_kernel_internal, dispatch

__all__ = [
    "rotate", "rotate_image", "rotate_mask", "rotate_video", "rotate_bounding_boxes", "rotate_keypoints",
    "affine", "affine_image", "affine_mask", "affine_video", "affine_bounding_boxes", "affine_keypoints",
    "perspective", "perspective_image", "perspective_mask", "perspective_video", "perspective_bounding_boxes",
    "perspective_keypoints",
    "elastic", "elastic_transform", "elastic_image", "elastic_mask", "elastic_video", "elastic_bounding_boxes",
    "elastic_keypoints",
]

_XYXY = BoundingBoxFormat.XYXY
_XYXYXYXY = BoundingBoxFormat.XYXYXYXY
_CORNERS = [[0, 1], [2, 1], [2, 3], [0, 3]]  # (x, y) of a box's four corners, by their XYXY indices


# ---- arguments ------------------------------------------------------------------------------------------------
def _check_grid_inputs(image, interpolation, fill):
    """torchvision's checks of a resampled tensor's fill and interpolation."""
    if fill is not None:
        if isinstance(fill, (tuple, list)):
            channels = image.shape[-3] if image.ndim > 2 else 1
            if len(fill) > 1 and len(fill) != channels:
                raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number of channels "
                                 f"of the image ({len(fill)} != {channels})")
        elif not isinstance(fill, (int, float)):
            raise ValueError("Argument fill should be either int, float, tuple or list")
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        raise ValueError(f"Interpolation mode '{interpolation.value}' is unsupported with Tensor input")


# ---- geometry -------------------------------------------------------------------------------------------------
def _affine_matrix(center, angle, translate, scale, shear, inverted=True):
    """The 2x3 matrix (flat) of translate * center * rotate-scale-shear * center^-1, or its inverse (what the
    resampling grid and Pillow want), in v2's order of float64 operations."""
    rot, shear_x, shear_y = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    tan_x = math.tan(shear_x)
    a = math.cos(rot - shear_y) / math.cos(shear_y)
    b = -(a * tan_x + math.sin(rot))
    c = math.sin(rot - shear_y) / math.cos(shear_y)
    d = math.cos(rot) - c * tan_x
    if inverted:  # the rotate-shear part has determinant 1
        m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
        m[2] += cx - m[0] * (cx + tx) - m[1] * (cy + ty)
        m[5] += cy - m[3] * (cx + tx) - m[4] * (cy + ty)
    else:
        m = [a * scale, b * scale, 0.0, c * scale, d * scale, 0.0]
        m[2] += (cx + tx) - m[0] * cx - m[1] * cy
        m[5] += (cy + ty) - m[3] * cx - m[4] * cy
    return m


def _expanded_size(matrix, width, height):
    """(width, height) holding the whole image warped by the inverse ``matrix`` (centre origin), in float32 with
    a 1e-4 tolerance before rounding outwards (as v2 computes it)."""
    half = np.array([0.5 * width, 0.5 * height], dtype=np.float32)
    corners = engine.tensor([[-half[0], -half[1], 1.0], [-half[0], half[1], 1.0], [half[0], half[1], 1.0],
                             [half[0], -half[1], 1.0]])
    theta = engine.tensor(matrix, dtype=engine.float32).reshape(2, 3)
    warped = _matmul(corners, theta.T).numpy()
    low, high = warped.min(axis=0) + half, warped.max(axis=0) + half
    scale, tol = np.float32(1.0 / 1e-4), np.float32(1e-4)
    size = np.ceil(np.trunc(high * scale) * tol) - np.floor(np.trunc(low * scale) * tol)
    return int(size[0]), int(size[1])


def _resample(image, gx, gy, mode, fill):
    """``image`` [..., C, H, W] sampled at the normalised grid (gx, gy), outside pixels filled by v2's rule:
    nearest takes the fill where the sampled coverage is under 1/2, bilinear blends ``(value - fill) * coverage +
    fill``; integer images are rounded back."""
    array = F1._arr(image)
    squeeze = array.ndim == 2
    if squeeze:
        array = array[None]
    out_shape = array.shape[:-2] + gx.shape
    if array.size == 0:
        return image.reshape(out_shape[1:] if squeeze else out_shape)
    xp, work = array_module(array), gx.dtype
    x = array.reshape((-1,) + array.shape[-3:]).astype(work)
    if fill is not None:
        x = xp.concatenate([x, xp.ones_like(x[:, :1])], axis=1)
    y = F1._grid_sample(x, F1._like(gx, array), F1._like(gy, array), mode).astype(work)
    if fill is not None:
        y, coverage = y[:, :-1], y[:, -1:]
        values = np.asarray(fill if isinstance(fill, (list, tuple)) else [float(fill)], dtype=work)
        values = F1._like(values.reshape(1, -1, 1, 1), array)
        if mode == "nearest":
            y = xp.where(coverage < 0.5, xp.broadcast_to(values, y.shape), y)
        else:
            y = (y - values) * coverage + values
    if y.dtype != array.dtype:
        y = xp.round(y).astype(array.dtype)
    y = y.reshape(out_shape)
    return F1._wrap(y[0] if squeeze else y)


def _grid_dtype(image):
    return F1._grid_dtype(F1._arr(image))


def _matmul(points, matrix):
    """[N, 3] @ [3, K] summed left to right in the working dtype (torch's CPU product of these small shapes, which
    a BLAS call would round differently)."""
    return (points[:, :1] * matrix[0] + points[:, 1:2] * matrix[1]) + points[:, 2:] * matrix[2]


def _homogeneous(points):
    """[N, 2] points as [N, 3] with a column of ones (made on the points' device)."""
    return engine.cat([points, engine.ones(points.shape[0], 1, dtype=points.dtype, device=points.device)], dim=-1)


def _enclosing_boxes(corners):
    """XYXY boxes [N, 4] around each box's four moved corners [N * 4, 2]."""
    low, high = engine.aminmax(corners.reshape(-1, 4, 2), dim=1)
    return engine.cat([low, high], dim=1)


def _box_corners(xyxy):
    return xyxy[:, _CORNERS].reshape(-1, 2)


def _corner_format(format):
    """The format whose numbers are the corners that move: XYXYXYXY for rotated boxes, XYXY otherwise."""
    return _XYXYXYXY if tv_tensors.is_rotated_bounding_format(_format(format)) else _XYXY


def _points_of(boxes, corner_format):
    """[N * 4, 2] corners of [N, 4 or 8] boxes in ``corner_format``."""
    return boxes.reshape(-1, 2) if corner_format == _XYXYXYXY else _box_corners(boxes)


def _boxes_around(points, corner_format):
    """Boxes from their moved corners [N * 4, 2]: the enclosing XYXY box, or for rotated boxes the rectangle the
    moved parallelogram becomes."""
    if corner_format == _XYXYXYXY:
        return _rotated.parallelogram_to_rectangle(points.reshape(-1, 8))
    return _enclosing_boxes(points)


# ---- rotate ---------------------------------------------------------------------------------------------------
def rotate(inpt, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Rotate counter-clockwise by ``angle`` degrees around ``center`` (default: the middle), growing the canvas
    to hold everything with ``expand``."""
    return dispatch(rotate, inpt, angle=angle, interpolation=interpolation, expand=expand, center=center, fill=fill)


def _quarter_turn(image, angle, expand):
    """The rotation done by ``rot90`` where it is exact (about the middle: 0 and 180 degrees, and 90 and 270 for
    square images or ``expand``); None otherwise."""
    if angle == 0:
        return image.clone()
    if angle == 180:
        return engine.rot90(image, k=2, dims=(-2, -1))
    if angle in (90, 270) and (expand or image.shape[-1] == image.shape[-2]):
        return engine.rot90(image, k=int(angle) // 90, dims=(-2, -1))
    return None


@_register_kernel_internal(rotate, engine.Tensor)
@_register_kernel_internal(rotate, tv_tensors.Image)
def rotate_image(image, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    angle = angle % 360
    if center is None:
        turned = _quarter_turn(image, angle, expand)
        if turned is not None:
            return turned
    interpolation = _check_interpolation(interpolation)
    height, width = image.shape[-2:]
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, (width, height))]
    matrix = _affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    _check_grid_inputs(image, interpolation, fill)
    out_width, out_height = _expanded_size(matrix, width, height) if expand else (width, height)
    gx, gy = F1._affine_grid(matrix, width, height, out_width, out_height, _grid_dtype(image))
    return _resample(image, gx, gy, interpolation.value, fill)


@_register_kernel_internal(rotate, PIL.Image.Image)
def _rotate_image_pil(image, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    return F1.rotate(image, angle, interpolation=_check_interpolation(interpolation), expand=expand, center=center,
                     fill=fill)


@_register_kernel_internal(rotate, tv_tensors.Video)
def rotate_video(video, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    return rotate_image(video, angle, interpolation=interpolation, expand=expand, center=center, fill=fill)


def rotate_mask(mask, angle, expand=False, center=None, fill=None):
    """Rotate a mask [..., H, W] or [H, W] (nearest)."""
    return rotate_image(mask, angle, interpolation=InterpolationMode.NEAREST, expand=expand, center=center,
                        fill=fill)


@_register_kernel_internal(rotate, tv_tensors.Mask, tv_tensor_wrapper=False)
def _rotate_mask_dispatch(inpt, angle, expand=False, center=None, fill=None, **kwargs):
    output = rotate_mask(inpt.as_subclass(engine.Tensor), angle, expand=expand, center=center, fill=fill)
    return tv_tensors.wrap(output, like=inpt)


def rotate_bounding_boxes(bounding_boxes, format, canvas_size, angle, expand=False, center=None,
                          clamping_mode="soft"):
    """(boxes, canvas size) after rotating the image they lie on."""
    return _affine_bounding_boxes_with_expand(bounding_boxes, format, canvas_size, -angle, [0.0, 0.0], 1.0,
                                              [0.0, 0.0], center=center, expand=expand, clamping_mode=clamping_mode)


@_register_kernel_internal(rotate, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _rotate_bounding_boxes_dispatch(inpt, angle, expand=False, center=None, **kwargs):
    output, canvas_size = rotate_bounding_boxes(inpt.as_subclass(engine.Tensor), inpt.format, inpt.canvas_size,
                                                angle, expand=expand, center=center,
                                                clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


def rotate_keypoints(keypoints, canvas_size, angle, expand=False, center=None):
    """(points, canvas size) after rotating the image they lie on."""
    return _affine_keypoints_with_expand(keypoints, canvas_size, -angle, [0.0, 0.0], 1.0, [0.0, 0.0],
                                         center=center, expand=expand)


@_register_kernel_internal(rotate, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _rotate_keypoints_dispatch(inpt, angle, expand=False, center=None, **kwargs):
    output, canvas_size = rotate_keypoints(inpt.as_subclass(engine.Tensor), inpt.canvas_size, angle,
                                           expand=expand, center=center)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# ---- affine ---------------------------------------------------------------------------------------------------
def affine(inpt, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """Rotate (clockwise, degrees), scale and shear about ``center`` (default: the middle), then translate."""
    return dispatch(affine, inpt, angle=angle, translate=translate, scale=scale, shear=shear,
                    interpolation=interpolation, fill=fill, center=center)


@_register_kernel_internal(affine, engine.Tensor)
@_register_kernel_internal(affine, tv_tensors.Image)
def affine_image(image, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None,
                 center=None):
    interpolation = _check_interpolation(interpolation)
    angle, translate, shear, center = F1._affine_args(angle, translate, scale, shear, center)
    height, width = image.shape[-2:]
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, (width, height))]
    matrix = _affine_matrix(center_f, angle, [float(t) for t in translate], scale, shear)
    _check_grid_inputs(image, interpolation, fill)
    gx, gy = F1._affine_grid(matrix, width, height, width, height, _grid_dtype(image))
    return _resample(image, gx, gy, interpolation.value, fill)


@_register_kernel_internal(affine, PIL.Image.Image)
def _affine_image_pil(image, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None,
                      center=None):
    interpolation = _check_interpolation(interpolation)
    angle, translate, shear, center = F1._affine_args(angle, translate, scale, shear, center)
    width, height = image.size
    center = [width * 0.5, height * 0.5] if center is None else center
    matrix = _affine_matrix(center, angle, translate, scale, shear)
    return image.transform(image.size, PIL.Image.AFFINE, matrix, pil_modes_mapping[interpolation],
                           **F1._fill_dict(fill, image))


@_register_kernel_internal(affine, tv_tensors.Video)
def affine_video(video, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None,
                 center=None):
    return affine_image(video, angle, translate, scale, shear, interpolation=interpolation, fill=fill, center=center)


def affine_mask(mask, angle, translate, scale, shear, fill=None, center=None):
    """Affine-warp a mask [..., H, W] or [H, W] (nearest)."""
    return affine_image(mask, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=fill,
                        center=center)


@_register_kernel_internal(affine, tv_tensors.Mask, tv_tensor_wrapper=False)
def _affine_mask_dispatch(inpt, angle, translate, scale, shear, fill=None, center=None, **kwargs):
    output = affine_mask(inpt.as_subclass(engine.Tensor), angle, translate, scale, shear, fill=fill, center=center)
    return tv_tensors.wrap(output, like=inpt)


def _forward_matrix(canvas_size, angle, translate, scale, shear, center, dtype, device):
    """(the forward matrix transposed [3, 2] in ``dtype`` on ``device``, the parsed arguments) for moving points on
    a canvas: the default center is the canvas' middle in pixel coordinates. The six numbers are computed on the
    host and copied to the points' device."""
    angle, translate, shear, center = F1._affine_args(angle, translate, scale, shear, center)
    if center is None:
        height, width = canvas_size
        center = [width * 0.5, height * 0.5]
    matrix = _affine_matrix(center, angle, translate, scale, shear, inverted=False)
    return engine.tensor(matrix, dtype=dtype, device=device).reshape(2, 3).T, (center, angle, translate, scale, shear)


def _expanded_canvas(canvas_size, transposed, args):
    """(top-left corner [1, 2] of the moved canvas, on the matrix' device; the expanded canvas size (H, W)) for
    ``expand=True``."""
    height, width = canvas_size
    frame = engine.tensor([[0.0, 0.0, 1.0], [0.0, float(height), 1.0], [float(width), float(height), 1.0],
                           [float(width), 0.0, 1.0]], dtype=transposed.dtype, device=transposed.device)
    top_left = engine.amin(_matmul(frame, transposed), dim=0, keepdim=True)
    new_width, new_height = _expanded_size(_affine_matrix(*args), width, height)
    return top_left, (new_height, new_width)


def _affine_bounding_boxes_with_expand(bounding_boxes, format, canvas_size, angle, translate, scale, shear,
                                       center=None, expand=False, clamping_mode="soft"):
    """(boxes enclosing the moved corners, clamped, in their format and dtype; the canvas size)."""
    if bounding_boxes.numel() == 0:
        return bounding_boxes, canvas_size
    shape, dtype, corner_format = bounding_boxes.shape, bounding_boxes.dtype, _corner_format(format)
    boxes = bounding_boxes.clone() if bounding_boxes.is_floating_point() else bounding_boxes.float()
    corners = _convert_bounding_box_format(boxes, format, corner_format, inplace=True)
    corners = corners.reshape(-1, 8 if corner_format == _XYXYXYXY else 4)
    transposed, args = _forward_matrix(canvas_size, angle, translate, scale, shear, center, corners.dtype,
                                       corners.device)
    out = _boxes_around(_matmul(_homogeneous(_points_of(corners, corner_format)), transposed), corner_format)
    if expand:
        top_left, canvas_size = _expanded_canvas(canvas_size, transposed, args)
        out = out - top_left.repeat(1, out.shape[-1] // 2)
    out = _clamp_bounding_boxes(out, format=corner_format, canvas_size=canvas_size, clamping_mode=clamping_mode)
    out = _convert_bounding_box_format(out, corner_format, format, inplace=True).reshape(shape)
    return out.to(dtype), canvas_size


def affine_bounding_boxes(bounding_boxes, format, canvas_size, angle, translate, scale, shear, center=None,
                          clamping_mode="soft"):
    """Boxes after an affine warp of their image (the canvas keeps its size)."""
    return _affine_bounding_boxes_with_expand(bounding_boxes, format, canvas_size, angle, translate, scale, shear,
                                              center=center, clamping_mode=clamping_mode)[0]


@_register_kernel_internal(affine, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _affine_bounding_boxes_dispatch(inpt, angle, translate, scale, shear, center=None, **kwargs):
    output = affine_bounding_boxes(inpt.as_subclass(engine.Tensor), inpt.format, inpt.canvas_size, angle, translate,
                                   scale, shear, center=center, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt)


def _affine_keypoints_with_expand(keypoints, canvas_size, angle, translate, scale, shear, center=None,
                                  expand=False):
    """(moved points in their dtype, unclamped; the canvas size)."""
    if keypoints.numel() == 0:
        return keypoints, canvas_size
    shape, dtype = keypoints.shape, keypoints.dtype
    points = keypoints.clone() if keypoints.is_floating_point() else keypoints.float()
    transposed, args = _forward_matrix(canvas_size, angle, translate, scale, shear, center, points.dtype,
                                       points.device)
    moved = _matmul(_homogeneous(points.reshape(-1, 2)), transposed)
    if expand:
        top_left, canvas_size = _expanded_canvas(canvas_size, transposed, args)
        moved = moved - top_left
    return moved.reshape(shape).to(dtype), canvas_size


def affine_keypoints(keypoints, canvas_size, angle, translate, scale, shear, center=None):
    """(points, canvas size) after an affine warp of their image."""
    return _affine_keypoints_with_expand(keypoints, canvas_size, angle, translate, scale, shear, center=center)


@_register_kernel_internal(affine, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _affine_keypoints_dispatch(inpt, angle, translate, scale, shear, center=None, **kwargs):
    output, canvas_size = affine_keypoints(inpt.as_subclass(engine.Tensor), inpt.canvas_size, angle, translate,
                                           scale, shear, center=center)
    return tv_tensors.wrap(output, like=inpt, canvas_size=canvas_size)


# ---- perspective ----------------------------------------------------------------------------------------------
def perspective(inpt, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                coefficients=None):
    """Warp so that the four ``startpoints`` land on the ``endpoints`` (or by the eight ``coefficients`` that map
    output pixels back to input pixels)."""
    return dispatch(perspective, inpt, startpoints=startpoints, endpoints=endpoints, interpolation=interpolation,
                    fill=fill, coefficients=coefficients)


def _perspective_coefficients(startpoints, endpoints, coefficients):
    """The eight coefficients, given or solved from the points (exactly one of the two must be given)."""
    if coefficients is not None:
        if startpoints is not None and endpoints is not None:
            raise ValueError("The startpoints/endpoints and the coefficients shouldn't be defined concurrently.")
        if len(coefficients) != 8:
            raise ValueError("Argument coefficients should have 8 float values")
        return coefficients
    if startpoints is not None and endpoints is not None:
        return F1._get_perspective_coeffs(startpoints, endpoints)
    raise ValueError("Either the startpoints/endpoints or the coefficients must have non `None` values.")


@_register_kernel_internal(perspective, engine.Tensor)
@_register_kernel_internal(perspective, tv_tensors.Image)
def perspective_image(image, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                      coefficients=None):
    coefficients = _perspective_coefficients(startpoints, endpoints, coefficients)
    interpolation = _check_interpolation(interpolation)
    _check_grid_inputs(image, interpolation, fill)
    height, width = image.shape[-2:]
    gx, gy = F1._perspective_grid(coefficients, width, height, _grid_dtype(image))
    return _resample(image, gx, gy, interpolation.value, fill)


@_register_kernel_internal(perspective, PIL.Image.Image)
def _perspective_image_pil(image, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                           coefficients=None):
    coefficients = _perspective_coefficients(startpoints, endpoints, coefficients)
    interpolation = _check_interpolation(interpolation)
    return image.transform(image.size, PIL.Image.PERSPECTIVE, coefficients, pil_modes_mapping[interpolation],
                           **F1._fill_dict(fill, image))


@_register_kernel_internal(perspective, tv_tensors.Video)
def perspective_video(video, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None,
                      coefficients=None):
    return perspective_image(video, startpoints, endpoints, interpolation=interpolation, fill=fill,
                             coefficients=coefficients)


def perspective_mask(mask, startpoints, endpoints, fill=None, coefficients=None):
    """Perspective-warp a mask [..., H, W] or [H, W] (nearest)."""
    return perspective_image(mask, startpoints, endpoints, interpolation=InterpolationMode.NEAREST, fill=fill,
                             coefficients=coefficients)


@_register_kernel_internal(perspective, tv_tensors.Mask, tv_tensor_wrapper=False)
def _perspective_mask_dispatch(inpt, startpoints, endpoints, fill=None, coefficients=None, **kwargs):
    output = perspective_mask(inpt.as_subclass(engine.Tensor), startpoints, endpoints, fill=fill,
                              coefficients=coefficients)
    return tv_tensors.wrap(output, like=inpt)


def _inverse_perspective(coefficients, dtype, device, what):
    """(numerator rows [2, 3], denominator rows [2, 3]) of the map from input pixels to output pixels: the
    coefficients map output to input, points move the other way. Computed on the host, made on ``device``."""
    c0, c1, c2, c3, c4, c5, c6, c7 = coefficients
    denom = c0 * c4 - c1 * c3
    if denom == 0:
        raise RuntimeError(f"Provided perspective_coeffs {coefficients} can not be inverted to transform {what}. "
                           f"Denominator is zero, denom={denom}")
    inv = [(c4 - c5 * c7) / denom, (-c1 + c2 * c7) / denom, (c1 * c5 - c2 * c4) / denom,
           (-c3 + c5 * c6) / denom, (c0 - c2 * c6) / denom, (-c0 * c5 + c2 * c3) / denom,
           (-c4 * c6 + c3 * c7) / denom, (-c0 * c7 + c1 * c6) / denom]
    numerator = engine.tensor([inv[0:3], inv[3:6]], dtype=dtype, device=device)
    denominator = engine.tensor([[inv[6], inv[7], 1.0], [inv[6], inv[7], 1.0]], dtype=dtype, device=device)
    return numerator, denominator


def _perspective_points(points, coefficients, dtype, what):
    """[N, 2] points moved by the inverse of ``coefficients`` (the ones column is float32, as torch's default)."""
    numerator, denominator = _inverse_perspective(coefficients, dtype, points.device, what)
    homogeneous = engine.cat([points, engine.ones(points.shape[0], 1, device=points.device)], dim=-1)
    return _matmul(homogeneous, numerator.T) / _matmul(homogeneous, denominator.T)


def perspective_bounding_boxes(bounding_boxes, format, canvas_size, startpoints, endpoints, coefficients=None,
                               clamping_mode="soft"):
    """Boxes enclosing their corners after a perspective warp of their image, clamped."""
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    coefficients = _perspective_coefficients(startpoints, endpoints, coefficients)
    shape, dtype, corner_format = bounding_boxes.shape, bounding_boxes.dtype, _corner_format(format)
    corners = _convert_bounding_box_format(bounding_boxes, format, corner_format)
    corners = corners.reshape(-1, 8 if corner_format == _XYXYXYXY else 4)
    work = corners.dtype if corners.is_floating_point() else engine.float32
    moved = _perspective_points(_points_of(corners, corner_format), coefficients, work, "bounding boxes")
    out = _clamp_bounding_boxes(_boxes_around(moved, corner_format), format=corner_format, canvas_size=canvas_size,
                                clamping_mode=clamping_mode)
    return _convert_bounding_box_format(out, corner_format, format, inplace=True).reshape(shape).to(dtype)


@_register_kernel_internal(perspective, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _perspective_bounding_boxes_dispatch(inpt, startpoints, endpoints, coefficients=None, **kwargs):
    output = perspective_bounding_boxes(inpt.as_subclass(engine.Tensor), inpt.format, inpt.canvas_size, startpoints,
                                        endpoints, coefficients=coefficients, clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt)


def perspective_keypoints(keypoints, canvas_size, startpoints, endpoints, coefficients=None):
    """Points after a perspective warp of their image (unclamped)."""
    if keypoints.numel() == 0:
        return keypoints
    work = keypoints.dtype if keypoints.is_floating_point() else engine.float32
    coefficients = _perspective_coefficients(startpoints, endpoints, coefficients)
    moved = _perspective_points(keypoints.reshape(-1, 2), coefficients, work, "keypoints")
    return moved.to(keypoints.dtype).reshape(keypoints.shape)


@_register_kernel_internal(perspective, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _perspective_keypoints_dispatch(inpt, startpoints, endpoints, coefficients=None, **kwargs):
    output = perspective_keypoints(inpt.as_subclass(engine.Tensor), inpt.canvas_size, startpoints, endpoints,
                                   coefficients=coefficients)
    return tv_tensors.wrap(output, like=inpt)


# ---- elastic --------------------------------------------------------------------------------------------------
def elastic(inpt, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Sample at the identity grid plus ``displacement`` [1, H, W, 2] (grid units: the image spans [-1, 1])."""
    return dispatch(elastic, inpt, displacement=displacement, interpolation=interpolation, fill=fill)


elastic_transform = elastic


def _identity_grid(size, dtype, device=None):
    """[1, H, W, 2] (x, y) pixel centres normalised to (-1, 1), on ``device`` (default: the CPU)."""
    height, width = size
    xs = engine.linspace((-width + 1) / width, (width - 1) / width, width, dtype=dtype, device=device)
    ys = engine.linspace((-height + 1) / height, (height - 1) / height, height, dtype=dtype, device=device)
    grid_y, grid_x = engine.meshgrid(ys, xs, indexing="ij")
    return engine.stack([grid_x, grid_y], -1).unsqueeze(0)


def _check_displacement(displacement, size):
    if not isinstance(displacement, engine.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    expected = (1, size[0], size[1], 2)
    if tuple(displacement.shape) != expected:
        raise ValueError(f"Argument displacement shape should be {expected}, but given {displacement.shape}")


@_register_kernel_internal(elastic, engine.Tensor)
@_register_kernel_internal(elastic, tv_tensors.Image)
def elastic_image(image, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    if not isinstance(displacement, engine.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    interpolation = _check_interpolation(interpolation)
    dtype = image.dtype if image.is_floating_point() and image.dtype != engine.float16 else engine.float32
    work = image.to(dtype) if image.dtype == engine.float16 else image
    _check_displacement(displacement, image.shape[-2:])
    grid = (_identity_grid(image.shape[-2:], dtype) + displacement.detach().cpu().to(dtype)).numpy()
    output = _resample(work, grid[0, ..., 0], grid[0, ..., 1], interpolation.value, fill)
    return output.to(image.dtype)


@_register_kernel_internal(elastic, PIL.Image.Image)
def _elastic_image_pil(image, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    output = elastic_image(F1.pil_to_tensor(image), displacement, interpolation=interpolation, fill=fill)
    return F1.to_pil_image(output, mode=image.mode)


@_register_kernel_internal(elastic, tv_tensors.Video)
def elastic_video(video, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    return elastic_image(video, displacement, interpolation=interpolation, fill=fill)


def elastic_mask(mask, displacement, fill=None):
    """Elastic-warp a mask [..., H, W] or [H, W] (nearest)."""
    return elastic_image(mask, displacement, interpolation=InterpolationMode.NEAREST, fill=fill)


@_register_kernel_internal(elastic, tv_tensors.Mask, tv_tensor_wrapper=False)
def _elastic_mask_dispatch(inpt, displacement, fill=None, **kwargs):
    return tv_tensors.wrap(elastic_mask(inpt.as_subclass(engine.Tensor), displacement, fill=fill), like=inpt)


def _elastic_points(points, canvas_size, displacement, dtype):
    """[N, 2] points moved by the approximate inverse grid ``identity - displacement``, read at the points'
    integer pixels (clamped to the canvas), in pixel coordinates. The grid is made on the points' device (the
    displacement, drawn on the host, is copied there, as torchvision does)."""
    inverse = _identity_grid(canvas_size, dtype, points.device) - displacement.to(device=points.device, dtype=dtype)
    index = points.to(engine.int64)
    index_x = index[:, 0].clamp(0, canvas_size[1] - 1)
    index_y = index[:, 1].clamp(0, canvas_size[0] - 1)
    half_size = 0.5 * engine.tensor(list(canvas_size[::-1]), dtype=dtype, device=points.device)
    return (inverse[0, index_y, index_x, :] + 1) * half_size - 0.5


def elastic_bounding_boxes(bounding_boxes, format, canvas_size, displacement, clamping_mode="soft"):
    """Boxes enclosing their corners moved by the elastic field (an approximation), clamped."""
    _check_displacement(displacement, canvas_size)
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    if tv_tensors.is_rotated_bounding_format(_format(format)):
        return _elastic_rotated(bounding_boxes, format, canvas_size, displacement, clamping_mode)
    dtype = bounding_boxes.dtype if bounding_boxes.is_floating_point() else engine.float32
    xyxy = _convert_bounding_box_format(bounding_boxes.clone(), format, _XYXY).reshape(-1, 4)
    corners = _box_corners(xyxy)
    if corners.is_floating_point():
        corners = corners.ceil()
    out = _enclosing_boxes(_elastic_points(corners, canvas_size, displacement, dtype)).to(xyxy.dtype)
    out = _clamp_bounding_boxes(out, format=_XYXY, canvas_size=canvas_size, clamping_mode=clamping_mode)
    return _convert_bounding_box_format(out, _XYXY, format).reshape(bounding_boxes.shape)


def _elastic_rotated(bounding_boxes, format, canvas_size, displacement, clamping_mode):
    """Rotated boxes whose centre moves with the elastic field (read at the centre rounded up), size and angle
    kept, clamped."""
    cxcywhr = _convert_bounding_box_format(bounding_boxes, format, BoundingBoxFormat.CXCYWHR).reshape(-1, 5)
    centres = _elastic_points(cxcywhr[:, :2].ceil(), canvas_size, displacement, cxcywhr.dtype)
    out = engine.cat([centres, cxcywhr[:, 2:]], dim=1)
    out = _clamp_bounding_boxes(out, format=BoundingBoxFormat.CXCYWHR, canvas_size=canvas_size,
                                clamping_mode=clamping_mode)
    return _convert_bounding_box_format(out, BoundingBoxFormat.CXCYWHR, format).reshape(bounding_boxes.shape)


@_register_kernel_internal(elastic, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
def _elastic_bounding_boxes_dispatch(inpt, displacement, **kwargs):
    output = elastic_bounding_boxes(inpt.as_subclass(engine.Tensor), inpt.format, inpt.canvas_size, displacement,
                                    clamping_mode=inpt.clamping_mode)
    return tv_tensors.wrap(output, like=inpt)


def elastic_keypoints(keypoints, canvas_size, displacement):
    """Points moved by the elastic field (an approximation; unclamped)."""
    _check_displacement(displacement, canvas_size)
    if keypoints.numel() == 0:
        return keypoints
    dtype = keypoints.dtype if keypoints.is_floating_point() else engine.float32
    moved = _elastic_points(keypoints.reshape(-1, 2), canvas_size, displacement, dtype)
    return moved.to(keypoints.dtype).reshape(keypoints.shape)


@_register_kernel_internal(elastic, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
def _elastic_keypoints_dispatch(inpt, displacement, **kwargs):
    output = elastic_keypoints(inpt.as_subclass(engine.Tensor), inpt.canvas_size, displacement)
    return tv_tensors.wrap(output, like=inpt)
