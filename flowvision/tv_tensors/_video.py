"""``Video``: a tensor of shape ``[..., T, C, H, W]`` holding videos."""
from ._tv_tensor import TVTensor


class Video(TVTensor):
    """Videos ``[..., T, C, H, W]`` (frames, channels, height, width)."""

    def __new__(cls, data, *, dtype=None, device=None, requires_grad=None):
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        if tensor.ndim < 4:
            raise ValueError(f"Video must be 4D or higher, got {tensor.ndim}D tensor.")
        return tensor.as_subclass(cls)
