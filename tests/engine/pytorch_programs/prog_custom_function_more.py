"""Custom autograd Function details: several non-differentiable outputs, once_differentiable, setup_context with
default arguments, saved_tensors without save_for_backward, double backward, no_grad."""
import numpy as np
import torch
from torch.autograd.function import once_differentiable

from program_hooks import record


class SortWithIdx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        vals, idx = torch.sort(x, dim=-1)
        doubled = vals * 2
        ctx.mark_non_differentiable(idx, doubled)
        ctx.save_for_backward(idx)
        return vals, idx, doubled
    @staticmethod
    @once_differentiable
    def backward(ctx, gv, gi, gd):
        idx, = ctx.saved_tensors
        gx = torch.zeros_like(gv).scatter_(-1, idx, gv)
        return gx

class Scale(torch.autograd.Function):
    @staticmethod
    def forward(x, factor=3.0, shift=None):
        y = x * factor
        return y if shift is None else y + shift
    @staticmethod
    def setup_context(ctx, inputs, output):
        x, factor, shift = inputs
        ctx.factor = factor
        ctx.has_shift = shift is not None
    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None, (g.sum(0) if ctx.has_shift and ctx.needs_input_grad[2] else None)

class NoSave(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone() ** 2
    @staticmethod
    def backward(ctx, g):
        record("nosave", repr(ctx.saved_tensors))
        return g * 2

class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * x ** 2 * g

rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((3, 5)), dtype=torch.float32, requires_grad=True)
vals, idx, doubled = SortWithIdx.apply(x)
record("flags", [vals.requires_grad, idx.requires_grad, doubled.requires_grad, doubled.grad_fn is None])
(vals * torch.arange(5.0)).sum().backward()
record("sortgrad", x.grad)
x.grad = None
shift = torch.ones(5, requires_grad=True)
y = Scale.apply(x, 2.0, shift)
y2 = Scale.apply(x)
(y.sum() + y2.pow(2).sum()).backward()
record("scale", x.grad)
record("shift", shift.grad)
NoSave.apply(x).sum().backward()
z = torch.tensor([0.5, -1.5], requires_grad=True)
c = Cube.apply(z)
g, = torch.autograd.grad(c.sum(), z, create_graph=True)
record("g1", g)
g.sum().backward()
record("g2", z.grad)
with torch.no_grad():
    n = Cube.apply(z)
record("nograd", [n.requires_grad])
w = torch.ones(2)
record("noreq", [Cube.apply(w).requires_grad])


class AddOne_(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


class WithCount(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        record("needs_input_grad", [float(b) for b in ctx.needs_input_grad])
        return x * n, int(n)

    @staticmethod
    def backward(ctx, g, g_count):
        x, = ctx.saved_tensors
        return g * ctx.saved_tensors[0].sign(), None


class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mode):
        ctx.mode = mode
        return x * 2

    @staticmethod
    def backward(ctx, g):
        if ctx.mode == "count":
            return g
        if ctx.mode == "shape":
            return g.sum(), None
        return g, g


a = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
b = a.clone()
c = AddOne_.apply(b)
(c * 3).sum().backward()
record("dirty", [c is b, float(c.requires_grad)] + c.tolist() + a.grad.tolist())
a.grad = None
y, count = WithCount.apply(a, 3.0)
record("count", count)
record("count_fn", type(y.grad_fn).__name__)
y.sum().backward()
record("count_grad", a.grad)
with torch.no_grad():
    WithCount.apply(a, 2.0)
h = a * 1
y, _ = WithCount.apply(h, 2.0)
h.mul_(2)
try:
    y.sum().backward()
    record("modified_saved", "no error")
except RuntimeError as e:
    record("modified_saved", str(e).split(":")[0])
for mode in ("count", "shape", "non-tensor"):
    try:
        Bad.apply(a, mode).sum().backward()
        record("bad_" + mode, "no error")
    except RuntimeError as e:
        record("bad_" + mode, str(e))
