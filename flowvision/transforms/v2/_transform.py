"""``Transform``: the base of the v2 transforms, which take a whole sample (an image with its boxes, masks,
labels, in any nesting of tuples, lists and dicts) and transform each part by its type.

``forward`` flattens the sample, picks the parts to transform, draws the random parameters once from them
(``make_params``) and applies ``transform(part, params)`` to each, so an image and its boxes move together.
Parts of other types pass through. A pure tensor counts as the image only when the sample holds no
``Image``, ``Video`` or PIL image, and only the first one does (torchvision's heuristic).
"""
import enum
import warnings

import PIL.Image

import engine
from engine import nn

from ... import tv_tensors
from ..transforms import _torch_coin
from ._pytree import tree_flatten, tree_unflatten
from ._utils import check_type, has_any
from .functional._utils import _get_kernel, is_pure_tensor


class Transform(nn.Module):
    """Subclass and override ``make_params`` (the random draws, once per sample) and ``transform`` (one part)."""

    _transformed_types = (engine.Tensor, PIL.Image.Image)
    _v1_transform_cls = None  # the v1 class whose get_params (and scripting) this transform shares
    _warned_passthrough_types = ()  # inputs left unchanged with a warning (torchvision's, where it may change)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls._v1_transform_cls is not None and hasattr(cls._v1_transform_cls, "get_params"):
            cls.get_params = staticmethod(cls._v1_transform_cls.get_params)

    def check_inputs(self, flat_inputs):
        """Raise if the sample is not one this transform can take."""

    def make_params(self, flat_inputs):
        """The parameters of this call, drawn from the parts that will be transformed."""
        return {}

    def _call_kernel(self, functional, inpt, *args, **kwargs):
        if isinstance(inpt, self._warned_passthrough_types):
            warnings.warn(f"{type(self).__name__}() is currently passing through inputs of type "
                          f"tv_tensors.{type(inpt).__name__}. This will likely change in the future.")
        kernel = _get_kernel(functional, type(inpt), allow_passthrough=True)
        return kernel(inpt, *args, **kwargs)

    def transform(self, inpt, params):
        """One part of the sample, transformed with ``params``."""
        raise NotImplementedError

    def forward(self, *inputs):
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        self.check_inputs(flat_inputs)
        return tree_unflatten(self._transform_flat(flat_inputs), spec)

    def _transform_flat(self, flat_inputs):
        needs = self._needs_transform_list(flat_inputs)
        params = self.make_params([inpt for inpt, need in zip(flat_inputs, needs) if need])
        return [self.transform(inpt, params) if need else inpt for inpt, need in zip(flat_inputs, needs)]

    def _needs_transform_list(self, flat_inputs):
        transform_pure_tensor = not has_any(flat_inputs, tv_tensors.Image, tv_tensors.Video, PIL.Image.Image)
        needs = []
        for inpt in flat_inputs:
            need = check_type(inpt, self._transformed_types)
            if need and is_pure_tensor(inpt):
                need = transform_pure_tensor
                transform_pure_tensor = False
            needs.append(need)
        return needs

    def extra_repr(self):
        return ", ".join(f"{name}={value}" for name, value in self.__dict__.items()
                         if not name.startswith("_") and name != "training"
                         and isinstance(value, (bool, int, float, str, tuple, list, enum.Enum)))


class _RandomApplyTransform(Transform):
    """A transform applied to the whole sample with probability ``p`` (one draw, before any other)."""

    def __init__(self, p=0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__()
        self.p = p

    def forward(self, *inputs):
        inputs = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(inputs)
        self.check_inputs(flat_inputs)
        if not _torch_coin(self.p):
            return inputs
        return tree_unflatten(self._transform_flat(flat_inputs), spec)
