"""``BoundingBoxes``: ``[N, K]`` boxes (K = 4 axis-aligned, 5 or 8 rotated) with their format and the (height,
width) of the image they lie on."""
from enum import Enum

from ._tv_tensor import TVTensor


class BoundingBoxFormat(Enum):
    """How the numbers of a box describe it.

    Axis-aligned: corners (XYXY), top-left corner and size (XYWH), centre and size (CXCYWH). Rotated: the first
    corner, size and the angle in degrees counter-clockwise (XYWHR), centre, size and angle (CXCYWHR), or the four
    corners in order, first, its neighbour along the width, the opposite one, the last (XYXYXYXY).
    """

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"
    XYWHR = "XYWHR"
    CXCYWHR = "CXCYWHR"
    XYXYXYXY = "XYXYXYXY"


_ROTATED = ("XYWHR", "CXCYWHR", "XYXYXYXY")
_CLAMPING_MODES = (None, "soft", "hard")


def _format(value):
    """A ``BoundingBoxFormat`` from itself or its name (any case)."""
    if isinstance(value, BoundingBoxFormat):
        return value
    if not isinstance(value, str):
        raise ValueError(f"format should be str or BoundingBoxFormat, got {type(value)}")
    return BoundingBoxFormat[value.upper()]


class BoundingBoxes(TVTensor):
    """Boxes ``[N, K]`` (a single box ``[K]`` becomes ``[1, K]``); K is 4 for axis-aligned formats, 5 (XYWHR,
    CXCYWHR) or 8 (XYXYXYXY) for rotated ones, which must be floating point.

    Args:
        data: anything ``engine.as_tensor`` takes.
        format: a ``BoundingBoxFormat`` or its name.
        canvas_size: (height, width) of the image or video the boxes lie on.
        clamping_mode: ``"soft"`` (the default), ``"hard"`` or None: how ``ClampBoundingBoxes`` and the transforms
            that move boxes clamp them to the canvas. Axis-aligned boxes clamp alike in both modes; a rotated box
            keeps its angle and becomes the smallest box holding its part on the canvas (soft) or the largest box
            inside both (hard). None leaves boxes as they fall.
    """

    @classmethod
    def _wrap(cls, tensor, *, format, canvas_size, clamping_mode="soft", check_dims=True):
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.ndim != 2:
                raise ValueError(f"Expected a 1D or 2D tensor, got {tensor.ndim}D")
        if clamping_mode not in _CLAMPING_MODES:
            raise ValueError(f"clamping_mode must be None, hard or soft, got {clamping_mode}.")
        boxes = tensor.as_subclass(cls)
        boxes.format = _format(format)
        boxes.canvas_size = tuple(int(s) for s in canvas_size)
        boxes.clamping_mode = clamping_mode
        return boxes

    @classmethod
    def wrap(cls, tensor, like, **kwargs):
        return cls._wrap(tensor, format=kwargs.get("format", like.format if like is not None else None),
                         canvas_size=kwargs.get("canvas_size", like.canvas_size if like is not None else None),
                         clamping_mode=kwargs.get("clamping_mode", like.clamping_mode if like is not None else "soft"),
                         check_dims=False)

    def __new__(cls, data, *, format, canvas_size, clamping_mode="soft", dtype=None, device=None,
                requires_grad=None):
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if not tensor.is_floating_point() and is_rotated_bounding_format(format):
            raise ValueError(f"Rotated bounding boxes should be floating point tensors, got {tensor.dtype}.")
        return cls._wrap(tensor, format=format, canvas_size=canvas_size, clamping_mode=clamping_mode)

    def _metadata(self):
        return {"format": self.format, "canvas_size": self.canvas_size, "clamping_mode": self.clamping_mode}

    def __repr__(self):
        return self._make_repr(**self._metadata())


def is_rotated_bounding_format(format):
    """Whether ``format`` (a ``BoundingBoxFormat`` or its exact upper-case name) is a rotated box format."""
    if isinstance(format, BoundingBoxFormat):
        return format.value in _ROTATED
    if isinstance(format, str):
        return format in _ROTATED
    raise ValueError(f"format should be str or BoundingBoxFormat, got {type(format)}")
