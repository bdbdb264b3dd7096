"""MetaFormer (Yu et al. 2022, "MetaFormer Is Actually What You Need for Vision", and Yu et al. 2023, "MetaFormer
Baselines for Vision"): PoolFormer, PoolFormerV2, ConvFormer and CAFormer as timm builds them.

A MetaFormer is a transformer whose attention is replaced by any "token mixer": a stem (a 7x7 stride-4
convolution), four stages at strides 4, 8, 16 and 32 (each after the first opens with a 3x3 stride-2 convolution),
and blocks x + mixer(norm(x)), x + mlp(norm(x)). PoolFormer mixes tokens by average pooling (minus the input),
with GroupNorm over all channels, GELU MLPs and layer scales; PoolFormerV2 drops the norms' biases, the layer
scales and GELU for StarReLU (s * relu(x)^2 + b) and scales the residual branch of the last two stages instead
(res scale). ConvFormer mixes with an inverted separable convolution, CAFormer with that in the first two stages
and self-attention (on the token sequence) in the last two; both normalise with bias-free LayerNorms and end in an
MLP head (pooling, LayerNorm, fc1, SquaredReLU, LayerNorm, fc2). Model names, module names, ``state_dict`` keys and
initialisation follow timm's ``metaformer`` module, so timm's (hub) checkpoints load directly.
"""
import inspect
from collections import OrderedDict
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, SelectAdaptivePool2d, drop_path_module, init_linear_layers
from ._norm import GroupNorm1, LayerNorm, LayerNorm2d

__all__ = []


class GroupNorm1NoBias(GroupNorm1):
    """``GroupNorm1`` with a scale but no shift, eps 1e-6 (PoolFormerV2's norm)."""

    def __init__(self, num_channels, eps=1e-6):
        super().__init__(num_channels, eps=eps, bias=False)


class LayerNormNoBias(nn.LayerNorm):
    """LayerNorm over the last axis with a scale but no shift, eps 1e-6 (CAFormer's attention stages)."""

    def __init__(self, num_channels, eps=1e-6):
        super().__init__(num_channels, eps=eps, bias=False)


class LayerNorm2dNoBias(LayerNormNoBias):
    """``LayerNormNoBias`` over the channels of an (N, C, H, W) map, at every pixel (ConvFormer's norm)."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = super().forward(x)
        x = x.permute(0, 3, 1, 2)
        return x


class Stem(nn.Module):
    """A 7x7 stride-4 convolution (padding 2) to the first stage's width, then ``norm_layer`` (none if None)."""

    def __init__(self, in_channels, out_channels, norm_layer=None):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=7, stride=4, padding=2)
        self.norm = norm_layer(out_channels) if norm_layer else nn.Identity()

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        return x


class Downsampling(nn.Module):
    """``norm_layer`` (none if None), then a strided convolution to the next stage's width."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, norm_layer=None):
        super().__init__()
        self.norm = norm_layer(in_channels) if norm_layer else nn.Identity()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        x = self.norm(x)
        x = self.conv(x)
        return x


class Scale(nn.Module):
    """A learned per-channel factor, ``init_value`` at first: the layer scale of a residual branch or the res
    scale of its shortcut. ``use_nchw``: the channels are axis 1 of a map, else the last axis."""

    def __init__(self, dim, init_value=1.0, trainable=True, use_nchw=True):
        super().__init__()
        self.shape = (dim, 1, 1) if use_nchw else (dim,)
        self.scale = nn.Parameter(init_value * torch.ones(dim), requires_grad=trainable)

    def forward(self, x):
        return x * self.scale.view(self.shape)


class SquaredReLU(nn.Module):
    """relu(x)^2 (So et al. 2021, "Primer"), the MLP head's activation."""

    def __init__(self, inplace=False):
        super().__init__()
        self.relu = nn.ReLU(inplace=inplace)

    def forward(self, x):
        return torch.square(self.relu(x))


class StarReLU(nn.Module):
    """s * relu(x)^2 + b with a learned scalar scale s and bias b (``scale_value`` and ``bias_value`` at first):
    a squared ReLU whose output distribution is renormalised, cheaper than GELU."""

    def __init__(self, scale_value=1.0, bias_value=0.0, scale_learnable=True, bias_learnable=True, inplace=False):
        super().__init__()
        self.relu = nn.ReLU(inplace=inplace)
        self.scale = nn.Parameter(scale_value * torch.ones(1), requires_grad=scale_learnable)
        self.bias = nn.Parameter(bias_value * torch.ones(1), requires_grad=bias_learnable)

    def forward(self, x):
        return self.scale * self.relu(x) ** 2 + self.bias


class Attention(nn.Module):
    """Multi-head self-attention over a (N, tokens, dim) sequence (CAFormer's token mixer): heads of
    ``head_dim`` channels, ``dim // head_dim`` of them (at least one) unless ``num_heads`` says otherwise; the
    query/key/value and output projections have no bias by default. Arguments of the other token mixers are
    ignored (the model hands every mixer the same keywords)."""

    def __init__(self, dim, head_dim=32, num_heads=None, qkv_bias=False, attn_drop=0.0, proj_drop=0.0,
                 proj_bias=False, **kwargs):
        super().__init__()
        self.head_dim = head_dim
        self.num_heads = max(num_heads if num_heads else dim // head_dim, 1)
        self.attention_dim = self.num_heads * self.head_dim
        self.qkv = nn.Linear(dim, self.attention_dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(self.attention_dim, dim, bias=proj_bias)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, tokens, _ = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
        x = x.transpose(1, 2).reshape(batch, tokens, self.attention_dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class SepConv(nn.Module):
    """MobileNetV2's inverted separable convolution (ConvFormer's token mixer): a 1x1 expansion by
    ``expansion_ratio``, ``act1_layer``, a depthwise ``kernel_size`` convolution, ``act2_layer``, a 1x1 projection
    back, all without bias by default. Arguments of the other token mixers are ignored."""

    def __init__(self, dim, expansion_ratio=2, act1_layer=StarReLU, act2_layer=nn.Identity, bias=False,
                 kernel_size=7, padding=3, **kwargs):
        super().__init__()
        mid_channels = int(expansion_ratio * dim)
        self.pwconv1 = nn.Conv2d(dim, mid_channels, kernel_size=1, bias=bias)
        self.act1 = act1_layer()
        self.dwconv = nn.Conv2d(mid_channels, mid_channels, kernel_size=kernel_size, padding=padding,
                                groups=mid_channels, bias=bias)
        self.act2 = act2_layer()
        self.pwconv2 = nn.Conv2d(mid_channels, dim, kernel_size=1, bias=bias)

    def forward(self, x):
        x = self.pwconv1(x)
        x = self.act1(x)
        x = self.dwconv(x)
        x = self.act2(x)
        x = self.pwconv2(x)
        return x


class Pooling(nn.Module):
    """PoolFormer's token mixer: the ``pool_size`` average of each pixel's neighbourhood (padding excluded from
    the count) minus the pixel itself (the block's shortcut adds it back). Arguments of the other token mixers
    are ignored."""

    def __init__(self, pool_size=3, **kwargs):
        super().__init__()
        self.pool = nn.AvgPool2d(pool_size, stride=1, padding=pool_size // 2, count_include_pad=False)

    def forward(self, x):
        y = self.pool(x)
        return y - x


class MlpHead(nn.Module):
    """ConvFormer's and CAFormer's classifier: ``fc1`` to ``mlp_ratio`` times the width, SquaredReLU, a LayerNorm,
    dropout, ``fc2`` to the classes."""

    def __init__(self, dim, num_classes=1000, mlp_ratio=4, act_layer=SquaredReLU, norm_layer=LayerNorm,
                 drop_rate=0.0, bias=True):
        super().__init__()
        hidden_features = int(mlp_ratio * dim)
        self.fc1 = nn.Linear(dim, hidden_features, bias=bias)
        self.act = act_layer()
        self.norm = norm_layer(hidden_features)
        self.fc2 = nn.Linear(hidden_features, num_classes, bias=bias)
        self.head_drop = nn.Dropout(drop_rate)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.norm(x)
        x = self.head_drop(x)
        x = self.fc2(x)
        return x


class MetaFormerBlock(nn.Module):
    """res_scale1(x) + layer_scale1(drop_path(token_mixer(norm1(x)))), then the same with the MLP (4x wide).

    The scales are identities unless ``layer_scale_init_value`` / ``res_scale_init_value`` is given. ``use_nchw``:
    the block runs on (N, C, H, W) maps (1x1-conv MLP), else on (N, tokens, C) sequences (linear MLP). Further
    keywords go to the token mixer.
    """

    def __init__(self, dim, token_mixer=Pooling, mlp_act=StarReLU, mlp_bias=False, norm_layer=LayerNorm2d,
                 proj_drop=0.0, drop_path=0.0, use_nchw=True, layer_scale_init_value=None, res_scale_init_value=None,
                 **kwargs):
        super().__init__()
        ls_layer = partial(Scale, dim=dim, init_value=layer_scale_init_value, use_nchw=use_nchw)
        rs_layer = partial(Scale, dim=dim, init_value=res_scale_init_value, use_nchw=use_nchw)

        self.norm1 = norm_layer(dim)
        self.token_mixer = token_mixer(dim=dim, proj_drop=proj_drop, **kwargs)
        self.drop_path1 = drop_path_module(drop_path)
        self.layer_scale1 = ls_layer() if layer_scale_init_value is not None else nn.Identity()
        self.res_scale1 = rs_layer() if res_scale_init_value is not None else nn.Identity()

        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(4 * dim), act_layer=mlp_act, bias=mlp_bias, drop=proj_drop, use_conv=use_nchw,
                       norm_placeholder=False)
        self.drop_path2 = drop_path_module(drop_path)
        self.layer_scale2 = ls_layer() if layer_scale_init_value is not None else nn.Identity()
        self.res_scale2 = rs_layer() if res_scale_init_value is not None else nn.Identity()

    def forward(self, x):
        x = self.res_scale1(x) + self.layer_scale1(self.drop_path1(self.token_mixer(self.norm1(x))))
        x = self.res_scale2(x) + self.layer_scale2(self.drop_path2(self.mlp(self.norm2(x))))
        return x


class MetaFormerStage(nn.Module):
    """``downsample`` (``downsample_norm``, then a 3x3 stride-2 convolution to ``out_chs``; an identity where the
    width does not change, as in the first stage), then ``depth`` blocks. An attention stage runs its blocks on
    the flattened token sequence and folds it back into a map."""

    def __init__(self, in_chs, out_chs, depth=2, token_mixer=nn.Identity, mlp_act=StarReLU, mlp_bias=False,
                 downsample_norm=LayerNorm2d, norm_layer=LayerNorm2d, proj_drop=0.0, dp_rates=None,
                 layer_scale_init_value=None, res_scale_init_value=None, **kwargs):
        super().__init__()
        dp_rates = dp_rates or [0.0] * depth
        self.use_nchw = not issubclass(token_mixer, Attention)
        if in_chs == out_chs:
            self.downsample = nn.Identity()
        else:
            self.downsample = Downsampling(in_chs, out_chs, kernel_size=3, stride=2, padding=1,
                                           norm_layer=downsample_norm)
        self.blocks = nn.Sequential(*[
            MetaFormerBlock(out_chs, token_mixer=token_mixer, mlp_act=mlp_act, mlp_bias=mlp_bias,
                            norm_layer=norm_layer, proj_drop=proj_drop, drop_path=dp_rates[i],
                            layer_scale_init_value=layer_scale_init_value, res_scale_init_value=res_scale_init_value,
                            use_nchw=self.use_nchw, **kwargs)
            for i in range(depth)
        ])

    def forward(self, x):
        x = self.downsample(x)
        batch, channels, height, width = x.shape
        if not self.use_nchw:
            x = x.reshape(batch, channels, -1).transpose(1, 2)
        x = self.blocks(x)
        if not self.use_nchw:
            x = x.transpose(1, 2).reshape(batch, channels, height, width)
        return x


def _per_stage(value, num_stages):
    """``value`` as one entry per stage: a list or tuple as it is, anything else repeated."""
    return list(value) if isinstance(value, (list, tuple)) else [value] * num_stages


def _check_mixer_kwargs(token_mixers, kwargs):
    """Refuse keywords that no token mixer takes (the model hands its extra keywords to every mixer)."""
    accepted = set()
    for mixer in token_mixers:
        accepted.update(name for name, p in inspect.signature(mixer).parameters.items()
                        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    unknown = set(kwargs) - accepted
    if unknown:
        raise TypeError(f"MetaFormer.__init__() got unexpected keyword argument(s): {sorted(unknown)}")


def _head_pool(global_pool):
    """The head's unflattened global pooling (the norm runs on the pooled 1x1 map); it must keep the width."""
    pool = SelectAdaptivePool2d(global_pool, flatten=False)
    if pool.feat_mult() != 1:
        raise ValueError(f"global_pool '{global_pool}' changes the pooled width, which this head does not support")
    return pool


class MetaFormer(nn.Module):
    """A stem, stages of MetaFormer blocks (widths ``dims``, ``depths`` blocks) and a head.

    Per stage (one value, or a list with one per stage): ``token_mixers`` (``Pooling``, ``SepConv``,
    ``Attention``), ``norm_layers``, ``layer_scale_init_values`` and ``res_scale_init_values`` (None: no scale).
    ``mlp_act`` and ``mlp_bias`` shape the blocks' MLPs; ``downsample_norm`` is the stem's and downsampling
    layers' norm (None: none). The head (``head``) pools, normalises with ``output_norm``, flattens and drops out
    before ``fc``: an ``MlpHead`` with ``use_mlp_head``, else a linear layer (an identity for ``num_classes=0``).
    ``drop_path_rate`` is the stochastic depth of the last block (rising linearly from 0), ``proj_drop_rate`` the
    dropout inside blocks, ``drop_rate`` that before the classifier; other keywords go to the token mixers
    (``pool_size``, ``head_dim``, ``kernel_size``...). Weights start as timm's: truncated normals (std 0.02) for
    convolutions and linear layers, zero biases.
    """

    feature_wrapper = FlatFeatureListNet  # timm's features_only weight names

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", depths=(2, 2, 6, 2), dims=(64, 128, 320, 512),
                 token_mixers=Pooling, mlp_act=StarReLU, mlp_bias=False, drop_path_rate=0.0, proj_drop_rate=0.0,
                 drop_rate=0.0, layer_scale_init_values=None, res_scale_init_values=(None, None, 1.0, 1.0),
                 downsample_norm=LayerNorm2dNoBias, norm_layers=LayerNorm2dNoBias, output_norm=LayerNorm2d,
                 use_mlp_head=True, **kwargs):
        super().__init__()
        depths = _per_stage(depths, 1)
        dims = _per_stage(dims, 1)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.num_features = dims[-1]
        self.drop_rate = drop_rate
        self.use_mlp_head = use_mlp_head
        self.num_stages = len(depths)
        token_mixers = _per_stage(token_mixers, self.num_stages)
        norm_layers = _per_stage(norm_layers, self.num_stages)
        layer_scale_init_values = _per_stage(layer_scale_init_values, self.num_stages)
        res_scale_init_values = _per_stage(res_scale_init_values, self.num_stages)
        _check_mixer_kwargs(token_mixers, kwargs)

        self.stem = Stem(in_chans, dims[0], norm_layer=downsample_norm)
        drop_path_rates = [rates.tolist() for rates in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        self.feature_info = []
        stages = []
        prev_dim = dims[0]
        for i in range(self.num_stages):
            stages.append(MetaFormerStage(
                prev_dim, dims[i], depth=depths[i], token_mixer=token_mixers[i], mlp_act=mlp_act, mlp_bias=mlp_bias,
                proj_drop=proj_drop_rate, dp_rates=drop_path_rates[i],
                layer_scale_init_value=layer_scale_init_values[i], res_scale_init_value=res_scale_init_values[i],
                downsample_norm=downsample_norm, norm_layer=norm_layers[i], **kwargs,
            ))
            prev_dim = dims[i]
            self.feature_info.append(dict(num_chs=dims[i], reduction=2 ** (i + 2), module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)

        self.head_hidden_size = self.num_features
        final = self._classifier(num_classes)
        self.head = nn.Sequential(OrderedDict([
            ("global_pool", _head_pool(global_pool)),
            ("norm", output_norm(self.num_features)),
            ("flatten", nn.Flatten(1) if global_pool else nn.Identity()),
            ("drop", nn.Dropout(drop_rate)),
            ("fc", final),
        ]))
        init_linear_layers(self, types=(nn.Conv2d, nn.Linear))

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's convolution) and ``classifier`` (the MLP head's last layer, or the
        linear head)."""
        return {"first_conv": "stem.conv", "classifier": "head.fc.fc2" if self.use_mlp_head else "head.fc"}

    def _classifier(self, num_classes):
        """A fresh classifier: an ``MlpHead`` or a linear layer, an identity for ``num_classes=0``."""
        if num_classes <= 0:
            return nn.Identity()
        if self.use_mlp_head:
            return MlpHead(self.num_features, num_classes)
        return nn.Linear(self.num_features, num_classes)

    def get_classifier(self):
        """The classifier (``head.fc``)."""
        return self.head.fc

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given;
        ``reset_other`` also removes the head's norm."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.head.global_pool = _head_pool(global_pool).train(self.head.training)
            self.head.flatten = (nn.Flatten(1) if global_pool else nn.Identity()).train(self.head.training)
        if reset_other:
            self.head.norm = nn.Identity().train(self.head.training)
        self.head.fc = self._classifier(num_classes).train(self.head.training)

    def forward_features(self, x):
        """The map after the last stage, at 1/32 of the image."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the last map run. ``norm`` does nothing: the only norm after the
        stages is the head's, on pooled features; ``stop_early`` skips the stages after the last one picked."""
        return stage_intermediates(x, self.stem, self.stages, indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, when asked or when stages go, the classifier
        with the head's norm (sized for the last stage); returns the absolute indices. ``prune_norm`` does nothing:
        the model has no final norm outside its head."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "", reset_other=True)
        return take

    def forward_head(self, x, pre_logits=False):
        """Pooling, norm, flattening and dropout; then the classifier unless ``pre_logits``."""
        x = self.head.global_pool(x)
        x = self.head.norm(x)
        x = self.head.flatten(x)
        x = self.head.drop(x)
        return x if pre_logits else self.head.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_metaformer(variant, pretrained, progress, **kwargs):
    """Build a registered variant; with ``features_only`` its features are timm's: every stage unless
    ``out_indices`` says otherwise (n: the last n; negative ones counted from the end)."""
    return build_model(MetaFormer, variant, pretrained, progress=progress, **kwargs)


# PoolFormer (v1): pooling mixers, GroupNorm with bias, GELU MLPs with bias, layer scales, no stem or
# downsampling norms, a linear head.
_POOLFORMER_V1 = dict(downsample_norm=None, mlp_act=nn.GELU, mlp_bias=True, norm_layers=GroupNorm1,
                      res_scale_init_values=None, use_mlp_head=False)
# PoolFormerV2: pooling mixers, bias-free GroupNorm, StarReLU MLPs, res scales in the last two stages.
_POOLFORMER_V2 = dict(norm_layers=GroupNorm1NoBias, use_mlp_head=False)
# ConvFormer: separable-convolution mixers, bias-free LayerNorm, the MLP head.
_CONVFORMER = dict(token_mixers=SepConv, norm_layers=LayerNorm2dNoBias)
# CAFormer: separable convolutions in the first two stages, attention in the last two.
_CAFORMER = dict(token_mixers=[SepConv, SepConv, Attention, Attention],
                 norm_layers=[LayerNorm2dNoBias] * 2 + [LayerNormNoBias] * 2)
_S12 = dict(depths=(2, 2, 6, 2), dims=(64, 128, 320, 512))
_S24 = dict(depths=(4, 4, 12, 4), dims=(64, 128, 320, 512))
_S36 = dict(depths=(6, 6, 18, 6), dims=(64, 128, 320, 512))
_M36 = dict(depths=(6, 6, 18, 6), dims=(96, 192, 384, 768))
_M48 = dict(depths=(8, 8, 24, 8), dims=(96, 192, 384, 768))
_S18 = dict(depths=(3, 3, 9, 3), dims=(64, 128, 320, 512))
_S36_WIDE = dict(depths=(3, 12, 18, 3), dims=(64, 128, 320, 512))
_M36_WIDE = dict(depths=(3, 12, 18, 3), dims=(96, 192, 384, 576))
_B36 = dict(depths=(3, 12, 18, 3), dims=(128, 256, 512, 768))


@register_model
def poolformer_s12(pretrained=False, progress=True, **kwargs):
    """PoolFormer-S12: depths (2, 2, 6, 2), widths 64-512, layer scales 1e-5."""
    config = dict(_POOLFORMER_V1, **_S12, layer_scale_init_values=1e-5)
    return _create_metaformer("poolformer_s12", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformer_s24(pretrained=False, progress=True, **kwargs):
    """PoolFormer-S24: depths (4, 4, 12, 4), widths 64-512, layer scales 1e-5."""
    config = dict(_POOLFORMER_V1, **_S24, layer_scale_init_values=1e-5)
    return _create_metaformer("poolformer_s24", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformer_s36(pretrained=False, progress=True, **kwargs):
    """PoolFormer-S36: depths (6, 6, 18, 6), widths 64-512, layer scales 1e-6."""
    config = dict(_POOLFORMER_V1, **_S36, layer_scale_init_values=1e-6)
    return _create_metaformer("poolformer_s36", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformer_m36(pretrained=False, progress=True, **kwargs):
    """PoolFormer-M36: depths (6, 6, 18, 6), widths 96-768, layer scales 1e-6."""
    config = dict(_POOLFORMER_V1, **_M36, layer_scale_init_values=1e-6)
    return _create_metaformer("poolformer_m36", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformer_m48(pretrained=False, progress=True, **kwargs):
    """PoolFormer-M48: depths (8, 8, 24, 8), widths 96-768, layer scales 1e-6."""
    config = dict(_POOLFORMER_V1, **_M48, layer_scale_init_values=1e-6)
    return _create_metaformer("poolformer_m48", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformerv2_s12(pretrained=False, progress=True, **kwargs):
    """PoolFormerV2-S12: depths (2, 2, 6, 2), widths 64-512."""
    config = dict(_POOLFORMER_V2, **_S12)
    return _create_metaformer("poolformerv2_s12", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformerv2_s24(pretrained=False, progress=True, **kwargs):
    """PoolFormerV2-S24: depths (4, 4, 12, 4), widths 64-512."""
    config = dict(_POOLFORMER_V2, **_S24)
    return _create_metaformer("poolformerv2_s24", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformerv2_s36(pretrained=False, progress=True, **kwargs):
    """PoolFormerV2-S36: depths (6, 6, 18, 6), widths 64-512."""
    config = dict(_POOLFORMER_V2, **_S36)
    return _create_metaformer("poolformerv2_s36", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformerv2_m36(pretrained=False, progress=True, **kwargs):
    """PoolFormerV2-M36: depths (6, 6, 18, 6), widths 96-768."""
    config = dict(_POOLFORMER_V2, **_M36)
    return _create_metaformer("poolformerv2_m36", pretrained, progress, **dict(config, **kwargs))


@register_model
def poolformerv2_m48(pretrained=False, progress=True, **kwargs):
    """PoolFormerV2-M48: depths (8, 8, 24, 8), widths 96-768."""
    config = dict(_POOLFORMER_V2, **_M48)
    return _create_metaformer("poolformerv2_m48", pretrained, progress, **dict(config, **kwargs))


@register_model
def convformer_s18(pretrained=False, progress=True, **kwargs):
    """ConvFormer-S18: depths (3, 3, 9, 3), widths 64-512."""
    config = dict(_CONVFORMER, **_S18)
    return _create_metaformer("convformer_s18", pretrained, progress, **dict(config, **kwargs))


@register_model
def convformer_s36(pretrained=False, progress=True, **kwargs):
    """ConvFormer-S36: depths (3, 12, 18, 3), widths 64-512."""
    config = dict(_CONVFORMER, **_S36_WIDE)
    return _create_metaformer("convformer_s36", pretrained, progress, **dict(config, **kwargs))


@register_model
def convformer_m36(pretrained=False, progress=True, **kwargs):
    """ConvFormer-M36: depths (3, 12, 18, 3), widths 96-576."""
    config = dict(_CONVFORMER, **_M36_WIDE)
    return _create_metaformer("convformer_m36", pretrained, progress, **dict(config, **kwargs))


@register_model
def convformer_b36(pretrained=False, progress=True, **kwargs):
    """ConvFormer-B36: depths (3, 12, 18, 3), widths 128-768."""
    config = dict(_CONVFORMER, **_B36)
    return _create_metaformer("convformer_b36", pretrained, progress, **dict(config, **kwargs))


@register_model
def caformer_s18(pretrained=False, progress=True, **kwargs):
    """CAFormer-S18: depths (3, 3, 9, 3), widths 64-512."""
    config = dict(_CAFORMER, **_S18)
    return _create_metaformer("caformer_s18", pretrained, progress, **dict(config, **kwargs))


@register_model
def caformer_s36(pretrained=False, progress=True, **kwargs):
    """CAFormer-S36: depths (3, 12, 18, 3), widths 64-512."""
    config = dict(_CAFORMER, **_S36_WIDE)
    return _create_metaformer("caformer_s36", pretrained, progress, **dict(config, **kwargs))


@register_model
def caformer_m36(pretrained=False, progress=True, **kwargs):
    """CAFormer-M36: depths (3, 12, 18, 3), widths 96-576."""
    config = dict(_CAFORMER, **_M36_WIDE)
    return _create_metaformer("caformer_m36", pretrained, progress, **dict(config, **kwargs))


@register_model
def caformer_b36(pretrained=False, progress=True, **kwargs):
    """CAFormer-B36: depths (3, 12, 18, 3), widths 128-768."""
    config = dict(_CAFORMER, **_B36)
    return _create_metaformer("caformer_b36", pretrained, progress, **dict(config, **kwargs))
