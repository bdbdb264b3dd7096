"""Gradients through complex numbers, as torch defines them: a tensor's gradient is dL/d(re) + i dL/d(im) of the
real loss L (the conjugate Wirtinger derivative, doubled), so a holomorphic ``y = f(x)`` sends back
``gy * conj(f'(x))``.

The real ops' backwards compute ``gy * f'(x)``; for a holomorphic op that is linear in ``gy``,
``conj(backward(conj(gy)))`` is then the complex gradient. ``holomorphic`` wraps a backward that way where the op
computes in a complex dtype and leaves the real path as it was (one dtype test). A real input of an op that
computed in complex (``x * z``) gets the real part of its gradient.
"""
import functools


def conj(a):
    """The conjugate of a complex array; a real array itself (``np.conj`` of a real array copies it)."""
    return a.conj() if getattr(a, "dtype", None) is not None and a.dtype.kind == "c" else a


def real_parts(fn, grads):
    """``grads`` (a tuple, or one array), each the real part where ``fn``'s input was real."""
    meta = getattr(fn, "input_meta", ())
    single = not isinstance(grads, tuple)
    out = tuple(g.real if g is not None and hasattr(g, "dtype") and g.dtype.kind == "c" and i < len(meta)
                and meta[i] is not None and meta[i][1].kind != "c" else g
                for i, g in enumerate((grads,) if single else grads))
    return out[0] if single else out


def holomorphic(backward):
    """``backward`` as the backward of a holomorphic op: unchanged for a real gradient, else conjugated around
    (a holomorphic op's output, and so its gradient, is complex exactly where it computed in complex)."""
    @functools.wraps(backward)
    def complex_aware(self, gy):
        if gy.dtype.kind != "c":
            return backward(self, gy)
        grads = backward(self, gy.conj())
        if isinstance(grads, tuple):
            return real_parts(self, tuple(None if g is None else conj(g) for g in grads))
        return real_parts(self, conj(grads))
    return complex_aware


def holomorphic_tensors(backward_tensors):
    """``backward_tensors`` (the differentiable backward of double_backward.py) made complex-aware as
    ``holomorphic`` makes ``backward``, with the differentiable ``conj`` and ``real``."""
    from .complex_views import conj as conj_tensor, real as real_tensor

    @functools.wraps(backward_tensors)
    def complex_aware(self, gy):
        if not gy.is_complex():
            return backward_tensors(self, gy)
        grads = backward_tensors(self, conj_tensor(gy))
        single = not isinstance(grads, tuple)
        meta = getattr(self, "input_meta", ())
        out = tuple(None if g is None else real_tensor(conj_tensor(g)) if i < len(meta) and meta[i] is not None
                    and meta[i][1].kind != "c" else conj_tensor(g)
                    for i, g in enumerate((grads,) if single else grads))
        return out[0] if single else out
    return complex_aware
