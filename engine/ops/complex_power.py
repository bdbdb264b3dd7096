"""``pow`` in a complex dtype as torch's CPU kernels compute it, which numpy's ``power`` does not: a tensor (or
0-dim tensor) exponent is C's ``cpow``, ``exp(b * log(a))`` for every element, so ``0 ** 0`` is NaN and
``0 ** -1`` is ``inf + nan j`` (numpy gives 1 and NaN); a Python number exponent takes torch's shortcuts
first (0: ones, 1: a copy, 0.5: ``sqrt``, -0.5: ``1 / sqrt``, -1: ``1 / a``, 2: ``a * a``, 3: ``a * a * a``,
-2: ``1 / (a * a)``), the others ``cpow`` as well. A Python number base is a 0-dim operand, except 1, whose
powers torch fills with ones.
"""
import numbers


def _shortcut(xp, a, b):
    """torch's tensor-to-number power for the exponents it computes without ``cpow``; None for the others."""
    if b == 0:
        return xp.ones_like(a)
    if b == 1:
        return a.copy()
    if b == 0.5:
        return xp.sqrt(a)
    if b == -0.5:
        return 1 / xp.sqrt(a)
    if b == -1:
        return 1 / a
    if b == 2:
        return a * a
    if b == 3:
        return a * a * a
    if b == -2:
        return 1 / (a * a)
    return None


def complex_power(xp, a, b, dtype, out=None):
    """``a ** b`` in complex ``dtype`` (a numpy or CuPy dtype) as torch: ``a`` and ``b`` arrays of that dtype or
    Python numbers; into ``out`` where given (an array laid out as the result)."""
    if isinstance(a, numbers.Number):
        y = xp.ones(b.shape, dtype) if a == 1 else None
        a = xp.asarray(a, dtype)  # strong, so that a complex64 result stays complex64
    else:
        y = _shortcut(xp, a, b) if isinstance(b, numbers.Number) else None
    if y is None:
        y = xp.exp(b * xp.log(a))
    if out is None:
        return y
    out[...] = y
    return out


def zero_base_real_exponent(a, b):
    """Where ``pow``'s exponent gradient is 0 rather than ``y * log(a)``: ``a`` is 0 and ``b`` a real number
    >= 0 (a complex ``b`` with a nonzero imaginary part is not; numpy orders complex numbers by parts)."""
    if getattr(b, "dtype", None) is not None and b.dtype.kind == "c":
        return (a == 0) & (b.imag == 0) & (b.real >= 0)
    if isinstance(b, complex):
        return (a == 0) & (b.imag == 0 and b.real >= 0)
    return (a == 0) & (b >= 0)


__all__ = ["complex_power", "zero_base_real_exponent"]
