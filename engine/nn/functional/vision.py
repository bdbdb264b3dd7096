"""Resampling and rearranging: interpolate/upsample, pixel_shuffle, pixel_unshuffle."""
import warnings

from ... import backends
from ...autograd.double_backward import transposed_backward
from ...autograd.function import Function
from . import _memory_format
from ...backends.interpolation_geometry import check_antialias


class Interpolate(Function):
    uses_inputs = False

    def __init__(self, size, mode, align_corners, scale_factor, recompute_scale_factor, antialias=False):
        self.args = (size, mode, align_corners, scale_factor, recompute_scale_factor, antialias)

    def forward(self, x):
        self.kernels = backends.kernels(x, "interpolate")
        y, self.saved = self.kernels.interpolate_forward(x, *self.args)
        return y

    def backward(self, gy):
        return self.kernels.interpolate_backward(gy, self.saved)

    def backward_tensors(self, gy):
        """Linear with constant weights: the transpose of the backward is the forward (``Transposed``)."""
        return transposed_backward(self, gy)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, L) or (N, C, H, W) inputs (as ``torch.nn.functional.interpolate``).

    ``antialias=True`` (bilinear and bicubic on 4-D input, as torch allows) widens the filter by the
    downscaling factor so that every input pixel contributes (Pillow's resampling, torch's
    ``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa``); the bicubic filter then has a = -0.5.
    """
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None else
                         "either size or scale_factor should be defined")
    check_antialias(input.dim(), mode, antialias)
    spatial = input.dim() - 2
    if spatial not in (1, 2):
        raise NotImplementedError(f"Input Error: Only 3D and 4D input Tensors supported (got {input.dim()}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic")
    if size is not None and not isinstance(size, int):
        size = tuple(int(s) for s in size)
        if len(size) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and output size of {list(size)}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                             "(o1, o2, ...,oK) format.")
    if mode in ("linear", "bilinear", "bicubic") and align_corners is None:
        align_corners = False
    out = Interpolate(size, mode, align_corners, scale_factor, recompute_scale_factor, bool(antialias))(input)
    return _memory_format.like_input(input, out)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """(N, C*r*r, H, W) -> (N, C, H*r, W*r)."""
    n, c, h, w = input.shape
    r = upscale_factor
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    x = input.reshape(n, c // (r * r), r, r, h, w).permute(0, 1, 4, 2, 5, 3)
    return x.reshape(n, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(N, C, H*r, W*r) -> (N, C*r*r, H, W)."""
    n, c, h, w = input.shape
    r = downscale_factor
    x = input.reshape(n, c, h // r, r, w // r, r).permute(0, 1, 3, 5, 2, 4)
    return x.reshape(n, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, g*k, ...) -> (N, k*g, ...): channel ``i*k + j`` moves to ``j*g + i`` (ShuffleNet's mixing of groups)."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return x.reshape((n, c) + rest)


native_channel_shuffle = channel_shuffle  # torch's name for the same op without its quantized dispatch

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "native_channel_shuffle"]
