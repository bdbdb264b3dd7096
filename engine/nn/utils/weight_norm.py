"""``engine.nn.utils.weight_norm``: the hook-based (deprecated) weight normalisation, as torch's.

``weight_norm(module, "weight", dim)`` replaces the parameter ``weight`` by ``weight_g`` (its norm over every
dimension but ``dim``) and ``weight_v`` (its direction), and recomputes ``weight = weight_v * weight_g /
||weight_v||`` before each forward. ``norm_except_dim`` and ``weight_norm_of`` (torch's ``_weight_norm``) are
shared with the parametrization ``parametrizations.weight_norm``.
"""
import warnings

from ..parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "norm_except_dim", "weight_norm_of"]


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, kept broadcastable to ``v`` (size 1 except
    at ``dim``); ``dim=-1`` means the norm of the whole tensor (0-d), as in torch."""
    if dim == -1:
        return v.norm(pow)
    if not -v.dim() <= dim < v.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-v.dim()}, {v.dim() - 1}], but got "
                         f"{dim})")
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    shape = [1] * v.dim()
    shape[dim] = v.shape[dim]
    return v.permute(dim, *others).reshape(v.shape[dim], -1).norm(pow, dim=1).reshape(shape)


def weight_norm_of(v, g, dim=0):
    """``v * (g / norm_except_dim(v, 2, dim))``: direction ``v`` scaled to norm ``g`` (torch's ``_weight_norm``)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        return weight_norm_of(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as magnitude ``<name>_g`` times direction ``<name>_v`` (deprecated:
    prefer ``parametrizations.weight_norm``). ``dim=None`` normalises over the whole tensor."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_norm_hook(module, hook_type, name, label):
    """Take off ``module``'s forward pre-hook of ``hook_type`` for ``name`` (its ``remove`` folds the parameter back);
    torch's ValueError, naming ``label``, when there is none."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"{label} of '{name}' not found in {module}")


def remove_weight_norm(module, name="weight"):
    """Fold ``<name>_g`` and ``<name>_v`` back into one parameter ``<name>``."""
    return remove_norm_hook(module, WeightNorm, name, "weight_norm")
