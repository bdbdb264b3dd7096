"""Helpers the v2 transforms share: what a sample holds (size, channels, boxes) and argument checks."""
import collections.abc
import numbers

import PIL.Image

from ... import tv_tensors
from ..transforms import _check_sequence_input, _setup_angle, _setup_size  # noqa: F401 (shared with v1)
from .functional._meta import get_dimensions, get_size
from .functional._utils import is_pure_tensor


def check_type(obj, types_or_checks):
    """Whether ``obj`` is one of the types, or passes one of the checks (callables), in ``types_or_checks``."""
    for type_or_check in types_or_checks:
        if isinstance(type_or_check, type):
            if isinstance(obj, type_or_check):
                return True
        elif type_or_check(obj):
            return True
    return False


def has_any(flat_inputs, *types_or_checks):
    return any(check_type(inpt, types_or_checks) for inpt in flat_inputs)


def has_all(flat_inputs, *types_or_checks):
    return all(any(check_type(inpt, (type_or_check,)) for inpt in flat_inputs) for type_or_check in types_or_checks)


def _sizes(sizes):
    return ", ".join(str(s) for s in sorted(sizes))


def query_chw(flat_inputs):
    """(channels, height, width) of the images and videos in the sample, which must agree."""
    chws = {tuple(get_dimensions(inpt)) for inpt in flat_inputs
            if check_type(inpt, (is_pure_tensor, tv_tensors.Image, PIL.Image.Image, tv_tensors.Video))}
    if not chws:
        raise TypeError("No image or video was found in the sample")
    if len(chws) > 1:
        raise ValueError(f"Found multiple CxHxW dimensions in the sample: {_sizes(chws)}")
    return chws.pop()


def query_size(flat_inputs):
    """(height, width) of everything spatial in the sample, which must agree."""
    spatial = (is_pure_tensor, tv_tensors.Image, PIL.Image.Image, tv_tensors.Video, tv_tensors.Mask,
               tv_tensors.BoundingBoxes, tv_tensors.KeyPoints)
    sizes = {tuple(get_size(inpt)) for inpt in flat_inputs if check_type(inpt, spatial)}
    if not sizes:
        raise TypeError("No image, video, mask, bounding box of keypoint was found in the sample")
    if len(sizes) > 1:
        raise ValueError(f"Found multiple HxW dimensions in the sample: {_sizes(sizes)}")
    return sizes.pop()


def get_bounding_boxes(flat_inputs):
    """The sample's ``BoundingBoxes`` (one per sample, by convention)."""
    for inpt in flat_inputs:
        if isinstance(inpt, tv_tensors.BoundingBoxes):
            return inpt
    raise ValueError("No bounding boxes were found in the sample")


def get_keypoints(flat_inputs):
    """The sample's ``KeyPoints`` (one per sample, by convention)."""
    for inpt in flat_inputs:
        if isinstance(inpt, tv_tensors.KeyPoints):
            return inpt
    raise ValueError("No keypoints were found in the sample")


def _setup_number_or_seq(arg, name):
    """A number or a sequence of one or two numbers as a [low, high] pair of floats."""
    if not isinstance(arg, (int, float, collections.abc.Sequence)):
        raise TypeError(f"{name} should be a number or a sequence of numbers. Got {type(arg)}")
    if isinstance(arg, collections.abc.Sequence):
        if len(arg) not in (1, 2):
            raise ValueError(f"If {name} is a sequence its length should be 1 or 2. Got {len(arg)}")
        if not all(isinstance(element, (int, float)) for element in arg):
            raise ValueError(f"{name} should be a sequence of numbers. Got {[type(e) for e in arg]}")
        return [float(arg[0]), float(arg[-1])]
    return [float(arg), float(arg)]


def _check_fill_arg(fill):
    if isinstance(fill, dict):
        for value in fill.values():
            _check_fill_arg(value)
    elif fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg, only Numbers, tuples, lists and dicts are allowed.")


def _convert_fill_arg(fill):
    """None stays None (it differs from 0 for some kernels); sequences become lists of floats."""
    if fill is None or isinstance(fill, (int, float)):
        return fill
    return [float(v) for v in fill]


def _setup_fill_arg(fill):
    """``fill`` as a dict from input type (or "others") to the fill for it."""
    _check_fill_arg(fill)
    if isinstance(fill, dict):
        return {key: _convert_fill_arg(value) for key, value in fill.items()}
    return {"others": _convert_fill_arg(fill)}


def _get_fill(fill_dict, inpt_type):
    if inpt_type in fill_dict:
        return fill_dict[inpt_type]
    return fill_dict.get("others")


def _check_padding_arg(padding):
    message = f"Padding must be an int or a 1, 2, or 4 element of tuple or list, got {padding}."
    if isinstance(padding, (tuple, list)):
        if len(padding) not in (1, 2, 4) or not all(isinstance(p, int) for p in padding):
            raise ValueError(message)
    elif not isinstance(padding, int):
        raise ValueError(message)


def _check_padding_mode_arg(padding_mode):
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")


def _find_labels_default_heuristic(inputs):
    """The labels of a sample: the second item of a pair when it is a tensor (a batch for MixUp/CutMix), else
    the "labels" entry (any case), else the first key containing "label", of the dict that is the sample or its
    second item."""
    if isinstance(inputs, (tuple, list)):
        inputs = inputs[1]
    if is_pure_tensor(inputs):
        return inputs
    if not isinstance(inputs, collections.abc.Mapping):
        raise ValueError(f"When using the default labels_getter, the input passed to forward must be a dictionary "
                         f"or a two-tuple whose second item is a dictionary or a tensor, but got {inputs} instead.")
    keys = [key for key in inputs if key.lower() == "labels"] or [key for key in inputs if "label" in key.lower()]
    if not keys:
        raise ValueError("Could not infer where the labels are in the sample. Try passing a callable as the "
                         "labels_getter parameter? If there are no labels in the sample by design, pass "
                         "labels_getter=None.")
    return inputs[keys[0]]


def _parse_labels_getter(labels_getter):
    if labels_getter == "default":
        return _find_labels_default_heuristic
    if callable(labels_getter):
        return labels_getter
    if labels_getter is None:
        return lambda _: None
    raise ValueError(f"labels_getter should either be 'default', a callable, or None, but got {labels_getter}.")
