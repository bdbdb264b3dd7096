"""normalize, to_dtype, gaussian_blur, gaussian_noise and the sanitizers of boxes and key points."""
import math

import PIL.Image

import engine
import engine.nn.functional as nnF

from .... import tv_tensors
from ....tv_tensors import BoundingBoxFormat
from ....tv_tensors._bounding_boxes import _format
from ... import functional as F1
from ._meta import _convert_bounding_box_format
from ._utils import _register_kernel_internal, dispatch, is_pure_tensor


def normalize(inpt, mean, std, inplace=False):
    """(image - mean) / std per channel, for float images and videos."""
    return dispatch(normalize, inpt, mean=mean, std=std, inplace=inplace)


@_register_kernel_internal(normalize, engine.Tensor)
@_register_kernel_internal(normalize, tv_tensors.Image)
def normalize_image(image, mean, std, inplace=False):
    """As torchvision v2: the result broadcasts ``image`` against ``mean`` and ``std`` (a one-channel image with
    three means gives three channels) unless ``inplace``, where it must hold the broadcast shape."""
    if not image.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {image.dtype}.")
    if image.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got {image.shape}.")
    if isinstance(std, (tuple, list)) and not all(std) or isinstance(std, (int, float)) and std == 0:
        raise ValueError("std evaluated to zero, leading to division by zero.")
    mean = engine.as_tensor(mean, dtype=image.dtype, device=image.device)
    std = engine.as_tensor(std, dtype=image.dtype, device=image.device)
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    return (image.sub_(mean) if inplace else image.sub(mean)).div_(std)


@_register_kernel_internal(normalize, tv_tensors.Video)
def normalize_video(video, mean, std, inplace=False):
    return normalize_image(video, mean, std, inplace=inplace)


def gaussian_blur(inpt, kernel_size, sigma=None):
    """Gaussian blur with reflect padding (odd kernel sizes; sigma defaults to 0.15 * size + 0.35)."""
    return dispatch(gaussian_blur, inpt, kernel_size=kernel_size, sigma=sigma)


def _gaussian_kernel1d(size, sigma, dtype, device):
    """v2's kernel: a softmax of -(x / sigma)^2 over x evenly spaced in +-(size - 1) / (2 sqrt 2) (v1 normalises
    exp(-x^2 / (2 sigma^2)) by its sum instead: equal up to rounding)."""
    limit = (size - 1) / (2.0 * math.sqrt(2.0))
    x = engine.linspace(-limit, limit, steps=size, dtype=dtype, device=device)
    return engine.softmax(x.div(sigma).pow(2).neg(), dim=0)


@_register_kernel_internal(gaussian_blur, engine.Tensor)
@_register_kernel_internal(gaussian_blur, tv_tensors.Image)
def gaussian_blur_image(image, kernel_size, sigma=None):
    kernel_size, sigma = F1._blur_args(kernel_size, sigma)
    if image.numel() == 0:
        return image
    dtype, shape = image.dtype, image.shape
    batch = image.reshape(-1, *shape[-3:])
    floating = image.is_floating_point()
    work = dtype if floating else engine.float32
    kernel_x = _gaussian_kernel1d(kernel_size[0], sigma[0], work, image.device)
    kernel_y = _gaussian_kernel1d(kernel_size[1], sigma[1], work, image.device)
    kernel = (kernel_y.unsqueeze(-1) * kernel_x).expand(shape[-3], 1, kernel_size[1], kernel_size[0])
    padding = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    padded = nnF.pad(batch if floating else batch.to(engine.float32), padding, mode="reflect")
    output = nnF.conv2d(padded, kernel, groups=shape[-3]).reshape(shape)
    return output if floating else output.round().to(dtype)


@_register_kernel_internal(gaussian_blur, PIL.Image.Image)
def _gaussian_blur_image_pil(image, kernel_size, sigma=None):
    output = gaussian_blur_image(F1.pil_to_tensor(image), kernel_size=kernel_size, sigma=sigma)
    return F1.to_pil_image(output, mode=image.mode)


@_register_kernel_internal(gaussian_blur, tv_tensors.Video)
def gaussian_blur_video(video, kernel_size, sigma=None):
    return gaussian_blur_image(video, kernel_size, sigma)


def gaussian_noise(inpt, mean=0.0, sigma=0.1, clip=True):
    """The image plus N(mean, sigma) noise (in units of the [0, 1] range, so scaled by 255 for uint8), clipped to
    the range unless ``clip=False``."""
    return dispatch(gaussian_noise, inpt, mean=mean, sigma=sigma, clip=clip)


@_register_kernel_internal(gaussian_noise, engine.Tensor)
@_register_kernel_internal(gaussian_noise, tv_tensors.Image)
def gaussian_noise_image(image, mean=0.0, sigma=0.1, clip=True):
    if sigma < 0:
        raise ValueError(f"sigma shouldn't be negative. Got {sigma}")
    if image.is_floating_point():
        out = image + (mean + engine.randn_like(image) * sigma)
        return out.clamp(0, 1) if clip else out
    if image.dtype == engine.uint8:
        noise = (mean * 255 + engine.randn_like(image, dtype=engine.float32) * (sigma * 255)).to(engine.int16)
        out = image + noise
        return (out.clamp(0, 255) if clip else out).to(engine.uint8)
    raise ValueError(f"Input tensor is expected to be in uint8 or float dtype, got dtype={image.dtype}")


@_register_kernel_internal(gaussian_noise, tv_tensors.Video)
def gaussian_noise_video(video, mean=0.0, sigma=0.1, clip=True):
    return gaussian_noise_image(video, mean=mean, sigma=sigma, clip=clip)


@_register_kernel_internal(gaussian_noise, PIL.Image.Image)
def _gaussian_noise_pil(image, mean=0.0, sigma=0.1, clip=True):
    raise ValueError("Gaussian Noise is not implemented for PIL images.")


def to_dtype(inpt, dtype=engine.float32, scale=False):
    """``inpt`` as ``dtype``; with ``scale``, images and videos have their values rescaled to the new type's range
    (masks, boxes and key points are only cast)."""
    return dispatch(to_dtype, inpt, dtype=dtype, scale=scale)


@_register_kernel_internal(to_dtype, engine.Tensor)
@_register_kernel_internal(to_dtype, tv_tensors.Image)
def to_dtype_image(image, dtype=engine.float32, scale=False):
    if image.dtype == dtype:
        return image
    if not scale:
        return image.to(dtype)
    if dtype.is_floating_point and not image.is_floating_point():  # v2 multiplies by the reciprocal (v1 divides)
        # half precision multiplies in float32 (as torch does), so the small reciprocal does not flush to 0
        compute = engine.float32 if dtype in (engine.float16, engine.bfloat16) else dtype
        return image.to(dtype).to(compute).mul_(1.0 / F1._max_value(image.dtype.np)).to(dtype)
    if not image.is_floating_point() and not dtype.is_floating_point:
        for side in (image.dtype, dtype):  # v2 scales integers by their value bits, which bool does not have
            if side == engine.bool:
                raise TypeError(f"Number of value bits is only defined for integer dtypes, but got {side}.")
    return F1.convert_image_dtype(image, dtype)


@_register_kernel_internal(to_dtype, tv_tensors.Video)
def to_dtype_video(video, dtype=engine.float32, scale=False):
    return to_dtype_image(video, dtype, scale=scale)


@_register_kernel_internal(to_dtype, tv_tensors.KeyPoints, tv_tensor_wrapper=False)
@_register_kernel_internal(to_dtype, tv_tensors.BoundingBoxes, tv_tensor_wrapper=False)
@_register_kernel_internal(to_dtype, tv_tensors.Mask, tv_tensor_wrapper=False)
def _to_dtype_tensor_dispatch(inpt, dtype, scale=False):
    return inpt.to(dtype)


def convert_image_dtype(image, dtype=engine.float32):
    """``to_dtype(image, dtype, scale=True)`` (v1's name)."""
    return to_dtype_image(image, dtype=dtype, scale=True)


def _rotated_sides(corners):
    """(width, "height") of [N, 8] XYXYXYXY boxes as torchvision 0.29 measures them: the width is the first side's
    length, the "height" the length of (y2 - y3, x3 - x4), which for a rectangle at angle r is |cos r| times its
    diagonal, not its height (0 at 90 degrees). Kept so that the same boxes pass as in torchvision."""
    first = (corners[:, 0] - corners[:, 2], corners[:, 1] - corners[:, 3])
    second = (corners[:, 3] - corners[:, 5], corners[:, 4] - corners[:, 6])
    return tuple((dx * dx + dy * dy).sqrt() for dx, dy in (first, second))


def _sanitize_bounding_boxes_mask(boxes, format, canvas_size, min_size=1.0, min_area=1.0):
    """Which boxes are at least ``min_size`` wide and high, ``min_area`` large, and inside the canvas (every
    corner, for rotated boxes)."""
    rotated = tv_tensors.is_rotated_bounding_format(format)
    corner_format = BoundingBoxFormat.XYXYXYXY if rotated else BoundingBoxFormat.XYXY
    corners = _convert_bounding_box_format(boxes, old_format=format, new_format=corner_format)
    height, width = canvas_size
    if rotated:
        widths, heights = _rotated_sides(corners)
    else:
        widths, heights = corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 1]
    valid = (widths >= min_size) & (heights >= min_size) & (corners >= 0).all(dim=-1) & (widths * heights >= min_area)
    valid &= (corners[:, 0::2] <= width).all(dim=-1) & (corners[:, 1::2] <= height).all(dim=-1)
    return valid


def sanitize_bounding_boxes(bounding_boxes, format=None, canvas_size=None, min_size=1.0, min_area=1.0):
    """(the boxes that are large enough and inside the canvas, the boolean mask that selected them), the mask to
    select the labels and masks that go with them."""
    if is_pure_tensor(bounding_boxes):
        if format is None or canvas_size is None:
            raise ValueError(f"format and canvas_size cannot be None if bounding_boxes is a pure tensor. "
                             f"Got format={format} and canvas_size={canvas_size}. Set those to appropriate values "
                             f"or pass bounding_boxes as a tv_tensors.BoundingBoxes object.")
        valid = _sanitize_bounding_boxes_mask(bounding_boxes, _format(format), canvas_size, min_size, min_area)
        return bounding_boxes[valid], valid
    if not isinstance(bounding_boxes, tv_tensors.BoundingBoxes):
        raise ValueError("bounding_boxes must be a tv_tensors.BoundingBoxes instance or a pure tensor.")
    if format is not None or canvas_size is not None:
        raise ValueError(f"format and canvas_size must be None when bounding_boxes is a tv_tensors.BoundingBoxes "
                         f"instance. Got format={format} and canvas_size={canvas_size}. Leave those to None or pass "
                         f"bounding_boxes as a pure tensor.")
    valid = _sanitize_bounding_boxes_mask(bounding_boxes.as_subclass(engine.Tensor), bounding_boxes.format,
                                          bounding_boxes.canvas_size, min_size, min_area)
    return tv_tensors.wrap(bounding_boxes[valid], like=bounding_boxes), valid


def _sanitize_keypoints_mask(points, canvas_size):
    """Which points (or groups of points, along the first dimension) lie wholly on the canvas."""
    height, width = canvas_size
    x, y = points[..., 0], points[..., 1]
    valid = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    return valid.flatten(start_dim=1).all(dim=1) if valid.ndim > 1 else valid


def sanitize_keypoints(key_points, canvas_size=None):
    """(the points or groups of points inside the canvas, the boolean mask that selected them)."""
    if is_pure_tensor(key_points):
        if canvas_size is None:
            raise ValueError("canvas_size cannot be None if key_points is a pure tensor. Set it to an appropriate "
                             "value or pass key_points as a tv_tensors.KeyPoints object.")
        valid = _sanitize_keypoints_mask(key_points, canvas_size)
        return key_points[valid], valid
    if not isinstance(key_points, tv_tensors.KeyPoints):
        raise ValueError("key_points must be a tv_tensors.KeyPoints instance or a pure tensor.")
    if canvas_size is not None:
        raise ValueError(f"canvas_size must be None when key_points is a tv_tensors.KeyPoints instance. Got "
                         f"canvas_size={canvas_size}. Leave it to None or pass key_points as a pure tensor.")
    valid = _sanitize_keypoints_mask(key_points.as_subclass(engine.Tensor), key_points.canvas_size)
    return tv_tensors.wrap(key_points[valid], like=key_points), valid


__all__ = ["normalize", "normalize_image", "normalize_video", "gaussian_blur", "gaussian_blur_image",
           "gaussian_blur_video", "gaussian_noise", "gaussian_noise_image", "gaussian_noise_video", "to_dtype",
           "to_dtype_image", "to_dtype_video", "convert_image_dtype", "sanitize_bounding_boxes", "sanitize_keypoints"]
