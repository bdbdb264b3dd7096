"""Tensors that say what they hold, for the v2 transforms (torchvision's ``tv_tensors``)."""
from ._bounding_boxes import BoundingBoxes, BoundingBoxFormat, is_rotated_bounding_format
from ._image import Image
from ._keypoints import KeyPoints
from ._mask import Mask
from ._tv_tensor import TVTensor, set_return_type
from ._video import Video


def wrap(wrappee, *, like, **kwargs):
    """``wrappee`` (a tensor) as the TVTensor type of ``like``, with ``like``'s metadata unless ``kwargs`` gives
    new values (``format=``, ``canvas_size=``, ``clamping_mode=``)."""
    return type(like).wrap(wrappee, like=like, **kwargs)


__all__ = ["TVTensor", "Image", "Video", "Mask", "BoundingBoxes", "BoundingBoxFormat", "KeyPoints", "wrap",
           "is_rotated_bounding_format", "set_return_type"]
