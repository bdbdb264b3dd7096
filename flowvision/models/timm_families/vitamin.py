"""ViTamin (Chen, Yu, Shen, Yuille and Chen 2024, "ViTamin: Designing Scalable Vision Models in the Vision-Language
Era"): timm's ``vitamin`` models, the image towers of CLIP models trained on DataComp-1B: vitamin_small_224,
vitamin_base_224, vitamin_large_224/256/336/384, vitamin_large2_224/256/336/384 and vitamin_xlarge_256/336/384
(their heads are the CLIP embedding projections, 384 to 1152 wide).

A hybrid: a convolutional stem (two 3x3 convolutions, the first of stride 2) and two stages of pre-norm MBConv
blocks (a channel LayerNorm, 1x1 expansion, strided 3x3 depthwise convolution and 1x1 projection, GELU between,
the shortcut pooled and widened where the block downsamples) bring the image to 1/8 of its size; a strided 3x3
convolution after a channel norm makes one token per 16x16 pixels, and a plain transformer follows (no class
token, learnt position embeddings except in the xlarge models, pre-norm blocks whose MLP is GeGLU with its own input
norm, average pooling and a final norm before the head). This is timm's ``VisionTransformer`` over its
``MbConvStages`` backbone: model names, module names, ``state_dict`` keys, defaults and (seeded) initialisation
follow timm's ``vitamin`` module, so its checkpoints load directly.
"""
from dataclasses import dataclass

import engine as torch
from engine import nn

from .._features import FeatureGetterNet
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._conv import create_conv2d, pair
from ._layers import create_act_layer, drop_path_module, trunc_normal_
from ._norm import LayerNorm, LayerNorm2d
from .maxxvit import Downsample2d, _init_conv, _norm_act_layer
from .vision_transformer import Attention, LayerScale, ViTApi, _init_module_tree
from .vision_transformer_hybrid import HybridEmbed

__all__ = []


@dataclass
class VitCfg:
    """The convolutional backbone's shape (the fields of timm's ``VitCfg`` that it reads): the widths of the two
    MBConv stages and of the tokens (``embed_dim``), the stages' block counts (``depths``, the third unused) and
    the stem's width."""

    embed_dim: tuple = (96, 192, 384, 768)
    depths: tuple = (2, 3, 5, 2)
    stem_width: int = 64


_conv_norm_act = _norm_act_layer("layernorm2d", "gelu", 1e-6)


class Stem(nn.Module):
    """A 3x3 stride-2 convolution, a channel LayerNorm with GELU and a 3x3 convolution, all ``out_chs`` wide, with
    biases; their weights are drawn again from N(0, 2 / fan_out) as soon as they are built (timm's stem does so
    itself, the model's init leaves it alone)."""

    def __init__(self, in_chs, out_chs):
        super().__init__()
        self.out_chs = out_chs
        self.conv1 = create_conv2d(in_chs, out_chs, 3, stride=2, bias=True)
        self.norm1 = _conv_norm_act(out_chs)
        self.conv2 = create_conv2d(out_chs, out_chs, 3, stride=1, bias=True)
        _init_conv(self)

    def forward(self, x):
        x = self.conv1(x)
        x = self.norm1(x)
        x = self.conv2(x)
        return x


class MbConvLNBlock(nn.Module):
    """A pre-norm MBConv block: a channel LayerNorm (``pre_norm``), a 1x1 expansion to four times the output width,
    GELU, a ``kernel_size`` depthwise convolution of ``stride``, GELU and a 1x1 projection to ``out_chs``, added to
    the shortcut: the input itself, a 1x1 convolution where the width changes, or a 3x3 stride-2 average pool (then
    a 1x1 convolution where the width changes) where the block downsamples. ``down`` and ``drop_path`` are timm's
    identity slots (MbConvStages never sets a drop rate)."""

    def __init__(self, in_chs, out_chs, stride=1, kernel_size=3, expand_ratio=4.0):
        super().__init__()
        self.stride, self.in_chs, self.out_chs = stride, in_chs, out_chs
        mid_chs = _make_divisible(out_chs * expand_ratio, 8)
        if stride == 2:
            self.shortcut = Downsample2d(in_chs, out_chs, pool_type="avg")
        elif in_chs != out_chs:
            self.shortcut = nn.Conv2d(in_chs, out_chs, 1)
        else:
            self.shortcut = nn.Identity()
        self.pre_norm = _conv_norm_act(in_chs, apply_act=False)
        self.down = nn.Identity()
        self.conv1_1x1 = create_conv2d(in_chs, mid_chs, 1, bias=True)
        self.act1 = create_act_layer("gelu", inplace=True)
        self.conv2_kxk = create_conv2d(mid_chs, mid_chs, kernel_size, stride=stride, groups=mid_chs, bias=True)
        self.act2 = create_act_layer("gelu", inplace=True)
        self.conv3_1x1 = create_conv2d(mid_chs, out_chs, 1, bias=True)
        self.drop_path = nn.Identity()

    def init_weights(self):
        """timm's init of the block's convolutions, run by the model's: N(0, 2 / fan_out), zero biases."""
        _init_conv(self)

    def forward(self, x):
        shortcut = self.shortcut(x)
        x = self.pre_norm(x)
        x = self.down(x)
        x = self.conv1_1x1(x)
        x = self.act1(x)
        x = self.conv2_kxk(x)
        x = self.act2(x)
        x = self.conv3_1x1(x)
        x = self.drop_path(x) + shortcut
        return x


class StridedConv(nn.Module):
    """The step from the convolutional stages to the tokens: a channel LayerNorm (``norm``, over the
    ``in_chans`` input channels) then a 3x3 stride-2 convolution to ``embed_dim`` channels (``proj``, registered
    first, as timm's)."""

    def __init__(self, in_chans, embed_dim, kernel_size=3, stride=2, padding=1):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size, stride=stride, padding=padding)
        self.norm = LayerNorm2d(in_chans)

    def forward(self, x):
        x = self.norm(x)
        x = self.proj(x)
        return x


class MbConvStages(nn.Module):
    """ViTamin's convolutional backbone (timm's ``MbConvStages``): the stem (``stem_width``), two stages of
    MBConv blocks (``embed_dim[0]`` and ``embed_dim[1]`` wide, ``depths[0]`` and ``depths[1]`` blocks, each stage
    opening with a stride-2 block) and the strided convolution to ``embed_dim[2]`` channels (``pool``): a map at
    1/16 of the image's size. ``num_features`` is its width, ``output_size`` its size for an image size."""

    def __init__(self, cfg, in_chans=3):
        super().__init__()
        self.stem = Stem(in_chans, cfg.stem_width)
        stages = []
        for s, dim in enumerate(cfg.embed_dim[:2]):
            stage_in_chs = cfg.embed_dim[s - 1] if s > 0 else cfg.stem_width
            stages.append(nn.Sequential(*[
                MbConvLNBlock(stage_in_chs if d == 0 else dim, dim, stride=2 if d == 0 else 1)
                for d in range(cfg.depths[s])]))
        self.stages = nn.Sequential(*stages)
        self.pool = StridedConv(cfg.embed_dim[1], cfg.embed_dim[2])
        self.num_features = cfg.embed_dim[2]

    def output_size(self, img_size):
        """The (height, width) of the map it makes of an ``img_size`` image: halved (rounding up) by the stem, by
        each stage and by ``pool``."""
        size = pair(img_size)
        for _ in range(len(self.stages) + 2):
            size = tuple((s - 1) // 2 + 1 for s in size)
        return size

    def forward(self, x):
        x = self.stem(x)
        x = self.stages(x)
        x = self.pool(x)
        return x


class GeGluMlp(nn.Module):
    """ViTamin's feed-forward block: a LayerNorm of its own (``norm``), then act(w0 x) * (w1 x) (a gated GELU
    unit, ``hidden_features`` wide), dropout, ``w2`` back to ``in_features``, dropout."""

    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, bias=True, drop=0.0):
        super().__init__()
        self.norm = LayerNorm(in_features)
        self.w0 = nn.Linear(in_features, hidden_features, bias=bias)
        self.act = act_layer()
        self.w1 = nn.Linear(in_features, hidden_features, bias=bias)
        self.drop1 = nn.Dropout(drop)
        self.w2 = nn.Linear(hidden_features, in_features, bias=bias)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.norm(x)
        x = self.act(self.w0(x)) * self.w1(x)
        x = self.drop1(x)
        x = self.w2(x)
        x = self.drop2(x)
        return x


class Block(nn.Module):
    """timm's pre-norm transformer block with a chosen MLP (``mlp_layer``, ``GeGluMlp`` here):
    x + drop_path(ls1(attn(norm1(x)))), then x + drop_path(ls2(mlp(norm2(x)))); ``init_values`` enables layer
    scale."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=True, qk_norm=False, proj_drop=0.0, attn_drop=0.0,
                 init_values=None, drop_path=0.0, act_layer=nn.GELU, mlp_layer=GeGluMlp):
        super().__init__()
        self.norm1 = LayerNorm(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm, attn_drop=attn_drop,
                              proj_drop=proj_drop, norm_layer=LayerNorm)
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = LayerNorm(dim)
        self.mlp = mlp_layer(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class ViTamin(ViTApi, nn.Module):
    """timm's ``VisionTransformer`` as ViTamin builds it: the ``MbConvStages`` backbone of ``embed_cfg`` (a
    ``VitCfg``, built first for ``in_chans`` channels, as timm's entrypoints build it) gives the tokens through a
    ``HybridEmbed`` without projection (one token per backbone position: ``patch_size`` 1), then optional class
    token and learnt position embeddings (``pos_embed='learn'``; 'none' or '' for none), ``depth`` blocks of
    ``mlp_layer`` MLPs, a final LayerNorm (after the pooling with ``fc_norm``, by default with 'avg', 'max' and
    'avgmax' pooling) and a linear head.

    ``global_pool``: 'token' (the class token), 'avg' / 'max' / 'avgmax' over the patch tokens, or '' (the whole
    sequence). Dropout: ``pos_drop_rate`` after the position embeddings (none without them, as timm's),
    ``attn_drop_rate``, ``proj_drop_rate``, ``drop_rate`` before the head; ``drop_path_rate`` is the last block's
    stochastic depth (rising linearly from 0). ``weight_init='skip'`` keeps the layers' default initialisation
    (the stem's drawn all the same). ``patch_drop`` and ``norm_pre`` are timm's identity slots.
    """

    default_cfg = {"first_conv": "patch_embed.backbone.stem.conv1", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    global_pools = ("", "token", "avg", "max", "avgmax")

    def __init__(self, embed_cfg, img_size=224, patch_size=1, in_chans=3, num_classes=1000, global_pool="token",
                 embed_dim=768, depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True, qk_norm=False,
                 init_values=None, class_token=True, pos_embed="learn", fc_norm=None, drop_rate=0.0,
                 pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, weight_init="",
                 act_layer=nn.GELU, mlp_layer=GeGluMlp):
        super().__init__()
        self._check_global_pool(global_pool, class_token)
        if weight_init not in ("", "skip"):
            raise ValueError(f"weight_init must be '' (timm's) or 'skip', got {weight_init!r}")
        if pos_embed not in ("", "none", "learn"):
            raise ValueError(f"pos_embed must be 'learn', 'none' or '', got {pos_embed!r}")
        if pair(patch_size) != (1, 1):
            raise ValueError(f"patch_size must be 1 (a token per backbone position, no projection), got {patch_size}")
        backbone = MbConvStages(embed_cfg, in_chans)
        if backbone.num_features != embed_dim:
            raise ValueError(f"the backbone's width ({backbone.num_features}) must be embed_dim ({embed_dim})")
        use_fc_norm = global_pool in ("avg", "max", "avgmax") if fc_norm is None else fc_norm
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1 if class_token else 0
        self.has_class_token = class_token

        self.patch_embed = HybridEmbed(backbone, nn.Identity(), img_size, patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        if pos_embed == "learn":
            embed_len = self.patch_embed.num_patches + self.num_prefix_tokens
            self.pos_embed = nn.Parameter(torch.zeros(1, embed_len, embed_dim))
        else:
            self.pos_embed = None
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.patch_drop = nn.Identity()
        self.norm_pre = nn.Identity()
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(*[
            Block(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, qk_norm=qk_norm,
                  proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, init_values=init_values,
                  drop_path=drop_path_rates[i], act_layer=act_layer, mlp_layer=mlp_layer)
            for i in range(depth)])
        reduction = self.patch_embed.feat_ratio()
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = nn.Identity() if use_fc_norm else LayerNorm(embed_dim)
        self.fc_norm = LayerNorm(embed_dim) if use_fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        if weight_init != "skip":
            self.init_weights()

    def init_weights(self):
        """timm's ViT scheme: truncated-normal position embeddings (std 0.02), a class token of N(0, 1e-12), then
        every submodule's in timm's order (truncated-normal Linear weights and zero biases; the MBConv blocks'
        convolutions drawn again from N(0, 2 / fan_out)); the stem keeps its own draw, the token convolution its
        default."""
        if self.pos_embed is not None:
            trunc_normal_(self.pos_embed, std=0.02)
        if self.cls_token is not None:
            nn.init.normal_(self.cls_token, std=1e-6)
        _init_module_tree(self)

    def _embed(self, x):
        """Images -> the token sequence the blocks take (and no block context): the backbone's tokens, the class
        token before them, position embeddings and their dropout (neither without position embeddings)."""
        x = self.patch_embed(x)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        if self.pos_embed is not None:
            x = self.pos_drop(x + self.pos_embed)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        return x, None

    @staticmethod
    def _block(block, index, x, context):
        """Block ``index`` on the token sequence ``x``."""
        return block(x)


_VITAMIN = dict(mlp_layer=GeGluMlp, mlp_ratio=2.0, class_token=False, global_pool="avg")


def _create_vitamin(variant, pretrained, progress, kwargs, **model_args):
    """A ViTamin entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``. Its
    ``num_classes`` is timm's default, the width of the CLIP embedding ViTamin's image tower was trained to give."""
    return build_model(ViTamin, variant, pretrained, progress=progress, **{**model_args, **kwargs})


def _cfg(embed_dim, stem_width):
    """The backbone of a ViTamin size: two MBConv stages of 2 and 4 blocks, ``embed_dim`` the stages' and the
    tokens' widths."""
    return VitCfg(embed_dim=embed_dim, depths=(2, 4, 1), stem_width=stem_width)


_SMALL = _cfg((64, 128, 384), 64)
_BASE = _cfg((128, 256, 768), 128)
_LARGE = _cfg((160, 320, 1024), 160)
_XLARGE = _cfg((192, 384, 1152), 192)


@register_model
def vitamin_small_224(pretrained=False, progress=True, **kwargs):
    """ViTamin-S at 224: stages 64 and 128 wide, 14 blocks of width 384 and 6 heads."""
    return _create_vitamin("vitamin_small_224", pretrained, progress, kwargs, embed_cfg=_SMALL, embed_dim=384,
                           depth=14, num_heads=6, num_classes=768, **_VITAMIN)


@register_model
def vitamin_base_224(pretrained=False, progress=True, **kwargs):
    """ViTamin-B at 224: stages 128 and 256 wide, 14 blocks of width 768 and 12 heads."""
    return _create_vitamin("vitamin_base_224", pretrained, progress, kwargs, embed_cfg=_BASE, embed_dim=768,
                           depth=14, num_heads=12, num_classes=768, **_VITAMIN)


@register_model
def vitamin_large_224(pretrained=False, progress=True, **kwargs):
    """ViTamin-L at 224: stages 160 and 320 wide, 31 blocks of width 1024 and 16 heads."""
    return _create_vitamin("vitamin_large_224", pretrained, progress, kwargs, embed_cfg=_LARGE, embed_dim=1024,
                           depth=31, num_heads=16, num_classes=768, **_VITAMIN)


@register_model
def vitamin_large_256(pretrained=False, progress=True, **kwargs):
    """ViTamin-L at 256: stages 160 and 320 wide, 31 blocks of width 1024 and 16 heads."""
    return _create_vitamin("vitamin_large_256", pretrained, progress, kwargs, embed_cfg=_LARGE, img_size=256,
                           embed_dim=1024, depth=31, num_heads=16, num_classes=768, **_VITAMIN)


@register_model
def vitamin_large_336(pretrained=False, progress=True, **kwargs):
    """ViTamin-L at 336: stages 160 and 320 wide, 31 blocks of width 1024 and 16 heads."""
    return _create_vitamin("vitamin_large_336", pretrained, progress, kwargs, embed_cfg=_LARGE, img_size=336,
                           embed_dim=1024, depth=31, num_heads=16, num_classes=768, **_VITAMIN)


@register_model
def vitamin_large_384(pretrained=False, progress=True, **kwargs):
    """ViTamin-L at 384: stages 160 and 320 wide, 31 blocks of width 1024 and 16 heads."""
    return _create_vitamin("vitamin_large_384", pretrained, progress, kwargs, embed_cfg=_LARGE, img_size=384,
                           embed_dim=1024, depth=31, num_heads=16, num_classes=768, **_VITAMIN)


@register_model
def vitamin_large2_224(pretrained=False, progress=True, **kwargs):
    """ViTamin-L2 at 224: ViTamin-L's shape (stages 160 and 320 wide, 31 blocks of width 1024, 16 heads)."""
    return _create_vitamin("vitamin_large2_224", pretrained, progress, kwargs, embed_cfg=_LARGE, embed_dim=1024,
                           depth=31, num_heads=16, num_classes=1024, **_VITAMIN)


@register_model
def vitamin_large2_256(pretrained=False, progress=True, **kwargs):
    """ViTamin-L2 at 256: ViTamin-L's shape (stages 160 and 320 wide, 31 blocks of width 1024, 16 heads)."""
    return _create_vitamin("vitamin_large2_256", pretrained, progress, kwargs, embed_cfg=_LARGE, img_size=256,
                           embed_dim=1024, depth=31, num_heads=16, num_classes=1024, **_VITAMIN)


@register_model
def vitamin_large2_336(pretrained=False, progress=True, **kwargs):
    """ViTamin-L2 at 336: ViTamin-L's shape (stages 160 and 320 wide, 31 blocks of width 1024, 16 heads)."""
    return _create_vitamin("vitamin_large2_336", pretrained, progress, kwargs, embed_cfg=_LARGE, img_size=336,
                           embed_dim=1024, depth=31, num_heads=16, num_classes=1024, **_VITAMIN)


@register_model
def vitamin_large2_384(pretrained=False, progress=True, **kwargs):
    """ViTamin-L2 at 384: ViTamin-L's shape (stages 160 and 320 wide, 31 blocks of width 1024, 16 heads)."""
    return _create_vitamin("vitamin_large2_384", pretrained, progress, kwargs, embed_cfg=_LARGE, img_size=384,
                           embed_dim=1024, depth=31, num_heads=16, num_classes=1024, **_VITAMIN)


@register_model
def vitamin_xlarge_256(pretrained=False, progress=True, **kwargs):
    """ViTamin-XL at 256: stages 192 and 384 wide, 32 blocks of width 1152, 16 heads, no position embeddings."""
    return _create_vitamin("vitamin_xlarge_256", pretrained, progress, kwargs, embed_cfg=_XLARGE, img_size=256,
                           embed_dim=1152, depth=32, num_heads=16, pos_embed="none", num_classes=1152, **_VITAMIN)


@register_model
def vitamin_xlarge_336(pretrained=False, progress=True, **kwargs):
    """ViTamin-XL at 336: stages 192 and 384 wide, 32 blocks of width 1152, 16 heads, no position embeddings."""
    return _create_vitamin("vitamin_xlarge_336", pretrained, progress, kwargs, embed_cfg=_XLARGE, img_size=336,
                           embed_dim=1152, depth=32, num_heads=16, pos_embed="none", num_classes=1152, **_VITAMIN)


@register_model
def vitamin_xlarge_384(pretrained=False, progress=True, **kwargs):
    """ViTamin-XL at 384: stages 192 and 384 wide, 32 blocks of width 1152, 16 heads, no position embeddings."""
    return _create_vitamin("vitamin_xlarge_384", pretrained, progress, kwargs, embed_cfg=_XLARGE, img_size=384,
                           embed_dim=1152, depth=32, num_heads=16, pos_embed="none", num_classes=1152, **_VITAMIN)
