"""The v2 colour transforms: grayscale, RGB, colour jitter, channel permutation, photometric distortion and
the random (probability ``p``) equalize, invert, posterize, solarize, autocontrast and sharpness.

They change images and videos only; masks, boxes, key points and labels pass through. Random parameters are
drawn as torchvision draws them (same calls, same order), so a seeded engine gives torchvision's output.
"""
import collections.abc

import engine

from .. import transforms as _v1
from ..transforms import _torch_coin, _torch_uniform
from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import query_chw

__all__ = ["Grayscale", "RandomGrayscale", "RGB", "ColorJitter", "RandomChannelPermutation",
           "RandomPhotometricDistort", "RandomEqualize", "RandomInvert", "RandomPosterize", "RandomSolarize",
           "RandomAutocontrast", "RandomAdjustSharpness"]


class Grayscale(Transform):
    """Convert images and videos ([..., 1 or 3, H, W]) to grayscale with ``num_output_channels`` (1 or 3)."""

    _v1_transform_cls = _v1.Grayscale

    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def transform(self, inpt, params):
        return self._call_kernel(F.rgb_to_grayscale, inpt, num_output_channels=self.num_output_channels)


class RandomGrayscale(_RandomApplyTransform):
    """With probability ``p``, convert to grayscale keeping the number of channels."""

    _v1_transform_cls = _v1.RandomGrayscale

    def __init__(self, p=0.1):
        super().__init__(p=p)

    def make_params(self, flat_inputs):
        num_input_channels, *_ = query_chw(flat_inputs)
        return dict(num_input_channels=num_input_channels)

    def transform(self, inpt, params):
        return self._call_kernel(F.rgb_to_grayscale, inpt, num_output_channels=params["num_input_channels"])


class RGB(Transform):
    """Give single-channel images and videos three channels (RGB inputs are left as they are)."""

    def transform(self, inpt, params):
        return self._call_kernel(F.grayscale_to_rgb, inpt)


def _jitter_range(value, name, center=1.0, bound=(0, float("inf")), clip_first_on_zero=True):
    """``value`` (a spread around ``center``, or a [min, max] pair) as a (min, max) tuple of floats; None when
    it leaves the image unchanged."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        value = [center - value, center + value]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, collections.abc.Sequence) and len(value) == 2:
        value = [float(v) for v in value]
    else:
        raise TypeError(f"{name}={value} should be a single number or a sequence with length 2.")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"{name} values should be between {bound} and increasing, but got {value}.")
    return None if value[0] == value[1] == center else (float(value[0]), float(value[1]))


class ColorJitter(Transform):
    """Change brightness, contrast, saturation and hue by random factors, in a random order.

    Each argument is a spread (factors from [max(0, 1 - v), 1 + v]; for hue [-v, v], v <= 0.5) or a
    (min, max) range; None leaves that property alone.
    """

    _v1_transform_cls = _v1.ColorJitter

    def __init__(self, brightness=None, contrast=None, saturation=None, hue=None):
        super().__init__()
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _generate_value(left, right):
        """One factor, uniform in [left, right] (torch.empty(1).uniform_)."""
        return float(_torch_uniform(left, right))

    def make_params(self, flat_inputs):
        fn_idx = engine.randperm(4)
        factors = [None if r is None else self._generate_value(r[0], r[1])
                   for r in (self.brightness, self.contrast, self.saturation, self.hue)]
        return dict(zip(("brightness_factor", "contrast_factor", "saturation_factor", "hue_factor"), factors),
                    fn_idx=fn_idx)

    def transform(self, inpt, params):
        steps = ((F.adjust_brightness, "brightness_factor"), (F.adjust_contrast, "contrast_factor"),
                 (F.adjust_saturation, "saturation_factor"), (F.adjust_hue, "hue_factor"))
        output = inpt
        for fn_id in params["fn_idx"].tolist():
            functional, name = steps[fn_id]
            if params[name] is not None:
                output = self._call_kernel(functional, output, **{name: params[name]})
        return output


class RandomChannelPermutation(Transform):
    """Shuffle the channels of images and videos (one random permutation per call)."""

    def make_params(self, flat_inputs):
        num_channels, *_ = query_chw(flat_inputs)
        return dict(permutation=engine.randperm(num_channels))

    def transform(self, inpt, params):
        return self._call_kernel(F.permute_channels, inpt, params["permutation"])


class RandomPhotometricDistort(Transform):
    """SSD's photometric distortion: each of brightness, contrast, saturation and hue changed with probability
    ``p`` by a factor from its range, contrast before or after the rest at random, and the channels shuffled
    with probability ``p``."""

    def __init__(self, brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
                 p=0.5):
        super().__init__()
        self.brightness = brightness
        self.contrast = contrast
        self.hue = hue
        self.saturation = saturation
        self.p = p

    def _maybe_factor(self, value_range):
        """A factor from ``value_range`` with probability p (the coin is drawn first), else None."""
        return ColorJitter._generate_value(value_range[0], value_range[1]) if _torch_coin(self.p) else None

    def make_params(self, flat_inputs):
        num_channels, *_ = query_chw(flat_inputs)
        params = {name: self._maybe_factor(value_range) for name, value_range in (
            ("brightness_factor", self.brightness), ("contrast_factor", self.contrast),
            ("saturation_factor", self.saturation), ("hue_factor", self.hue))}
        params["contrast_before"] = _torch_coin(0.5)
        params["channel_permutation"] = engine.randperm(num_channels) if _torch_coin(self.p) else None
        return params

    def _adjust(self, functional, inpt, name, params):
        factor = params[name]
        return inpt if factor is None else self._call_kernel(functional, inpt, **{name: factor})

    def transform(self, inpt, params):
        inpt = self._adjust(F.adjust_brightness, inpt, "brightness_factor", params)
        if params["contrast_before"]:
            inpt = self._adjust(F.adjust_contrast, inpt, "contrast_factor", params)
        inpt = self._adjust(F.adjust_saturation, inpt, "saturation_factor", params)
        inpt = self._adjust(F.adjust_hue, inpt, "hue_factor", params)
        if not params["contrast_before"]:
            inpt = self._adjust(F.adjust_contrast, inpt, "contrast_factor", params)
        if params["channel_permutation"] is not None:
            inpt = self._call_kernel(F.permute_channels, inpt, permutation=params["channel_permutation"])
        return inpt


class RandomEqualize(_RandomApplyTransform):
    """With probability ``p``, equalize the histogram of each channel."""

    _v1_transform_cls = _v1.RandomEqualize

    def transform(self, inpt, params):
        return self._call_kernel(F.equalize, inpt)


class RandomInvert(_RandomApplyTransform):
    """With probability ``p``, invert the colours."""

    _v1_transform_cls = _v1.RandomInvert

    def transform(self, inpt, params):
        return self._call_kernel(F.invert, inpt)


class RandomPosterize(_RandomApplyTransform):
    """With probability ``p``, keep ``bits`` bits (0-8) per channel."""

    _v1_transform_cls = _v1.RandomPosterize

    def __init__(self, bits, p=0.5):
        super().__init__(p=p)
        self.bits = bits

    def transform(self, inpt, params):
        return self._call_kernel(F.posterize, inpt, bits=self.bits)


class RandomSolarize(_RandomApplyTransform):
    """With probability ``p``, invert the values at or above ``threshold``."""

    _v1_transform_cls = _v1.RandomSolarize

    def __init__(self, threshold, p=0.5):
        super().__init__(p=p)
        self.threshold = threshold

    def transform(self, inpt, params):
        return self._call_kernel(F.solarize, inpt, threshold=self.threshold)


class RandomAutocontrast(_RandomApplyTransform):
    """With probability ``p``, stretch each channel to the full value range."""

    _v1_transform_cls = _v1.RandomAutocontrast

    def transform(self, inpt, params):
        return self._call_kernel(F.autocontrast, inpt)


class RandomAdjustSharpness(_RandomApplyTransform):
    """With probability ``p``, sharpen (factor > 1) or blur (factor < 1) by ``sharpness_factor``."""

    _v1_transform_cls = _v1.RandomAdjustSharpness

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p=p)
        self.sharpness_factor = sharpness_factor

    def transform(self, inpt, params):
        return self._call_kernel(F.adjust_sharpness, inpt, sharpness_factor=self.sharpness_factor)
