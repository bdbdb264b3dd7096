"""CrossViT (Chen et al. 2021, "CrossViT: Cross-Attention Multi-Scale Vision Transformer for Image Classification"):
timm's CrossViT models, tiny to base and 9 to 18, the dagger variants with a convolutional patch embedding.

Two vision transformers see the same image at two granularities: a small-patch branch (12-pixel patches of the full
image) and a large-patch branch (16-pixel patches of the image resized to a smaller scale), each with its own class
token and position embeddings. Each multi-scale block runs both branches' transformer blocks, then fuses them
through the class tokens: each branch's class token is projected to the other branch's width, attends as the only
query to the other branch's patch tokens (cross-attention, linear in the number of patches), and is projected back.
The two normalised class tokens are classified by one head each and the two logits averaged. The dagger variants
(``_dagger_``) embed patches with three convolutions instead of one.

This is timm's ``CrossVit``: model names, module names, ``state_dict`` keys, defaults and initialisation follow timm,
so timm's checkpoints load with ``strict=True`` and give timm's outputs. The input is resized (bicubic) to each
branch's image size, as timm does, so any image size is accepted. ``features_only=True`` returns the patch tokens of
each branch after the multi-scale blocks picked (timm's default: the last block's, of both branches) as maps.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import drop_path_module, init_linear_layers, pair, trunc_normal_
from .cait import ClassAttnBase
from .vision_transformer import Block

__all__ = []

_GLOBAL_POOLS = ("token", "avg")
_layer_norm = partial(nn.LayerNorm, eps=1e-6)


def _check_global_pool(global_pool):
    """Refuse a pooling CrossViT has no use for: it classifies the class tokens ('token') or the patch tokens'
    averages ('avg')."""
    if global_pool not in _GLOBAL_POOLS:
        raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")


def _dagger_projection(in_chans, embed_dim, patch_size):
    """The dagger variants' patch embedding: a 7x7 stride-4 convolution, then two 3x3 convolutions (ReLUs between)
    that bring the stride to ``patch_size`` (12: strides 3 and 1; 16: strides 2 and 2), widening to ``embed_dim`` in
    two doublings."""
    if patch_size == 12:
        second, third = dict(stride=3, padding=0), dict(stride=1, padding=1)
    elif patch_size == 16:
        second, third = dict(stride=2, padding=1), dict(stride=2, padding=1)
    else:
        raise ValueError(f"the convolutional patch embedding (multi_conv) takes 12- or 16-pixel patches, "
                         f"not {patch_size}")
    return nn.Sequential(
        nn.Conv2d(in_chans, embed_dim // 4, kernel_size=7, stride=4, padding=3),
        nn.ReLU(inplace=True),
        nn.Conv2d(embed_dim // 4, embed_dim // 2, kernel_size=3, **second),
        nn.ReLU(inplace=True),
        nn.Conv2d(embed_dim // 2, embed_dim, kernel_size=3, **third),
    )


class PatchEmbed(nn.Module):
    """Patches of an ``img_size`` image as a (N, patches, embed_dim) token sequence: one strided convolution
    (``proj``) of ``patch_size``, or the three convolutions of the dagger variants (``multi_conv``).

    Images must have the size the branch was built for (the model resizes them first).
    """

    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768, multi_conv=False):
        super().__init__()
        self.img_size = pair(img_size)
        self.patch_size = pair(patch_size)
        self.num_patches = (self.img_size[1] // self.patch_size[1]) * (self.img_size[0] // self.patch_size[0])
        if multi_conv:
            self.proj = _dagger_projection(in_chans, embed_dim, self.patch_size[0])
        else:
            self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=self.patch_size, stride=self.patch_size)

    def forward(self, x):
        height, width = x.shape[-2:]
        if (height, width) != self.img_size:
            raise ValueError(f"Input size ({height}x{width}) doesn't match the branch's ({self.img_size[0]}x"
                             f"{self.img_size[1]})")
        x = self.proj(x)
        x = x.flatten(2).transpose(1, 2)
        return x


class CrossAttention(ClassAttnBase):
    """CrossViT's class attention (see ``cait.ClassAttnBase``): the class token's query (``wq``) against every
    token's key (``wk``) and value (``wv``), per head, the logits scaled after the product."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self._add_heads(dim, num_heads)
        self.wq = nn.Linear(dim, dim, bias=qkv_bias)
        self.wk = nn.Linear(dim, dim, bias=qkv_bias)
        self.wv = nn.Linear(dim, dim, bias=qkv_bias)
        self._add_output(dim, dim, attn_drop, proj_drop)

    def forward(self, x):
        tokens = x.shape[1]
        q = self._split_heads(self.wq(x[:, 0:1]), 1)
        k = self._split_heads(self.wk(x), tokens)
        v = self._split_heads(self.wv(x), tokens)
        return self._attend(q, k, v, logit_scale=self.scale)


class CrossAttentionBlock(nn.Module):
    """The class token's cross-attention step: x_cls + drop_path(attn(norm1(x))), returned alone (N, 1, dim). It has
    no MLP, as in timm."""

    def __init__(self, dim, num_heads, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 norm_layer=_layer_norm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = CrossAttention(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop,
                                   proj_drop=proj_drop)
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        return x[:, 0:1] + self.drop_path(self.attn(self.norm1(x)))


def _projection(in_dim, out_dim, norm_layer, act_layer):
    """A class token moved between branches: norm, activation, linear map to the other width."""
    return nn.Sequential(norm_layer(in_dim), act_layer(), nn.Linear(in_dim, out_dim))


class MultiScaleBlock(nn.Module):
    """One multi-scale block of CrossViT.

    ``depth`` lists each branch's number of transformer blocks, then the number of fusion blocks (0: one
    cross-attention block per branch, not wrapped in a Sequential, as timm's older layout). Each branch runs its
    ``blocks``; then, for branch i with the next branch j: its class token is projected to j's width
    (``projs[i]``), updated by cross-attention over j's patch tokens (``fusion[i]``), projected back
    (``revert_projs[i]``) and put before branch i's own patch tokens. ``drop_path`` holds the rates of the blocks,
    the fusion taking the last.
    """

    def __init__(self, dim, depth, num_heads, mlp_ratio, qkv_bias=False, proj_drop=0.0, attn_drop=0.0,
                 drop_path=(0.0,), act_layer=nn.GELU, norm_layer=_layer_norm):
        super().__init__()
        num_branches = len(dim)
        self.num_branches = num_branches
        if min(depth[:-1]) < 1:
            raise ValueError(f"every branch needs at least one transformer block, got depth {tuple(depth)}")
        self.blocks = nn.ModuleList([
            nn.Sequential(*[
                Block(dim[d], num_heads[d], mlp_ratio=mlp_ratio[d], qkv_bias=qkv_bias, proj_drop=proj_drop,
                      attn_drop=attn_drop, drop_path=drop_path[i], norm_layer=norm_layer)
                for i in range(depth[d])])
            for d in range(num_branches)])
        self.projs = nn.ModuleList([
            _projection(dim[d], dim[(d + 1) % num_branches], norm_layer, act_layer) for d in range(num_branches)])
        self.fusion = nn.ModuleList([
            self._fusion(dim[(d + 1) % num_branches], num_heads[(d + 1) % num_branches], depth[-1], qkv_bias,
                         proj_drop, attn_drop, drop_path[-1], norm_layer)
            for d in range(num_branches)])
        self.revert_projs = nn.ModuleList([
            _projection(dim[(d + 1) % num_branches], dim[d], norm_layer, act_layer) for d in range(num_branches)])

    @staticmethod
    def _fusion(dim, num_heads, depth, qkv_bias, proj_drop, attn_drop, drop_path, norm_layer):
        """The cross-attention of one branch's class token: one block when ``depth`` is 0, else ``depth`` blocks
        in a Sequential."""
        def block():
            return CrossAttentionBlock(dim, num_heads, qkv_bias=qkv_bias, proj_drop=proj_drop, attn_drop=attn_drop,
                                       drop_path=drop_path, norm_layer=norm_layer)

        if depth == 0:
            return block()
        return nn.Sequential(*[block() for _ in range(depth)])

    def forward(self, xs):
        outs = [blocks(x) for blocks, x in zip(self.blocks, xs)]
        cls_tokens = [proj(out[:, 0:1]) for proj, out in zip(self.projs, outs)]
        fused = []
        for i, (fusion, revert_proj) in enumerate(zip(self.fusion, self.revert_projs)):
            other = outs[(i + 1) % self.num_branches]
            cls_token = fusion(torch.cat((cls_tokens[i], other[:, 1:]), dim=1))
            cls_token = revert_proj(cls_token[:, 0:1])
            fused.append(torch.cat((cls_token, outs[i][:, 1:]), dim=1))
        return fused


def _scale_image(x, size, crop_scale=False):
    """``x`` brought to ``size``: unchanged if it has it, else center-cropped (``crop_scale``, when it is large
    enough) or resized by bicubic interpolation (corners not aligned)."""
    height, width = x.shape[-2:]
    if (height, width) == tuple(size):
        return x
    if crop_scale and size[0] <= height and size[1] <= width:
        top = int(round((height - size[0]) / 2.0))
        left = int(round((width - size[1]) / 2.0))
        return x[:, :, top:top + size[0], left:left + size[1]]
    return F.interpolate(x, size=size, mode="bicubic", align_corners=False)


class CrossVit(nn.Module):
    """Per-branch patch embeddings, class tokens and position embeddings, a stack of multi-scale blocks, a norm
    and a head per branch, the heads' logits averaged (timm's ``CrossVit``, its arguments and defaults).

    ``img_scale`` gives each branch's image size as a fraction of ``img_size``, ``patch_size``, ``embed_dim``,
    ``num_heads`` and ``mlp_ratio`` one value per branch (``mlp_ratio`` has a third, unused, as timm's); ``depth``
    one entry per multi-scale block (see ``MultiScaleBlock``). ``multi_conv`` picks the dagger patch embedding,
    ``crop_scale`` crops instead of resizing where it can. ``global_pool``: 'token' classifies the class tokens,
    'avg' the patch tokens' averages. Dropout: ``pos_drop_rate`` after the position embeddings, ``attn_drop_rate``
    on attention weights, ``proj_drop_rate`` in the blocks, ``drop_rate`` before the heads; ``drop_path_rate`` is
    the stochastic depth at the end, rising linearly from 0 over the multi-scale blocks' stacks (see
    ``MultiScaleBlock``). With ``num_classes=0`` the model returns both branches' pooled features, concatenated.
    """

    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, img_scale=(1.0, 1.0), patch_size=(8, 16), in_chans=3, num_classes=1000,
                 embed_dim=(192, 384), depth=((1, 3, 1), (1, 3, 1), (1, 3, 1)), num_heads=(6, 12),
                 mlp_ratio=(2.0, 2.0, 4.0), multi_conv=False, crop_scale=False, qkv_bias=True, drop_rate=0.0,
                 pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=None,
                 global_pool="token"):
        super().__init__()
        _check_global_pool(global_pool)
        norm_layer = norm_layer or _layer_norm
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.img_size = pair(img_size)
        img_scale = pair(img_scale)
        self.img_size_scaled = [tuple(int(side * scale) for side in self.img_size) for scale in img_scale]
        self.crop_scale = crop_scale
        # timm's count, rows * width // p: the number of patches when the width is a multiple of the patch size
        num_patches = [size[0] // p * size[1] // p for size, p in zip(self.img_size_scaled, patch_size)]
        self.num_branches = len(patch_size)
        self.embed_dim = tuple(embed_dim)
        self.num_features = self.head_hidden_size = sum(embed_dim)
        for i in range(self.num_branches):
            setattr(self, f"pos_embed_{i}", nn.Parameter(torch.zeros(1, 1 + num_patches[i], embed_dim[i])))
            setattr(self, f"cls_token_{i}", nn.Parameter(torch.zeros(1, 1, embed_dim[i])))
        self.patch_embed = nn.ModuleList([
            PatchEmbed(size, p, in_chans, dim, multi_conv=multi_conv)
            for size, p, dim in zip(self.img_size_scaled, patch_size, embed_dim)])
        self.pos_drop = nn.Dropout(pos_drop_rate)

        total_depth = sum(sum(block_depth[-2:]) for block_depth in depth)
        rates = [r.item() for r in torch.linspace(0, drop_path_rate, total_depth)]
        blocks = []
        start = 0
        for block_depth in depth:
            stack_depth = max(block_depth[:-1]) + block_depth[-1]
            blocks.append(MultiScaleBlock(embed_dim, block_depth, num_heads, mlp_ratio, qkv_bias=qkv_bias,
                                          proj_drop=proj_drop_rate, attn_drop=attn_drop_rate,
                                          drop_path=rates[start:start + stack_depth], norm_layer=norm_layer))
            start += stack_depth
        self.blocks = nn.ModuleList(blocks)
        self.num_feature_blocks = len(depth)
        self.feature_info = [dict(num_chs=embed_dim[b], reduction=round(patch_size[b] / img_scale[b]),
                                  module=f"blocks.{i}")
                             for b in range(self.num_branches) for i in range(self.num_feature_blocks)]
        self.norm = nn.ModuleList([norm_layer(dim) for dim in embed_dim])
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._heads(num_classes)
        self.init_weights()

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (each branch's first convolution) and ``classifier`` (the branches' heads)."""
        suffix = ".0" if isinstance(self.patch_embed[0].proj, nn.Sequential) else ""
        first_convs = tuple(f"patch_embed.{i}.proj{suffix}" for i in range(self.num_branches))
        return {"first_conv": first_convs, "classifier": tuple(f"head.{i}" for i in range(self.num_branches))}

    def init_weights(self):
        """timm's scheme: truncated-normal position embeddings and class tokens, branch by branch, and Linear
        weights (std 0.02), zero Linear biases; the patch embeddings keep the convolutions' default."""
        for i in range(self.num_branches):
            trunc_normal_(getattr(self, f"pos_embed_{i}"), std=0.02)
            trunc_normal_(getattr(self, f"cls_token_{i}"), std=0.02)
        init_linear_layers(self)

    def _heads(self, num_classes):
        """One linear classifier per branch (identities for ``num_classes=0``)."""
        return nn.ModuleList([nn.Linear(dim, num_classes) if num_classes > 0 else nn.Identity()
                              for dim in self.embed_dim])

    def get_classifier(self):
        """The branches' linear classifiers (a ModuleList)."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """New (default-initialised) heads for ``num_classes`` (0: identities); ``global_pool`` changes the pooling
        too."""
        self.num_classes = num_classes
        if global_pool is not None:
            _check_global_pool(global_pool)
            self.global_pool = global_pool
        self.head = self._heads(num_classes)
        self.head.train(self.training)

    def _embed(self, x):
        """Images -> each branch's tokens: resized to the branch's size, patch-embedded, the class token prepended,
        position embeddings added, then ``pos_drop``."""
        xs = []
        for i, patch_embed in enumerate(self.patch_embed):
            tokens = patch_embed(_scale_image(x, self.img_size_scaled[i], self.crop_scale))
            cls_token = getattr(self, f"cls_token_{i}").expand(x.shape[0], -1, -1)
            tokens = torch.cat((cls_token, tokens), dim=1)
            tokens = tokens + getattr(self, f"pos_embed_{i}")
            xs.append(self.pos_drop(tokens))
        return xs

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> each branch's normalised sequence (N, 1 + patches, embed_dim), as a
        list."""
        xs = self._embed(x)
        for block in self.blocks:
            xs = block(xs)
        return [norm(x) for norm, x in zip(self.norm, xs)]

    def forward_head(self, xs, pre_logits=False):
        """Each branch pooled (class token, or the patch tokens' average) and dropped out; the pooled features
        concatenated if ``pre_logits`` or headless, else the mean of the branches' logits."""
        if self.global_pool == "avg":
            xs = [x[:, 1:].mean(dim=1) for x in xs]
        else:
            xs = [x[:, 0] for x in xs]
        xs = [self.head_drop(x) for x in xs]
        if pre_logits or isinstance(self.head[0], nn.Identity):
            return torch.cat(xs, dim=1)
        return torch.stack([head(x) for head, x in zip(self.head, xs)], dim=0).mean(dim=0)

    def forward(self, x):
        xs = self.forward_features(x)
        x = self.forward_head(xs)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The patch tokens of each branch after the multi-scale blocks picked by ``indices`` (None: all, n: the
        last n, or a list), counted branch by branch (block i of branch b is index b * blocks + i), as
        (N, C, rows, cols) maps ('NCHW') or sequences ('NLC'); and (unless ``intermediates_only``) the branches'
        final normalised sequences. ``norm`` applies each branch's final norm; ``stop_early`` skips later blocks."""
        if output_fmt not in ("NCHW", "NLC"):
            raise ValueError(f"output_fmt must be 'NCHW' or 'NLC', got {output_fmt!r}")
        num_blocks = self.num_feature_blocks
        take = take_indices(self.num_branches * num_blocks, indices)
        last_block = max(i % num_blocks for i in take)
        batch = x.shape[0]
        xs = self._embed(x)
        blocks = list(self.blocks)[:last_block + 1] if stop_early else list(self.blocks)
        per_branch = [[] for _ in range(self.num_branches)]
        for i, block in enumerate(blocks):
            xs = block(xs)
            for b, norm_layer in enumerate(self.norm):
                if b * num_blocks + i in take:
                    y = norm_layer(xs[b]) if norm else xs[b]
                    per_branch[b].append(y[:, 1:])
        intermediates = []
        for patch_embed, features in zip(self.patch_embed, per_branch):
            if output_fmt == "NCHW":
                rows = patch_embed.img_size[0] // patch_embed.patch_size[0]
                cols = patch_embed.img_size[1] // patch_embed.patch_size[1]
                features = [y.reshape(batch, rows, cols, -1).permute(0, 3, 1, 2).contiguous() for y in features]
            intermediates.extend(features)
        if intermediates_only:
            return intermediates
        return [norm_layer(x) for norm_layer, x in zip(self.norm, xs)], intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the multi-scale blocks after the last one ``indices`` picks (and the final norms, the heads);
        returns the absolute indices."""
        num_blocks = self.num_feature_blocks
        take = take_indices(self.num_branches * num_blocks, indices)
        last_block = max(i % num_blocks for i in take)
        self.blocks = nn.ModuleList(list(self.blocks)[:last_block + 1])
        if prune_norm:
            self.norm = nn.ModuleList([nn.Identity() for _ in range(self.num_branches)])
        if prune_head:
            self.reset_classifier(0)
        return take


def _create_crossvit(variant, pretrained, progress, kwargs, **model_args):
    """A CrossViT entrypoint's body: timm's architecture arguments (the image size of timm's weights), overridable
    by the caller's ``kwargs``; ``features_only`` returns by default the last block's patch tokens of both branches,
    as timm's."""
    config = {**model_args, **kwargs}
    if config.get("features_only"):
        num_blocks = len(config.get("depth", ((1, 3, 1),) * 3))
        config.setdefault("out_indices", (num_blocks - 1, 2 * num_blocks - 1))
    return build_model(CrossVit, variant, pretrained, progress=progress, **config)


def _crossvit_240(embed_dim, depth, num_heads, mlp_ratio, **extra):
    """A CrossViT at 240 pixels (the large-patch branch at 224): 12- and 16-pixel patches, ``depth`` transformer
    blocks in each branch of each of the three multi-scale blocks; ``extra`` arguments (the dagger's
    ``multi_conv``)."""
    return dict(img_size=240, img_scale=(1.0, 224 / 240), patch_size=(12, 16), embed_dim=embed_dim,
                depth=((1, depth, 0),) * 3, num_heads=num_heads, mlp_ratio=mlp_ratio, **extra)


def _crossvit_408(embed_dim, depth, num_heads, mlp_ratio):
    """A dagger CrossViT at 408 pixels (the large-patch branch at 384)."""
    return dict(img_size=408, img_scale=(1.0, 384 / 408), patch_size=(12, 16), embed_dim=embed_dim,
                depth=((1, depth, 0),) * 3, num_heads=num_heads, mlp_ratio=mlp_ratio, multi_conv=True)


@register_model
def crossvit_tiny_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-Ti at 240: widths 96 / 192, 3 heads, 4 blocks per branch and multi-scale block."""
    return _create_crossvit("crossvit_tiny_240", pretrained, progress, kwargs,
                            **_crossvit_240((96, 192), 4, (3, 3), (4, 4, 1)))


@register_model
def crossvit_small_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-S at 240: widths 192 / 384, 6 heads, 4 blocks per branch and multi-scale block."""
    return _create_crossvit("crossvit_small_240", pretrained, progress, kwargs,
                            **_crossvit_240((192, 384), 4, (6, 6), (4, 4, 1)))


@register_model
def crossvit_base_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-B at 240: widths 384 / 768, 12 heads, 4 blocks per branch and multi-scale block."""
    return _create_crossvit("crossvit_base_240", pretrained, progress, kwargs,
                            **_crossvit_240((384, 768), 4, (12, 12), (4, 4, 1)))


@register_model
def crossvit_9_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-9 at 240: widths 128 / 256, 4 heads, 3 blocks per branch and multi-scale block, MLP ratio 3."""
    return _create_crossvit("crossvit_9_240", pretrained, progress, kwargs,
                            **_crossvit_240((128, 256), 3, (4, 4), (3, 3, 1)))


@register_model
def crossvit_15_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-15 at 240: widths 192 / 384, 6 heads, 5 blocks per branch and multi-scale block, MLP ratio 3."""
    return _create_crossvit("crossvit_15_240", pretrained, progress, kwargs,
                            **_crossvit_240((192, 384), 5, (6, 6), (3, 3, 1)))


@register_model
def crossvit_18_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-18 at 240: widths 224 / 448, 7 heads, 6 blocks per branch and multi-scale block, MLP ratio 3."""
    return _create_crossvit("crossvit_18_240", pretrained, progress, kwargs,
                            **_crossvit_240((224, 448), 6, (7, 7), (3, 3, 1)))


@register_model
def crossvit_9_dagger_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-9-dagger at 240: CrossViT-9 with the convolutional patch embedding."""
    return _create_crossvit("crossvit_9_dagger_240", pretrained, progress, kwargs,
                            **_crossvit_240((128, 256), 3, (4, 4), (3, 3, 1), multi_conv=True))


@register_model
def crossvit_15_dagger_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-15-dagger at 240: CrossViT-15 with the convolutional patch embedding."""
    return _create_crossvit("crossvit_15_dagger_240", pretrained, progress, kwargs,
                            **_crossvit_240((192, 384), 5, (6, 6), (3, 3, 1), multi_conv=True))


@register_model
def crossvit_15_dagger_408(pretrained=False, progress=True, **kwargs):
    """CrossViT-15-dagger at 408 (the large-patch branch at 384)."""
    return _create_crossvit("crossvit_15_dagger_408", pretrained, progress, kwargs,
                            **_crossvit_408((192, 384), 5, (6, 6), (3, 3, 1)))


@register_model
def crossvit_18_dagger_240(pretrained=False, progress=True, **kwargs):
    """CrossViT-18-dagger at 240: CrossViT-18 with the convolutional patch embedding."""
    return _create_crossvit("crossvit_18_dagger_240", pretrained, progress, kwargs,
                            **_crossvit_240((224, 448), 6, (7, 7), (3, 3, 1), multi_conv=True))


@register_model
def crossvit_18_dagger_408(pretrained=False, progress=True, **kwargs):
    """CrossViT-18-dagger at 408 (the large-patch branch at 384)."""
    return _create_crossvit("crossvit_18_dagger_408", pretrained, progress, kwargs,
                            **_crossvit_408((224, 448), 6, (7, 7), (3, 3, 1)))
