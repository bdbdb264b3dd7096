"""EfficientViT from MIT (Cai et al. 2023, "EfficientViT: Multi-Scale Linear Attention for High-Resolution Dense
Prediction"): efficientvit_b0 to efficientvit_b3 and efficientvit_l1 to efficientvit_l3.

A convolutional network whose last stages add a global context module of linear cost. The stem (a stride-2 3x3
convolution and residual depthwise-separable blocks) and the first stages are MobileNetV2-like inverted residuals
(the L models use fused ones: a full 3x3 convolution instead of expansion and depthwise convolution, and plain
3x3 convolution pairs in the stem). In the last stages each block pairs a multi-scale linear attention (``LiteMLA``:
queries, keys and values from a 1x1 convolution, plus a copy aggregated by a 5x5 depthwise and a grouped 1x1
convolution; ReLU instead of softmax, so that attention is (Q K^T) V = Q (K^T V), linear in the number of
positions) with an inverted residual, both residual. The head is a 1x1 convolution, global pooling and a
linear-LayerNorm-activation layer before the classifier. The B models use hard-swish and BatchNorm, the L models
GELU (tanh form) and BatchNorm with eps 1e-7.

Model names, module names, ``state_dict`` keys, defaults and (PyTorch-default) initialisation follow timm's
``efficientvit_mit`` module, so its checkpoints load directly. As in timm, the linear attention is computed in
float32 whatever the input's dtype.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._conv import create_conv2d
from ._layers import GELUTanh, SelectAdaptivePool2d

__all__ = []


def _per_layer(value, count):
    """``value`` for each of ``count`` layers: a single value repeated; a shorter sequence padded by repeating its
    last item (timm's ``val2tuple``)."""
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    if values:
        values[-1:-1] = [values[-1]] * (count - len(values))
    return tuple(values)


class ConvNormAct(nn.Module):
    """Dropout (``dropout``), a convolution padded to keep the size at stride 1 (``conv``), a norm (``norm``) and an
    activation built in place (``act``); a norm or activation of None leaves an identity."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, dilation=1, groups=1, bias=False,
                 dropout=0.0, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        self.dropout = nn.Dropout(dropout, inplace=False)
        self.conv = create_conv2d(in_channels, out_channels, kernel_size, stride=stride, dilation=dilation,
                                  groups=groups, bias=bias)
        self.norm = norm_layer(num_features=out_channels) if norm_layer else nn.Identity()
        self.act = act_layer(inplace=True) if act_layer is not None else nn.Identity()

    def forward(self, x):
        x = self.dropout(x)
        x = self.conv(x)
        x = self.norm(x)
        x = self.act(x)
        return x


class DSConv(nn.Module):
    """Depthwise-separable convolution: a ``kernel_size`` depthwise convolution (``depth_conv``) and a 1x1
    projection (``point_conv``); ``use_bias``, ``norm_layer`` and ``act_layer`` are per layer (or shared)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, use_bias=False,
                 norm_layer=nn.BatchNorm2d, act_layer=(nn.ReLU6, None)):
        super().__init__()
        use_bias = _per_layer(use_bias, 2)
        norm_layer = _per_layer(norm_layer, 2)
        act_layer = _per_layer(act_layer, 2)
        self.depth_conv = ConvNormAct(in_channels, in_channels, kernel_size, stride, groups=in_channels,
                                      norm_layer=norm_layer[0], act_layer=act_layer[0], bias=use_bias[0])
        self.point_conv = ConvNormAct(in_channels, out_channels, 1, norm_layer=norm_layer[1],
                                      act_layer=act_layer[1], bias=use_bias[1])

    def forward(self, x):
        x = self.depth_conv(x)
        x = self.point_conv(x)
        return x


class ConvBlock(nn.Module):
    """Two full ``kernel_size`` convolutions (``conv1`` with the stride, to ``mid_channels`` or ``in_channels *
    expand_ratio``; ``conv2``); ``use_bias``, ``norm_layer`` and ``act_layer`` are per layer (or shared)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, mid_channels=None, expand_ratio=1,
                 use_bias=False, norm_layer=nn.BatchNorm2d, act_layer=(nn.ReLU6, None)):
        super().__init__()
        use_bias = _per_layer(use_bias, 2)
        norm_layer = _per_layer(norm_layer, 2)
        act_layer = _per_layer(act_layer, 2)
        mid_channels = mid_channels or round(in_channels * expand_ratio)
        self.conv1 = ConvNormAct(in_channels, mid_channels, kernel_size, stride, norm_layer=norm_layer[0],
                                 act_layer=act_layer[0], bias=use_bias[0])
        self.conv2 = ConvNormAct(mid_channels, out_channels, kernel_size, 1, norm_layer=norm_layer[1],
                                 act_layer=act_layer[1], bias=use_bias[1])

    def forward(self, x):
        x = self.conv1(x)
        x = self.conv2(x)
        return x


class MBConv(nn.Module):
    """Inverted residual (without its shortcut): a 1x1 expansion to ``mid_channels`` or ``in_channels *
    expand_ratio`` (``inverted_conv``), a ``kernel_size`` depthwise convolution with the stride (``depth_conv``) and
    a 1x1 projection (``point_conv``); ``use_bias``, ``norm_layer`` and ``act_layer`` are per layer (or shared)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, mid_channels=None, expand_ratio=6,
                 use_bias=False, norm_layer=nn.BatchNorm2d, act_layer=(nn.ReLU6, nn.ReLU6, None)):
        super().__init__()
        use_bias = _per_layer(use_bias, 3)
        norm_layer = _per_layer(norm_layer, 3)
        act_layer = _per_layer(act_layer, 3)
        mid_channels = mid_channels or round(in_channels * expand_ratio)
        self.inverted_conv = ConvNormAct(in_channels, mid_channels, 1, stride=1, norm_layer=norm_layer[0],
                                         act_layer=act_layer[0], bias=use_bias[0])
        self.depth_conv = ConvNormAct(mid_channels, mid_channels, kernel_size, stride=stride, groups=mid_channels,
                                      norm_layer=norm_layer[1], act_layer=act_layer[1], bias=use_bias[1])
        self.point_conv = ConvNormAct(mid_channels, out_channels, 1, norm_layer=norm_layer[2],
                                      act_layer=act_layer[2], bias=use_bias[2])

    def forward(self, x):
        x = self.inverted_conv(x)
        x = self.depth_conv(x)
        x = self.point_conv(x)
        return x


class FusedMBConv(nn.Module):
    """Fused inverted residual (without its shortcut): one ``kernel_size`` convolution with the stride expanding to
    ``mid_channels`` or ``in_channels * expand_ratio`` (``spatial_conv``) and a 1x1 projection (``point_conv``);
    ``use_bias``, ``norm_layer`` and ``act_layer`` are per layer (or shared)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, mid_channels=None, expand_ratio=6,
                 groups=1, use_bias=False, norm_layer=nn.BatchNorm2d, act_layer=(nn.ReLU6, None)):
        super().__init__()
        use_bias = _per_layer(use_bias, 2)
        norm_layer = _per_layer(norm_layer, 2)
        act_layer = _per_layer(act_layer, 2)
        mid_channels = mid_channels or round(in_channels * expand_ratio)
        self.spatial_conv = ConvNormAct(in_channels, mid_channels, kernel_size, stride=stride, groups=groups,
                                        norm_layer=norm_layer[0], act_layer=act_layer[0], bias=use_bias[0])
        self.point_conv = ConvNormAct(mid_channels, out_channels, 1, norm_layer=norm_layer[1],
                                      act_layer=act_layer[1], bias=use_bias[1])

    def forward(self, x):
        x = self.spatial_conv(x)
        x = self.point_conv(x)
        return x


class LiteMLA(nn.Module):
    """Lightweight multi-scale linear attention.

    A 1x1 convolution (``qkv``) gives ``heads`` (``in_channels // dim * heads_ratio`` unless given) queries, keys
    and values of ``dim`` channels; each of ``scales`` adds as many heads more, aggregated from them by a depthwise
    convolution of that size and a 1x1 convolution grouped per head (``aggreg``). Every head attends linearly:
    ReLU (``kernel_func``) on queries and keys, out = q (k^T [v, 1]) normalised by its last column (+ ``eps``),
    computed in float32. A 1x1 convolution projects the heads to ``out_channels`` (``proj``).
    """

    def __init__(self, in_channels, out_channels, heads=None, heads_ratio=1.0, dim=8, use_bias=False,
                 norm_layer=(None, nn.BatchNorm2d), act_layer=(None, None), kernel_func=nn.ReLU, scales=(5,),
                 eps=1e-5):
        super().__init__()
        self.eps = eps
        heads = heads or int(in_channels // dim * heads_ratio)
        total_dim = heads * dim
        use_bias = _per_layer(use_bias, 2)
        norm_layer = _per_layer(norm_layer, 2)
        act_layer = _per_layer(act_layer, 2)
        self.dim = dim
        self.qkv = ConvNormAct(in_channels, 3 * total_dim, 1, bias=use_bias[0], norm_layer=norm_layer[0],
                               act_layer=act_layer[0])
        self.aggreg = nn.ModuleList([
            nn.Sequential(
                nn.Conv2d(3 * total_dim, 3 * total_dim, scale, padding=scale // 2, groups=3 * total_dim,
                          bias=use_bias[0]),
                nn.Conv2d(3 * total_dim, 3 * total_dim, 1, groups=3 * heads, bias=use_bias[0]),
            )
            for scale in scales
        ])
        self.kernel_func = kernel_func(inplace=False)
        self.proj = ConvNormAct(total_dim * (1 + len(scales)), out_channels, 1, bias=use_bias[1],
                                norm_layer=norm_layer[1], act_layer=act_layer[1])

    def _attn(self, q, k, v):
        """Linear attention of (N, heads, positions, dim) queries and keys and values padded with a column of ones,
        in float32, returned in ``v``'s dtype."""
        dtype = v.dtype
        q = q.float()
        k = k.float()
        v = v.float()
        kv = k.transpose(-1, -2) @ v
        out = q @ kv
        out = out[..., :-1] / (out[..., -1:] + self.eps)
        return out.to(dtype)

    def forward(self, x):
        batch, _, height, width = x.shape
        qkv = self.qkv(x)
        multi_scale_qkv = [qkv]
        for op in self.aggreg:
            multi_scale_qkv.append(op(qkv))
        multi_scale_qkv = torch.cat(multi_scale_qkv, dim=1)
        multi_scale_qkv = multi_scale_qkv.reshape(batch, -1, 3 * self.dim, height * width).transpose(-1, -2)
        q, k, v = multi_scale_qkv.chunk(3, dim=-1)
        q = self.kernel_func(q)
        k = self.kernel_func(k)
        v = F.pad(v, (0, 1), mode="constant", value=1.0)
        out = self._attn(q, k, v)
        out = out.transpose(-1, -2).reshape(batch, -1, height, width)
        out = self.proj(out)
        return out


class ResidualBlock(nn.Module):
    """``main(pre_norm(x))`` plus ``shortcut(x)`` where there is a shortcut (``None``: none); ``pre_norm`` is an
    identity unless given."""

    def __init__(self, main, shortcut=None, pre_norm=None):
        super().__init__()
        self.pre_norm = pre_norm if pre_norm is not None else nn.Identity()
        self.main = main
        self.shortcut = shortcut

    def forward(self, x):
        res = self.main(self.pre_norm(x))
        if self.shortcut is not None:
            res = res + self.shortcut(x)
        return res


class EfficientVitBlock(nn.Module):
    """The attention block: residual ``LiteMLA`` with heads of ``head_dim`` channels (``context_module``), then a
    residual ``MBConv`` expanding by ``expand_ratio`` with biased, norm-free expansion and depthwise convolutions
    (``local_module``)."""

    def __init__(self, in_channels, heads_ratio=1.0, head_dim=32, expand_ratio=4, norm_layer=nn.BatchNorm2d,
                 act_layer=nn.Hardswish):
        super().__init__()
        self.context_module = ResidualBlock(
            LiteMLA(in_channels, in_channels, heads_ratio=heads_ratio, dim=head_dim, norm_layer=(None, norm_layer)),
            nn.Identity(),
        )
        self.local_module = ResidualBlock(
            MBConv(in_channels, in_channels, expand_ratio=expand_ratio, use_bias=(True, True, False),
                   norm_layer=(None, None, norm_layer), act_layer=(act_layer, act_layer, None)),
            nn.Identity(),
        )

    def forward(self, x):
        x = self.context_module(x)
        x = self.local_module(x)
        return x


_BLOCK_TYPES = ("default", "large", "fused")


def build_local_block(in_channels, out_channels, stride, expand_ratio, norm_layer, act_layer, fewer_norm=False,
                      block_type="default"):
    """A convolutional block: without expansion (``expand_ratio`` 1) a ``DSConv`` (``block_type`` 'default') or
    a ``ConvBlock`` (otherwise); with it an ``MBConv`` ('default') or a ``FusedMBConv``. ``fewer_norm`` gives every
    layer but the last a bias instead of a norm."""
    if block_type not in _BLOCK_TYPES:
        raise ValueError(f"block_type must be one of {_BLOCK_TYPES}, got {block_type!r}")
    if expand_ratio == 1:
        block_cls = DSConv if block_type == "default" else ConvBlock
        return block_cls(in_channels, out_channels, stride=stride,
                         use_bias=(True, False) if fewer_norm else False,
                         norm_layer=(None, norm_layer) if fewer_norm else norm_layer,
                         act_layer=(act_layer, None))
    if block_type == "default":
        return MBConv(in_channels, out_channels, stride=stride, expand_ratio=expand_ratio,
                      use_bias=(True, True, False) if fewer_norm else False,
                      norm_layer=(None, None, norm_layer) if fewer_norm else norm_layer,
                      act_layer=(act_layer, act_layer, None))
    return FusedMBConv(in_channels, out_channels, stride=stride, expand_ratio=expand_ratio,
                       use_bias=(True, False) if fewer_norm else False,
                       norm_layer=(None, norm_layer) if fewer_norm else norm_layer,
                       act_layer=(act_layer, None))


class Stem(nn.Sequential):
    """A stride-2 3x3 convolution to ``out_chs`` (``in_conv``), then ``depth`` residual blocks without expansion
    (``res0``...; depthwise-separable, or pairs of 3x3 convolutions for ``block_type`` 'large')."""

    def __init__(self, in_chs, out_chs, depth, norm_layer, act_layer, block_type="default"):
        super().__init__()
        self.stride = 2
        self.add_module("in_conv", ConvNormAct(in_chs, out_chs, kernel_size=3, stride=2, norm_layer=norm_layer,
                                               act_layer=act_layer))
        for i in range(depth):
            block = build_local_block(out_chs, out_chs, 1, 1, norm_layer, act_layer, block_type=block_type)
            self.add_module(f"res{i}", ResidualBlock(block, nn.Identity()))


class EfficientVitStage(nn.Module):
    """A B-model stage (``blocks``): a stride-2 ``MBConv`` to ``out_chs`` without shortcut, then ``depth - 1``
    residual ``MBConv``s or, in an attention stage (``vit_stage``: its first block biased instead of normed but for
    the projection), ``depth`` ``EfficientVitBlock``s."""

    def __init__(self, in_chs, out_chs, depth, norm_layer, act_layer, expand_ratio, head_dim, vit_stage=False):
        super().__init__()
        blocks = [ResidualBlock(build_local_block(in_chs, out_chs, 2, expand_ratio, norm_layer, act_layer,
                                                  fewer_norm=vit_stage), None)]
        if vit_stage:
            for _ in range(depth):
                blocks.append(EfficientVitBlock(out_chs, head_dim=head_dim, expand_ratio=expand_ratio,
                                                norm_layer=norm_layer, act_layer=act_layer))
        else:
            for _ in range(1, depth):
                blocks.append(ResidualBlock(build_local_block(out_chs, out_chs, 1, expand_ratio, norm_layer,
                                                              act_layer), nn.Identity()))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        return self.blocks(x)


class EfficientVitLargeStage(nn.Module):
    """An L-model stage (``blocks``): a stride-2 block to ``out_chs`` without shortcut, expanding by 16 (24 in the
    attention stage, ``vit_stage``), then ``depth`` residual blocks expanding by 4 or, in the attention stage,
    ``depth`` ``EfficientVitBlock``s expanding by 6. With ``fewer_norm`` (or in the attention stage) the blocks are
    ``MBConv``s biased instead of normed but for the projection, otherwise ``FusedMBConv``s."""

    def __init__(self, in_chs, out_chs, depth, norm_layer, act_layer, head_dim, vit_stage=False, fewer_norm=False):
        super().__init__()
        block_type = "default" if fewer_norm else "fused"
        blocks = [ResidualBlock(build_local_block(in_chs, out_chs, 2, 24 if vit_stage else 16, norm_layer,
                                                  act_layer, fewer_norm=vit_stage or fewer_norm,
                                                  block_type=block_type), None)]
        for _ in range(depth):
            if vit_stage:
                blocks.append(EfficientVitBlock(out_chs, head_dim=head_dim, expand_ratio=6, norm_layer=norm_layer,
                                                act_layer=act_layer))
            else:
                blocks.append(ResidualBlock(build_local_block(out_chs, out_chs, 1, 4, norm_layer, act_layer,
                                                              fewer_norm=fewer_norm, block_type=block_type),
                                            nn.Identity()))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        return self.blocks(x)


def _checked_pool(pool_type):
    """A global pooling module for the head: it must pool, and keep the channels (no 'catavgmax')."""
    if not pool_type:
        raise ValueError("the EfficientViT head cannot disable pooling: give a global_pool")
    global_pool = SelectAdaptivePool2d(pool_type, flatten=True)
    if global_pool.feat_mult() != 1:
        raise ValueError(f"the EfficientViT head takes no pooling that changes the width, got {pool_type!r}")
    return global_pool


class ClassifierHead(nn.Module):
    """The head: a 1x1 convolution to ``widths[0]`` (``in_conv``), global pooling (``global_pool``), and
    ``classifier``: a bias-free linear layer to ``widths[1]``, LayerNorm (``norm_eps``), the activation, dropout and
    the final linear layer (an identity for ``num_classes=0``). ``num_features`` (the pre-logits width) is
    ``widths[1]``."""

    def __init__(self, in_channels, widths, num_classes=1000, dropout=0.0, norm_layer=nn.BatchNorm2d,
                 act_layer=nn.Hardswish, pool_type="avg", norm_eps=1e-5):
        super().__init__()
        self.widths = widths
        self.in_features = in_channels
        self.num_features = widths[-1]
        self.in_conv = ConvNormAct(in_channels, widths[0], 1, norm_layer=norm_layer, act_layer=act_layer)
        self.global_pool = _checked_pool(pool_type)
        self.classifier = nn.Sequential(
            nn.Linear(widths[0], widths[1], bias=False),
            nn.LayerNorm(widths[1], eps=norm_eps),
            act_layer(inplace=True) if act_layer is not None else nn.Identity(),
            nn.Dropout(dropout, inplace=False),
            nn.Linear(widths[1], num_classes, bias=True) if num_classes > 0 else nn.Identity(),
        )

    def reset(self, num_classes, pool_type=None, reset_other=False, in_features=None):
        """A fresh final layer for ``num_classes`` (0: an identity), after another pooling if ``pool_type``;
        ``reset_other`` removes the 1x1 convolution and the pre-logits layer (pooling then feeds the classifier),
        after which the features may change width (``in_features``)."""
        if pool_type is not None:
            self.global_pool = _checked_pool(pool_type)
            self.global_pool.train(self.training)
        if reset_other:
            self.in_conv = nn.Identity()
            for i in range(3):
                self.classifier[i] = nn.Identity()
            self.num_features = self.in_features
        if in_features is not None and in_features != self.in_features:
            if not isinstance(self.in_conv, nn.Identity):
                raise ValueError("the features' width can only change once the head's in_conv is removed")
            self.in_features = in_features
            self.num_features = in_features
        if num_classes > 0:
            self.classifier[-1] = nn.Linear(self.num_features, num_classes, bias=True)
        else:
            self.classifier[-1] = nn.Identity()
        self.classifier[-1].train(self.classifier.training)

    def forward(self, x, pre_logits=False):
        x = self.in_conv(x)
        x = self.global_pool(x)
        if pre_logits:
            for layer in list(self.classifier)[:4]:
                x = layer(x)
            return x
        return self.classifier(x)


class _EfficientVitNet(nn.Module):
    """What both EfficientViT models share after building their ``stem``, ``stages`` and ``head``: timm's
    classifier API and feature taps (the stages' outputs)."""

    default_cfg = {"first_conv": "stem.in_conv.conv", "classifier": "head.classifier.4"}
    feature_wrapper = FlatFeatureListNet

    def _add_stages(self, stages, widths):
        """The stages (``stages``), each halving the map after the stem's stride 2, and timm's feature_info."""
        self.feature_info = []
        stride = self.stem.stride
        for i, width in enumerate(widths):
            stride *= 2
            self.feature_info.append(dict(num_chs=width, reduction=stride, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = widths[-1]

    def get_classifier(self):
        """The final linear layer (an identity for ``num_classes=0``)."""
        return self.head.classifier[-1]

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh final layer for ``num_classes`` (0: the pre-logits features), after another pooling if
        ``global_pool``; ``reset_other`` also removes the head's 1x1 convolution and pre-logits layer."""
        self.num_classes = num_classes
        self.head.reset(num_classes, global_pool, reset_other=reset_other, in_features=self.num_features)
        self.head_hidden_size = self.head.num_features
        if global_pool is not None:
            self.global_pool = global_pool

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) and (unless
        ``intermediates_only``) the last stage's output; ``stop_early`` skips the stages after the last one picked.
        ``norm`` changes nothing: there is no final norm (timm's argument)."""
        return stage_intermediates(x, self.stem, self.stages, indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_head`` or when stages go, the
        head's layers but pooling (``reset_classifier(0, reset_other=True)``); returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, reset_other=True)
        return take

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """The head; with ``pre_logits``, its features before the final linear layer."""
        return self.head(x, pre_logits=pre_logits)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


class EfficientVit(_EfficientVitNet):
    """An EfficientViT B model: ``stem`` (width ``widths[0]``, ``depths[0]`` blocks), four stages (``stages``,
    widths ``widths[1:]``, ``depths[1:]`` blocks, expanding by ``expand_ratio``; the last two with attention heads
    of ``head_dim`` channels) and the head (``head``: widths ``head_widths``, dropout ``drop_rate``; pooling
    ``global_pool``, which must keep the width). ``act_layer`` (hard-swish) and ``norm_layer`` (BatchNorm) serve
    everywhere."""

    def __init__(self, in_chans=3, widths=(), depths=(), head_dim=32, expand_ratio=4, norm_layer=nn.BatchNorm2d,
                 act_layer=nn.Hardswish, global_pool="avg", head_widths=(), drop_rate=0.0, num_classes=1000):
        super().__init__()
        self.global_pool = global_pool
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.stem = Stem(in_chans, widths[0], depths[0], norm_layer, act_layer)
        stages = []
        in_channels = widths[0]
        for i, (width, depth) in enumerate(zip(widths[1:], depths[1:])):
            stages.append(EfficientVitStage(in_channels, width, depth, norm_layer, act_layer, expand_ratio,
                                            head_dim, vit_stage=i >= 2))
            in_channels = width
        self._add_stages(stages, widths[1:])
        self.head = ClassifierHead(self.num_features, head_widths, num_classes=num_classes, dropout=drop_rate,
                                   pool_type=global_pool)
        self.head_hidden_size = self.head.num_features


class EfficientVitLarge(_EfficientVitNet):
    """An EfficientViT L model: ``stem`` (width ``widths[0]``, ``depths[0]`` pairs of 3x3 convolutions), four stages
    (``stages``, widths ``widths[1:]``, ``depths[1:]`` blocks: fused inverted residuals, then inverted residuals
    with fewer norms, then attention heads of ``head_dim`` channels in the last) and the head (``head``: widths
    ``head_widths``, dropout ``drop_rate``; pooling ``global_pool``, which must keep the width). ``act_layer`` (GELU,
    tanh form) serves everywhere, ``norm_layer`` (BatchNorm) with eps ``norm_eps`` everywhere but the head's
    1x1 convolution (eps 1e-5, as in timm); the head's LayerNorm has eps ``norm_eps`` too."""

    def __init__(self, in_chans=3, widths=(), depths=(), head_dim=32, norm_layer=nn.BatchNorm2d, act_layer=GELUTanh,
                 global_pool="avg", head_widths=(), drop_rate=0.0, num_classes=1000, norm_eps=1e-7):
        super().__init__()
        self.global_pool = global_pool
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.norm_eps = norm_eps
        norm_layer = partial(norm_layer, eps=norm_eps)
        self.stem = Stem(in_chans, widths[0], depths[0], norm_layer, act_layer, block_type="large")
        stages = []
        in_channels = widths[0]
        for i, (width, depth) in enumerate(zip(widths[1:], depths[1:])):
            stages.append(EfficientVitLargeStage(in_channels, width, depth, norm_layer, act_layer, head_dim,
                                                 vit_stage=i >= 3, fewer_norm=i >= 2))
            in_channels = width
        self._add_stages(stages, widths[1:])
        self.head = ClassifierHead(self.num_features, head_widths, num_classes=num_classes, dropout=drop_rate,
                                   pool_type=global_pool, act_layer=act_layer, norm_eps=norm_eps)
        self.head_hidden_size = self.head.num_features


def _create_efficientvit(variant, pretrained, progress, **kwargs):
    """Build a registered B variant; ``features_only`` gives the four stages' maps (strides 4 to 32) under timm's
    flattened names (``stages_0``...)."""
    return build_model(EfficientVit, variant, pretrained, progress=progress, **kwargs)


def _create_efficientvit_large(variant, pretrained, progress, **kwargs):
    """Build a registered L variant; ``features_only`` as for the B variants."""
    return build_model(EfficientVitLarge, variant, pretrained, progress=progress, **kwargs)


@register_model
def efficientvit_b0(pretrained=False, progress=True, **kwargs):
    """EfficientViT-B0 (widths 8 to 128)."""
    model_args = dict(widths=(8, 16, 32, 64, 128), depths=(1, 2, 2, 2, 2), head_dim=16, head_widths=(1024, 1280))
    return _create_efficientvit("efficientvit_b0", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_b1(pretrained=False, progress=True, **kwargs):
    """EfficientViT-B1 (widths 16 to 256)."""
    model_args = dict(widths=(16, 32, 64, 128, 256), depths=(1, 2, 3, 3, 4), head_dim=16, head_widths=(1536, 1600))
    return _create_efficientvit("efficientvit_b1", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_b2(pretrained=False, progress=True, **kwargs):
    """EfficientViT-B2 (widths 24 to 384)."""
    model_args = dict(widths=(24, 48, 96, 192, 384), depths=(1, 3, 4, 4, 6), head_dim=32, head_widths=(2304, 2560))
    return _create_efficientvit("efficientvit_b2", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_b3(pretrained=False, progress=True, **kwargs):
    """EfficientViT-B3 (widths 32 to 512)."""
    model_args = dict(widths=(32, 64, 128, 256, 512), depths=(1, 4, 6, 6, 9), head_dim=32, head_widths=(2304, 2560))
    return _create_efficientvit("efficientvit_b3", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_l1(pretrained=False, progress=True, **kwargs):
    """EfficientViT-L1 (widths 32 to 512)."""
    model_args = dict(widths=(32, 64, 128, 256, 512), depths=(1, 1, 1, 6, 6), head_dim=32, head_widths=(3072, 3200))
    return _create_efficientvit_large("efficientvit_l1", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_l2(pretrained=False, progress=True, **kwargs):
    """EfficientViT-L2 (widths 32 to 512, deeper)."""
    model_args = dict(widths=(32, 64, 128, 256, 512), depths=(1, 2, 2, 8, 8), head_dim=32, head_widths=(3072, 3200))
    return _create_efficientvit_large("efficientvit_l2", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_l3(pretrained=False, progress=True, **kwargs):
    """EfficientViT-L3 (widths 64 to 1024)."""
    model_args = dict(widths=(64, 128, 256, 512, 1024), depths=(1, 2, 2, 8, 8), head_dim=32,
                      head_widths=(6144, 6400))
    return _create_efficientvit_large("efficientvit_l3", pretrained, progress, **dict(model_args, **kwargs))
