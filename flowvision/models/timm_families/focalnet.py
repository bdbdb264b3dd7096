"""FocalNet (Yang et al. 2022, "Focal Modulation Networks"): timm's focalnet_tiny/small/base with small (``_srf``,
two focal levels) or large (``_lrf``, three focal levels) receptive fields, and the paper's ImageNet-22k models
focalnet_large/xlarge/huge with three (``_fl3``) or four (``_fl4``) focal levels.

A hierarchical vision model in Swin's outline (a 4x4 patch stem, four stages at strides 4, 8, 16 and 32, each
after the first opening with a 2x2 stride-2 convolution, pre-norm residual blocks with an MLP) whose
self-attention is replaced by focal modulation: a 1x1 convolution gives each pixel a query, a context map and one
gate per focal level; the context passes through a stack of depthwise convolutions with GELU (kernels growing by
two per level) and a global average, each level's output weighted by its gate and summed; a 1x1 convolution of
that aggregate (the modulator) multiplies the query elementwise, and a last 1x1 convolution projects the result.
The whole model works on (N, C, H, W) maps and any image size. The large to huge models
normalise after each branch instead of before it, downsample with overlapping (7x7 and 3x3) kernels and scale
their branches by learnt layer scales; the huge ones normalise inside the modulation too.

This is timm's ``FocalNet`` (its refactoring of the official model: striding at the start of each stage, no input
size bookkeeping): model names, module names, ``state_dict`` keys, defaults and (seeded) initialisation follow
timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. ``features_only=True`` returns the
four stages' (N, C, H, W) outputs as timm's feature model does, under its flattened names (``layers_2``).
"""
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, normed_stage_intermediates, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._efficientnet_blocks import LayerScale2d
from ._layers import ClassifierHead, ClassifierHeadApi, Mlp, drop_path_module, trunc_normal_
from ._norm import LayerNorm2d
from .convnext import NormMlpClassifierHead

__all__ = []


class FocalModulation(nn.Module):
    """Focal modulation of an (N, dim, H, W) map, in place of self-attention.

    ``f`` (1x1) splits each pixel into a query, a context and ``focal_level`` + 1 gates. Level l runs the context
    through a depthwise ``focal_window + focal_factor * l`` convolution and GELU (``focal_layers``, each level on
    the previous one's output); the last level's global mean, through GELU, is one more level. The gated sum of
    the levels (divided by their count with ``normalize_modulator``) through ``h`` (1x1) modulates the query
    elementwise; ``norm`` (with ``use_post_norm``), then ``proj`` (1x1) and dropout ``proj_drop`` follow.
    """

    def __init__(self, dim, focal_window, focal_level, focal_factor=2, bias=True, use_post_norm=False,
                 normalize_modulator=False, proj_drop=0.0, norm_layer=LayerNorm2d):
        super().__init__()
        self.dim = dim
        self.focal_window = focal_window
        self.focal_level = focal_level
        self.focal_factor = focal_factor
        self.use_post_norm = use_post_norm
        self.normalize_modulator = normalize_modulator
        self.input_split = [dim, dim, focal_level + 1]
        self.f = nn.Conv2d(dim, 2 * dim + focal_level + 1, kernel_size=1, bias=bias)
        self.h = nn.Conv2d(dim, dim, kernel_size=1, bias=bias)
        self.act = nn.GELU()
        self.proj = nn.Conv2d(dim, dim, kernel_size=1)
        self.proj_drop = nn.Dropout(proj_drop)
        self.focal_layers = nn.ModuleList()
        self.kernel_sizes = []
        for level in range(focal_level):
            kernel_size = focal_factor * level + focal_window
            self.focal_layers.append(nn.Sequential(
                nn.Conv2d(dim, dim, kernel_size=kernel_size, padding=kernel_size // 2, groups=dim, bias=False),
                nn.GELU(),
            ))
            self.kernel_sizes.append(kernel_size)
        self.norm = norm_layer(dim) if use_post_norm else nn.Identity()

    def forward(self, x):
        x = self.f(x)
        query, ctx, gates = torch.split(x, self.input_split, 1)
        ctx_all = 0
        for level, focal_layer in enumerate(self.focal_layers):
            ctx = focal_layer(ctx)
            ctx_all = ctx_all + ctx * gates[:, level:level + 1]
        ctx_global = self.act(ctx.mean((2, 3), keepdim=True))
        ctx_all = ctx_all + ctx_global * gates[:, self.focal_level:]
        if self.normalize_modulator:
            ctx_all = ctx_all / (self.focal_level + 1)
        x = query * self.h(ctx_all)
        x = self.norm(x)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class FocalNetBlock(nn.Module):
    """A FocalNet block: x + drop_path1(ls1(modulation(norm1(x)))), then x + drop_path2(ls2(mlp(norm2(x)))) with
    a 1x1-convolution MLP (``mlp_ratio`` wide).

    ``use_post_norm`` moves each norm after its branch (``norm1_post``, ``norm2_post``; ``norm1`` and ``norm2``
    become identities), as timm's large models do; ``layerscale_value`` adds layer scales (``ls1``, ``ls2``);
    ``proj_drop`` is the dropout of the projections and the MLP, ``drop_path`` the stochastic depth.
    """

    def __init__(self, dim, mlp_ratio=4.0, focal_level=1, focal_window=3, use_post_norm=False,
                 use_post_norm_in_modulation=False, normalize_modulator=False, layerscale_value=1e-4,
                 proj_drop=0.0, drop_path=0.0, act_layer=nn.GELU, norm_layer=LayerNorm2d):
        super().__init__()
        self.dim = dim
        self.mlp_ratio = mlp_ratio
        self.focal_window = focal_window
        self.focal_level = focal_level
        self.use_post_norm = use_post_norm
        self.norm1 = nn.Identity() if use_post_norm else norm_layer(dim)
        self.modulation = FocalModulation(dim, focal_window=focal_window, focal_level=focal_level,
                                          use_post_norm=use_post_norm_in_modulation,
                                          normalize_modulator=normalize_modulator, proj_drop=proj_drop,
                                          norm_layer=norm_layer)
        self.norm1_post = norm_layer(dim) if use_post_norm else nn.Identity()
        self.ls1 = nn.Identity() if layerscale_value is None else LayerScale2d(dim, layerscale_value)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = nn.Identity() if use_post_norm else norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop, use_conv=True)
        self.norm2_post = norm_layer(dim) if use_post_norm else nn.Identity()
        self.ls2 = nn.Identity() if layerscale_value is None else LayerScale2d(dim, layerscale_value)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.norm1(x)
        x = self.modulation(x)
        x = self.norm1_post(x)
        x = shortcut + self.drop_path1(self.ls1(x))
        x = x + self.drop_path2(self.ls2(self.norm2_post(self.mlp(self.norm2(x)))))
        return x


class Downsample(nn.Module):
    """A strided convolution to ``out_chs`` (``proj``: ``stride`` x ``stride`` patches, or with ``overlap`` a 7x7
    (stride 4) or 3x3 (stride 2) padded kernel) and a norm (``norm``, an identity without ``norm_layer``): the stem
    and each later stage's downsampling."""

    def __init__(self, in_chs, out_chs, stride=4, overlap=False, norm_layer=None):
        super().__init__()
        self.stride = stride
        kernel_size = stride
        padding = 0
        if overlap:
            if stride not in (2, 4):
                raise ValueError(f"overlapping downsampling takes stride 2 or 4, got {stride}")
            kernel_size, padding = (7, 2) if stride == 4 else (3, 1)
        self.proj = nn.Conv2d(in_chs, out_chs, kernel_size=kernel_size, stride=stride, padding=padding)
        self.norm = nn.Identity() if norm_layer is None else norm_layer(out_chs)

    def forward(self, x):
        x = self.proj(x)
        x = self.norm(x)
        return x


class FocalNetStage(nn.Module):
    """One stage: a stride-2 ``downsample`` from ``dim`` to ``out_dim`` channels (an identity with
    ``downsample=False``, the first stage), then ``depth`` FocalNet blocks; ``drop_path`` is one rate or one per
    block."""

    def __init__(self, dim, out_dim, depth, mlp_ratio=4.0, downsample=True, focal_level=1, focal_window=1,
                 use_overlap_down=False, use_post_norm=False, use_post_norm_in_modulation=False,
                 normalize_modulator=False, layerscale_value=1e-4, proj_drop=0.0, drop_path=0.0,
                 norm_layer=LayerNorm2d):
        super().__init__()
        self.dim = dim
        self.depth = depth
        if downsample:
            self.downsample = Downsample(dim, out_dim, stride=2, overlap=use_overlap_down, norm_layer=norm_layer)
        else:
            self.downsample = nn.Identity()
        rates = drop_path if isinstance(drop_path, list) else [drop_path] * depth
        self.blocks = nn.ModuleList([
            FocalNetBlock(out_dim, mlp_ratio=mlp_ratio, focal_level=focal_level, focal_window=focal_window,
                          use_post_norm=use_post_norm, use_post_norm_in_modulation=use_post_norm_in_modulation,
                          normalize_modulator=normalize_modulator, layerscale_value=layerscale_value,
                          proj_drop=proj_drop, drop_path=rates[i], norm_layer=norm_layer)
            for i in range(depth)])

    def forward(self, x):
        x = self.downsample(x)
        for block in self.blocks:
            x = block(x)
        return x


class FocalNet(ClassifierHeadApi, nn.Module):
    """The stem (``stem``: 4x4 patches, or a padded 7x7 stride-4 convolution with ``use_overlap_down``, then a
    norm), ``len(depths)`` stages of widths ``embed_dim`` * 2^i (``layers``), a final norm (``norm``) and a pooling
    classifier (``head``), as timm's ``FocalNet`` with its arguments and defaults.

    ``focal_levels`` and ``focal_windows`` set each stage's modulation (levels and first kernel size);
    ``use_post_norm``, ``use_post_norm_in_modulation``, ``normalize_modulator`` and ``layerscale_value`` are the
    options of timm's large models. ``head_hidden_size`` swaps the final norm and plain head for a head that
    pools, normalises and adds a tanh hidden layer (``NormMlpClassifierHead``). ``drop_path_rate`` rises linearly
    from 0 at the first block to its value at the last (0.1 by default, as in timm); ``proj_drop_rate`` drops after
    projections and MLPs, ``drop_rate`` before the classifier. Weights start as timm's: truncated normals (std
    0.02) for convolutions and linear layers, zero biases, the classifier scaled by ``head_init_scale``.
    """

    default_cfg = {"first_conv": "stem.proj", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=96, depths=(2, 2, 6, 2),
                 mlp_ratio=4.0, focal_levels=(2, 2, 2, 2), focal_windows=(3, 3, 3, 3), use_overlap_down=False,
                 use_post_norm=False, use_post_norm_in_modulation=False, normalize_modulator=False,
                 head_hidden_size=None, head_init_scale=1.0, layerscale_value=None, drop_rate=0.0,
                 proj_drop_rate=0.0, drop_path_rate=0.1, norm_layer=partial(LayerNorm2d, eps=1e-5)):
        super().__init__()
        self.num_layers = len(depths)
        embed_dim = [embed_dim * 2 ** i for i in range(self.num_layers)]
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.num_features = embed_dim[-1]
        self.feature_info = []
        self.stem = Downsample(in_chans, embed_dim[0], overlap=use_overlap_down, norm_layer=norm_layer)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        layers = []
        in_dim = embed_dim[0]
        for i, out_dim in enumerate(embed_dim):
            first = sum(depths[:i])
            layers.append(FocalNetStage(
                in_dim, out_dim, depths[i], mlp_ratio=mlp_ratio, downsample=i > 0, focal_level=focal_levels[i],
                focal_window=focal_windows[i], use_overlap_down=use_overlap_down, use_post_norm=use_post_norm,
                use_post_norm_in_modulation=use_post_norm_in_modulation, normalize_modulator=normalize_modulator,
                layerscale_value=layerscale_value, proj_drop=proj_drop_rate,
                drop_path=rates[first:first + depths[i]], norm_layer=norm_layer))
            in_dim = out_dim
            self.feature_info.append(dict(num_chs=out_dim, reduction=4 * 2 ** i, module=f"layers.{i}"))
        self.layers = nn.Sequential(*layers)
        if head_hidden_size:
            self.norm = nn.Identity()
            self.head = NormMlpClassifierHead(self.num_features, num_classes, hidden_size=head_hidden_size,
                                              pool_type=global_pool, drop_rate=drop_rate, norm_layer=norm_layer,
                                              act_layer=nn.Tanh)
        else:
            self.norm = norm_layer(self.num_features)
            self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights(head_init_scale)

    def _init_weights(self, head_init_scale):
        """timm's init, in module order: truncated normal (std 0.02) weights and zero biases for every convolution
        and linear layer; the classifier's scaled by ``head_init_scale``."""
        for name, module in self.named_modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            if isinstance(module, nn.Linear) and "head.fc" in name:
                with torch.no_grad():
                    module.weight.mul_(head_init_scale)
                    module.bias.mul_(head_init_scale)

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given;
        ``reset_other`` also drops the hidden-layer head's norm and hidden layer (nothing else has them)."""
        head_args = {"reset_other": reset_other} if isinstance(self.head, NormMlpClassifierHead) else {}
        super().reset_classifier(num_classes, global_pool, **head_args)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.layers(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final map, normalised when the last stage ran. ``norm``
        normalises the last stage's intermediate; ``stop_early`` skips the stages after the last one picked."""
        return normed_stage_intermediates(x, self.stem, self.layers, self.norm, indices, norm,
                                          stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, the final norm when asked or when stages go, and
        the classifier (with the hidden-layer head's norm and hidden layer) when asked or when stages go; returns
        the absolute indices."""
        take, prune_end = prune_stages(self, "layers", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "", reset_other=True)
        return take


def _create_focalnet(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's taps (every stage unless ``out_indices`` says
    otherwise) under its flattened names."""
    return build_model(FocalNet, variant, pretrained, progress=progress, **kwargs)


@register_model
def focalnet_tiny_srf(pretrained=False, progress=True, **kwargs):
    """FocalNet-T with small receptive fields: width 96, depths (2, 2, 6, 2), two focal levels."""
    config = dict(depths=[2, 2, 6, 2], embed_dim=96, **kwargs)
    return _create_focalnet("focalnet_tiny_srf", pretrained, progress, **config)


@register_model
def focalnet_small_srf(pretrained=False, progress=True, **kwargs):
    """FocalNet-S with small receptive fields: width 96, depths (2, 2, 18, 2), two focal levels."""
    config = dict(depths=[2, 2, 18, 2], embed_dim=96, **kwargs)
    return _create_focalnet("focalnet_small_srf", pretrained, progress, **config)


@register_model
def focalnet_base_srf(pretrained=False, progress=True, **kwargs):
    """FocalNet-B with small receptive fields: width 128, depths (2, 2, 18, 2), two focal levels."""
    config = dict(depths=[2, 2, 18, 2], embed_dim=128, **kwargs)
    return _create_focalnet("focalnet_base_srf", pretrained, progress, **config)


@register_model
def focalnet_tiny_lrf(pretrained=False, progress=True, **kwargs):
    """FocalNet-T with large receptive fields: width 96, depths (2, 2, 6, 2), three focal levels."""
    config = dict(depths=[2, 2, 6, 2], embed_dim=96, focal_levels=[3, 3, 3, 3], **kwargs)
    return _create_focalnet("focalnet_tiny_lrf", pretrained, progress, **config)


@register_model
def focalnet_small_lrf(pretrained=False, progress=True, **kwargs):
    """FocalNet-S with large receptive fields: width 96, depths (2, 2, 18, 2), three focal levels."""
    config = dict(depths=[2, 2, 18, 2], embed_dim=96, focal_levels=[3, 3, 3, 3], **kwargs)
    return _create_focalnet("focalnet_small_lrf", pretrained, progress, **config)


@register_model
def focalnet_base_lrf(pretrained=False, progress=True, **kwargs):
    """FocalNet-B with large receptive fields: width 128, depths (2, 2, 18, 2), three focal levels."""
    config = dict(depths=[2, 2, 18, 2], embed_dim=128, focal_levels=[3, 3, 3, 3], **kwargs)
    return _create_focalnet("focalnet_base_lrf", pretrained, progress, **config)


def _large_focalnet(variant, pretrained, progress, embed_dim, focal_levels, **kwargs):
    """Build one of the ImageNet-22k models: depths (2, 2, 18, 2), post-norms, overlapping downsampling and layer
    scales (1e-4) around timm's other arguments; like timm's entrypoints, the caller may not override those."""
    config = dict(depths=[2, 2, 18, 2], embed_dim=embed_dim, focal_levels=focal_levels, use_post_norm=True,
                  use_overlap_down=True, layerscale_value=1e-4, **kwargs)
    return _create_focalnet(variant, pretrained, progress, **config)


@register_model
def focalnet_large_fl3(pretrained=False, progress=True, **kwargs):
    """FocalNet-L: width 192, depths (2, 2, 18, 2), three focal levels from 5x5 kernels, post-norms."""
    return _large_focalnet("focalnet_large_fl3", pretrained, progress, 192, [3, 3, 3, 3], focal_windows=[5] * 4,
                           **kwargs)


@register_model
def focalnet_large_fl4(pretrained=False, progress=True, **kwargs):
    """FocalNet-L: width 192, depths (2, 2, 18, 2), four focal levels from 3x3 kernels, post-norms."""
    return _large_focalnet("focalnet_large_fl4", pretrained, progress, 192, [4, 4, 4, 4], **kwargs)


@register_model
def focalnet_xlarge_fl3(pretrained=False, progress=True, **kwargs):
    """FocalNet-XL: width 256, depths (2, 2, 18, 2), three focal levels from 5x5 kernels, post-norms."""
    return _large_focalnet("focalnet_xlarge_fl3", pretrained, progress, 256, [3, 3, 3, 3], focal_windows=[5] * 4,
                           **kwargs)


@register_model
def focalnet_xlarge_fl4(pretrained=False, progress=True, **kwargs):
    """FocalNet-XL: width 256, depths (2, 2, 18, 2), four focal levels from 3x3 kernels, post-norms."""
    return _large_focalnet("focalnet_xlarge_fl4", pretrained, progress, 256, [4, 4, 4, 4], **kwargs)


@register_model
def focalnet_huge_fl3(pretrained=False, progress=True, **kwargs):
    """FocalNet-H: width 352, depths (2, 2, 18, 2), three focal levels, post-norms in blocks and modulations."""
    return _large_focalnet("focalnet_huge_fl3", pretrained, progress, 352, [3, 3, 3, 3], focal_windows=[3] * 4,
                           use_post_norm_in_modulation=True, **kwargs)


@register_model
def focalnet_huge_fl4(pretrained=False, progress=True, **kwargs):
    """FocalNet-H: width 352, depths (2, 2, 18, 2), four focal levels, post-norms in blocks and modulations."""
    return _large_focalnet("focalnet_huge_fl4", pretrained, progress, 352, [4, 4, 4, 4],
                           use_post_norm_in_modulation=True, **kwargs)
