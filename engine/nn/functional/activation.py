"""``F.relu``, ``F.softmax``...: the activation ops of ``engine.ops.activation`` with F's signatures."""
import warnings

from ...amp import autocast_mode
from ...ops import activation as _act
from ...ops.activation import (celu_, elu, gelu, glu, hardshrink, hardsigmoid, hardswish,  # noqa: F401
                               hardtanh, leaky_relu, logsigmoid, mish, prelu, relu6, rrelu_,
                               selu_, silu, softplus, softshrink, softsign, tanhshrink, threshold_)
from ...ops.elementwise import sigmoid, tanh  # noqa: F401


def relu(input, inplace=False):
    return _act.relu_(input) if inplace else _act.relu(input)


def relu_(input):
    return _act.relu_(input)


def threshold(input, threshold, value, inplace=False):
    return _act.threshold_(input, threshold, value) if inplace else _act.threshold(input, threshold, value)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def selu(input, inplace=False):
    return _act.selu_(input) if inplace else _act.selu(input)


def celu(input, alpha=1.0, inplace=False):
    return _act.celu_(input, alpha) if inplace else _act.celu(input, alpha)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _act.rrelu_(input, lower, upper, training) if inplace else _act.rrelu(input, lower, upper, training)


def _softmax_dim(name, ndim, stacklevel):
    """PyTorch's legacy implicit dim: 0 for 0-, 1- and 3-d inputs, else 1 (with its warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


@autocast_mode.float32("cuda")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim, _stacklevel)
    return _act.softmax(input, dim, dtype)


@autocast_mode.float32("cuda")
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input)."""
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return _act.softmax(-input, dim)


@autocast_mode.float32("cuda")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim, _stacklevel)
    return _act.log_softmax(input, dim, dtype)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution over ``dim``: softmax((logits + g) / tau) with Gumbel noise
    g = -log(Exponential(1)), drawn from the same stream as torch's. ``hard``: the one-hot of the largest,
    with the soft sample's gradient (straight through)."""
    from ...ops.creation import empty_like, zeros_like
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -empty_like(logits).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    one_hot = zeros_like(logits).scatter_(dim, soft.argmax(dim, keepdim=True), 1.0)
    return one_hot - soft.detach() + soft


__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "celu",
           "celu_", "selu_", "rrelu", "rrelu_", "gelu", "silu", "mish", "hardswish", "hardsigmoid",
           "hardtanh", "hardtanh_", "softplus", "softsign", "tanhshrink", "threshold", "threshold_",
           "logsigmoid", "prelu", "glu", "hardshrink", "softshrink", "softmax", "softmin",
           "log_softmax", "gumbel_softmax", "sigmoid", "tanh"]
