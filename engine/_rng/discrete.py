"""Discrete samplers (integers, Bernoulli, permutations, multinomial) as torch's CPU kernels draw them."""
import numpy as np

from .. import _dtype
from . import selection
from .continuous import exponential_, unit_float32, unit_float64
from .order import fill_in_memory_order, memory_order_axes

# Ranges from 2^28 up are reduced from a 64-bit draw, smaller ones from a 32-bit word (torch accepts
# the slight skew of ``%`` below that).
_WIDE_RANGE = 1 << 28
# randperm swaps with 32-bit draws below this n, and uses the 64-bit inside-out shuffle above it.
_SMALL_PERMUTATION = (2 ** 32 - 1) // 20


def _draws(generator, count, wide):
    return generator.draw_uint64(count) if wide else generator.draw_uint32(count).astype(np.uint64)


def random_from_to_(generator, out, low, span):
    """Integers low + (draw % span), span = high - low (``random_(low, high)``, ``randint``)."""
    values = _draws(generator, out.size, span >= _WIDE_RANGE) % np.uint64(span)
    values = (values + np.uint64(low % 2 ** 64)).view(np.int64)
    fill_in_memory_order(out, values.astype(out.dtype))


def random_full_range_(generator, out):
    """Every int64 equally likely (``random_(-2**63, None)``)."""
    fill_in_memory_order(out, generator.draw_uint64(out.size).view(np.int64).astype(out.dtype))


def random_(generator, out):
    """``random_()``: [0, 2^mantissa] for floating types, [0, max] for integers, a coin for bool."""
    dtype = out.dtype
    if dtype == np.bool_:
        values = generator.draw_uint32(out.size) & np.uint32(1)
    elif dtype.kind == "f" or dtype in _dtype.HALF_NP:  # bfloat16's numpy kind is "V"
        digits = np.finfo(dtype).nmant + 1
        modulus = np.uint64((1 << digits) + 1)
        values = _draws(generator, out.size, dtype == np.float64) % modulus
    else:
        modulus = np.uint64(int(np.iinfo(dtype).max) + 1)
        values = _draws(generator, out.size, dtype == np.int64) % modulus
    fill_in_memory_order(out, values.astype(dtype))


def bernoulli_scalar_(generator, out, p):
    """1 where a float64 unit uniform falls below ``p``."""
    fill_in_memory_order(out, (unit_float64(generator, out.size) < p).astype(out.dtype))


def bernoulli_tensor_(generator, out, probs):
    """1 where a unit uniform falls below its probability: float64 uniforms for float64 ``probs``,
    float32 ones otherwise. ``probs`` has ``out``'s shape; both are walked in ``out``'s memory order."""
    probs_in_order = np.broadcast_to(probs, out.shape).transpose(memory_order_axes(out)).ravel()
    if probs.dtype == np.float64:
        draws = unit_float64(generator, out.size)
    else:
        draws = unit_float32(generator, out.size)
        probs_in_order = probs_in_order.astype(np.float32)
    fill_in_memory_order(out, (draws < probs_in_order).astype(out.dtype))


def randperm(generator, n):
    """A permutation of 0..n-1 as int64: swaps with 32-bit draws for usual n, the 64-bit inside-out
    Fisher-Yates shuffle for huge n."""
    if n < _SMALL_PERMUTATION:
        offsets = (generator.draw_uint32(max(n - 1, 0)) % np.arange(n, 1, -1, dtype=np.uint32)).tolist()
        values = list(range(n))
        for i, offset in enumerate(offsets):
            j = i + offset
            values[i], values[j] = values[j], values[i]
        return np.array(values, np.int64)
    picks = (generator.draw_uint64(n) % np.arange(1, n + 1, dtype=np.uint64)).tolist()
    values = [0] * n
    for i, j in enumerate(picks):
        values[i] = values[j]
        values[j] = i
    return np.array(values, np.int64)


def multinomial(generator, probs, count, replacement):
    """``count`` category indices per row of the 2-D float ``probs`` (int64, one row per distribution).

    Without replacement, or for one sample, torch takes the largest p / q with q ~ Exp(1) (the
    Gumbel trick; equal keys, such as the zero-probability categories', in its top-k's order); with
    replacement it searches the normalised cumulative sum for float64 uniforms.
    """
    if not replacement or count == 1:
        noise = np.empty_like(probs)
        exponential_(generator, noise, 1.0)
        keys = probs / noise
        if count == 1:
            return np.argmax(keys, axis=1)[:, None]
        out = np.argsort(-keys, axis=1, kind="stable")[:, :count]
        for row, row_keys in enumerate(keys):
            if np.unique(row_keys).size < row_keys.size:  # ties: their order is libstdc++'s
                out[row] = selection.topk_largest(row_keys.astype(np.float64).tolist(), count)
        return out
    cumulative_dtype = np.float64 if probs.dtype == np.float64 else np.float32
    out = np.empty((len(probs), count), np.int64)
    for row, weights in enumerate(probs):
        cumulative = np.cumsum(weights, dtype=cumulative_dtype)
        cumulative /= cumulative[-1]
        cumulative[-1] = 1
        out[row] = np.searchsorted(cumulative.astype(np.float64), unit_float64(generator, count), side="left")
    return out


def multinomial_checks(probs, count, replacement, values=True):
    """torch's one-line errors for a bad multinomial call, or None; ``values``: the checks of probs' values too
    (they read a GPU array's values: a CUDA graph capture leaves them out)."""
    if probs.ndim not in (1, 2):
        return "prob_dist must be 1 or 2 dim"
    categories = probs.shape[-1]
    if categories > 2 ** 24:
        return "number of categories cannot exceed 2^24"
    if count <= 0:
        return "cannot sample n_sample <= 0 samples"
    if not replacement and count > categories:
        return "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
    if not values:
        return None
    if not np.all(np.isfinite(probs)) or np.any(probs < 0):
        return "probability tensor contains either `inf`, `nan` or element < 0"
    if np.any(probs.reshape(-1, categories).sum(axis=1) == 0):
        return "invalid multinomial distribution (sum of probabilities <= 0)"
    return None

