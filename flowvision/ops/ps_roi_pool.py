"""Position-sensitive RoIPool (R-FCN): average pooling of each box over an integer grid of bins, each
bin reading its own group of input channels."""
from engine import backends, nn
from engine.autograd.function import Function
from engine.nn.modules._utils import _pair

from .ps_roi_align import check_position_sensitive_channels
from .roi_align import _as_rois, _check_rois


class _PSRoIPool(Function):
    """Position-sensitive RoIPool on raw arrays through the backend's ``roi`` kernels; no gradient for
    the boxes."""

    uses_inputs = False

    def __init__(self, output_size, spatial_scale):
        self.args = (float(spatial_scale), output_size[0], output_size[1])

    def forward(self, x, rois):
        self.kernels = backends.kernels(x, "roi")
        y, self.saved = self.kernels.ps_roi_pool_forward(x, rois, *self.args)
        return y

    def backward(self, gy):
        return self.kernels.ps_roi_pool_backward(gy, self.saved), None


def ps_roi_pool(input, boxes, output_size, spatial_scale=1.0):
    """Average-pool each box (Tensor[K, 5] or list of Tensor[L, 4]) of ``input`` (N, C, H, W) to
    (K, C / (PH * PW), PH, PW) = ``output_size``.

    Bin (ph, pw) of output channel c is the mean of input channel (c * PH + ph) * PW + pw over the bin's
    integer window; box corners are scaled by ``spatial_scale`` and rounded; empty bins give 0.
    """
    rois = _as_rois(boxes)
    _check_rois("ps_roi_pool", input, rois)
    output_size = _pair(output_size)
    check_position_sensitive_channels("ps_roi_pool", input, output_size)
    return _PSRoIPool(output_size, spatial_scale)(input, rois.detach())


class PSRoIPool(nn.Module):
    """Module form of :func:`ps_roi_pool`."""

    def __init__(self, output_size, spatial_scale):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input, rois):
        return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self):
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"


__all__ = ["ps_roi_pool", "PSRoIPool"]
