"""VOLO (Yuan et al. 2021, "VOLO: Vision Outlooker for Visual Recognition"): timm's VOLO models, D1 to D5.

A vision transformer that first encodes fine-level detail with outlook attention. A convolutional stem (three
convolutions with BatchNorm and ReLU, the first of stride 2) and a strided projection embed 8-pixel patches. The first
stage of outlookers mixes each patch's 3x3 neighbourhood: at every (stride-2) position a linear layer predicts, from
the averaged token there, a 9 x 9 attention map that re-weights the nine neighbours' values into nine outputs, which
are summed back onto the grid (unfold, attend, fold). After a stride-2 patch merge and position embeddings, stages of
ordinary self-attention blocks follow, then a class token joins and two class-attention blocks update it from the
patch tokens. The normalised class token is classified; with token labelling an auxiliary head classifies every patch
token too, and the eval output adds half of the auxiliary logits' maximum over the patches to the class logits.

This is timm's ``VOLO``: model names, module names, ``state_dict`` keys, defaults and initialisation follow timm, so
timm's checkpoints load with ``strict=True`` and give timm's outputs. A model runs at the image size it was built for
(``img_size``: the position embeddings are a grid of that size / 16; sizes giving another grid are refused).
``features_only=True`` returns the outputs of the last stages (timm's default: three) as (N, C, H / r, W / r) maps.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import Mlp, PreNormBlock, drop_path_module, init_linear_layers, pair, trunc_normal_
from .cait import ClassAttnBase

__all__ = []

_GLOBAL_POOLS = ("", "avg", "token")


def _check_global_pool(global_pool):
    """Refuse a pooling VOLO has no use for: the class token ('token'), the tokens' average ('avg') or none ('')."""
    if global_pool not in _GLOBAL_POOLS:
        raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")


class OutlookAttention(nn.Module):
    """Outlook attention on a channels-last (N, H, W, C) map.

    The map is visited in ``kernel_size`` x ``kernel_size`` windows every ``stride`` pixels (``unfold``). At each
    position the average of the stride x stride cell (``pool``) gives, through ``attn``, one k^2 x k^2 attention
    map per head, which mixes the window's k^2 values (``v``) into k^2 outputs; ``fold`` sums the outputs of
    overlapping windows back onto the map; ``proj`` mixes the channels. The attention weights are laid out
    contiguously, as torch's softmax returns them, as dropout draws its mask in memory order.
    """

    def __init__(self, dim, num_heads, kernel_size=3, padding=1, stride=1, qkv_bias=False, attn_drop=0.0,
                 proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.kernel_size = kernel_size
        self.padding = padding
        self.stride = stride
        self.scale = self.head_dim ** -0.5
        self.v = nn.Linear(dim, dim, bias=qkv_bias)
        self.attn = nn.Linear(dim, kernel_size ** 4 * num_heads)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.unfold = nn.Unfold(kernel_size=kernel_size, padding=padding, stride=stride)
        self.pool = nn.AvgPool2d(kernel_size=stride, stride=stride, ceil_mode=True)

    def forward(self, x):
        batch, height, width, dim = x.shape
        window = self.kernel_size * self.kernel_size
        positions = math.ceil(height / self.stride) * math.ceil(width / self.stride)
        v = self.v(x).permute(0, 3, 1, 2)
        v = self.unfold(v).reshape(batch, self.num_heads, self.head_dim, window, positions)
        v = v.permute(0, 1, 4, 3, 2)
        attn = self.pool(x.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)
        attn = self.attn(attn).reshape(batch, positions, self.num_heads, window, window).permute(0, 2, 1, 3, 4)
        attn = attn * self.scale
        attn = attn.softmax(dim=-1).contiguous()
        attn = self.attn_drop(attn)
        x = (attn @ v).permute(0, 1, 4, 3, 2).reshape(batch, dim * window, positions)
        x = F.fold(x, output_size=(height, width), kernel_size=self.kernel_size, padding=self.padding,
                   stride=self.stride)
        x = self.proj(x.permute(0, 2, 3, 1))
        x = self.proj_drop(x)
        return x


class Outlooker(PreNormBlock):
    """An outlooker block on a channels-last map: x + drop_path(attn(norm1(x))) with outlook attention, then
    x + drop_path(mlp(norm2(x)))."""

    def __init__(self, dim, kernel_size, padding, stride=1, num_heads=1, mlp_ratio=3.0, attn_drop=0.0,
                 drop_path=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm, qkv_bias=False):
        super().__init__()
        attn = OutlookAttention(dim, num_heads, kernel_size=kernel_size, padding=padding, stride=stride,
                                qkv_bias=qkv_bias, attn_drop=attn_drop)
        self._add_branches(dim, attn, Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer), drop_path, norm_layer)


class Attention(nn.Module):
    """Multi-head self-attention over the positions of a channels-last (N, H, W, C) map: one ``qkv`` projection,
    scaled dot-product attention per head, ``proj``."""

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, height, width, dim = x.shape
        qkv = self.qkv(x).reshape(batch, height * width, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, height, width, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Transformer(PreNormBlock):
    """A pre-norm transformer block on a channels-last map: x + drop_path(attn(norm1(x))), then
    x + drop_path(mlp(norm2(x)))."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, attn_drop=0.0, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm):
        super().__init__()
        attn = Attention(dim, num_heads=num_heads, qkv_bias=qkv_bias, attn_drop=attn_drop)
        self._add_branches(dim, attn, Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer), drop_path, norm_layer)


class ClassAttention(ClassAttnBase):
    """VOLO's class attention (see ``cait.ClassAttnBase``): the class token's query (``q``) against every token's
    key and value (``kv``, one projection); ``head_dim`` may differ from dim / num_heads."""

    def __init__(self, dim, num_heads=8, head_dim=None, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        inner_dim = self._add_heads(dim, num_heads, head_dim)
        self.kv = nn.Linear(dim, inner_dim * 2, bias=qkv_bias)
        self.q = nn.Linear(dim, inner_dim, bias=qkv_bias)
        self._add_output(inner_dim, dim, attn_drop, proj_drop)

    def forward(self, x):
        batch, tokens, _ = x.shape
        kv = self.kv(x).reshape(batch, tokens, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        q = self.q(x[:, :1, :]).reshape(batch, self.num_heads, 1, self.head_dim) * self.scale
        return self._attend(q, k, v)


class ClassBlock(nn.Module):
    """A class-attention block: the class token x_cls becomes x_cls + drop_path(attn(norm1(x))), then
    x_cls + drop_path(mlp(norm2(x_cls))); the patch tokens are passed on unchanged behind it."""

    def __init__(self, dim, num_heads, head_dim=None, mlp_ratio=4.0, qkv_bias=False, drop=0.0, attn_drop=0.0,
                 drop_path=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = ClassAttention(dim, num_heads=num_heads, head_dim=head_dim, qkv_bias=qkv_bias,
                                   attn_drop=attn_drop, proj_drop=drop)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=drop)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        cls_embed = x[:, :1]
        cls_embed = cls_embed + self.drop_path1(self.attn(self.norm1(x)))
        cls_embed = cls_embed + self.drop_path2(self.mlp(self.norm2(cls_embed)))
        return torch.cat([cls_embed, x[:, 1:]], dim=1)


_POST_BLOCKS = {"ca": ClassBlock}


def get_block(block_type, **kwargs):
    """A block after the stages by timm's name for it ('ca': ``ClassBlock``)."""
    if block_type not in _POST_BLOCKS:
        raise ValueError(f"unknown post block type {block_type!r}: expected one of {sorted(_POST_BLOCKS)}")
    return _POST_BLOCKS[block_type](**kwargs)


class PatchEmbed(nn.Module):
    """VOLO's patch embedding: a convolutional stem (``conv``: a 7x7 convolution of ``stem_stride`` and two 3x3
    convolutions, each with BatchNorm and ReLU, ``hidden_dim`` wide), then ``proj``, a strided convolution that
    brings the stride to ``patch_size`` (4, 8 or 16) and the width to ``embed_dim``. Returns a (N, C, H, W) map."""

    def __init__(self, stem_stride=2, patch_size=8, in_chans=3, hidden_dim=64, embed_dim=384):
        super().__init__()
        if patch_size not in (4, 8, 16):
            raise ValueError(f"patch_size must be 4, 8 or 16, got {patch_size}")
        self.conv = nn.Sequential(
            nn.Conv2d(in_chans, hidden_dim, kernel_size=7, stride=stem_stride, padding=3, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Conv2d(hidden_dim, hidden_dim, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Conv2d(hidden_dim, hidden_dim, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU(inplace=True),
        )
        self.proj = nn.Conv2d(hidden_dim, embed_dim, kernel_size=patch_size // stem_stride,
                              stride=patch_size // stem_stride)

    def forward(self, x):
        x = self.conv(x)
        x = self.proj(x)
        return x


class Downsample(nn.Module):
    """Patch merging between stages on a channels-last map: a ``patch_size`` strided convolution (``proj``) to
    ``out_embed_dim`` channels."""

    def __init__(self, in_embed_dim, out_embed_dim, patch_size=2):
        super().__init__()
        self.proj = nn.Conv2d(in_embed_dim, out_embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = x.permute(0, 3, 1, 2)
        x = self.proj(x)
        x = x.permute(0, 2, 3, 1)
        return x


def _drop_path_rates(layers, index, drop_path_rate):
    """timm's stochastic depth of the blocks of stage ``index``: rising linearly over all blocks, from 0 at the first
    to ``drop_path_rate`` at the last."""
    first = sum(layers[:index])
    return [drop_path_rate * (first + i) / (sum(layers) - 1) for i in range(layers[index])]


class VOLO(nn.Module):
    """The convolutional patch embedding, stages of outlookers or transformer blocks (``layers`` blocks each, a
    stride-2 patch merge after the stages marked in ``downsamples``, position embeddings added before the third
    module of ``network``), class-attention blocks (``post_layers``), a norm and the heads (timm's ``VOLO``, its
    arguments and defaults).

    ``outlook_attention`` marks the outlooker stages; ``embed_dims``, ``num_heads`` and ``mlp_ratio`` (one value,
    or one per stage) give each stage's shape; ``stem_hidden_dim`` the stem's width; ``pooling_scale`` the stride of
    the patch merges before the position embeddings (their grid is ``img_size`` / patch_size / pooling_scale).
    ``global_pool``: 'token' classifies the class token, 'avg' the tokens' average, '' returns the whole sequence;
    ``use_aux_head`` adds the token-labelling head ``aux_head``, whose best patch logits, halved, join the pooled
    logits. Dropout: ``pos_drop_rate`` after the position embeddings, ``attn_drop_rate`` on attention weights,
    ``drop_rate`` before the heads; ``drop_path_rate`` is the stochastic depth of the last transformer block (rising
    linearly from 0, none in the outlookers, as in timm). ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "patch_embed.conv.0", "classifier": ("head", "aux_head")}
    feature_wrapper = FeatureGetterNet

    def __init__(self, layers, img_size=224, in_chans=3, num_classes=1000, global_pool="token", patch_size=8,
                 stem_hidden_dim=64, embed_dims=None, num_heads=None, downsamples=(True, False, False, False),
                 outlook_attention=(True, False, False, False), mlp_ratio=3.0, qkv_bias=False, drop_rate=0.0,
                 pos_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=nn.LayerNorm,
                 post_layers=("ca", "ca"), use_aux_head=True, pooling_scale=2):
        super().__init__()
        _check_global_pool(global_pool)
        num_stages = len(layers)
        mlp_ratio = tuple(mlp_ratio) if isinstance(mlp_ratio, (tuple, list)) else (mlp_ratio,) * num_stages
        img_size = pair(img_size)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = embed_dims[-1]

        self.patch_embed = PatchEmbed(stem_stride=2, patch_size=patch_size, in_chans=in_chans,
                                      hidden_dim=stem_hidden_dim, embed_dim=embed_dims[0])
        grid = (img_size[0] // patch_size // pooling_scale, img_size[1] // patch_size // pooling_scale)
        self.pos_embed = nn.Parameter(torch.zeros(1, grid[0], grid[1], embed_dims[-1]))
        self.pos_drop = nn.Dropout(pos_drop_rate)

        self.stage_ends = []
        self.feature_info = []
        network = []
        reduction = patch_size
        for i in range(num_stages):
            if outlook_attention[i]:
                stage = nn.Sequential(*[
                    Outlooker(embed_dims[i], kernel_size=3, padding=1, stride=2, num_heads=num_heads[i],
                              mlp_ratio=mlp_ratio[i], qkv_bias=qkv_bias, attn_drop=attn_drop_rate,
                              norm_layer=norm_layer)
                    for _ in range(layers[i])])
            else:
                stage = nn.Sequential(*[
                    Transformer(embed_dims[i], num_heads[i], mlp_ratio=mlp_ratio[i], qkv_bias=qkv_bias,
                                attn_drop=attn_drop_rate, drop_path=rate, norm_layer=norm_layer)
                    for rate in _drop_path_rates(layers, i, drop_path_rate)])
            self.stage_ends.append(len(network))
            self.feature_info.append(dict(num_chs=embed_dims[i], reduction=reduction, module=f"network.{len(network)}"))
            network.append(stage)
            if downsamples[i]:
                network.append(Downsample(embed_dims[i], embed_dims[i + 1], 2))
                reduction *= 2
        self.network = nn.ModuleList(network)

        if post_layers is not None:
            self.post_network = nn.ModuleList([
                get_block(block_type, dim=embed_dims[-1], num_heads=num_heads[-1], mlp_ratio=mlp_ratio[-1],
                          qkv_bias=qkv_bias, attn_drop=attn_drop_rate, drop_path=0.0, norm_layer=norm_layer)
                for block_type in post_layers])
            self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dims[-1]))
            trunc_normal_(self.cls_token, std=0.02)
        else:
            self.post_network = None
            self.cls_token = None

        self.use_aux_head = use_aux_head
        self.aux_head = nn.Linear(self.num_features, num_classes) if use_aux_head and num_classes > 0 else None
        self.norm = norm_layer(self.num_features)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        trunc_normal_(self.pos_embed, std=0.02)
        init_linear_layers(self)

    def get_classifier(self):
        """The class-token classifier."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) head for ``num_classes`` (0: an identity), and a new auxiliary head when the
        model has one (none for 0 classes); ``global_pool`` changes the pooling too."""
        self.num_classes = num_classes
        if global_pool is not None:
            _check_global_pool(global_pool)
            if global_pool == "token" and self.cls_token is None:
                raise ValueError("global_pool='token' needs the class token")
            self.global_pool = global_pool
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.head.train(self.training)
        if self.use_aux_head and num_classes > 0:
            self.aux_head = nn.Linear(self.num_features, num_classes)
            self.aux_head.train(self.training)
        else:
            self.aux_head = None

    def _add_pos_embed(self, idx, x):
        """The input of ``network[idx]``: the position embeddings (then ``pos_drop``) join before the third module,
        after the outlookers and the first patch merge, on a grid of their size only (timm would broadcast a grid of
        one row or column). The map is laid out in memory as torch lays it out there
        (channel by channel, as the convolutions' maps), as dropout draws its mask in memory order: so the same seed
        drops timm's elements."""
        if idx == 2 and self.pos_embed is not None:
            if x.shape[1:3] != self.pos_embed.shape[1:3]:
                raise ValueError(f"the input gives a {x.shape[1]}x{x.shape[2]} token grid, the position embeddings "
                                 f"are {self.pos_embed.shape[1]}x{self.pos_embed.shape[2]}: build the model with the "
                                 f"img_size of the input")
            x = x + self.pos_embed
            x = x.permute(0, 3, 1, 2).contiguous().permute(0, 2, 3, 1)
            x = self.pos_drop(x)
        return x

    def forward_tokens(self, x):
        """A channels-last (N, H, W, C) map through the stages -> the token sequence (N, H' * W', C')."""
        for idx, module in enumerate(self.network):
            x = module(self._add_pos_embed(idx, x))
        batch, height, width, dim = x.shape
        return x.reshape(batch, height * width, dim)

    def forward_cls(self, x):
        """The class token prepended to the tokens ``x`` and the class-attention blocks run."""
        cls_tokens = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls_tokens, x], dim=1)
        for block in self.post_network:
            x = block(x)
        return x

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised sequence (N, 1 + tokens, C), class token first."""
        x = self.patch_embed(x).permute(0, 2, 3, 1)
        x = self.forward_tokens(x)
        if self.post_network is not None:
            x = self.forward_cls(x)
        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling (the class token, or every token's average), head dropout, then the head unless ``pre_logits``,
        plus half the auxiliary head's best logits over the patch tokens when the model has it and pools."""
        if self.global_pool == "avg":
            out = x.mean(dim=1)
        elif self.global_pool == "token":
            out = x[:, 0]
        else:
            out = x
        out = self.head_drop(out)
        x = self.head_drop(x)
        if pre_logits:
            return out
        out = self.head(out)
        if self.aux_head is not None and self.global_pool:
            aux = self.aux_head(x[:, 1:])
            out = out + 0.5 * aux.max(1)[0]
        return out

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final normalised sequence (when the whole network ran; else
        the last map). ``norm`` applies the final norm to the maps after the position embeddings; ``stop_early``
        skips the stages after the last one picked."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = [self.stage_ends[i] for i in take_indices(len(self.stage_ends), indices)]
        x = self.patch_embed(x).permute(0, 2, 3, 1)
        modules = list(self.network)[:max(take) + 1] if stop_early else list(self.network)
        intermediates = []
        for idx, module in enumerate(modules):
            x = module(self._add_pos_embed(idx, x))
            if idx in take:
                y = self.norm(x) if norm and idx >= 2 else x
                intermediates.append(y.permute(0, 3, 1, 2))
        if intermediates_only:
            return intermediates
        if len(modules) == len(self.network):
            batch, height, width, dim = x.shape
            x = x.reshape(batch, height * width, dim)
            if self.post_network is not None:
                x = self.forward_cls(x)
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks; before the position embeddings they go too, with the
        final norm (which has the last stage's width). Cutting the network or ``prune_head`` removes the class
        token, the class-attention blocks and both heads. Returns the absolute stage indices."""
        take = take_indices(len(self.stage_ends), indices)
        last_stage = max(take)
        last_module = self.stage_ends[last_stage]
        cut_end = last_module < len(self.network) - 1
        self.network = nn.ModuleList(list(self.network)[:last_module + 1])
        if last_module < 2:
            self.pos_embed = None
            prune_norm = True
        if prune_norm:
            self.norm = nn.Identity()
        if cut_end:
            self.num_features = self.head_hidden_size = self.feature_info[last_stage]["num_chs"]
        if prune_head or cut_end:
            self.post_network = None
            self.cls_token = None
            self.use_aux_head = False
            self.reset_classifier(0, "")
        return take


def _create_volo(variant, pretrained, progress, kwargs, **model_args):
    """A VOLO entrypoint's body: timm's architecture arguments (the image size of timm's weights), overridable by
    the caller's ``kwargs``."""
    return build_model(VOLO, variant, pretrained, progress=progress, **{**model_args, **kwargs})


_D1 = dict(layers=(4, 4, 8, 2), embed_dims=(192, 384, 384, 384), num_heads=(6, 12, 12, 12))
_D2 = dict(layers=(6, 4, 10, 4), embed_dims=(256, 512, 512, 512), num_heads=(8, 16, 16, 16))
_D3 = dict(layers=(8, 8, 16, 4), embed_dims=(256, 512, 512, 512), num_heads=(8, 16, 16, 16))
_D4 = dict(layers=(8, 8, 16, 4), embed_dims=(384, 768, 768, 768), num_heads=(12, 16, 16, 16))
_D5 = dict(layers=(12, 12, 20, 4), embed_dims=(384, 768, 768, 768), num_heads=(12, 16, 16, 16), mlp_ratio=4,
           stem_hidden_dim=128)


@register_model
def volo_d1_224(pretrained=False, progress=True, **kwargs):
    """VOLO-D1 at 224 (27M parameters)."""
    return _create_volo("volo_d1_224", pretrained, progress, kwargs, img_size=224, **_D1)


@register_model
def volo_d1_384(pretrained=False, progress=True, **kwargs):
    """VOLO-D1 at 384 (27M parameters)."""
    return _create_volo("volo_d1_384", pretrained, progress, kwargs, img_size=384, **_D1)


@register_model
def volo_d2_224(pretrained=False, progress=True, **kwargs):
    """VOLO-D2 at 224 (59M parameters)."""
    return _create_volo("volo_d2_224", pretrained, progress, kwargs, img_size=224, **_D2)


@register_model
def volo_d2_384(pretrained=False, progress=True, **kwargs):
    """VOLO-D2 at 384 (59M parameters)."""
    return _create_volo("volo_d2_384", pretrained, progress, kwargs, img_size=384, **_D2)


@register_model
def volo_d3_224(pretrained=False, progress=True, **kwargs):
    """VOLO-D3 at 224 (86M parameters)."""
    return _create_volo("volo_d3_224", pretrained, progress, kwargs, img_size=224, **_D3)


@register_model
def volo_d3_448(pretrained=False, progress=True, **kwargs):
    """VOLO-D3 at 448 (86M parameters)."""
    return _create_volo("volo_d3_448", pretrained, progress, kwargs, img_size=448, **_D3)


@register_model
def volo_d4_224(pretrained=False, progress=True, **kwargs):
    """VOLO-D4 at 224 (193M parameters)."""
    return _create_volo("volo_d4_224", pretrained, progress, kwargs, img_size=224, **_D4)


@register_model
def volo_d4_448(pretrained=False, progress=True, **kwargs):
    """VOLO-D4 at 448 (193M parameters)."""
    return _create_volo("volo_d4_448", pretrained, progress, kwargs, img_size=448, **_D4)


@register_model
def volo_d5_224(pretrained=False, progress=True, **kwargs):
    """VOLO-D5 at 224 (296M parameters; a 128-wide stem)."""
    return _create_volo("volo_d5_224", pretrained, progress, kwargs, img_size=224, **_D5)


@register_model
def volo_d5_448(pretrained=False, progress=True, **kwargs):
    """VOLO-D5 at 448 (296M parameters; a 128-wide stem)."""
    return _create_volo("volo_d5_448", pretrained, progress, kwargs, img_size=448, **_D5)


@register_model
def volo_d5_512(pretrained=False, progress=True, **kwargs):
    """VOLO-D5 at 512 (296M parameters; a 128-wide stem)."""
    return _create_volo("volo_d5_512", pretrained, progress, kwargs, img_size=512, **_D5)
