"""The x log(...) functions of ``torch.special`` beside xlogy: entr(x) = -x log(x), the entropy term (0 at 0,
-inf for x < 0), and xlog1py(x, y) = x log1p(y), 0 where x is 0 unless y is NaN.
"""
import numpy as np

from ._common import cast, xp_of
from .elementwise import _Binary, _binary, _Unary, _unary, _write_out
from .complex_refusals import refuse_complex


class Entr(_Unary):
    """-x log(x); the gradient is -(1 + log x)."""

    def f(self, xp, x):
        wide = x.astype(np.float32) if x.dtype.itemsize < 4 else x
        y = xp.where(wide > 0, -wide * xp.log(xp.where(wide > 0, wide, 1)), xp.where(wide == 0, 0, -np.inf))
        return xp.where(xp.isnan(wide), wide, y).astype(x.dtype, copy=False)

    def backward(self, gy):
        with np.errstate(divide="ignore", invalid="ignore"):
            return gy * -(1 + xp_of(gy).log(self.x))

    def backward_tensors(self, gy):
        return gy * -(1 + self.saved_input(0, self.x).log())


class Xlog1py(_Binary):
    """a * log1p(b), 0 where a is 0 (unless b is NaN); the gradients are log1p(b) (even where a is 0, as torch's)
    and a / (b + 1)."""

    def forward(self, a, b):
        xp = xp_of(a, b)
        # a Python number in the result's dtype first, as torch wraps it: 1e-300 with float32 is 0, so 0 * log1p(-2)
        # is 0 there, not NaN
        a, b = (xp.asarray(cast(v, self.dtype), dtype=self.dtype) for v in (a, b))
        self.a, self.b = a, b
        self.zero = (a == 0) & ~xp.isnan(b)
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.where(self.zero, 0, a * xp.log1p(b)).astype(self.dtype, copy=False)

    def backward(self, gy):
        xp = xp_of(gy)
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = gy * xp.log1p(self.b) if self.needs_input_grad[0] else None
            gb = gy * self.a / (self.b + 1) if self.needs_input_grad[1] else None
        return ga, gb

    def backward_tensors(self, gy):
        a, b = self.saved_input(0, self.a), self.saved_input(1, self.b)
        ga = gy * b.log1p() if self.needs_input_grad[0] else None
        gb = gy * a / (b + 1) if self.needs_input_grad[1] else None
        return ga, gb


def entr(input, *, out=None):
    """-x log(x) elementwise, 0 at 0 and -inf below (``torch.special.entr``)."""
    refuse_complex("entr", input)
    return _write_out(_unary(Entr, input), out)


def xlog1py(input, other, *, out=None):
    """input * log1p(other), with 0 where input is 0 (``torch.special.xlog1py``); integers give floats."""
    refuse_complex("xlog1py", input, other)
    return _write_out(_binary(Xlog1py, input, other, float_result=True), out)


__all__ = ["entr", "xlog1py"]
