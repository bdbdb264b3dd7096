"""Identity, Lambda, LinearTransformation, Normalize, GaussianBlur, GaussianNoise, ToDtype, ConvertImageDtype,
UniformTemporalSubsample and the sanitizers that drop boxes or key points with their labels and masks."""
import warnings

import PIL.Image

import engine

from ... import tv_tensors
from .. import transforms as v1
from ..transforms import _torch_uniform
from . import functional as F
from ._pytree import tree_flatten, tree_unflatten
from ._transform import Transform
from ._utils import _parse_labels_getter, _setup_number_or_seq, _setup_size, get_bounding_boxes, get_keypoints, \
    has_any
from .functional._misc import _sanitize_bounding_boxes_mask, _sanitize_keypoints_mask
from .functional._utils import is_pure_tensor


class Identity(Transform):
    """The sample unchanged."""

    def transform(self, inpt, params):
        return inpt


class Lambda(Transform):
    """``lambd`` applied to every part of the sample of the given ``types`` (all parts by default)."""

    _transformed_types = (object,)

    def __init__(self, lambd, *types):
        super().__init__()
        self.lambd = lambd
        self.types = types or self._transformed_types

    def transform(self, inpt, params):
        return self.lambd(inpt) if isinstance(inpt, self.types) else inpt

    def extra_repr(self):
        name = getattr(self.lambd, "__name__", None)
        return ", ".join(([name] if name else []) + [f"types={[t.__name__ for t in self.types]}"])


def _reject_pil(transform, flat_inputs):
    if has_any(flat_inputs, PIL.Image.Image):
        raise TypeError(f"{type(transform).__name__}() does not support PIL images.")


class LinearTransformation(Transform):
    """Flattened images and videos, minus ``mean_vector``, times ``transformation_matrix`` (whitening)."""

    _v1_transform_cls = v1.LinearTransformation
    _transformed_types = (is_pure_tensor, tv_tensors.Image, tv_tensors.Video)

    def __init__(self, transformation_matrix, mean_vector):
        super().__init__()
        v1.LinearTransformation(transformation_matrix, mean_vector)  # v1's checks of the shapes, device and dtype
        self.transformation_matrix = transformation_matrix
        self.mean_vector = mean_vector

    def check_inputs(self, flat_inputs):
        _reject_pil(self, flat_inputs)

    def transform(self, inpt, params):
        shape = inpt.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError(f"Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != {self.transformation_matrix.shape[0]}")
        if inpt.device.type != self.mean_vector.device.type:
            raise ValueError(f"Input tensor should be on the same device as transformation matrix and mean vector. "
                             f"Got {inpt.device} vs {self.mean_vector.device}")
        flat = inpt.reshape(-1, n) - self.mean_vector
        output = engine.mm(flat, self.transformation_matrix.to(flat.dtype)).reshape(shape)
        if isinstance(inpt, (tv_tensors.Image, tv_tensors.Video)):
            output = tv_tensors.wrap(output, like=inpt)
        return output


class Normalize(Transform):
    """(image - mean) / std per channel, for float images and videos."""

    _v1_transform_cls = v1.Normalize

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean = list(mean)
        self.std = list(std)
        self.inplace = inplace

    def check_inputs(self, flat_inputs):
        _reject_pil(self, flat_inputs)

    def transform(self, inpt, params):
        return self._call_kernel(F.normalize, inpt, mean=self.mean, std=self.std, inplace=self.inplace)


class GaussianBlur(Transform):
    """Gaussian blur with a sigma drawn uniformly from ``sigma`` (min, max) per call."""

    _v1_transform_cls = v1.GaussianBlur

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for size in self.kernel_size:
            if size <= 0 or size % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        self.sigma = _setup_number_or_seq(sigma, "sigma")
        if not 0.0 < self.sigma[0] <= self.sigma[1]:
            raise ValueError(f"sigma values should be positive and of the form (min, max). Got {self.sigma}")

    def make_params(self, flat_inputs):
        sigma = _torch_uniform(self.sigma[0], self.sigma[1])
        return {"sigma": [sigma, sigma]}

    def transform(self, inpt, params):
        return self._call_kernel(F.gaussian_blur, inpt, self.kernel_size, **params)


class GaussianNoise(Transform):
    """Images plus Gaussian noise (see ``F.gaussian_noise``)."""

    def __init__(self, mean=0.0, sigma=0.1, clip=True):
        super().__init__()
        self.mean = mean
        self.sigma = sigma
        self.clip = clip

    def transform(self, inpt, params):
        return self._call_kernel(F.gaussian_noise, inpt, mean=self.mean, sigma=self.sigma, clip=self.clip)


class ToDtype(Transform):
    """Images and videos (a dtype), or each type of the sample (a dict from type, or "others", to a dtype or None
    for "leave it"), as the given dtype; ``scale`` rescales image and video values to the new range."""

    _transformed_types = (engine.Tensor,)

    def __init__(self, dtype, scale=False):
        super().__init__()
        if not isinstance(dtype, (dict, engine.dtype)):
            raise ValueError(f"dtype must be a dict or a torch.dtype, got {type(dtype)} instead")
        if isinstance(dtype, dict) and engine.Tensor in dtype and (tv_tensors.Image in dtype
                                                                   or tv_tensors.Video in dtype):
            warnings.warn("Got `dtype` values for `torch.Tensor` and either `tv_tensors.Image` or `tv_tensors.Video`. "
                          "Note that a plain `torch.Tensor` will *not* be transformed by this (or any other "
                          "transformation) in case a `tv_tensors.Image` or `tv_tensors.Video` is present in the "
                          "input.")
        self.dtype = dtype
        self.scale = scale

    def _dtype_for(self, inpt):
        if type(inpt) in self.dtype:
            return self.dtype[type(inpt)]
        if "others" in self.dtype:
            return self.dtype["others"]
        raise ValueError(f"No dtype was specified for type {type(inpt)}. If you only need to convert the dtype of "
                         f"images or videos, you can just pass e.g. dtype=torch.float32. If you're passing a dict as "
                         f'dtype, you can use "others" as a catch-all key e.g. dtype={{tv_tensors.Mask: torch.int64, '
                         f'"others": None}} to pass-through the rest of the inputs.')

    def transform(self, inpt, params):
        image_like = is_pure_tensor(inpt) or isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))
        if isinstance(self.dtype, engine.dtype):
            if not image_like:
                return inpt
            dtype = self.dtype
        else:
            dtype = self._dtype_for(inpt)
        if dtype is None:
            if self.scale and image_like:
                warnings.warn("scale was set to True but no dtype was specified for images or videos: no scaling "
                              "will be done.")
            return inpt
        return self._call_kernel(F.to_dtype, inpt, dtype=dtype, scale=self.scale)


class ConvertImageDtype(Transform):
    """Images as ``dtype`` with values rescaled (``ToDtype(dtype, scale=True)``)."""

    _v1_transform_cls = v1.ConvertImageDtype

    def __init__(self, dtype=engine.float32):
        super().__init__()
        self.dtype = dtype

    def transform(self, inpt, params):
        return self._call_kernel(F.to_dtype, inpt, dtype=self.dtype, scale=True)


class UniformTemporalSubsample(Transform):
    """``num_samples`` evenly spaced frames of each video."""

    _transformed_types = (engine.Tensor,)

    def __init__(self, num_samples):
        super().__init__()
        self.num_samples = num_samples

    def transform(self, inpt, params):
        return self._call_kernel(F.uniform_temporal_subsample, inpt, self.num_samples)


def _labels_tuple(labels):
    """The labels a getter found, as a tuple of tensors (or None)."""
    if labels is None or isinstance(labels, engine.Tensor):
        return labels if labels is None else (labels,)
    message = "The labels in the input to forward() must be a tensor or None, got {} instead."
    if not isinstance(labels, (tuple, list)):
        raise ValueError(message.format(type(labels)))
    for entry in labels:
        if not isinstance(entry, engine.Tensor):
            raise ValueError(message.format(type(entry)))
    return tuple(labels)


class _Sanitize(Transform):
    """Drops the boxes or key points ``_valid`` rejects, with the labels (and masks) at the same positions."""

    def __init__(self, labels_getter):
        super().__init__()
        self.labels_getter = labels_getter
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs):
        inputs = inputs if len(inputs) > 1 else inputs[0]
        labels = _labels_tuple(self._labels_getter(inputs))
        flat_inputs, spec = tree_flatten(inputs)
        valid = self._valid(flat_inputs, labels)
        params = {"valid": valid, "labels": labels}
        return tree_unflatten([self.transform(inpt, params) for inpt in flat_inputs], spec)

    def transform(self, inpt, params):
        is_label = params["labels"] is not None and any(inpt is label for label in params["labels"])
        if not (is_label or isinstance(inpt, self._selected_types)):
            return inpt
        try:
            output = inpt[params["valid"]]
        except IndexError:  # a semantic mask [H, W]: not one plane per box
            return inpt
        return output if is_label else tv_tensors.wrap(output, like=inpt)


class SanitizeBoundingBoxes(_Sanitize):
    """Drop boxes smaller than ``min_size`` (width or height) or ``min_area``, or outside the canvas, together
    with their labels (found by ``labels_getter``) and their masks. Use after RandomIoUCrop and at the end of a
    detection pipeline."""

    _selected_types = (tv_tensors.BoundingBoxes, tv_tensors.Mask)

    def __init__(self, min_size=1.0, min_area=1.0, labels_getter="default"):
        super().__init__(labels_getter)
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}.")
        if min_area < 1:
            raise ValueError(f"min_area must be >= 1, got {min_area}.")
        self.min_size = min_size
        self.min_area = min_area

    def _valid(self, flat_inputs, labels):
        boxes = get_bounding_boxes(flat_inputs)
        for label in labels or ():
            if boxes.shape[0] != label.shape[0]:
                raise ValueError(f"Number of boxes (shape={tuple(boxes.shape)}) and must match the number of "
                                 f"labels.Found labels with shape={tuple(label.shape)}).")
        return _sanitize_bounding_boxes_mask(boxes.as_subclass(engine.Tensor), boxes.format, boxes.canvas_size,
                                             self.min_size, self.min_area)


class SanitizeKeyPoints(_Sanitize):
    """Drop key points (or groups of points) outside the canvas, with their labels if ``labels_getter`` finds
    some (none by default)."""

    _selected_types = (tv_tensors.KeyPoints,)

    def __init__(self, labels_getter=None):
        super().__init__(labels_getter)

    def _valid(self, flat_inputs, labels):
        points = get_keypoints(flat_inputs)
        for label in labels or ():
            if points.shape[0] != label.shape[0]:
                raise ValueError(f"Number of kepyoints (shape={tuple(points.shape)}) must match the number of "
                                 f"labels.Found labels with shape={tuple(label.shape)}).")
        return _sanitize_keypoints_mask(points.as_subclass(engine.Tensor), points.canvas_size)


__all__ = ["Identity", "Lambda", "LinearTransformation", "Normalize", "GaussianBlur", "GaussianNoise", "ToDtype",
           "ConvertImageDtype", "UniformTemporalSubsample", "SanitizeBoundingBoxes", "SanitizeKeyPoints"]
