"""torch's ``out=`` for the linear algebra functions: the result (a tensor, or a tuple of them into a tuple of
``out`` tensors) written into ``out``, which is resized first where its shape differs (torch resizes it too, with
a warning unless it was empty), and ``out`` returned.

Most of torch's linear algebra kernels demand an ``out`` of the result's own dtype (``writes_out``); a few
(``cond``, ``pinv``, ``kron``, ``outer``, ``cholesky_solve``, ...) take any dtype the result casts to safely
(``writes_out_castable``). Each function so needs no code of its own for ``out``.
"""
import functools
import sys

from .elementwise import _write_out, refuse_recorded_out

def write_result(result, out, exact=False, name=None):
    """``result`` written into ``out`` (returned; a named tuple of the ``out`` tensors for a named tuple result);
    with ``exact``, an ``out`` of another dtype is refused with torch's message; a result autograd records is
    refused as torch refuses it (``name``: the op's, by default that of the function calling this one)."""
    if out is None:
        return result
    name = name or sys._getframe(1).f_code.co_name
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"out must be a tuple of {len(result)} Tensors")
        for r in result:
            refuse_recorded_out(r, name)
        written = [write_result(r, o, exact, name) for r, o in zip(result, out)]
        return type(result)(*written) if hasattr(result, "_fields") else tuple(written)
    return _write_out(result, out, name, exact)


def _decorator(exact):
    def decorate(fn):
        @functools.wraps(fn)
        def with_out(*args, out=None, **kwargs):
            return write_result(fn(*args, **kwargs), out, exact, fn.__name__)
        return with_out
    return decorate


#: ``fn`` given torch's keyword ``out``, which must have the result's dtype
writes_out = _decorator(exact=True)
#: ``fn`` given torch's keyword ``out``, of any dtype the result casts to safely
writes_out_castable = _decorator(exact=False)
