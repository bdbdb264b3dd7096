"""CPUBone (Nottebaum, Dunnhofer and Micheloni 2026, "CPUBone: Efficient Vision Backbone Design for Devices with
Low Parallelization Capabilities"): cpubone_nano, cpubone_t0, cpubone_s0, cpubone_b0_bfrobust,
cpubone_b1_bfrobust, cpubone_b1_dwnorm, cpubone_b2_bfrobust, cpubone_b2pt5_dwnorm and cpubone_b3.

A hybrid backbone for devices that run few operations in parallel, such as CPUs, where a layer's time follows
its multiply-accumulates more closely than on a GPU: CPUBone keeps the inverted residuals of EfficientViT-like
networks but cuts their cost with grouped expansion convolutions and 2x2 kernels. A stride-2 3x3
convolution and (fused) inverted residuals form the stem; two convolutional stages follow, then two attention
stages, each opening with a stride-2 inverted residual. An attention block is a pre-normed (one-group GroupNorm)
softmax attention over a map reduced by a depthwise strided convolution (``ConvAttention``: queries, keys and
values from a 1x1 convolution, the result projected and upsampled back to the block's resolution and cropped), a
pre-normed GELU MLP of 1x1 convolutions, and a residual (fused) inverted residual. The head is EfficientViT's: a
1x1 convolution, average pooling, a linear layer with LayerNorm and hard-swish, and the classifier. Model names,
module names, ``state_dict`` keys, defaults and (PyTorch-default) initialisation follow timm's ``cpubone``
module, so its checkpoints load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._layers import drop_path_module, get_act_layer
from ._norm import GroupNorm1

__all__ = []

# Where the local inverted residual of an attention block has norms (expansion, depthwise, projection): timm's
# ``local_mbconv_norm`` modes. A convolution followed by a norm has no bias.
LOCAL_MBCONV_NORM_MODES = {
    "proj": (False, False, True),
    "depth_proj": (False, True, True),
    "all": (True, True, True),
}


def _check_local_mbconv_norm(local_mbconv_norm):
    """Refuse a ``local_mbconv_norm`` that is not one of timm's modes."""
    if local_mbconv_norm not in LOCAL_MBCONV_NORM_MODES:
        raise ValueError(f"local_mbconv_norm must be one of {tuple(LOCAL_MBCONV_NORM_MODES)}, "
                         f"got {local_mbconv_norm!r}")


def _check_global_pool(global_pool):
    """CPUBone's head pools by average ('avg') or not at all ('')."""
    if global_pool not in ("", "avg"):
        raise ValueError(f"CPUBone's global_pool must be 'avg' or '', got {global_pool!r}")


class ConvLayer(nn.Module):
    """A convolution padded to keep the size at stride 1 (``conv``), then an optional norm (``norm``) and an
    optional activation (``act``). A 2x2 kernel tiles a stride-2 map exactly (no padding); at stride 1 it is padded
    by one row and column at the top and left, so ``conv`` is then a Sequential of that ``ZeroPad2d`` and the
    convolution (timm's keys ``conv.1.weight``)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1, use_bias=False,
                 norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        if kernel_size == 2:
            padding = 0
            asymmetric = stride != 2
        elif kernel_size % 2 == 1:
            padding = kernel_size // 2
            asymmetric = False
        else:
            raise ValueError(f"CPUBone's convolutions take odd kernels or 2x2 ones, got {kernel_size}")
        conv = nn.Conv2d(in_channels, out_channels, kernel_size=kernel_size, stride=stride, padding=padding,
                         groups=groups, bias=use_bias)
        self.conv = nn.Sequential(nn.ZeroPad2d((1, 0, 1, 0)), conv) if asymmetric else conv
        self.norm = norm_layer(out_channels) if norm_layer is not None else None
        self.act = act_layer() if act_layer is not None else None

    def forward(self, x):
        x = self.conv(x)
        if self.norm is not None:
            x = self.norm(x)
        if self.act is not None:
            x = self.act(x)
        return x


class LinearLayer(nn.Module):
    """Dropout where ``dropout`` > 0 (``dropout``), a linear layer (``linear``), an optional norm over its outputs
    (``norm``) and an optional activation (``act``): the head's layers, applied over the last axis."""

    def __init__(self, in_features, out_features, use_bias=True, dropout=0.0, norm_layer=None, act_layer=None):
        super().__init__()
        self.dropout = nn.Dropout(dropout, inplace=False) if dropout > 0 else None
        self.linear = nn.Linear(in_features, out_features, use_bias)
        self.norm = norm_layer(out_features) if norm_layer is not None else None
        self.act = act_layer() if act_layer is not None else None

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        x = self.linear(x)
        if self.norm is not None:
            x = self.norm(x)
        if self.act is not None:
            x = self.act(x)
        return x


class ResidualBlock(nn.Module):
    """``main(x)`` after stochastic depth (``drop_path``, rate ``drop_path``) plus ``shortcut(x)``; without a
    shortcut (a block that changes the size) just ``main(x)``, its drop-path module kept but never used, as in
    timm."""

    def __init__(self, main, shortcut=None, drop_path=0.0):
        super().__init__()
        self.main = main
        self.shortcut = shortcut
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        if self.shortcut is None:
            return self.main(x)
        return self.drop_path(self.main(x)) + self.shortcut(x)


class MBConv(nn.Module):
    """Inverted residual without its shortcut: a 1x1 expansion to ``mid_channels`` or ``in_channels *
    expand_ratio`` in ``expand_groups`` groups (``inverted_conv``), a ``kernel_size`` depthwise convolution with
    the stride (``depth_conv``) and a 1x1 projection (``point_conv``); ``use_bias``, ``norm_layer`` and
    ``act_layer`` give each of the three its bias, norm and activation (None: none)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, mid_channels=None, expand_ratio=6,
                 expand_groups=1, use_bias=(False, False, False),
                 norm_layer=(nn.BatchNorm2d, nn.BatchNorm2d, nn.BatchNorm2d), act_layer=(nn.ReLU6, nn.ReLU6, None)):
        super().__init__()
        mid_channels = mid_channels or round(in_channels * expand_ratio)
        self.inverted_conv = ConvLayer(in_channels, mid_channels, 1, stride=1, groups=expand_groups,
                                       use_bias=use_bias[0], norm_layer=norm_layer[0], act_layer=act_layer[0])
        self.depth_conv = ConvLayer(mid_channels, mid_channels, kernel_size, stride=stride, groups=mid_channels,
                                    use_bias=use_bias[1], norm_layer=norm_layer[1], act_layer=act_layer[1])
        self.point_conv = ConvLayer(mid_channels, out_channels, 1, use_bias=use_bias[2], norm_layer=norm_layer[2],
                                    act_layer=act_layer[2])

    def forward(self, x):
        x = self.inverted_conv(x)
        x = self.depth_conv(x)
        x = self.point_conv(x)
        return x


class FusedMBConv(nn.Module):
    """Fused inverted residual without its shortcut: one ``kernel_size`` convolution with the stride, expanding to
    ``mid_channels`` or ``in_channels * expand_ratio`` in ``expand_groups`` groups (``spatial_conv``), and a 1x1
    projection (``point_conv``); ``use_bias``, ``norm_layer`` and ``act_layer`` are per layer."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, mid_channels=None, expand_ratio=6,
                 expand_groups=1, use_bias=(False, False), norm_layer=(nn.BatchNorm2d, nn.BatchNorm2d),
                 act_layer=(nn.ReLU6, None)):
        super().__init__()
        mid_channels = mid_channels or round(in_channels * expand_ratio)
        self.spatial_conv = ConvLayer(in_channels, mid_channels, kernel_size, stride, groups=expand_groups,
                                      use_bias=use_bias[0], norm_layer=norm_layer[0], act_layer=act_layer[0])
        self.point_conv = ConvLayer(mid_channels, out_channels, 1, use_bias=use_bias[1], norm_layer=norm_layer[1],
                                    act_layer=act_layer[1])

    def forward(self, x):
        x = self.spatial_conv(x)
        x = self.point_conv(x)
        return x


class ConvAttention(nn.Module):
    """Softmax attention over a strided, depthwise-convolved copy of the map, upsampled back.

    ``conv_proj`` (a depthwise convolution with BatchNorm, stride ``att_stride``, kernel ``att_kernel`` or 2x2
    with ``small_kernels``) shrinks the map; ``pwise`` (1x1) turns each position into the queries, keys and values
    of ``num_heads`` heads of ``head_dim`` channels (``input_dim * head_dim_mul // 30`` heads, at least one). The
    heads' outputs go through the output projection and back to the input's resolution: a 1x1 convolution
    (``o_proj``) and a depthwise transposed convolution (``upsampling``), or with ``fuse_out_proj`` one transposed
    convolution doing both; with ``upsample_mode`` 'nearest' the upsampling repeats pixels instead (after the
    fused 1x1 projection, if any). What the upsampling overshoots is cropped.
    """

    def __init__(self, input_dim, head_dim_mul=1.0, att_stride=4, att_kernel=7, fuse_out_proj=False,
                 small_kernels=False, upsample_mode="transpose"):
        super().__init__()
        self.num_heads = int(max(1, (input_dim * head_dim_mul) // 30))
        self.head_dim = int((input_dim // self.num_heads) * head_dim_mul)
        self.num_keys = 3
        self.att_stride = att_stride
        self.small_kernels = small_kernels
        self.o_proj_inpdim = self.head_dim * self.num_heads
        self.conv_proj = ConvLayer(input_dim, input_dim, kernel_size=2 if small_kernels else att_kernel,
                                   stride=att_stride, groups=input_dim, norm_layer=nn.BatchNorm2d, act_layer=None)
        self.pwise = nn.Conv2d(input_dim, self.num_keys * self.o_proj_inpdim, kernel_size=1, bias=False)
        if fuse_out_proj:
            self.o_proj = nn.Identity()
        else:
            self.o_proj = nn.Conv2d(self.o_proj_inpdim, input_dim, kernel_size=1)
        upsampling_in = self.o_proj_inpdim if fuse_out_proj else input_dim
        if upsample_mode == "nearest":
            repeat = nn.Upsample(scale_factor=att_stride, mode="nearest") if att_stride > 1 else nn.Identity()
            layers = [nn.Conv2d(upsampling_in, input_dim, kernel_size=1), repeat] if fuse_out_proj else [repeat]
            self.upsampling = nn.Sequential(*layers)
        elif upsample_mode == "transpose":
            groups = 1 if fuse_out_proj else input_dim
            if att_stride == 1:
                self.upsampling = nn.ConvTranspose2d(upsampling_in, input_dim, kernel_size=3, stride=1, padding=1,
                                                     groups=groups)
            else:
                self.upsampling = nn.ConvTranspose2d(upsampling_in, input_dim, kernel_size=att_stride * 2,
                                                     stride=att_stride, padding=att_stride // 2, groups=groups)
        else:
            raise ValueError(f"upsample_mode must be 'transpose' or 'nearest', got {upsample_mode!r}")

    def forward(self, x):
        height, width = x.shape[-2:]
        if self.small_kernels and self.att_stride > 1:
            # a strided 2x2 kernel drops an odd last row or column: pad it so that the upsampled map covers x
            pad_h = (-height) % self.att_stride
            pad_w = (-width) % self.att_stride
            if pad_h or pad_w:
                x = F.pad(x, (0, pad_w, 0, pad_h))
        qkv = self.pwise(self.conv_proj(x))
        batch, _, h, w = qkv.shape
        qkv = qkv.reshape(batch, self.num_heads, self.num_keys * self.head_dim, h * w).permute(0, 1, 3, 2)
        q, k, v = qkv.chunk(3, dim=3)
        values = F.scaled_dot_product_attention(q, k, v)
        out = values.permute(0, 1, 3, 2).reshape(batch, self.o_proj_inpdim, h, w)
        out = self.upsampling(self.o_proj(out))
        return out[..., :height, :width]


class CPUBoneBlock(nn.Module):
    """An attention block (``total``): a residual ``ConvAttention`` (heads of half the width's share, stride
    ``att_stride``) after a one-group GroupNorm, a residual MLP (GroupNorm, 1x1 expansion by ``mlp_ratio``, GELU,
    1x1 projection, dropout ``proj_drop``), then a residual local inverted residual expanding by
    ``expand_ratio`` with a 2x2 kernel (``small_kernels``) or a 3x3 one: fused (biased expansion) where
    ``fused_conv`` and the width is under 256, otherwise with norms where ``local_mbconv_norm`` puts them. Every
    residual branch has stochastic depth ``drop_path``.

    The MLP's dropout draws timm's mask from the same seed, after a single-head attention too, whose reshape
    leaves the map channels-last (engine lays out convolutions and residual sums as PyTorch does). One case
    differs: a 1x1 attention map, whose size-1 dimensions the reshape gives other strides in PyTorch than in numpy,
    so that PyTorch reads the map as channels-last and the engine does not.
    """

    def __init__(self, in_channels, expand_ratio=4, norm_layer=nn.BatchNorm2d, act_layer=nn.Hardswish,
                 fused_conv=False, expand_groups=1, att_stride=1, mlp_ratio=4, small_kernels=False,
                 attn_upsample="transpose", proj_drop=0.1, drop_path=0.0, local_mbconv_norm="proj"):
        super().__init__()
        _check_local_mbconv_norm(local_mbconv_norm)
        attention = ConvAttention(in_channels, head_dim_mul=0.5, att_stride=att_stride,
                                  att_kernel=5 if att_stride > 1 else 3, fuse_out_proj=fused_conv,
                                  small_kernels=small_kernels, upsample_mode=attn_upsample)
        attention_branch = ResidualBlock(nn.Sequential(GroupNorm1(in_channels), attention), nn.Identity(), drop_path)
        mlp = nn.Sequential(
            GroupNorm1(in_channels),
            nn.Conv2d(in_channels, in_channels * mlp_ratio, kernel_size=1),
            nn.GELU(),
            nn.Conv2d(in_channels * mlp_ratio, in_channels, kernel_size=1),
            nn.Dropout(p=proj_drop),
        )
        context_module = nn.Sequential(attention_branch, ResidualBlock(mlp, nn.Identity(), drop_path))
        kernel_size = 2 if small_kernels else 3
        if fused_conv and in_channels < 256:
            local_module = FusedMBConv(in_channels, in_channels, kernel_size=kernel_size, expand_ratio=expand_ratio,
                                       expand_groups=expand_groups, use_bias=(True, False),
                                       norm_layer=(norm_layer, norm_layer), act_layer=(act_layer, None))
        else:
            normed = LOCAL_MBCONV_NORM_MODES[local_mbconv_norm]
            local_module = MBConv(in_channels, in_channels, kernel_size=kernel_size, expand_ratio=expand_ratio,
                                  expand_groups=expand_groups, use_bias=tuple(not n for n in normed),
                                  norm_layer=tuple(norm_layer if n else None for n in normed),
                                  act_layer=(act_layer, act_layer, None))
        self.total = nn.Sequential(context_module, ResidualBlock(local_module, nn.Identity(), drop_path))

    def forward(self, x):
        return self.total(x)


class ClsHead(nn.Module):
    """The head: a 1x1 convolution with norm and activation to ``width_list[0]`` (``in_conv``), average pooling
    and flattening (``global_pool``, ``flatten``; identities for ``global_pool`` ''), a bias-free linear layer with
    LayerNorm and the activation to ``width_list[1]`` (``pre_classifier``) and the classifier (``classifier``,
    after dropout ``dropout``; an identity for ``num_classes=0``). Without pooling the linear layers apply at every
    pixel. ``num_features`` is the pre-logits width."""

    def __init__(self, in_channels, width_list, num_classes=1000, global_pool="avg", dropout=0.0,
                 norm_layer=nn.BatchNorm2d, act_layer=nn.Hardswish):
        super().__init__()
        _check_global_pool(global_pool)
        self.in_features = in_channels
        self.num_features = width_list[-1]
        self.dropout = dropout
        self.pool_type = global_pool
        self.in_conv = ConvLayer(in_channels, width_list[0], 1, norm_layer=norm_layer, act_layer=act_layer)
        self._set_pool(global_pool)
        self.pre_classifier = LinearLayer(width_list[0], width_list[1], False, norm_layer=nn.LayerNorm,
                                          act_layer=act_layer)
        self._set_classifier(num_classes)

    def _set_pool(self, global_pool):
        """Average pooling and flattening, or identities for no pooling."""
        self.global_pool = nn.AdaptiveAvgPool2d(output_size=1) if global_pool else nn.Identity()
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()

    def _set_classifier(self, num_classes):
        """A fresh classifier from ``num_features`` to ``num_classes`` (0: an identity)."""
        if num_classes > 0:
            self.classifier = LinearLayer(self.num_features, num_classes, True, self.dropout)
        else:
            self.classifier = nn.Identity()

    def reset(self, num_classes, global_pool=None, reset_other=False, in_features=None):
        """A fresh classifier for ``num_classes``, after another pooling if ``global_pool``; ``reset_other`` removes
        ``in_conv`` and ``pre_classifier`` (pooled features then feed the classifier), after which the features may
        change width (``in_features``). New layers take the head's training mode."""
        if global_pool is not None:
            _check_global_pool(global_pool)
            self.pool_type = global_pool
            self._set_pool(global_pool)
            self.global_pool.train(self.training)
            self.flatten.train(self.training)
        if reset_other:
            self.in_conv = nn.Identity()
            self.pre_classifier = nn.Identity()
            self.num_features = self.in_features
        if in_features is not None and in_features != self.in_features:
            if not isinstance(self.in_conv, nn.Identity):
                raise ValueError("the head's input width can only change once its in_conv is removed")
            self.in_features = in_features
            self.num_features = in_features
        self._set_classifier(num_classes)
        self.classifier.train(self.training)

    def forward(self, x, pre_logits=False):
        x = self.in_conv(x)
        x = self.global_pool(x)
        x = self.flatten(x)
        if not self.pool_type:
            x = x.permute(0, 2, 3, 1)
        x = self.pre_classifier(x)
        if not pre_logits:
            x = self.classifier(x)
        if not self.pool_type:
            x = x.permute(0, 3, 1, 2)
        return x


class CPUBone(nn.Module):
    """CPUBone: a stem (``stem``: a stride-2 3x3 convolution to ``width_list[0]`` channels, then
    ``depth_list[0]`` residual local blocks expanding by ``stem_expand_ratio``), four stages (``stages``, widths
    ``width_list[1:]``) and the head (``head``, widths ``head_widths``, dropout ``drop_rate``).

    The first two stages are ``depth_list[i]`` local blocks, the first with stride 2 and no shortcut; the last two
    a stride-2 local block (fused where ``fused_downsample``) then ``depth_list[i]`` ``CPUBoneBlock``s, whose
    attention has stride 2 in the third stage and 1 in the fourth. Local blocks are inverted residuals (fused ones
    where ``fused_conv``, which also fuses the attention's output projection into its upsampling) expanding by
    ``expand_ratio`` (the stride-2 ones by ``downsample_expand_ratios``) with ``expand_groups`` groups.
    ``attn_mlp_ratio``, ``small_kernels``, ``attn_upsample`` and ``local_mbconv_norm`` configure the attention
    blocks; ``proj_drop_rate`` is the dropout after their MLPs. ``drop_path_rate`` is the last block's stochastic
    depth, rising linearly from 0 over the blocks of the stem and the stages. ``global_pool``: 'avg' or '' (the
    head's linear layers then run at every pixel).
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "head.classifier.linear"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, width_list, depth_list, in_chans=3, num_classes=1000, global_pool="avg",
                 head_widths=(1536, 1600), drop_rate=0.0, proj_drop_rate=0.1, drop_path_rate=0.0, expand_ratio=4,
                 norm_layer=nn.BatchNorm2d, act_layer=nn.Hardswish, fused_conv=False, fused_downsample=False,
                 attn_mlp_ratio=2, stem_expand_ratio=2, downsample_expand_ratios=None, expand_groups=1,
                 small_kernels=False, attn_upsample="transpose", local_mbconv_norm="proj"):
        super().__init__()
        _check_global_pool(global_pool)
        _check_local_mbconv_norm(local_mbconv_norm)
        if attn_upsample not in ("transpose", "nearest"):
            raise ValueError(f"attn_upsample must be 'transpose' or 'nearest', got {attn_upsample!r}")
        num_stages = len(width_list) - 1
        if downsample_expand_ratios is None:
            downsample_expand_ratios = (expand_ratio,) * num_stages
        if len(downsample_expand_ratios) != num_stages:
            raise ValueError(f"downsample_expand_ratios needs one ratio a stage ({num_stages}), "
                             f"got {len(downsample_expand_ratios)}")
        self.in_chans = in_chans
        self.num_classes = num_classes
        self.num_features = width_list[-1]
        self.head_hidden_size = head_widths[-1]
        self.global_pool = global_pool
        self.expand_ratio = expand_ratio
        self.norm_layer = norm_layer
        self.act_layer = get_act_layer(act_layer)
        self.fused_conv = fused_conv
        self.fused_downsample = fused_downsample
        self.attn_mlp_ratio = attn_mlp_ratio
        self.proj_drop_rate = proj_drop_rate
        self.stem_expand_ratio = stem_expand_ratio
        self.downsample_expand_ratios = tuple(downsample_expand_ratios)
        self.expand_groups = expand_groups
        self.small_kernels = small_kernels
        self.attn_upsample = attn_upsample
        self.local_mbconv_norm = local_mbconv_norm

        rates = torch.linspace(0, drop_path_rate, sum(depth_list)).tolist()
        self.stem = self._build_stem(in_chans, width_list[0], rates[:depth_list[0]])
        first_block = depth_list[0]
        in_channels = width_list[0]
        stages = []
        self.feature_info = []
        for stage_num, (width, depth) in enumerate(zip(width_list[1:], depth_list[1:]), start=1):
            stage_rates = rates[first_block:first_block + depth]
            first_block += depth
            if stage_num >= 3:
                blocks = self._build_attention_stage(in_channels, width, depth, stage_num, stage_rates)
            else:
                blocks = self._build_conv_stage(in_channels, width, depth, stage_num, stage_rates)
            stages.append(nn.Sequential(*blocks))
            in_channels = width
            self.feature_info.append(dict(num_chs=width, reduction=2 ** (stage_num + 1),
                                          module=f"stages.{stage_num - 1}"))
        self.stages = nn.Sequential(*stages)
        self.head = ClsHead(width_list[-1], list(head_widths), num_classes=num_classes, global_pool=global_pool,
                            dropout=drop_rate, norm_layer=self.norm_layer, act_layer=self.act_layer)

    def _local_block(self, in_channels, out_channels, stride, expand_ratio, fused):
        """A local block: a fused inverted residual (both convolutions normed) or, unfused, an inverted residual
        normed only after its projection; neither has biases."""
        if fused:
            return FusedMBConv(in_channels, out_channels, stride=stride, expand_ratio=expand_ratio,
                               expand_groups=self.expand_groups, use_bias=(False, False),
                               norm_layer=(self.norm_layer, self.norm_layer), act_layer=(self.act_layer, None))
        return MBConv(in_channels, out_channels, stride=stride, expand_ratio=expand_ratio,
                      expand_groups=self.expand_groups, use_bias=(False, False, False),
                      norm_layer=(None, None, self.norm_layer), act_layer=(self.act_layer, self.act_layer, None))

    def _build_stem(self, in_chans, width, rates):
        """The stride-2 3x3 convolution, then a residual local block per rate in ``rates``."""
        blocks = [ConvLayer(in_chans, width, kernel_size=3, stride=2, norm_layer=self.norm_layer,
                            act_layer=self.act_layer)]
        for rate in rates:
            block = self._local_block(width, width, 1, self.stem_expand_ratio, self.fused_conv)
            blocks.append(ResidualBlock(block, nn.Identity(), rate))
        return nn.Sequential(*blocks)

    def _build_conv_stage(self, in_channels, width, depth, stage_num, rates):
        """Stages 1 and 2: ``depth`` local blocks, the first stride-2 without shortcut."""
        blocks = []
        for i in range(depth):
            stride = 2 if i == 0 else 1
            ratio = self.downsample_expand_ratios[stage_num - 1] if stride == 2 else self.expand_ratio
            block = self._local_block(in_channels, width, stride, ratio, self.fused_conv)
            blocks.append(ResidualBlock(block, nn.Identity() if stride == 1 else None, rates[i]))
            in_channels = width
        return blocks

    def _build_attention_stage(self, in_channels, width, depth, stage_num, rates):
        """Stages 3 and 4: a stride-2 local block without shortcut, then ``depth`` attention blocks."""
        downsample = self._local_block(in_channels, width, 2, self.downsample_expand_ratios[stage_num - 1],
                                       self.fused_downsample)
        blocks = [ResidualBlock(downsample, None)]
        for i in range(depth):
            blocks.append(CPUBoneBlock(width, expand_ratio=self.expand_ratio, norm_layer=self.norm_layer,
                                       act_layer=self.act_layer, fused_conv=self.fused_conv,
                                       expand_groups=self.expand_groups, att_stride=2 if stage_num == 3 else 1,
                                       mlp_ratio=self.attn_mlp_ratio, small_kernels=self.small_kernels,
                                       attn_upsample=self.attn_upsample, proj_drop=self.proj_drop_rate,
                                       drop_path=rates[i], local_mbconv_norm=self.local_mbconv_norm))
        return blocks

    def get_classifier(self):
        """The classifier (a ``LinearLayer``; an identity for ``num_classes=0``)."""
        return self.head.classifier

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: the pre-logits features), after another pooling ('avg' or
        '') if ``global_pool``; ``reset_other`` also removes the head's 1x1 convolution and pre-logits layer."""
        if global_pool is not None:
            _check_global_pool(global_pool)
            self.global_pool = global_pool
        self.num_classes = num_classes
        self.head.reset(num_classes, global_pool, reset_other=reset_other, in_features=self.num_features)
        self.head_hidden_size = self.head.num_features

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) and (unless
        ``intermediates_only``) the last stage run's output; ``stop_early`` skips the stages after the last one
        picked. ``norm`` changes nothing: there is no final norm (timm's argument)."""
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
        """The head; with ``pre_logits``, its features before the classifier."""
        return self.head(x, pre_logits=pre_logits)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_cpubone(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives the four stages' maps (strides 4 to 32) under timm's flattened names (``stem_0``,
    ``stages_2``...)."""
    return build_model(CPUBone, variant, pretrained, progress=progress, **{**model_args, **kwargs})


# timm's released weights all use fused blocks (fused downsampling too), MLP ratio 4, grouped expansions, 2x2
# kernels in the attention stages and nearest-neighbour upsampling after the strided attention.
_RELEASED = dict(fused_conv=True, fused_downsample=True, attn_mlp_ratio=4, expand_groups=2, small_kernels=True,
                 attn_upsample="nearest")


@register_model
def cpubone_nano(pretrained=False, progress=True, **kwargs):
    """CPUBone-Nano: widths 12 to 192, depths (0, 1, 1, 1, 2)."""
    return _create_cpubone("cpubone_nano", pretrained, progress, kwargs, width_list=[12, 24, 48, 96, 192],
                           depth_list=[0, 1, 1, 1, 2], **_RELEASED)


@register_model
def cpubone_t0(pretrained=False, progress=True, **kwargs):
    """CPUBone-T0: widths 12 to 192, depths (0, 1, 1, 2, 3)."""
    return _create_cpubone("cpubone_t0", pretrained, progress, kwargs, width_list=[12, 24, 48, 96, 192],
                           depth_list=[0, 1, 1, 2, 3], **_RELEASED)


@register_model
def cpubone_s0(pretrained=False, progress=True, **kwargs):
    """CPUBone-S0: widths 14 to 224, depths (0, 1, 1, 2, 3)."""
    return _create_cpubone("cpubone_s0", pretrained, progress, kwargs, width_list=[14, 28, 56, 112, 224],
                           depth_list=[0, 1, 1, 2, 3], **_RELEASED)


@register_model
def cpubone_b0_bfrobust(pretrained=False, progress=True, **kwargs):
    """CPUBone-B0 with norms after every layer of its unfused local blocks: widths 16 to 256, depths
    (0, 1, 1, 3, 4)."""
    return _create_cpubone("cpubone_b0_bfrobust", pretrained, progress, kwargs, width_list=[16, 32, 64, 128, 256],
                           depth_list=[0, 1, 1, 3, 4], **_RELEASED, local_mbconv_norm="all")


def _b1_args(local_mbconv_norm):
    """timm's CPUBone-B1 arguments, with the norms of its unfused local blocks placed by ``local_mbconv_norm``."""
    return dict(width_list=[16, 32, 64, 128, 256], depth_list=[0, 1, 1, 5, 5], fused_conv=True,
                fused_downsample=True, attn_mlp_ratio=4, downsample_expand_ratios=(6, 6, 6, 6), expand_groups=2,
                small_kernels=True, attn_upsample="nearest", local_mbconv_norm=local_mbconv_norm)


@register_model
def cpubone_b1_bfrobust(pretrained=False, progress=True, **kwargs):
    """CPUBone-B1 with norms after every layer of its unfused local blocks: widths 16 to 256, depths
    (0, 1, 1, 5, 5)."""
    return _create_cpubone("cpubone_b1_bfrobust", pretrained, progress, kwargs, **_b1_args("all"))


@register_model
def cpubone_b1_dwnorm(pretrained=False, progress=True, **kwargs):
    """CPUBone-B1 with norms after the depthwise and projection layers of its unfused local blocks."""
    return _create_cpubone("cpubone_b1_dwnorm", pretrained, progress, kwargs, **_b1_args("depth_proj"))


@register_model
def cpubone_b2_bfrobust(pretrained=False, progress=True, **kwargs):
    """CPUBone-B2 with norms after every layer of its unfused local blocks: widths 20 to 320, depths
    (0, 1, 1, 6, 6), stochastic depth 0.1."""
    return _create_cpubone("cpubone_b2_bfrobust", pretrained, progress, kwargs, width_list=[20, 40, 80, 160, 320],
                           depth_list=[0, 1, 1, 6, 6], head_widths=(2304, 2560), downsample_expand_ratios=(6, 6, 6, 6),
                           drop_path_rate=0.1, local_mbconv_norm="all", **_RELEASED)


@register_model
def cpubone_b2pt5_dwnorm(pretrained=False, progress=True, **kwargs):
    """CPUBone-B2.5 with norms after the depthwise and projection layers of its unfused local blocks: widths 24 to
    384, depths (0, 1, 1, 6, 6)."""
    return _create_cpubone("cpubone_b2pt5_dwnorm", pretrained, progress, kwargs, width_list=[24, 48, 96, 192, 384],
                           depth_list=[0, 1, 1, 6, 6], head_widths=(2304, 2560), downsample_expand_ratios=(6, 6, 6, 6),
                           local_mbconv_norm="depth_proj", **_RELEASED)


@register_model
def cpubone_b3(pretrained=False, progress=True, **kwargs):
    """CPUBone-B3: widths 32 to 512, depths (1, 2, 3, 6, 6)."""
    return _create_cpubone("cpubone_b3", pretrained, progress, kwargs, width_list=[32, 64, 128, 256, 512],
                           depth_list=[1, 2, 3, 6, 6], stem_expand_ratio=4, downsample_expand_ratios=(6, 6, 6, 6),
                           **_RELEASED)
