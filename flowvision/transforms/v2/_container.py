"""Transforms of transforms: Compose, RandomApply, RandomChoice, RandomOrder (their random draws as torchvision's)."""
import collections.abc

import engine
from engine import nn

from .. import transforms as v1
from ..transforms import _torch_coin
from ._transform import Transform


def _check_transforms(transforms, types=(collections.abc.Sequence,), what="a sequence of callables"):
    if not isinstance(transforms, types):
        raise TypeError(f"Argument transforms should be {what}")
    if not transforms:
        raise ValueError("Pass at least one transform")


def _run(transforms, inputs):
    """Apply ``transforms`` in turn to the sample given as ``forward``'s arguments."""
    unpack = len(inputs) > 1
    for transform in transforms:
        outputs = transform(*inputs)
        inputs = outputs if unpack else (outputs,)
    return outputs


class _Listed(Transform):
    def extra_repr(self):
        return "\n".join(f"    {t}" for t in self.transforms)


class Compose(_Listed):
    """The transforms one after another."""

    def __init__(self, transforms):
        super().__init__()
        _check_transforms(transforms)
        self.transforms = transforms

    def forward(self, *inputs):
        return _run(self.transforms, inputs)


class RandomApply(_Listed):
    """All the transforms, in order, with probability ``p``; else the sample unchanged."""

    _v1_transform_cls = v1.RandomApply

    def __init__(self, transforms, p=0.5):
        super().__init__()
        _check_transforms(transforms, (collections.abc.Sequence, nn.ModuleList),
                          "a sequence of callables or a `nn.ModuleList`")
        if not 0.0 <= p <= 1.0:
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        self.transforms = transforms
        self.p = p

    def forward(self, *inputs):
        if not _torch_coin(self.p):
            return inputs if len(inputs) > 1 else inputs[0]
        return _run(self.transforms, inputs)


class RandomChoice(Transform):
    """One of the transforms, drawn with probabilities ``p`` (normalised; equal by default)."""

    def __init__(self, transforms, p=None):
        _check_transforms(transforms)
        if p is None:
            p = [1] * len(transforms)
        elif len(p) != len(transforms):
            raise ValueError(f"Length of p doesn't match the number of transforms: {len(p)} != {len(transforms)}")
        super().__init__()
        self.transforms = transforms
        total = sum(p)
        self.p = [prob / total for prob in p]

    def forward(self, *inputs):
        index = int(engine.multinomial(engine.tensor(self.p), 1))
        return self.transforms[index](*inputs)


class RandomOrder(Transform):
    """All the transforms, in a random order."""

    def __init__(self, transforms):
        _check_transforms(transforms)
        super().__init__()
        self.transforms = transforms

    def forward(self, *inputs):
        order = engine.randperm(len(self.transforms)).tolist()
        return _run([self.transforms[i] for i in order], inputs)


__all__ = ["Compose", "RandomApply", "RandomChoice", "RandomOrder"]
