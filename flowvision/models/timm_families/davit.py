"""DaViT (Ding, Xiao, Codella, Luo, Wang and Yuan 2022, "DaViT: Dual Attention Vision Transformers"): davit_tiny,
davit_small and davit_base, and timm's untrained davit_large, davit_huge and davit_giant (no published weights); and
the image encoders of Florence-2 (Xiao et al. 2024, "Florence-2: Advancing a Unified Representation for a Variety of
Vision Tasks"), davit_base_fl and davit_huge_fl.

A four-stage hierarchical transformer that runs at any image size. A padded 7x7 stride-4 convolution embeds the
image; each later stage starts by halving the map with a normalised 2x2 stride-2 convolution. A stage repeats a dual
block: a spatial block, whose tokens attend within non-overlapping windows (the map padded to whole windows), then a
channel block, whose channels attend to each other across the whole image (each head's channels form a
head_dim x head_dim attention map over all tokens), so both cost time linear in the number of pixels. Before its
attention and before its MLP, every block adds a depthwise 3x3 convolution of its input (a convolutional position
encoding). The head pools, normalises and classifies. Florence-2's towers (``_fl``) use 12x12 windows, 3x3
downsamplings, a channel attention whose queries attend to the keys (scaled by the token count) and named blocks;
their weights are encoders without a classifier. Model names, module names, ``state_dict`` keys, defaults and
(truncated-normal) initialisation follow timm's ``davit`` module, so its checkpoints load directly.
"""
from collections import OrderedDict
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet
from .._helpers import build_model
from ..registry import register_model
from ._layers import ClassifierHead, Mlp, drop_path_module, init_linear_layers, pair
from .convnext import NormMlpClassifierHead, NormPreStagesApi
from .maxxvit import _norm_layer
from .swin_transformer import window_partition, window_reverse

__all__ = []


class ConvPosEnc(nn.Module):
    """Convolutional position encoding: the (N, C, H, W) map plus its depthwise ``k`` x ``k`` convolution
    (``proj``), passed through GELU first when ``act`` (``act``, else an identity)."""

    def __init__(self, dim, k=3, act=False):
        super().__init__()
        self.proj = nn.Conv2d(dim, dim, kernel_size=k, stride=1, padding=k // 2, groups=dim)
        self.act = nn.GELU() if act else nn.Identity()

    def forward(self, x):
        return x + self.act(self.proj(x))


class Stem(nn.Module):
    """The patch embedding: the image padded on the right and bottom to a multiple of 4, a 7x7 stride-4
    convolution (``conv``) and a channel norm (``norm``), so any image size works."""

    def __init__(self, in_chs=3, out_chs=96, stride=4, norm_layer=None):
        super().__init__()
        stride = pair(stride)
        if stride[0] != 4:
            raise ValueError(f"the DaViT stem only supports stride 4, got {stride}")
        self.stride = stride
        self.in_chs = in_chs
        self.out_chs = out_chs
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=7, stride=stride, padding=3)
        self.norm = norm_layer(out_chs)

    def forward(self, x):
        height, width = x.shape[-2:]
        pad_right = (self.stride[1] - width % self.stride[1]) % self.stride[1]
        pad_bottom = (self.stride[0] - height % self.stride[0]) % self.stride[0]
        x = F.pad(x, (0, pad_right, 0, pad_bottom))
        x = self.conv(x)
        x = self.norm(x)
        return x


class Downsample(nn.Module):
    """A stage's downsampling: a channel norm (``norm``), then a stride-2 convolution to ``out_chs`` (``conv``). An
    even kernel is unpadded, the map first padded on the right and bottom to a multiple of it; an odd one is padded
    by half its size."""

    def __init__(self, in_chs, out_chs, kernel_size=3, norm_layer=None):
        super().__init__()
        self.in_chs = in_chs
        self.out_chs = out_chs
        self.norm = norm_layer(in_chs)
        self.even_k = kernel_size % 2 == 0
        padding = 0 if self.even_k else kernel_size // 2
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=kernel_size, stride=2, padding=padding)

    def forward(self, x):
        x = self.norm(x)
        if self.even_k:
            height, width = x.shape[-2:]
            kernel_h, kernel_w = self.conv.kernel_size
            x = F.pad(x, (0, (kernel_w - width % kernel_w) % kernel_w, 0, (kernel_h - height % kernel_h) % kernel_h))
        x = self.conv(x)
        return x


def _split_qkv(qkv_layer, x, num_heads):
    """(N, L, C) tokens -> queries, keys and values of ``num_heads`` heads, each (N, heads, L, C / heads)."""
    batch, tokens, channels = x.shape
    qkv = qkv_layer(x).reshape(batch, tokens, 3, num_heads, channels // num_heads).permute(2, 0, 3, 1, 4)
    return qkv.unbind(0)


def _merge_heads(x):
    """(N, heads, L, head_dim) -> (N, L, heads * head_dim)."""
    batch, heads, tokens, head_dim = x.shape
    return x.transpose(1, 2).reshape(batch, tokens, heads * head_dim)


class ChannelAttention(nn.Module):
    """DaViT's channel attention over (N, L, C) tokens: per head, the keys (scaled by head_dim^-0.5) and the values
    give a head_dim x head_dim attention map over the channels, which mixes the queries' channels; then ``proj``."""

    def __init__(self, dim, num_heads=8, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = _split_qkv(self.qkv, x, self.num_heads)
        k = k * self.scale
        attn = (k.transpose(-1, -2) @ v).softmax(dim=-1)
        x = (attn @ q.transpose(-1, -2)).transpose(-1, -2)
        return self.proj(_merge_heads(x))


class ChannelAttentionV2(nn.Module):
    """Florence-2's channel attention (``channel_attn_v2``): per head (``groups``), the queries' channels attend to
    the keys' over all tokens, the queries scaled by tokens^-0.5 with ``dynamic_scale`` (else head_dim^-0.5), and the
    map mixes the values' channels; then ``proj``."""

    def __init__(self, dim, num_heads=8, qkv_bias=True, dynamic_scale=True):
        super().__init__()
        self.groups = num_heads
        self.head_dim = dim // num_heads
        self.dynamic_scale = dynamic_scale
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = _split_qkv(self.qkv, x, self.groups)
        q = q * (x.shape[1] ** -0.5 if self.dynamic_scale else self.head_dim ** -0.5)
        attn = (q.transpose(-1, -2) @ k).softmax(dim=-1)
        x = (attn @ v.transpose(-1, -2)).transpose(-1, -2)
        return self.proj(_merge_heads(x))


class WindowAttention(nn.Module):
    """Plain multi-head self-attention within each window's (windows, area, C) tokens: one ``qkv`` projection,
    softmax attention (``softmax``) with keys scaled by head_dim^-0.5, ``proj``; no position bias (the blocks'
    convolutional position encodings stand in for it)."""

    def __init__(self, dim, window_size, num_heads, qkv_bias=True):
        super().__init__()
        self.dim = dim
        self.window_size = window_size
        self.num_heads = num_heads
        head_dim = dim // num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.proj = nn.Linear(dim, dim)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x):
        q, k, v = _split_qkv(self.qkv, x, self.num_heads)
        attn = self.softmax((q * self.scale) @ k.transpose(-2, -1))
        return self.proj(_merge_heads(attn @ v))


class DualAttentionBlock(nn.Module):
    """What DaViT's spatial and channel blocks share, on (N, C, H, W) maps: a position encoding (``cpe1``), then
    on the tokens a residual pre-norm attention (``norm1``, ``attn``, stochastic depth ``drop_path1``), a second
    position encoding (``cpe2``) and, with ``ffn``, a residual pre-norm MLP (``norm2``, ``mlp``, ``drop_path2``).
    Subclasses give the attention (``_attend``)."""

    def _add_layers(self, dim, attn_layer, mlp_ratio, drop_path, act_layer, norm_layer, ffn, cpe_act):
        """Register the block's modules in timm's order (which is also the order their default initialisations
        draw in), the attention built by calling ``attn_layer``."""
        self.cpe1 = ConvPosEnc(dim, k=3, act=cpe_act)
        self.norm1 = norm_layer(dim)
        self.attn = attn_layer()
        self.drop_path1 = drop_path_module(drop_path)
        self.cpe2 = ConvPosEnc(dim, k=3, act=cpe_act)
        if ffn:
            self.norm2 = norm_layer(dim)
            self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer)
            self.drop_path2 = drop_path_module(drop_path)
        else:
            self.norm2 = None
            self.mlp = None
            self.drop_path2 = None

    def _attend(self, x, height, width):
        """The attention branch on normalised (N, H * W, C) tokens."""
        raise NotImplementedError

    def forward(self, x):
        batch, channels, height, width = x.shape
        x = self.cpe1(x).flatten(2).transpose(1, 2)
        x = x + self.drop_path1(self._attend(self.norm1(x), height, width))
        x = self.cpe2(x.transpose(1, 2).reshape(batch, channels, height, width))
        if self.mlp is not None:
            x = x.flatten(2).transpose(1, 2)
            x = x + self.drop_path2(self.mlp(self.norm2(x)))
            x = x.transpose(1, 2).reshape(batch, channels, height, width)
        return x


class SpatialBlock(DualAttentionBlock):
    """The spatial half of a dual block: window attention (``WindowAttention``) over ``window_size`` windows, the
    map padded on the right and bottom to whole windows and cropped back after."""

    def __init__(self, dim, num_heads, window_size=7, mlp_ratio=4.0, qkv_bias=True, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm, ffn=True, cpe_act=False):
        super().__init__()
        self.dim = dim
        self.ffn = ffn
        self.num_heads = num_heads
        self.window_size = pair(window_size)
        self.mlp_ratio = mlp_ratio
        attn_layer = partial(WindowAttention, dim, self.window_size, num_heads=num_heads, qkv_bias=qkv_bias)
        self._add_layers(dim, attn_layer, mlp_ratio, drop_path, act_layer, norm_layer, ffn, cpe_act)

    def _attend(self, x, height, width):
        batch, _, channels = x.shape
        win_h, win_w = self.window_size
        x = x.reshape(batch, height, width, channels)
        x = F.pad(x, (0, 0, 0, (win_w - width % win_w) % win_w, 0, (win_h - height % win_h) % win_h))
        padded_h, padded_w = x.shape[1:3]
        windows = window_partition(x, self.window_size).reshape(-1, win_h * win_w, channels)
        windows = self.attn(windows).reshape(-1, win_h, win_w, channels)
        x = window_reverse(windows, self.window_size, padded_h, padded_w)
        return x[:, :height, :width, :].reshape(batch, height * width, channels)


class ChannelBlock(DualAttentionBlock):
    """The channel half of a dual block: channel attention over all tokens (``ChannelAttentionV2`` with ``v2``,
    else ``ChannelAttention``)."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, drop_path=0.0, act_layer=nn.GELU,
                 norm_layer=nn.LayerNorm, ffn=True, cpe_act=False, v2=False):
        super().__init__()
        self.ffn = ffn
        attn_class = ChannelAttentionV2 if v2 else ChannelAttention
        attn_layer = partial(attn_class, dim, num_heads=num_heads, qkv_bias=qkv_bias)
        self._add_layers(dim, attn_layer, mlp_ratio, drop_path, act_layer, norm_layer, ffn, cpe_act)

    def _attend(self, x, height, width):
        return self.attn(x)


class DaVitStage(nn.Module):
    """A stage: with ``downsample`` a ``Downsample`` to ``out_chs`` (else an identity), then ``depth`` dual blocks
    (``blocks``), each a Sequential of one block per ``attn_types`` entry ('spatial', 'channel'), indexed or, with
    ``named_blocks``, named ``spatial_block`` / ``channel_block``. Block ``i``'s stochastic depth is
    ``drop_path_rates[i]``."""

    def __init__(self, in_chs, out_chs, depth=1, downsample=True, attn_types=("spatial", "channel"), num_heads=3,
                 window_size=7, mlp_ratio=4.0, qkv_bias=True, drop_path_rates=(0, 0), norm_layer=None,
                 norm_layer_cl=nn.LayerNorm, ffn=True, cpe_act=False, down_kernel_size=2, named_blocks=False,
                 channel_attn_v2=False):
        super().__init__()
        if downsample:
            self.downsample = Downsample(in_chs, out_chs, kernel_size=down_kernel_size, norm_layer=norm_layer)
        else:
            self.downsample = nn.Identity()
        common = dict(dim=out_chs, num_heads=num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                      norm_layer=norm_layer_cl, ffn=ffn, cpe_act=cpe_act)
        blocks = []
        for block_idx in range(depth):
            dual_block = []
            for attn_type in attn_types:
                if attn_type == "spatial":
                    block = SpatialBlock(window_size=window_size, drop_path=drop_path_rates[block_idx], **common)
                elif attn_type == "channel":
                    block = ChannelBlock(v2=channel_attn_v2, drop_path=drop_path_rates[block_idx], **common)
                else:
                    raise ValueError(f"unknown attention type '{attn_type}': expected 'spatial' or 'channel'")
                dual_block.append((f"{attn_type}_block", block))
            if named_blocks:
                blocks.append(nn.Sequential(OrderedDict(dual_block)))
            else:
                blocks.append(nn.Sequential(*[block for _, block in dual_block]))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class DaVit(NormPreStagesApi, nn.Module):
    """DaViT: the ``Stem``, stages of ``depths`` dual blocks at widths ``embed_dims`` with ``num_heads`` heads
    (strides 4, 8, 16, 32), and a head that pools, normalises and classifies (``NormMlpClassifierHead``); with
    ``head_norm_first`` the map is normalised first (``norm_pre``) and the head only pools and classifies.

    ``window_size``: the spatial blocks' windows; ``mlp_ratio``: the MLPs' width; ``attn_types``: the blocks of a
    dual block, in order; ``ffn=False`` leaves the MLPs out; ``cpe_act`` puts GELU in the position encodings;
    ``down_kernel_size``: the downsamplings' kernel; ``channel_attn_v2`` and ``named_blocks``: Florence-2's channel
    attention and block names. ``norm_layer`` (the (N, C, H, W) maps') and ``norm_layer_cl`` (the tokens') are
    timm's names, with epsilon ``norm_eps``. ``drop_path_rate`` is the stochastic depth of the last dual block,
    rising linearly from 0 at the first; ``drop_rate`` the dropout before the classifier. Linear layers start as
    truncated normals (std 0.02) with zero biases, the convolutions with PyTorch's default.
    """

    default_cfg = {"first_conv": "stem.conv", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, depths=(1, 1, 3, 1), embed_dims=(96, 192, 384, 768), num_heads=(3, 6, 12, 24),
                 window_size=7, mlp_ratio=4, qkv_bias=True, norm_layer="layernorm2d", norm_layer_cl="layernorm",
                 norm_eps=1e-5, attn_types=("spatial", "channel"), ffn=True, cpe_act=False, down_kernel_size=2,
                 channel_attn_v2=False, named_blocks=False, drop_rate=0.0, drop_path_rate=0.0, num_classes=1000,
                 global_pool="avg", head_norm_first=False):
        super().__init__()
        num_stages = len(embed_dims)
        if not num_stages == len(num_heads) == len(depths):
            raise ValueError(f"embed_dims, num_heads and depths need one value per stage, got {embed_dims}, "
                             f"{num_heads} and {depths}")
        norm_layer = _norm_layer(norm_layer, norm_eps)
        norm_layer_cl = _norm_layer(norm_layer_cl, norm_eps)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.num_features = embed_dims[-1]
        self.drop_rate = drop_rate
        self.feature_info = []

        self.stem = Stem(in_chans, embed_dims[0], norm_layer=norm_layer)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        stages = []
        in_chs = embed_dims[0]
        for i, out_chs in enumerate(embed_dims):
            first = sum(depths[:i])
            stages.append(DaVitStage(
                in_chs, out_chs, depth=depths[i], downsample=i > 0, attn_types=attn_types, num_heads=num_heads[i],
                window_size=window_size, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                drop_path_rates=rates[first:first + depths[i]], norm_layer=norm_layer, norm_layer_cl=norm_layer_cl,
                ffn=ffn, cpe_act=cpe_act, down_kernel_size=down_kernel_size, named_blocks=named_blocks,
                channel_attn_v2=channel_attn_v2))
            in_chs = out_chs
            self.feature_info.append(dict(num_chs=out_chs, reduction=2 ** (i + 2), module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)

        if head_norm_first:
            self.norm_pre = norm_layer(self.num_features)
            self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        else:
            self.norm_pre = nn.Identity()
            self.head = NormMlpClassifierHead(self.num_features, num_classes, pool_type=global_pool,
                                              drop_rate=drop_rate, norm_layer=norm_layer)
        self.head_hidden_size = self.head.num_features
        init_linear_layers(self)


def _create_davit(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's taps (every stage unless ``out_indices`` says
    otherwise) under its flattened names (``stages_0``...)."""
    return build_model(DaVit, variant, pretrained, progress=progress, **kwargs)


@register_model
def davit_tiny(pretrained=False, progress=True, **kwargs):
    """DaViT-Tiny: depths (1, 1, 3, 1), widths 96-768, heads 3-24."""
    config = dict(depths=(1, 1, 3, 1), embed_dims=(96, 192, 384, 768), num_heads=(3, 6, 12, 24))
    return _create_davit("davit_tiny", pretrained, progress, **dict(config, **kwargs))


@register_model
def davit_small(pretrained=False, progress=True, **kwargs):
    """DaViT-Small: depths (1, 1, 9, 1), widths 96-768, heads 3-24."""
    config = dict(depths=(1, 1, 9, 1), embed_dims=(96, 192, 384, 768), num_heads=(3, 6, 12, 24))
    return _create_davit("davit_small", pretrained, progress, **dict(config, **kwargs))


@register_model
def davit_base(pretrained=False, progress=True, **kwargs):
    """DaViT-Base: depths (1, 1, 9, 1), widths 128-1024, heads 4-32."""
    config = dict(depths=(1, 1, 9, 1), embed_dims=(128, 256, 512, 1024), num_heads=(4, 8, 16, 32))
    return _create_davit("davit_base", pretrained, progress, **dict(config, **kwargs))


@register_model
def davit_large(pretrained=False, progress=True, **kwargs):
    """DaViT-Large (no published weights): depths (1, 1, 9, 1), widths 192-1536, heads 6-48."""
    config = dict(depths=(1, 1, 9, 1), embed_dims=(192, 384, 768, 1536), num_heads=(6, 12, 24, 48))
    return _create_davit("davit_large", pretrained, progress, **dict(config, **kwargs))


@register_model
def davit_huge(pretrained=False, progress=True, **kwargs):
    """DaViT-Huge (no published weights): depths (1, 1, 9, 1), widths 256-2048, heads 8-64."""
    config = dict(depths=(1, 1, 9, 1), embed_dims=(256, 512, 1024, 2048), num_heads=(8, 16, 32, 64))
    return _create_davit("davit_huge", pretrained, progress, **dict(config, **kwargs))


@register_model
def davit_giant(pretrained=False, progress=True, **kwargs):
    """DaViT-Giant (no published weights): depths (1, 1, 12, 3), widths 384-3072, heads 12-96."""
    config = dict(depths=(1, 1, 12, 3), embed_dims=(384, 768, 1536, 3072), num_heads=(12, 24, 48, 96))
    return _create_davit("davit_giant", pretrained, progress, **dict(config, **kwargs))


@register_model
def davit_base_fl(pretrained=False, progress=True, **kwargs):
    """Florence-2-base's DaViT: DaViT-Base with 12x12 windows, 3x3 downsamplings, v2 channel attention, no head."""
    config = dict(depths=(1, 1, 9, 1), embed_dims=(128, 256, 512, 1024), num_heads=(4, 8, 16, 32), window_size=12,
                  down_kernel_size=3, channel_attn_v2=True, named_blocks=True, num_classes=0)
    return _create_davit("davit_base_fl", pretrained, progress, **dict(config, **kwargs))


@register_model
def davit_huge_fl(pretrained=False, progress=True, **kwargs):
    """Florence-2-large's DaViT: widths 256-2048, heads 8-64, 12x12 windows, 3x3 downsamplings, v2 channel attention,
    no head."""
    config = dict(depths=(1, 1, 9, 1), embed_dims=(256, 512, 1024, 2048), num_heads=(8, 16, 32, 64), window_size=12,
                  down_kernel_size=3, channel_attn_v2=True, named_blocks=True, num_classes=0)
    return _create_davit("davit_huge_fl", pretrained, progress, **dict(config, **kwargs))
