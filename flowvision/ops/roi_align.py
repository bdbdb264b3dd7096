"""RoIAlign (Mask R-CNN): bilinear-sampled average pooling of each region of interest to a fixed grid."""
from engine import Tensor, backends, nn
from engine.autograd.function import Function
from engine.nn.modules._utils import _pair

from ._utils import check_roi_boxes_shape, convert_boxes_to_roi_format


class _RoIAlign(Function):
    """RoIAlign on raw arrays through the backend's ``roi`` kernels; no gradient for the boxes."""

    uses_inputs = False

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned):
        self.args = (float(spatial_scale), output_size[0], output_size[1], int(sampling_ratio), bool(aligned))

    def forward(self, x, rois):
        self.kernels = backends.kernels(x, "roi")
        y, self.saved = self.kernels.roi_align_forward(x, rois, *self.args)
        return y

    def backward(self, gy):
        return self.kernels.roi_align_backward(gy, self.saved), None


def _check_rois(name, input, rois):
    """Both tensors must share a dtype and rois be (K, 5), as torchvision's kernels demand."""
    if input.dim() != 4:
        raise RuntimeError(f"{name}: expected a 4-D (N, C, H, W) input, got shape {list(input.shape)}")
    if input.dtype != rois.dtype:
        raise RuntimeError(f"{name}: input should have the same type as rois, got {input.dtype} and {rois.dtype}")


def _as_rois(boxes):
    """Tensor[K, 5] rois from either accepted box format."""
    check_roi_boxes_shape(boxes)
    return boxes if isinstance(boxes, Tensor) else convert_boxes_to_roi_format(boxes)


def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
    """Pool each box of ``boxes`` (Tensor[K, 5] with the image index first, or a list of Tensor[L, 4])
    from ``input`` (N, C, H, W) to (K, C, *output_size).

    Each output bin averages ``sampling_ratio`` x ``sampling_ratio`` bilinear samples (``-1``:
    ceil(bin size) per axis); box coordinates are scaled by ``spatial_scale``; ``aligned`` shifts
    them by half a pixel so that sample centres line up with pixel centres.
    """
    rois = _as_rois(boxes)
    _check_rois("roi_align", input, rois)
    return _RoIAlign(_pair(output_size), spatial_scale, sampling_ratio, aligned)(input, rois.detach())


class RoIAlign(nn.Module):
    """Module form of :func:`roi_align`."""

    def __init__(self, output_size, spatial_scale, sampling_ratio, aligned=False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self):
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")


__all__ = ["roi_align", "RoIAlign"]
