"""``Image``: a tensor of shape ``[..., C, H, W]`` holding images."""
import PIL.Image

from ._tv_tensor import TVTensor


class Image(TVTensor):
    """Images ``[..., C, H, W]``; built from anything ``engine.as_tensor`` takes, or a PIL image. A 2-d tensor
    gains a channel dimension."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        if isinstance(data, PIL.Image.Image):
            from ..transforms.functional import pil_to_tensor
            data = pil_to_tensor(data)
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if tensor.ndim < 2:
            raise ValueError(f"Tensor must be 2D or higher, got {tensor.ndim}D tensor.")
        if tensor.ndim == 2:
            tensor = tensor.unsqueeze(0)
        return tensor.as_subclass(cls)
