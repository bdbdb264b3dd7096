"""Pooling geometry with torch's rules, shared by the CPU and CUDA pooling kernels (host-side integers)."""
import numpy as np


def pair(v):
    """Accept an int or a 2-sequence for a per-axis parameter."""
    return (int(v), int(v)) if np.isscalar(v) else (int(v[0]), int(v[1]))


def out_size(n, k, s, p, d, ceil_mode):
    """torch's pooling output length; with ceil_mode the last window must start inside input or left pad."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def geometry(x_shape, kernel_size, stride, padding, dilation, ceil_mode):
    """Per-axis pairs (k, s, p, d), the output size and the extra bottom/right padding ceil_mode needs."""
    k = pair(kernel_size)
    s = k if stride is None or (not np.isscalar(stride) and len(stride) == 0) else pair(stride)
    p, d = pair(padding), pair(dilation)
    out = tuple(out_size(n, *a, ceil_mode) for n, a in zip(x_shape[2:], zip(k, s, p, d)))
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, x_shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, (x_shape[1],) + out))}). Output size is too small")
    extra = tuple(max(0, (o - 1) * si + di * (ki - 1) + 1 - (n + 2 * pi))
                  for o, si, di, ki, n, pi in zip(out, s, d, k, x_shape[2:], p))
    return k, s, p, d, out, extra


def adaptive_output_size(x_shape, output_size):
    """Resolve an adaptive output size (int or pair, None entries keep the input size)."""
    o = (output_size, output_size) if output_size is None or np.isscalar(output_size) else tuple(output_size)
    return tuple(n if v is None else int(v) for n, v in zip(x_shape[2:], o))


def bins(n, out):
    """torch's adaptive bins along one axis: start = floor(i*n/out), end = ceil((i+1)*n/out)."""
    i = np.arange(out)
    return i * n // out, -(-(i + 1) * n // out)
