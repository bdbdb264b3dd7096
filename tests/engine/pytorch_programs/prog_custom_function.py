"""Custom autograd Functions in a model: save_for_backward, needs_input_grad, mark_non_differentiable, a
non-tensor argument, and the forward/setup_context split."""
import numpy as np
import torch
from torch.autograd import Function
import torch.nn as nn

from program_hooks import record, sync


class ClampedExp(Function):
    @staticmethod
    def forward(ctx, x, limit, scale):
        y = torch.exp(torch.clamp(x, max=limit)) * scale
        mask = x > limit
        ctx.save_for_backward(y, mask)
        ctx.scale_is_tensor = isinstance(scale, torch.Tensor)
        ctx.mark_non_differentiable(mask)
        return y, mask
    @staticmethod
    def backward(ctx, grad_y, grad_mask):
        y, mask = ctx.saved_tensors
        gx = gs = None
        if ctx.needs_input_grad[0]:
            gx = grad_y * y * (~mask).to(y.dtype)
        if ctx.needs_input_grad[2]:
            gs = (grad_y * y).sum() / y.new_tensor(1.0)
        return gx, None, gs

class MyReLU(Function):
    @staticmethod
    def forward(ctx, inp):
        ctx.save_for_backward(inp)
        return inp.clamp(min=0)
    @staticmethod
    def backward(ctx, grad_output):
        inp, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[inp < 0] = 0
        return grad_input

class LinearFn(Function):
    @staticmethod
    def forward(input, weight, bias=None):
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output
    @staticmethod
    def setup_context(ctx, inputs, output):
        input, weight, bias = inputs
        ctx.save_for_backward(input, weight, bias)
    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias

class MyLinear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_out, n_in))
        self.bias = nn.Parameter(torch.empty(n_out))
        nn.init.uniform_(self.weight, -0.3, 0.3)
        nn.init.uniform_(self.bias, -0.1, 0.1)
    def forward(self, x):
        return LinearFn.apply(x, self.weight, self.bias)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = MyLinear(4, 7)
        self.l2 = MyLinear(7, 1)
        self.scale = nn.Parameter(torch.tensor(0.5))
    def forward(self, x):
        h = MyReLU.apply(self.l1(x))
        out, mask = ClampedExp.apply(self.l2(h), 0.8, self.scale)
        return out.squeeze(1), mask

rng = np.random.default_rng(5)
X = torch.tensor(rng.standard_normal((13, 4)), dtype=torch.float32)
Y = torch.tensor(rng.random(13), dtype=torch.float32)
torch.manual_seed(0)
net = Net()
sync(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for step in range(5):
    out, mask = net(X)
    loss = ((out - Y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    record("loss", [loss.item(), mask.sum().item(), float(mask.requires_grad)])
x = X.clone().requires_grad_(True)
y, m = ClampedExp.apply(x, 0.5, 2.0)
y.sum().backward()
record("xgrad", x.grad)
record("flags", [y.requires_grad, m.requires_grad, m.dtype == torch.bool])
FINAL = {"net": net}
