"""Geometry transforms of v2: flips, resizes, crops, pads and the detection augmentations (zoom out, IoU crop,
scale jitter), applied alike to every image, video, mask, box and key point of a sample.

The random ones draw torchvision's numbers with the same engine ops in the same order (float32 arithmetic on
the drawn tensors included), so a seeded run picks torchvision's parameters.
"""
import math
import warnings
from collections.abc import Sequence

import numpy as np
import PIL.Image

import engine

from ... import tv_tensors
from .. import transforms as _v1
from ..transforms import _scaled_log_uniform_crop, _torch_log_ratio, _torch_randint
from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import (_check_padding_arg, _check_padding_mode_arg, _check_sequence_input, _get_fill, _setup_fill_arg,
                     _setup_size, get_bounding_boxes, has_all, has_any, query_size)
from .functional._geometry import _parse_pad_padding
from .functional._utils import is_pure_tensor

__all__ = ["RandomHorizontalFlip", "RandomVerticalFlip", "Resize", "CenterCrop", "RandomResizedCrop", "FiveCrop",
           "TenCrop", "Pad", "RandomZoomOut", "RandomCrop", "RandomIoUCrop", "ScaleJitter", "RandomShortestSize",
           "RandomResize"]

_SIZE_ERROR = "Please provide only two dimensions (h, w) for size."


class RandomHorizontalFlip(_RandomApplyTransform):
    """Mirror the whole sample left-right with probability ``p``."""

    _v1_transform_cls = _v1.RandomHorizontalFlip

    def transform(self, inpt, params):
        return self._call_kernel(F.horizontal_flip, inpt)


class RandomVerticalFlip(_RandomApplyTransform):
    """Mirror the whole sample top-bottom with probability ``p``."""

    _v1_transform_cls = _v1.RandomVerticalFlip

    def transform(self, inpt, params):
        return self._call_kernel(F.vertical_flip, inpt)


class Resize(Transform):
    """Resize to ``size``: (h, w) exactly, one number for the shorter edge (the longer one at most ``max_size``),
    or None to fit the longer edge to ``max_size``. Boxes and key points scale with the canvas, masks resize
    with nearest neighbours."""

    _v1_transform_cls = _v1.Resize

    def __init__(self, size, interpolation="bilinear", max_size=None, antialias=True):
        super().__init__()
        if isinstance(size, int):
            size = [size]
        elif isinstance(size, Sequence) and len(size) in (1, 2):
            size = list(size)
        elif size is None:
            if not isinstance(max_size, int):
                raise ValueError(f"max_size must be an integer when size is None, but got {max_size} instead.")
        else:
            raise ValueError(f"size can be an integer, a sequence of one or two integers, or None, but got {size} "
                             f"instead.")
        self.size = size
        self.interpolation = interpolation
        self.max_size = max_size
        self.antialias = antialias

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, self.size, interpolation=self.interpolation,
                                 max_size=self.max_size, antialias=self.antialias)


class CenterCrop(Transform):
    """Cut the centred window of ``size`` (images smaller than it are zero-padded first)."""

    _v1_transform_cls = _v1.CenterCrop

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)

    def transform(self, inpt, params):
        return self._call_kernel(F.center_crop, inpt, output_size=self.size)


class RandomResizedCrop(Transform):
    """Cut a window of random area (a ``scale`` share of the input) and aspect ratio (log-uniform in ``ratio``),
    then resize it to ``size``; after 10 failed draws, the largest centred window within ``ratio``."""

    _v1_transform_cls = _v1.RandomResizedCrop

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation="bilinear",
                 antialias=True):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)
        if not isinstance(scale, Sequence) or len(scale) != 2:
            raise TypeError("Scale should be a sequence of two floats.")
        if not isinstance(ratio, Sequence) or len(ratio) != 2:
            raise TypeError("Ratio should be a sequence of two floats.")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)")
        self.scale = scale
        self.ratio = ratio
        self.interpolation = interpolation
        self.antialias = antialias
        self._log_ratio = _torch_log_ratio(ratio)

    def _central_window(self, height, width):
        """The fallback: the whole input, narrowed to the nearest bound of ``ratio`` where it lies outside."""
        in_ratio = float(width) / float(height)
        if in_ratio < min(self.ratio):
            h, w = int(round(width / min(self.ratio))), width
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            h, w = height, width
        return dict(top=(height - h) // 2, left=(width - w) // 2, height=h, width=w)

    def make_params(self, flat_inputs):
        height, width = query_size(flat_inputs)
        for _ in range(10):
            target_area, aspect_ratio = _scaled_log_uniform_crop(height * width, self.scale, self._log_ratio)
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                top = _torch_randint(0, height - h + 1)
                left = _torch_randint(0, width - w + 1)
                return dict(top=top, left=left, height=h, width=w)
        return self._central_window(height, width)

    def transform(self, inpt, params):
        return self._call_kernel(F.resized_crop, inpt, **params, size=self.size, interpolation=self.interpolation,
                                 antialias=self.antialias)


class _MultiCrop(Transform):
    """Shared by ``FiveCrop`` and ``TenCrop``: images and videos only (a tuple of crops cannot carry boxes)."""

    _warned_passthrough_types = (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask)

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)

    def check_inputs(self, flat_inputs):
        if has_any(flat_inputs, tv_tensors.BoundingBoxes, tv_tensors.Mask):
            raise TypeError(f"BoundingBoxes'es and Mask's are not supported by {type(self).__name__}()")


class FiveCrop(_MultiCrop):
    """The four corner windows and the centred one, of ``size``, as a tuple."""

    _v1_transform_cls = _v1.FiveCrop

    def transform(self, inpt, params):
        return self._call_kernel(F.five_crop, inpt, self.size)


class TenCrop(_MultiCrop):
    """``FiveCrop`` of the input and of its horizontal (or, with ``vertical_flip``, vertical) mirror image."""

    _v1_transform_cls = _v1.TenCrop

    def __init__(self, size, vertical_flip=False):
        super().__init__(size)
        self.vertical_flip = vertical_flip

    def transform(self, inpt, params):
        return self._call_kernel(F.ten_crop, inpt, self.size, vertical_flip=self.vertical_flip)


class Pad(Transform):
    """Pad the borders by ``padding`` (an int, or 1, 2 or 4 of them: left, top, right, bottom). ``fill`` may be a
    dict from input type to its fill value; boxes and key points allow constant padding only."""

    _v1_transform_cls = _v1.Pad

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        _check_padding_arg(padding)
        _check_padding_mode_arg(padding_mode)
        self.padding = padding if isinstance(padding, int) else list(padding)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.pad, inpt, padding=self.padding, fill=fill, padding_mode=self.padding_mode)


class RandomZoomOut(_RandomApplyTransform):
    """SSD's zoom out: with probability ``p``, place the sample at a random spot of a canvas ``r`` times larger,
    ``r`` uniform in ``side_range``, filled with ``fill`` (a value or a dict from input type to value)."""

    def __init__(self, fill=0, side_range=(1.0, 4.0), p=0.5):
        super().__init__(p=p)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        _check_sequence_input(side_range, "side_range", req_sizes=(2,))
        self.side_range = side_range
        if side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ValueError(f"Invalid side range provided {side_range}.")

    def make_params(self, flat_inputs):
        orig_h, orig_w = query_size(flat_inputs)
        low, high = self.side_range
        r = low + engine.rand(1) * (high - low)
        canvas_width, canvas_height = int(orig_w * r), int(orig_h * r)
        r = engine.rand(2)
        left = int((canvas_width - orig_w) * r[0])
        top = int((canvas_height - orig_h) * r[1])
        right = canvas_width - (left + orig_w)
        bottom = canvas_height - (top + orig_h)
        return dict(padding=[left, top, right, bottom])

    def transform(self, inpt, params):
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.pad, inpt, **params, fill=fill)


class RandomCrop(Transform):
    """Cut a window of ``size`` at a random place, after the optional ``padding`` and, with ``pad_if_needed``,
    after padding both sides of an edge shorter than the window by the shortfall."""

    _v1_transform_cls = _v1.RandomCrop

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = _setup_size(size, error_msg=_SIZE_ERROR)
        if pad_if_needed or padding is not None:
            if padding is not None:
                _check_padding_arg(padding)
            _check_padding_mode_arg(padding_mode)
        self.padding = _parse_pad_padding(padding) if padding else None  # left, right, top, bottom
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def _padding(self, height, width):
        """[left, top, right, bottom] padding and the padded (height, width)."""
        left, right, top, bottom = self.padding if self.padding is not None else [0, 0, 0, 0]
        height, width = height + top + bottom, width + left + right
        crop_height, crop_width = self.size
        if self.pad_if_needed and height < crop_height:
            diff = crop_height - height
            top, bottom, height = top + diff, bottom + diff, height + 2 * diff
        if self.pad_if_needed and width < crop_width:
            diff = crop_width - width
            left, right, width = left + diff, right + diff, width + 2 * diff
        if height < crop_height or width < crop_width:
            padded = "padded " if self.padding is not None else ""
            raise ValueError(f"Required crop size {(crop_height, crop_width)} is larger than {padded}input image "
                             f"size {(height, width)}.")
        return [left, top, right, bottom], height, width

    def make_params(self, flat_inputs):
        padding, height, width = self._padding(*query_size(flat_inputs))
        crop_height, crop_width = self.size
        top = int(engine.randint(0, height - crop_height + 1, size=())) if height > crop_height else 0
        left = int(engine.randint(0, width - crop_width + 1, size=())) if width > crop_width else 0
        return dict(needs_crop=height > crop_height or width > crop_width, top=top, left=left, height=crop_height,
                    width=crop_width, needs_pad=any(padding), padding=padding)

    def transform(self, inpt, params):
        if params["needs_pad"]:
            fill = _get_fill(self._fill, type(inpt))
            inpt = self._call_kernel(F.pad, inpt, padding=params["padding"], fill=fill, padding_mode=self.padding_mode)
        if params["needs_crop"]:
            inpt = self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"], height=params["height"],
                                     width=params["width"])
        return inpt


class RandomIoUCrop(Transform):
    """SSD's IoU crop: draw a minimum IoU from ``sampler_options`` (1.0 or more keeps the sample), then up to
    ``trials`` windows of random scale and aspect ratio until one holds a box centre and overlaps such a box
    at least that much; draw again otherwise.

    The sample is cropped to the window; boxes whose centre lies outside it become all-zero (degenerate) but stay:
    ``SanitizeBoundingBoxes`` removes them with their labels. Rotated boxes raise torchvision's ValueError at the
    first window tested (a sample kept as is by the draw never gets there).
    """

    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5, max_aspect_ratio=2.0,
                 sampler_options=None, trials=40):
        super().__init__()
        self.min_scale = min_scale
        self.max_scale = max_scale
        self.min_aspect_ratio = min_aspect_ratio
        self.max_aspect_ratio = max_aspect_ratio
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0] if sampler_options is None else sampler_options
        self.trials = trials

    def check_inputs(self, flat_inputs):
        if not (has_all(flat_inputs, tv_tensors.BoundingBoxes)
                and has_any(flat_inputs, PIL.Image.Image, tv_tensors.Image, is_pure_tensor)):
            raise TypeError(f"{type(self).__name__}() requires input sample to contain tensor or PIL images "
                            "and bounding boxes. Sample can also contain masks.")

    def _draw_window(self, orig_h, orig_w):
        """(top, left, height, width) of a window within the aspect ratio bounds, or None."""
        # float32 arithmetic on the host, as torch's on its draws (numpy keeps Python scalars in float32 too)
        r = self.min_scale + (self.max_scale - self.min_scale) * engine.rand(2).numpy()
        new_w, new_h = int(orig_w * r[0]), int(orig_h * r[1])
        if not self.min_aspect_ratio <= new_w / new_h <= self.max_aspect_ratio:
            return None
        r = engine.rand(2).numpy()
        left, top = int((orig_w - new_w) * r[0]), int((orig_h - new_h) * r[1])
        if new_w == 0 or new_h == 0:
            return None
        return top, left, new_h, new_w

    @staticmethod
    def _window_iou(xyxy, top, left, height, width):
        """IoU of host boxes [N, 4] (x1, y1, x2, y2) with the window, in the boxes' arithmetic as torch's ``box_iou``
        computes it (integer boxes divided in float32, torch's default type)."""
        window = np.array([left, top, left + width, top + height], dtype=xyxy.dtype)
        wh = np.clip(np.minimum(xyxy[:, 2:], window[2:]) - np.maximum(xyxy[:, :2], window[:2]), 0, None)
        inter = wh[:, 0] * wh[:, 1]
        union = (xyxy[:, 2] - xyxy[:, 0]) * (xyxy[:, 3] - xyxy[:, 1]) + (window[2] - window[0]) * (
            window[3] - window[1]) - inter
        if not np.issubdtype(xyxy.dtype, np.floating):
            inter, union = inter.astype(np.float32), union.astype(np.float32)
        return inter / union

    @staticmethod
    def _boxes_on_host(boxes):
        """(XYXY boxes as a tensor, the same [N, 4] on the host, their centres' x and y). Rotated boxes raise
        torchvision's ValueError here: they have no XYXY form."""
        xyxy_tensor = F.convert_bounding_box_format(boxes.as_subclass(engine.Tensor), boxes.format,
                                                    tv_tensors.BoundingBoxFormat.XYXY)
        # the trials test their windows on the host: as engine ops on a few boxes they cost ~40 engine calls each
        # (make_params on the bench's detection sample, mean over seeds 0-39: 31 ms so, 2.9 ms here)
        xyxy = xyxy_tensor.cpu().numpy().reshape(-1, 4)
        return xyxy_tensor, xyxy, 0.5 * (xyxy[:, 0] + xyxy[:, 2]), 0.5 * (xyxy[:, 1] + xyxy[:, 3])

    def make_params(self, flat_inputs):
        orig_h, orig_w = query_size(flat_inputs)
        boxes = get_bounding_boxes(flat_inputs)
        host = None  # converted at the first window to test, where torchvision converts (and refuses rotated boxes)
        while True:
            min_jaccard_overlap = self.options[int(engine.randint(low=0, high=len(self.options), size=(1,)))]
            if min_jaccard_overlap >= 1.0:
                return dict()
            for _ in range(self.trials):
                window = self._draw_window(orig_h, orig_w)
                if window is None:
                    continue
                top, left, height, width = window
                if host is None:
                    host = self._boxes_on_host(boxes)
                xyxy_tensor, xyxy, cx, cy = host
                within = (left < cx) & (cx < left + width) & (top < cy) & (cy < top + height)
                if not within.any():
                    continue
                if self._window_iou(xyxy[within], top, left, height, width).max() < min_jaccard_overlap:
                    continue
                # the mask is put where the boxes are (a CUDA sample's boxes stay on the device)
                is_within = engine.from_numpy(within.reshape(xyxy_tensor.shape[:-1])).to(xyxy_tensor.device)
                return dict(top=top, left=left, height=height, width=width, is_within_crop_area=is_within)

    def transform(self, inpt, params):
        if not params:
            return inpt
        output = self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"], height=params["height"],
                                   width=params["width"])
        if isinstance(output, tv_tensors.BoundingBoxes):
            output[~params["is_within_crop_area"]] = 0
        return output


class ScaleJitter(Transform):
    """Large scale jitter (Copy-Paste): resize by a random factor in ``scale_range`` of the scale that fits the
    input into ``target_size`` (given as (height, width))."""

    def __init__(self, target_size, scale_range=(0.1, 2.0), interpolation="bilinear", antialias=True):
        super().__init__()
        self.target_size = target_size
        self.scale_range = scale_range
        self.interpolation = interpolation
        self.antialias = antialias

    def make_params(self, flat_inputs):
        orig_height, orig_width = query_size(flat_inputs)
        low, high = self.scale_range
        scale = low + engine.rand(1) * (high - low)
        r = min(self.target_size[1] / orig_height, self.target_size[0] / orig_width) * scale
        return dict(size=(int(orig_height * r), int(orig_width * r)))

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, size=params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


class RandomShortestSize(Transform):
    """Resize so that the shorter edge is a random choice of ``min_size`` (the longer edge at most
    ``max_size``)."""

    def __init__(self, min_size, max_size=None, interpolation="bilinear", antialias=True):
        super().__init__()
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size = max_size
        self.interpolation = interpolation
        self.antialias = antialias

    def make_params(self, flat_inputs):
        orig_height, orig_width = query_size(flat_inputs)
        min_size = self.min_size[int(engine.randint(len(self.min_size), ()))]
        r = min_size / min(orig_height, orig_width)
        if self.max_size is not None:
            r = min(r, self.max_size / max(orig_height, orig_width))
        return dict(size=(int(orig_height * r), int(orig_width * r)))

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, size=params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


class RandomResize(Transform):
    """Resize the shorter edge to a random size in [``min_size``, ``max_size``)."""

    def __init__(self, min_size, max_size, interpolation="bilinear", antialias=True):
        super().__init__()
        self.min_size = min_size
        self.max_size = max_size
        self.interpolation = interpolation
        self.antialias = antialias

    def make_params(self, flat_inputs):
        return dict(size=[int(engine.randint(self.min_size, self.max_size, ()))])

    def transform(self, inpt, params):
        return self._call_kernel(F.resize, inpt, params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)
