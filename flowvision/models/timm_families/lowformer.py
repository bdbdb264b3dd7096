"""LowFormer (Nottebaum, Dunnhofer and Micheloni 2024, "LowFormer: Hardware Efficient Design for Convolutional
Transformer Backbones"; its edge-GPU models from the same authors' 2026 "Beyond MACs: Hardware Efficient Architecture
Design for Vision Backbones"): lowformer_b0, lowformer_b1, lowformer_b15, lowformer_b2, lowformer_b3, lowformer_e1,
lowformer_e2 and lowformer_e3.

A convolutional backbone chosen for measured speed rather than operation count. A stride-2 3x3 convolution and
optional residual blocks form the stem; the first two stages are fused inverted residuals (a full 3x3 convolution
that expands, then a 1x1 projection), the first block of each halving the map; the last two stages open with such a
downsampling block and then stack LowFormer blocks. A LowFormer block has three residual branches: a lowered
attention, which computes queries, keys and values from a strided depthwise convolution of the input (so attention
runs on a quarter of the positions in stage three) and brings the result back with a learned transposed convolution;
an MLP of 1x1 convolutions after a one-group GroupNorm; and a local inverted residual. The E models drop the MLP
branch (E3) or the attention and the MLP (E1, E2). The head is a 1x1 convolution, global pooling, a
linear-LayerNorm-hard-swish layer and the classifier. Model names, module names, ``state_dict`` keys and (seeded)
initialisation follow timm's ``lowformer`` module, so its checkpoints load directly; lowformer_b2, which timm
publishes no weights for, is registered too.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._layers import SelectAdaptivePool2d, drop_path_module, init_linear_layers
from ._norm import GroupNorm1

__all__ = []


class ResidualBlock(nn.Module):
    """``main(x)``, plus ``shortcut(x)`` after stochastic depth (``drop_path``) on the main branch; without a
    shortcut (``None``: a downsampling block) just ``main(x)``, its drop-path module then unused, as in timm."""

    def __init__(self, main, shortcut=None, drop_path=0.0):
        super().__init__()
        self.main = main
        self.shortcut = shortcut
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        if self.shortcut is None:
            return self.main(x)
        return self.drop_path(self.main(x)) + self.shortcut(x)


class ConvLayer(nn.Module):
    """A convolution padded to keep the size at stride 1 (``conv``), then a norm (``norm``) and an activation
    (``act``), each an identity when its layer is None: LowFormer needs activations without norms."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, groups=1, use_bias=False,
                 norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=kernel_size // 2,
                              groups=groups, bias=use_bias)
        self.norm = norm_layer(out_channels) if norm_layer is not None else nn.Identity()
        self.act = act_layer() if act_layer is not None else nn.Identity()

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        x = self.act(x)
        return x


class MBConv(nn.Module):
    """Inverted residual (without its shortcut): a 1x1 expansion to ``mid_channels`` or ``in_channels *
    expand_ratio`` with the activation but no norm (``inverted_conv``), a depthwise convolution with the stride, also
    activated but not normed (``depth_conv``), and a normed 1x1 projection without bias (``point_conv``). The 1x1
    convolutions are grouped by ``expand_groups``."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, mid_channels=None, expand_ratio=6,
                 expand_groups=1, use_bias=False, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU6):
        super().__init__()
        mid_channels = mid_channels or round(in_channels * expand_ratio)
        self.inverted_conv = ConvLayer(in_channels, mid_channels, 1, groups=expand_groups, use_bias=use_bias,
                                       norm_layer=None, act_layer=act_layer)
        self.depth_conv = ConvLayer(mid_channels, mid_channels, kernel_size, stride=stride, groups=mid_channels,
                                    use_bias=use_bias, norm_layer=None, act_layer=act_layer)
        self.point_conv = ConvLayer(mid_channels, out_channels, 1, groups=expand_groups, use_bias=False,
                                    norm_layer=norm_layer, act_layer=None)

    def forward(self, x):
        x = self.inverted_conv(x)
        x = self.depth_conv(x)
        x = self.point_conv(x)
        return x


class FusedMBConv(nn.Module):
    """Fused inverted residual (without its shortcut): one ``kernel_size`` convolution with the stride, grouped by
    ``expand_groups``, expanding to ``mid_channels`` or ``in_channels * expand_ratio`` with norm and activation
    (``spatial_conv``), and a normed 1x1 projection without bias (``point_conv``)."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, mid_channels=None, expand_ratio=6,
                 expand_groups=1, use_bias=False, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU6):
        super().__init__()
        mid_channels = mid_channels or round(in_channels * expand_ratio)
        self.spatial_conv = ConvLayer(in_channels, mid_channels, kernel_size, stride=stride, groups=expand_groups,
                                      use_bias=use_bias, norm_layer=norm_layer, act_layer=act_layer)
        self.point_conv = ConvLayer(mid_channels, out_channels, 1, use_bias=False, norm_layer=norm_layer,
                                    act_layer=None)

    def forward(self, x):
        x = self.spatial_conv(x)
        x = self.point_conv(x)
        return x


class ConvAttention(nn.Module):
    """LowFormer's lowered attention: a normed ``att_kernel`` depthwise convolution with stride ``att_stride``
    (``conv_proj``) shrinks the map, a 1x1 convolution (``pwise``) gives each of the heads (one per 30 of
    ``input_dim * head_dim_mul`` channels, at least one) its queries, keys and values of ``head_dim`` channels, and
    softmax attention runs over the shrunk map's positions. The heads go back to ``input_dim`` channels through a 1x1
    convolution (``o_proj``) and a depthwise transposed convolution (``upsampling``) that undoes the stride; with
    ``fuse_out_proj`` the transposed convolution maps the heads to ``input_dim`` itself (``o_proj`` an identity).
    The upsampled map is cropped to the input's size."""

    def __init__(self, input_dim, head_dim_mul=0.5, att_stride=4, att_kernel=7, fuse_out_proj=False):
        super().__init__()
        self.num_heads = int(max(1, (input_dim * head_dim_mul) // 30))
        self.head_dim = int((input_dim // self.num_heads) * head_dim_mul)
        self.num_keys = 3
        self.scale = self.head_dim ** -0.5
        self.conv_proj = ConvLayer(input_dim, input_dim, att_kernel, stride=att_stride, groups=input_dim,
                                   norm_layer=nn.BatchNorm2d, act_layer=None)
        self.pwise = nn.Conv2d(input_dim, self.head_dim * self.num_heads * self.num_keys, 1, bias=False)
        self.o_proj_inpdim = self.head_dim * self.num_heads
        if att_stride == 1:
            upsample_args = dict(kernel_size=3, stride=1, padding=1)
        else:
            upsample_args = dict(kernel_size=att_stride * 2, stride=att_stride, padding=att_stride // 2)
        if fuse_out_proj:
            self.o_proj = nn.Identity()
            self.upsampling = nn.ConvTranspose2d(self.o_proj_inpdim, input_dim, **upsample_args)
        else:
            self.o_proj = nn.Conv2d(self.o_proj_inpdim, input_dim, 1)
            self.upsampling = nn.ConvTranspose2d(input_dim, input_dim, groups=input_dim, **upsample_args)

    def forward(self, x):
        height, width = x.shape[-2:]
        qkv = self.pwise(self.conv_proj(x))
        batch, _, h, w = qkv.shape
        qkv = qkv.reshape(batch, self.num_heads, self.num_keys * self.head_dim, h * w).permute(0, 1, 3, 2)
        q, k, v = qkv.chunk(3, dim=3)
        values = F.scaled_dot_product_attention(q, k, v, scale=self.scale)
        out = self.o_proj(values.permute(0, 1, 3, 2).reshape(batch, self.o_proj_inpdim, h, w))
        out = self.upsampling(out)
        return out[..., :height, :width]


class LowFormerBlock(nn.Module):
    """The attention-stage block, three residual branches in turn, each with stochastic depth ``drop_path``:
    ``attn``, the lowered attention (after a one-group GroupNorm when there is an MLP; a stride-2 one with a 5x5
    projection when ``att_stride`` is 2, else 3x3); ``mlp``, GroupNorm, two 1x1 convolutions around GELU widening by
    ``attn_mlp_ratio`` and dropout ``proj_drop``; ``local``, an inverted residual expanding by ``expand_ratio``
    (fused when ``fused_conv`` and the block is narrower than 256 channels) with biased convolutions. ``attn`` or
    ``attn_mlp`` False leaves that branch an identity."""

    def __init__(self, in_channels, expand_ratio=4, norm_layer=nn.BatchNorm2d, act_layer=nn.Hardswish,
                 fused_conv=False, expand_groups=1, attn=True, attn_mlp=True, attn_mlp_ratio=4, att_stride=1,
                 proj_drop=0.0, drop_path=0.0):
        super().__init__()
        if attn:
            attention = ConvAttention(in_channels, head_dim_mul=0.5, att_stride=att_stride,
                                      att_kernel=5 if att_stride > 1 else 3, fuse_out_proj=fused_conv)
            if attn_mlp:
                attention = nn.Sequential(GroupNorm1(in_channels), attention)
            self.attn = ResidualBlock(attention, nn.Identity(), drop_path)
        else:
            self.attn = nn.Identity()
        if attn_mlp:
            hidden = in_channels * attn_mlp_ratio
            mlp = nn.Sequential(
                GroupNorm1(in_channels),
                nn.Conv2d(in_channels, hidden, 1),
                nn.GELU(),
                nn.Conv2d(hidden, in_channels, 1),
                nn.Dropout(proj_drop),
            )
            self.mlp = ResidualBlock(mlp, nn.Identity(), drop_path)
        else:
            self.mlp = nn.Identity()
        block_cls = FusedMBConv if fused_conv and in_channels < 256 else MBConv
        local = block_cls(in_channels, in_channels, expand_ratio=expand_ratio, expand_groups=expand_groups,
                          use_bias=True, norm_layer=norm_layer, act_layer=act_layer)
        self.local = ResidualBlock(local, nn.Identity(), drop_path)

    def forward(self, x):
        x = self.attn(x)
        x = self.mlp(x)
        x = self.local(x)
        return x


def _checked_pool(global_pool):
    """timm's head pooling for ``global_pool`` (unflattened), refused when it changes the width ('catavgmax'): the
    pre-classifier layer is sized for the features' channels."""
    pool = SelectAdaptivePool2d(global_pool, flatten=False)
    if pool.feat_mult() != 1:
        raise ValueError(f"LowFormer's head takes no pooling that changes the width, got {global_pool!r}")
    return pool


class LowFormer(nn.Module):
    """LowFormer: the stem (``stem``: a stride-2 3x3 ConvLayer to ``width_list[0]``, then ``depth_list[0]`` residual
    blocks expanding by ``stem_expand_ratio``), four stages (``stages``; the first two: ``depth_list[i]`` blocks, the
    first halving the map without shortcut; the last two: a halving block, then ``depth_list[i]`` LowFormer blocks, the
    third stage's attention strided by 2), and the head: a normed, activated 1x1 convolution to ``head_widths[0]``
    (``in_conv``), pooling (``global_pool``, ``flatten``), a bias-free linear layer to ``head_widths[1]`` with
    LayerNorm and the activation (``pre_classifier``), dropout ``drop_rate`` and ``classifier``.

    Blocks are ``FusedMBConv`` with ``fused_conv`` (which also folds the attention's output projection into its
    upsampling), ``MBConv`` otherwise, expanding by ``expand_ratio`` (the halving ones by
    ``downsample_expand_ratios[i]``). ``drop_path_rate`` rises linearly from 0 over all blocks, stem ones included;
    ``proj_drop_rate`` is the MLPs' dropout. With ``global_pool=''`` the head runs on every position and returns a map.
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "classifier"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, width_list, depth_list, in_chans=3, num_classes=1000, global_pool="avg",
                 head_widths=(1536, 1600), drop_rate=0.0, proj_drop_rate=0.0, drop_path_rate=0.0, expand_ratio=4,
                 norm_layer=nn.BatchNorm2d, act_layer=nn.Hardswish, fused_conv=True, attn=True, attn_mlp=True,
                 attn_mlp_ratio=4, stem_expand_ratio=2, downsample_expand_ratios=None, expand_groups=1):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.feature_info = []
        num_stages = len(width_list) - 1
        if downsample_expand_ratios is None:
            downsample_expand_ratios = (expand_ratio,) * num_stages
        if len(downsample_expand_ratios) != num_stages:
            raise ValueError(f"downsample_expand_ratios needs {num_stages} values, got {downsample_expand_ratios}")
        rates = torch.linspace(0, drop_path_rate, sum(depth_list)).tolist()
        block_cls = FusedMBConv if fused_conv else MBConv

        def conv_block(in_channels, out_channels, stride, ratio):
            return block_cls(in_channels, out_channels, stride=stride, expand_ratio=ratio,
                             expand_groups=expand_groups, use_bias=False, norm_layer=norm_layer,
                             act_layer=act_layer)

        channels = width_list[0]
        stem = [ConvLayer(in_chans, channels, 3, stride=2, norm_layer=norm_layer, act_layer=act_layer)]
        for i in range(depth_list[0]):
            stem.append(ResidualBlock(conv_block(channels, channels, 1, stem_expand_ratio), nn.Identity(), rates[i]))
        self.stem = nn.Sequential(*stem)

        stages = []
        reduction = 2
        first_block = depth_list[0]
        for stage_num, (width, depth) in enumerate(zip(width_list[1:], depth_list[1:]), start=1):
            stage_rates = rates[first_block:first_block + depth]
            first_block += depth
            downsample_ratio = downsample_expand_ratios[stage_num - 1]
            blocks = []
            if stage_num >= 3:
                blocks.append(ResidualBlock(conv_block(channels, width, 2, downsample_ratio), None))
                channels = width
                for rate in stage_rates:
                    blocks.append(LowFormerBlock(
                        channels, expand_ratio=expand_ratio, norm_layer=norm_layer, act_layer=act_layer,
                        fused_conv=fused_conv, expand_groups=expand_groups, attn=attn, attn_mlp=attn_mlp,
                        attn_mlp_ratio=attn_mlp_ratio, att_stride=2 if stage_num == 3 else 1,
                        proj_drop=proj_drop_rate, drop_path=rate))
            else:
                for i, rate in enumerate(stage_rates):
                    stride = 2 if i == 0 else 1
                    block = conv_block(channels, width, stride, downsample_ratio if stride == 2 else expand_ratio)
                    blocks.append(ResidualBlock(block, nn.Identity() if stride == 1 else None, rate))
                    channels = width
            stages.append(nn.Sequential(*blocks))
            if blocks:
                reduction *= 2
            self.feature_info.append(dict(num_chs=channels, reduction=reduction, module=f"stages.{stage_num - 1}"))
        self.stages = nn.Sequential(*stages)

        self.num_features = width_list[-1]
        self.head_hidden_size = head_widths[-1]
        self.global_pool = _checked_pool(global_pool)
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self.in_conv = ConvLayer(width_list[-1], head_widths[0], 1, norm_layer=norm_layer, act_layer=act_layer)
        self.pre_classifier = nn.Sequential(
            nn.Linear(head_widths[0], head_widths[1], bias=False),
            nn.LayerNorm(head_widths[1]),
            act_layer(),
        )
        self.classifier = nn.Linear(head_widths[1], num_classes) if num_classes > 0 else nn.Identity()
        init_linear_layers(self)

    def get_classifier(self):
        """The final linear layer (an identity for ``num_classes=0``)."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh final layer for ``num_classes`` (0: an identity), after another pooling if ``global_pool`` is
        given; ``reset_other`` removes the 1x1 convolution and the pre-classifier layer, so that the pooled
        features feed the classifier. The new layers take the model's training mode."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = _checked_pool(global_pool).train(self.training)
            self.flatten = (nn.Flatten(1) if global_pool else nn.Identity()).train(self.training)
        if reset_other:
            self.in_conv = nn.Identity()
            self.pre_classifier = nn.Identity()
            self.head_hidden_size = self.num_features
        self.classifier = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()
        self.classifier.train(self.training)

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """1x1 convolution, pooling, the pre-classifier layer, dropout, then the classifier unless ``pre_logits``.
        Without pooling the linear layers run channels-last at every position and the map comes back NCHW."""
        unpooled = not self.global_pool.pool_type
        x = self.in_conv(x)
        x = self.global_pool(x)
        x = self.flatten(x)
        if unpooled:
            x = x.permute(0, 2, 3, 1)
        x = self.pre_classifier(x)
        if self.drop_rate:
            x = F.dropout(x, self.drop_rate, training=self.training)
        if not pre_logits:
            x = self.classifier(x)
        if unpooled:
            x = x.permute(0, 3, 1, 2).contiguous()
        return x

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

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


def _create_lowformer(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless ``out_indices`` says otherwise, under
    timm's flattened names (``stem_0``, ``stages_2``...)."""
    return build_model(LowFormer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def lowformer_b0(pretrained=False, progress=True, **kwargs):
    """LowFormer-B0: widths 16 to 256, no stem blocks, depths (1, 1, 3, 4)."""
    return _create_lowformer("lowformer_b0", pretrained, progress, kwargs,
                             width_list=[16, 32, 64, 128, 256], depth_list=[0, 1, 1, 3, 4])


@register_model
def lowformer_b1(pretrained=False, progress=True, **kwargs):
    """LowFormer-B1: widths 16 to 256, depths (1, 1, 5, 5), downsampling blocks expanding by 6."""
    return _create_lowformer("lowformer_b1", pretrained, progress, kwargs,
                             width_list=[16, 32, 64, 128, 256], depth_list=[0, 1, 1, 5, 5],
                             downsample_expand_ratios=(6, 6, 6, 6))


@register_model
def lowformer_b15(pretrained=False, progress=True, **kwargs):
    """LowFormer-B1.5: widths 20 to 320, depths (1, 1, 6, 6), head widths 2304 and 2560."""
    return _create_lowformer("lowformer_b15", pretrained, progress, kwargs,
                             width_list=[20, 40, 80, 160, 320], depth_list=[0, 1, 1, 6, 6], head_widths=(2304, 2560),
                             downsample_expand_ratios=(6, 6, 6, 6))


@register_model
def lowformer_b2(pretrained=False, progress=True, **kwargs):
    """LowFormer-B2: widths 24 to 384, depths (1, 1, 6, 6), head widths 2304 and 2560."""
    return _create_lowformer("lowformer_b2", pretrained, progress, kwargs,
                             width_list=[24, 48, 96, 192, 384], depth_list=[0, 1, 1, 6, 6], head_widths=(2304, 2560),
                             downsample_expand_ratios=(6, 6, 6, 6))


@register_model
def lowformer_b3(pretrained=False, progress=True, **kwargs):
    """LowFormer-B3: widths 32 to 512, one stem block, depths (2, 3, 6, 6)."""
    return _create_lowformer("lowformer_b3", pretrained, progress, kwargs,
                             width_list=[32, 64, 128, 256, 512], depth_list=[1, 2, 3, 6, 6],
                             stem_expand_ratio=4, downsample_expand_ratios=(6, 6, 6, 6))


@register_model
def lowformer_e1(pretrained=False, progress=True, **kwargs):
    """LowFormer-E1 (edge GPU): widths 20 to 320, depths (1, 1, 4, 4), no attention and no MLP branch."""
    return _create_lowformer("lowformer_e1", pretrained, progress, kwargs,
                             width_list=[20, 40, 80, 160, 320], depth_list=[0, 1, 1, 4, 4], head_widths=(2304, 2560),
                             attn=False, attn_mlp=False, downsample_expand_ratios=(6, 6, 6, 6))


@register_model
def lowformer_e2(pretrained=False, progress=True, **kwargs):
    """LowFormer-E2 (edge GPU): widths 32 to 512, depths (2, 3, 4, 4), no attention and no MLP branch."""
    return _create_lowformer("lowformer_e2", pretrained, progress, kwargs,
                             width_list=[32, 64, 128, 256, 512], depth_list=[1, 2, 3, 4, 4],
                             attn=False, attn_mlp=False, stem_expand_ratio=4, downsample_expand_ratios=(6, 6, 6, 6))


@register_model
def lowformer_e3(pretrained=False, progress=True, **kwargs):
    """LowFormer-E3 (edge GPU): widths 32 to 512, depths (2, 3, 6, 6), attention without the MLP branch."""
    return _create_lowformer("lowformer_e3", pretrained, progress, kwargs,
                             width_list=[32, 64, 128, 256, 512], depth_list=[1, 2, 3, 6, 6],
                             attn_mlp=False, stem_expand_ratio=4, downsample_expand_ratios=(6, 6, 6, 6))
