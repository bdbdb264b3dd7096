"""``engine.nn.utils.spectral_norm``: the hook-based spectral normalisation, as torch's.

``spectral_norm(module, "weight")`` moves the parameter to ``weight_orig``, keeps the power-iteration vectors in
the buffers ``weight_u`` and ``weight_v``, and before each forward sets ``weight = weight_orig / sigma`` with
``sigma = u . (W v)`` for ``W`` the weight as a matrix (``dim`` first). In training mode each forward first runs
``n_power_iterations`` steps (``v <- normalize(W^T u)``, then ``u <- normalize(W v)``), updating the buffers.
"""
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter, UninitializedParameter
from .weight_norm import remove_norm_hook

__all__ = ["SpectralNorm", "SpectralNormStateDictHook", "spectral_norm", "remove_spectral_norm"]


def _matrix_view(weight, dim):
    """``weight`` as a matrix whose rows run along ``dim``."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.dim()) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def _transposed_conv_classes():
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    return ConvTranspose1d, ConvTranspose2d, ConvTranspose3d


def default_dim(module):
    """1 (the output channels) for transposed convolutions, else 0."""
    return 1 if isinstance(module, _transposed_conv_classes()) else 0


class SpectralNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_orig``, ``<name>_u``, ``<name>_v``."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        return _matrix_view(weight, self.dim)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    F.normalize(weight_mat.t().mv(u), dim=0, eps=self.eps, out=v)
                    F.normalize(weight_mat.mv(v), dim=0, eps=self.eps, out=u)
        u, v = u.clone(), v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))
        self._state_dict_handle.remove()

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure "
                             "to run the dummy forward before applying spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        fn._state_dict_handle = module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        return fn


class SpectralNormStateDictHook:
    """Records ``<name>.version`` under ``spectral_norm`` in the module's state-dict metadata, as torch's does
    (torch's loader reads it to tell current checkpoints from older ones)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its largest singular value, estimated by power iteration before each
    forward (``dim`` defaults to 1 for transposed convolutions, else 0)."""
    SpectralNorm.apply(module, name, n_power_iterations, default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Fold the normalised weight back into one parameter ``<name>`` and drop ``<name>_orig``, ``_u`` and ``_v``."""
    return remove_norm_hook(module, SpectralNorm, name, "spectral_norm")
