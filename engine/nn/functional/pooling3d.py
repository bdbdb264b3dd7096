"""3-d pooling (max, average, adaptive) as two passes of the 2-d pooling kernels.

Every 3-d pooling window is a box, and max, sum and window counts all factor over its axes. So a 3-d pool
is a 2-d pool over (height, width) of every depth slice, followed by a 2-d pool with a (depth, 1) window
over (depth, height * width). Both passes are the 2-d CPU and CUDA kernels with their backward passes, so
no 3-d kernel is needed, and autograd chains the two backward passes. The results are torch's:

- max: each pass takes the first maximum it meets, so the pair takes the first in (depth, height, width)
  order, as torch's 3-d kernel does; indices are flat over depth * height * width as torch's;
- average: the divisor of a box is the product of its per-axis counts (with or without padding), so the
  product of the two passes' averages is the box's; ``divisor_override`` divides the two passes' sums;
- adaptive: the bins of each axis are independent of the other axes.
"""
from ... import _dtype
from ...amp import autocast_mode
from ...tensor import Tensor
from .pool_arguments import plain_ints
from .pooling import adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool2d, max_pool2d


def _triple(name, op, value):
    """``value`` as a tuple of three, with torch's error for a wrong count."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(values) == 1:
        values = values * 3
    if len(values) != 3:
        either = "either be a single int, or" if op == "max_pool3d" else "be a single int, or"
        raise RuntimeError(f"{op}: {name} must {either} a tuple of three ints")
    return values


def _checked_input(op, input):
    """``input`` as a 5-D batch and whether it was unbatched, with torch's errors."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if op.startswith("adaptive"):
        if input.dim() not in (4, 5):
            got = ": " if op == "adaptive_max_pool3d" else " "
            raise RuntimeError(f"{op}(): Expected 4D or 5D tensor, but got{got}{list(input.shape)}")
        empty = [d for d in range(1, input.dim()) if input.shape[d] == 0]
        if empty:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(input.shape)} with dimension {empty[0]} being empty")
    elif input.dim() not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    elif 0 in input.shape[-4:]:  # torch's message names the empty dim by its size, always 0
        where = "max_pool3d_with_indices_out_cpu_template" if op == "max_pool3d" else op
        raise RuntimeError(f"{where}(): Expected input's non-batch dimensions to have positive length, but input "
                           f"has a shape of {list(input.shape)} and non-batch dimension 0 has length zero!")
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)


def _check_window(op, input, kernel, stride, padding, dilation, ceil_mode):
    """torch's checks of a 3-d window on ``input``: zero strides, over-wide padding, an average pooling's input
    smaller than its window, empty outputs."""
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    for name, values in (("kernel size", kernel), ("dilation", dilation)):
        if min(values) <= 0:
            letter = "k" if name == "kernel size" else "dilation"
            raise RuntimeError(f"{name} should be greater than zero, but got "
                               + " ".join(f"{letter}{axis}: {v}" for axis, v in zip("THW", values)))
    if min(padding) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    for k, p, d in zip(kernel, padding, dilation):
        if 2 * p > k:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    if op == "avg_pool3d" and any(n < k for n, k in zip(input.shape[-3:], kernel)):
        t, h, w = input.shape[-3:]  # torch's average pooling wants the unpadded input to hold a window
        raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size "
                           f"(kT: {kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    sizes = []
    for n, k, s, p, d in zip(input.shape[-3:], kernel, stride, padding, dilation):
        span = n + 2 * p - d * (k - 1) - 1
        out = (span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= n + p:
            out -= 1
        sizes.append(out)
    if any(n < 1 for n in sizes):
        channels_and_input = "x".join(str(n) for n in input.shape[-4:])
        raise RuntimeError(f"Given input size: ({channels_and_input}). Calculated output size: "
                           f"({input.shape[-4]}x{'x'.join(map(str, sizes))}). Output size is too small")


def _slices(x):
    """(N, C, D, H, W) as (N, C * D, H, W): each depth slice a 2-d image."""
    n, c, d, h, w = x.shape
    return x.reshape(n, c * d, h, w)


def _depth_rows(y, channels, depth):
    """The first pass's (N, C * D, H', W') as (N, C, D, H' * W'): depth the row axis of the second pass."""
    n, _, h, w = y.shape
    return y.reshape(n, channels, depth, h * w)


def _volumes(z, plane):
    """The second pass's (N, C, D', H' * W') as (N, C, D', H', W')."""
    n, c, d, _ = z.shape
    return z.reshape(n, c, d, *plane)


def _flat_indices(depth_indices, plane_indices, plane_size, input_plane_size):
    """Indices over D * H * W from the second pass's (over D * H'W') and the first pass's (over H * W)."""
    depth = depth_indices // plane_size
    within_plane = plane_indices.gather(2, depth)
    return depth * input_plane_size + within_plane


def _two_pass_max(x, plane_pool, depth_pool, return_indices):
    """Max over boxes: ``plane_pool`` over each depth slice, then ``depth_pool`` along depth."""
    n, c, d, h, w = x.shape
    y = plane_pool(_slices(x), return_indices)
    y, plane_indices = y if return_indices else (y, None)
    plane = tuple(y.shape[-2:])
    z = depth_pool(_depth_rows(y, c, d), return_indices)
    if not return_indices:
        return _volumes(z, plane)
    z, depth_indices = z
    indices = _flat_indices(depth_indices, _depth_rows(plane_indices, c, d), plane[0] * plane[1], h * w)
    return _volumes(z, plane), _volumes(indices, plane)


def _widened(x):
    """``x`` in float32 where it is float16 or bfloat16: the two passes of an average would round the
    intermediate averages to the narrow type, where torch's 3-d kernel rounds the box's average once."""
    return x.float() if x.dtype in (_dtype.float16, _dtype.bfloat16) else x


def _empty_output(x, sizes, return_indices):
    """torch's empty output of an adaptive pooling of ``x`` (and its indices), still joined to the graph of
    ``x``: the passes' bins need at least one element on each axis."""
    out = x.reshape(-1)[:0].reshape(tuple(x.shape[:2]) + tuple(sizes))
    return (out, out.detach().long()) if return_indices else out


def _unbatched(out, unbatched):
    if not unbatched:
        return out
    if isinstance(out, tuple):
        return tuple(t.squeeze(0) for t in out)
    return out.squeeze(0)


@autocast_mode.float32("cpu")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch's ``max_pool3d`` over (N, C, D, H, W) or (C, D, H, W) inputs."""
    kernel_size, stride, padding, dilation = plain_ints(kernel_size, stride, padding, dilation)
    kernel = _triple("kernel_size", "max_pool3d", kernel_size)
    stride = kernel if stride is None or stride == [] or stride == () else _triple("stride", "max_pool3d", stride)
    padding = _triple("padding", "max_pool3d", padding)
    dilation = _triple("dilation", "max_pool3d", dilation)
    x, unbatched = _checked_input("max_pool3d", input)
    _check_window("max_pool3d", x, kernel, stride, padding, dilation, ceil_mode)

    def plane_pool(slices, indices):
        return max_pool2d(slices, kernel[1:], stride[1:], padding[1:], dilation[1:], ceil_mode, indices)

    def depth_pool(rows, indices):
        return max_pool2d(rows, (kernel[0], 1), (stride[0], 1), (padding[0], 0), (dilation[0], 1), ceil_mode,
                          indices)

    return _unbatched(_two_pass_max(x, plane_pool, depth_pool, return_indices), unbatched)


@autocast_mode.float32("cpu")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch's ``avg_pool3d`` over (N, C, D, H, W) or (C, D, H, W) inputs."""
    kernel_size, stride, padding = plain_ints(kernel_size, stride, padding)
    kernel = _triple("kernel_size", "avg_pool3d", kernel_size)
    stride = kernel if stride is None or stride == [] or stride == () else _triple("stride", "avg_pool3d", stride)
    padding = _triple("padding", "avg_pool3d", padding)
    x, unbatched = _checked_input("avg_pool3d", input)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_window("avg_pool3d", x, kernel, stride, padding, (1, 1, 1), ceil_mode)
    sums = None if divisor_override is None else 1  # each pass sums; the override divides once at the end
    n, c, d, h, w = x.shape
    y = avg_pool2d(_slices(_widened(x)), kernel[1:], stride[1:], padding[1:], ceil_mode, count_include_pad, sums)
    plane = tuple(y.shape[-2:])
    z = avg_pool2d(_depth_rows(y, c, d), (kernel[0], 1), (stride[0], 1), (padding[0], 0), ceil_mode,
                   count_include_pad, sums)
    out = _volumes(z, plane)
    if divisor_override is not None:
        out = out / divisor_override
    return _unbatched(out.to(x.dtype), unbatched)


def _adaptive_triple(op, output_size):
    values = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * 3
    if len(values) != 3:
        raise RuntimeError("adaptive_max_pool3d(): internal error: output_size.size() must be 3"
                           if op == "adaptive_max_pool3d" else f"{op}: output_size must be 3")
    return values


def _adaptive_sizes(op, x, sizes):
    """The (depth, height, width) output sizes (None keeps the input's), with torch's error for a negative one."""
    sizes = tuple(n if s is None else s for s, n in zip(sizes, x.shape[-3:]))
    if min(sizes) < 0:
        if op == "adaptive_max_pool3d":
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                               f"{list(x.shape[:2]) + list(sizes)}")
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{sizes[0]}, {sizes[1]},{sizes[2]}}}")
    return sizes


@autocast_mode.float32("cpu")
def adaptive_avg_pool3d(input, output_size):
    """torch's ``adaptive_avg_pool3d``; ``None`` in ``output_size`` keeps that axis's size."""
    sizes = _adaptive_triple("adaptive_avg_pool3d", output_size)
    x, unbatched = _checked_input("adaptive_avg_pool3d", input)
    od, oh, ow = _adaptive_sizes("adaptive_avg_pool3d", x, sizes)
    if 0 in (od, oh, ow):
        return _unbatched(_empty_output(x, (od, oh, ow), False), unbatched)
    n, c, d, h, w = x.shape
    y = adaptive_avg_pool2d(_slices(_widened(x)), (oh, ow))
    z = adaptive_avg_pool2d(_depth_rows(y, c, d), (od, oh * ow))
    return _unbatched(_volumes(z, (oh, ow)).to(x.dtype), unbatched)


@autocast_mode.float32("cpu")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """torch's ``adaptive_max_pool3d``; ``None`` in ``output_size`` keeps that axis's size."""
    sizes = _adaptive_triple("adaptive_max_pool3d", output_size)
    x, unbatched = _checked_input("adaptive_max_pool3d", input)
    od, oh, ow = _adaptive_sizes("adaptive_max_pool3d", x, sizes)
    if 0 in (x.shape[1], od, oh, ow):  # an empty output axis, or an unbatched input without channels
        return _unbatched(_empty_output(x, (od, oh, ow), return_indices), unbatched)

    def plane_pool(slices, indices):
        return adaptive_max_pool2d(slices, (oh, ow), indices)

    def depth_pool(rows, indices):
        return adaptive_max_pool2d(rows, (od, rows.shape[-1]), indices)

    return _unbatched(_two_pass_max(x, plane_pool, depth_pool, return_indices), unbatched)


def max_pool3d_with_indices(*args, **kwargs):
    kwargs["return_indices"] = True
    return max_pool3d(*args, **kwargs)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool3d`` returning (values, indices) whatever ``return_indices`` says, as torch."""
    return adaptive_max_pool3d(input, output_size, True)


__all__ = ["max_pool3d", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d", "max_pool3d_with_indices",
           "adaptive_max_pool3d_with_indices"]
