"""torch's argument errors of 1-D and 2-D pooling, raised before the kernels see (and divide by) the window.

A zero stride or kernel, a zero dilation, a negative padding or a zero divisor would otherwise reach the pooling
geometry as a division by zero or as a silently wrong window; an adaptive output size of the wrong length or
below zero, and an input of the wrong rank, get torch's message for each function.
"""
import operator


def plain_ints(*values):
    """Window arguments with numpy integers and 0-dim integer tensors (which torch takes) made Python ints, in
    sequences too; anything else unchanged (for the checks below to refuse)."""
    return tuple(_plain(v) for v in values)


def _plain(value):
    if value is None or type(value) in (int, float, bool):
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    try:
        return operator.index(value)
    except TypeError:
        return value


def _per_dim(value, nd):
    value = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    return value * nd if len(value) == 1 else value


def check_rank(name, input, nd):
    """The input must have nd + 1 (unbatched) or nd + 2 dims, with the message of torch's ``name``."""
    if input.dim() in (nd + 1, nd + 2):
        return
    shape = list(input.shape)
    if name == "max_pool2d":
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if name == "max_pool1d":
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{shape}")
    if name == "adaptive_max_pool2d":
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {shape}")
    if name == "adaptive_avg_pool2d":
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {shape}")
    if nd == 1:
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           f"'self' (while checking arguments for {name})")
    raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D input, but got input of size: {shape}")


def check_max_pool1d(kernel_size, stride, padding, dilation):
    """max_pool1d's own messages (torch checks it apart from the 2-D pooling)."""
    k = _per_dim(kernel_size, 1)[0]
    s = k if stride in (None, (), []) else _per_dim(stride, 1)[0]
    for name, v in (("kernel_size", k), ("stride", s)):
        if v <= 0:
            raise RuntimeError(f"max_pool1d() {name} must be greater than zero, but got {v}")
    p, d = _per_dim(padding, 1)[0], _per_dim(dilation, 1)[0]
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")


def check_window(kernel_size, stride, padding, nd, dilation=None):
    """The 2-D (and average 1-D) pooling checks: zero strides (the stride defaults to the kernel), non-positive
    kernels and dilations (``dilation`` None for average pooling, which has none), negative paddings."""
    kernel = _per_dim(kernel_size, nd)
    strides = kernel if stride in (None, (), []) else _per_dim(stride, nd)
    if any(s == 0 for s in strides):
        raise RuntimeError("stride should not be zero")
    if min(kernel) <= 0:
        sizes = kernel if nd == 2 else (1,) + kernel
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {sizes[0]} kW: {sizes[1]}")
    if dilation is not None and min(_per_dim(dilation, nd)) <= 0:
        dilations = _per_dim(dilation, nd)
        dilations = dilations if nd == 2 else (1,) + dilations
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilations[0]} dilationW: "
                           f"{dilations[1]}")
    negative = [p for p in _per_dim(padding, nd) if p < 0]
    if negative:
        raise RuntimeError(f"pad must be non-negative, but got pad: {negative[0]}")


def check_divisor(divisor_override):
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")


def check_adaptive_size(name, input, output_size, nd):
    """The output size's length and sign, with the messages of torch's ``name`` (1-D pooling runs as 2-D)."""
    sizes = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size,) * nd
    if len(sizes) != nd:
        if nd == 1:
            raise RuntimeError(f"{name}() argument 'output_size' should contain one int (got {len(sizes)})")
        if name == "adaptive_max_pool2d":
            raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must be 2")
        raise RuntimeError(f"{name}: output_size must be {nd}")
    if all(s is None or s >= 0 for s in sizes):
        return
    sizes = (1,) * (2 - nd) + tuple(n if s is None else s for s, n in zip(sizes, input.shape[-nd:]))
    if "max" in name:
        shape = list(input.shape[:-nd]) + list(sizes)
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {shape}")
    raise RuntimeError("adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                       f"received {{{', '.join(map(str, sizes))}}}")
