"""Lazy modules: layers whose input size (in_features, in_channels, num_features) is read from their first input.

Until then their parameters and buffers are ``UninitializedParameter`` / ``UninitializedBuffer``. A forward
pre-hook calls ``initialize_parameters(input)``, which materializes them at the inferred shapes and runs the
regular layer's ``reset_parameters`` (so the same seed draws the same weights as the regular layer would),
after which the module becomes its regular class (``cls_to_become``: LazyLinear -> Linear). A state dict
loaded into a lazy module materializes the parameters at the checkpoint's shapes.
"""
from ... import _dtype
from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d


class LazyModuleMixin:
    """Shape inference at the first call for the regular layer class that follows this mixin in the bases."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the parameters at the shapes ``args`` (the first forward's inputs) imply."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        """Whether any parameter or buffer of this module (not its children) is still uninitialized."""
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs):
        """The forward pre-hook: initialize, drop the hook and become the regular class."""
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """As Module's, but uninitialized tensors are saved as they are (a detached copy would lose what they are)."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars or is_lazy(p) else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars or is_lazy(b) else b.detach()

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Before loading: materialize each uninitialized tensor at the shape of an initialized checkpoint entry."""
        for name, own in (*self._parameters.items(), *self._buffers.items()):
            value = state_dict.get(prefix + name)
            if is_lazy(own) and value is not None and not is_lazy(value):
                own.materialize(tuple(value.shape))
        super()._upgrade_state_dict(state_dict, prefix, version)

    def _materialize(self, **shapes):
        """Materialize each named tensor that is present at its shape, then initialise as the regular layer."""
        with no_grad():
            for name, shape in shapes.items():
                own = getattr(self, name)
                if own is not None:
                    own.materialize(shape)
            self.reset_parameters()


# ---- Linear ------------------------------------------------------------------------------------
class LazyLinear(LazyModuleMixin, Linear):
    """A Linear layer whose ``in_features`` is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self._materialize(weight=(self.out_features, self.in_features), bias=(self.out_features,))
        if self.in_features == 0:  # loaded from a state dict: the weight's shape was set there
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]


# ---- convolutions -------------------------------------------------------------------------------
class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` from the channel dim of the first (batched or unbatched) input."""

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError(f"in_channels must be divisible by groups, got in_channels={self.in_channels} "
                                 f"and groups={self.groups}")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
            else:
                shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
            self._materialize(weight=shape, bias=(self.out_channels,))
        if self.in_channels == 0:  # loaded from a state dict
            self.in_channels = self._get_in_channels(input)

    def _get_in_channels(self, input):
        spatial = len(self.kernel_size)
        if input.dim() not in (spatial + 1, spatial + 2):
            raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == spatial + 2 else input.shape[0]


class _LazyConv(_LazyConvXdMixin):
    """LazyConv1d/2d/3d: ``Conv{n}d``'s arguments without ``in_channels``."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    """LazyConvTranspose1d/2d/3d: ``ConvTranspose{n}d``'s arguments without ``in_channels``."""

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class LazyConv1d(_LazyConv, Conv1d):
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    cls_to_become = ConvTranspose3d


# ---- batch and instance norm --------------------------------------------------------------------
class _LazyNormBase(LazyModuleMixin):
    """``num_features`` from the channel dim of the first input; affine weights and running stats are lazy.
    The defaults are PyTorch's for all lazy norms, instance norm included: affine and tracking running stats."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype, bias=False)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=_dtype.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = self._channels(input)
            shape = (self.num_features,)
            self._materialize(weight=shape, bias=shape, running_mean=shape, running_var=shape)
        if self.num_features == 0:  # loaded from a state dict
            self.num_features = self._channels(input)

    def _channels(self, input):
        """The channel dim of a (checked) batched input."""
        self._check_input_dim(input)
        return input.shape[1]


class _LazyInstanceNorm(_LazyNormBase):
    def _check_input_dim(self, input):
        batched = self._spatial_dims + 2
        if input.dim() not in (batched - 1, batched):
            raise ValueError(f"expected {batched - 1}D or {batched}D input (got {input.dim()}D input)")

    def _channels(self, input):
        """Dim 1 of a batched input, dim 0 of an unbatched one (PyTorch reads dim 1 of both)."""
        self._check_input_dim(input)
        return input.shape[0] if input.dim() == self._spatial_dims + 1 else input.shape[1]


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    cls_to_become = InstanceNorm3d


__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
