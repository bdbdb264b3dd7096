"""RoIPool (Fast R-CNN): max pooling of each region of interest over an integer grid of bins."""
from engine import backends, nn
from engine.autograd.function import Function
from engine.nn.modules._utils import _pair

from .roi_align import _as_rois, _check_rois


class _RoIPool(Function):
    """RoIPool on raw arrays through the backend's ``roi`` kernels; no gradient for the boxes."""

    uses_inputs = False

    def __init__(self, output_size, spatial_scale):
        self.args = (float(spatial_scale), output_size[0], output_size[1])

    def forward(self, x, rois):
        self.kernels = backends.kernels(x, "roi")
        y, self.saved = self.kernels.roi_pool_forward(x, rois, *self.args)
        return y

    def backward(self, gy):
        return self.kernels.roi_pool_backward(gy, self.saved), None


def roi_pool(input, boxes, output_size, spatial_scale=1.0):
    """Max-pool each box (Tensor[K, 5] or list of Tensor[L, 4]) of ``input`` to (K, C, *output_size).

    Box corners are scaled by ``spatial_scale`` and rounded; empty bins give 0.
    """
    rois = _as_rois(boxes)
    _check_rois("roi_pool", input, rois)
    return _RoIPool(_pair(output_size), spatial_scale)(input, rois.detach())


class RoIPool(nn.Module):
    """Module form of :func:`roi_pool`."""

    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self):
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"


__all__ = ["roi_pool", "RoIPool"]
