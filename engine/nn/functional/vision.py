"""Resampling and rearranging: interpolate/upsample, pixel_shuffle, pixel_unshuffle."""
import numbers
import warnings

import numpy as np

from ... import backends
from ...autograd.double_backward import transposed_backward
from ...autograd.function import Function
from . import _memory_format
from ...backends.interpolation_geometry import check_antialias, output_sizes
from ...ops.creation import from_numpy
from .pooling3d import adaptive_avg_pool3d
from ...amp import autocast_mode


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


_MODES = {3: ("nearest", "nearest-exact", "linear", "area"), 4: ("nearest", "nearest-exact", "bilinear", "bicubic",
                                                                "area"),
          5: ("nearest", "nearest-exact", "trilinear", "area")}
_RANK_OF_MODE = {"bilinear": 4, "linear": 3, "trilinear": 5}
_ALL_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def _is_integer(value):
    """An int-like size entry (a Python or numpy integer, or an integer tensor), as torch's size check allows."""
    if isinstance(value, numbers.Integral):
        return True
    return hasattr(value, "is_floating_point") and not value.is_floating_point()


def _check_sizes(input, size, scale_factor, recompute_scale_factor, spatial):
    """torch's checks of ``size`` and ``scale_factor``; the size as a tuple of ints (or an int, or None)."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(size, (tuple, list)):
        if len(size) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {list(input.shape[2:])} and output size of {size}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                             "(o1, o2, ...,oK) format.")
        if not all(_is_integer(s) for s in size):
            raise TypeError("expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, "
                            f"int], but got size with types {[type(s) for s in size]}")
        size = tuple(int(s) for s in size)
    if isinstance(scale_factor, (tuple, list)) and len(scale_factor) != spatial:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                         f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                         "scale_factor in (s1, s2, ...,sK) format.")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    return size


def _check_mode(input, mode, antialias):
    """torch's refusals of a mode the input's rank lacks and of antialiasing other than bilinear or bicubic on
    4-D input (torch's third antialiasing mode, lanczos, is not implemented here, nor named in the message)."""
    check_antialias(input.dim(), mode, antialias)
    if mode in _MODES.get(input.dim(), ()):
        return
    if mode in _RANK_OF_MODE and input.dim() in _MODES:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_RANK_OF_MODE[mode]}D input")
    raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                              f"the modes: {_ALL_MODES} (got {mode})")


def _check_output_sizes(input, out):
    """torch's refusal of an empty output axis (its resampling kernels', not area's adaptive pooling)."""
    if min(out) > 0:
        return
    names = ("D", "H", "W")[-len(out):]
    sizes_in = ", ".join(f"{n}: {v}" for n, v in zip(names, input.shape[2:]))
    sizes_out = ", ".join(f"{n}: {v}" for n, v in zip(names, out))
    joint = " and" if len(out) == 1 else ""
    raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({sizes_in}){joint} output "
                       f"({sizes_out})")


def _nearest_source(n_in, n_out, scale):
    """The source index of each output position of torch's 1-D and 3-D 'nearest' forward: floor(dst * s) in
    float32, s = 1 / scale_factor when one is given (and kept), else in / out; never the copy or halving that the
    2-D kernel (and so ``Interpolate``) takes when the output is as long as the input or twice as long."""
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n_in) / np.float32(n_out)
    return np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * s).astype(np.int64), n_in - 1)


def _kernel_shortcut(in_sizes, out, scales):
    """Whether the 2-D kernel's copy or halving would take the place of a kept scale factor on some axis."""
    return any(s is not None and o in (n, 2 * n) for n, o, s in zip(in_sizes, out, scales))


def _nearest_by_gathers(input, out, scales):
    """'nearest' resizing as one ``index_select`` per spatial axis (its gradient the scatter-add)."""
    for axis, (n_in, n_out, scale) in enumerate(zip(input.shape[2:], out, scales), 2):
        if n_in != n_out or scale is not None:
            index = from_numpy(_nearest_source(n_in, n_out, scale)).to(input.device)
            input = input.index_select(axis, index)
    return input


def _interpolate_3d(input, size, scale_factor, mode, align_corners, recompute_scale_factor):
    """A 5-D resize as two separable passes of the 4-D kernels: (H, W) of every depth slice, then the depth
    (with the resized (H, W) flattened into one axis that the second pass leaves unchanged, its scale 1)."""
    n, c, depth = input.shape[:3]
    plane_mode = "bilinear" if mode == "trilinear" else mode
    if size is not None:
        size = (size,) * 3 if isinstance(size, int) else size
        plane_args, depth_args = (size[1:], None), lambda hw: ((size[0], hw), None)
    else:
        scales = (scale_factor,) * 3 if not isinstance(scale_factor, (tuple, list)) else tuple(scale_factor)
        plane_args, depth_args = (None, scales[1:]), lambda hw: (None, (scales[0], 1.0))
    planes = input.reshape((n, c * depth) + tuple(input.shape[3:]))
    planes = Interpolate(plane_args[0], plane_mode, align_corners, plane_args[1], recompute_scale_factor)(planes)
    height, width = planes.shape[2:]
    columns = planes.reshape(n, c, depth, height * width)
    out_size, out_scale = depth_args(height * width)
    columns = Interpolate(out_size, plane_mode, align_corners, out_scale, recompute_scale_factor)(columns)
    return columns.reshape(n, c, columns.shape[2], height, width)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize (N, C, L), (N, C, H, W) or (N, C, D, H, W) inputs (as ``torch.nn.functional.interpolate``).

    ``antialias=True`` (bilinear and bicubic on 4-D input, as torch allows) widens the filter by the
    downscaling factor so that every input pixel contributes (Pillow's resampling, torch's
    ``_upsample_bilinear2d_aa`` / ``_upsample_bicubic2d_aa``); the bicubic filter then has a = -0.5.
    5-D inputs (nearest-exact, trilinear) are resized in two separable passes of the 4-D kernels, 'nearest' by
    one gather per axis (as on 3-D inputs whose kept scale factor the 2-D kernel's shortcuts would override:
    torch's 1-D and 3-D kernels compute every index, its 2-D kernel does not), and 'area' is
    ``adaptive_avg_pool3d``, as in torch.
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    spatial = input.dim() - 2
    size = _check_sizes(input, size, scale_factor, recompute_scale_factor, spatial)
    if mode == "area" and size is None:
        recompute_scale_factor = True
    _check_mode(input, mode, antialias)
    out, scales = output_sizes(input.shape[2:], size, scale_factor, recompute_scale_factor)
    if mode == "area" and spatial == 3:
        return adaptive_avg_pool3d(input, out)
    if mode != "area":
        _check_output_sizes(input, out)
    resize = _resize if mode == "area" else _upsample
    return resize(input, mode, size, scale_factor, align_corners, recompute_scale_factor, antialias, out, scales)


def _resize(input, mode, size, scale_factor, align_corners, recompute_scale_factor, antialias, out, scales):
    """``interpolate``'s resampling, its arguments checked and the output size ``out`` known."""
    spatial = input.dim() - 2
    if mode == "nearest" and (spatial == 3 or spatial == 1 and _kernel_shortcut(input.shape[2:], out, scales)):
        return _nearest_by_gathers(input, out, scales)
    if spatial == 3:
        return _interpolate_3d(input, size, scale_factor, mode, align_corners, recompute_scale_factor)
    resized = Interpolate(size, mode, align_corners, scale_factor, recompute_scale_factor, bool(antialias))(input)
    return _memory_format.like_input(input, resized)


# torch's CUDA autocast runs every upsample_* kernel in float32; 'area' is adaptive pooling, on no list
_upsample = autocast_mode.float32("cuda")(_resize)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _check_rearrange(op, input, factor, name):
    """torch's checks of pixel_shuffle / pixel_unshuffle's input rank and factor."""
    if input.dim() < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.dim()} "
                           "dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r); channels-last in, channels-last out (as torch's)."""
    r = upscale_factor
    _check_rearrange("pixel_shuffle", input, r, "upscale_factor")
    lead, (c, h, w) = tuple(input.shape[:-3]), input.shape[-3:]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
                           f"of upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(lead + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(k)) + tuple(k + i for i in (0, 3, 1, 4, 2)))
    return _memory_format.like_input(input, x.reshape(lead + (c // (r * r), h * r, w * r)))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r*r, H, W); channels-last in, channels-last out (as torch's)."""
    r = downscale_factor
    _check_rearrange("pixel_unshuffle", input, r, "downscale_factor")
    lead, (c, h, w) = tuple(input.shape[:-3]), input.shape[-3:]
    for axis, size in (("height", h), ("width", w)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {axis} to be divisible by downscale_factor, but "
                               f"input.size({-2 if axis == 'height' else -1})={size} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(lead + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(k)) + tuple(k + i for i in (0, 2, 4, 1, 3)))
    return _memory_format.like_input(input, x.reshape(lead + (c * r * r, h // r, w // r)))


def channel_shuffle(input, groups):
    """(N, g*k, ...) -> (N, k*g, ...): channel ``i*k + j`` moves to ``j*g + i`` (ShuffleNet's mixing of groups); a
    channels-last input gives a channels-last result, as torch's."""
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return _memory_format.like_input_any_rank(input, x.reshape((n, c) + rest))


native_channel_shuffle = channel_shuffle  # torch's name for the same op without its quantized dispatch

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "native_channel_shuffle"]
