"""Global Context ViT (Hatamizadeh, Yin, Kautz and Molchanov 2022, "Global Context Vision Transformers"): gcvit_xxtiny,
gcvit_xtiny, gcvit_tiny, gcvit_small and gcvit_base.

A hierarchical transformer on a fixed image size: a convolutional stem to a quarter of the image, then four stages
that each halve the resolution (after the first) with an MBConv downsampler and alternate two kinds of window
attention. Local blocks attend within non-overlapping windows with queries, keys and values of their own; global
blocks take their keys and values from the window but share one query per image, made by a convolutional "global
token generator" (MBConv blocks and max pooling) that shrinks the whole stage map to the window's size, so every
window sees a summary of the full image. Both add a learnt relative position bias. Model names, module names,
``state_dict`` keys and (PyTorch default) initialisation follow timm's ``gcvit`` module, so its checkpoints load
directly.
"""
import math

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._layers import ClassifierHead, ClassifierHeadApi, Mlp, drop_path_module, get_act_layer, pair
from ._norm import LayerNorm2d
from ._pos_embed_rel import RelPosBias
from .maxxvit import _norm_layer
from .swin_transformer import _per_stage, window_partition, window_reverse
from .vision_transformer import LayerScale

__all__ = []


class BiasFreeSEModule(nn.Module):
    """Squeeze-and-excitation with bias-free 1x1 layers (timm's ``SEModule`` built with ``bias=False``, as GCViT's
    MBConv blocks build it; the shared ``SEModule`` always has biases): the channels' means through a reduction to
    ``rd_ratio`` of the channels (a multiple of 8, at least 8; ``fc1``), the activation (``act``) and an expansion
    (``fc2``) give a sigmoid gate (``gate``) per channel."""

    def __init__(self, channels, rd_ratio=0.25, act_layer=nn.GELU):
        super().__init__()
        rd_channels = _make_divisible(channels * rd_ratio, 8, round_limit=0.0)
        self.fc1 = nn.Conv2d(channels, rd_channels, kernel_size=1, bias=False)
        self.act = act_layer()
        self.fc2 = nn.Conv2d(rd_channels, channels, kernel_size=1, bias=False)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.fc1(scale)
        scale = self.act(scale)
        scale = self.fc2(scale)
        return x * self.gate(scale)


class MbConvBlock(nn.Module):
    """A normalisation-free residual MBConv block without expansion: a bias-free 3x3 depthwise convolution
    (``conv_dw``), ``act_layer``, squeeze-and-excitation (``se``, a quarter of the channels) and a bias-free 1x1
    convolution (``conv_pw``), added to the input. GCViT's local mixing inside downsamplers and global token
    generators."""

    def __init__(self, in_chs, act_layer=nn.GELU):
        super().__init__()
        self.conv_dw = nn.Conv2d(in_chs, in_chs, 3, padding=1, groups=in_chs, bias=False)
        self.act = act_layer()
        self.se = BiasFreeSEModule(in_chs, act_layer=act_layer)
        self.conv_pw = nn.Conv2d(in_chs, in_chs, 1, bias=False)

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        x = self.act(x)
        x = self.se(x)
        x = self.conv_pw(x)
        return x + shortcut


class Downsample2d(nn.Module):
    """Halves an (N, C, H, W) map (rounding up): ``norm1``, an ``MbConvBlock`` (``conv_block``), a bias-free 3x3
    stride-2 convolution to ``dim_out`` channels (``reduction``; by default ``dim``) and ``norm2``, both norms
    ``norm_layer`` over the channels."""

    def __init__(self, dim, dim_out=None, act_layer=nn.GELU, norm_layer=LayerNorm2d):
        super().__init__()
        dim_out = dim_out or dim
        self.norm1 = norm_layer(dim)
        self.conv_block = MbConvBlock(dim, act_layer=act_layer)
        self.reduction = nn.Conv2d(dim, dim_out, 3, stride=2, padding=1, bias=False)
        self.norm2 = norm_layer(dim_out)

    def forward(self, x):
        x = self.norm1(x)
        x = self.conv_block(x)
        x = self.reduction(x)
        x = self.norm2(x)
        return x


class FeatureBlock(nn.Module):
    """The global token generator: ``levels`` times an ``MbConvBlock`` (``blocks.conv1``...) followed by a 3x3
    stride-2 max pooling (``blocks.pool1``...), each halving the map; one MBConv block without pooling where
    ``levels`` is 0 (the map already has the window's size)."""

    def __init__(self, dim, levels=0, act_layer=nn.GELU):
        super().__init__()
        self.blocks = nn.Sequential()
        for i in range(max(1, levels)):
            self.blocks.add_module(f"conv{i + 1}", MbConvBlock(dim, act_layer=act_layer))
            if i < levels:
                self.blocks.add_module(f"pool{i + 1}", nn.MaxPool2d(kernel_size=3, stride=2, padding=1))

    def forward(self, x):
        return self.blocks(x)


class Stem(nn.Module):
    """A 3x3 stride-2 convolution with bias to ``out_chs`` (``conv1``), then a ``Downsample2d`` (``down``): a quarter
    of the image, in (N, C, H, W) layout."""

    def __init__(self, in_chs=3, out_chs=96, act_layer=nn.GELU, norm_layer=LayerNorm2d):
        super().__init__()
        self.conv1 = nn.Conv2d(in_chs, out_chs, kernel_size=3, stride=2, padding=1)
        self.down = Downsample2d(out_chs, act_layer=act_layer, norm_layer=norm_layer)

    def forward(self, x):
        x = self.conv1(x)
        x = self.down(x)
        return x


class WindowAttentionGlobal(nn.Module):
    """Multi-head attention within windows of ``window_size`` tokens, (windows, tokens, dim) in and out, with a
    learnt relative position bias (``rel_pos``).

    Local (``use_global`` False): ``qkv`` projects queries, keys and values. Global: ``qkv`` projects keys and values
    only, and the queries are the global tokens ``q_global`` (N images, window height, window width, dim), each
    image's shared by all its windows (the windows of an image are consecutive).
    """

    def __init__(self, dim, num_heads, window_size, use_global=True, qkv_bias=True, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        window_size = pair(window_size)
        self.window_size = window_size
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.use_global = use_global
        self.rel_pos = RelPosBias(window_size=window_size, num_heads=num_heads)
        self.qkv = nn.Linear(dim, dim * (2 if use_global else 3), bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x, q_global=None):
        windows, tokens, channels = x.shape
        if self.use_global and q_global is not None:
            kv = self.qkv(x).reshape(windows, tokens, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            k, v = kv.unbind(0)
            q = q_global.repeat_interleave(windows // q_global.shape[0], dim=0)
            q = q.reshape(windows, tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        else:
            qkv = self.qkv(x).reshape(windows, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1)
        attn = self.rel_pos(attn)
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(windows, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class GlobalContextVitBlock(nn.Module):
    """A pre-norm transformer block on channels-last (N, H, W, C) maps: x + drop_path1(ls1(window attention(norm1(x),
    q_global))), then x + drop_path2(ls2(mlp(norm2(x)))). The layer scales are identities unless ``layer_scale``
    gives their initial value; ``use_global`` picks global or local window attention."""

    def __init__(self, dim, num_heads, window_size=7, mlp_ratio=4.0, use_global=True, qkv_bias=True,
                 layer_scale=None, proj_drop=0.0, attn_drop=0.0, drop_path=0.0, act_layer=nn.GELU,
                 norm_layer=nn.LayerNorm):
        super().__init__()
        self.window_size = pair(window_size)
        self.norm1 = norm_layer(dim)
        self.attn = WindowAttentionGlobal(dim, num_heads=num_heads, window_size=self.window_size,
                                          use_global=use_global, qkv_bias=qkv_bias, attn_drop=attn_drop,
                                          proj_drop=proj_drop)
        self.ls1 = LayerScale(dim, layer_scale) if layer_scale is not None else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.ls2 = LayerScale(dim, layer_scale) if layer_scale is not None else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def _window_attn(self, x, q_global):
        """Attention within each window of the (N, H, W, C) map, back in place."""
        batch, height, width, channels = x.shape
        windows = window_partition(x, self.window_size)
        windows = windows.reshape(-1, self.window_size[0] * self.window_size[1], channels)
        windows = self.attn(windows, q_global)
        windows = windows.reshape(-1, self.window_size[0], self.window_size[1], channels)
        return window_reverse(windows, self.window_size, height, width)

    def forward(self, x, q_global=None):
        x = x + self.drop_path1(self.ls1(self._window_attn(self.norm1(x), q_global)))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class GlobalContextVitStage(nn.Module):
    """A stage on (N, C, H, W) maps: with ``downsample`` a ``Downsample2d`` to twice the width and half the size
    (``feat_size`` is the size before it), the global token generator (``global_block``, pooling the map down to
    ``window_size``) and its norm (``global_norm``, an identity unless asked), ``depth`` blocks on the
    channels-last map (local attention at even indices, global at odd ones) and ``norm`` (the last stage's
    norm, else an identity).

    ``norm_layer`` normalises the downsampler's (N, C, H, W) maps; ``norm_layer_cl`` the channels-last ones.
    """

    def __init__(self, dim, depth, num_heads, feat_size, window_size, downsample=True, global_norm=False,
                 stage_norm=False, mlp_ratio=4.0, qkv_bias=True, layer_scale=None, proj_drop=0.0, attn_drop=0.0,
                 drop_path=0.0, act_layer=nn.GELU, norm_layer=LayerNorm2d, norm_layer_cl=nn.LayerNorm):
        super().__init__()
        if downsample:
            self.downsample = Downsample2d(dim, dim * 2, norm_layer=norm_layer)
            dim = dim * 2
            feat_size = (feat_size[0] // 2, feat_size[1] // 2)
        else:
            self.downsample = nn.Identity()
        window_size = pair(window_size)
        if min(window_size) < 1 or min(window_size) > min(feat_size):
            raise ValueError(f"window size {window_size} must be between 1 and the stage's map size {feat_size}")
        self.global_block = FeatureBlock(dim, int(math.log2(min(feat_size) / min(window_size))))
        self.global_norm = norm_layer_cl(dim) if global_norm else nn.Identity()
        self.blocks = nn.ModuleList([
            GlobalContextVitBlock(dim, num_heads=num_heads, window_size=window_size, mlp_ratio=mlp_ratio,
                                  use_global=i % 2 != 0, qkv_bias=qkv_bias, layer_scale=layer_scale,
                                  proj_drop=proj_drop, attn_drop=attn_drop,
                                  drop_path=drop_path[i] if isinstance(drop_path, list) else drop_path,
                                  act_layer=act_layer, norm_layer=norm_layer_cl)
            for i in range(depth)
        ])
        self.norm = norm_layer_cl(dim) if stage_norm else nn.Identity()
        self.dim = dim
        self.window_size = window_size

    def _check_sizes(self, x, global_query):
        """Refuse a map the windows do not tile, or global tokens other than a window (an image of another size
        than the model's ``img_size``)."""
        height, width = x.shape[-2:]
        if height % self.window_size[0] or width % self.window_size[1] or \
                tuple(global_query.shape[-2:]) != self.window_size:
            raise ValueError(f"a {height}x{width} map does not fit this stage's {self.window_size[0]}x"
                             f"{self.window_size[1]} windows and global tokens: the input must have the size the "
                             f"model was built for (img_size)")

    def forward(self, x):
        x = self.downsample(x)
        global_query = self.global_block(x)
        self._check_sizes(x, global_query)
        x = x.permute(0, 2, 3, 1)
        global_query = self.global_norm(global_query.permute(0, 2, 3, 1))
        for block in self.blocks:
            x = block(x, global_query)
        x = self.norm(x)
        return x.permute(0, 3, 1, 2).contiguous()


class GlobalContextVit(ClassifierHeadApi, nn.Module):
    """GCViT: the ``Stem``, four stages (``embed_dim`` times 1, 2, 4 and 8 channels, ``depths`` blocks,
    ``num_heads`` heads) at strides 4, 8, 16 and 32, and the classifier head (``head``: pooling, dropout, linear).

    The model is built for one ``img_size``: each stage's windows are ``window_size`` (one size, or one per stage)
    or else the image size over ``window_ratio`` (one per stage), and its global tokens are pooled to that size.
    ``mlp_ratio``: the MLPs' width; ``layer_scale``: the layer scales' initial value (None: none). ``drop_rate`` is
    the dropout before the classifier, ``proj_drop_rate`` and ``attn_drop_rate`` those of the blocks,
    ``drop_path_rate`` the stochastic depth of the last block (rising linearly from 0 block by block).
    ``act_layer``, ``norm_layer`` (the (N, C, H, W) maps') and ``norm_layer_cl`` (the channels-last ones') are timm's
    names, the norms with epsilon ``norm_eps``. Weights keep PyTorch's default init (the position biases a
    truncated normal), unless ``weight_init`` is 'vit' (Xavier-uniform linear layers, the MLPs' biases N(0, 1e-12))
    or another non-empty scheme (linear layers N(0, 0.02^2)); linear biases are then zero.
    """

    default_cfg = {"first_conv": "stem.conv1", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", img_size=224, window_ratio=(32, 32, 16, 32),
                 window_size=None, embed_dim=64, depths=(3, 4, 19, 5), num_heads=(2, 4, 8, 16), mlp_ratio=3.0,
                 qkv_bias=True, layer_scale=None, drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
                 drop_path_rate=0.0, weight_init="", act_layer="gelu", norm_layer="layernorm2d",
                 norm_layer_cl="layernorm", norm_eps=1e-5):
        super().__init__()
        act_layer = get_act_layer(act_layer)
        norm_layer = _norm_layer(norm_layer, norm_eps)
        norm_layer_cl = _norm_layer(norm_layer_cl, norm_eps)
        img_size = pair(img_size)
        feat_size = (img_size[0] // 4, img_size[1] // 4)
        num_stages = len(depths)
        self.global_pool = global_pool
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.num_features = int(embed_dim * 2 ** (num_stages - 1))
        if window_size is not None:
            window_size = _per_stage(window_size, num_stages)
        else:
            window_size = tuple((img_size[0] // r, img_size[1] // r) for r in _per_stage(window_ratio, num_stages))

        self.stem = Stem(in_chans, embed_dim, act_layer=act_layer, norm_layer=norm_layer)
        drop_path_rates = [rates.tolist() for rates in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        self.feature_info = []
        stages = []
        for i in range(num_stages):
            stage_scale = 2 ** max(i - 1, 0)
            stages.append(GlobalContextVitStage(
                embed_dim * stage_scale, depth=depths[i], num_heads=num_heads[i],
                feat_size=(feat_size[0] // stage_scale, feat_size[1] // stage_scale), window_size=window_size[i],
                downsample=i != 0, stage_norm=i == num_stages - 1, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias,
                layer_scale=layer_scale, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate,
                drop_path=drop_path_rates[i], act_layer=act_layer, norm_layer=norm_layer, norm_layer_cl=norm_layer_cl,
            ))
            self.feature_info.append(dict(num_chs=stages[-1].dim, reduction=2 ** (i + 2), module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)

        self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        if weight_init:
            self._init_weights(weight_init)

    def _init_weights(self, scheme):
        """timm's optional re-initialisation of the linear layers, in module order (convolutions keep theirs):
        'vit' draws Xavier-uniform weights, the MLPs' biases N(0, 1e-12) and zero others; any other scheme
        N(0, 0.02^2) weights and zero biases."""
        for name, module in self.named_modules():
            if not isinstance(module, nn.Linear):
                continue
            if scheme == "vit":
                nn.init.xavier_uniform_(module.weight)
            else:
                nn.init.normal_(module.weight, std=0.02)
            if module.bias is not None:
                if scheme == "vit" and "mlp" in name:
                    nn.init.normal_(module.bias, std=1e-6)
                else:
                    nn.init.zeros_(module.bias)

    def forward_features(self, x):
        """Images (N, in_chans, img_size) -> the last stage's normalised map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final map. ``norm`` changes nothing (the last stage ends in
        its own norm, as in timm); ``stop_early`` skips the stages after the last one picked."""
        return stage_intermediates(x, self.stem, self.stages, indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, and the classifier and pooling when asked or when
        stages go; returns the absolute indices (``prune_norm`` changes nothing, as in timm)."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "")
        return take


def _create_gcvit(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's taps (the four stages unless ``out_indices`` says
    otherwise) under its flattened names (``stages_0``...)."""
    return build_model(GlobalContextVit, variant, pretrained, progress=progress, **kwargs)


@register_model
def gcvit_xxtiny(pretrained=False, progress=True, **kwargs):
    """GCViT-XXT: depths (2, 2, 6, 2), widths 64-512, heads 2-16."""
    config = dict(depths=(2, 2, 6, 2), num_heads=(2, 4, 8, 16))
    return _create_gcvit("gcvit_xxtiny", pretrained, progress, **dict(config, **kwargs))


@register_model
def gcvit_xtiny(pretrained=False, progress=True, **kwargs):
    """GCViT-XT: depths (3, 4, 6, 5), widths 64-512, heads 2-16."""
    config = dict(depths=(3, 4, 6, 5), num_heads=(2, 4, 8, 16))
    return _create_gcvit("gcvit_xtiny", pretrained, progress, **dict(config, **kwargs))


@register_model
def gcvit_tiny(pretrained=False, progress=True, **kwargs):
    """GCViT-T: depths (3, 4, 19, 5), widths 64-512, heads 2-16."""
    config = dict(depths=(3, 4, 19, 5), num_heads=(2, 4, 8, 16))
    return _create_gcvit("gcvit_tiny", pretrained, progress, **dict(config, **kwargs))


@register_model
def gcvit_small(pretrained=False, progress=True, **kwargs):
    """GCViT-S: depths (3, 4, 19, 5), widths 96-768, heads 3-24, MLP ratio 2, layer scales 1e-5."""
    config = dict(depths=(3, 4, 19, 5), num_heads=(3, 6, 12, 24), embed_dim=96, mlp_ratio=2, layer_scale=1e-5)
    return _create_gcvit("gcvit_small", pretrained, progress, **dict(config, **kwargs))


@register_model
def gcvit_base(pretrained=False, progress=True, **kwargs):
    """GCViT-B: depths (3, 4, 19, 5), widths 128-1024, heads 4-32, MLP ratio 2, layer scales 1e-5."""
    config = dict(depths=(3, 4, 19, 5), num_heads=(4, 8, 16, 32), embed_dim=128, mlp_ratio=2, layer_scale=1e-5)
    return _create_gcvit("gcvit_base", pretrained, progress, **dict(config, **kwargs))
