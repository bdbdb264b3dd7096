"""Transforms between PIL images, arrays, tensors and tv_tensors."""
import warnings

import numpy as np
import PIL.Image

import engine

from ... import tv_tensors
from .. import functional as v1_functional
from . import functional as F
from ._transform import Transform
from .functional._utils import is_pure_tensor


class PILToTensor(Transform):
    """A PIL image as a CHW tensor of its own dtype (no scaling)."""

    _transformed_types = (PIL.Image.Image,)

    def transform(self, inpt, params):
        return F.pil_to_tensor(inpt)


class ToImage(Transform):
    """A PIL image, HWC array or pure tensor as a ``tv_tensors.Image`` (no scaling)."""

    _transformed_types = (is_pure_tensor, PIL.Image.Image, np.ndarray)

    def transform(self, inpt, params):
        return F.to_image(inpt)


class ToPILImage(Transform):
    """A tensor or HWC array as a PIL image (``mode`` as in v1)."""

    _transformed_types = (is_pure_tensor, tv_tensors.Image, np.ndarray)

    def __init__(self, mode=None):
        super().__init__()
        self.mode = mode

    def transform(self, inpt, params):
        return F.to_pil_image(inpt, mode=self.mode)


class ToPureTensor(Transform):
    """Every TVTensor of the sample as a pure ``Tensor`` (for code that checks types exactly)."""

    _transformed_types = (tv_tensors.TVTensor,)

    def transform(self, inpt, params):
        return inpt.as_subclass(engine.Tensor)


class ToTensor(Transform):
    """v1's ``ToTensor`` of PIL images and arrays (deprecated: use ``ToImage`` then ``ToDtype(float32, scale=True)``)."""

    _transformed_types = (PIL.Image.Image, np.ndarray)

    def __init__(self):
        warnings.warn("The transform `ToTensor()` is deprecated and will be removed in a future release. Instead, "
                      "please use `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`. Output is "
                      "equivalent up to float precision.")
        super().__init__()

    def transform(self, inpt, params):
        return v1_functional.to_tensor(inpt)


__all__ = ["PILToTensor", "ToImage", "ToPILImage", "ToPureTensor", "ToTensor"]
