"""Max unpooling: the partial inverse of max pooling, from the indices ``max_pool*(return_indices=True)`` gives.

Each input value is written at its flat index within its (N, C) plane of a zero output, a ``scatter`` along
the flattened spatial axis; the backward pass (``scatter``'s) gathers the output gradient at those indices,
as torch's unpooling backward does. 1-D unpooling is 2-D unpooling over a unit trailing width, as in torch.
"""
import math

from ... import _dtype
from ...tensor import Tensor
from .pooling import _expand
from ...amp import autocast_mode


def _default_size(input, kernel, stride, padding):
    """The spatial size max pooling came from when no ``output_size`` is given."""
    sizes = input.shape[-len(kernel):]
    return [(n - 1) * s + k - 2 * p for n, k, s, p in zip(sizes, kernel, stride, padding)]


def _output_size(input, kernel, stride, padding, output_size):
    """torch's choice and checks of the unpooled spatial size: ``output_size`` (spatial, or with N and C
    in front) must lie strictly within one stride of the default size."""
    default = _default_size(input, kernel, stride, padding)
    if output_size is None:
        return default
    nd = len(kernel)
    sizes = list(output_size)
    if len(sizes) == nd + 2:
        sizes = sizes[2:]
    if len(sizes) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                         f"length of '{len(sizes)}'")
    for d, (size, base, s) in enumerate(zip(sizes, default, stride)):
        if not base - s < size < base + s:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {base - s} and '
                             f'{base + s})')
    return sizes


def _check_inputs(input, indices, nd):
    """torch's checks of the unpooled values and their indices (dims, dtype, matching shapes)."""
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                           f"tensor with {input.dim()} dimensions.")
    if indices.dtype is not _dtype.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype.title}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")


def _unpool(input, indices, sizes):
    """Scatter ``input`` into zero planes of spatial size ``sizes`` at the flat ``indices``."""
    nd = len(sizes)
    _check_inputs(input, indices, nd)
    unbatched = input.dim() == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    idx = indices.unsqueeze(0) if unbatched else indices
    n, c = x.shape[:2]
    plane = math.prod(sizes)
    flat_idx = idx.reshape(n, c, -1)
    if plane == 0:  # torch returns the empty output without looking at the indices
        out = x.reshape(n, c, -1)[:, :, :0].reshape(n, c, *sizes)
        return out.squeeze(0) if unbatched else out
    invalid = (flat_idx < 0) | (flat_idx >= plane)
    if invalid.any():
        raise RuntimeError(f"Found an invalid max index: {int(flat_idx[invalid][0])} (output volumes are of size "
                           f"{'x'.join(str(s) for s in sizes)})")
    out = x.new_zeros((n, c, plane)).scatter(2, flat_idx, x.reshape(n, c, -1))
    out = out.reshape(n, c, *sizes)
    return out.squeeze(0) if unbatched else out


def _unpooled_size(nd, name, input, kernel_size, stride, padding, output_size):
    """The spatial output size of ``name`` for ``input`` (torch's TypeError for a non-tensor)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(input).__name__}")
    kernel = _expand(kernel_size, nd)
    stride = kernel if stride is None else _expand(stride, nd)
    padding = _expand(padding, nd)
    return _output_size(input, kernel, stride, padding, output_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch's ``max_unpool1d``: the inverse of ``max_pool1d`` with zeros off the maxima."""
    sizes = _unpooled_size(1, "max_unpool1d", input, kernel_size, stride, padding, output_size)
    return _unpool(input.unsqueeze(-1), indices.unsqueeze(-1), sizes + [1]).squeeze(-1)


@autocast_mode.float32("cpu")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch's ``max_unpool2d``: the inverse of ``max_pool2d`` with zeros off the maxima."""
    sizes = _unpooled_size(2, "max_unpool2d", input, kernel_size, stride, padding, output_size)
    return _unpool(input, indices, sizes)


@autocast_mode.float32("cpu")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """torch's ``max_unpool3d``: the inverse of ``max_pool3d`` with zeros off the maxima."""
    sizes = _unpooled_size(3, "max_unpool3d", input, kernel_size, stride, padding, output_size)
    return _unpool(input, indices, sizes)


__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]
