"""Qwen3-VL's vision encoder (Qwen Team 2025, "Qwen3-VL Technical Report"), the tower that Qwen3.5 and Qwen3.8
share: qwen3_vit_88m, qwen3_vit_306m and qwen3_vit_416m (classifiers), their ``_merge`` forms (classifiers over the
VLM projector's tokens) and their ``_enc`` forms (the bare encoder with that projector).

A plain pre-norm vision transformer over 16-pixel patches, without class token and without final norm: fused
query-key-value projections with biases, a GELU (tanh) MLP, and two position encodings at once, a learnt 48x48
absolute grid resampled bilinearly (corners aligned) to the input's patch grid, and axial 2-D rotary embeddings
(RoPE) in the "half" layout (a quarter of each head's frequencies for the row, a quarter for the column, the first
half of the channels turning with the second half). The VLM projector ("merger") normalises the patch tokens,
concatenates each 2x2 block of them and maps it through a GELU MLP to the language model's width. The classifiers
average the tokens (patches, or projector tokens), normalise them without learnt scale and apply a linear head.
Model names, module names, ``state_dict`` keys and (seeded) initialisation follow timm's ``qwen3_vit`` module, so
its checkpoints load directly. Any image whose sides are multiples of the patch size works (twice the patch size
with the projector).
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from . import eva
from ._layers import Mlp, drop_path_module, init_linear_layers, pair, trunc_normal_

__all__ = []


class PatchEmbed(nn.Module):
    """Non-overlapping ``patch_size`` patches projected by one strided convolution (``proj``) to ``embed_dim``, as a
    channels-last (N, rows, cols, embed_dim) grid; ``norm`` is timm's identity slot for a norm over the patches.

    Unlike a fixed-size ViT's, any image size works: its sides must be multiples of the patch size, unless
    ``dynamic_img_pad`` pads the bottom and right edges with zeros up to the next multiple (DeepSeek's encoder).
    ``img_size`` is only the nominal size.
    """

    def __init__(self, img_size, patch_size, in_chans, embed_dim, dynamic_img_pad=False):
        super().__init__()
        self.img_size = pair(img_size)
        self.patch_size = pair(patch_size)
        self.dynamic_img_pad = dynamic_img_pad
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=self.patch_size, stride=self.patch_size)
        self.norm = nn.Identity()

    def feat_ratio(self):
        """The reduction of the patch grid: the larger side of a patch."""
        return max(self.patch_size)

    def forward(self, x):
        height, width = x.shape[-2:]
        patch_h, patch_w = self.patch_size
        if self.dynamic_img_pad:
            x = F.pad(x, (0, -width % patch_w, 0, -height % patch_h))
        elif height % patch_h or width % patch_w:
            raise ValueError(f"Input size ({height}x{width}) should be divisible by the patch size "
                             f"({patch_h}x{patch_w})")
        x = self.proj(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        return x


class AxialRotaryEmbedding(eva.RotaryEmbeddingCat):
    """Axial 2-D RoPE of one head of width ``dim``, in the "half" layout, for any patch grid: EVA's
    ``RotaryEmbeddingCat`` (timm's, with ``rotate_half=True``, integer patch coordinates and no cached table) with
    the table rounded to float32, as timm's Qwen and DeepSeek encoders do whatever the model's dtype."""

    def __init__(self, dim, temperature=10000.0):
        super().__init__(dim, temperature=temperature, rotate_half=True)

    def get_embed(self, shape):
        """The (rows * cols, 2 * dim) float32 table of sines then cosines for a (rows, cols) patch grid."""
        return super().get_embed(shape).to(torch.float32)


class AttentionRope(eva.AttentionRope):
    """RoPE-ViT's attention (one ``qkv`` projection with bias, then ``proj``) with the rotary embedding applied to
    every token's queries and keys in the "half" layout (timm's ``rotate_half=True``), the table cast to their
    dtype."""

    def _rotate(self, t, rope):
        return eva.apply_rot_embed_cat(t, rope.to(t.dtype), half=True)


class RopeBlock(nn.Module):
    """Pre-norm transformer block without layer scale: x + drop_path(attn(norm1(x), rope)), then
    x + drop_path(mlp(norm2(x))) (timm's ``EvaBlock`` as Qwen's and DeepSeek's encoders build it).

    The attention has biased query-key-value and output projections and half-layout RoPE; ``mlp_layer(dim)`` builds
    the feed-forward layer; ``proj_drop`` is the dropout after the projections, ``attn_drop`` that of the attention
    weights, ``drop_path`` the stochastic depth of both residual branches.
    """

    def __init__(self, dim, num_heads, mlp_layer, norm_layer, proj_drop=0.0, attn_drop=0.0, drop_path=0.0):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = AttentionRope(dim, num_heads=num_heads, qkv_bias=True, qkv_fused=True, num_prefix_tokens=0,
                                  attn_drop=attn_drop, proj_drop=proj_drop)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = mlp_layer(dim)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x, rope=None):
        x = x + self.drop_path1(self.attn(self.norm1(x), rope=rope))
        x = x + self.drop_path2(self.mlp(self.norm2(x)))
        return x


def drop_path_rates(drop_path_rate, depth):
    """timm's per-block stochastic depth: rising linearly (in float32) from 0 at the first block to
    ``drop_path_rate`` at the last."""
    return [p.item() for p in torch.linspace(0, drop_path_rate, depth)]


def tokens_to_grid(tokens, batch, rows, cols, output_fmt):
    """(N, rows * cols, C) tokens as an (N, C, rows, cols) map ('NCHW') or as they are ('NLC')."""
    if output_fmt == "NCHW":
        return tokens.reshape(batch, rows, cols, -1).permute(0, 3, 1, 2)
    return tokens


def check_output_fmt(output_fmt):
    """Refuse an intermediate format other than 'NCHW' and 'NLC'."""
    if output_fmt not in ("NCHW", "NLC"):
        raise ValueError(f"output_fmt must be 'NCHW' or 'NLC', got {output_fmt!r}")


def intermediates_result(x, intermediates, intermediates_only, output_dict):
    """timm's return forms of ``forward_intermediates``: the intermediates alone, (final, intermediates), or a dict
    with 'image_intermediates' (and 'image_features')."""
    if intermediates_only:
        return {"image_intermediates": intermediates} if output_dict else intermediates
    if output_dict:
        return {"image_features": x, "image_intermediates": intermediates}
    return x, intermediates


def resample_pos_embed_grid(pos_embed, grid_size, new_size):
    """The learnt (1, grid_size^2, C) position table resampled to an (H, W) patch grid as (1, H * W, C): bilinear
    with aligned corners, in float32 (float64 for a float64 table), as Qwen's encoder does; unchanged when the grid
    already matches."""
    height, width = new_size
    if height == grid_size and width == grid_size:
        return pos_embed
    channels = pos_embed.shape[-1]
    calc_dtype = torch.float64 if pos_embed.dtype == torch.float64 else torch.float32
    x = pos_embed.reshape(1, grid_size, grid_size, channels).permute(0, 3, 1, 2).to(calc_dtype)
    x = F.interpolate(x, size=(height, width), mode="bilinear", align_corners=True)
    return x.permute(0, 2, 3, 1).reshape(1, height * width, channels).to(pos_embed.dtype)


class Qwen3VitPatchMerger(nn.Module):
    """Qwen's VLM projector: a LayerNorm over the patch tokens (``norm``), each ``merge_size`` x ``merge_size``
    block of tokens concatenated (row-major, channels last) into one, ``fc1`` (same width) with GELU (``act``), and
    ``fc2`` to ``out_features``, the language model's width (an identity when ``out_features`` is 0). ``pre_logits``
    stops after the activation."""

    def __init__(self, dim, merge_size=2, out_features=0, norm_layer=None):
        super().__init__()
        self.merge_size = merge_size
        self.hidden_size = dim * merge_size ** 2
        self.out_features = out_features if out_features > 0 else self.hidden_size
        self.norm = norm_layer(dim)
        self.fc1 = nn.Linear(self.hidden_size, self.hidden_size)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(self.hidden_size, out_features) if out_features > 0 else nn.Identity()

    def merge(self, x):
        """(N, H, W, C) -> (N, H * W / k^2, k * k * C): the tokens of each k x k block side by side."""
        batch, height, width, channels = x.shape
        k = self.merge_size
        if height % k or width % k:
            raise ValueError(f"the patch grid ({height}x{width}) must be divisible by merge_size ({k})")
        x = x.reshape(batch, height // k, k, width // k, k, channels).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(batch, (height // k) * (width // k), k * k * channels)

    def forward(self, x, pre_logits=False):
        x = self.merge(self.norm(x))
        x = self.act(self.fc1(x))
        return x if pre_logits else self.fc2(x)


def _layer_norm(eps):
    """timm's LayerNorm with ``eps``, as a layer builder."""
    return lambda dim: nn.LayerNorm(dim, eps=eps)


class RopeGridEncoderApi:
    """The forwards of a VLM's RoPE encoder, shared by Qwen's and DeepSeek's: ``_embed`` (a subclass's: images ->
    patch tokens, RoPE table, grid size), the ``blocks``, ``_final_norm`` (none by default), and the VLM projector
    held under the attribute that ``projector`` names (None once pruned or with another ``global_pool``). The
    encoder has no classifier."""

    projector = "merger"

    def _final_norm(self, x):
        """The norm after the last block: none (Qwen's encoder has none)."""
        return x

    def forward_features(self, x):
        """The (normalised, where there is a final norm) patch tokens after the last block, as an (N, H, W, C)
        grid."""
        x, rope, (height, width) = self._embed(x)
        for block in self.blocks:
            x = block(x, rope=rope)
        return self._final_norm(x).reshape(x.shape[0], height, width, -1)

    def forward_head(self, x, pre_logits=False):
        raise NotImplementedError(f"{type(self).__name__} does not support classification use cases.")

    def forward(self, x):
        x = self.forward_features(x)
        projector = getattr(self, self.projector)
        if projector is not None:
            return projector(x)
        if self.global_pool == "avg":
            return x.mean(dim=(1, 2))
        return x

    def forward_intermediates(self, x, indices=None, return_prefix_tokens=False, norm=False, stop_early=False,
                              output_fmt="NCHW", intermediates_only=False, output_dict=False):
        """The outputs of the blocks picked by ``indices`` (None: all, n: the last n, or a list), through the final
        norm with ``norm`` (nothing without one), as (N, C, H, W) maps ('NCHW') or (N, H * W, C) tokens ('NLC'), and
        (unless ``intermediates_only``) ``forward_features``' grid, without the projector; ``stop_early`` skips the
        blocks after the last one picked; ``output_dict`` returns a dict. ``return_prefix_tokens`` does nothing:
        there are no prefix tokens."""
        check_output_fmt(output_fmt)
        take = take_indices(len(self.blocks), indices)
        blocks = list(self.blocks)[:max(take) + 1] if stop_early else list(self.blocks)
        batch = x.shape[0]
        x, rope, (height, width) = self._embed(x)
        intermediates = []
        for i, block in enumerate(blocks):
            x = block(x, rope=rope)
            if i in take:
                intermediates.append(tokens_to_grid(self._final_norm(x) if norm else x, batch, height, width,
                                                    output_fmt))
        x = self._final_norm(x).reshape(batch, height, width, -1)
        return intermediates_result(x, intermediates, intermediates_only, output_dict)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks and, with ``prune_head``, the projector (the encoder
        then returns its patch grid); returns the absolute indices. ``prune_norm`` does nothing here (Qwen's encoder
        has no final norm)."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = nn.ModuleList(list(self.blocks)[:max(take) + 1])
        if prune_head:
            setattr(self, self.projector, None)
            self.global_pool = ""
            self.out_features = 0
            self.head_hidden_size = self.num_features
        return take


class Qwen3VitEncoder(RopeGridEncoderApi, nn.Module):
    """Qwen's vision encoder: ``patch_embed``, the learnt position grid ``pos_embed`` (``pos_embed_grid_size``
    squared positions, resampled to each input's grid), axial RoPE (``rope``, ``rope_temperature``), ``depth``
    RopeBlocks with a GELU-tanh MLP (by default) of ``mlp_ratio`` times the width, and, with ``global_pool='merge'``,
    the VLM projector ``merger`` (to ``out_features`` channels).

    ``forward_features`` gives the un-normalised patch tokens as an (N, H, W, C) grid; ``forward`` then the
    projector's tokens (N, H * W / 4, out_features) with 'merge', their mean (N, C) with 'avg', or the grid with ''.
    The encoder has no classifier. ``proj_drop_rate``, ``attn_drop_rate`` and ``drop_path_rate`` (of the last block,
    rising linearly from 0) are the blocks' dropouts.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": None}
    feature_wrapper = FeatureGetterNet
    output_fmt = "NHWC"

    def __init__(self, img_size=768, patch_size=16, in_chans=3, out_features=0, global_pool="merge", embed_dim=1152,
                 depth=27, num_heads=16, mlp_ratio=4304 / 1152, merge_size=2, pos_embed_grid_size=48,
                 rope_temperature=10000.0, norm_eps=1e-6, act_layer=None, proj_drop_rate=0.0, attn_drop_rate=0.0,
                 drop_path_rate=0.0):
        super().__init__()
        if global_pool not in ("", "avg", "merge"):
            raise ValueError(f"global_pool must be 'merge', 'avg' or '', got {global_pool!r}")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) should be divisible by num_heads ({num_heads})")
        self.in_chans = in_chans
        self.num_classes = 0
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.out_features = out_features
        self.merge_size = merge_size
        self.pos_embed_grid_size = pos_embed_grid_size
        self.num_prefix_tokens = 0
        self.feature_dim = -1
        norm_layer = _layer_norm(norm_eps)
        act_layer = act_layer or (lambda: nn.GELU(approximate="tanh"))
        hidden = int(embed_dim * mlp_ratio)

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        reduction = self.patch_embed.feat_ratio()
        self.pos_embed = nn.Parameter(torch.empty(1, pos_embed_grid_size ** 2, embed_dim))
        self.rope = AxialRotaryEmbedding(embed_dim // num_heads, temperature=rope_temperature)
        rates = drop_path_rates(drop_path_rate, depth)
        self.blocks = nn.ModuleList([
            RopeBlock(embed_dim, num_heads, lambda dim: Mlp(dim, hidden, act_layer=act_layer, drop=proj_drop_rate),
                      norm_layer, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, drop_path=rates[i])
            for i in range(depth)])
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.merger = None
        if global_pool == "merge":
            self.merger = Qwen3VitPatchMerger(embed_dim, merge_size, out_features, norm_layer)
            self.head_hidden_size = self.merger.out_features
        self.init_weights()

    def init_weights(self):
        """timm's scheme: the position grid, then every Linear layer in module order, truncated normal (std 0.02)
        with zero biases; the patch projection keeps the convolution's default initialisation."""
        trunc_normal_(self.pos_embed, std=0.02)
        init_linear_layers(self)

    def _embed(self, x):
        """Images -> (patch tokens (N, H * W, C) with the resampled position grid added, RoPE table, (H, W))."""
        x = self.patch_embed(x)
        batch, height, width, channels = x.shape
        pos_embed = resample_pos_embed_grid(self.pos_embed, self.pos_embed_grid_size, (height, width))
        x = x.reshape(batch, height * width, channels) + pos_embed.to(x.dtype)
        return x, self.rope.get_embed((height, width)), (height, width)


class EncoderClassifier(nn.Module):
    """timm's classifier API around a VLM encoder (``encoder``), shared by Qwen's and DeepSeek's classifiers: the
    encoder's output (its patch grid, or its projector's tokens), averaged (``global_pool='avg'``; '' keeps every
    token), normalised (``norm``), dropout (``head_drop``) and a linear ``head``. A subclass builds the encoder,
    then calls ``_add_head``; it names the encoder's projector attribute (``projector``) and builds the norm without
    learnt scale (the static ``_affine_free_norm(dim, eps)``)."""

    default_cfg = {"first_conv": "encoder.patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    @staticmethod
    def _check_pool(global_pool):
        """Refuse a classifier pooling other than 'avg' and ''."""
        if global_pool not in ("", "avg"):
            raise ValueError(f"global_pool must be 'avg' or '', got {global_pool!r}")

    @staticmethod
    def _new_head(num_features, num_classes):
        """A linear classifier (truncated-normal weights, std 0.02, zero bias), or an identity for 0 classes."""
        if num_classes <= 0:
            return nn.Identity()
        head = nn.Linear(num_features, num_classes)
        init_linear_layers(head)
        return head

    def _add_head(self, embed_dim, encoder_pool, norm_eps, final_norm, drop_rate, num_classes):
        """The attributes and layers after the encoder: widths, output format, ``norm`` (the affine-free norm, or an
        identity without ``final_norm``), ``head_drop``, ``head`` and the encoder's feature_info."""
        self.embed_dim = embed_dim
        projector = getattr(self.encoder, self.projector)
        self.num_features = self.head_hidden_size = projector.out_features if projector is not None else embed_dim
        self.output_fmt = "NLC" if encoder_pool else "NHWC"
        self.norm = self._affine_free_norm(self.num_features, norm_eps) if final_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(self.num_features, num_classes)
        self.num_prefix_tokens = 0
        self.feature_dim = -1
        self.feature_info = [dict(info, module=f"encoder.{info['module']}") for info in self.encoder.feature_info]

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh head for ``num_classes`` (0: an identity), after the pooling ``global_pool`` ('avg' or '') if
        given; it takes the model's training mode."""
        self.num_classes = num_classes
        if global_pool is not None:
            self._check_pool(global_pool)
            self.global_pool = global_pool
        self.head = self._new_head(self.num_features, num_classes)
        self.head.train(self.training)

    def forward_features(self, x):
        """The encoder's output: the (N, H, W, C) patch grid, or the projector's (N, L, C) tokens."""
        return self.encoder(x)

    def forward_head(self, x, pre_logits=False):
        """Tokens flattened to (N, L, C), averaged with 'avg', the final norm and dropout; then the classifier unless
        ``pre_logits``."""
        x = x.flatten(1, -2)
        if self.global_pool == "avg":
            x = x.mean(dim=1)
        x = self.head_drop(self.norm(x))
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, return_prefix_tokens=False, norm=False, stop_early=False,
                              output_fmt="NCHW", intermediates_only=False, output_dict=False):
        """The encoder's ``forward_intermediates``; the final features then go through the projector, if any (not
        the intermediates)."""
        x, intermediates = self.encoder.forward_intermediates(
            x, indices=indices, return_prefix_tokens=return_prefix_tokens, norm=norm, stop_early=stop_early,
            output_fmt=output_fmt)
        projector = getattr(self.encoder, self.projector)
        if not intermediates_only and projector is not None:
            x = projector(x)
        return intermediates_result(x, intermediates, intermediates_only, output_dict)

    def _drop_classifier(self):
        """After the encoder's projector is pruned: the classifier works on the patch tokens, with a fresh affine-free
        norm of their width (where there was a norm) and no head."""
        self.encoder_pool = ""
        self.output_fmt = "NHWC"
        self.num_features = self.head_hidden_size = self.encoder.num_features
        if not isinstance(self.norm, nn.Identity):
            self.norm = self._affine_free_norm(self.num_features, self.norm.eps).train(self.training)
        self.reset_classifier(0)


class Qwen3VitClassifier(EncoderClassifier):
    """A classifier on Qwen's encoder (``encoder``): its patch tokens, or with ``encoder_pool='merge'`` its
    projector's tokens (``out_features`` wide), averaged (``global_pool='avg'``; '' keeps every token), normalised
    by a LayerNorm without learnt scale (``norm``; an identity without ``final_norm``), dropout (``drop_rate``) and a
    linear ``head`` (``num_classes``; 0: the normalised features). The encoder's arguments are as in
    ``Qwen3VitEncoder``; the head is initialised as its Linear layers."""

    projector = "merger"

    def __init__(self, img_size=768, patch_size=16, in_chans=3, num_classes=1000, global_pool="avg", encoder_pool="",
                 out_features=0, embed_dim=1152, depth=27, num_heads=16, mlp_ratio=4304 / 1152, merge_size=2,
                 pos_embed_grid_size=48, rope_temperature=10000.0, norm_eps=1e-6, act_layer=None, final_norm=True,
                 drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        self._check_pool(global_pool)
        if encoder_pool not in ("", "merge"):
            raise ValueError(f"encoder_pool must be 'merge' or '', got {encoder_pool!r}")
        self.in_chans = in_chans
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.encoder_pool = encoder_pool
        self.encoder = Qwen3VitEncoder(
            img_size=img_size, patch_size=patch_size, in_chans=in_chans, global_pool=encoder_pool,
            out_features=out_features, embed_dim=embed_dim, depth=depth, num_heads=num_heads, mlp_ratio=mlp_ratio,
            merge_size=merge_size, pos_embed_grid_size=pos_embed_grid_size, rope_temperature=rope_temperature,
            norm_eps=norm_eps, act_layer=act_layer, proj_drop_rate=proj_drop_rate, attn_drop_rate=attn_drop_rate,
            drop_path_rate=drop_path_rate)
        self._add_head(embed_dim, encoder_pool, norm_eps, final_norm, drop_rate, num_classes)

    @staticmethod
    def _affine_free_norm(dim, eps):
        """A LayerNorm without learnt scale and shift."""
        return nn.LayerNorm(dim, eps=eps, elementwise_affine=False)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Prune the encoder's blocks (and, with ``prune_head``, its projector, then the classifier: the model gives
        the normalised patch tokens); returns the absolute indices."""
        take = self.encoder.prune_intermediate_layers(indices, prune_norm=prune_norm, prune_head=prune_head)
        if prune_head:
            self._drop_classifier()
        return take


# ---- entrypoints ------------------------------------------------------------------------------------------------


def _create_classifier(variant, pretrained, progress, kwargs, **model_args):
    """A registered classifier from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives the last three blocks' outputs (or those of ``out_indices``) as (N, C, H, W) maps."""
    return build_model(Qwen3VitClassifier, variant, pretrained, progress=progress, **{**model_args, **kwargs})


def _create_encoder(variant, pretrained, progress, kwargs, **model_args):
    """A registered encoder, as ``_create_classifier``; ``num_classes`` and ``drop_rate`` are dropped, as timm
    does (the encoder has no classifier)."""
    kwargs = {k: v for k, v in kwargs.items() if k not in ("num_classes", "drop_rate")}
    return build_model(Qwen3VitEncoder, variant, pretrained, progress=progress, **{**model_args, **kwargs})


_88M = dict(embed_dim=768, depth=12, num_heads=12, mlp_ratio=4.0)
_306M = dict(embed_dim=1024, depth=24, num_heads=16, mlp_ratio=4.0)
_416M = dict(embed_dim=1152, depth=27, num_heads=16, mlp_ratio=4304 / 1152)


@register_model
def qwen3_vit_88m(pretrained=False, progress=True, **kwargs):
    """Qwen3.5-0.8B's vision tower as a classifier: 12 blocks of width 768."""
    return _create_classifier("qwen3_vit_88m", pretrained, progress, kwargs, **_88M)


@register_model
def qwen3_vit_88m_merge(pretrained=False, progress=True, **kwargs):
    """qwen3_vit_88m classifying the projector's tokens (1024 wide, Qwen3.5-0.8B's language width)."""
    return _create_classifier("qwen3_vit_88m_merge", pretrained, progress, kwargs, **_88M, encoder_pool="merge",
                              out_features=1024)


@register_model
def qwen3_vit_306m(pretrained=False, progress=True, **kwargs):
    """Qwen3.5-2B / 4B's vision tower as a classifier: 24 blocks of width 1024."""
    return _create_classifier("qwen3_vit_306m", pretrained, progress, kwargs, **_306M)


@register_model
def qwen3_vit_306m_merge(pretrained=False, progress=True, **kwargs):
    """qwen3_vit_306m classifying the projector's tokens (2048 wide, Qwen3.5-2B's language width)."""
    return _create_classifier("qwen3_vit_306m_merge", pretrained, progress, kwargs, **_306M, encoder_pool="merge",
                              out_features=2048)


@register_model
def qwen3_vit_416m(pretrained=False, progress=True, **kwargs):
    """Qwen3.5-9B / 27B and Qwen3.8's vision tower as a classifier: 27 blocks of width 1152."""
    return _create_classifier("qwen3_vit_416m", pretrained, progress, kwargs, **_416M)


@register_model
def qwen3_vit_416m_merge(pretrained=False, progress=True, **kwargs):
    """qwen3_vit_416m classifying the projector's tokens (5120 wide, Qwen3.8-27B's language width)."""
    return _create_classifier("qwen3_vit_416m_merge", pretrained, progress, kwargs, **_416M, encoder_pool="merge",
                              out_features=5120)


@register_model
def qwen3_vit_88m_enc(pretrained=False, progress=True, **kwargs):
    """Qwen3.5-0.8B's vision encoder with its projector to 1024 channels."""
    return _create_encoder("qwen3_vit_88m_enc", pretrained, progress, kwargs, **_88M, out_features=1024)


@register_model
def qwen3_vit_306m_enc(pretrained=False, progress=True, **kwargs):
    """Qwen3.5-2B's vision encoder with its projector to 2048 channels."""
    return _create_encoder("qwen3_vit_306m_enc", pretrained, progress, kwargs, **_306M, out_features=2048)


@register_model
def qwen3_vit_416m_enc(pretrained=False, progress=True, **kwargs):
    """Qwen3.8-27B's vision encoder with its projector to 5120 channels."""
    return _create_encoder("qwen3_vit_416m_enc", pretrained, progress, kwargs, **_416M, out_features=5120)
