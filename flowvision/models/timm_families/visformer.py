"""Visformer (Chen et al. 2021, "Visformer: The Vision-friendly Transformer"): timm's ``visformer`` models,
visformer_tiny and visformer_small.

A transformer reshaped step by step towards a ResNet until it trains as well with little data: a convolutional stem,
three stages at strides 8, 16 and 32 that keep the feature map in (N, C, H, W) form, each opened by a strided patch
embedding with BatchNorm and learnt position embeddings. Blocks are pre-norm residual pairs of 1x1-convolution
self-attention (queries, keys and values by a 1x1 convolution over the map, attention among all its pixels) and a
convolutional MLP, with BatchNorm as the norm. The first stage leaves attention out and puts a grouped 3x3
convolution inside its MLP; the later stages attend. The final map is normalised, average-pooled and classified.

This is timm's ``Visformer``: model names, module names, ``state_dict`` keys, defaults and initialisation follow
timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. A model runs at the image size it was
built for (``img_size``, which must be even). ``features_only=True`` returns the three stages' maps.
"""
import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from . import _layers
from ._layers import PooledHeadApi, create_classifier, drop_path_module, pair, trunc_normal_
from ._norm import LayerNorm2d

__all__ = []


class PatchEmbed(_layers.PatchEmbed):
    """The shared patch embedding (one strided convolution ``proj``, images of exactly ``img_size``) that keeps its
    output as an (N, embed_dim, H / p, W / p) map, normalised by ``norm_layer`` when given (timm's ``PatchEmbed``
    with ``flatten=False``; ``norm`` is an identity otherwise)."""

    def __init__(self, img_size, patch_size, in_chans, embed_dim, norm_layer=None):
        super().__init__(img_size, patch_size, in_chans, embed_dim)
        self.norm = norm_layer(embed_dim) if norm_layer else nn.Identity()

    def forward(self, x):
        height, width = x.shape[-2:]
        if (height, width) != self.img_size:
            raise ValueError(f"Input size ({height}x{width}) doesn't match the model's ({self.img_size[0]}x"
                             f"{self.img_size[1]}): build the model with another img_size")
        x = self.proj(x)
        x = self.norm(x)
        return x


class SpatialMlp(nn.Module):
    """The MLP of 1x1 convolutions over an (N, C, H, W) map, without biases: ``conv1`` to the hidden width, GELU,
    dropout, with ``spatial_conv`` a grouped 3x3 convolution ``conv2`` (``group`` groups) and GELU, then ``conv3``
    back and dropout. With ``spatial_conv`` the hidden width is twice the input's (5/6 of it for ``group`` < 2),
    whatever ``hidden_features``."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0, group=8,
                 spatial_conv=False):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        drop1, drop3 = pair(drop)
        if spatial_conv:
            hidden_features = in_features * 5 // 6 if group < 2 else in_features * 2
        self.in_features = in_features
        self.out_features = out_features
        self.spatial_conv = spatial_conv
        self.hidden_features = hidden_features
        self.group = group
        self.conv1 = nn.Conv2d(in_features, hidden_features, 1, bias=False)
        self.act1 = act_layer()
        self.drop1 = nn.Dropout(drop1)
        if spatial_conv:
            self.conv2 = nn.Conv2d(hidden_features, hidden_features, 3, padding=1, groups=group, bias=False)
            self.act2 = act_layer()
        else:
            self.conv2 = None
            self.act2 = None
        self.conv3 = nn.Conv2d(hidden_features, out_features, 1, bias=False)
        self.drop3 = nn.Dropout(drop3)

    def forward(self, x):
        x = self.conv1(x)
        x = self.act1(x)
        x = self.drop1(x)
        if self.conv2 is not None:
            x = self.conv2(x)
            x = self.act2(x)
        x = self.conv3(x)
        x = self.drop3(x)
        return x


class Attention(nn.Module):
    """Multi-head self-attention among the pixels of an (N, C, H, W) map: queries, keys and values by one 1x1
    convolution ``qkv`` (no bias), softmax attention per head (heads of ``dim / num_heads * head_dim_ratio``
    channels), attention dropout, the heads back as a map and a 1x1 convolution ``proj`` (no bias)."""

    def __init__(self, dim, num_heads=8, head_dim_ratio=1.0, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.dim = dim
        self.num_heads = num_heads
        self.head_dim = round(dim // num_heads * head_dim_ratio)
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Conv2d(dim, self.head_dim * num_heads * 3, 1, bias=False)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Conv2d(self.head_dim * num_heads, dim, 1, bias=False)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, _, height, width = x.shape
        x = self.qkv(x).reshape(batch, 3, self.num_heads, self.head_dim, -1).permute(1, 0, 2, 4, 3)
        q, k, v = x.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = attn @ v
        x = x.permute(0, 1, 3, 2).reshape(batch, -1, height, width)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Block(nn.Module):
    """Visformer's pre-norm block on an (N, C, H, W) map: x + drop_path(attn(norm1(x))) unless
    ``attn_disabled`` (then ``norm1`` and ``attn`` are None), then x + drop_path(mlp(norm2(x))) with a
    ``SpatialMlp``. One ``drop_path`` module serves both branches, as in timm."""

    def __init__(self, dim, num_heads, head_dim_ratio=1.0, mlp_ratio=4.0, proj_drop=0.0, attn_drop=0.0,
                 drop_path=0.0, act_layer=nn.GELU, norm_layer=LayerNorm2d, group=8, attn_disabled=False,
                 spatial_conv=False):
        super().__init__()
        self.spatial_conv = spatial_conv
        self.drop_path = drop_path_module(drop_path)
        if attn_disabled:
            self.norm1 = None
            self.attn = None
        else:
            self.norm1 = norm_layer(dim)
            self.attn = Attention(dim, num_heads=num_heads, head_dim_ratio=head_dim_ratio, attn_drop=attn_drop,
                                  proj_drop=proj_drop)
        self.norm2 = norm_layer(dim)
        self.mlp = SpatialMlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop, group=group,
                              spatial_conv=spatial_conv)

    def forward(self, x):
        if self.attn is not None:
            x = x + self.drop_path(self.attn(self.norm1(x)))
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x


class Visformer(PooledHeadApi, nn.Module):
    """A stem, three stages of ``Block`` (``depth``: a triple, or a total split as thirds), a norm and the head:
    global pooling, dropout, a linear classifier (timm's ``Visformer``, its arguments and defaults).

    The stem is a 7x7 stride-2 convolution with BatchNorm and ReLU (``init_channels`` wide) followed by a
    ``patch_size / 4`` patch embedding to ``embed_dim / 2`` channels; without ``init_channels`` it is a single
    ``patch_size / 2`` patch embedding. Stages 2 and 3 open with ``patch_size / 8`` patch embeddings to
    ``embed_dim`` and ``2 * embed_dim`` channels. ``vit_stem`` instead embeds ``patch_size`` patches to
    ``embed_dim`` once and runs every stage at that stride: only the middle stage, ``embed_dim`` wide, may then hold
blocks (the others keep timm's widths). ``embed_norm`` normalises each patch
    embedding's map; ``use_pos_embed`` adds learnt position embeddings after each (then ``pos_drop_rate``
    dropout). ``attn_stage`` and ``spatial_conv`` are three '0'/'1' flags: which stages attend, which put a grouped
    (``group``) 3x3 convolution in their MLP. Stage 1's attention heads are half width. ``conv_init`` draws the
    convolutions He-normal (fan-out) instead of truncated-normal. Dropout: ``attn_drop_rate`` on attention weights,
    ``proj_drop_rate`` in the blocks, ``drop_rate`` before the head; ``drop_path_rate`` is the stochastic depth of
    the last block, rising linearly from 0 at the first. ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "stem.0", "classifier": "head"}
    feature_wrapper = FeatureGetterNet

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, init_channels=32, embed_dim=384,
                 depth=12, num_heads=6, mlp_ratio=4.0, drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0,
                 attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=LayerNorm2d, attn_stage="111",
                 use_pos_embed=True, spatial_conv="111", vit_stem=False, group=8, global_pool="avg", conv_init=False,
                 embed_norm=None):
        super().__init__()
        img_size = pair(img_size)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.init_channels = init_channels
        self.img_size = img_size
        self.vit_stem = vit_stem
        self.conv_init = conv_init
        if isinstance(depth, (list, tuple)):
            self.stage_num1, self.stage_num2, self.stage_num3 = depth
            depth = sum(depth)
        else:
            self.stage_num1 = self.stage_num3 = depth // 3
            self.stage_num2 = depth - self.stage_num1 - self.stage_num3
        self.use_pos_embed = use_pos_embed
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        stage_starts = (0, self.stage_num1, self.stage_num1 + self.stage_num2, depth)

        def make_stage(index, dim, head_dim_ratio):
            """The blocks of stage ``index`` (0 to 2), ``dim`` wide."""
            return nn.Sequential(*[
                Block(dim, num_heads, head_dim_ratio=head_dim_ratio, mlp_ratio=mlp_ratio, proj_drop=proj_drop_rate,
                      attn_drop=attn_drop_rate, drop_path=drop_path_rates[i], norm_layer=norm_layer, group=group,
                      attn_disabled=attn_stage[index] == "0", spatial_conv=spatial_conv[index] == "1")
                for i in range(stage_starts[index], stage_starts[index + 1])])

        if vit_stem:
            self.stem = None
            self.patch_embed1 = PatchEmbed(img_size, patch_size, in_chans, embed_dim, embed_norm)
            grid = [s // patch_size for s in img_size]
            reduction = patch_size
        elif init_channels is None:
            self.stem = None
            self.patch_embed1 = PatchEmbed(img_size, patch_size // 2, in_chans, embed_dim // 2, embed_norm)
            grid = [s // (patch_size // 2) for s in img_size]
            reduction = patch_size // 2
        else:
            self.stem = nn.Sequential(
                nn.Conv2d(in_chans, init_channels, 7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(init_channels),
                nn.ReLU(inplace=True))
            grid = [s // 2 for s in img_size]
            self.patch_embed1 = PatchEmbed(grid, patch_size // 4, init_channels, embed_dim // 2, embed_norm)
            grid = [s // (patch_size // 4) for s in grid]
            reduction = 2 * (patch_size // 4)
        stage1_dim = embed_dim if vit_stem else embed_dim // 2
        if use_pos_embed:
            self.pos_embed1 = nn.Parameter(torch.zeros(1, stage1_dim, *grid))
            self.pos_drop = nn.Dropout(pos_drop_rate)
        else:
            self.pos_embed1 = None
        self.stage1 = make_stage(0, embed_dim // 2, 0.5)
        self.feature_info = [dict(num_chs=stage1_dim, reduction=reduction, module="stage1")]

        for index, (in_dim, dim) in enumerate(((embed_dim // 2, embed_dim), (embed_dim, embed_dim * 2)), start=2):
            if vit_stem:
                setattr(self, f"patch_embed{index}", None)
                setattr(self, f"pos_embed{index}", None)
            else:
                setattr(self, f"patch_embed{index}", PatchEmbed(grid, patch_size // 8, in_dim, dim, embed_norm))
                grid = [s // (patch_size // 8) for s in grid]
                reduction *= patch_size // 8
                pos_embed = nn.Parameter(torch.zeros(1, dim, *grid)) if use_pos_embed else None
                setattr(self, f"pos_embed{index}", pos_embed)
            setattr(self, f"stage{index}", make_stage(index - 1, dim, 1.0))
            self.feature_info.append(dict(num_chs=embed_dim if vit_stem else dim, reduction=reduction,
                                          module=f"stage{index}"))

        self.num_features = embed_dim if vit_stem else embed_dim * 2
        self.norm = norm_layer(self.num_features)
        self.global_pool, head = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = head
        self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal position embeddings (std 0.02), then in module order every convolution
        He-normal (fan-out, for ReLU) with ``conv_init``, else truncated-normal (std 0.02), every Linear
        truncated-normal, all biases zero; BatchNorms keep their defaults."""
        for pos_embed in (self.pos_embed1, self.pos_embed2, self.pos_embed3):
            if pos_embed is not None:
                trunc_normal_(pos_embed, std=0.02)
        for module in self.modules():
            if isinstance(module, nn.Conv2d) and self.conv_init:
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, (nn.Conv2d, nn.Linear)):
                trunc_normal_(module.weight, std=0.02)
            if isinstance(module, (nn.Conv2d, nn.Linear)) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def _stages(self):
        """Each stage's (patch embedding, position embeddings, blocks), the first two None where the stage has
        none."""
        return [(self.patch_embed1, self.pos_embed1, self.stage1), (self.patch_embed2, self.pos_embed2, self.stage2),
                (self.patch_embed3, self.pos_embed3, self.stage3)]

    def _run_stage(self, x, patch_embed, pos_embed, blocks):
        """A stage: its patch embedding and position embeddings (then ``pos_drop``) where it has them, its
        blocks."""
        if patch_embed is not None:
            x = patch_embed(x)
        if pos_embed is not None:
            x = self.pos_drop(x + pos_embed)
        x = blocks(x)
        return x

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised final map (N, num_features, H / 32, W / 32)."""
        if self.stem is not None:
            x = self.stem(x)
        for stage in self._stages():
            x = self._run_stage(x, *stage)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The maps output by the stages picked by ``indices`` (None: all, n: the last n, or a list), and (unless
        ``intermediates_only``) the final map, normalised when every stage ran. ``norm`` applies the final norm to
        the last stage's map; ``stop_early`` skips the stages after the last one picked."""
        take, stages = intermediate_stages(self._stages(), indices, stop_early, output_fmt)
        last = len(self.feature_info) - 1
        if self.stem is not None:
            x = self.stem(x)
        intermediates = []
        for i, stage in enumerate(stages):
            x = self._run_stage(x, *stage)
            if i in take:
                intermediates.append(self.norm(x) if norm and i == last else x)
        if intermediates_only:
            return intermediates
        if len(stages) == last + 1:
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks (their patch and position embeddings with them,
        the blocks emptied), the final norm when asked or when the last stage goes, and the head; the features then
        end at the last kept stage. Returns the absolute indices."""
        take = take_indices(3, indices)
        last_kept = max(take)
        for index in range(last_kept + 2, 4):
            setattr(self, f"patch_embed{index}", None)
            setattr(self, f"pos_embed{index}", None)
            setattr(self, f"stage{index}", nn.Sequential())
        pruned_end = last_kept < 2
        if prune_norm or pruned_end:
            self.norm = nn.Identity()
        if pruned_end:
            self.num_features = self.head_hidden_size = self.feature_info[last_kept]["num_chs"]
        if prune_head or pruned_end:
            self.reset_classifier(0, "")
        return take


def _visformer(variant, pretrained, progress, kwargs, **model_args):
    """A Visformer entrypoint's body: timm's architecture arguments (the image size of timm's weights),
    overridable by the caller's ``kwargs``; ``features_only`` gives the three stages' maps."""
    return build_model(Visformer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def visformer_tiny(pretrained=False, progress=True, **kwargs):
    """Visformer-Ti: a 16-channel stem, stages of 7, 4 and 4 blocks, 96, 192 and 384 channels, 3 heads."""
    return _visformer("visformer_tiny", pretrained, progress, kwargs, img_size=224, init_channels=16, embed_dim=192,
                      depth=(7, 4, 4), num_heads=3, mlp_ratio=4.0, group=8, attn_stage="011", spatial_conv="100",
                      norm_layer=nn.BatchNorm2d, conv_init=True, embed_norm=nn.BatchNorm2d)


@register_model
def visformer_small(pretrained=False, progress=True, **kwargs):
    """Visformer-S: a 32-channel stem, stages of 7, 4 and 4 blocks, 192, 384 and 768 channels, 6 heads."""
    return _visformer("visformer_small", pretrained, progress, kwargs, img_size=224, init_channels=32, embed_dim=384,
                      depth=(7, 4, 4), num_heads=6, mlp_ratio=4.0, group=8, attn_stage="011", spatial_conv="100",
                      norm_layer=nn.BatchNorm2d, conv_init=True, embed_norm=nn.BatchNorm2d)
