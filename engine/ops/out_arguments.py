"""torch's ``out=`` keyword for the functions whose own code has none: one table, applied where ``engine.ops``
gathers its public names (the Tensor methods, which take no ``out``, keep the plain functions).

Each name is given one of torch's three ways of writing a result into ``out`` (``linalg_out.write_result``): into
any dtype the result casts to safely (``CASTABLE``: sums, means, pointwise math, stacking), only into the result's
own dtype (``EXACT``: selections, sorts, scans of extremes, triangles), or, for the factories, computed in
``out``'s dtype and on its device (``FACTORIES``); sums and products compute in ``out``'s dtype too
(``IN_OUTS_DTYPE``). Every way resizes ``out`` to the result's shape, returns it (a
named tuple of the ``out`` tensors for a tuple result), and refuses an op autograd records, as torch does.
"""
import functools
import inspect

from .linalg_out import write_result

CASTABLE = frozenset({
    "addcdiv", "addcmul", "angle", "bitwise_left_shift", "bitwise_right_shift", "column_stack", "copysign", "cumprod",
    "cumsum", "diff", "dstack", "float_power", "fmax", "fmin", "gcd", "hstack", "hypot", "igamma", "igammac", "lcm",
    "ldexp", "lerp", "logaddexp", "logaddexp2", "logical_not", "logit", "logsumexp", "mean", "mvlgamma", "nanmean",
    "nansum", "nextafter", "polygamma", "prod", "row_stack", "std", "sum", "var", "vstack", "xlogy",
})
EXACT = frozenset({
    "all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "bitwise_not", "bucketize", "chain_matmul",
    "conj_physical", "cross", "cummax", "cummin", "diag", "frexp", "heaviside", "histc", "isneginf", "isposinf",
    "kthvalue", "logcumsumexp", "masked_select", "max", "median", "min", "mode", "msort", "nan_to_num", "nanmedian",
    "nanquantile", "narrow_copy", "nonzero", "quantile", "renorm", "round", "searchsorted", "sgn", "signbit", "sort",
    "take_along_dim", "topk", "tril", "triu", "where",
})
#: the castable ones that compute in ``out``'s dtype when no ``dtype`` is given (torch's sums and products)
IN_OUTS_DTYPE = frozenset({"cumprod", "cumsum", "nansum", "prod", "sum"})
FACTORIES = frozenset({"arange", "empty", "eye", "full", "linspace", "logspace", "ones", "rand", "randn", "range",
                       "zeros"})


def _takes_out(fn):
    try:
        return "out" in inspect.signature(fn, follow_wrapped=False).parameters
    except (TypeError, ValueError):
        return False


def with_out(fn, name):
    """``fn`` given torch's keyword ``out``, written in ``name``'s way (the tables above)."""
    exact = name in EXACT

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if name in FACTORIES or name in IN_OUTS_DTYPE:
            kwargs.setdefault("dtype", out.dtype)
        if name in FACTORIES:
            kwargs.setdefault("device", out.device)
        return write_result(fn(*args, **kwargs), out, exact, name)
    return call


def give_out_arguments(namespace):
    """Replace each tabled function in ``namespace`` (a module's globals) that takes no ``out`` by its ``with_out``."""
    for name in CASTABLE | EXACT | FACTORIES:
        fn = namespace.get(name)
        if fn is not None and not _takes_out(fn):
            namespace[name] = with_out(fn, name)
