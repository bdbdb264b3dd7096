"""Vision Transformers with relative position biases (timm's ``vision_transformer_relpos`` models, after Dosovitskiy
et al. 2020, "An Image is Worth 16x16 Words", and Liu et al. 2022, "Swin Transformer V2: Scaling Up Capacity and
Resolution"): vit_relpos_{small,medium,base}_patch16_224, vit_srelpos_{small,medium}_patch16_224,
vit_relpos_medium_patch16_cls_224, vit_relpos_base_patch16_clsgap_224, vit_relpos_medium_patch16_rpn_224 and
vit_relpos_base_patch32_plus_rpn_256 with ImageNet-1k weights, and timm's variants without published weights
(vit_relpos_base_patch16_plus_240, vit_relpos_base_patch16_cls_224, vit_relpos_{small,base}_patch16_rpn_224 and
the tiny test_vit_relpos at 160).

A ViT without absolute position embeddings: each block's attention adds to its scores a bias that depends on the
relative offset of the query's and the key's patches, computed by a small MLP from the offset's log-spaced
coordinates (``RelPosMlp``, Swin V2's continuous position bias) or looked up in a learnt table (``RelPosBias``).
timm's variants:

- by default no class token and the patch tokens' average classified, with layer scale (``ls1``, ``ls2``) on both
  residual branches; ``fc_norm`` moves the final norm after the pooling;
- ``cls``: a class token (zero position bias), classified; ``clsgap``: a class token, but the average of the patch
  tokens classified;
- ``rpn``: residual post-norm blocks (``ResPostRelPosBlock``: x + norm(attn(x)), x + norm(mlp(x)), the norms' weights
  starting small, as in Swin V2);
- ``srelpos``: one position-bias MLP shared by all blocks (``shared_rel_pos``).

Model names, module names, ``state_dict`` keys, defaults and initialisation follow timm, so timm's checkpoints load
directly. A model runs at the image size it was built for (``img_size``); ``features_only=True`` returns the last
blocks' outputs (timm's default: three) as (N, C, H/p, W/p) maps.
"""
from functools import partial

import engine as torch
from engine import nn
from engine.nn import functional as F

from .._features import FeatureGetterNet
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, PatchEmbed, drop_path_module
from ._pos_embed_rel import RelPosBias, RelPosMlp
from .vision_transformer import LayerScale, ViTApi, _init_module_tree

__all__ = []

_WEIGHT_INITS = ("reset", "skip", "")
_layer_norm = partial(nn.LayerNorm, eps=1e-6)


class RelPosAttention(nn.Module):
    """Multi-head self-attention with a relative position bias added to the scores: its own (``rel_pos_cls``, built
    for ``num_heads``) or, without one, the bias shared by all blocks that ``forward`` is given. ``qk_norm``
    normalises queries and keys per head (``q_norm``, ``k_norm``)."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_norm=False, rel_pos_cls=None, attn_drop=0.0,
                 proj_drop=0.0, norm_layer=nn.LayerNorm):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.rel_pos = rel_pos_cls(num_heads=num_heads) if rel_pos_cls else None
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x, shared_rel_pos=None):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        attn_bias = self.rel_pos.get_bias() if self.rel_pos is not None else shared_rel_pos
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class RelPosBlock(nn.Module):
    """Pre-norm block: x + drop_path(ls1(attn(norm1(x)))), then x + drop_path(ls2(mlp(norm2(x)))); ``init_values``
    enables the layer scales (identities otherwise)."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, rel_pos_cls=None,
                 init_values=None, proj_drop=0.0, attn_drop=0.0, drop_path=0.0, act_layer=nn.GELU,
                 norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = RelPosAttention(dim, num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm, rel_pos_cls=rel_pos_cls,
                                    attn_drop=attn_drop, proj_drop=proj_drop, norm_layer=norm_layer)
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x, shared_rel_pos=None):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x), shared_rel_pos=shared_rel_pos)))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class ResPostRelPosBlock(nn.Module):
    """Residual post-norm block: x + drop_path(norm1(attn(x))), then x + drop_path(norm2(mlp(x))). The branch norms
    replace layer scale: with ``init_values`` their weights start at that value. Takes ``RelPosBlock``'s
    arguments."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, rel_pos_cls=None,
                 init_values=None, proj_drop=0.0, attn_drop=0.0, drop_path=0.0, act_layer=nn.GELU,
                 norm_layer=nn.LayerNorm):
        super().__init__()
        self.init_values = init_values
        self.attn = RelPosAttention(dim, num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm, rel_pos_cls=rel_pos_cls,
                                    attn_drop=attn_drop, proj_drop=proj_drop, norm_layer=norm_layer)
        self.norm1 = norm_layer(dim)
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.norm2 = norm_layer(dim)
        self.drop_path2 = drop_path_module(drop_path)
        self.init_weights()

    def init_weights(self):
        """The branch norms' weights at ``init_values`` (when given); run again by the model's '' init."""
        if self.init_values is not None:
            nn.init.constant_(self.norm1.weight, self.init_values)
            nn.init.constant_(self.norm2.weight, self.init_values)

    def forward(self, x, shared_rel_pos=None):
        x = x + self.drop_path1(self.norm1(self.attn(x, shared_rel_pos=shared_rel_pos)))
        x = x + self.drop_path2(self.norm2(self.mlp(x)))
        return x


def _rel_pos_class(rel_pos_type, rel_pos_dim, window_size, prefix_tokens):
    """The relative position layer for timm's ``rel_pos_type``: 'mlp...' a ``RelPosMlp`` (``rel_pos_dim`` hidden
    units if given; Swin V2's coordinates if the name has 'swin', timm's 'cr' ones otherwise), anything else a
    ``RelPosBias`` table; as a class awaiting ``num_heads``."""
    args = dict(window_size=window_size, prefix_tokens=prefix_tokens)
    if not rel_pos_type.startswith("mlp"):
        return partial(RelPosBias, **args)
    if rel_pos_dim:
        args["hidden_dim"] = rel_pos_dim
    if "swin" in rel_pos_type:
        args["mode"] = "swin"
    return partial(RelPosMlp, **args)


class VisionTransformerRelPos(ViTApi, nn.Module):
    """Patch embedding, an optional class token, ``depth`` blocks with relative position biases, a norm, pooling and a
    linear head (timm's ``VisionTransformerRelPos``, its arguments and defaults).

    ``rel_pos_type`` 'mlp' (or 'mlp_swin') computes the biases with an MLP of ``rel_pos_dim`` hidden units (default
    128), 'bias' looks them up in a table; ``shared_rel_pos`` makes one for all blocks. ``global_pool``: 'avg'
    averages the patch tokens, 'token' takes the class token (``class_token=True``), '' keeps the sequence; ``fc_norm``
    moves the final norm after the pooling. ``init_values`` is the layer scales' initial value (or the
    post-norms' weights with ``block_fn=ResPostRelPosBlock``). Dropout: ``attn_drop_rate`` on attention weights,
    ``proj_drop_rate`` in the blocks, ``drop_rate`` before the head; ``drop_path_rate`` is the stochastic depth of
    the last block (rising linearly from 0). ``weight_init``: 'reset' (timm's default: the layers' defaults and a
    N(0, 1e-12) class token), '' (timm's ViT scheme: truncated-normal Linear weights, zero biases) or 'skip';
    ``fix_init`` divides each block's output projections by sqrt(2 (i + 1)). ``num_classes=0`` gives the pooled
    features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=768,
                 depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True, qk_norm=False, init_values=1e-6,
                 class_token=False, fc_norm=False, rel_pos_type="mlp", rel_pos_dim=None, shared_rel_pos=False,
                 drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, weight_init="reset",
                 fix_init=False, norm_layer=None, act_layer=None, block_fn=RelPosBlock):
        super().__init__()
        self._check_global_pool(global_pool, class_token)
        if weight_init not in _WEIGHT_INITS:
            raise ValueError(f"weight_init must be one of {_WEIGHT_INITS}, got {weight_init!r}")
        norm_layer = norm_layer or _layer_norm
        act_layer = act_layer or nn.GELU
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1 if class_token else 0

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        rel_pos_cls = _rel_pos_class(rel_pos_type, rel_pos_dim, self.patch_embed.grid_size, self.num_prefix_tokens)
        self.shared_rel_pos = None
        if shared_rel_pos:
            self.shared_rel_pos = rel_pos_cls(num_heads=num_heads)
            rel_pos_cls = None
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.ModuleList([
            block_fn(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, qk_norm=qk_norm,
                     rel_pos_cls=rel_pos_cls, init_values=init_values, proj_drop=proj_drop_rate,
                     attn_drop=attn_drop_rate, drop_path=drop_path_rates[i], act_layer=act_layer,
                     norm_layer=norm_layer)
            for i in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = norm_layer(embed_dim) if not fc_norm else nn.Identity()
        self.fc_norm = norm_layer(embed_dim) if fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.fix_init = fix_init
        if weight_init != "skip":
            self.init_weights(weight_init)

    def init_weights(self, mode="reset"):
        """The class token drawn from N(0, 1e-12); with ``mode`` '' timm's ViT scheme for every submodule
        (``_init_module_tree``); with ``fix_init`` each block's ``attn.proj`` and ``mlp.fc2`` weights divided by
        sqrt(2 (i + 1))."""
        if self.cls_token is not None:
            nn.init.normal_(self.cls_token, std=1e-6)
        if mode == "":
            _init_module_tree(self)
        if self.fix_init:
            self._fix_init_weight()

    def _embed(self, x):
        """Images -> patch tokens, the class token (if any) prepended, and the relative position bias all blocks share
        ((1, heads, tokens, tokens), or None)."""
        x = self.patch_embed(x)
        if self.cls_token is not None:
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        return x, self.shared_rel_pos.get_bias() if self.shared_rel_pos is not None else None

    @staticmethod
    def _block(block, index, x, shared_rel_pos):
        """Block ``index`` on the token sequence ``x``, with the shared relative position bias (or None)."""
        return block(x, shared_rel_pos=shared_rel_pos)


def _relpos(variant, pretrained, progress, kwargs, **model_args):
    """An entrypoint's body: timm's architecture arguments (with the image size of timm's weights), overridable by
    the caller's ``kwargs``."""
    return build_model(VisionTransformerRelPos, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def vit_relpos_base_patch32_plus_rpn_256(pretrained=False, progress=True, **kwargs):
    """ViT-B/32+ at 256 with residual post-norm blocks: width 896, 12 blocks, 14 heads, MLP position biases, no class
    token."""
    return _relpos("vit_relpos_base_patch32_plus_rpn_256", pretrained, progress, kwargs, img_size=256, patch_size=32,
                   embed_dim=896, depth=12, num_heads=14, block_fn=ResPostRelPosBlock)


@register_model
def vit_relpos_small_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/16 at 224: width 384, 12 blocks, 6 heads, MLP position biases, no class token, norm after pooling."""
    return _relpos("vit_relpos_small_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=384, depth=12, num_heads=6, qkv_bias=False, fc_norm=True)


@register_model
def vit_relpos_medium_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-M/16 at 224: width 512, 12 blocks, 8 heads, MLP position biases, no class token, norm after pooling."""
    return _relpos("vit_relpos_medium_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=512, depth=12, num_heads=8, qkv_bias=False, fc_norm=True)


@register_model
def vit_relpos_base_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224: width 768, 12 blocks, 12 heads, MLP position biases, no class token, norm after pooling."""
    return _relpos("vit_relpos_base_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=768, depth=12, num_heads=12, qkv_bias=False, fc_norm=True)


@register_model
def vit_srelpos_small_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/16 at 224 with one position-bias MLP (384 hidden units) for all blocks: width 384, 12 blocks, 6 heads, no
    class token."""
    return _relpos("vit_srelpos_small_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=384, depth=12, num_heads=6, qkv_bias=False, fc_norm=False, rel_pos_dim=384,
                   shared_rel_pos=True)


@register_model
def vit_srelpos_medium_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-M/16 at 224 with one position-bias MLP (512 hidden units) for all blocks: width 512, 12 blocks, 8 heads, no
    class token."""
    return _relpos("vit_srelpos_medium_patch16_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=512, depth=12, num_heads=8, qkv_bias=False, fc_norm=False, rel_pos_dim=512,
                   shared_rel_pos=True)


@register_model
def vit_relpos_medium_patch16_cls_224(pretrained=False, progress=True, **kwargs):
    """ViT-M/16 at 224 with a class token, classified: width 512, 12 blocks, 8 heads, MLP position biases (256 hidden
    units)."""
    return _relpos("vit_relpos_medium_patch16_cls_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=512, depth=12, num_heads=8, qkv_bias=False, fc_norm=False, rel_pos_dim=256,
                   class_token=True, global_pool="token")


@register_model
def vit_relpos_base_patch16_clsgap_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 with a class token, but the patch tokens' average classified: width 768, 12 blocks, 12 heads,
    MLP position biases, norm after pooling."""
    return _relpos("vit_relpos_base_patch16_clsgap_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=768, depth=12, num_heads=12, qkv_bias=False, fc_norm=True, class_token=True)


@register_model
def vit_relpos_medium_patch16_rpn_224(pretrained=False, progress=True, **kwargs):
    """ViT-M/16 at 224 with residual post-norm blocks: width 512, 12 blocks, 8 heads, MLP position biases, no class
    token."""
    return _relpos("vit_relpos_medium_patch16_rpn_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=512, depth=12, num_heads=8, qkv_bias=False, block_fn=ResPostRelPosBlock)


@register_model
def vit_relpos_base_patch16_plus_240(pretrained=False, progress=True, **kwargs):
    """ViT-B/16+ at 240: width 896, 12 blocks, 14 heads, MLP position biases, no class token."""
    return _relpos("vit_relpos_base_patch16_plus_240", pretrained, progress, kwargs, img_size=240, patch_size=16,
                   embed_dim=896, depth=12, num_heads=14)


@register_model
def vit_relpos_base_patch16_cls_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 with a class token, classified: width 768, 12 blocks, 12 heads, MLP position biases."""
    return _relpos("vit_relpos_base_patch16_cls_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=768, depth=12, num_heads=12, qkv_bias=False, class_token=True, global_pool="token")


@register_model
def vit_relpos_small_patch16_rpn_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/16 at 224 with residual post-norm blocks: width 384, 12 blocks, 6 heads, MLP position biases, no class
    token."""
    return _relpos("vit_relpos_small_patch16_rpn_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=384, depth=12, num_heads=6, qkv_bias=False, block_fn=ResPostRelPosBlock)


@register_model
def vit_relpos_base_patch16_rpn_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 with residual post-norm blocks: width 768, 12 blocks, 12 heads, MLP position biases, no class
    token."""
    return _relpos("vit_relpos_base_patch16_rpn_224", pretrained, progress, kwargs, img_size=224, patch_size=16,
                   embed_dim=768, depth=12, num_heads=12, qkv_bias=False, block_fn=ResPostRelPosBlock)


@register_model
def test_vit_relpos(pretrained=False, progress=True, **kwargs):
    """timm's tiny test relative-position ViT/16 at 160: width 96, 9 blocks, 3 heads, MLP ratio 2, MLP position
    biases, no class token, norm after pooling."""
    return _relpos("test_vit_relpos", pretrained, progress, kwargs, img_size=160, patch_size=16, embed_dim=96, depth=9,
                   num_heads=3, mlp_ratio=2, qkv_bias=False, fc_norm=True)
