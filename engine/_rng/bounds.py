"""torch's argument checks for the integer samplers (``random_``, ``randint``) and ``uniform_``, by dtype.

A floating dtype holds every integer only up to 2^digits; torch moves a ``from``/``to`` that its dtype rounds
past the other end back inside (``update_from``/``update_to`` of DistributionTemplates.h), refuses bounds past
the dtype's range and warns past 2^digits. Its messages name the dtype as C++ does (``signed char``).
"""
import math
import warnings

import numpy as np

from .. import _dtype

def _digits(d):
    """The bits of a floating dtype's significand (float32: 24)."""
    return int(np.finfo(d.np).nmant) + 1


def _rounded(value, d):
    """Integer ``value`` as the floating dtype ``d`` rounds it (the half types through float32), cast back to int64
    as x86 casts: a value outside int64 (2^63 and up, infinity) becomes -2^63."""
    rounded = float(np.float32(value).astype(d.np)) if d.np in _dtype.HALF_NP else float(d.np.type(value))
    return int(rounded) if math.isfinite(rounded) and -2 ** 63 <= rounded < 2 ** 63 else -2 ** 63


def _update_from(low, d):
    """torch's ``update_from``: a ``from`` whose successor the dtype rounds below it is moved up a unit."""
    after = _rounded(low + 1, d)
    if after < low:
        n = abs(low + 1).bit_length() - 1
        low = after + (1 << (n - _digits(d) + 1))
    return low


def _update_to(high, d):
    """torch's ``update_to``: a ``to`` whose predecessor the dtype rounds up to it is moved down a unit (not one
    rounding up to 2^63, which the cast back to int64 turns into -2^63)."""
    before = _rounded(high - 1, d)
    if before >= high:
        n = abs(high - 1).bit_length() - 1
        high = before - (1 << (n - _digits(d) + 1))
    return high


def _check_in_range(low, high_inclusive, d):
    """torch's ``check_from_to_in_range``: both ends within the dtype's values (refused), and for a floating dtype
    within +-2^digits (warned)."""
    name = _dtype.cpp_name(d)
    if d.is_floating_point:
        info = np.finfo(d.np)
        lowest, largest = float(info.min), float(info.max)
    else:
        info = np.iinfo(np.uint8 if d is _dtype.bool_ else d.np)
        lowest, largest = (0, 1) if d is _dtype.bool_ else (int(info.min), int(info.max))
    for value, what in ((low, "from"), (high_inclusive, "to - 1")):
        if not lowest <= value <= largest:
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if d.is_floating_point:
        digits = _digits(d)
        for value, what in ((low, "from"), (high_inclusive, "to - 1")):
            if not -(1 << digits) <= value <= 1 << digits:
                warnings.warn(f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{name} can support discrete uniform distribution only within this range. This "
                              "warning will become an error in version 1.7 release, please fix the code in advance",
                              UserWarning, stacklevel=4)


def from_to(d, low, high):
    """``random_(low, high)`` (``high`` None: up to the dtype's largest integer, included) checked as torch checks
    it: the (low, span) its sampler draws ``low + draw % span`` from."""
    if high is not None:
        if not low < high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        if d.is_floating_point:
            low, high = _update_from(low, d), _update_to(high, d)
            if not low < high:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, "
                                   f"but got from={low} >= to={high}")
        _check_in_range(low, high - 1, d)
        return low, high - low
    if d.is_floating_point:
        largest = 1 << _digits(d)
        low = _update_from(low, d)
        if not low < largest:  # torch's test is strict, its message not
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
                               f"to dtype, but got from={low} > to_inc={largest}")
    else:
        largest = 1 if d is _dtype.bool_ else int(np.iinfo(d.np).max)
    _check_in_range(low, largest, d)
    return low, largest - low + 1


def uniform_bounds(d, low, high):
    """torch's checks of ``uniform_(low, high)`` on a floating dtype: both within its range, in order, and no
    wider apart than its largest value."""
    info = np.finfo(d.np)
    name = _dtype.cpp_name(d)
    for value, what in ((low, "from"), (high, "to")):
        if not float(info.min) <= value <= float(info.max):
            raise RuntimeError(f"{what} is out of bounds for {name}")
    if not low <= high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low:g} > to={high:g}")
    if not high - low <= float(info.max):
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{d.title}>::max(), but found "
                           f"to={high:g} and from={low:g} which result in to-from to exceed the limit")
