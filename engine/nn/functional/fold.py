"""``unfold`` (im2col) and ``fold`` (col2im): sliding blocks of an image as columns, and back.

``unfold`` turns (N, C, H, W) into (N, C * kh * kw, L), one column per block position, channel-major as
torch's; ``fold`` sums such columns back into an image, so each is the other's gradient. Both run one
whole-array pass per kernel tap (kh * kw of them) over strided views, on numpy and CuPy alike.
"""
from ...autograd.double_backward import transposed_backward
from ...autograd.function import Function
from ...ops._common import xp_of
from .conv import _tuple


def _blocks(size, kernel, dilation, padding, stride):
    """Block positions along each spatial axis."""
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1 for n, k, d, p, s in zip(size, kernel, dilation, padding,
                                                                                   stride))


def _tap(i, j, geometry, blocks):
    """The strided window of padded-image positions that kernel tap (i, j) reads for every block."""
    _, dilation, _, stride = geometry
    rows = slice(i * dilation[0], i * dilation[0] + stride[0] * (blocks[0] - 1) + 1, stride[0])
    cols = slice(j * dilation[1], j * dilation[1] + stride[1] * (blocks[1] - 1) + 1, stride[1])
    return rows, cols


def _unfold_array(x, geometry):
    xp = xp_of(x)
    kernel, dilation, padding, stride = geometry
    n, c, h, w = x.shape
    blocks = _blocks((h, w), kernel, dilation, padding, stride)
    padded = xp.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    cols = xp.empty((n, c, kernel[0], kernel[1]) + blocks, x.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows, columns = _tap(i, j, geometry, blocks)
            cols[:, :, i, j] = padded[:, :, rows, columns]
    return cols.reshape(n, c * kernel[0] * kernel[1], blocks[0] * blocks[1])


def _fold_array(cols, size, geometry):
    xp = xp_of(cols)
    kernel, dilation, padding, stride = geometry
    n = cols.shape[0]
    c = cols.shape[1] // (kernel[0] * kernel[1])
    blocks = _blocks(size, kernel, dilation, padding, stride)
    cols = cols.reshape((n, c) + tuple(kernel) + blocks)
    padded = xp.zeros((n, c, size[0] + 2 * padding[0], size[1] + 2 * padding[1]), cols.dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            rows, columns = _tap(i, j, geometry, blocks)
            padded[:, :, rows, columns] += cols[:, :, i, j]
    return padded[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]


class Unfold(Function):
    uses_inputs = False

    def __init__(self, geometry):
        self.geometry = geometry

    def forward(self, x):
        self.size = x.shape[2:]
        return _unfold_array(x, self.geometry)

    def backward(self, gy):
        return _fold_array(gy, self.size, self.geometry)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


class Fold(Function):
    uses_inputs = False

    def __init__(self, size, geometry):
        self.size, self.geometry = size, geometry

    def forward(self, cols):
        return _fold_array(cols, self.size, self.geometry)

    def backward(self, gy):
        return _unfold_array(gy, self.geometry)

    def backward_tensors(self, gy):
        return transposed_backward(self, gy)


def _geometry(kernel_size, dilation, padding, stride):
    geometry = tuple(_tuple(value, 2, name) for value, name in
                     zip((kernel_size, dilation, padding, stride), ("kernel_size", "dilation", "padding", "stride")))
    kernel, dilation, padding, stride = geometry
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                           f"kernel_width: {kernel[1]}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dilation[0]} "
                           f"dilation_width: {dilation[1]}")
    if min(padding) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {stride[0]} "
                           f"stride_width: {stride[1]}")
    return geometry


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding blocks as columns: (N, C, H, W) -> (N, C * kh * kw, L) (``torch.nn.functional.unfold``)."""
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    geometry = _geometry(kernel_size, dilation, padding, stride)
    x = input if input.dim() == 4 else input.unsqueeze(0)
    blocks = _blocks(x.shape[2:], *geometry)
    if min(blocks) < 1:
        kernel, dilation, padding, _ = geometry
        raise RuntimeError(f"Given input with spatial size {tuple(x.shape[2:])}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
                           f"blocks as {blocks}, but its components must be at least one.")
    out = Unfold(geometry)(x)
    return out if input.dim() == 4 else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Columns summed back into an image: (N, C * kh * kw, L) -> (N, C, H, W) (``torch.nn.functional.fold``)."""
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.dim()}D)")
    geometry = _geometry(kernel_size, dilation, padding, stride)
    size = _tuple(output_size, 2, "output_size")
    kernel, dilation, padding, stride = geometry
    cols = input if input.dim() == 3 else input.unsqueeze(0)
    if cols.shape[1] % (kernel[0] * kernel[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={cols.shape[1]} and kernel_size={kernel}.")
    blocks = _blocks(size, *geometry)
    if min(blocks) < 1 or cols.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, "
                           f"but got input.size(2)={cols.shape[2]}.")
    out = Fold(size, geometry)(cols)
    return out if input.dim() == 3 else out.squeeze(0)


__all__ = ["unfold", "fold"]
