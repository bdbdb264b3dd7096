"""Normalisation layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d, GroupNorm and LayerNorm."""
import numbers

from ... import _dtype
from ...autograd.grad_mode import no_grad
from ...ops.creation import ones, tensor, zeros
from .. import functional as F
from ..functional.normalization import cross_map_lrn2d
from .. import init
from ..parameter import Parameter
from ._utils import new_param_data
from .module import Module



def _register_affine(module, shape, affine, bias, device, dtype):
    """Register ``weight`` (and ``bias`` unless ``bias=False``) of ``shape``, or None for both without affine."""
    module.register_parameter("weight", Parameter(new_param_data(shape, device, dtype)) if affine else None)
    module.register_parameter("bias", Parameter(new_param_data(shape, device, dtype)) if affine and bias else None)


def _reset_affine(module):
    """Unit scale and zero shift, for whichever of ``weight`` / ``bias`` the layer has."""
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Affine weight/bias and running statistics shared by batch and instance norm."""

    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            float_dtype = dtype or _dtype.get_default_dtype()
            self.register_buffer("running_mean", zeros(num_features, dtype=float_dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=float_dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=_dtype.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Checkpoints before version 2 (or without metadata) may lack ``num_batches_tracked``."""
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = (self.num_batches_tracked if self.num_batches_tracked is not None
                                   else tensor(0, dtype=_dtype.int64))


class _BatchNorm(_NormBase):
    def forward(self, input):
        """Normalise with batch statistics in training (updating running stats), running ones in eval."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            # momentum None: a cumulative average, 1 / the batches seen, read from the counter when the op runs
            # (a replayed nn.Graph reads it again as the counter moves on)
            factor = self.num_batches_tracked if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            bn_training, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs."""

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, ...) inputs whose statistics, in training, are those of the whole batch over a
    process group (``engine.distributed``: MPI for CPU tensors, NCCL for CUDA ones). Outside an initialised
    group of two or more ranks it normalises as BatchNorm does, as torch's does.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def forward(self, input):
        """BatchNorm's, except in training inside a process group of two or more ranks: there the batch
        statistics are those of all the ranks' samples together (``engine/distributed/sync_batch_norm.py``)."""
        from ... import distributed
        if self.training and distributed.is_initialized() and distributed.get_world_size(self.process_group) > 1:
            from ...distributed.sync_batch_norm import forward_synchronised
            self._check_input_dim(input)
            return forward_synchronised(self, input)
        return super().forward(input)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm layer in it replaced by a SyncBatchNorm that holds the same
        parameter and buffer tensors (state_dict keys and values unchanged) and training mode."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = SyncBatchNorm(module.num_features, module.eps, module.momentum, module.affine,
                                      module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


class _InstanceNorm(_NormBase):
    """Normalise each sample's channels over their spatial dims (no running stats by default)."""

    _spatial_dims = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False,
                 device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        batched = self._spatial_dims + 2
        if input.dim() not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {input.dim()}D input)")
        unbatched = input.dim() == batched - 1
        channels = input.size(0 if unbatched else 1)
        if channels != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim={0 if unbatched else 1} to match num_features "
                             f"({self.num_features}), but got: {channels}.")
        if unbatched:
            return self._normalize(input.unsqueeze(0)).squeeze(0)
        return self._normalize(input)

    def _normalize(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNorm):
    _spatial_dims = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial_dims = 2


class InstanceNorm3d(_InstanceNorm):
    _spatial_dims = 3


class GroupNorm(Module):
    """Normalise each sample over groups of channels, then scale/shift per channel."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, (num_channels,), affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then scale/shift elementwise."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _register_affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Scale by the root mean square over the trailing ``normalized_shape`` dims (no centring)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(new_param_data(self.normalized_shape, device, dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self):
        _reset_affine(self)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Normalise each channel by the activity of its ``size`` neighbouring channels."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Lua torch's cross-channel LRN over 4-D inputs; its window and gradient differ from ``LocalResponseNorm``
    (see ``functional.normalization.CrossMapLRN2d``)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "GroupNorm", "LayerNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]
