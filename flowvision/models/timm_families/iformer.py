"""iFormer (Zheng 2025, "iFormer: Integrating ConvNet and Transformer for Mobile Application", ICLR 2025):
iformer_t, iformer_s, iformer_m, iformer_l, iformer_l2 and iformer_h, and the distilled iformer_m_distilled,
iformer_l_distilled and iformer_l2_distilled.

A mobile hybrid network: a fast convolutional front and attention only where the maps are small. The stem (two
stride-2 5x5 convolutions with GELU, then a 1x1 one) gives a 4x smaller map; four stages follow, each but the
first opening with a stride-2 3x3 convolution. The first two stages are ConvNeXt-like blocks (a 7x7 depthwise
convolution, a 1x1 widening, GELU and a 1x1 narrowing, as one residual branch). The last two mix in groups of
three blocks: a conditional positional encoding (a residual 3x3 depthwise convolution), single-head modulation
attention (SHMA: one attention head over narrowed queries and keys whose sigmoid-squashed values are multiplied by
a sigmoid gate from the same 1x1 convolution, then projected back) and a 1x1 feed-forward network; one
convolutional block closes the stage. Every convolution is followed by BatchNorm, so ``IFormer.fuse`` folds the
model into plain biased convolutions and one linear classifier for inference. The averaged features go to RepViT's
BatchNorm + linear head (two of them, averaged, in the distilled variants). Model names, module names,
``state_dict`` keys and (seeded) initialisation follow timm's ``iformer`` module, so its checkpoints load directly;
iformer_l2, which timm publishes no weights for (only its distilled form), is registered too.
"""
import engine as torch
from engine import nn

from .._features import FlatFeatureListNet
from .._helpers import build_model
from ..registry import register_model
from ._layers import drop_path_module, trunc_normal_
from ._reparam import biased_conv_like, fold_batchnorm, identity_kernel
from .repvit import ConvNorm, RepVitApi, RepVitClassifier as _RepVitHeads

__all__ = []

_GLOBAL_POOLS = ("", "avg")


class RepVitClassifier(_RepVitHeads):
    """RepViT's classifier (dropout ``head_drop``, a BatchNorm + linear ``head`` and, with ``distillation``, a
    second one ``head_dist``; their logits averaged), as iFormer holds it: an identity fills the ``head_dist`` slot
    of a classifier without distillation, as in timm's iformer module."""

    def __init__(self, dim, num_classes, distillation=False, drop=0.0):
        super().__init__(dim, num_classes, distillation, drop)
        if not distillation:
            self.head_dist = nn.Identity()


class Residual(nn.Module):
    """``x + drop_path(gamma * module(x))``: a residual branch (``module``) with stochastic depth (``drop_path``)
    and, where ``layer_scale_init_value`` > 0, a per-channel layer scale (``gamma``, of ``dim`` channels) starting at
    that value."""

    def __init__(self, module, drop_path=0.0, layer_scale_init_value=0.0, dim=None):
        super().__init__()
        self.module = module
        self.drop_path = drop_path_module(drop_path)
        if layer_scale_init_value > 0 and dim is not None:
            self.gamma = nn.Parameter(layer_scale_init_value * torch.ones((1, dim, 1, 1)))
        else:
            self.gamma = None

    def forward(self, x):
        branch = self.module(x)
        if self.gamma is not None:
            return x + self.gamma * self.drop_path(branch)
        return x + self.drop_path(branch)


class ConvBlock(nn.Module):
    """The convolutional block, one residual branch (``mixer``): a ``kernel_size`` depthwise ConvNorm, a 1x1
    ConvNorm widening by ``ratio``, the activation and a 1x1 ConvNorm back."""

    def __init__(self, dim, kernel_size=7, ratio=4, drop_path=0.0, layer_scale_init_value=1e-6, act_layer=nn.GELU):
        super().__init__()
        hidden = ratio * dim
        branch = nn.Sequential(
            ConvNorm(dim, dim, kernel_size, 1, kernel_size // 2, groups=dim),
            ConvNorm(dim, hidden, 1),
            act_layer(),
            ConvNorm(hidden, dim, 1),
        )
        self.mixer = Residual(branch, drop_path, layer_scale_init_value, dim)

    def forward(self, x):
        return self.mixer(x)


class RepCPE(nn.Module):
    """Conditional positional encoding: ``x`` plus a ``kernel_size`` depthwise ConvNorm of it (``cpe``), which
    ``fuse`` folds into one depthwise convolution (the skip as a centre tap of 1)."""

    def __init__(self, dim, kernel_size=7):
        super().__init__()
        self.cpe = Residual(ConvNorm(dim, dim, kernel_size, 1, kernel_size // 2, groups=dim))

    def forward(self, x):
        return self.cpe(x)

    def fuse(self):
        """The biased depthwise convolution equal to this encoding in eval mode."""
        conv_norm = self.cpe.module
        with torch.no_grad():
            kernel, bias = fold_batchnorm(conv_norm.c.weight, conv_norm.bn)
            kernel = kernel + identity_kernel(kernel.shape[0], 1, kernel.shape[-2:], kernel.dtype)
        return biased_conv_like(conv_norm.c, kernel, bias)


class SHMA(nn.Module):
    """Single-head modulation attention over the whole map: queries and keys narrowed to ``dim /
    head_dim_reduction_ratio`` channels (``q``, ``k``), one 1x1 ConvNorm (``v_gate``) giving the values and the
    gate (``dim * ratio`` channels each), both through the sigmoid (``gate_act``); the attended values, multiplied
    by the gate, are projected back to ``dim`` (``proj``). ``attn_drop`` is timm's attention dropout, always 0."""

    def __init__(self, dim, ratio=1, head_dim_reduction_ratio=2):
        super().__init__()
        mid_dim = int(dim * ratio)
        attn_dim = dim // head_dim_reduction_ratio
        self.scale = attn_dim ** -0.5
        self.q = ConvNorm(dim, attn_dim, 1, 1, 0)
        self.k = ConvNorm(dim, attn_dim, 1, 1, 0)
        self.v_gate = ConvNorm(dim, 2 * mid_dim, 1, 1, 0)
        self.gate_act = nn.Sigmoid()
        self.attn_drop = nn.Dropout(0.0)
        self.proj = ConvNorm(mid_dim, dim, 1)

    def forward(self, x):
        batch, _, height, width = x.shape
        value, gate = self.gate_act(self.v_gate(x)).chunk(2, dim=1)
        query = self.q(x).flatten(2)
        key = self.k(x).flatten(2)
        attn = ((query * self.scale).transpose(-2, -1) @ key).softmax(dim=-1)
        attn = self.attn_drop(attn)
        attended = (value.flatten(2) @ attn.transpose(-2, -1)).reshape(batch, -1, height, width)
        return self.proj(attended * gate)


class SHMABlock(nn.Module):
    """The attention block: SHMA as one residual branch (``mixer``)."""

    def __init__(self, dim, ratio=1, head_dim_reduction_ratio=2, drop_path=0.0, layer_scale_init_value=1e-6):
        super().__init__()
        self.mixer = Residual(SHMA(dim, ratio, head_dim_reduction_ratio), drop_path, layer_scale_init_value, dim)

    def forward(self, x):
        return self.mixer(x)


class FFN(nn.Module):
    """The feed-forward block, one residual branch (``mixer``): a 1x1 ConvNorm widening by ``ratio``, the
    activation and a 1x1 ConvNorm back."""

    def __init__(self, dim, ratio=4, drop_path=0.0, layer_scale_init_value=1e-6, act_layer=nn.GELU):
        super().__init__()
        hidden = ratio * dim
        branch = nn.Sequential(ConvNorm(dim, hidden, 1), act_layer(), ConvNorm(hidden, dim, 1))
        self.mixer = Residual(branch, drop_path, layer_scale_init_value, dim)

    def forward(self, x):
        return self.mixer(x)


class StageBlock(nn.Module):
    """A stage: a stride-2 3x3 ConvNorm from ``in_dim`` to ``dim`` (``downsample``; an identity when the widths
    are equal) and ``depth`` blocks (``blocks``). Without attention (``num_attn`` 0) every block is a ConvBlock;
    with it, ``num_attn`` groups of (RepCPE, SHMABlock, FFN) take ``3 * num_attn`` blocks and the remaining
    convolutional blocks go before them, but one that closes the stage. ``drop_path_rates`` holds one rate per
    block position (a group's RepCPE has none)."""

    def __init__(self, in_dim, dim, depth, num_attn, hdrr, conv_ratio, ffn_ratio, attn_ratio, drop_path_rates,
                 layer_scale_init_value, act_layer):
        super().__init__()
        if depth < 3 * num_attn:
            raise ValueError(f"{num_attn} attention groups need {3 * num_attn} blocks, the stage has {depth}")
        self.downsample = nn.Identity() if in_dim == dim else ConvNorm(in_dim, dim, 3, 2, 1)

        def conv_block(rate):
            return ConvBlock(dim, 7, conv_ratio, rate, layer_scale_init_value, act_layer)

        if num_attn == 0:
            blocks = [conv_block(drop_path_rates[i]) for i in range(depth)]
        else:
            num_conv = depth - 3 * num_attn
            num_leading = max(num_conv - 1, 0)
            blocks = [conv_block(drop_path_rates[i]) for i in range(num_leading)]
            for group in range(num_attn):
                first = num_leading + 3 * group
                blocks.append(RepCPE(dim, 3))
                blocks.append(SHMABlock(dim, attn_ratio, hdrr, drop_path_rates[first + 1], layer_scale_init_value))
                blocks.append(FFN(dim, ffn_ratio, drop_path_rates[first + 2], layer_scale_init_value, act_layer))
            if num_conv > 0:
                blocks.append(conv_block(drop_path_rates[-1]))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class Stem(nn.Module):
    """Two stride-2 5x5 ConvNorms (to ``out_chs / 2``, then twice ``out_chs``; ``conv1``, ``conv2``), each followed
    by the activation (``act1``, ``act2``), and a 1x1 ConvNorm to ``out_chs`` (``conv3``): a 4x smaller map."""

    def __init__(self, in_chans, out_chs, act_layer=nn.GELU):
        super().__init__()
        mid_chs = (out_chs // 2) * 4
        self.conv1 = ConvNorm(in_chans, out_chs // 2, 5, 2, 2)
        self.act1 = act_layer()
        self.conv2 = ConvNorm(out_chs // 2, mid_chs, 5, 2, 2)
        self.act2 = act_layer()
        self.conv3 = ConvNorm(mid_chs, out_chs, 1)

    def forward(self, x):
        x = self.conv1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.act2(x)
        x = self.conv3(x)
        return x


class IFormer(RepVitApi, nn.Module):
    """iFormer: the stem (``stem``), one ``StageBlock`` per entry of ``dims`` (``stages``; ``depths`` blocks, of
    which ``attn_groups`` attention groups with queries and keys narrowed by ``attn_head_dim_reduction``), average
    pooling, dropout (``head_drop``, ``drop_rate``) and RepViT's classifier (``head``, two heads with
    ``distillation``).

    ``conv_ratio``, ``ffn_ratio`` and ``attn_ratio`` are the convolutional blocks', feed-forward blocks' and
    attention values' expansions; ``drop_path_rate`` the last block's stochastic depth, rising linearly from 0 at
    the first; ``layer_scale_init_value`` > 0 gives every block a layer scale. ``global_pool``: 'avg' or '' (the
    unpooled map); ``num_classes=0`` gives the pooled features. ``fuse()`` switches the model to its inference
    form in place.
    """

    feature_wrapper = FlatFeatureListNet
    classifier_class = RepVitClassifier

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", dims=(32, 64, 128, 256),
                 depths=(2, 2, 16, 6), attn_groups=(0, 0, 3, 2), attn_head_dim_reduction=(0, 0, 2, 4), conv_ratio=3,
                 ffn_ratio=2, attn_ratio=1, drop_rate=0.0, drop_path_rate=0.0, layer_scale_init_value=0.0,
                 act_layer=nn.GELU, distillation=False):
        super().__init__()
        self._check_pool(global_pool)
        if not len(dims) == len(depths) == len(attn_groups) == len(attn_head_dim_reduction):
            raise ValueError("dims, depths, attn_groups and attn_head_dim_reduction need one entry per stage, got "
                             f"{len(dims)}, {len(depths)}, {len(attn_groups)} and {len(attn_head_dim_reduction)}")
        classifier = ("head.head.l", "head.head_dist.l") if distillation else "head.head.l"
        self.default_cfg = {"first_conv": "stem.conv1.c", "classifier": classifier}
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.distillation = distillation
        self.num_stages = len(depths)
        self.feature_info = []
        self.stem = Stem(in_chans, dims[0], act_layer)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        stages = []
        prev_dim = dims[0]
        first_block = 0
        for i in range(self.num_stages):
            stages.append(StageBlock(prev_dim, dims[i], depths[i], attn_groups[i], attn_head_dim_reduction[i],
                                     conv_ratio, ffn_ratio, attn_ratio, rates[first_block:first_block + depths[i]],
                                     layer_scale_init_value, act_layer))
            first_block += depths[i]
            prev_dim = dims[i]
            self.feature_info.append(dict(num_chs=dims[i], reduction=2 ** (i + 2), module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = self.head_hidden_size = dims[-1]
        self.head_drop = nn.Dropout(drop_rate)
        self.head = RepVitClassifier(dims[-1], num_classes, distillation)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        """timm's scheme: truncated-normal weights (std 0.02) for every convolution and linear layer, zero biases;
        BatchNorms start at the identity."""
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.constant_(module.bias, 0)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """RepViT's pruning, the feature_info of the dropped stages dropped too (as timm's)."""
        take = super().prune_intermediate_layers(indices, prune_norm, prune_head)
        self.num_stages = len(self.stages)
        self.feature_info = self.feature_info[:self.num_stages]
        return take


def _create_iformer(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless ``out_indices`` says otherwise,
    under timm's flattened names (``stem``, ``stages_2``...)."""
    return build_model(IFormer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def iformer_t(pretrained=False, progress=True, **kwargs):
    """iFormer-T: widths 32, 64, 128, 256, depths 2, 2, 16, 6 (3 and 2 attention groups)."""
    return _create_iformer("iformer_t", pretrained, progress, kwargs, dims=(32, 64, 128, 256), depths=(2, 2, 16, 6),
                           attn_groups=(0, 0, 3, 2), attn_head_dim_reduction=(0, 0, 2, 4), conv_ratio=3,
                           ffn_ratio=2)


@register_model
def iformer_s(pretrained=False, progress=True, **kwargs):
    """iFormer-S: widths 32, 64, 176, 320, depths 2, 2, 19, 6 (3 and 2 attention groups)."""
    return _create_iformer("iformer_s", pretrained, progress, kwargs, dims=(32, 64, 176, 320), depths=(2, 2, 19, 6),
                           attn_groups=(0, 0, 3, 2), attn_head_dim_reduction=(0, 0, 2, 4), conv_ratio=4,
                           ffn_ratio=3)


@register_model
def iformer_m(pretrained=False, progress=True, **kwargs):
    """iFormer-M: widths 48, 96, 192, 384, depths 2, 2, 22, 6 (4 and 2 attention groups)."""
    return _create_iformer("iformer_m", pretrained, progress, kwargs, dims=(48, 96, 192, 384), depths=(2, 2, 22, 6),
                           attn_groups=(0, 0, 4, 2), attn_head_dim_reduction=(0, 0, 2, 4), conv_ratio=4,
                           ffn_ratio=3)


@register_model
def iformer_l(pretrained=False, progress=True, **kwargs):
    """iFormer-L: widths 48, 96, 256, 384, depths 2, 2, 33, 6 (8 and 2 attention groups)."""
    return _create_iformer("iformer_l", pretrained, progress, kwargs, dims=(48, 96, 256, 384), depths=(2, 2, 33, 6),
                           attn_groups=(0, 0, 8, 2), attn_head_dim_reduction=(0, 0, 2, 4), conv_ratio=4,
                           ffn_ratio=3)


@register_model
def iformer_l2(pretrained=False, progress=True, **kwargs):
    """iFormer-L2: widths 64, 128, 256, 512, depths 3, 3, 46, 9 (11 and 3 attention groups)."""
    return _create_iformer("iformer_l2", pretrained, progress, kwargs, dims=(64, 128, 256, 512), depths=(3, 3, 46, 9),
                           attn_groups=(0, 0, 11, 3), attn_head_dim_reduction=(0, 0, 2, 4), conv_ratio=4,
                           ffn_ratio=3)


@register_model
def iformer_h(pretrained=False, progress=True, **kwargs):
    """iFormer-H: widths 96, 192, 384, 768, depths 5, 5, 60, 18 (15 and 6 attention groups), layer scale."""
    return _create_iformer("iformer_h", pretrained, progress, kwargs, dims=(96, 192, 384, 768),
                           depths=(5, 5, 60, 18), attn_groups=(0, 0, 15, 6), attn_head_dim_reduction=(0, 0, 1, 1),
                           conv_ratio=4, ffn_ratio=4, layer_scale_init_value=1e-6)


@register_model
def iformer_m_distilled(pretrained=False, progress=True, **kwargs):
    """iFormer-M with a distillation head: widths 48, 96, 192, 384, depths 2, 2, 22, 6."""
    return _create_iformer("iformer_m_distilled", pretrained, progress, kwargs, dims=(48, 96, 192, 384),
                           depths=(2, 2, 22, 6), attn_groups=(0, 0, 4, 2), attn_head_dim_reduction=(0, 0, 2, 4),
                           conv_ratio=4, ffn_ratio=3, distillation=True)


@register_model
def iformer_l_distilled(pretrained=False, progress=True, **kwargs):
    """iFormer-L with a distillation head: widths 48, 96, 256, 384, depths 2, 2, 33, 6."""
    return _create_iformer("iformer_l_distilled", pretrained, progress, kwargs, dims=(48, 96, 256, 384),
                           depths=(2, 2, 33, 6), attn_groups=(0, 0, 8, 2), attn_head_dim_reduction=(0, 0, 2, 4),
                           conv_ratio=4, ffn_ratio=3, distillation=True)


@register_model
def iformer_l2_distilled(pretrained=False, progress=True, **kwargs):
    """iFormer-L2 with a distillation head: widths 64, 128, 256, 512, depths 3, 3, 46, 9."""
    return _create_iformer("iformer_l2_distilled", pretrained, progress, kwargs, dims=(64, 128, 256, 512),
                           depths=(3, 3, 46, 9), attn_groups=(0, 0, 11, 3), attn_head_dim_reduction=(0, 0, 2, 4),
                           conv_ratio=4, ffn_ratio=3, distillation=True)
