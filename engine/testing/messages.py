"""The failure messages of ``assert_close``, laid out as torch's (the tests compare them line by line)."""
import numpy as np

__all__ = ["mismatch_msg", "scalar_mismatch_msg", "tensor_mismatch_msg"]


def mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    """"<identifier> are not close!" (or "equal" with zero tolerances), ``extra``, then the greatest absolute and
    relative differences, at their index when there is one, with the tolerance allowed."""
    equality = rtol == 0 and atol == 0

    def diff_line(kind, diff, idx, tol):
        line = f"{kind.title()} difference: {diff}" if idx is None else f"Greatest {kind} difference: {diff} at " \
                                                                        f"index {idx}"
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += diff_line("absolute", abs_diff, abs_idx, atol) + diff_line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def scalar_mismatch_msg(actual, expected, rtol, atol, identifier="Scalars"):
    """The message for two Python numbers (or one-element tensors' items)."""
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return mismatch_msg(identifier, f"Expected {expected} but got {actual}.", abs_diff, None, atol, rel_diff, None,
                        rtol)


def _unravel(flat_index, shape):
    return tuple(int(i) for i in np.unravel_index(flat_index, shape)) if shape else ()


def tensor_mismatch_msg(actual, expected, matches, rtol, atol, identifier="Tensor-likes"):
    """The message for two numpy arrays of one dtype and shape, ``matches`` their elementwise closeness.

    The differences are computed as torch computes them: in the arrays' floating dtype (complex ones as moduli;
    integers and booleans in int64, their relative difference in float32), over the mismatched elements only; the
    greatest is the first one, NaN counting as the greatest."""
    total = matches.size
    mismatches = total - int(np.count_nonzero(matches))
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    actual_flat, expected_flat, matches_flat = actual.reshape(-1), expected.reshape(-1), matches.reshape(-1)
    floating = actual.dtype.kind in "fc" or actual.dtype.name == "bfloat16"
    if not floating:
        actual_flat, expected_flat = actual_flat.astype(np.int64), expected_flat.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(actual_flat - expected_flat)
        abs_diff[matches_flat] = 0
        if floating:
            rel_diff = abs_diff / np.abs(expected_flat)
        else:
            rel_diff = abs_diff.astype(np.float32) / np.abs(expected_flat).astype(np.float32)
    rel_diff[matches_flat] = 0
    # argmax over exact float64 copies: it takes the first NaN as the greatest, for every dtype (bfloat16 too)
    abs_at, rel_at = int(np.argmax(abs_diff.astype(np.float64))), int(np.argmax(rel_diff.astype(np.float64)))
    greatest_abs = float(abs_diff[abs_at]) if floating else int(abs_diff[abs_at])
    return mismatch_msg(identifier, extra, greatest_abs, _unravel(abs_at, actual.shape), atol,
                        float(rel_diff[rel_at]), _unravel(rel_at, actual.shape), rtol)
