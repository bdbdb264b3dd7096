"""GeneralizedRCNNTransform: the in-model normalise / resize / batch / postprocess step of the detectors."""
import math

import numpy as np

import engine as torch
from engine import nn
from engine.nn import functional as F

from .image_list import ImageList

__all__ = ["GeneralizedRCNNTransform", "resize_boxes", "resize_keypoints"]


def _resize_image_and_masks(image, self_min_size, self_max_size, target=None, fixed_size=None):
    """Resize a CHW image (bilinear) and its target's masks (nearest) to the detector's input scale."""
    size = None
    scale_factor = None
    recompute_scale_factor = None
    if fixed_size is not None:
        size = [fixed_size[1], fixed_size[0]]
    else:
        im_shape = image.shape[-2:]
        scale_factor = min(self_min_size / min(im_shape), self_max_size / max(im_shape))
        recompute_scale_factor = True
    image = F.interpolate(image[None], size=size, scale_factor=scale_factor, mode="bilinear",
                          recompute_scale_factor=recompute_scale_factor, align_corners=False)[0]
    if target is None:
        return image, target
    if "masks" in target:
        mask = target["masks"]
        mask = F.interpolate(mask[:, None].float(), size=size, scale_factor=scale_factor,
                             recompute_scale_factor=recompute_scale_factor)[:, 0].byte()
        target["masks"] = mask
    return image, target


def _ratios(new_size, original_size):
    """Per-axis (height, width) scale ratios, each a float32 division as torchvision computes them."""
    return [np.float32(s) / np.float32(s_orig) for s, s_orig in zip(new_size, original_size)]


def _scaled(values, ratios):
    """``values`` times a row of float32 ``ratios``, as torchvision multiplies by 0-dim float32 ratio tensors:
    float32/float64 at their own precision, 16-bit floats computed in float32 and rounded once (the ratio is
    not rounded to 16 bits first), integers promoted to float32."""
    scale = torch.tensor(np.asarray(ratios, dtype=np.float32), device=values.device)
    if not values.is_floating_point():
        return values.to(torch.float32) * scale
    if values.element_size() < 4:
        return (values.float() * scale).to(values.dtype)
    return values * scale.to(values.dtype)


def resize_boxes(boxes, original_size, new_size):
    """Scale (N, 4) x1y1x2y2 boxes from an image of ``original_size`` (h, w) to ``new_size``."""
    ratio_height, ratio_width = _ratios(new_size, original_size)
    return _scaled(boxes, [ratio_width, ratio_height, ratio_width, ratio_height])


def resize_keypoints(keypoints, original_size, new_size):
    """Scale (N, K, 3) keypoints' x and y from ``original_size`` (h, w) to ``new_size``; visibility untouched."""
    ratio_h, ratio_w = _ratios(new_size, original_size)
    ones = [1.0] * (keypoints.shape[-1] - 2)
    return _scaled(keypoints, [ratio_w, ratio_h] + ones)


class GeneralizedRCNNTransform(nn.Module):
    """Normalise, resize (min_size/max_size or fixed_size) and pad-batch detector inputs; map outputs back."""

    def __init__(self, min_size, max_size, image_mean, image_std, size_divisible=32, fixed_size=None, **kwargs):
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size = min_size
        self.max_size = max_size
        self.image_mean = image_mean
        self.image_std = image_std
        self.size_divisible = size_divisible
        self.fixed_size = fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def forward(self, images, targets=None):
        """A list of CHW images (and optional target dicts) -> (ImageList, resized target copies)."""
        images = list(images)
        if targets is not None:
            targets = [dict(t) for t in targets]
        for i in range(len(images)):
            image = images[i]
            target_index = targets[i] if targets is not None else None
            if image.dim() != 3:
                raise ValueError(f"images is expected to be a list of 3d tensors of shape [C, H, W], got {image.shape}")
            image = self.normalize(image)
            image, target_index = self.resize(image, target_index)
            images[i] = image
            if targets is not None and target_index is not None:
                targets[i] = target_index
        image_sizes = [tuple(img.shape[-2:]) for img in images]
        images = self.batch_images(images, size_divisible=self.size_divisible)
        return ImageList(images, image_sizes), targets

    def normalize(self, image):
        """(image - mean) / std per channel; images must be floating point in [0, 1]."""
        if not image.is_floating_point():
            raise TypeError(f"Expected input images to be of floating type (in range [0, 1]), "
                            f"but found type {image.dtype} instead")
        dtype, device = image.dtype, image.device
        mean = torch.as_tensor(self.image_mean, dtype=dtype, device=device)
        std = torch.as_tensor(self.image_std, dtype=dtype, device=device)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k):
        """One element of ``k`` drawn with the engine's RNG (a training-time random min_size)."""
        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    def resize(self, image, target=None):
        """Resize one image and scale its target's boxes, masks and keypoints to match."""
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image, target = _resize_image_and_masks(image, size, self.max_size, target, self.fixed_size)
        if target is None:
            return image, target
        target["boxes"] = resize_boxes(target["boxes"], (h, w), image.shape[-2:])
        if "keypoints" in target:
            target["keypoints"] = resize_keypoints(target["keypoints"], (h, w), image.shape[-2:])
        return image, target

    def max_by_axis(self, the_list):
        """The elementwise maximum over a list of shapes."""
        return [max(dims) for dims in zip(*the_list)]

    def batch_images(self, images, size_divisible=32):
        """Zero-pad every image (bottom/right) to the largest H, W rounded up to ``size_divisible`` and stack."""
        max_size = self.max_by_axis([list(img.shape) for img in images])
        stride = float(size_divisible)
        max_size[1] = int(math.ceil(float(max_size[1]) / stride) * stride)
        max_size[2] = int(math.ceil(float(max_size[2]) / stride) * stride)
        padded = []
        for img in images:
            c, h, w = img.shape
            padded.append(F.pad(img, (0, max_size[2] - w, 0, max_size[1] - h, 0, max_size[0] - c)))
        return torch.stack(padded)

    def postprocess(self, result, image_shapes, original_image_sizes):
        """Map eval-mode detections from the resized inputs back to the original image sizes."""
        if self.training:
            return result
        from ._masks import paste_masks_in_image

        for i, (pred, im_s, o_im_s) in enumerate(zip(result, image_shapes, original_image_sizes)):
            boxes = resize_boxes(pred["boxes"], im_s, o_im_s)
            result[i]["boxes"] = boxes
            if "masks" in pred:
                result[i]["masks"] = paste_masks_in_image(pred["masks"], boxes, o_im_s)
            if "keypoints" in pred:
                result[i]["keypoints"] = resize_keypoints(pred["keypoints"], im_s, o_im_s)
        return result

    def __repr__(self):
        indent = "\n    "
        return (f"{self.__class__.__name__}("
                f"{indent}Normalize(mean={self.image_mean}, std={self.image_std})"
                f"{indent}Resize(min_size={self.min_size}, max_size={self.max_size}, mode='bilinear')"
                "\n)")
