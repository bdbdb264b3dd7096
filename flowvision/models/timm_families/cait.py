"""CaiT (Touvron et al. 2021, "Going deeper with Image Transformers"): timm's CaiT models.

A Vision Transformer made deeper by two changes. Every residual branch is scaled by a learnt per-channel factor
(layer scale) that starts near zero, and the self-attention is talking-heads attention: the heads' attention logits
are mixed by a learnt linear map across heads before the softmax, and the weights again after it. The class token
joins late: the patch tokens (with position embeddings, no class token) go through the self-attention blocks, then
two class-attention blocks update only the class token, attending from it to itself and the frozen patch tokens.
The final class token is classified.

This is timm's ``Cait``: model names, module names, ``state_dict`` keys, defaults and initialisation follow timm,
so timm's checkpoints load with ``strict=True`` and give timm's outputs. A model runs at the image size it was built
for (``img_size``). ``features_only=True`` returns the outputs of the last self-attention blocks (timm's default:
three) as (N, C, H/16, W/16) maps.
"""
import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import (Mlp, PatchEmbed, TokenPoolHeadApi, check_token_pool, drop_path_module, init_linear_layers,
                      trunc_normal_)

__all__ = []


def _layer_norm(dim):
    """CaiT's LayerNorm (eps 1e-6)."""
    return nn.LayerNorm(dim, eps=1e-6)


class ClassAttnBase(nn.Module):
    """What the class-attention layers share (CaiT's ``ClassAttn``, VOLO's ``ClassAttention``, CrossViT's
    ``CrossAttention``): the class token (the first of the sequence) is the only query, every token gives a key and
    a value; the heads' outputs are concatenated, projected by ``proj`` and returned as the class token's update
    (N, 1, dim)."""

    def _add_heads(self, dim, num_heads, head_dim=None):
        """``num_heads`` heads of ``head_dim`` channels (default: dim / num_heads), logits scaled by 1 / sqrt of it;
        returns their total width."""
        self.num_heads = num_heads
        self.head_dim = head_dim if head_dim is not None else dim // num_heads
        self.scale = self.head_dim ** -0.5
        return self.head_dim * num_heads

    def _add_output(self, inner_dim, dim, attn_drop, proj_drop):
        """Register the dropout of the attention weights (``attn_drop``), ``proj`` (the heads' ``inner_dim``
        channels to ``dim``) and its dropout (``proj_drop``)."""
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(inner_dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def _split_heads(self, x, tokens):
        """(N, tokens, heads * head_dim) projections as (N, heads, tokens, head_dim)."""
        return x.reshape(x.shape[0], tokens, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

    def _attend(self, q, k, v, logit_scale=None):
        """The class token's update from its queries (N, heads, 1, head_dim) and every token's keys and values
        (N, heads, tokens, head_dim): softmax attention (the logits times ``logit_scale`` when given, else scaled
        already), dropout, the heads' outputs concatenated and projected."""
        attn = q @ k.transpose(-2, -1)
        if logit_scale is not None:
            attn = attn * logit_scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(q.shape[0], 1, self.num_heads * self.head_dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class ClassAttn(ClassAttnBase):
    """CaiT's class attention (see ``ClassAttnBase``): the query, keys and values by their own projections ``q``,
    ``k`` and ``v``."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self._add_heads(dim, num_heads)
        self.q = nn.Linear(dim, dim, bias=qkv_bias)
        self.k = nn.Linear(dim, dim, bias=qkv_bias)
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self._add_output(dim, dim, attn_drop, proj_drop)

    def forward(self, x):
        tokens = x.shape[1]
        q = self._split_heads(self.q(x[:, 0]), 1)
        k = self._split_heads(self.k(x), tokens)
        v = self._split_heads(self.v(x), tokens)
        return self._attend(q * self.scale, k, v)


class LayerScaleBlockClassAttn(nn.Module):
    """A class-attention block: the class token x_cls becomes x_cls + drop_path(gamma_1 * attn(norm1([x_cls, x]))),
    then x_cls + drop_path(gamma_2 * mlp(norm2(x_cls))); the patch tokens x are left as they are. ``gamma_1`` and
    ``gamma_2`` are layer scales starting at ``init_values``."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 init_values=1e-4):
        super().__init__()
        self.norm1 = _layer_norm(dim)
        self.attn = ClassAttn(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path = drop_path_module(drop_path)
        self.norm2 = _layer_norm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=proj_drop)
        self.gamma_1 = nn.Parameter(torch.full((dim,), float(init_values)))
        self.gamma_2 = nn.Parameter(torch.full((dim,), float(init_values)))

    def forward(self, x, x_cls):
        u = torch.cat((x_cls, x), dim=1)
        x_cls = x_cls + self.drop_path(self.gamma_1 * self.attn(self.norm1(u)))
        x_cls = x_cls + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x_cls)))
        return x_cls


class TalkingHeadAttn(nn.Module):
    """Talking-heads self-attention (Shazeer et al. 2020): scaled dot-product logits per head, mixed across heads by
    ``proj_l`` before the softmax and the weights mixed again by ``proj_w`` after it; one ``qkv`` projection in,
    ``proj`` out."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_l = nn.Linear(num_heads, num_heads)
        self.proj_w = nn.Linear(num_heads, num_heads)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0] * self.scale, qkv[1], qkv[2]
        attn = q @ k.transpose(-2, -1)
        attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = attn.softmax(dim=-1)
        attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(batch, tokens, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class LayerScaleBlock(nn.Module):
    """A self-attention block with layer scale: x + drop_path(gamma_1 * attn(norm1(x))), then
    x + drop_path(gamma_2 * mlp(norm2(x))), the attention talking-heads."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 init_values=1e-4):
        super().__init__()
        self.norm1 = _layer_norm(dim)
        self.attn = TalkingHeadAttn(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop,
                                    proj_drop=proj_drop)
        self.drop_path = drop_path_module(drop_path)
        self.norm2 = _layer_norm(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=proj_drop)
        self.gamma_1 = nn.Parameter(torch.full((dim,), float(init_values)))
        self.gamma_2 = nn.Parameter(torch.full((dim,), float(init_values)))

    def forward(self, x):
        x = x + self.drop_path(self.gamma_1 * self.attn(self.norm1(x)))
        x = x + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x)))
        return x


class Cait(TokenPoolHeadApi, nn.Module):
    """Patch embedding with position embeddings, ``depth`` talking-heads self-attention blocks on the patch tokens,
    ``depth_token_only`` class-attention blocks that update the class token, a norm and a linear head (timm's
    ``Cait``, its arguments and defaults).

    ``init_values`` is the layer scales' initial value; ``mlp_ratio_token_only`` the class-attention blocks' MLP
    ratio. ``global_pool``: 'token' classifies the class token, 'avg' the patch tokens' average, '' returns the
    whole sequence. Dropout: ``pos_drop_rate`` after the position embeddings, ``attn_drop_rate`` on attention
    weights and ``proj_drop_rate`` in the self-attention blocks, ``drop_rate`` before the head; ``drop_path_rate`` is
    the stochastic depth of every self-attention block (the same for all, as in timm). ``num_classes=0`` gives the
    pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token", embed_dim=768,
                 depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True, drop_rate=0.0, pos_drop_rate=0.0,
                 proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, init_values=1e-4, depth_token_only=2,
                 mlp_ratio_token_only=4.0):
        super().__init__()
        check_token_pool(global_pool)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.num_prefix_tokens = 1
        self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches, embed_dim))
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.blocks = nn.Sequential(*[
            LayerScaleBlock(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, proj_drop=proj_drop_rate,
                            attn_drop=attn_drop_rate, drop_path=drop_path_rate, init_values=init_values)
            for _ in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(num_chs=embed_dim, reduction=reduction, module=f"blocks.{i}") for i in range(depth)]
        self.blocks_token_only = nn.ModuleList([
            LayerScaleBlockClassAttn(embed_dim, num_heads, mlp_ratio=mlp_ratio_token_only, qkv_bias=qkv_bias,
                                     init_values=init_values)
            for _ in range(depth_token_only)])
        self.norm = _layer_norm(embed_dim)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal position embeddings, class token and Linear weights (std 0.02), zero
        Linear biases; the patch projection keeps the convolution's default."""
        trunc_normal_(self.pos_embed, std=0.02)
        trunc_normal_(self.cls_token, std=0.02)
        init_linear_layers(self)

    def _embed(self, x):
        """Images -> patch tokens with position embeddings, after ``pos_drop``. The tokens are laid out in memory
        as torch lays them out (channel by channel, as the convolution's map), as dropout draws its mask in memory
        order: so the same seed drops timm's elements."""
        x = self.patch_embed(x)
        x = x + self.pos_embed
        x = x.transpose(1, 2).contiguous().transpose(1, 2)
        x = self.pos_drop(x)
        return x

    def forward_cls(self, x):
        """The class token through the class-attention blocks over the patch tokens ``x``, prepended to them."""
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        for block in self.blocks_token_only:
            cls_tokens = block(x, cls_tokens)
        return torch.cat((cls_tokens, x), dim=1)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised sequence (N, 1 + patches, embed_dim), class token first."""
        x = self._embed(x)
        x = self.blocks(x)
        if self.blocks_token_only is not None:
            x = self.forward_cls(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the self-attention blocks picked by ``indices`` (None: all, n: the last n, or a list) as
        (N, C, H/p, W/p) maps ('NCHW') or token sequences ('NLC'), and (unless ``intermediates_only``) the final
        normalised sequence with the class token. ``norm`` applies the final norm to each; ``stop_early`` skips the
        blocks after the last one picked."""
        take, blocks = intermediate_stages(self.blocks, indices, stop_early, output_fmt, ("NCHW", "NLC"))
        batch = x.shape[0]
        x = self._embed(x)
        intermediates = []
        for i, block in enumerate(blocks):
            x = block(x)
            if i in take:
                intermediates.append(self.norm(x) if norm else x)
        if output_fmt == "NCHW":
            rows, cols = self.patch_embed.grid_size
            intermediates = [y.reshape(batch, rows, cols, -1).permute(0, 3, 1, 2).contiguous() for y in intermediates]
        if intermediates_only:
            return intermediates
        if self.blocks_token_only is not None:
            x = self.forward_cls(x)
        x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks, the final norm when asked, and with the head the
        class token and the class-attention blocks; returns the absolute indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = nn.Sequential(*list(self.blocks)[:max(take) + 1])
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.blocks_token_only = None
            self.cls_token = None
            self.num_prefix_tokens = 0
            self.reset_classifier(0, "")
        return take


def _cait(variant, pretrained, progress, kwargs, **model_args):
    """A CaiT entrypoint's body: timm's architecture arguments (the image size of timm's weights), overridable by the
    caller's ``kwargs``."""
    return build_model(Cait, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def cait_xxs24_224(pretrained=False, progress=True, **kwargs):
    """CaiT-XXS24 at 224: width 192, 24 + 2 blocks, 4 heads."""
    return _cait("cait_xxs24_224", pretrained, progress, kwargs, img_size=224, patch_size=16, embed_dim=192, depth=24,
                 num_heads=4, init_values=1e-5)


@register_model
def cait_xxs24_384(pretrained=False, progress=True, **kwargs):
    """CaiT-XXS24 at 384: width 192, 24 + 2 blocks, 4 heads."""
    return _cait("cait_xxs24_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=192, depth=24,
                 num_heads=4, init_values=1e-5)


@register_model
def cait_xxs36_224(pretrained=False, progress=True, **kwargs):
    """CaiT-XXS36 at 224: width 192, 36 + 2 blocks, 4 heads."""
    return _cait("cait_xxs36_224", pretrained, progress, kwargs, img_size=224, patch_size=16, embed_dim=192, depth=36,
                 num_heads=4, init_values=1e-5)


@register_model
def cait_xxs36_384(pretrained=False, progress=True, **kwargs):
    """CaiT-XXS36 at 384: width 192, 36 + 2 blocks, 4 heads."""
    return _cait("cait_xxs36_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=192, depth=36,
                 num_heads=4, init_values=1e-5)


@register_model
def cait_xs24_384(pretrained=False, progress=True, **kwargs):
    """CaiT-XS24 at 384: width 288, 24 + 2 blocks, 6 heads."""
    return _cait("cait_xs24_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=288, depth=24,
                 num_heads=6, init_values=1e-5)


@register_model
def cait_s24_224(pretrained=False, progress=True, **kwargs):
    """CaiT-S24 at 224: width 384, 24 + 2 blocks, 8 heads."""
    return _cait("cait_s24_224", pretrained, progress, kwargs, img_size=224, patch_size=16, embed_dim=384, depth=24,
                 num_heads=8, init_values=1e-5)


@register_model
def cait_s24_384(pretrained=False, progress=True, **kwargs):
    """CaiT-S24 at 384: width 384, 24 + 2 blocks, 8 heads."""
    return _cait("cait_s24_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=384, depth=24,
                 num_heads=8, init_values=1e-5)


@register_model
def cait_s36_384(pretrained=False, progress=True, **kwargs):
    """CaiT-S36 at 384: width 384, 36 + 2 blocks, 8 heads."""
    return _cait("cait_s36_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=384, depth=36,
                 num_heads=8, init_values=1e-6)


@register_model
def cait_m36_384(pretrained=False, progress=True, **kwargs):
    """CaiT-M36 at 384: width 768, 36 + 2 blocks, 16 heads."""
    return _cait("cait_m36_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=768, depth=36,
                 num_heads=16, init_values=1e-6)


@register_model
def cait_m48_448(pretrained=False, progress=True, **kwargs):
    """CaiT-M48 at 448: width 768, 48 + 2 blocks, 16 heads."""
    return _cait("cait_m48_448", pretrained, progress, kwargs, img_size=448, patch_size=16, embed_dim=768, depth=48,
                 num_heads=16, init_values=1e-6)
