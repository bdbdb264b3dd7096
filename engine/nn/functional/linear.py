"""``F.linear`` (x @ W^T + b over any leading dims, one BLAS GEMM) and ``F.bilinear``."""
import math

from ... import backends
from ...amp import autocast_mode
from ...autograd.double_backward import recomputed_backward
from ...autograd.function import Function
from ...ops._common import xp_of


class _Linear(Function):
    """y = x W^T + b for x of shape (..., in), W (out, in), b (out,) or None.

    Leading dims are flattened into the GEMM's rows: numpy's matmul of a 3-D or 4-D x runs one small GEMM
    per leading index, 1.1-5x slower (medians of 11 in-process alternating calls: 2x14x14x384 by 1536
    outputs 8.2 -> 1.6 ms, 64x49x768 by 768 23.1 -> 11.6, 8x197x768 by 3072 29.3 -> 22.7). Whole models
    at 1x3x224x224, eval (medians of 4 alternating calls): swin_t 235 -> 155 ms, convnext_tiny 250 -> 159.
    Its GEMMs are ones autocast covers (``autocast_matmul``: bfloat16 operands under ``config.enable_amp``).
    """

    def forward(self, x, w, b):
        self.x, self.w = x, w
        matmul = backends.kernels(x, "gemm").autocast_matmul
        n_in, n_out = w.shape[1], w.shape[0]
        rows = math.prod(x.shape[:-1])  # not -1: a reshape cannot infer it with zero features
        y = matmul(x, w.T) if x.ndim <= 2 else matmul(x.reshape(rows, n_in), w.T).reshape(x.shape[:-1] + (n_out,))
        if b is not None:
            y += b
        return y

    def backward(self, gy):
        x, w = self.x, self.w
        matmul = backends.kernels(gy, "gemm").autocast_matmul
        gx = gw = gb = None
        n_in, n_out = w.shape[1], w.shape[0]
        rows = math.prod(x.shape[:-1])
        g2 = gy.reshape(rows, n_out)
        if self.needs_input_grad[0]:
            gx = matmul(g2, w).reshape(x.shape[:-1] + (n_in,))
        if self.needs_input_grad[1]:
            gw = matmul(g2.T, x.reshape(rows, n_in))
        if len(self.needs_input_grad) > 2 and self.needs_input_grad[2]:
            gb = g2.sum(axis=0)
        return gx, gw, gb

    def backward_tensors(self, gy):
        x, w = self.saved_input(0, self.x), self.saved_input(1, self.w)
        n_in, n_out = w.shape[1], w.shape[0]
        rows = math.prod(x.shape[:-1])
        g2 = gy.reshape(rows, n_out)
        gx = gw = gb = None
        if self.needs_input_grad[0]:
            gx = g2.matmul(w).reshape(tuple(x.shape[:-1]) + (n_in,))
        if self.needs_input_grad[1]:
            gw = g2.t().matmul(x.reshape(rows, n_in))
        if len(self.needs_input_grad) > 2 and self.needs_input_grad[2]:
            gb = g2.sum(0)
        return gx, gw, gb


def _dtype_name(d):
    return d.title.lower()


@autocast_mode.lower_precision("cpu", "cuda")
def linear(input, weight, bias=None):
    """x @ weight.T + bias, for any number of leading dims of ``input``."""
    if weight.ndim != 2:
        if weight.ndim == 1 and input.shape[-1:] == weight.shape:
            return _Linear()(input, weight.reshape(1, -1), bias).squeeze(-1)
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D, but got {weight.ndim}-D")
    if input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        rows = input.numel() // input.shape[-1] if input.ndim and input.shape[-1] else 1
        cols = input.shape[-1] if input.ndim else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_dtype_name(input.dtype)} != {_dtype_name(weight.dtype)}")
    if bias is not None and bias.numel() not in (1, weight.shape[0]):
        raise RuntimeError(f"The expanded size of the tensor ({weight.shape[0]}) must match the existing "
                           f"size ({bias.numel()}) at non-singleton dimension {max(input.ndim - 1, 0)}.  "
                           f"Target sizes: {list(input.shape[:-1]) + [weight.shape[0]]}.  "
                           f"Tensor sizes: {list(bias.shape)}")
    return _Linear()(input, weight, bias)


class _Bilinear(Function):
    """y[..., o] = x1 A[o] x2 + b[o] for x1 (..., in1), x2 (..., in2), A (out, in1, in2)."""

    def forward(self, x1, x2, a, b):
        xp = xp_of(x1)
        self.x1, self.x2, self.a = x1, x2, a
        y = xp.einsum("...i,oij,...j->...o", x1, a, x2, optimize=True)
        if b is not None:
            y += b
        return y

    def backward(self, gy):
        xp, need = xp_of(gy), self.needs_input_grad
        g1 = xp.einsum("...o,oij,...j->...i", gy, self.a, self.x2, optimize=True) if need[0] else None
        g2 = xp.einsum("...o,oij,...i->...j", gy, self.a, self.x1, optimize=True) if need[1] else None
        ga = xp.einsum("...o,...i,...j->oij", gy, self.x1, self.x2, optimize=True) if need[2] else None
        gb = gy.reshape(-1, gy.shape[-1]).sum(axis=0) if len(need) > 3 and need[3] else None
        return g1, g2, ga, gb

    def backward_tensors(self, gy):
        """Recomputed as batched products of engine ops ((x1 A) . x2 per output) and differentiated; the bias
        gradient is the output gradient summed over the batch."""
        def bilinear(x1, x2, a):
            rows = (x1.unsqueeze(-2).unsqueeze(-2) @ a).squeeze(-2)  # (..., out, in2)
            return (rows * x2.unsqueeze(-2)).sum(-1)
        g1, g2, ga = recomputed_backward(self, bilinear, [self.x1, self.x2, self.a], gy)[:3]
        need = self.needs_input_grad
        gb = gy.reshape(-1, gy.shape[-1]).sum(0) if len(need) > 3 and need[3] else None
        return g1, g2, ga, gb


def _check_bilinear(input1, input2, weight, bias):
    """torch's checks of bilinear's operands, in its order."""
    if weight.ndim != 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{weight.ndim}, {weight.ndim - 1}], "
                         "but got 2)")
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for dim, (a, b) in enumerate(zip(input1.shape[:-1], input2.shape[:-1])):
        if a != b:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: got {a} and {b}")
    for name, x, expected in (("input1", input1, weight.shape[1]), ("input2", input2, weight.shape[2])):
        if x.shape[-1] != expected:
            raise RuntimeError(f"bilinear(): {name} size does not match weight size: got {x.shape[-1]} but "
                               f"expected {expected}")
    if bias is not None and bias.shape[-1] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[-1]} but expected "
                           f"{weight.shape[0]}")


@autocast_mode.as_given
def bilinear(input1, input2, weight, bias=None):
    """x1^T A x2 + b per output feature."""
    _check_bilinear(input1, input2, weight, bias)
    return _Bilinear()(input1, input2, weight, bias)


__all__ = ["linear", "bilinear"]
