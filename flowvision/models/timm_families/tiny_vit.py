"""TinyViT (Wu et al. 2022, "TinyViT: Fast Pretraining Distillation for Small Vision Transformers"):
tiny_vit_5m_224, tiny_vit_11m_224, tiny_vit_21m_224, tiny_vit_21m_384 and tiny_vit_21m_512.

A four-stage hierarchical network: a convolutional stem (two 3x3 stride-2 convolutions), a first stage of
MobileNetV2-style inverted residual blocks, then three stages of transformer blocks, each opened by a convolutional
patch merging that halves the resolution. A transformer block attends within non-overlapping windows (the map
padded to whole windows), with a learnt bias per head for every offset between two positions of a window; a
depthwise 3x3 convolution between the attention and the MLP mixes neighbouring windows. Every convolution is
followed by BatchNorm (``ConvNorm``, which ``fuse()`` folds into one convolution). The head pools, normalises and
classifies. Model names, module names, ``state_dict`` keys, initialisation and the model API follow timm's
``tiny_vit`` module, so its checkpoints load directly; in eval mode the attention biases are gathered once and
cached, as timm does.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._attention import CachedBiasAttention
from ._layers import ClassifierHeadApi, drop_path_module, init_linear_layers
from ._norm import LayerNorm2d
from ._reparam import ConvNorm
from .convnext import NormMlpClassifierHead

__all__ = []


class PatchEmbed(nn.Module):
    """The stem: two 3x3 stride-2 ``ConvNorm`` layers (to ``out_chs / 2``, then ``out_chs`` channels) with the
    activation between them, a 4x smaller map."""

    def __init__(self, in_chs, out_chs, act_layer):
        super().__init__()
        self.stride = 4
        self.conv1 = ConvNorm(in_chs, out_chs // 2, 3, 2, 1)
        self.act = act_layer()
        self.conv2 = ConvNorm(out_chs // 2, out_chs, 3, 2, 1)

    def forward(self, x):
        x = self.conv1(x)
        x = self.act(x)
        x = self.conv2(x)
        return x


class MBConv(nn.Module):
    """The inverted residual block of the first stage: 1x1 expansion by ``expand_ratio``, 3x3 depthwise
    convolution, 1x1 projection whose BatchNorm scale starts at 0 (the block starts as the identity), each a
    ``ConvNorm``; activations after the first two, drop-path, the shortcut added, then the last activation."""

    def __init__(self, in_chs, out_chs, expand_ratio, act_layer, drop_path):
        super().__init__()
        mid_chs = int(in_chs * expand_ratio)
        self.conv1 = ConvNorm(in_chs, mid_chs, ks=1)
        self.act1 = act_layer()
        self.conv2 = ConvNorm(mid_chs, mid_chs, ks=3, stride=1, pad=1, groups=mid_chs)
        self.act2 = act_layer()
        self.conv3 = ConvNorm(mid_chs, out_chs, ks=1, bn_weight_init=0.0)
        self.act3 = act_layer()
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.act2(x)
        x = self.conv3(x)
        x = self.drop_path(x)
        x = x + shortcut
        x = self.act3(x)
        return x


class PatchMerging(nn.Module):
    """The downsampling that opens a transformer stage: 1x1 ``ConvNorm`` to ``out_dim``, 3x3 stride-2 depthwise
    ``ConvNorm``, 1x1 ``ConvNorm``, with the activation after the first two."""

    def __init__(self, dim, out_dim, act_layer):
        super().__init__()
        self.conv1 = ConvNorm(dim, out_dim, 1, 1, 0)
        self.act1 = act_layer()
        self.conv2 = ConvNorm(out_dim, out_dim, 3, 2, 1, groups=out_dim)
        self.act2 = act_layer()
        self.conv3 = ConvNorm(out_dim, out_dim, 1, 1, 0)

    def forward(self, x):
        x = self.conv1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.act2(x)
        x = self.conv3(x)
        return x


class ConvLayer(nn.Module):
    """The first stage: ``depth`` ``MBConv`` blocks of width ``dim`` (``blocks``), with per-block drop-path
    rates (a list) or one rate."""

    def __init__(self, dim, depth, act_layer, drop_path=0.0, conv_expand_ratio=4.0):
        super().__init__()
        self.dim = dim
        self.depth = depth
        rates = drop_path if isinstance(drop_path, list) else [drop_path] * depth
        self.blocks = nn.Sequential(*[MBConv(dim, dim, conv_expand_ratio, act_layer, rates[i])
                                      for i in range(depth)])

    def forward(self, x):
        return self.blocks(x)


class NormMlp(nn.Module):
    """The transformer block's MLP with its pre-norm inside: LayerNorm (``norm``), ``fc1``, activation, dropout,
    ``fc2``, dropout."""

    def __init__(self, in_features, hidden_features=None, out_features=None, norm_layer=nn.LayerNorm,
                 act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.norm = norm_layer(in_features)
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.norm(x)
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class Attention(CachedBiasAttention):
    """Multi-head self-attention over the tokens of one window, with its own pre-norm (``norm``): ``qkv`` gives
    each head a query and key of ``key_dim`` channels and a value of ``attn_ratio * key_dim``; every logit gets the
    head's learnt bias for the offset between the two positions of the ``resolution`` window (``attention_biases``,
    gathered by the non-persistent ``attention_bias_idxs``); ``proj`` maps the heads back to ``dim``.

    In eval mode the gathered biases are computed once and cached (timm's ``attention_bias_cache``, keyed by
    device); switching modes or moving the module clears the cache. As in timm, weights loaded after an eval-mode
    forward are not seen by the cache until it is cleared (``train()`` / ``eval()``).
    """

    def __init__(self, dim, key_dim, num_heads=8, attn_ratio=4, resolution=(14, 14)):
        super().__init__()
        if not (isinstance(resolution, tuple) and len(resolution) == 2):
            raise ValueError(f"resolution must be a (height, width) tuple, got {resolution!r}")
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.val_dim = int(attn_ratio * key_dim)
        self.out_dim = self.val_dim * num_heads
        self.attn_ratio = attn_ratio
        self.resolution = resolution
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, num_heads * (self.val_dim + 2 * key_dim))
        self.proj = nn.Linear(self.out_dim, dim)
        self._add_biases(num_heads, resolution, persistent=False)

    def forward(self, x):
        attn_bias = self.get_attention_biases(x.device)
        batch, tokens, _ = x.shape
        x = self.norm(x)
        qkv = self.qkv(x)
        q, k, v = qkv.view(batch, tokens, self.num_heads, -1).split([self.key_dim, self.key_dim, self.val_dim], dim=3)
        q = q.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 1, 3)
        v = v.permute(0, 2, 1, 3)
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias)
        x = x.transpose(1, 2).reshape(batch, tokens, self.out_dim)
        x = self.proj(x)
        return x


class TinyVitBlock(nn.Module):
    """TinyViT's transformer block on a channels-last (N, H, W, C) map: window attention (``attn``, windows of
    ``window_size``; the map padded with zeros at the bottom and right to whole windows, the padding cut off after)
    on a residual branch, a depthwise ``local_conv_size`` ``ConvNorm`` (``local_conv``) with no shortcut, then the
    pre-norm MLP (``mlp``) on a residual branch. ``drop_path`` drops each residual branch per sample in training."""

    def __init__(self, dim, num_heads, window_size=7, mlp_ratio=4.0, drop=0.0, drop_path=0.0, local_conv_size=3,
                 act_layer=nn.GELU):
        super().__init__()
        if window_size <= 0:
            raise ValueError(f"window_size must be positive, got {window_size}")
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) must be divisible by num_heads ({num_heads})")
        self.dim = dim
        self.num_heads = num_heads
        self.window_size = window_size
        self.mlp_ratio = mlp_ratio
        head_dim = dim // num_heads
        self.attn = Attention(dim, head_dim, num_heads, attn_ratio=1, resolution=(window_size, window_size))
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = NormMlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=drop)
        self.drop_path2 = drop_path_module(drop_path)
        self.local_conv = ConvNorm(dim, dim, ks=local_conv_size, stride=1, pad=local_conv_size // 2, groups=dim)

    def _window_attention(self, x):
        """Attention within each window of the (N, H, W, C) map, padded to whole windows and cut back."""
        batch, height, width, channels = x.shape
        window = self.window_size
        if height == window and width == window:
            x = self.attn(x.reshape(batch, height * width, channels))
            return x.view(batch, height, width, channels)
        pad_b = (window - height % window) % window
        pad_r = (window - width % window) % window
        if pad_b or pad_r:
            x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        padded_h = height + pad_b
        padded_w = width + pad_r
        rows = padded_h // window
        cols = padded_w // window
        x = x.view(batch, rows, window, cols, window, channels).transpose(2, 3)
        x = self.attn(x.reshape(batch * rows * cols, window * window, channels))
        x = x.view(batch, rows, cols, window, window, channels).transpose(2, 3).reshape(batch, padded_h, padded_w,
                                                                                       channels)
        if pad_b or pad_r:
            x = x[:, :height, :width].contiguous()
        return x

    def forward(self, x):
        batch, height, width, channels = x.shape
        x = x + self.drop_path1(self._window_attention(x))
        x = x.permute(0, 3, 1, 2)
        x = self.local_conv(x)
        x = x.reshape(batch, channels, height * width).transpose(1, 2)
        x = x + self.drop_path2(self.mlp(x))
        return x.view(batch, height, width, channels)

    def extra_repr(self):
        return f"dim={self.dim}, num_heads={self.num_heads}, window_size={self.window_size}, mlp_ratio={self.mlp_ratio}"


class TinyVitStage(nn.Module):
    """A transformer stage: ``PatchMerging`` from ``dim`` to ``out_dim`` channels at half the resolution
    (``downsample``; an identity when ``downsample`` is None, which needs ``dim == out_dim``), then ``depth``
    ``TinyVitBlock`` layers on the channels-last map; takes and returns (N, C, H, W) maps."""

    def __init__(self, dim, out_dim, depth, num_heads, window_size, mlp_ratio=4.0, drop=0.0, drop_path=0.0,
                 downsample=None, local_conv_size=3, act_layer=nn.GELU):
        super().__init__()
        self.depth = depth
        self.out_dim = out_dim
        if downsample is not None:
            self.downsample = downsample(dim=dim, out_dim=out_dim, act_layer=act_layer)
        elif dim != out_dim:
            raise ValueError(f"a stage without downsampling keeps its width: {dim} != {out_dim}")
        else:
            self.downsample = nn.Identity()
        rates = drop_path if isinstance(drop_path, list) else [drop_path] * depth
        self.blocks = nn.Sequential(*[
            TinyVitBlock(out_dim, num_heads, window_size=window_size, mlp_ratio=mlp_ratio, drop=drop,
                         drop_path=rates[i], local_conv_size=local_conv_size, act_layer=act_layer)
            for i in range(depth)])

    def forward(self, x):
        x = self.downsample(x)
        x = x.permute(0, 2, 3, 1)
        x = self.blocks(x)
        x = x.permute(0, 3, 1, 2)
        return x

    def extra_repr(self):
        return f"dim={self.out_dim}, depth={self.depth}"


class TinyVit(ClassifierHeadApi, nn.Module):
    """TinyViT: the stem (``patch_embed``, stride 4), a ``ConvLayer`` of ``depths[0]`` MBConv blocks, then
    transformer stages (``TinyVitStage``) of widths ``embed_dims[1:]``, ``num_heads`` heads and windows of
    ``window_sizes``, each at half the previous resolution; the head (``head``: pooling, LayerNorm eps 1e-5,
    dropout ``drop_rate``, the classifier ``fc``).

    ``drop_path_rate`` rises linearly from 0 at the first block to this value at the last; ``proj_drop_rate`` is
    the MLPs' dropout. Linear layers start truncated-normal (std 0.02) with zero biases.
    """

    default_cfg = {"first_conv": "patch_embed.conv1.conv", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", embed_dims=(96, 192, 384, 768),
                 depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), window_sizes=(7, 7, 14, 7), mlp_ratio=4.0,
                 drop_rate=0.0, proj_drop_rate=0.0, drop_path_rate=0.1, mbconv_expand_ratio=4.0, local_conv_size=3,
                 act_layer=nn.GELU):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.depths = depths
        self.num_stages = len(depths)
        self.mlp_ratio = mlp_ratio
        self.patch_embed = PatchEmbed(in_chans, embed_dims[0], act_layer)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        self.stages = nn.Sequential()
        stride = self.patch_embed.stride
        prev_dim = embed_dims[0]
        self.feature_info = []
        for stage_idx in range(self.num_stages):
            stage_rates = rates[sum(depths[:stage_idx]):sum(depths[:stage_idx + 1])]
            if stage_idx == 0:
                stage = ConvLayer(prev_dim, depths[0], act_layer, drop_path=stage_rates,
                                  conv_expand_ratio=mbconv_expand_ratio)
            else:
                out_dim = embed_dims[stage_idx]
                stage = TinyVitStage(embed_dims[stage_idx - 1], out_dim, depths[stage_idx], num_heads[stage_idx],
                                     window_sizes[stage_idx], mlp_ratio=mlp_ratio, drop=proj_drop_rate,
                                     drop_path=stage_rates, downsample=PatchMerging,
                                     local_conv_size=local_conv_size, act_layer=act_layer)
                prev_dim = out_dim
                stride *= 2
            self.stages.append(stage)
            self.feature_info.append(dict(num_chs=prev_dim, reduction=stride, module=f"stages.{stage_idx}"))
        self.num_features = embed_dims[-1]
        self.head = NormMlpClassifierHead(self.num_features, num_classes, pool_type=global_pool,
                                          drop_rate=drop_rate, norm_layer=partial(LayerNorm2d, eps=1e-5))
        self.head_hidden_size = self.head.num_features
        init_linear_layers(self)

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.patch_embed(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The stage outputs picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W) maps and
        (unless ``intermediates_only``) the final map; ``stop_early`` skips later stages. ``norm`` is timm's
        argument and changes nothing (the head's norm is not applied to the taps)."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt)
        intermediates = []
        x = self.patch_embed(x)
        for i, stage in enumerate(stages):
            x = stage(x)
            if i in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_head`` or when stages go, the
        head's norm and classifier; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "", reset_other=True)
        return take


def _create_tiny_vit(variant, pretrained, progress, kwargs, **model_args):
    """A TinyViT entrypoint's body: timm's configuration, overridable by the caller's ``kwargs``.
    ``features_only`` gives the four stage outputs (``out_indices`` picks), under timm's flattened names
    (``stages_0``...)."""
    return build_model(TinyVit, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def tiny_vit_5m_224(pretrained=False, progress=True, **kwargs):
    """TinyViT-5M at 224: widths 64, 128, 160, 320, windows 7, 7, 14, 7."""
    return _create_tiny_vit("tiny_vit_5m_224", pretrained, progress, kwargs, embed_dims=[64, 128, 160, 320],
                            depths=[2, 2, 6, 2], num_heads=[2, 4, 5, 10], window_sizes=[7, 7, 14, 7],
                            drop_path_rate=0.0)


@register_model
def tiny_vit_11m_224(pretrained=False, progress=True, **kwargs):
    """TinyViT-11M at 224: widths 64, 128, 256, 448, windows 7, 7, 14, 7."""
    return _create_tiny_vit("tiny_vit_11m_224", pretrained, progress, kwargs, embed_dims=[64, 128, 256, 448],
                            depths=[2, 2, 6, 2], num_heads=[2, 4, 8, 14], window_sizes=[7, 7, 14, 7],
                            drop_path_rate=0.1)


@register_model
def tiny_vit_21m_224(pretrained=False, progress=True, **kwargs):
    """TinyViT-21M at 224: widths 96, 192, 384, 576, windows 7, 7, 14, 7."""
    return _create_tiny_vit("tiny_vit_21m_224", pretrained, progress, kwargs, embed_dims=[96, 192, 384, 576],
                            depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 18], window_sizes=[7, 7, 14, 7],
                            drop_path_rate=0.2)


@register_model
def tiny_vit_21m_384(pretrained=False, progress=True, **kwargs):
    """TinyViT-21M at 384: widths 96, 192, 384, 576, windows 12, 12, 24, 12."""
    return _create_tiny_vit("tiny_vit_21m_384", pretrained, progress, kwargs, embed_dims=[96, 192, 384, 576],
                            depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 18], window_sizes=[12, 12, 24, 12],
                            drop_path_rate=0.1)


@register_model
def tiny_vit_21m_512(pretrained=False, progress=True, **kwargs):
    """TinyViT-21M at 512: widths 96, 192, 384, 576, windows 16, 16, 32, 16."""
    return _create_tiny_vit("tiny_vit_21m_512", pretrained, progress, kwargs, embed_dims=[96, 192, 384, 576],
                            depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 18], window_sizes=[16, 16, 32, 16],
                            drop_path_rate=0.1)
