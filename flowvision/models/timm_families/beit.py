"""BEiT (Bao et al. 2022, "BEiT: BERT Pre-Training of Image Transformers") and BEiT v2 (Peng et al. 2022, "BEiT v2:
Masked Image Modeling with Vector-Quantized Visual Tokenizers"): timm's ``beit`` models with ImageNet-1k weights.

Vision Transformers pre-trained by masked image modelling (predicting the visual tokens of masked patches) and then
fine-tuned for classification. As timm ports them, they differ from the original ViT in:

- relative position bias: no absolute position embeddings; every block's attention adds a learnt bias per head and
  relative offset of the query's and key's patches (``relative_position_bias_table``, looked up through the fixed
  ``relative_position_index``), with three extra entries for the class token;
- layer scale: each residual branch is scaled by a learnt per-channel ``gamma_1`` / ``gamma_2`` starting at
  ``init_values``;
- query and value biases without a key bias (``q_bias``, ``v_bias``; a key bias cancels in the softmax, so the
  ``k_bias`` buffer stays zero);
- the head reads the patch tokens' average after a LayerNorm (``fc_norm``), not the class token.

Model names, module names, ``state_dict`` keys, defaults and initialisation follow timm's ``beit`` module, so timm's
checkpoints load directly. A model runs at the image size it was built for (``img_size``); ``features_only=True``
returns the last blocks' outputs (timm's default: three) as (N, C, H/16, W/16) maps.
"""
import engine as torch
from engine import nn
from engine.nn import functional as F

from .._features import FeatureGetterNet
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, PatchEmbed, QkvBias, drop_path_module, init_linear_layers, trunc_normal_
from ._norm import LayerNorm
from ._pos_embed_rel import gen_relative_position_index, lookup_rel_pos_bias
from .eva import SwiGLU
from .vision_transformer import ViTApi

__all__ = []


class Attention(QkvBias, nn.Module):
    """Multi-head self-attention with BEiT's biases: a bias-free ``qkv`` projection plus learnt query and value biases
    and a zero key bias (``qkv_bias``), and, with a ``window_size`` (the patch grid), a relative position bias per
    head (``relative_position_bias_table``, zeros at first) added to the scores; a bias shared by all blocks may be
    passed to ``forward`` too. ``attn_head_dim`` sets the heads' width (default: dim / num_heads)."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0, window_size=None,
                 attn_head_dim=None):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = attn_head_dim if attn_head_dim is not None else dim // num_heads
        all_head_dim = self.head_dim * num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, all_head_dim * 3, bias=False)
        self._add_qkv_bias(all_head_dim, qkv_bias)
        if window_size:
            self.window_size = window_size
            self.num_relative_distance = (2 * window_size[0] - 1) * (2 * window_size[1] - 1) + 3
            self.relative_position_bias_table = nn.Parameter(torch.zeros(self.num_relative_distance, num_heads))
            index = gen_relative_position_index(window_size, class_token=True)
            self.register_buffer("relative_position_index", index, persistent=False)
        else:
            self.window_size = None
            self.relative_position_bias_table = None
            self.relative_position_index = None
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(all_head_dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def _get_rel_pos_bias(self):
        """The table looked up at every (query, key) pair of the class token and patches: (1, heads, tokens,
        tokens)."""
        tokens = self.window_size[0] * self.window_size[1] + 1
        bias = lookup_rel_pos_bias(self.relative_position_bias_table, self.relative_position_index, tokens)
        return bias.contiguous().unsqueeze(0)

    def forward(self, x, shared_rel_pos_bias=None):
        batch, tokens, _ = x.shape
        qkv = F.linear(x, self.qkv.weight, self._qkv_bias())
        qkv = qkv.reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn_bias = None
        if self.relative_position_bias_table is not None:
            attn_bias = self._get_rel_pos_bias()
        if shared_rel_pos_bias is not None:
            attn_bias = shared_rel_pos_bias if attn_bias is None else attn_bias + shared_rel_pos_bias
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_bias, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, self.num_heads * self.head_dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(nn.Module):
    """Pre-norm transformer block with layer scale: x + drop_path(gamma_1 * attn(norm1(x))), then
    x + drop_path(gamma_2 * mlp(norm2(x))) (without the gammas when ``init_values`` is None).

    ``swiglu_mlp`` uses a SwiGLU MLP, ``scale_mlp`` a LayerNorm inside the MLP; ``window_size`` gives the attention
    its own relative position bias.
    """

    def __init__(self, dim, num_heads, qkv_bias=False, mlp_ratio=4.0, scale_mlp=False, swiglu_mlp=False,
                 proj_drop=0.0, attn_drop=0.0, drop_path=0.0, init_values=None, act_layer=nn.GELU,
                 norm_layer=LayerNorm, window_size=None, attn_head_dim=None):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=proj_drop,
                              window_size=window_size, attn_head_dim=attn_head_dim)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        hidden_features = int(dim * mlp_ratio)
        mlp_norm = norm_layer if scale_mlp else None
        if swiglu_mlp:
            self.mlp = SwiGLU(dim, hidden_features, norm_layer=mlp_norm, drop=proj_drop)
        else:
            self.mlp = Mlp(dim, hidden_features, act_layer=act_layer, norm_layer=mlp_norm, drop=proj_drop)
        self.drop_path2 = drop_path_module(drop_path)
        self.init_values = init_values
        if init_values:
            self.gamma_1 = nn.Parameter(torch.full((dim,), float(init_values)))
            self.gamma_2 = nn.Parameter(torch.full((dim,), float(init_values)))
        else:
            self.gamma_1 = self.gamma_2 = None

    def forward(self, x, shared_rel_pos_bias=None):
        attn = self.attn(self.norm1(x), shared_rel_pos_bias=shared_rel_pos_bias)
        if self.gamma_1 is not None:
            attn = self.gamma_1 * attn
        x = x + self.drop_path1(attn)
        mlp = self.mlp(self.norm2(x))
        if self.gamma_2 is not None:
            mlp = self.gamma_2 * mlp
        x = x + self.drop_path2(mlp)
        return x


class RelativePositionBias(nn.Module):
    """One relative position bias that every block's attention adds (``use_shared_rel_pos_bias``): a table per head
    and relative offset of the ``window_size`` grid, plus the class token's three entries, zeros at first.
    ``forward`` gives the (heads, tokens, tokens) bias."""

    def __init__(self, window_size, num_heads):
        super().__init__()
        self.window_size = window_size
        self.window_area = window_size[0] * window_size[1]
        num_relative_distance = (2 * window_size[0] - 1) * (2 * window_size[1] - 1) + 3
        self.relative_position_bias_table = nn.Parameter(torch.zeros(num_relative_distance, num_heads))
        index = gen_relative_position_index(window_size, class_token=True)
        self.register_buffer("relative_position_index", index, persistent=False)

    def forward(self):
        bias = lookup_rel_pos_bias(self.relative_position_bias_table, self.relative_position_index,
                                   self.window_area + 1)
        return bias.contiguous()


class Beit(ViTApi, nn.Module):
    """Patch embedding and a class token (absolute position embeddings with ``use_abs_pos_emb``), ``depth`` BEiT
    blocks, a norm, pooling and a linear head (timm's ``Beit``, its arguments and defaults).

    ``use_rel_pos_bias`` gives each block's attention its own relative position bias, ``use_shared_rel_pos_bias`` one
    bias for all (``rel_pos_bias``); ``init_values`` enables layer scale. ``global_pool``: 'avg' averages the patch
    tokens, 'token' takes the class token, '' keeps the whole sequence; ``use_fc_norm`` (default: with 'avg') moves
    the final norm after the pooling. ``swiglu_mlp`` / ``scale_mlp`` pick the blocks' MLP. Dropout: ``pos_drop_rate``
    after the embeddings, ``attn_drop_rate`` on attention weights, ``proj_drop_rate`` in the blocks, ``drop_rate``
    before the head; ``drop_path_rate`` is the stochastic depth of the last block (rising linearly from 0).
    ``head_init_scale`` scales the head's initial weights. ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=768,
                 depth=12, num_heads=12, qkv_bias=True, mlp_ratio=4.0, swiglu_mlp=False, scale_mlp=False,
                 drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0,
                 norm_layer=LayerNorm, init_values=None, use_abs_pos_emb=True, use_rel_pos_bias=False,
                 use_shared_rel_pos_bias=False, head_init_scale=0.001, use_fc_norm=None):
        super().__init__()
        self._check_global_pool(global_pool, True)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = 1

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        grid_size = self.patch_embed.grid_size
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        if use_abs_pos_emb:
            self.pos_embed = nn.Parameter(torch.zeros(1, self.patch_embed.num_patches + 1, embed_dim))
        else:
            self.pos_embed = None
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.rel_pos_bias = RelativePositionBias(grid_size, num_heads) if use_shared_rel_pos_bias else None
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.ModuleList([
            Block(embed_dim, num_heads, qkv_bias=qkv_bias, mlp_ratio=mlp_ratio, scale_mlp=scale_mlp,
                  swiglu_mlp=swiglu_mlp, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate,
                  drop_path=drop_path_rates[i], norm_layer=norm_layer, init_values=init_values,
                  window_size=grid_size if use_rel_pos_bias else None)
            for i in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        use_fc_norm = global_pool == "avg" if use_fc_norm is None else use_fc_norm
        self.norm = nn.Identity() if use_fc_norm else norm_layer(embed_dim)
        self.fc_norm = norm_layer(embed_dim) if use_fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.head_init_scale = head_init_scale
        self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal Linear weights (std 0.02) with zero biases, position embeddings and class
        token; each block's output projections (attention's ``proj``, the MLP's ``fc2``) divided by sqrt(2 (i + 1))
        for block i; the head's weights drawn again and, with its bias, scaled by ``head_init_scale``. The patch
        projection keeps the convolution's default."""
        init_linear_layers(self)
        if self.pos_embed is not None:
            trunc_normal_(self.pos_embed, std=0.02)
        trunc_normal_(self.cls_token, std=0.02)
        self._fix_init_weight()
        self._init_head_scaled(self.head_init_scale)

    def _embed(self, x):
        """Images -> the class token and patch tokens (with position embeddings, if any), after ``pos_drop``, and the
        relative position bias all blocks share ((heads, tokens, tokens), or None)."""
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        if self.pos_embed is not None:
            x = x + self.pos_embed
        x = self.pos_drop(x)
        return x, self.rel_pos_bias() if self.rel_pos_bias is not None else None

    @staticmethod
    def _block(block, index, x, shared_rel_pos_bias):
        """Block ``index`` on the token sequence ``x``, with the shared relative position bias (or None)."""
        return block(x, shared_rel_pos_bias=shared_rel_pos_bias)


def _beit(variant, pretrained, progress, kwargs, **model_args):
    """A BEiT entrypoint's body: timm's architecture arguments (relative position biases, no absolute position
    embeddings), overridable by the caller's ``kwargs``."""
    model_args = dict(patch_size=16, use_abs_pos_emb=False, use_rel_pos_bias=True, **model_args)
    return build_model(Beit, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def beit_base_patch16_224(pretrained=False, progress=True, **kwargs):
    """BEiT-B/16 at 224: width 768, 12 blocks, 12 heads, layer scale from 0.1."""
    return _beit("beit_base_patch16_224", pretrained, progress, kwargs, img_size=224, embed_dim=768, depth=12,
                 num_heads=12, mlp_ratio=4, init_values=0.1)


@register_model
def beit_base_patch16_384(pretrained=False, progress=True, **kwargs):
    """BEiT-B/16 at 384: width 768, 12 blocks, 12 heads, layer scale from 0.1."""
    return _beit("beit_base_patch16_384", pretrained, progress, kwargs, img_size=384, embed_dim=768, depth=12,
                 num_heads=12, init_values=0.1)


@register_model
def beit_large_patch16_224(pretrained=False, progress=True, **kwargs):
    """BEiT-L/16 at 224: width 1024, 24 blocks, 16 heads, layer scale from 1e-5."""
    return _beit("beit_large_patch16_224", pretrained, progress, kwargs, img_size=224, embed_dim=1024, depth=24,
                 num_heads=16, init_values=1e-5)


@register_model
def beit_large_patch16_384(pretrained=False, progress=True, **kwargs):
    """BEiT-L/16 at 384: width 1024, 24 blocks, 16 heads, layer scale from 1e-5."""
    return _beit("beit_large_patch16_384", pretrained, progress, kwargs, img_size=384, embed_dim=1024, depth=24,
                 num_heads=16, init_values=1e-5)


@register_model
def beit_large_patch16_512(pretrained=False, progress=True, **kwargs):
    """BEiT-L/16 at 512: width 1024, 24 blocks, 16 heads, layer scale from 1e-5."""
    return _beit("beit_large_patch16_512", pretrained, progress, kwargs, img_size=512, embed_dim=1024, depth=24,
                 num_heads=16, init_values=1e-5)


@register_model
def beitv2_base_patch16_224(pretrained=False, progress=True, **kwargs):
    """BEiT v2-B/16 at 224: width 768, 12 blocks, 12 heads, layer scale from 1e-5."""
    return _beit("beitv2_base_patch16_224", pretrained, progress, kwargs, img_size=224, embed_dim=768, depth=12,
                 num_heads=12, mlp_ratio=4, init_values=1e-5)


@register_model
def beitv2_large_patch16_224(pretrained=False, progress=True, **kwargs):
    """BEiT v2-L/16 at 224: width 1024, 24 blocks, 16 heads, layer scale from 1e-5."""
    return _beit("beitv2_large_patch16_224", pretrained, progress, kwargs, img_size=224, embed_dim=1024, depth=24,
                 num_heads=16, init_values=1e-5)
