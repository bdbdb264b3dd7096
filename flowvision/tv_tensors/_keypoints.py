"""``KeyPoints``: ``[..., 2]`` points (x, y) with the (height, width) of the image they lie on."""
from ._tv_tensor import TVTensor


class KeyPoints(TVTensor):
    """Points ``[..., 2]`` in (x, y): single points ``[N, 2]``, polygons or chains ``[N, P, 2]``, skeletons
    ``[N, B, 2, 2]``. A single point ``[2]`` becomes ``[1, 2]``."""

    @classmethod
    def _wrap(cls, tensor, *, canvas_size, check_dims=True):
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.shape[-1] != 2:
                raise ValueError(f"Expected a tensor of shape (..., 2), not {tuple(tensor.shape)}")
        points = tensor.as_subclass(cls)
        points.canvas_size = tuple(int(s) for s in canvas_size)
        return points

    @classmethod
    def wrap(cls, tensor, like, **kwargs):
        return cls._wrap(tensor, canvas_size=kwargs.get("canvas_size", like.canvas_size if like is not None else None),
                         check_dims=False)

    def __new__(cls, data, *, canvas_size, dtype=None, device=None, requires_grad=None):
        tensor = cls._to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return cls._wrap(tensor, canvas_size=canvas_size)

    def _metadata(self):
        return {"canvas_size": self.canvas_size}

    def __repr__(self):
        return self._make_repr(canvas_size=self.canvas_size)
