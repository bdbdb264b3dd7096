"""``Mask``: segmentation or detection masks, ``[..., H, W]``."""
import PIL.Image

from ._tv_tensor import TVTensor


class Mask(TVTensor):
    """Masks ``[..., H, W]`` (a class index per pixel, or one boolean plane per object); from a tensor-like or a
    PIL image."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        if isinstance(data, PIL.Image.Image):
            from ..transforms.functional import pil_to_tensor
            data = pil_to_tensor(data)
        return cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad).as_subclass(cls)
