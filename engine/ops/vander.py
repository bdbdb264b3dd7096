"""``torch.vander``: the Vandermonde matrix of a 1-d tensor, its columns the powers x^(N-1) ... x^0 (or rising,
with ``increasing``). The powers are a running product along each row, so gradients hold at x = 0 too."""
from .shape import cat, flip


def vander(x, N=None, increasing=False):
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if x.dtype.is_floating_point or x.dtype.is_complex:
        values = x
    else:
        values = x.long()  # torch's integer and bool powers are int64
    if n == 0:
        return values.new_zeros((x.shape[0], 0))
    ones = values.new_ones((x.shape[0], 1))
    powers = cat([ones, values.unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1)
    return powers if increasing else flip(powers, (1,))


__all__ = ["vander"]
