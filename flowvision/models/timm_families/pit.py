"""PiT (Heo et al. 2021, "Rethinking Spatial Dimensions of Vision Transformers"): timm's pooling-based vision
transformers, plain and distilled.

A Vision Transformer that shrinks its token grid and widens its channels as it goes deeper, as a convolutional
network does. An overlapping strided convolution embeds the image into a map to which learnt position embeddings
are added; three stages of transformer blocks follow (pre-norm ViT blocks on the map's tokens and the class
token). Between stages a pooling layer halves the grid with a stride-2 depthwise convolution that also widens the
channels, and widens the class token with a linear map. The final class token is normalised and classified. The
distilled models add a distillation token beside the class token, with its own head (``head_dist``) trained
against a convolutional teacher; inference averages the two heads.

This is timm's ``PoolingVisionTransformer``: model names, module names, ``state_dict`` keys, defaults and
initialisation follow timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. A model runs at
the image size it was built for (``img_size``). ``features_only=True`` returns the three stages' maps (N, C, H, W).
"""
import math

import engine as torch
from engine import nn

from .._features import FeatureBodyNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._layers import distilled_output, pair, trunc_normal_
from .vision_transformer import Block

__all__ = []

_GLOBAL_POOLS = ("", "token")


class Transformer(nn.Module):
    """One stage: the ``pool`` layer (when given) shrinks the map and widens the tokens, then ``depth`` pre-norm ViT
    blocks of ``base_dim * heads`` channels run on the prefix tokens followed by the map's tokens.

    Takes and returns a pair (map (N, C, H, W), prefix tokens (N, T, C)). ``drop_path_prob`` lists the blocks'
    stochastic depths.
    """

    def __init__(self, base_dim, depth, heads, mlp_ratio, drop_path_prob, pool=None, proj_drop=0.0, attn_drop=0.0):
        super().__init__()
        embed_dim = base_dim * heads
        self.pool = pool
        self.blocks = nn.Sequential(*[
            Block(embed_dim, heads, mlp_ratio=mlp_ratio, qkv_bias=True, proj_drop=proj_drop, attn_drop=attn_drop,
                  drop_path=drop_path_prob[i])
            for i in range(depth)])

    def forward(self, x):
        x, cls_tokens = x
        num_prefix = cls_tokens.shape[1]
        if self.pool is not None:
            x, cls_tokens = self.pool(x, cls_tokens)
        batch, channels, height, width = x.shape
        x = x.flatten(2).transpose(1, 2)
        x = torch.cat((cls_tokens, x), dim=1)
        x = self.blocks(x)
        cls_tokens = x[:, :num_prefix]
        x = x[:, num_prefix:]
        x = x.transpose(1, 2).reshape(batch, channels, height, width)
        return x, cls_tokens


class Pooling(nn.Module):
    """Between stages: a depthwise convolution (kernel ``stride + 1``, padding ``stride // 2``) shrinks the map by
    ``stride`` and widens it from ``in_feature`` to ``out_feature`` channels (``conv``, a channel multiplier); a
    linear map widens the prefix tokens (``fc``)."""

    def __init__(self, in_feature, out_feature, stride):
        super().__init__()
        self.conv = nn.Conv2d(in_feature, out_feature, kernel_size=stride + 1, padding=stride // 2, stride=stride,
                              groups=in_feature)
        self.fc = nn.Linear(in_feature, out_feature)

    def forward(self, x, cls_token):
        x = self.conv(x)
        cls_token = self.fc(cls_token)
        return x, cls_token


class ConvEmbedding(nn.Module):
    """The patch embedding: a convolution of kernel ``patch_size`` and ``stride`` (overlapping patches) from
    ``in_channels`` to ``out_channels``; an ``img_size`` image gives a (``height``, ``width``) = ``grid_size`` map,
    the only size the position embeddings fit."""

    def __init__(self, in_channels, out_channels, img_size=224, patch_size=16, stride=8):
        super().__init__()
        self.img_size = pair(img_size)
        self.patch_size = pair(patch_size)
        self.stride = stride
        self.height, self.width = self._grid(self.img_size)
        self.grid_size = (self.height, self.width)
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=patch_size, stride=stride)

    def _grid(self, size):
        """The map an image of ``size`` (height, width) gives (no padding)."""
        return tuple(math.floor((s - p) / self.stride + 1) for s, p in zip(size, self.patch_size))

    def forward(self, x):
        grid = self._grid(x.shape[-2:])
        if grid != self.grid_size:
            raise ValueError(f"an image of {x.shape[-2]}x{x.shape[-1]} gives a {grid[0]}x{grid[1]} patch grid, the "
                             f"model's is {self.height}x{self.width}: build it with this image size (img_size)")
        return self.conv(x)


class PoolingVisionTransformer(nn.Module):
    """Patch embedding with position embeddings, the class token (and with ``distilled`` the distillation token),
    one ``Transformer`` stage per entry of ``depth`` (``base_dims[i] * heads[i]`` channels, with ``Pooling`` by 2
    before every stage but the first), a norm on the prefix tokens and a linear head (timm's
    ``PoolingVisionTransformer``, its arguments and defaults).

    ``patch_size`` and ``stride`` set the embedding's overlapping patches; ``img_size`` the grid the position
    embeddings fit (images must give that grid). ``global_pool``: 'token' classifies the class token, '' returns the
    prefix tokens (not with ``distilled``). A distilled model averages its two heads' logits, or in train mode after
    ``set_distilled_training()`` returns both. Dropout: ``pos_drop_rate`` after the position embeddings,
    ``attn_drop_rate`` on attention weights, ``proj_drop_rate`` in the blocks, ``drop_rate`` before the heads;
    ``drop_path_rate`` is the stochastic depth of the last block (rising linearly from 0 at the first).
    ``num_classes=0`` gives the pooled features.
    """

    def __init__(self, img_size=224, patch_size=16, stride=8, base_dims=(48, 48, 48), depth=(2, 6, 4),
                 heads=(2, 4, 8), mlp_ratio=4.0, num_classes=1000, in_chans=3, global_pool="token", distilled=False,
                 drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        if global_pool not in _GLOBAL_POOLS:
            raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")
        if distilled and global_pool != "token":
            raise ValueError("the distilled heads read the class and distillation tokens: global_pool must be 'token'")
        self.base_dims = base_dims
        self.heads = heads
        embed_dim = base_dims[0] * heads[0]
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_tokens = 2 if distilled else 1
        self.feature_info = []

        self.patch_embed = ConvEmbedding(in_chans, embed_dim, img_size, patch_size, stride)
        self.pos_embed = nn.Parameter(torch.randn(1, embed_dim, self.patch_embed.height, self.patch_embed.width))
        self.cls_token = nn.Parameter(torch.randn(1, self.num_tokens, embed_dim))
        self.pos_drop = nn.Dropout(pos_drop_rate)
        rates = [p.item() for p in torch.linspace(0, drop_path_rate, sum(depth))]
        transformers = []
        prev_dim = embed_dim
        for i in range(len(depth)):
            embed_dim = base_dims[i] * heads[i]
            pool = Pooling(prev_dim, embed_dim, stride=2) if i > 0 else None
            first = sum(depth[:i])
            transformers.append(Transformer(base_dims[i], depth[i], heads[i], mlp_ratio, rates[first:first + depth[i]],
                                            pool=pool, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate))
            prev_dim = embed_dim
            self.feature_info.append(dict(num_chs=prev_dim, reduction=stride * 2 ** i, module=f"transformers.{i}"))
        self.transformers = nn.Sequential(*transformers)
        self.norm = nn.LayerNorm(base_dims[-1] * heads[-1], eps=1e-6)
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.head_dist = self._new_head(num_classes) if distilled else None
        self.distilled_training = False
        trunc_normal_(self.pos_embed, std=0.02)
        trunc_normal_(self.cls_token, std=0.02)

    @property
    def default_cfg(self):
        """timm's first convolution and classifier names (both heads of a distilled model)."""
        classifier = ("head", "head_dist") if self.head_dist is not None else "head"
        return {"first_conv": "patch_embed.conv", "classifier": classifier}

    @property
    def feature_wrapper(self):
        """timm's ``features_only`` model: the whole model under ``body``, the stages' maps as features."""
        return FeatureBodyNet

    def _new_head(self, num_classes):
        """A linear head for ``num_classes`` (0: an identity)."""
        return nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()

    def set_distilled_training(self, enable=True):
        """Whether train mode returns both heads' logits (for a distillation loss) instead of their average."""
        self.distilled_training = enable

    def get_classifier(self):
        """The head, or the two heads (head, distillation head) of a distilled model."""
        if self.head_dist is not None:
            return self.head, self.head_dist
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """New (default-initialised) heads for ``num_classes`` (0: identities); ``global_pool`` ('token', or '' without
        the distillation head) changes the pooling too."""
        if global_pool is not None:
            if global_pool not in _GLOBAL_POOLS:
                raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")
            if global_pool != "token" and self.head_dist is not None:
                raise ValueError("the distilled heads read the class and distillation tokens: global_pool must be "
                                 "'token'")
            self.global_pool = global_pool
        self.num_classes = num_classes
        self.head = self._new_head(num_classes)
        self.head.train(self.training)
        if self.head_dist is not None:
            self.head_dist = self._new_head(num_classes)
            self.head_dist.train(self.training)

    def _embed(self, x):
        """Images -> (the embedded map with position embeddings, after ``pos_drop``; the prefix tokens)."""
        x = self.patch_embed(x)
        x = self.pos_drop(x + self.pos_embed)
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        return x, cls_tokens

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised prefix tokens (N, 1 or 2, embed_dim)."""
        x, cls_tokens = self._embed(x)
        x, cls_tokens = self.transformers((x, cls_tokens))
        cls_tokens = self.norm(cls_tokens)
        return cls_tokens

    def forward_head(self, x, pre_logits=False):
        """The class token (or all prefix tokens, with pooling ''), head dropout, then the head unless ``pre_logits``.
        A distilled model runs each head on its token: their average, or both in distilled training (with
        ``pre_logits``, the average of the two tokens)."""
        if self.head_dist is None:
            if self.global_pool == "token":
                x = x[:, 0]
            x = self.head_drop(x)
            return x if pre_logits else self.head(x)
        x, x_dist = x[:, 0], x[:, 1]
        x = self.head_drop(x)
        x_dist = self.head_drop(x_dist)
        if not pre_logits:
            x = self.head(x)
            x_dist = self.head_dist(x_dist)
        return distilled_output(self, x, x_dist)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The maps (N, C, H, W) of the stages picked by ``indices`` (None: all, n: the last n, or a list), and
        (unless ``intermediates_only``) the prefix tokens, normalised when the last stage ran; ``stop_early`` skips
        the stages after the last one picked. ``norm`` changes nothing: the maps have no norm (timm's argument)."""
        take, stages = intermediate_stages(self.transformers, indices, stop_early, output_fmt)
        x, cls_tokens = self._embed(x)
        intermediates = []
        for i, stage in enumerate(stages):
            x, cls_tokens = stage((x, cls_tokens))
            if i in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        if len(stages) == len(self.transformers):
            cls_tokens = self.norm(cls_tokens)
        return cls_tokens, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks; the final norm with any pruning; the heads (the
        distillation head for good) with ``prune_head`` or when stages go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "transformers", indices)
        if prune_norm or prune_head or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.head_dist = None
            self.reset_classifier(0, "")
        return take


def _create_pit(variant, pretrained, progress, kwargs, **model_args):
    """A PiT entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``."""
    return build_model(PoolingVisionTransformer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


_PIT_B = dict(patch_size=14, stride=7, base_dims=[64, 64, 64], depth=[3, 6, 4], heads=[4, 8, 16], mlp_ratio=4)
_PIT_S = dict(patch_size=16, stride=8, base_dims=[48, 48, 48], depth=[2, 6, 4], heads=[3, 6, 12], mlp_ratio=4)
_PIT_XS = dict(patch_size=16, stride=8, base_dims=[48, 48, 48], depth=[2, 6, 4], heads=[2, 4, 8], mlp_ratio=4)
_PIT_TI = dict(patch_size=16, stride=8, base_dims=[32, 32, 32], depth=[2, 6, 4], heads=[2, 4, 8], mlp_ratio=4)


@register_model
def pit_b_224(pretrained=False, progress=True, **kwargs):
    """PiT-B: 14x14 patches at stride 7, widths 256, 512, 1024 (64 a head), blocks 3, 6, 4."""
    return _create_pit("pit_b_224", pretrained, progress, kwargs, **_PIT_B)


@register_model
def pit_s_224(pretrained=False, progress=True, **kwargs):
    """PiT-S: 16x16 patches at stride 8, widths 144, 288, 576 (48 a head), blocks 2, 6, 4."""
    return _create_pit("pit_s_224", pretrained, progress, kwargs, **_PIT_S)


@register_model
def pit_xs_224(pretrained=False, progress=True, **kwargs):
    """PiT-XS: 16x16 patches at stride 8, widths 96, 192, 384 (48 a head), blocks 2, 6, 4."""
    return _create_pit("pit_xs_224", pretrained, progress, kwargs, **_PIT_XS)


@register_model
def pit_ti_224(pretrained=False, progress=True, **kwargs):
    """PiT-Ti: 16x16 patches at stride 8, widths 64, 128, 256 (32 a head), blocks 2, 6, 4."""
    return _create_pit("pit_ti_224", pretrained, progress, kwargs, **_PIT_TI)


@register_model
def pit_b_distilled_224(pretrained=False, progress=True, **kwargs):
    """Distilled PiT-B: PiT-B with a distillation token and head."""
    return _create_pit("pit_b_distilled_224", pretrained, progress, kwargs, distilled=True, **_PIT_B)


@register_model
def pit_s_distilled_224(pretrained=False, progress=True, **kwargs):
    """Distilled PiT-S: PiT-S with a distillation token and head."""
    return _create_pit("pit_s_distilled_224", pretrained, progress, kwargs, distilled=True, **_PIT_S)


@register_model
def pit_xs_distilled_224(pretrained=False, progress=True, **kwargs):
    """Distilled PiT-XS: PiT-XS with a distillation token and head."""
    return _create_pit("pit_xs_distilled_224", pretrained, progress, kwargs, distilled=True, **_PIT_XS)


@register_model
def pit_ti_distilled_224(pretrained=False, progress=True, **kwargs):
    """Distilled PiT-Ti: PiT-Ti with a distillation token and head."""
    return _create_pit("pit_ti_distilled_224", pretrained, progress, kwargs, distilled=True, **_PIT_TI)
