"""``BoundingBoxes``: ``[N, 4]`` boxes with their format and the (height, width) of the image they lie on."""
from enum import Enum

from ._tv_tensor import TVTensor


class BoundingBoxFormat(Enum):
    """How four numbers describe a box: corners (XYXY), corner and size (XYWH) or centre and size (CXCYWH).

    torchvision's rotated formats (XYWHR, CXCYWHR, XYXYXYXY) are not supported: building boxes in them raises.
    """

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"


_ROTATED = ("XYWHR", "CXCYWHR", "XYXYXYXY")
_CLAMPING_MODES = (None, "soft", "hard")


def _format(value):
    """A ``BoundingBoxFormat`` from itself or its name (any case)."""
    if isinstance(value, BoundingBoxFormat):
        return value
    if not isinstance(value, str):
        raise ValueError(f"format should be str or BoundingBoxFormat, got {type(value)}")
    if value.upper() in _ROTATED:
        raise NotImplementedError(f"rotated bounding boxes ({value.upper()}) are not supported; "
                                  f"use XYXY, XYWH or CXCYWH")
    return BoundingBoxFormat[value.upper()]


class BoundingBoxes(TVTensor):
    """Boxes ``[N, 4]`` (a single box ``[4]`` becomes ``[1, 4]``).

    Args:
        data: anything ``engine.as_tensor`` takes.
        format: a ``BoundingBoxFormat`` or its name.
        canvas_size: (height, width) of the image or video the boxes lie on.
        clamping_mode: ``"soft"`` (the default), ``"hard"`` or None: how ``ClampBoundingBoxes`` and the transforms
            that move boxes clamp them to the canvas (for these axis-aligned formats soft and hard clamp alike;
            None leaves boxes as they fall).
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
        return cls._wrap(tensor, format=format, canvas_size=canvas_size, clamping_mode=clamping_mode)

    def _metadata(self):
        return {"format": self.format, "canvas_size": self.canvas_size, "clamping_mode": self.clamping_mode}

    def __repr__(self):
        return self._make_repr(**self._metadata())


def is_rotated_bounding_format(format):
    """Whether ``format`` names a rotated box format (none of the supported formats is)."""
    if isinstance(format, BoundingBoxFormat):
        return False
    if isinstance(format, str):
        return format in _ROTATED
    raise ValueError(f"format should be str or BoundingBoxFormat, got {type(format)}")
