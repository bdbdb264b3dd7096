"""``torch.nn.grad``: the gradients of a convolution with respect to its input and to its weight, given the
gradient of its output (``conv2d_input(input_size, weight, grad_output, ...)``), as custom autograd Functions
and hand-written backward passes call them.

Each runs the convolution's own backward through autograd: the forward is computed once on a stand-in for the
operand whose gradient is asked for (zeros of ``input_size`` / ``weight_size``; a convolution's gradients do not
depend on that operand's values), so the result is exactly what ``backward()`` through ``F.conv*d`` gives, on
every device the convolution runs on.
"""
from .. import autograd
from ..autograd.grad_mode import enable_grad
from ..ops.creation import zeros
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _input_grad(conv, input_size, weight, grad_output, stride, padding, dilation, groups):
    with enable_grad():
        stand_in = zeros(tuple(input_size), dtype=grad_output.dtype, device=grad_output.device, requires_grad=True)
        output = conv(stand_in, weight.detach(), None, stride, padding, dilation, groups)
        return autograd.grad(output, stand_in, grad_output)[0]


def _weight_grad(conv, input, weight_size, grad_output, stride, padding, dilation, groups):
    with enable_grad():
        stand_in = zeros(tuple(weight_size), dtype=grad_output.dtype, device=grad_output.device, requires_grad=True)
        output = conv(input.detach(), stand_in, None, stride, padding, dilation, groups)
        return autograd.grad(output, stand_in, grad_output)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(loss)/d(input) of ``conv1d`` for an input of shape ``input_size``."""
    return _input_grad(F.conv1d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(loss)/d(weight) of ``conv1d`` for a weight of shape ``weight_size``."""
    return _weight_grad(F.conv1d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(loss)/d(input) of ``conv2d`` for an input of shape ``input_size``."""
    return _input_grad(F.conv2d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(loss)/d(weight) of ``conv2d`` for a weight of shape ``weight_size``."""
    return _weight_grad(F.conv2d, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(loss)/d(input) of ``conv3d`` for an input of shape ``input_size``."""
    return _input_grad(F.conv3d, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """d(loss)/d(weight) of ``conv3d`` for a weight of shape ``weight_size``."""
    return _weight_grad(F.conv3d, input, weight_size, grad_output, stride, padding, dilation, groups)
