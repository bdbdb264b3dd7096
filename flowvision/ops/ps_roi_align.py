"""Position-sensitive RoIAlign (Light-Head R-CNN): RoIAlign in which each output bin reads its own group
of input channels, so that a box's (C_out * PH * PW)-channel map pools to C_out channels."""
from engine import backends, nn
from engine.autograd.function import Function
from engine.nn.modules._utils import _pair

from .roi_align import _as_rois, _check_rois


class _PSRoIAlign(Function):
    """Position-sensitive RoIAlign on raw arrays through the backend's ``roi`` kernels; no gradient for
    the boxes."""

    uses_inputs = False

    def __init__(self, output_size, spatial_scale, sampling_ratio):
        self.args = (float(spatial_scale), output_size[0], output_size[1], int(sampling_ratio))

    def forward(self, x, rois):
        self.kernels = backends.kernels(x, "roi")
        y, self.saved = self.kernels.ps_roi_align_forward(x, rois, *self.args)
        return y

    def backward(self, gy):
        return self.kernels.ps_roi_align_backward(gy, self.saved), None


def check_position_sensitive_channels(name, input, output_size):
    """The input's channels must split evenly into one group per output bin."""
    bins = output_size[0] * output_size[1]
    if input.shape[1] % bins:
        raise RuntimeError(f"{name}: input channels must be a multiple of pooling height * pooling width, got "
                           f"{input.shape[1]} channels for output_size {tuple(output_size)}")


def ps_roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1):
    """Pool each box of ``boxes`` (Tensor[K, 5] with the image index first, or a list of Tensor[L, 4])
    from ``input`` (N, C, H, W) to (K, C / (PH * PW), PH, PW) = ``output_size``.

    Bin (ph, pw) of output channel c averages bilinear samples of input channel (c * PH + ph) * PW + pw:
    ``sampling_ratio`` x ``sampling_ratio`` of them (``-1``: ceil(bin size) per axis). Box coordinates
    are scaled by ``spatial_scale`` and shifted by half a pixel.
    """
    rois = _as_rois(boxes)
    _check_rois("ps_roi_align", input, rois)
    output_size = _pair(output_size)
    check_position_sensitive_channels("ps_roi_align", input, output_size)
    return _PSRoIAlign(output_size, spatial_scale, sampling_ratio)(input, rois.detach())


class PSRoIAlign(nn.Module):
    """Module form of :func:`ps_roi_align`."""

    def __init__(self, output_size, spatial_scale, sampling_ratio):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio

    def forward(self, input, rois):
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio)

    def __repr__(self):
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio})")


__all__ = ["ps_roi_align", "PSRoIAlign"]
