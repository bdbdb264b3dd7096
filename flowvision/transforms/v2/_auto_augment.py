"""The v2 automatic augmentation policies: AutoAugment, RandAugment, TrivialAugmentWide and AugMix.

They take a sample holding one image or video (tensor, ``Image``, ``Video`` or PIL) and other non-spatial
parts (labels pass through); bounding boxes, masks and key points are refused with a TypeError, as torchvision
refuses them. The draws are torchvision v2's (which differ from v1's: scalar ``randint``s, ``rand() <= p``
coins, solarize thresholds as fractions of the value range), so a seeded engine picks torchvision's ops and
magnitudes. The geometric ops run the v1 functionals on images; colour ops the v2 ones.
"""
import math

import numpy as np
import PIL.Image

import engine

from ... import tv_tensors
from .. import autoaugment as _v1
from .. import functional as _F1
from ..autoaugment import _POLICIES, AutoAugmentPolicy, _linspace, _posterize_bins, _sample_dirichlet
from . import functional as F
from ._pytree import tree_flatten, tree_unflatten
from ._transform import Transform
from ._utils import _get_fill, _setup_fill_arg, check_type
from .functional._geometry import _check_interpolation
from .functional._meta import get_size
from .functional._utils import is_pure_tensor

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _coin(p):
    """``torch.rand(()) <= p`` (compared in float32)."""
    return engine.rand(()).item() <= float(np.float32(p))


def _randint(high):
    """``int(torch.randint(high, ()))``."""
    return int(engine.randint(high, ()).item())


def _linear(stop, start=0.0):
    """Magnitudes ``linspace(start, stop, num_bins)`` (float32, as torch rounds them)."""
    return lambda num_bins, height, width: _linspace(start, stop, num_bins)


def _none(num_bins, height, width):
    return None


_COLOR_OPS = {name: (_linear(0.9), True) for name in ("Brightness", "Color", "Contrast", "Sharpness")}
_SHARED_TAIL = {
    "Posterize": (lambda num_bins, height, width: _posterize_bins(num_bins, 4), False),
    "Solarize": (_linear(0.0, start=1.0), False),
    "AutoContrast": (_none, False),
    "Equalize": (_none, False),
}
_RAND_AUGMENT_SPACE = {
    "Identity": (_none, False),
    "ShearX": (_linear(0.3), True),
    "ShearY": (_linear(0.3), True),
    "TranslateX": (lambda num_bins, height, width: _linspace(0.0, 150.0 / 331.0 * width, num_bins), True),
    "TranslateY": (lambda num_bins, height, width: _linspace(0.0, 150.0 / 331.0 * height, num_bins), True),
    "Rotate": (_linear(30.0), True),
    **_COLOR_OPS,
    **_SHARED_TAIL,
}


class _AutoAugmentBase(Transform):
    """Finds the one image or video of the sample, applies named ops to it and puts it back."""

    def __init__(self, *, interpolation="nearest", fill=None):
        super().__init__()
        self.interpolation = interpolation
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def _get_random_item(self, dct):
        """A uniformly drawn (key, value) of ``dct``."""
        keys = tuple(dct)
        key = keys[_randint(len(keys))]
        return key, dct[key]

    def _flatten_and_extract_image_or_video(self, inputs, unsupported_types=(
            tv_tensors.BoundingBoxes, tv_tensors.Mask, tv_tensors.KeyPoints)):
        """((flat sample, spec, index of the image), the image or video)."""
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        needs = self._needs_transform_list(flat_inputs)
        found = []
        image_types = (tv_tensors.Image, PIL.Image.Image, is_pure_tensor, tv_tensors.Video)
        for idx, (inpt, need) in enumerate(zip(flat_inputs, needs)):
            if need and check_type(inpt, image_types):
                found.append((idx, inpt))
            elif isinstance(inpt, unsupported_types):
                raise TypeError(f"Inputs of type {type(inpt).__name__} are not supported by {type(self).__name__}()")
        if not found:
            raise TypeError("Found no image in the sample.")
        if len(found) > 1:
            raise TypeError(f"Auto augment transformations are only properly defined for a single image or video, "
                            f"but found {len(found)}.")
        idx, image_or_video = found[0]
        return (flat_inputs, spec, idx), image_or_video

    @staticmethod
    def _unflatten_and_insert_image_or_video(flat_inputs_with_spec, image_or_video):
        flat_inputs, spec, idx = flat_inputs_with_spec
        flat_inputs[idx] = image_or_video
        return tree_unflatten(flat_inputs, spec)

    def _draw_magnitude(self, magnitudes_fn, signed, num_bins, height, width, index):
        """The op's magnitude: bin ``index()`` of its table, negated on a coin (signed ops); 0 without a table."""
        magnitudes = magnitudes_fn(num_bins, height, width)
        if magnitudes is None:
            return 0.0
        magnitude = float(magnitudes[index()])
        if signed and _coin(0.5):
            magnitude *= -1
        return magnitude

    def _apply_image_or_video_transform(self, image, transform_id, magnitude, interpolation, fill):
        """``image`` through the named op with ``magnitude``."""
        fill_ = _get_fill(fill, type(image))
        if transform_id == "Identity":
            return image
        if transform_id in _GEOMETRIC_OPS:
            return _geometric(image, _GEOMETRIC_OPS[transform_id](magnitude), _check_interpolation(interpolation),
                              fill_)
        if transform_id == "Solarize":
            bound = _F1._max_value(_F1._arr(image).dtype) if isinstance(image, engine.Tensor) else 255.0
            return F.solarize(image, threshold=bound * magnitude)
        if transform_id not in _COLOR_FUNCTIONALS:
            raise ValueError(f"No transform available for {transform_id}")
        return _COLOR_FUNCTIONALS[transform_id](image, magnitude)


def _shear(magnitude, axis):
    shear = [0.0, 0.0]
    shear[axis] = math.degrees(math.atan(magnitude))
    return dict(angle=0.0, translate=[0, 0], scale=1.0, shear=shear, center=[0, 0])


def _translate(magnitude, axis):
    translate = [0, 0]
    translate[axis] = int(magnitude)
    return dict(angle=0.0, translate=translate, scale=1.0, shear=[0.0, 0.0])


_GEOMETRIC_OPS = {
    "ShearX": lambda m: _shear(m, 0),
    "ShearY": lambda m: _shear(m, 1),
    "TranslateX": lambda m: _translate(m, 0),
    "TranslateY": lambda m: _translate(m, 1),
    "Rotate": lambda m: dict(angle=m),
}

_COLOR_FUNCTIONALS = {
    "Brightness": lambda image, m: F.adjust_brightness(image, brightness_factor=1.0 + m),
    "Color": lambda image, m: F.adjust_saturation(image, saturation_factor=1.0 + m),
    "Contrast": lambda image, m: F.adjust_contrast(image, contrast_factor=1.0 + m),
    "Sharpness": lambda image, m: F.adjust_sharpness(image, sharpness_factor=1.0 + m),
    "Posterize": lambda image, m: F.posterize(image, bits=int(m)),
    "AutoContrast": lambda image, m: F.autocontrast(image),
    "Equalize": lambda image, m: F.equalize(image),
    "Invert": lambda image, m: F.invert(image),
}


def _geometric(image, args, interpolation, fill):
    """A rotation (``args`` has only the angle) or affine map of an image or video with the v1 functionals,
    keeping the input's tv_tensor type; a number ``fill`` of a tensor is repeated per channel."""
    plain = image.as_subclass(engine.Tensor) if isinstance(image, tv_tensors.TVTensor) else image
    if isinstance(plain, engine.Tensor) and isinstance(fill, (int, float)):
        fill = [float(fill)] * plain.shape[-3]
    if len(args) == 1:
        out = _F1.rotate(plain, args["angle"], interpolation=interpolation, fill=fill)
    else:
        out = _F1.affine(plain, interpolation=interpolation, fill=fill, **args)
    return tv_tensors.wrap(out, like=image) if isinstance(image, tv_tensors.TVTensor) else out


class AutoAugment(_AutoAugmentBase):
    """AutoAugment (Cubuk et al., 2019): one of the ``policy``'s sub-policies, each a pair of (op, probability,
    magnitude bin), per call."""

    _v1_transform_cls = _v1.AutoAugment
    _AUGMENTATION_SPACE = {key: value for key, value in _RAND_AUGMENT_SPACE.items() if key != "Identity"}
    _AUGMENTATION_SPACE["Invert"] = (_none, False)

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation="nearest", fill=None):
        super().__init__(interpolation=interpolation, fill=fill)
        self.policy = policy
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self._policies = _POLICIES[policy]

    def forward(self, *inputs):
        flat_inputs_with_spec, image_or_video = self._flatten_and_extract_image_or_video(inputs)
        height, width = get_size(image_or_video)
        policy = self._policies[_randint(len(self._policies))]
        for transform_id, probability, magnitude_idx in policy:
            if not _coin(probability):
                continue
            magnitudes_fn, signed = self._AUGMENTATION_SPACE[transform_id]
            magnitude = self._draw_magnitude(magnitudes_fn, signed, 10, height, width, lambda: magnitude_idx)
            image_or_video = self._apply_image_or_video_transform(
                image_or_video, transform_id, magnitude, interpolation=self.interpolation, fill=self._fill)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, image_or_video)


class RandAugment(_AutoAugmentBase):
    """RandAugment (Cubuk et al., 2020): ``num_ops`` uniformly drawn ops, each at bin ``magnitude`` of
    ``num_magnitude_bins``."""

    _v1_transform_cls = _v1.RandAugment
    _AUGMENTATION_SPACE = _RAND_AUGMENT_SPACE

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation="nearest", fill=None):
        super().__init__(interpolation=interpolation, fill=fill)
        if not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"num_ops should be a non-negative integer, but got {num_ops} instead.")
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, *inputs):
        flat_inputs_with_spec, image_or_video = self._flatten_and_extract_image_or_video(inputs)
        height, width = get_size(image_or_video)
        for _ in range(self.num_ops):
            transform_id, (magnitudes_fn, signed) = self._get_random_item(self._AUGMENTATION_SPACE)
            magnitude = self._draw_magnitude(magnitudes_fn, signed, self.num_magnitude_bins, height, width,
                                             lambda: self.magnitude)
            image_or_video = self._apply_image_or_video_transform(
                image_or_video, transform_id, magnitude, interpolation=self.interpolation, fill=self._fill)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, image_or_video)


class TrivialAugmentWide(_AutoAugmentBase):
    """TrivialAugment (Müller and Hutter, 2021): one uniformly drawn op at a uniformly drawn magnitude bin, over
    wider ranges than RandAugment's."""

    _v1_transform_cls = _v1.TrivialAugmentWide

    _AUGMENTATION_SPACE = {
        "Identity": (_none, False),
        "ShearX": (_linear(0.99), True),
        "ShearY": (_linear(0.99), True),
        "TranslateX": (_linear(32.0), True),
        "TranslateY": (_linear(32.0), True),
        "Rotate": (_linear(135.0), True),
        **{name: (_linear(0.99), True) for name in ("Brightness", "Color", "Contrast", "Sharpness")},
        **_SHARED_TAIL,
        "Posterize": (lambda num_bins, height, width: _posterize_bins(num_bins, 6), False),
    }

    def __init__(self, num_magnitude_bins=31, interpolation="nearest", fill=None):
        super().__init__(interpolation=interpolation, fill=fill)
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, *inputs):
        flat_inputs_with_spec, image_or_video = self._flatten_and_extract_image_or_video(inputs)
        height, width = get_size(image_or_video)
        transform_id, (magnitudes_fn, signed) = self._get_random_item(self._AUGMENTATION_SPACE)
        magnitude = self._draw_magnitude(magnitudes_fn, signed, self.num_magnitude_bins, height, width,
                                         lambda: _randint(self.num_magnitude_bins))
        image_or_video = self._apply_image_or_video_transform(
            image_or_video, transform_id, magnitude, interpolation=self.interpolation, fill=self._fill)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, image_or_video)


class AugMix(_AutoAugmentBase):
    """AugMix (Hendrycks et al., 2020): the image mixed (Beta(alpha, alpha) weight) with a Dirichlet-weighted
    mix of ``mixture_width`` chains of 1-3 (or ``chain_depth``) random ops of strength up to ``severity``."""

    _v1_transform_cls = _v1.AugMix

    _PARTIAL_AUGMENTATION_SPACE = {
        "ShearX": (_linear(0.3), True),
        "ShearY": (_linear(0.3), True),
        "TranslateX": (lambda num_bins, height, width: _linspace(0.0, width / 3.0, num_bins), True),
        "TranslateY": (lambda num_bins, height, width: _linspace(0.0, height / 3.0, num_bins), True),
        "Rotate": (_linear(30.0), True),
        "Posterize": (lambda num_bins, height, width: _posterize_bins(num_bins, 4) - 4, False),
        "Solarize": (_linear(0.0, start=1.0), False),
        "AutoContrast": (_none, False),
        "Equalize": (_none, False),
    }
    _AUGMENTATION_SPACE = {**_PARTIAL_AUGMENTATION_SPACE, **_COLOR_OPS}

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation="bilinear", fill=None):
        super().__init__(interpolation=interpolation, fill=fill)
        self._PARAMETER_MAX = 10
        if not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops

    def _sample_dirichlet(self, params):
        """Dirichlet rows as torch._sample_dirichlet draws them (a method, so tests can replace it)."""
        return _sample_dirichlet(params)

    def _augmented_chain(self, batch, space, height, width):
        """``batch`` through 1-3 (or ``chain_depth``) random ops."""
        aug = batch
        depth = self.chain_depth if self.chain_depth > 0 else int(engine.randint(low=1, high=4, size=(1,)).item())
        for _ in range(depth):
            transform_id, (magnitudes_fn, signed) = self._get_random_item(space)
            magnitude = self._draw_magnitude(magnitudes_fn, signed, self._PARAMETER_MAX, height, width,
                                             lambda: _randint(self.severity))
            aug = self._apply_image_or_video_transform(aug, transform_id, magnitude,
                                                       interpolation=self.interpolation, fill=self._fill)
        return aug

    def forward(self, *inputs):
        flat_inputs_with_spec, orig = self._flatten_and_extract_image_or_video(inputs)
        height, width = get_size(orig)
        image_or_video = orig if isinstance(orig, engine.Tensor) else _F1.pil_to_tensor(orig)
        space = self._AUGMENTATION_SPACE if self.all_ops else self._PARTIAL_AUGMENTATION_SPACE

        orig_dims = list(image_or_video.shape)
        expected_ndim = 5 if isinstance(orig, tv_tensors.Video) else 4
        batch = image_or_video.as_subclass(engine.Tensor).reshape(
            [1] * max(expected_ndim - image_or_video.ndim, 0) + orig_dims)
        n = batch.shape[0]
        batch_dims = [n] + [1] * (batch.ndim - 1)

        m = self._sample_dirichlet(engine.tensor([self.alpha, self.alpha], device=batch.device).expand(n, -1))
        combined_weights = self._sample_dirichlet(
            engine.tensor([self.alpha] * self.mixture_width, device=batch.device).expand(n, -1)
        ) * m[:, 1].reshape([n, -1])

        mix = m[:, 0].reshape(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = self._augmented_chain(batch, space, height, width)
            mix.add_(combined_weights[:, i].reshape(batch_dims) * aug)
        mix = mix.reshape(orig_dims).to(dtype=image_or_video.dtype)

        if isinstance(orig, (tv_tensors.Image, tv_tensors.Video)):
            mix = tv_tensors.wrap(mix, like=orig)
        elif isinstance(orig, PIL.Image.Image):
            mix = _F1.to_pil_image(mix)
        return self._unflatten_and_insert_image_or_video(flat_inputs_with_spec, mix)
