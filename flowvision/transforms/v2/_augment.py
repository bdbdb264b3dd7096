"""The v2 augmentations: RandomErasing, the batch mixers MixUp and CutMix, and JPEG compression.

Random parameters are drawn as torchvision draws them (same calls, same order): MixUp's and CutMix's Beta
sample goes through torch's Dirichlet sampler, reproduced in the v1 AugMix.
"""
import math
import numbers

import PIL.Image

import engine
from engine.nn.functional import one_hot

from ... import tv_tensors
from .. import transforms as _v1
from ..autoaugment import _sample_dirichlet
from ..transforms import _scaled_log_uniform_crop, _torch_log_ratio, _torch_randint
from . import functional as F
from ._pytree import tree_flatten, tree_unflatten
from ._transform import Transform, _RandomApplyTransform
from ._utils import _check_sequence_input, _parse_labels_getter, has_any, query_chw, query_size
from .functional._utils import is_pure_tensor

__all__ = ["RandomErasing", "MixUp", "CutMix", "JPEG"]


def _erasing_value(value):
    """RandomErasing's ``value`` as a list of floats, or None for 'random' (normal noise)."""
    if not isinstance(value, (numbers.Number, str, tuple, list)):
        raise TypeError("Argument value should be either a number or str or a sequence")
    if isinstance(value, str):
        if value != "random":
            raise ValueError("If value is str, it should be 'random'")
        return None
    if isinstance(value, (tuple, list)):
        return [float(v) for v in value]
    return [float(value)]


class RandomErasing(_RandomApplyTransform):
    """With probability ``p``, erase a random rectangle of images and videos (Zhong et al., 2017).

    The rectangle covers a ``scale`` fraction of the area with an aspect ratio from ``ratio`` (log-uniform);
    it is filled with ``value`` (a number, one per channel, or "random" for normal noise). Masks, boxes and key
    points pass through, with a warning.
    """

    _v1_transform_cls = _v1.RandomErasing
    _warned_passthrough_types = (tv_tensors.BoundingBoxes, tv_tensors.KeyPoints, tv_tensors.Mask)

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0.0, inplace=False):
        super().__init__(p=p)
        value = _erasing_value(value)
        _v1._check_erasing_ranges(scale, ratio)
        self.scale = scale
        self.ratio = ratio
        self.value = value
        self.inplace = inplace
        self._log_ratio = _torch_log_ratio(ratio)

    def _fill(self, channels, h, w):
        if self.value is None:
            return engine.empty([channels, h, w], dtype=engine.float32).normal_()
        return engine.tensor(self.value)[:, None, None]

    def make_params(self, flat_inputs):
        img_c, img_h, img_w = query_chw(flat_inputs)
        if self.value is not None and len(self.value) not in (1, img_c):
            raise ValueError(f"If value is a sequence, it should have either a single value or {img_c} "
                             f"(number of inpt channels)")
        for _ in range(10):
            erase_area, aspect_ratio = _scaled_log_uniform_crop(img_h * img_w, self.scale, self._log_ratio)
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if h < img_h and w < img_w:
                v = self._fill(img_c, h, w)
                i = _torch_randint(0, img_h - h + 1)
                j = _torch_randint(0, img_w - w + 1)
                return dict(i=i, j=j, h=h, w=w, v=v)
        return dict(i=0, j=0, h=img_h, w=img_w, v=None)

    def transform(self, inpt, params):
        if params["v"] is None:
            return inpt
        return self._call_kernel(F.erase, inpt, **params, inplace=self.inplace)


class _BaseMixUpCutMix(Transform):
    """Mixes each sample of a batch with the previous one (the batch rolled by one); the labels, one-hot
    encoded, are mixed in the same proportion."""

    def __init__(self, *, alpha=1.0, num_classes=None, labels_getter="default"):
        super().__init__()
        self.alpha = float(alpha)
        self.num_classes = num_classes
        self._labels_getter = _parse_labels_getter(labels_getter)

    def _sample_lam(self):
        """A Beta(alpha, alpha) sample as torch.distributions.Beta draws it: the first part of a Dirichlet."""
        concentration = engine.tensor([[self.alpha, self.alpha]], dtype=engine.float32)
        return float(_sample_dirichlet(concentration)[0, 0])

    def _check_labels(self, labels):
        if not isinstance(labels, engine.Tensor):
            raise ValueError(f"The labels must be a tensor, but got {type(labels)} instead.")
        if labels.ndim not in (1, 2):
            raise ValueError(f"labels should be index based with shape (batch_size,) or probability based with "
                             f"shape (batch_size, num_classes), but got a tensor of shape {labels.shape} instead.")
        if labels.ndim == 2 and self.num_classes is not None and labels.shape[-1] != self.num_classes:
            raise ValueError(f"When passing 2D labels, the number of elements in last dimension must match "
                             f"num_classes: {labels.shape[-1]} != {self.num_classes}. You can Leave num_classes "
                             f"to None.")
        if labels.ndim == 1 and self.num_classes is None:
            raise ValueError("num_classes must be passed if the labels are index-based (1D)")

    def forward(self, *inputs):
        inputs = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(inputs)
        needs = self._needs_transform_list(flat_inputs)
        if has_any(flat_inputs, PIL.Image.Image, tv_tensors.BoundingBoxes, tv_tensors.Mask, tv_tensors.KeyPoints):
            raise ValueError(f"{type(self).__name__}() does not support PIL images, bounding boxes, keypoints "
                             f"and masks.")
        labels = self._labels_getter(inputs)
        self._check_labels(labels)
        params = dict(labels=labels, batch_size=labels.shape[0],
                      **self.make_params([inpt for inpt, need in zip(flat_inputs, needs) if need]))
        needs[next(idx for idx, inpt in enumerate(flat_inputs) if inpt is labels)] = True
        outputs = [self.transform(inpt, params) if need else inpt for inpt, need in zip(flat_inputs, needs)]
        return tree_unflatten(outputs, spec)

    def _check_image_or_video(self, inpt, *, batch_size):
        expected_num_dims = 5 if isinstance(inpt, tv_tensors.Video) else 4
        if inpt.ndim != expected_num_dims:
            raise ValueError(f"Expected a batched input with {expected_num_dims} dims, but got {inpt.ndim} "
                             f"dimensions instead.")
        if inpt.shape[0] != batch_size:
            raise ValueError(f"The batch size of the image or video does not match the batch size of the labels: "
                             f"{inpt.shape[0]} != {batch_size}.")

    def _mixup_label(self, label, *, lam):
        if label.ndim == 1:
            label = one_hot(label, num_classes=self.num_classes)
        if not label.dtype.is_floating_point:
            label = label.float()
        return label.roll(1, 0).mul_(1.0 - lam).add_(label.mul(lam))

    def _mix(self, inpt, params, mix_batch, lam):
        """Labels mixed by ``lam``; images and videos by ``mix_batch``; anything else unchanged."""
        if inpt is params["labels"]:
            return self._mixup_label(inpt, lam=lam)
        if isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)) or is_pure_tensor(inpt):
            self._check_image_or_video(inpt, batch_size=params["batch_size"])
            output = mix_batch(inpt.as_subclass(engine.Tensor))
            return tv_tensors.wrap(output, like=inpt) if isinstance(inpt, tv_tensors.TVTensor) else output
        return inpt


class MixUp(_BaseMixUpCutMix):
    """MixUp (Zhang et al., 2017) on a batch: ``lam * batch + (1 - lam) * rolled batch``, ``lam`` from
    Beta(alpha, alpha). Index labels ([N]) need ``num_classes``; they come out as [N, num_classes] floats."""

    def make_params(self, flat_inputs):
        return dict(lam=self._sample_lam())

    def transform(self, inpt, params):
        lam = params["lam"]
        return self._mix(inpt, params, lambda x: x.roll(1, 0).mul_(1.0 - lam).add_(x.mul(lam)), lam)


class CutMix(_BaseMixUpCutMix):
    """CutMix (Yun et al., 2019) on a batch: a random box of each image replaced by the previous image's; the
    labels are mixed by the share of the area kept."""

    def make_params(self, flat_inputs):
        lam = self._sample_lam()
        height, width = query_size(flat_inputs)
        r_x = int(engine.randint(width, size=(1,)).item())
        r_y = int(engine.randint(height, size=(1,)).item())
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * width), int(r * height)
        x1, y1 = max(r_x - r_w_half, 0), max(r_y - r_h_half, 0)
        x2, y2 = min(r_x + r_w_half, width), min(r_y + r_h_half, height)
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))
        return dict(box=(x1, y1, x2, y2), lam_adjusted=lam_adjusted)

    def transform(self, inpt, params):
        x1, y1, x2, y2 = params["box"]

        def paste(x):
            output = x.clone()
            output[..., y1:y2, x1:x2] = x.roll(1, 0)[..., y1:y2, x1:x2]
            return output
        return self._mix(inpt, params, paste, params["lam_adjusted"])


class JPEG(Transform):
    """Compress images and videos (uint8) as JPEG and decode them again, at a ``quality`` (1-100) drawn
    uniformly from [min, max] (or fixed)."""

    def __init__(self, quality):
        super().__init__()
        if isinstance(quality, int):
            if isinstance(quality, bool):
                raise TypeError("quality can't be bool")
            quality = [quality, quality]
        else:
            _check_sequence_input(quality, "quality", req_sizes=(2,))
        if not (1 <= quality[0] <= quality[1] <= 100 and isinstance(quality[0], int)
                and isinstance(quality[1], int)):
            raise ValueError(f"quality must be an integer from 1 to 100, got quality ={quality}")
        self.quality = quality

    def make_params(self, flat_inputs):
        return dict(quality=int(engine.randint(self.quality[0], self.quality[1] + 1, ()).item()))

    def transform(self, inpt, params):
        return self._call_kernel(F.jpeg, inpt, quality=params["quality"])
