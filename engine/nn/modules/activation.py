"""Activation layers: thin modules over ``engine.nn.functional`` with PyTorch's arguments and reprs."""
import warnings

from ... import ops
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._utils import new_param_data
from .module import Module


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class Threshold(Module):
    """y = x if x > threshold else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Hardtanh(Module):
    """Clamp to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        for old, new, value in (("min_value", "min_val", min_value), ("max_value", "max_val", max_value)):
            if value is not None:  # torch's deprecated spellings, still taken
                warnings.warn(f"keyword argument `{old}` is deprecated and renamed to `{new}`", FutureWarning,
                              stacklevel=2)
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")  # torch's type
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Sigmoid(Module):
    def forward(self, input):
        return ops.sigmoid(input)


class Tanh(Module):
    def forward(self, input):
        return ops.tanh(input)


class _InplaceActivation(Module):
    """An activation whose only argument is ``inplace`` (SiLU, Mish, Hardswish, ...)."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return getattr(F, self._fn)(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class SiLU(_InplaceActivation):
    _fn = "silu"


class Mish(_InplaceActivation):
    _fn = "mish"


class SELU(_InplaceActivation):
    _fn = "selu"


class Hardswish(_InplaceActivation):
    _fn = "hardswish"

    def extra_repr(self):
        return ""


class Hardsigmoid(_InplaceActivation):
    _fn = "hardsigmoid"

    def extra_repr(self):
        return ""


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    _fn = "elu"

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return getattr(F, self._fn)(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    _fn = "celu"


class PReLU(Module):
    """Leaky ReLU with a learned slope (one, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(new_param_data((num_parameters,), device, dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


def _legacy_softmax_dim(name, ndim):
    """PyTorch's implicit dim for softmax-like layers built without ``dim`` (with its warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. "
                  "Change the call to include dim=X as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class _SoftmaxBase(Module):
    _fn = None
    _checks_dim = True  # PyTorch type-checks ``dim`` for Softmax and LogSoftmax, not for Softmin

    def __init__(self, dim=None):
        if self._checks_dim and dim is not None and (not isinstance(dim, int) or isinstance(dim, bool)):
            raise TypeError(f"dim must be an int or None, got {type(dim)}")
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("dim", None)

    def forward(self, input):
        dim = self.dim if self.dim is not None else _legacy_softmax_dim(self._fn, input.dim())
        return getattr(F, self._fn)(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    _fn = "softmax"


class LogSoftmax(_SoftmaxBase):
    _fn = "log_softmax"


class Softmin(_SoftmaxBase):
    _fn = "softmin"
    _checks_dim = False


class GLU(Module):
    """Gated linear unit: first half * sigmoid(second half) along ``dim``."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class RReLU(Module):
    """Leaky ReLU with a random slope in [lower, upper] while training (their mean in eval)."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return getattr(F, self._fn)(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    _fn = "hardshrink"


class Softshrink(_Shrink):
    _fn = "softshrink"


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):
        return F.tanhshrink(input)


class Softmax2d(Module):
    """Softmax over the channel dim of (C, H, W) or (N, C, H, W) inputs."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


__all__ = ["RReLU", "Hardshrink", "Softshrink", "LogSigmoid", "Softsign", "Tanhshrink", "Softmax2d",
           "Threshold", "ReLU", "Hardtanh", "ReLU6", "Sigmoid", "Tanh", "SiLU", "Mish", "SELU", "Hardswish",
           "Hardsigmoid", "LeakyReLU", "ELU", "CELU", "PReLU", "GELU", "Softplus", "Softmax", "LogSoftmax",
           "Softmin", "GLU"]
