"""``torch.sym_max``, ``sym_int`` and the other ``sym_*`` helpers, on plain Python numbers.

torch's versions take its symbolic sizes (SymInt, SymFloat, SymBool) as well as numbers, so that model code can be
traced without branching on a size; the engine has no symbolic sizes, so these are the numeric rules alone, for code
written against torch that calls them: ``sym_max``/``sym_min`` give a float when either operand is one, ``sym_int``
truncates, ``sym_ite`` wants a bool and two values of one type, the range constraints check nothing.
"""
import builtins
import math

__all__ = ["sym_constrain_range", "sym_constrain_range_for_size", "sym_float", "sym_fresh_size", "sym_int", "sym_ite",
           "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum"]


def _widened(result, a, b):
    """``result`` as a float where either operand is a float (torch promotes, where ``max`` keeps the winner)."""
    return float(result) if isinstance(a, float) or isinstance(b, float) else result


def sym_max(a, b):
    return _widened(builtins.max(a, b), a, b)


def sym_min(a, b):
    return _widened(builtins.min(a, b), a, b)


def sym_int(a):
    """``a`` as an int, truncated toward zero."""
    return builtins.int(a)


def sym_float(a):
    return builtins.float(a)


def sym_not(a):
    return not a


def sym_ite(b, t, f):
    """``t if b else f``, with torch's checks: a bool condition, and ``t`` and ``f`` of one type."""
    if not isinstance(b, bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(*args):
    """The sum of the numbers given, as varargs or as one sequence."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_fresh_size(expr):
    return expr


def sym_constrain_range(size, *, min=None, max=None):
    """Nothing to constrain: a plain number's range is its value."""


def sym_constrain_range_for_size(size, *, min=None, max=None):
    """Nothing to constrain: a plain number's range is its value."""
