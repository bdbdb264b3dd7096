"""ConvNeXt (Liu et al. 2022, "A ConvNet for the 2020s") and ConvNeXt-V2 (Woo et al. 2023, "Co-designing and
Scaling ConvNets with Masked Autoencoders") as timm builds them: timm's small variants (atto to nano, with
overlapping stems ``_ols``, the norm-first head ``_hnf``, the SimpleNorm ``zepto_rms`` models, the RmsNorm
convnext_atto_rms), the MLP-head and extra-large ConvNeXts, the ConvNeXt-V2 models with Global Response
Normalisation (convnextv2_atto to convnextv2_huge, convnextv2_small included), and timm's tiny test networks
(test_convnext, test_convnext2, test_convnext3).

A ConvNeXt is a ResNet redesigned after the vision transformers: a patchify stem, four stages of blocks at
strides 4, 8, 16 and 32 (each stage after the first opens with a LayerNorm and a 2x2 stride-2 convolution), and
blocks that mix space with a 7x7 depthwise convolution and channels with an inverted MLP (one norm, GELU, 4x
expansion), scaled by a learned per-channel layer scale in a residual connection. ConvNeXt-V2 drops the layer
scale and adds Global Response Normalisation to the MLP. Model names, module names, ``state_dict`` keys and
initialisation follow timm's ``convnext`` module, so timm's checkpoints load directly; convnext_atto_rms and
convnextv2_small, which timm publishes no weights for, are registered too. torchvision's
convnext_tiny/small/base/large keep their names in ``flowvision.models.convnext``.
"""
from collections import OrderedDict
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, normed_stage_intermediates, prune_stages
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._conv import create_conv2d
from ._layers import (ClassifierHeadApi, GELUTanh, Mlp, SelectAdaptivePool2d, create_classifier, drop_path_module,
                      trunc_normal_)
from ._norm import LayerNorm, LayerNorm2d

__all__ = []


class SimpleNorm(nn.Module):
    """x / sqrt(var(x) + eps) over the last axis, then a learned per-channel scale: a LayerNorm that neither
    centres nor shifts (the variance is the unbiased one, as torch.var gives it)."""

    def __init__(self, num_channels, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_channels))

    def forward(self, x):
        variance = torch.var(x, dim=-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        x = x * self.weight
        return x


class SimpleNorm2d(SimpleNorm):
    """SimpleNorm over the channels of an (N, C, H, W) map, at every pixel."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = super().forward(x)
        x = x.permute(0, 3, 1, 2)
        return x


class RmsNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) over the last axis, then a learned per-channel scale."""

    def __init__(self, num_channels, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_channels))

    def forward(self, x):
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)
        x = x * torch.rsqrt(mean_square + self.eps)
        x = x * self.weight
        return x


class RmsNorm2d(RmsNorm):
    """RmsNorm over the channels of an (N, C, H, W) map, at every pixel."""

    def forward(self, x):
        mean_square = x.pow(2).mean(dim=1, keepdim=True)
        x = x * torch.rsqrt(mean_square + self.eps)
        x = x * self.weight.reshape(1, -1, 1, 1)
        return x


# norm_layer by name: (its channels-first form, its channels-last form)
_NORMS = {
    "layernorm": (LayerNorm2d, LayerNorm),
    "simplenorm": (SimpleNorm2d, SimpleNorm),
    "rmsnorm": (RmsNorm2d, RmsNorm),
}


def _norm_layers(norm_layer, conv_mlp, norm_eps):
    """The norm of the stem, downsampling layers and head (channels-first) and that of the blocks (channels-first
    with ``conv_mlp``, else channels-last), from a name in ``_NORMS`` ('layernorm' when None; a '2d' suffix is
    allowed) and an eps (the norm's default when None)."""
    name = (norm_layer or "layernorm").removesuffix("2d")
    if name not in _NORMS:
        raise ValueError(f"unknown norm_layer '{norm_layer}': expected one of {sorted(_NORMS)}")
    norm_2d, norm_last = _NORMS[name]
    block_norm = norm_2d if conv_mlp else norm_last
    if norm_eps is None:
        return norm_2d, block_norm
    return partial(norm_2d, eps=norm_eps), partial(block_norm, eps=norm_eps)


def _linear_layer(use_conv):
    """A 1x1 convolution (on (N, C, H, W) maps) or a linear layer (on the last axis)."""
    return partial(nn.Conv2d, kernel_size=1) if use_conv else nn.Linear


class GlobalResponseNorm(nn.Module):
    """ConvNeXt-V2's Global Response Normalisation: each channel's L2 norm over the image, divided by the mean of
    those norms over the channels, rescales the channel (x + bias + weight * x * relative norm), so channels
    compete. ``weight`` and ``bias`` start at zero (the layer starts as an identity)."""

    def __init__(self, dim, eps=1e-6, channels_last=True):
        super().__init__()
        self.eps = eps
        self.spatial_dims = (1, 2) if channels_last else (2, 3)
        self.channel_dim = -1 if channels_last else 1
        self.param_shape = (1, 1, 1, -1) if channels_last else (1, -1, 1, 1)
        self.weight = nn.Parameter(torch.zeros(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        norms = x.norm(p=2, dim=self.spatial_dims, keepdim=True)
        relative = norms / (norms.mean(dim=self.channel_dim, keepdim=True) + self.eps)
        response = torch.addcmul(self.bias.view(self.param_shape), self.weight.view(self.param_shape), x * relative)
        return x + response


class GlobalResponseNormMlp(nn.Module):
    """The ConvNeXt-V2 MLP: timm's ``Mlp`` with ``grn`` (Global Response Normalisation) between the activation and
    ``fc2``, linear layers on the last axis or 1x1 convolutions (``use_conv``); ``drop1`` and ``drop2`` are timm's
    dropout slots, unused (p=0) in ConvNeXt."""

    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, use_conv=False):
        super().__init__()
        linear_layer = _linear_layer(use_conv)
        self.fc1 = linear_layer(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(0.0)
        self.grn = GlobalResponseNorm(hidden_features, channels_last=not use_conv)
        self.fc2 = linear_layer(hidden_features, in_features)
        self.drop2 = nn.Dropout(0.0)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.grn(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class ConvNeXtBlock(nn.Module):
    """x + drop_path(gamma * mlp(norm(depthwise conv(x)))).

    The depthwise ``kernel_size`` convolution (padded to keep the size, ``dilation`` for a dilated stage) mixes
    space; the norm and MLP mix channels, as 1x1 convolutions on the (N, C, H, W) map with ``conv_mlp`` or as
    linear layers on the channels-last map otherwise (the same function; timm's small models use the first).
    ``gamma`` is the layer scale, ``ls_init_value`` at first (no layer scale when None, as in ConvNeXt-V2);
    ``use_grn`` adds Global Response Normalisation to the MLP.
    """

    def __init__(self, dim, kernel_size=7, dilation=1, mlp_ratio=4, conv_mlp=False, conv_bias=True, use_grn=False,
                 ls_init_value=1e-6, act_layer=nn.GELU, norm_layer=LayerNorm, drop_path=0.0):
        super().__init__()
        self.use_conv_mlp = conv_mlp
        self.conv_dw = nn.Conv2d(dim, dim, kernel_size, padding=dilation * (kernel_size - 1) // 2, dilation=dilation,
                                 groups=dim, bias=conv_bias)
        self.norm = norm_layer(dim)
        mlp_layer = GlobalResponseNormMlp if use_grn else partial(Mlp, norm_placeholder=False)
        self.mlp = mlp_layer(dim, int(mlp_ratio * dim), act_layer=act_layer, use_conv=conv_mlp)
        self.gamma = nn.Parameter(ls_init_value * torch.ones(dim)) if ls_init_value is not None else None
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        if self.use_conv_mlp:
            x = self.norm(x)
            x = self.mlp(x)
        else:
            x = x.permute(0, 2, 3, 1)
            x = self.norm(x)
            x = self.mlp(x)
            x = x.permute(0, 3, 1, 2)
        if self.gamma is not None:
            x = x.mul(self.gamma.reshape(1, -1, 1, 1))
        x = self.drop_path(x) + shortcut
        return x


class ConvNeXtStage(nn.Module):
    """``downsample`` (norm, then a 2x2 stride-2 convolution to ``out_chs``; an identity when the stage keeps the
    resolution and width), then ``depth`` blocks.

    ``dilation`` is (the downsampling convolution's, the blocks') dilation: where ``output_stride`` turns a
    stage's stride into dilation, the downsampling convolution keeps the size with TensorFlow's "same" padding.
    """

    def __init__(self, in_chs, out_chs, kernel_size=7, stride=2, depth=2, dilation=(1, 1), drop_path_rates=None,
                 ls_init_value=1.0, conv_mlp=False, conv_bias=True, use_grn=False, act_layer=nn.GELU,
                 norm_layer=LayerNorm2d, norm_layer_cl=LayerNorm):
        super().__init__()
        changes_dilation = dilation[0] != dilation[1]
        if in_chs != out_chs or stride > 1 or changes_dilation:
            kernel = 2 if stride > 1 or changes_dilation else 1
            if dilation[1] > 1:
                conv = create_conv2d(in_chs, out_chs, kernel, stride, dilation[0], pad_type="same", bias=conv_bias)
            else:
                conv = nn.Conv2d(in_chs, out_chs, kernel, stride=stride, bias=conv_bias)
            self.downsample = nn.Sequential(norm_layer(in_chs), conv)
        else:
            self.downsample = nn.Identity()
        drop_path_rates = drop_path_rates or [0.0] * depth
        self.blocks = nn.Sequential(*[
            ConvNeXtBlock(out_chs, kernel_size=kernel_size, dilation=dilation[1], conv_mlp=conv_mlp,
                          conv_bias=conv_bias, use_grn=use_grn, ls_init_value=ls_init_value, act_layer=act_layer,
                          norm_layer=norm_layer if conv_mlp else norm_layer_cl, drop_path=drop_path_rates[i])
            for i in range(depth)
        ])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class ClassifierHead(nn.Module):
    """The norm-first head (``head_norm_first``, the model's ``norm_pre`` normalises the map before): global
    pooling, dropout, then the linear classifier ``fc`` (an identity for ``num_classes=0``)."""

    def __init__(self, in_features, num_classes, pool_type="avg", drop_rate=0.0):
        super().__init__()
        self.in_features = in_features
        global_pool, fc = create_classifier(in_features, num_classes, pool_type)
        self.global_pool = global_pool
        self.num_features = in_features * global_pool.feat_mult()
        self.drop = nn.Dropout(drop_rate)
        self.fc = fc

    def reset(self, num_classes, pool_type=None, reset_other=False):
        """A fresh ``fc`` for ``num_classes``, after new pooling ``pool_type`` if given (``reset_other``: nothing
        else to reset)."""
        if pool_type is not None:
            self.global_pool = SelectAdaptivePool2d(pool_type).train(self.training)
        self.num_features = self.in_features * self.global_pool.feat_mult()
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.fc.train(self.training)

    def forward(self, x, pre_logits=False):
        x = self.global_pool(x)
        x = self.drop(x)
        return x if pre_logits else self.fc(x)


def _head_pool(pool_type):
    """The pooling of a pool-then-norm head: unflattened, and keeping the channels (no 'catavgmax')."""
    global_pool = SelectAdaptivePool2d(pool_type, flatten=False)
    if global_pool.feat_mult() != 1:
        raise ValueError(f"global_pool '{pool_type}' changes the pooled width, which this head does not support")
    return global_pool


class NormMlpClassifierHead(nn.Module):
    """ConvNeXt's head: global pooling, the norm (on the pooled 1x1 map), flattening, optionally ``pre_logits``
    (a linear layer to ``hidden_size`` and GELU), dropout and the classifier ``fc``.

    Without pooling (``pool_type=''``) the map passes through and the linear layers are 1x1 convolutions.
    ``num_features`` is the width the classifier sees.
    """

    def __init__(self, in_features, num_classes, hidden_size=None, pool_type="avg", drop_rate=0.0,
                 norm_layer=LayerNorm2d, act_layer=nn.GELU):
        super().__init__()
        self.in_features = in_features
        self.hidden_size = hidden_size
        self.num_features = in_features
        linear_layer = _linear_layer(not pool_type)
        self.global_pool = _head_pool(pool_type)
        self.norm = norm_layer(in_features)
        self.flatten = nn.Flatten(1) if pool_type else nn.Identity()
        if hidden_size:
            self.pre_logits = nn.Sequential(OrderedDict([
                ("fc", linear_layer(in_features, hidden_size)),
                ("act", act_layer()),
            ]))
            self.num_features = hidden_size
        else:
            self.pre_logits = nn.Identity()
        self.drop = nn.Dropout(drop_rate)
        self.fc = linear_layer(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def reset(self, num_classes, pool_type=None, reset_other=False):
        """A fresh ``fc`` for ``num_classes`` (0: an identity), after new pooling ``pool_type`` if given;
        ``reset_other`` also removes the norm and ``pre_logits``. A kept ``pre_logits`` layer switches between a
        linear layer and a 1x1 convolution with the pooling, its weights kept."""
        if pool_type is not None:
            self.global_pool = _head_pool(pool_type).train(self.training)
            self.flatten = (nn.Flatten(1) if pool_type else nn.Identity()).train(self.training)
        if reset_other:
            self.norm = nn.Identity().train(self.training)
            self.pre_logits = nn.Identity().train(self.training)
            self.hidden_size = None
            self.num_features = self.in_features
        use_conv = not self.global_pool.pool_type
        linear_layer = _linear_layer(use_conv)
        if self.hidden_size and isinstance(self.pre_logits.fc, nn.Conv2d) != use_conv:
            self.pre_logits.fc = self._converted(self.pre_logits.fc, linear_layer)
        self.fc = linear_layer(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.fc.train(self.training)

    def _converted(self, layer, linear_layer):
        """``layer`` (a linear layer or a 1x1 convolution) as the other kind, with the same weights."""
        new_layer = linear_layer(self.in_features, self.hidden_size)
        with torch.no_grad():
            new_layer.weight.copy_(layer.weight.reshape(new_layer.weight.shape))
            new_layer.bias.copy_(layer.bias)
        new_layer.weight.requires_grad_(layer.weight.requires_grad)
        new_layer.bias.requires_grad_(layer.bias.requires_grad)
        return new_layer.train(self.pre_logits.training)

    def forward(self, x, pre_logits=False):
        x = self.global_pool(x)
        x = self.norm(x)
        x = self.flatten(x)
        x = self.pre_logits(x)
        x = self.drop(x)
        return x if pre_logits else self.fc(x)


class NormPreStagesApi(ClassifierHeadApi):
    """timm's API of a model made of ``stem``, ``stages``, ``norm_pre`` (an identity unless the map is normalised
    before the head) and a ``head`` that is a ``ClassifierHead`` or a ``NormMlpClassifierHead`` (DaViT, EdgeNeXt):
    a mixin before ``nn.Module``."""

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given (and
        kept in ``global_pool``); ``reset_other`` also drops the pool-then-norm head's norm (a norm-first
        ``ClassifierHead`` has nothing else)."""
        head_args = {"reset_other": reset_other} if isinstance(self.head, NormMlpClassifierHead) else {}
        super().reset_classifier(num_classes, global_pool, **head_args)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's map (N, num_features, H / 32, W / 32), through
        ``norm_pre``."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm_pre(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final map, through ``norm_pre`` when the last stage ran.
        ``norm`` applies ``norm_pre`` to the last stage's intermediate; ``stop_early`` skips the stages after the
        last one picked."""
        return normed_stage_intermediates(x, self.stem, self.stages, self.norm_pre, indices, norm,
                                          stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, ``norm_pre`` when asked or when stages go, and the
        classifier (with the head's norm) when asked or when stages go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_norm or prune_end:
            self.norm_pre = nn.Identity()
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "", reset_other=True)
        return take


class ConvNeXt(NormPreStagesApi, nn.Module):
    """A stem, four stages of ConvNeXt blocks (widths ``dims``, ``depths`` blocks), and a head.

    ``stem_type``: 'patch' (a ``patch_size`` patchify convolution and a norm), or two overlapping 3x3 stride-2
    convolutions and a norm: 'overlap', 'overlap_tiered' (the first to half the width, rounded to 8) or
    'overlap_act' (GELU between them). The head pools then normalises, with an optional hidden layer of
    ``head_hidden_size`` (``NormMlpClassifierHead``), or with ``head_norm_first`` normalises the map first
    (``norm_pre``), then pools (``ClassifierHead``).

    ``norm_layer``: 'layernorm', 'simplenorm' or 'rmsnorm' (eps ``norm_eps``, 1e-6 by default). ``conv_mlp``: the
    blocks run their MLPs as 1x1 convolutions. ``use_grn``: ConvNeXt-V2's MLP. ``ls_init_value``: the layer scales'
    initial value (None: no layer scale). ``kernel_sizes``: the depthwise kernel, one or one per stage.
    ``output_stride`` 16 or 8 dilates the last stages instead of striding them. ``drop_path_rate`` is the
    stochastic depth of the last stage, ``drop_rate`` the dropout before the classifier. Weights start as timm's:
    truncated normals (std 0.02) for convolutions and linear layers, zero biases, the head's linear layers scaled
    by ``head_init_scale``.

    ``forward_intermediates`` and ``prune_intermediate_layers`` (from ``NormPreStagesApi``) are timm's: the four
    stages' outputs, ``norm_pre`` (the norm-first head's) as the final norm.
    """

    feature_wrapper = FlatFeatureListNet  # timm's features_only weight names

    default_cfg = {"first_conv": "stem.0", "classifier": "head.fc"}

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", output_stride=32, depths=(3, 3, 9, 3),
                 dims=(96, 192, 384, 768), kernel_sizes=7, ls_init_value=1e-6, stem_type="patch", patch_size=4,
                 head_init_scale=1.0, head_norm_first=False, head_hidden_size=None, conv_mlp=False, conv_bias=True,
                 use_grn=False, act_layer=nn.GELU, norm_layer=None, norm_eps=None, drop_rate=0.0,
                 drop_path_rate=0.0):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        if head_norm_first and head_hidden_size:
            raise ValueError("head_hidden_size needs the pool-then-norm head (head_norm_first=False)")
        kernel_sizes = kernel_sizes if isinstance(kernel_sizes, (tuple, list)) else (kernel_sizes,) * 4
        norm_layer, norm_layer_cl = _norm_layers(norm_layer, conv_mlp, norm_eps)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.stem = self._make_stem(stem_type, in_chans, dims[0], patch_size, conv_bias, act_layer, norm_layer)
        stem_stride = patch_size if stem_type == "patch" else 4

        drop_path_rates = [rates.tolist() for rates in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        self.feature_info = []
        stages = []
        prev_chs = dims[0]
        curr_stride = stem_stride
        dilation = 1
        for i in range(4):
            stride = 2 if curr_stride == 2 or i > 0 else 1
            if curr_stride >= output_stride and stride > 1:
                dilation *= stride
                stride = 1
            curr_stride *= stride
            first_dilation = 1 if dilation in (1, 2) else 2
            stages.append(ConvNeXtStage(
                prev_chs, dims[i], kernel_size=kernel_sizes[i], stride=stride, dilation=(first_dilation, dilation),
                depth=depths[i], drop_path_rates=drop_path_rates[i], ls_init_value=ls_init_value, conv_mlp=conv_mlp,
                conv_bias=conv_bias, use_grn=use_grn, act_layer=act_layer, norm_layer=norm_layer,
                norm_layer_cl=norm_layer_cl,
            ))
            prev_chs = dims[i]
            self.feature_info.append(dict(num_chs=prev_chs, reduction=curr_stride, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = prev_chs

        if head_norm_first:
            self.norm_pre = norm_layer(self.num_features)
            self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        else:
            self.norm_pre = nn.Identity()
            self.head = NormMlpClassifierHead(self.num_features, num_classes, hidden_size=head_hidden_size,
                                              pool_type=global_pool, drop_rate=drop_rate, norm_layer=norm_layer)
        self.head_hidden_size = self.head.num_features
        self._init_weights(head_init_scale)

    @staticmethod
    def _make_stem(stem_type, in_chans, out_chs, patch_size, conv_bias, act_layer, norm_layer):
        """The stem of ``stem_type`` (see the class), down to a quarter of the image (1 / ``patch_size`` for
        'patch')."""
        if stem_type == "patch":
            return nn.Sequential(
                nn.Conv2d(in_chans, out_chs, kernel_size=patch_size, stride=patch_size, bias=conv_bias),
                norm_layer(out_chs),
            )
        if stem_type not in ("overlap", "overlap_tiered", "overlap_act"):
            raise ValueError(f"unknown stem_type '{stem_type}'")
        mid_chs = _make_divisible(out_chs // 2, 8) if stem_type == "overlap_tiered" else out_chs
        layers = [nn.Conv2d(in_chans, mid_chs, kernel_size=3, stride=2, padding=1, bias=conv_bias)]
        if stem_type == "overlap_act":
            layers.append(act_layer())
        layers.append(nn.Conv2d(mid_chs, out_chs, kernel_size=3, stride=2, padding=1, bias=conv_bias))
        layers.append(norm_layer(out_chs))
        return nn.Sequential(*layers)

    def _init_weights(self, head_init_scale):
        """timm's init, in module order: truncated normal (std 0.02) weights and zero biases for every convolution
        and linear layer; the head's linear layers scaled by ``head_init_scale``."""
        for name, module in self.named_modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            if isinstance(module, nn.Linear) and name.startswith("head.") and head_init_scale != 1.0:
                with torch.no_grad():
                    module.weight.mul_(head_init_scale)
                    module.bias.mul_(head_init_scale)

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given;
        ``reset_other`` also drops the head's norm and hidden layer."""
        super().reset_classifier(num_classes, global_pool, reset_other=reset_other)

    def forward_features(self, x):
        """The map after the last stage (and ``norm_pre``), at 1/32 of the image (1/``output_stride``)."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm_pre(x)
        return x


def _create_convnext(variant, pretrained, progress, **kwargs):
    """Build a registered variant; with ``features_only`` its features are timm's: all four stages unless
    ``out_indices`` says otherwise (n: the last n; negative ones counted from the end)."""
    return build_model(ConvNeXt, variant, pretrained, progress=progress, **kwargs)


@register_model
def convnext_zepto_rms(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Zepto (timm): depths (2, 2, 4, 2), widths 32-256, 1x1-conv MLPs, SimpleNorm instead of LayerNorm."""
    config = dict(depths=(2, 2, 4, 2), dims=(32, 64, 128, 256), conv_mlp=True, norm_layer="simplenorm")
    return _create_convnext("convnext_zepto_rms", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_zepto_rms_ols(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Zepto with SimpleNorm and an overlapping stem (two 3x3 stride-2 convolutions, GELU between)."""
    config = dict(depths=(2, 2, 4, 2), dims=(32, 64, 128, 256), conv_mlp=True, norm_layer="simplenorm",
                  stem_type="overlap_act")
    return _create_convnext("convnext_zepto_rms_ols", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_atto(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Atto (timm): depths (2, 2, 6, 2), widths 40-320, 1x1-conv MLPs."""
    config = dict(depths=(2, 2, 6, 2), dims=(40, 80, 160, 320), conv_mlp=True)
    return _create_convnext("convnext_atto", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_atto_rms(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Atto with RmsNorm instead of LayerNorm (timm's, untrained): depths (2, 2, 6, 2), widths 40-320,
    1x1-conv MLPs."""
    config = dict(depths=(2, 2, 6, 2), dims=(40, 80, 160, 320), conv_mlp=True, norm_layer="rmsnorm2d")
    return _create_convnext("convnext_atto_rms", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_atto_ols(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Atto with an overlapping tiered stem (3x3 stride-2 convolutions to 24, then 40 channels)."""
    config = dict(depths=(2, 2, 6, 2), dims=(40, 80, 160, 320), conv_mlp=True, stem_type="overlap_tiered")
    return _create_convnext("convnext_atto_ols", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_femto(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Femto (timm): depths (2, 2, 6, 2), widths 48-384, 1x1-conv MLPs."""
    config = dict(depths=(2, 2, 6, 2), dims=(48, 96, 192, 384), conv_mlp=True)
    return _create_convnext("convnext_femto", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_femto_ols(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Femto with an overlapping tiered stem (3x3 stride-2 convolutions to 24, then 48 channels)."""
    config = dict(depths=(2, 2, 6, 2), dims=(48, 96, 192, 384), conv_mlp=True, stem_type="overlap_tiered")
    return _create_convnext("convnext_femto_ols", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_pico(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Pico (timm): depths (2, 2, 6, 2), widths 64-512, 1x1-conv MLPs."""
    config = dict(depths=(2, 2, 6, 2), dims=(64, 128, 256, 512), conv_mlp=True)
    return _create_convnext("convnext_pico", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_pico_ols(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Pico with an overlapping tiered stem (3x3 stride-2 convolutions to 32, then 64 channels)."""
    config = dict(depths=(2, 2, 6, 2), dims=(64, 128, 256, 512), conv_mlp=True, stem_type="overlap_tiered")
    return _create_convnext("convnext_pico_ols", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_nano(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Nano (timm): depths (2, 2, 8, 2), widths 80-640, 1x1-conv MLPs."""
    config = dict(depths=(2, 2, 8, 2), dims=(80, 160, 320, 640), conv_mlp=True)
    return _create_convnext("convnext_nano", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_nano_ols(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-Nano with an overlapping stem (two 3x3 stride-2 convolutions of 80 channels)."""
    config = dict(depths=(2, 2, 8, 2), dims=(80, 160, 320, 640), conv_mlp=True, stem_type="overlap")
    return _create_convnext("convnext_nano_ols", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_tiny_hnf(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-T with 1x1-conv MLPs and the head normalising the map before pooling (head norm first)."""
    config = dict(depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), head_norm_first=True, conv_mlp=True)
    return _create_convnext("convnext_tiny_hnf", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_large_mlp(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-L with a hidden layer (1536, GELU) in the head."""
    config = dict(depths=(3, 3, 27, 3), dims=(192, 384, 768, 1536), head_hidden_size=1536)
    return _create_convnext("convnext_large_mlp", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_xlarge(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-XL: depths (3, 3, 27, 3), widths 256-2048."""
    config = dict(depths=(3, 3, 27, 3), dims=(256, 512, 1024, 2048))
    return _create_convnext("convnext_xlarge", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnext_xxlarge(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-XXL: depths (3, 4, 30, 3), widths 384-3072, norms with eps 1e-5."""
    config = dict(depths=(3, 4, 30, 3), dims=(384, 768, 1536, 3072), norm_eps=1e-5)
    return _create_convnext("convnext_xxlarge", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_atto(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-Atto: the Atto layout with GRN MLPs (1x1 convolutions) and no layer scale."""
    config = dict(depths=(2, 2, 6, 2), dims=(40, 80, 160, 320), use_grn=True, ls_init_value=None, conv_mlp=True)
    return _create_convnext("convnextv2_atto", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_femto(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-Femto: the Femto layout with GRN MLPs (1x1 convolutions) and no layer scale."""
    config = dict(depths=(2, 2, 6, 2), dims=(48, 96, 192, 384), use_grn=True, ls_init_value=None, conv_mlp=True)
    return _create_convnext("convnextv2_femto", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_pico(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-Pico: the Pico layout with GRN MLPs (1x1 convolutions) and no layer scale."""
    config = dict(depths=(2, 2, 6, 2), dims=(64, 128, 256, 512), use_grn=True, ls_init_value=None, conv_mlp=True)
    return _create_convnext("convnextv2_pico", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_nano(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-Nano: the Nano layout with GRN MLPs (1x1 convolutions) and no layer scale."""
    config = dict(depths=(2, 2, 8, 2), dims=(80, 160, 320, 640), use_grn=True, ls_init_value=None, conv_mlp=True)
    return _create_convnext("convnextv2_nano", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_tiny(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-T: depths (3, 3, 9, 3), widths 96-768, GRN MLPs, no layer scale."""
    config = dict(depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), use_grn=True, ls_init_value=None)
    return _create_convnext("convnextv2_tiny", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_small(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-S (untrained in timm): depths (3, 3, 27, 3), widths 96-768, GRN MLPs, no layer scale."""
    config = dict(depths=(3, 3, 27, 3), dims=(96, 192, 384, 768), use_grn=True, ls_init_value=None)
    return _create_convnext("convnextv2_small", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_base(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-B: depths (3, 3, 27, 3), widths 128-1024, GRN MLPs, no layer scale."""
    config = dict(depths=(3, 3, 27, 3), dims=(128, 256, 512, 1024), use_grn=True, ls_init_value=None)
    return _create_convnext("convnextv2_base", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_large(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-L: depths (3, 3, 27, 3), widths 192-1536, GRN MLPs, no layer scale."""
    config = dict(depths=(3, 3, 27, 3), dims=(192, 384, 768, 1536), use_grn=True, ls_init_value=None)
    return _create_convnext("convnextv2_large", pretrained, progress, **dict(config, **kwargs))


@register_model
def convnextv2_huge(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-V2-H: depths (3, 3, 27, 3), widths 352-2816, GRN MLPs, no layer scale."""
    config = dict(depths=(3, 3, 27, 3), dims=(352, 704, 1408, 2816), use_grn=True, ls_init_value=None)
    return _create_convnext("convnextv2_huge", pretrained, progress, **dict(config, **kwargs))


@register_model
def test_convnext(pretrained=False, progress=True, **kwargs):
    """timm's tiny test ConvNeXt: depths (1, 2, 4, 2), widths 24-64, norms with eps 1e-5, tanh-approximated GELU."""
    config = dict(depths=(1, 2, 4, 2), dims=(24, 32, 48, 64), norm_eps=1e-5, act_layer=GELUTanh)
    return _create_convnext("test_convnext", pretrained, progress, **dict(config, **kwargs))


@register_model
def test_convnext2(pretrained=False, progress=True, **kwargs):
    """timm's tiny test ConvNeXt: one block a stage, widths 32-128, norms with eps 1e-5, tanh-approximated GELU."""
    config = dict(depths=(1, 1, 1, 1), dims=(32, 64, 96, 128), norm_eps=1e-5, act_layer=GELUTanh)
    return _create_convnext("test_convnext2", pretrained, progress, **dict(config, **kwargs))


@register_model
def test_convnext3(pretrained=False, progress=True, **kwargs):
    """timm's tiny test ConvNeXt: one block a stage, widths 32-128, kernels 7, 5, 5, 3, norms with eps 1e-5, SiLU."""
    config = dict(depths=(1, 1, 1, 1), dims=(32, 64, 96, 128), norm_eps=1e-5, kernel_sizes=(7, 5, 5, 3),
                  act_layer=nn.SiLU)
    return _create_convnext("test_convnext3", pretrained, progress, **dict(config, **kwargs))
