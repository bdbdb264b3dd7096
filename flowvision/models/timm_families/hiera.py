"""Hiera (Ryali et al. 2023, "Hiera: A Hierarchical Vision Transformer without the Bells-and-Whistles"; its absolute
window position embedding from Bolya et al. 2023, "Window Attention is Bugged: How not to Interpolate Position
Embeddings"): hiera_tiny_224, hiera_small_224, hiera_base_224, hiera_base_plus_224, hiera_large_224,
hiera_huge_224 and hiera_small_abswin_256, and timm's untrained hiera_base_abswin_256 (no published weights).

A hierarchical vision transformer made of plain pre-norm blocks only: a strided convolution embeds 4x4 patches,
learnt absolute position embeddings are added, and four stages of blocks follow, each stage halving the resolution
by max-pooling the queries (and the shortcut) of its first block while doubling the width and the heads. The first
two stages attend within "mask units" (8x8-token windows, shrinking with each pooling), the last two globally.
Instead of reshaping a spatial map, the tokens are "unrolled" once, up front: reordered so that every later 2x2
pooling is a max over four contiguous chunks and every mask unit a contiguous strided set, so that pooling and
windowed attention are reshapes; "rerolling" puts a block's tokens back in (H, W) order for feature maps. The
``abswin`` variant builds its position embedding from a small global table, resized (bicubic with antialiasing)
to the token grid, plus a table of one mask unit tiled over the grid. MAE-style masking (``mask``: the mask units
to keep) and patch dropout over mask units are supported. Model names, module names, ``state_dict`` keys and
(seeded) initialisation follow timm's ``hiera`` module, so its checkpoints load directly.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import ClassifierHeadApi, Mlp, drop_path_module, pair
from ._norm import LayerNorm
from .mambaout import ClNormMlpClassifierHead
from .mlp_mixer import _init_jax_layer
from .vision_transformer import LayerScale

__all__ = []


def _interleave(first, second):
    """[first[0], second[0], first[1], second[1], ...]."""
    return [axis for pair_of_axes in zip(first, second) for axis in pair_of_axes]


def _undo_windowing(x, shape, mu_shape):
    """Tokens grouped by mask unit, (N, units, *mu_shape, C), back to an (N, *shape, C) map: the units are laid out
    on a grid of ``shape // mu_shape`` units."""
    ndim = len(shape)
    batch, channels = x.shape[0], x.shape[-1]
    num_units = [size // mu for size, mu in zip(shape, mu_shape)]
    x = x.view(batch, *num_units, *mu_shape, channels)
    order = [0] + _interleave(range(1, 1 + ndim), range(1 + ndim, 1 + 2 * ndim)) + [1 + 2 * ndim]
    x = x.permute(order).reshape(batch, *shape, channels)
    return x


class Unroll(nn.Module):
    """Reorders the (N, H * W, C) patch tokens so that pooling and mask units become reshapes: for each stride
    (sy, sx) of ``unroll_schedule`` in turn, the sy * sx offsets inside each stride cell move ahead of the coarser
    grid. After one step a 2x2 max pooling is the max over four contiguous quarters of the tokens; after all of
    them, the tokens of one mask unit sit at one position modulo the number of units. ``input_size`` is the image
    size, ``patch_stride`` the patch embedding's stride."""

    def __init__(self, input_size, patch_stride, unroll_schedule):
        super().__init__()
        self.size = [size // stride for size, stride in zip(input_size, patch_stride)]
        self.schedule = unroll_schedule

    def forward(self, x):
        batch, _, channels = x.shape
        size = self.size
        x = x.view(batch, *size, channels)
        for strides in self.schedule:
            ndim = len(strides)
            size = [n // s for n, s in zip(size, strides)]
            x = x.view(batch, *_interleave(size, strides), channels)
            order = [0] + [2 + 2 * i for i in range(ndim)] + [1 + 2 * i for i in range(ndim)] + [1 + 2 * ndim]
            x = x.permute(order).flatten(0, ndim)
            batch *= math.prod(strides)
        return x.reshape(-1, math.prod(self.size), channels)


class Reroll(nn.Module):
    """Undoes ``Unroll`` for the output of a given block, whose stages have pooled away some of the unroll steps:
    ``schedule[block]`` holds the steps still in the tokens and the token grid's size there. Gives an (N, H, W, C)
    map or, with a ``mask`` (only the kept mask units are left), the units as (N, units, mu_h, mu_w, C)."""

    def __init__(self, input_size, patch_stride, unroll_schedule, stage_ends, q_pool):
        super().__init__()
        self.size = [size // stride for size, stride in zip(input_size, patch_stride)]
        self.schedule = {}
        size = self.size
        for block_idx in range(stage_ends[-1] + 1):
            self.schedule[block_idx] = unroll_schedule, size
            if block_idx in stage_ends[:q_pool]:
                if len(unroll_schedule) > 0:
                    size = [n // s for n, s in zip(size, unroll_schedule[0])]
                unroll_schedule = unroll_schedule[1:]

    def forward(self, x, block_idx, mask=None):
        schedule, size = self.schedule[block_idx]
        batch, num_tokens, channels = x.shape
        ndim = len(size)
        mu_shape = [1] * ndim
        for strides in schedule:
            # the stride offsets, ahead of the tokens, move inside the growing mask units
            x = x.view(batch, *strides, num_tokens // math.prod(strides), *mu_shape, channels)
            last = x.dim() - 1
            order = [0, 1 + ndim] + _interleave(range(1, 1 + ndim), range(2 + ndim, last)) + [last]
            x = x.permute(order)
            mu_shape = [mu * s for mu, s in zip(mu_shape, strides)]
            x = x.reshape(batch, -1, *mu_shape, channels)
            num_tokens = x.shape[1]
        x = x.view(batch, num_tokens, *mu_shape, channels)
        if mask is not None:
            return x
        return _undo_windowing(x, size, mu_shape)


class MaskUnitAttention(nn.Module):
    """Multi-head attention over unrolled tokens, within each mask unit (``use_mask_unit_attn``: the units hold
    ``window_size`` tokens after pooling) or over all tokens. With ``q_stride`` > 1 the queries are max-pooled by
    that (flattened) stride, so the output has ``q_stride`` times fewer tokens; ``qkv`` projects from ``dim`` to
    ``dim_out`` wide queries, keys and values, ``proj`` mixes the heads."""

    def __init__(self, dim, dim_out, heads, q_stride=1, window_size=0, use_mask_unit_attn=False):
        super().__init__()
        self.dim = dim
        self.dim_out = dim_out
        self.heads = heads
        self.q_stride = q_stride
        self.head_dim = dim_out // heads
        self.qkv = nn.Linear(dim, 3 * dim_out)
        self.proj = nn.Linear(dim_out, dim_out)
        self.window_size = window_size
        self.use_mask_unit_attn = use_mask_unit_attn

    def forward(self, x):
        batch, num_tokens, _ = x.shape
        num_windows = num_tokens // (self.q_stride * self.window_size) if self.use_mask_unit_attn else 1
        qkv = self.qkv(x).reshape(batch, -1, num_windows, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(3, 0, 4, 2, 1, 5).unbind(0)
        if self.q_stride > 1:
            q = q.view(batch, self.heads, num_windows, self.q_stride, -1, self.head_dim).amax(dim=3)
        x = F.scaled_dot_product_attention(q, k, v)
        x = x.transpose(1, 3).reshape(batch, -1, self.dim_out)
        x = self.proj(x)
        return x


class HieraBlock(nn.Module):
    """Hiera's pre-norm block: x + drop_path1(ls1(attn(norm1(x)))), then x + drop_path2(ls2(mlp(norm2(x)))).

    A block that widens from ``dim`` to ``dim_out`` projects its shortcut (``proj``, from the normed input) and
    max-pools it by the attention's ``q_stride``; without ``use_expand_proj`` the shortcut is the max- and the
    average-pooled input side by side (so ``dim_out`` must be twice ``dim``). ``init_values`` switches on layer
    scale (``ls1``, ``ls2``), ``drop_path`` is the stochastic depth of both branches.
    """

    def __init__(self, dim, dim_out, heads, mlp_ratio=4.0, drop_path=0.0, init_values=None, norm_layer=LayerNorm,
                 act_layer=nn.GELU, q_stride=1, window_size=0, use_expand_proj=True, use_mask_unit_attn=False):
        super().__init__()
        self.dim = dim
        self.dim_out = dim_out
        self.norm1 = norm_layer(dim)
        self.do_expand = dim != dim_out
        if self.do_expand and not use_expand_proj and dim_out != 2 * dim:
            raise ValueError(f"without use_expand_proj a block must double its width, got {dim} -> {dim_out}")
        self.proj = nn.Linear(dim, dim_out) if self.do_expand and use_expand_proj else None
        self.attn = MaskUnitAttention(dim, dim_out, heads, q_stride, window_size, use_mask_unit_attn)
        self.ls1 = LayerScale(dim_out, init_values) if init_values is not None else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim_out)
        self.mlp = Mlp(dim_out, int(dim_out * mlp_ratio), act_layer=act_layer)
        self.ls2 = LayerScale(dim_out, init_values) if init_values is not None else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def _pooled_shortcut(self, x, x_norm):
        """The widened shortcut, pooled as the queries are (the pooled tokens lie in ``q_stride`` contiguous
        chunks)."""
        q_stride = self.attn.q_stride
        if self.proj is not None:
            x = self.proj(x_norm)
            return x.view(x.shape[0], q_stride, -1, x.shape[-1]).amax(dim=1)
        grouped = x.view(x.shape[0], q_stride, -1, x.shape[-1])
        return torch.cat([grouped.amax(dim=1), grouped.mean(dim=1)], dim=-1)

    def forward(self, x):
        x_norm = self.norm1(x)
        if self.do_expand:
            x = self._pooled_shortcut(x, x_norm)
        x = x + self.drop_path1(self.ls1(self.attn(x_norm)))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class PatchEmbed(nn.Module):
    """Patch embedding by one convolution (``proj``: ``kernel``, ``stride``, ``padding``) to (N, tokens, dim_out)
    tokens in row-major order. A ``mask`` (N, 1, units_h, units_w) of the mask units to keep is first resized
    (nearest) to the image and zeroes the pixels of the dropped units."""

    def __init__(self, dim_in, dim_out, kernel, stride, padding):
        super().__init__()
        self.proj = nn.Conv2d(dim_in, dim_out, kernel_size=kernel, stride=stride, padding=padding)

    def forward(self, x, mask=None):
        if mask is not None:
            if tuple(mask.shape[2:]) != tuple(x.shape[2:]):
                mask = F.interpolate(mask.float(), size=tuple(x.shape[2:]))
            x = x * mask.bool()
        x = self.proj(x)
        return x.reshape(x.shape[0], x.shape[1], -1).transpose(2, 1)


class TokenClassifierHead(ClNormMlpClassifierHead):
    """timm's ``ClNormMlpClassifierHead`` for a token sequence (its ``input_fmt='NLC'``): the (N, L, C) tokens pooled
    over L ('avg', 'max', 'avgmax', or '' for none), then the norm, dropout and ``fc``."""

    def _global_pool(self, x):
        if self.pool_type == "avg":
            return x.mean(dim=1)
        if self.pool_type == "max":
            return x.amax(dim=1)
        if self.pool_type == "avgmax":
            return 0.5 * (x.amax(dim=1) + x.mean(dim=1))
        return x


def _stage_features(model, out_indices=None):
    """timm's ``features_only`` Hiera: the stages' maps from ``forward_intermediates``, the last four (all of a
    four-stage model) unless ``out_indices`` says otherwise; the head goes."""
    return FeatureGetterNet(model, 4 if out_indices is None else out_indices)


def _init_layers(model, weight_init, fix_init, head_init_scale):
    """Hiera's and HieraDet's ``_init_weights`` after their position tables: the per-layer init of ``model``
    (none for 'skip'), the blocks' output layers divided by sqrt(2 * depth) with ``fix_init``, the classifier
    scaled by ``head_init_scale``."""
    if weight_init != "skip":
        for name, module in model.named_modules():
            if weight_init == "jax":
                _init_jax_layer(name, module, "head.fc")
            else:
                Hiera._init_vit(name, module)
    if fix_init:
        with torch.no_grad():
            for depth, block in enumerate(model.blocks, start=1):
                block.attn.proj.weight.div_(math.sqrt(2.0 * depth))
                block.mlp.fc2.weight.div_(math.sqrt(2.0 * depth))
    if isinstance(model.head.fc, nn.Linear):
        with torch.no_grad():
            model.head.fc.weight.mul_(head_init_scale)
            model.head.fc.bias.mul_(head_init_scale)


class Hiera(ClassifierHeadApi, nn.Module):
    """Hiera: ``patch_embed``, position embeddings (``pos_embed``; with ``abs_win_pos_embed`` a
    ``global_pos_size`` table resized to the token grid plus ``pos_embed_win``, one mask unit's table tiled),
    ``unroll``, the blocks of ``stages`` (``blocks``; ``reroll`` turns their outputs into maps) and the head (pooling,
    LayerNorm, dropout ``drop_rate``, ``fc``).

    Each stage after the first multiplies the width by ``dim_mul`` and the heads by ``head_mul``; the first
    ``q_pool`` of them pool by ``q_stride``. ``mask_unit_attn`` says per stage whether blocks attend within mask units
    (of ``mask_unit_size`` tokens before pooling); a stage's first block still attends as the previous stage did.
    ``patch_drop_rate`` drops that fraction of the mask units in training. The model runs on images whose patch
    grid is that of ``img_size`` (two-dimensional images only: timm's video options are not ported). Initialisation:
    timm's ViT scheme (``weight_init=''``) or its JAX one (``'jax'``; ``'skip'`` for none), ``fix_init`` rescaling
    each block's output layers by depth, and the classifier scaled by ``head_init_scale``.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head.fc"}
    feature_wrapper = staticmethod(_stage_features)

    def __init__(self, img_size=(224, 224), in_chans=3, embed_dim=96, num_heads=1, num_classes=1000,
                 global_pool="avg", stages=(2, 3, 16, 3), q_pool=3, q_stride=(2, 2), mask_unit_size=(8, 8),
                 mask_unit_attn=(True, True, False, False), use_expand_proj=True, dim_mul=2.0, head_mul=2.0,
                 patch_kernel=(7, 7), patch_stride=(4, 4), patch_padding=(3, 3), mlp_ratio=4.0,
                 drop_path_rate=0.0, init_values=None, fix_init=True, weight_init="", norm_layer=LayerNorm,
                 drop_rate=0.0, patch_drop_rate=0.0, head_init_scale=0.001, sep_pos_embed=False,
                 abs_win_pos_embed=False, global_pos_size=(14, 14)):
        super().__init__()
        img_size = pair(img_size)
        if len(img_size) != 2 or sep_pos_embed:
            raise NotImplementedError("only two-dimensional images are supported (no video: img_size of 2 values, "
                                      "sep_pos_embed=False)")
        if not q_pool < len(stages):
            raise ValueError(f"q_pool ({q_pool}) must be smaller than the number of stages ({len(stages)})")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.tokens_spatial_shape = [size // stride for size, stride in zip(img_size, patch_stride)]
        self.q_pool, self.q_stride = q_pool, q_stride
        self.mu_size, self.mask_unit_size = math.prod(mask_unit_size), mask_unit_size
        self.mask_spatial_shape = [tokens // mu for tokens, mu in zip(self.tokens_spatial_shape, mask_unit_size)]
        self.stage_ends = [sum(stages[:i]) - 1 for i in range(1, len(stages) + 1)]
        self.patch_drop_rate = patch_drop_rate
        self.patch_embed = PatchEmbed(in_chans, embed_dim, patch_kernel, patch_stride, patch_padding)
        if abs_win_pos_embed:
            self.pos_embed = nn.Parameter(torch.zeros(1, embed_dim, *global_pos_size))
            self.pos_embed_win = nn.Parameter(torch.zeros(1, embed_dim, *mask_unit_size))
        else:
            self.pos_embed = nn.Parameter(torch.zeros(1, math.prod(self.tokens_spatial_shape), embed_dim))
            self.pos_embed_win = None
        schedule = [q_stride] * (len(stages) - 1)
        self.unroll = Unroll(img_size, patch_stride, schedule)
        self.reroll = Reroll(img_size, patch_stride, schedule, self.stage_ends, q_pool)
        self.blocks, self.feature_info = self._make_blocks(
            embed_dim, num_heads, stages, mask_unit_attn, dim_mul, head_mul, drop_path_rate,
            dict(mlp_ratio=mlp_ratio, init_values=init_values, norm_layer=norm_layer,
                 use_expand_proj=use_expand_proj))
        self.num_features = self.blocks[-1].dim_out
        self.head = TokenClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate,
                                        norm_layer=norm_layer)
        self.head_hidden_size = self.head.num_features
        self._init_weights(weight_init, fix_init, head_init_scale)

    def _make_blocks(self, dim, heads, stages, mask_unit_attn, dim_mul, head_mul, drop_path_rate, block_args):
        """The blocks (timm's linear stochastic depth over all of them) and the stage ends' feature_info."""
        q_pool_blocks = [end + 1 for end in self.stage_ends[:self.q_pool]]
        flat_q_stride = math.prod(self.q_stride)
        window_size = self.mu_size
        drop_path_rates = torch.linspace(0, drop_path_rate, sum(stages)).tolist()
        blocks = nn.ModuleList()
        feature_info = []
        stage = 0
        for block_idx, drop_path in enumerate(drop_path_rates):
            dim_out = dim
            use_mask_unit_attn = mask_unit_attn[stage]
            if block_idx - 1 in self.stage_ends:
                dim_out = int(dim * dim_mul)
                heads = int(heads * head_mul)
                stage += 1
                if block_idx in q_pool_blocks:
                    window_size //= flat_q_stride
            q_stride = flat_q_stride if block_idx in q_pool_blocks else 1
            blocks.append(HieraBlock(dim, dim_out, heads, drop_path=drop_path, q_stride=q_stride,
                                     window_size=window_size, use_mask_unit_attn=use_mask_unit_attn, **block_args))
            dim = dim_out
            if block_idx in self.stage_ends:
                feature_info.append(dict(num_chs=dim_out, reduction=2 ** (stage + 2), module=f"blocks.{block_idx}"))
        return blocks, feature_info

    def _init_weights(self, weight_init, fix_init, head_init_scale):
        """timm's init, in its order: truncated-normal position tables; then (unless 'skip') per layer, the
        classifier zeroed and, for 'jax', Xavier-uniform Linear weights (biases N(0, 1e-6 ** 2) in the MLPs, zero
        elsewhere) and a LeCun-normal patch embedding, otherwise truncated-normal (std 0.02) weights and 0.02 Linear
        biases; the blocks' output layers divided by sqrt(2 * depth); the classifier scaled."""
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        if self.pos_embed_win is not None:
            nn.init.trunc_normal_(self.pos_embed_win, std=0.02)
        _init_layers(self, weight_init, fix_init, head_init_scale)

    @staticmethod
    def _init_vit(name, module):
        """timm's ``init_weight_vit`` of one layer."""
        if not isinstance(module, (nn.Linear, nn.Conv2d)):
            return
        if name.startswith("head.fc"):
            nn.init.zeros_(module.weight)
            nn.init.zeros_(module.bias)
            return
        nn.init.trunc_normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear):
            nn.init.constant_(module.bias, 0.02)

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after another pooling ``global_pool``
        if given; ``reset_other`` removes the head's norm too."""
        self.num_classes = num_classes
        self.head.reset(num_classes, global_pool, reset_other=reset_other, in_features=self.num_features)
        self.head_hidden_size = self.head.num_features

    def get_random_mask(self, x, mask_ratio):
        """A random (N, units) boolean mask of the mask units to keep (True) for the batch ``x``: the same number
        for every image, ``mask_ratio`` of them dropped (timm's draws: one uniform number per unit)."""
        batch = x.shape[0]
        num_units = math.prod(self.mask_spatial_shape)
        len_keep = int(num_units * (1 - mask_ratio))
        noise = torch.rand(batch, num_units, device=x.device)
        ids_restore = torch.argsort(torch.argsort(noise, dim=1), dim=1)
        mask = torch.zeros([batch, num_units], device=x.device)
        mask[:, :len_keep] = 1
        return torch.gather(mask, dim=1, index=ids_restore).bool()

    def _pos_embed(self, x):
        """The tokens plus the position embedding (abswin: the global table resized to the token grid plus the
        mask unit's table tiled over it)."""
        if self.pos_embed_win is None:
            return x + self.pos_embed
        pos_embed_win = self.pos_embed_win.tile(tuple(self.mask_spatial_shape))
        pos_embed = F.interpolate(self.pos_embed, size=pos_embed_win.shape[-2:], mode="bicubic", antialias=True)
        pos_embed = pos_embed + pos_embed_win
        return x + pos_embed.flatten(2).transpose(1, 2)

    def _embed(self, x, mask):
        """Patch tokens with positions, unrolled; with a ``mask`` (N, units), only the kept units' tokens."""
        proj = self.patch_embed.proj
        grid = [(size + 2 * padding - kernel) // stride + 1 for size, padding, kernel, stride in
                zip(x.shape[2:], proj.padding, proj.kernel_size, proj.stride)]
        if grid != self.tokens_spatial_shape:
            raise ValueError(f"a {tuple(x.shape[2:])} input gives a {grid} patch grid, the model's is "
                             f"{self.tokens_spatial_shape}: build the model with this img_size")
        patch_mask = None if mask is None else mask.view(x.shape[0], 1, *self.mask_spatial_shape)
        x = self.patch_embed(x, mask=patch_mask)
        x = self._pos_embed(x)
        x = self.unroll(x)
        if mask is not None:
            kept = mask[..., None].tile((1, self.mu_size, x.shape[2]))
            x = x[kept].view(x.shape[0], -1, x.shape[-1])
        return x

    def forward_features(self, x, mask=None, return_intermediates=False):
        """The last block's tokens (N, tokens, C); with ``return_intermediates`` also each stage's output rerolled
        to (N, H, W, C) (or, with a ``mask``, its kept mask units). ``mask`` (N, units) marks the mask units to
        keep (True), the same number in every image; in training with ``patch_drop_rate`` a random one is drawn."""
        if self.training and self.patch_drop_rate > 0:
            if mask is not None:
                raise ValueError("a mask cannot be given in training with patch_drop_rate > 0")
            mask = self.get_random_mask(x, mask_ratio=self.patch_drop_rate)
        x = self._embed(x, mask)
        intermediates = []
        for block_idx, block in enumerate(self.blocks):
            x = block(x)
            if return_intermediates and block_idx in self.stage_ends:
                intermediates.append(self.reroll(x, block_idx, mask=mask))
        if return_intermediates:
            return x, intermediates
        return x

    def forward_intermediates(self, x, mask=None, indices=None, norm=False, stop_early=True, output_fmt="NCHW",
                              intermediates_only=False, coarse=True):
        """timm's ``forward_intermediates``: the outputs of the stages (``coarse``) or blocks that ``indices`` picks
        (None: all; n: the last n; or a list), as (N, C, H, W) maps (or NHWC; with a ``mask``, the kept mask units as
        ``Reroll`` gives them), and the final tokens unless ``intermediates_only``. ``norm`` is not supported (as
        in timm)."""
        if norm:
            raise ValueError("normalisation of the intermediates is not supported")
        if output_fmt not in ("NCHW", "NHWC"):
            raise ValueError(f"output_fmt must be 'NCHW' or 'NHWC', got {output_fmt!r}")
        if mask is not None and output_fmt == "NCHW":
            raise ValueError("with a mask the intermediates are the kept mask units, not maps: use output_fmt='NHWC'")
        if coarse:
            taken = [self.stage_ends[i] for i in take_indices(len(self.stage_ends), indices)]
        else:
            taken = take_indices(len(self.blocks), indices)
        blocks = list(self.blocks)[:max(taken) + 1] if stop_early else list(self.blocks)
        x = self._embed(x, mask)
        intermediates = []
        for block_idx, block in enumerate(blocks):
            x = block(x)
            if block_idx in taken:
                feature = self.reroll(x, block_idx, mask=mask)
                intermediates.append(feature.permute(0, 3, 1, 2) if output_fmt == "NCHW" else feature)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True, coarse=True):
        """Drop the blocks after the last one ``indices`` picks (stages if ``coarse``); the head (its norm too)
        goes where ``prune_head`` or where blocks went, and then the features are those of the last block kept.
        Returns the absolute indices."""
        if coarse:
            taken = take_indices(len(self.stage_ends), indices)
            last_block = self.stage_ends[max(taken)]
        else:
            taken = take_indices(len(self.blocks), indices)
            last_block = max(taken)
        prune_end = last_block < len(self.blocks) - 1
        self.blocks = nn.ModuleList(list(self.blocks)[:last_block + 1])
        if prune_end:
            self.num_features = self.head_hidden_size = self.blocks[-1].dim_out
        if prune_head or prune_end:
            self.reset_classifier(0, reset_other=True)
        return taken

    def forward(self, x, mask=None):
        x = self.forward_features(x, mask=mask)
        if mask is None:
            x = self.forward_head(x)
        return x


def _create_hiera(variant, pretrained, progress, **kwargs):
    """Build a registered variant (``features_only``: see ``_stage_features``)."""
    return build_model(Hiera, variant, pretrained, progress=progress, **kwargs)


@register_model
def hiera_tiny_224(pretrained=False, progress=True, **kwargs):
    """Hiera-T (stages of 1, 2, 7 and 2 blocks, 96 wide)."""
    model_args = dict(img_size=(224, 224), embed_dim=96, num_heads=1, stages=(1, 2, 7, 2))
    return _create_hiera("hiera_tiny_224", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def hiera_small_224(pretrained=False, progress=True, **kwargs):
    """Hiera-S (stages of 1, 2, 11 and 2 blocks, 96 wide)."""
    model_args = dict(img_size=(224, 224), embed_dim=96, num_heads=1, stages=(1, 2, 11, 2))
    return _create_hiera("hiera_small_224", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def hiera_base_224(pretrained=False, progress=True, **kwargs):
    """Hiera-B (stages of 2, 3, 16 and 3 blocks, 96 wide)."""
    model_args = dict(img_size=(224, 224), embed_dim=96, num_heads=1, stages=(2, 3, 16, 3))
    return _create_hiera("hiera_base_224", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def hiera_base_plus_224(pretrained=False, progress=True, **kwargs):
    """Hiera-B+ (stages of 2, 3, 16 and 3 blocks, 112 wide, 2 heads)."""
    model_args = dict(img_size=(224, 224), embed_dim=112, num_heads=2, stages=(2, 3, 16, 3))
    return _create_hiera("hiera_base_plus_224", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def hiera_large_224(pretrained=False, progress=True, **kwargs):
    """Hiera-L (stages of 2, 6, 36 and 4 blocks, 144 wide, 2 heads)."""
    model_args = dict(img_size=(224, 224), embed_dim=144, num_heads=2, stages=(2, 6, 36, 4))
    return _create_hiera("hiera_large_224", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def hiera_huge_224(pretrained=False, progress=True, **kwargs):
    """Hiera-H (stages of 2, 6, 36 and 4 blocks, 256 wide, 4 heads)."""
    model_args = dict(img_size=(224, 224), embed_dim=256, num_heads=4, stages=(2, 6, 36, 4))
    return _create_hiera("hiera_huge_224", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def hiera_small_abswin_256(pretrained=False, progress=True, **kwargs):
    """Hiera-S at 256 pixels with absolute window position embeddings, layer scale and pooled shortcuts."""
    model_args = dict(img_size=(256, 256), embed_dim=96, num_heads=1, stages=(1, 2, 11, 2), abs_win_pos_embed=True,
                      global_pos_size=(16, 16), init_values=1e-5, weight_init="jax", use_expand_proj=False)
    return _create_hiera("hiera_small_abswin_256", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def hiera_base_abswin_256(pretrained=False, progress=True, **kwargs):
    """Hiera-B at 256 pixels with absolute window position embeddings and layer scale (no published weights)."""
    model_args = dict(img_size=(256, 256), embed_dim=96, num_heads=1, stages=(2, 3, 16, 3), abs_win_pos_embed=True,
                      init_values=1e-5, weight_init="jax")
    return _create_hiera("hiera_base_abswin_256", pretrained, progress, **dict(model_args, **kwargs))
