"""MambaOut (Yu and Wang 2024, "MambaOut: Do We Really Need Mamba for Vision?"): mambaout_femto, mambaout_kobe,
mambaout_tiny, mambaout_small, mambaout_base and timm's own variants mambaout_small_rw, mambaout_base_short_rw,
mambaout_base_tall_rw, mambaout_base_wide_rw and mambaout_base_plus_rw, and timm's tiny test network
test_mambaout.

The paper asks whether vision needs Mamba's state-space token mixer and answers with Mamba's block without it: a
Gated CNN block (a LayerNorm, one linear layer to a gate and a value, a 7x7 depthwise convolution on part of the
value's channels, the gated product projected back, added to the input) stacked in four stages after a two-layer
convolutional stem, with a 3x3 stride-2 convolution between stages. The maps stay channels-last (N, H, W, C)
throughout, as in timm. The original models end in a pooled LayerNorm and an MLP head with a second LayerNorm;
timm's ``_rw`` variants normalise before each downsampling convolution, drop the stem's middle norm, add layer
scale, use a plainer MLP head and (``wide``, ``plus``) SiLU. Model names, module names, ``state_dict`` keys and
(seeded) initialisation follow timm's ``mambaout`` module, so its checkpoints load directly; test_mambaout, which
timm publishes no weights for, is registered too.
"""
from collections import OrderedDict

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._layers import GELU, drop_path_module, get_act_layer, trunc_normal_
from ._norm import LayerNorm
from .vision_transformer import LayerScale

__all__ = []


class Stem(nn.Module):
    """Two 3x3 stride-2 convolutions (``conv1`` to half of ``out_chs``, ``conv2``) with ``act_layer`` between them,
    after a LayerNorm (``norm1``) unless not ``mid_norm``; the output is normalised (``norm2``) and channels-last."""

    def __init__(self, in_chs=3, out_chs=96, mid_norm=True, act_layer=nn.GELU, norm_layer=LayerNorm):
        super().__init__()
        self.conv1 = nn.Conv2d(in_chs, out_chs // 2, kernel_size=3, stride=2, padding=1)
        self.norm1 = norm_layer(out_chs // 2) if mid_norm else None
        self.act = act_layer()
        self.conv2 = nn.Conv2d(out_chs // 2, out_chs, kernel_size=3, stride=2, padding=1)
        self.norm2 = norm_layer(out_chs)

    def forward(self, x):
        x = self.conv1(x)
        if self.norm1 is not None:
            x = self.norm1(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = self.act(x)
        x = self.conv2(x)
        x = self.norm2(x.permute(0, 2, 3, 1))
        return x


class Downsample(nn.Module):
    """The original models' downsampling of a channels-last map: a 3x3 stride-2 convolution (``conv``), then a
    LayerNorm (``norm``)."""

    def __init__(self, in_chs, out_chs, norm_layer=LayerNorm):
        super().__init__()
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=3, stride=2, padding=1)
        self.norm = norm_layer(out_chs)

    def forward(self, x):
        x = self.conv(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        x = self.norm(x)
        return x


class DownsampleNormFirst(nn.Module):
    """timm's ``_rw`` downsampling of a channels-last map: a LayerNorm (``norm``), then a 3x3 stride-2 convolution
    (``conv``), so that every convolution sees a normalised input."""

    def __init__(self, in_chs, out_chs, norm_layer=LayerNorm):
        super().__init__()
        self.norm = norm_layer(in_chs)
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        x = self.norm(x)
        x = self.conv(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        return x


def _check_pool_type(pool_type, allowed):
    """Refuse a head pooling other than those ``allowed`` (timm asserts)."""
    if pool_type not in allowed:
        raise ValueError(f"global_pool must be one of {allowed}, got {pool_type!r}")


class MlpHead(nn.Module):
    """The original MambaOut head on a channels-last map: a mean over the positions (unless ``pool_type`` is ''),
    a LayerNorm (``norm``), an MLP layer to ``mlp_ratio`` times the width with ``act_layer`` and a second LayerNorm
    (``pre_logits``; an identity when ``mlp_ratio`` is None), dropout (``head_dropout``) and the classifier
    (``fc``). ``num_features`` is the width the classifier sees."""

    pool_types = ("", "avg")

    def __init__(self, in_features, num_classes=1000, pool_type="avg", act_layer=nn.GELU, mlp_ratio=4,
                 norm_layer=LayerNorm, drop_rate=0.0, bias=True):
        super().__init__()
        _check_pool_type(pool_type, self.pool_types)
        hidden_size = int(mlp_ratio * in_features) if mlp_ratio is not None else None
        self.pool_type = pool_type
        self.in_features = in_features
        self.hidden_size = hidden_size or in_features
        self.norm = norm_layer(in_features)
        if hidden_size:
            self.pre_logits = nn.Sequential(OrderedDict([
                ("fc", nn.Linear(in_features, hidden_size)),
                ("act", act_layer()),
                ("norm", norm_layer(hidden_size)),
            ]))
            self.num_features = hidden_size
        else:
            self.pre_logits = nn.Identity()
            self.num_features = in_features
        self.fc = nn.Linear(self.num_features, num_classes, bias=bias) if num_classes > 0 else nn.Identity()
        self.head_dropout = nn.Dropout(drop_rate)

    def reset(self, num_classes, pool_type=None, reset_other=False, in_features=None):
        """A fresh ``fc`` (with a bias) for ``num_classes`` (0: an identity), after the pooling ``pool_type`` if
        given; ``reset_other`` also removes the norm and ``pre_logits``, after which the input width may change to
        ``in_features``."""
        if pool_type is not None:
            _check_pool_type(pool_type, self.pool_types)
            self.pool_type = pool_type
        if reset_other:
            self.norm = nn.Identity().train(self.training)
            self.pre_logits = nn.Identity().train(self.training)
            self.num_features = self.in_features
        if in_features is not None and in_features != self.in_features:
            if not isinstance(self.norm, nn.Identity):
                raise ValueError("the head's input width can only change once its norm is removed (reset_other)")
            self.in_features = self.num_features = in_features
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.fc.train(self.training)

    def forward(self, x, pre_logits=False):
        if self.pool_type == "avg":
            x = x.mean((1, 2))
        x = self.norm(x)
        x = self.pre_logits(x)
        x = self.head_dropout(x)
        if pre_logits:
            return x
        x = self.fc(x)
        return x


class ClNormMlpClassifierHead(nn.Module):
    """timm's pool-norm-MLP head for channels-last maps (the ``_rw`` variants' head): global pooling over the
    positions ('avg', 'max', 'avgmax' or '' for none), a norm (``norm``), optionally a linear layer to
    ``hidden_size`` with ``act_layer`` (``pre_logits``), dropout (``drop``) and the classifier (``fc``).
    ``num_features`` is the width the classifier sees."""

    pool_types = ("", "avg", "max", "avgmax")

    def __init__(self, in_features, num_classes, hidden_size=None, pool_type="avg", drop_rate=0.0,
                 norm_layer=LayerNorm, act_layer=GELU):
        super().__init__()
        _check_pool_type(pool_type, self.pool_types)
        self.in_features = in_features
        self.hidden_size = hidden_size
        self.num_features = in_features
        self.pool_type = pool_type
        self.norm = norm_layer(in_features)
        if hidden_size:
            self.pre_logits = nn.Sequential(OrderedDict([
                ("fc", nn.Linear(in_features, hidden_size)),
                ("act", get_act_layer(act_layer)()),
            ]))
            self.num_features = hidden_size
        else:
            self.pre_logits = nn.Identity()
        self.drop = nn.Dropout(drop_rate)
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def reset(self, num_classes, pool_type=None, reset_other=False, in_features=None):
        """A fresh ``fc`` for ``num_classes`` (0: an identity), after the pooling ``pool_type`` if given;
        ``reset_other`` also removes the norm and ``pre_logits``, after which the input width may change to
        ``in_features``."""
        if pool_type is not None:
            _check_pool_type(pool_type, self.pool_types)
            self.pool_type = pool_type
        if reset_other:
            self.pre_logits = nn.Identity().train(self.training)
            self.norm = nn.Identity().train(self.training)
            self.hidden_size = None
            self.num_features = self.in_features
        if in_features is not None and in_features != self.in_features:
            if not isinstance(self.norm, nn.Identity):
                raise ValueError("the head's input width can only change once its norm is removed (reset_other)")
            self.in_features = in_features
            if not self.hidden_size:
                self.num_features = in_features
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.fc.train(self.training)

    def _global_pool(self, x):
        """The (N, H, W, C) map pooled over its positions to (N, C), or left as it is without pooling."""
        if self.pool_type == "avg":
            return x.mean((1, 2))
        if self.pool_type == "max":
            return x.amax(dim=(1, 2))
        if self.pool_type == "avgmax":
            return 0.5 * (x.amax(dim=(1, 2)) + x.mean((1, 2)))
        return x

    def forward(self, x, pre_logits=False):
        x = self._global_pool(x)
        x = self.norm(x)
        x = self.pre_logits(x)
        x = self.drop(x)
        if pre_logits:
            return x
        x = self.fc(x)
        return x


class GatedConvBlock(nn.Module):
    """The Gated CNN block on a channels-last map: a LayerNorm (``norm``), a linear layer (``fc1``) to a gate and a
    value of ``expansion_ratio`` times the width each; the value's last ``conv_ratio`` times the width channels go
    through a ``kernel_size`` depthwise convolution (``conv``: the only spatial mixing), the rest pass as they are;
    the activated gate (``act``) times the value is projected back (``fc2``), scaled (``ls``, with
    ``ls_init_value`` given) and added to the input after stochastic depth (``drop_path``).

    As in timm, ``ls_init_value`` only switches the layer scale on: its values start at LayerScale's 1e-5.
    """

    def __init__(self, dim, expansion_ratio=8 / 3, kernel_size=7, conv_ratio=1.0, ls_init_value=None,
                 norm_layer=LayerNorm, act_layer=nn.GELU, drop_path=0.0):
        super().__init__()
        self.norm = norm_layer(dim)
        hidden = int(expansion_ratio * dim)
        self.fc1 = nn.Linear(dim, hidden * 2)
        self.act = act_layer()
        conv_channels = int(conv_ratio * dim)
        self.split_indices = (hidden, hidden - conv_channels, conv_channels)
        self.conv = nn.Conv2d(conv_channels, conv_channels, kernel_size=kernel_size, padding=kernel_size // 2,
                              groups=conv_channels)
        self.fc2 = nn.Linear(hidden, dim)
        self.ls = LayerScale(dim) if ls_init_value is not None else nn.Identity()
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.fc1(self.norm(x))
        gate, identity, conv_input = torch.split(x, self.split_indices, dim=-1)
        convolved = self.conv(conv_input.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        x = self.fc2(self.act(gate) * torch.cat((identity, convolved), dim=-1))
        x = self.ls(x)
        x = self.drop_path(x)
        return x + shortcut


class MambaOutStage(nn.Module):
    """A stage: ``downsample`` ('conv': ``Downsample``, 'conv_nf': ``DownsampleNormFirst``, '': none, the width
    then kept) from ``dim`` to ``dim_out``, then ``depth`` Gated CNN blocks (``blocks``), with the per-block
    stochastic depth ``drop_path`` (one rate, or one per block)."""

    def __init__(self, dim, dim_out=None, depth=4, expansion_ratio=8 / 3, kernel_size=7, conv_ratio=1.0,
                 downsample="", ls_init_value=None, norm_layer=LayerNorm, act_layer=nn.GELU, drop_path=0.0):
        super().__init__()
        dim_out = dim_out or dim
        if downsample == "conv":
            self.downsample = Downsample(dim, dim_out, norm_layer=norm_layer)
        elif downsample == "conv_nf":
            self.downsample = DownsampleNormFirst(dim, dim_out, norm_layer=norm_layer)
        elif dim == dim_out:
            self.downsample = nn.Identity()
        else:
            raise ValueError(f"a stage without downsampling keeps its width: got {dim} -> {dim_out}")
        rates = drop_path if isinstance(drop_path, (list, tuple)) else [drop_path] * depth
        self.blocks = nn.Sequential(*[
            GatedConvBlock(dim_out, expansion_ratio=expansion_ratio, kernel_size=kernel_size, conv_ratio=conv_ratio,
                           ls_init_value=ls_init_value, norm_layer=norm_layer, act_layer=act_layer,
                           drop_path=rates[i])
            for i in range(depth)
        ])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


def _as_list(value):
    """``value`` as a list of stage values: a list or tuple as it is, one value for a one-stage model."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


class MambaOut(nn.Module):
    """MambaOut: ``Stem`` to ``dims[0]`` channels (stride 4), stages of Gated CNN blocks (``stages``: ``depths``
    blocks at widths ``dims``, every stage after the first opening with a stride-2 ``downsample``) and a head on
    the channels-last map: ``head_fn`` 'default' gives the original ``MlpHead`` (pooling 'avg' or ''), any other
    value timm's ``ClNormMlpClassifierHead`` with a hidden layer 4 times the width ('avg', 'max', 'avgmax', '').

    ``act_layer`` (a class or timm's name: 'gelu', 'silu'...) is the stem's and blocks' activation;
    ``expansion_ratio``, ``kernel_size``, ``conv_ratio`` and ``ls_init_value`` shape the blocks,
    ``stem_mid_norm`` and ``downsample`` ('conv' or 'conv_nf') the stem and stage transitions. ``drop_path_rate``
    is the last block's stochastic depth, rising linearly from 0 at the first; ``drop_rate`` the head's dropout.
    Weights start as timm's: truncated normals (std 0.02) for convolutions and linear layers, zero biases.
    """

    default_cfg = {"first_conv": "stem.conv1", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", depths=(3, 3, 9, 3), dims=(96, 192, 384, 576),
                 norm_layer=LayerNorm, act_layer=nn.GELU, conv_ratio=1.0, expansion_ratio=8 / 3, kernel_size=7,
                 stem_mid_norm=True, ls_init_value=None, downsample="conv", drop_path_rate=0.0, drop_rate=0.0,
                 head_fn="default"):
        super().__init__()
        depths = _as_list(depths)
        dims = _as_list(dims)
        act_layer = get_act_layer(act_layer)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.output_fmt = "NHWC"
        self.num_stage = len(depths)
        self.feature_info = []
        self.stem = Stem(in_chans, dims[0], mid_norm=stem_mid_norm, act_layer=act_layer, norm_layer=norm_layer)
        rates = [r.tolist() for r in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        self.stages = nn.Sequential()
        prev_dim = dims[0]
        reduction = 4
        for i in range(self.num_stage):
            if i > 0:
                reduction *= 2
            self.stages.append(MambaOutStage(prev_dim, dims[i], depth=depths[i], expansion_ratio=expansion_ratio,
                                             kernel_size=kernel_size, conv_ratio=conv_ratio,
                                             downsample=downsample if i > 0 else "", ls_init_value=ls_init_value,
                                             norm_layer=norm_layer, act_layer=act_layer, drop_path=rates[i]))
            prev_dim = dims[i]
            self.feature_info.append(dict(num_chs=prev_dim, reduction=reduction, module=f"stages.{i}"))
        if head_fn == "default":
            self.head = MlpHead(prev_dim, num_classes, pool_type=global_pool, drop_rate=drop_rate,
                                norm_layer=norm_layer)
        else:
            self.head = ClNormMlpClassifierHead(prev_dim, num_classes, hidden_size=int(prev_dim * 4),
                                                pool_type=global_pool, norm_layer=norm_layer, drop_rate=drop_rate)
        self.num_features = prev_dim
        self.head_hidden_size = self.head.num_features
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        """timm's scheme: truncated-normal weights (std 0.02) and zero biases for convolutions and linear layers."""
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    def get_classifier(self):
        """The final linear layer."""
        return self.head.fc

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: the head's features), after the pooling ``global_pool`` if
        given; ``reset_other`` also removes the head's norm and MLP layer (the classifier then sees the pooled
        map)."""
        self.num_classes = num_classes
        self.head.reset(num_classes, global_pool, reset_other=reset_other, in_features=self.num_features)
        self.head_hidden_size = self.head.num_features

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's map, channels-last (N, H / 32, W / 32, num_features)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """The head on the channels-last map: pooling, norm, MLP and dropout; then the classifier unless
        ``pre_logits``."""
        return self.head(x, pre_logits=pre_logits)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps (channels-last with ``output_fmt='NHWC'``), and (unless ``intermediates_only``) the final map; there
        is no final norm, so ``norm`` changes nothing; ``stop_early`` skips the stages after the last one picked."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt, ("NCHW", "NHWC"))
        x = self.stem(x)
        intermediates = []
        for stage_idx, stage in enumerate(stages):
            x = stage(x)
            if stage_idx in take:
                intermediates.append(x.permute(0, 3, 1, 2).contiguous() if output_fmt == "NCHW" else x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, and the head's norm, MLP layer and classifier when
        asked or when stages go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "", reset_other=True)
        return take


def _create_mambaout(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four channels-last stage outputs (strides 4 to 32) unless ``out_indices`` says
    otherwise, under timm's flattened names (``stages_2``...)."""
    return build_model(MambaOut, variant, pretrained, progress=progress, **{**model_args, **kwargs})


# timm's variants: LayerScale on, the norm before each downsampling convolution, no norm inside the stem, the
# pool-norm-MLP head
_RW = dict(stem_mid_norm=False, downsample="conv_nf", ls_init_value=1e-6, head_fn="norm_mlp")


@register_model
def mambaout_femto(pretrained=False, progress=True, **kwargs):
    """MambaOut-Femto: widths (48, 96, 192, 288), depths (3, 3, 9, 3)."""
    return _create_mambaout("mambaout_femto", pretrained, progress, kwargs, depths=(3, 3, 9, 3),
                            dims=(48, 96, 192, 288))


@register_model
def mambaout_kobe(pretrained=False, progress=True, **kwargs):
    """MambaOut-Kobe (24 blocks in memory of Kobe Bryant): widths (48, 96, 192, 288), depths (3, 3, 15, 3)."""
    return _create_mambaout("mambaout_kobe", pretrained, progress, kwargs, depths=[3, 3, 15, 3],
                            dims=[48, 96, 192, 288])


@register_model
def mambaout_tiny(pretrained=False, progress=True, **kwargs):
    """MambaOut-Tiny: widths (96, 192, 384, 576), depths (3, 3, 9, 3)."""
    return _create_mambaout("mambaout_tiny", pretrained, progress, kwargs, depths=[3, 3, 9, 3],
                            dims=[96, 192, 384, 576])


@register_model
def mambaout_small(pretrained=False, progress=True, **kwargs):
    """MambaOut-Small: widths (96, 192, 384, 576), depths (3, 4, 27, 3)."""
    return _create_mambaout("mambaout_small", pretrained, progress, kwargs, depths=[3, 4, 27, 3],
                            dims=[96, 192, 384, 576])


@register_model
def mambaout_base(pretrained=False, progress=True, **kwargs):
    """MambaOut-Base: widths (128, 256, 512, 768), depths (3, 4, 27, 3)."""
    return _create_mambaout("mambaout_base", pretrained, progress, kwargs, depths=[3, 4, 27, 3],
                            dims=[128, 256, 512, 768])


@register_model
def mambaout_small_rw(pretrained=False, progress=True, **kwargs):
    """timm's MambaOut-Small: MambaOut-Small's stages with layer scale, norm-first downsampling and the
    pool-norm-MLP head."""
    return _create_mambaout("mambaout_small_rw", pretrained, progress, kwargs, depths=[3, 4, 27, 3],
                            dims=[96, 192, 384, 576], **_RW)


@register_model
def mambaout_base_short_rw(pretrained=False, progress=True, **kwargs):
    """timm's shorter MambaOut-Base: depths (3, 3, 25, 3), 3x expansion, depthwise convolution on 1.25x the width."""
    return _create_mambaout("mambaout_base_short_rw", pretrained, progress, kwargs, depths=(3, 3, 25, 3),
                            dims=(128, 256, 512, 768), expansion_ratio=3.0, conv_ratio=1.25, **_RW)


@register_model
def mambaout_base_tall_rw(pretrained=False, progress=True, **kwargs):
    """timm's deeper MambaOut-Base: depths (3, 4, 30, 3), 2.5x expansion, depthwise convolution on 1.25x the
    width."""
    return _create_mambaout("mambaout_base_tall_rw", pretrained, progress, kwargs, depths=(3, 4, 30, 3),
                            dims=(128, 256, 512, 768), expansion_ratio=2.5, conv_ratio=1.25, **_RW)


@register_model
def mambaout_base_wide_rw(pretrained=False, progress=True, **kwargs):
    """timm's wider MambaOut-Base: depths (3, 4, 27, 3), 3x expansion, depthwise convolution on 1.5x the width,
    SiLU."""
    return _create_mambaout("mambaout_base_wide_rw", pretrained, progress, kwargs, depths=(3, 4, 27, 3),
                            dims=(128, 256, 512, 768), expansion_ratio=3.0, conv_ratio=1.5, act_layer="silu", **_RW)


@register_model
def mambaout_base_plus_rw(pretrained=False, progress=True, **kwargs):
    """timm's largest MambaOut-Base: depths (3, 4, 30, 3), 3x expansion, depthwise convolution on 1.5x the width,
    SiLU."""
    return _create_mambaout("mambaout_base_plus_rw", pretrained, progress, kwargs, depths=(3, 4, 30, 3),
                            dims=(128, 256, 512, 768), expansion_ratio=3.0, conv_ratio=1.5, act_layer="silu", **_RW)


@register_model
def test_mambaout(pretrained=False, progress=True, **kwargs):
    """timm's tiny test MambaOut: widths (16, 32, 48, 64), depths (1, 1, 3, 1), 3x expansion, SiLU, layer scale
    1e-4, and the ``_rw`` variants' stem, downsampling and head."""
    return _create_mambaout("test_mambaout", pretrained, progress, kwargs, depths=(1, 1, 3, 1), dims=(16, 32, 48, 64),
                            expansion_ratio=3, stem_mid_norm=False, downsample="conv_nf", ls_init_value=1e-4,
                            act_layer="silu", head_fn="norm_mlp")
