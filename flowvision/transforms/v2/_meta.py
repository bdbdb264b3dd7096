"""Transforms of box and key point metadata: format, clamping to the canvas, clamping mode."""
from ... import tv_tensors
from . import functional as F
from ._transform import Transform


class ConvertBoundingBoxFormat(Transform):
    """Boxes in another format (``BoundingBoxFormat`` or its name)."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, format):
        super().__init__()
        self.format = format

    def transform(self, inpt, params):
        return F.convert_bounding_box_format(inpt, new_format=self.format)


class ClampBoundingBoxes(Transform):
    """Boxes clamped to their canvas (``clamping_mode="auto"``: each box set's own mode)."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, clamping_mode="auto"):
        super().__init__()
        self.clamping_mode = clamping_mode

    def transform(self, inpt, params):
        return F.clamp_bounding_boxes(inpt, clamping_mode=self.clamping_mode)


class ClampKeyPoints(Transform):
    """Key points clamped to their canvas."""

    _transformed_types = (tv_tensors.KeyPoints,)

    def transform(self, inpt, params):
        return F.clamp_keypoints(inpt)


class SetClampingMode(Transform):
    """Boxes with another ``clamping_mode`` (a copy; values unchanged)."""

    _transformed_types = (tv_tensors.BoundingBoxes,)

    def __init__(self, clamping_mode):
        super().__init__()
        if clamping_mode not in (None, "soft", "hard"):
            raise ValueError(f"clamping_mode must be soft, hard or None, got {clamping_mode}")
        self.clamping_mode = clamping_mode

    def transform(self, inpt, params):
        out = inpt.clone()
        out.clamping_mode = self.clamping_mode
        return out


__all__ = ["ConvertBoundingBoxFormat", "ClampBoundingBoxes", "ClampKeyPoints", "SetClampingMode"]
