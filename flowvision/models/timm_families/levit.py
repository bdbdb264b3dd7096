"""LeViT (Graham et al. 2021, "LeViT: a Vision Transformer in ConvNet's Clothing for Faster Inference"): timm's
LeViT models, in their linear (``levit_*``) and convolutional (``levit_conv_*``) forms: the paper's LeViT-128S, -128,
-192, -256 and -384, and timm's experiments without published weights (SiLU instead of hard-swish): a stride-8 stem
(``levit_384_s8``, ``levit_512_s8``), wider (``levit_512``) and deeper (``levit_256d``, ``levit_512d``).

A hybrid built for fast inference. A stem of four stride-2 3x3 convolutions (each with BatchNorm, hard-swish
between them) turns the image into a 16x smaller map (three convolutions, 8x smaller, in the ``_s8`` models), and
three stages of transformer blocks follow, shrinking the map by two between stages. Every linear map is followed by
BatchNorm instead of preceded by LayerNorm (``LinearNorm``: foldable into the weights at inference), the activations
are hard-swish, and the attention adds a learnt bias per head to each query-key logit, indexed by the pair's absolute
offset (|dy|, |dx|) on the grid instead of position embeddings. Between stages a shrink-attention block subsamples
the queries by two and widens the values (``AttentionDownsample``). The features are averaged over the grid and
classified by two heads (``NormLinear``: BatchNorm, then a linear map), one trained on the labels and one by
distillation from a convolutional teacher; their logits are averaged (timm's wider and deeper experiments and
``levit_512_s8`` have the first head only).

The linear form keeps the tokens as a (N, H*W, C) sequence, the convolutional one as a (N, C, H, W) map with 1x1
convolutions; their weights have the same values (linear weights with two unit axes more). This is timm's
``Levit`` / ``LevitDistilled``: model names, module names, ``state_dict`` keys, defaults and initialisation follow
timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. A model runs at the image size it was
built for (``img_size``, a multiple of the stem's stride). ``features_only=True`` returns the three stages' outputs as
(N, C, H, W) maps.
"""
import engine as torch
from engine import nn

from .._features import FeatureGetterNet, FlatFeatureListNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._attention import attention_bias_indices
from ._layers import distilled_output, drop_path_module, get_act_layer, pair, trunc_normal_

__all__ = []

_GLOBAL_POOLS = ("", "avg")


def _per_stage(value, num_stages):
    """``value`` for each stage: a sequence as it is, a single value repeated."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * num_stages


class ConvNorm(nn.Module):
    """A convolution without bias (``linear``) followed by BatchNorm (``bn``) whose scale starts at
    ``bn_weight_init``."""

    def __init__(self, in_chs, out_chs, kernel_size=1, stride=1, padding=0, bn_weight_init=1.0):
        super().__init__()
        self.linear = nn.Conv2d(in_chs, out_chs, kernel_size, stride, padding, bias=False)
        self.bn = nn.BatchNorm2d(out_chs)
        nn.init.constant_(self.bn.weight, bn_weight_init)

    def forward(self, x):
        x = self.linear(x)
        x = self.bn(x)
        return x


class LinearNorm(nn.Module):
    """A linear map without bias (``linear``) on a (N, L, C) sequence followed by BatchNorm over every token of the
    batch (``bn``), whose scale starts at ``bn_weight_init``."""

    def __init__(self, in_features, out_features, bn_weight_init=1.0):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.bn = nn.BatchNorm1d(out_features)
        nn.init.constant_(self.bn.weight, bn_weight_init)

    def forward(self, x):
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class NormLinear(nn.Module):
    """A classifier: BatchNorm (``bn``), dropout (``drop``), then a linear map (``linear``) with truncated-normal
    weights (``std``) and zero bias."""

    def __init__(self, in_features, out_features, bias=True, std=0.02, drop=0.0):
        super().__init__()
        self.bn = nn.BatchNorm1d(in_features)
        self.drop = nn.Dropout(drop)
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        trunc_normal_(self.linear.weight, std=std)
        if self.linear.bias is not None:
            nn.init.constant_(self.linear.bias, 0)

    def forward(self, x):
        x = self.bn(x)
        x = self.drop(x)
        x = self.linear(x)
        return x


class StridedStem(nn.Sequential):
    """``num_convs`` stride-2 3x3 ``ConvNorm`` layers (``conv1``...), the widths doubling up to ``out_chs``, with the
    activation between them (``act1``...): the image becomes a 2 ** num_convs times smaller map."""

    def __init__(self, in_chs, out_chs, act_layer, num_convs):
        super().__init__()
        self.stride = 2 ** num_convs
        for i in range(1, num_convs + 1):
            if i > 1:
                self.add_module(f"act{i - 1}", act_layer())
            width = out_chs // 2 ** (num_convs - i)
            self.add_module(f"conv{i}", ConvNorm(in_chs, width, 3, stride=2, padding=1))
            in_chs = width


class Stem16(StridedStem):
    """Four stride-2 3x3 ``ConvNorm`` layers (widths out_chs / 8, / 4, / 2, out_chs) with the activation between them:
    the image becomes a 16x smaller map."""

    def __init__(self, in_chs, out_chs, act_layer):
        super().__init__(in_chs, out_chs, act_layer, 4)


class Stem8(StridedStem):
    """Three stride-2 3x3 ``ConvNorm`` layers (widths out_chs / 4, / 2, out_chs) with the activation between them:
    the image becomes an 8x smaller map."""

    def __init__(self, in_chs, out_chs, act_layer):
        super().__init__(in_chs, out_chs, act_layer, 3)


class Downsample(nn.Module):
    """The tokens of a (N, H*W, C) sequence on a ``resolution`` grid subsampled by ``stride`` along both axes (every
    ``stride``-th row and column, from the first), as a sequence again."""

    def __init__(self, stride, resolution):
        super().__init__()
        self.stride = stride
        self.resolution = pair(resolution)

    def forward(self, x):
        batch, _, channels = x.shape
        x = x.view(batch, self.resolution[0], self.resolution[1], channels)
        x = x[:, ::self.stride, ::self.stride]
        return x.reshape(batch, -1, channels)


class BiasedAttention(nn.Module):
    """What LeViT's attention layers share: heads with queries and keys of ``key_dim`` channels and values of
    ``attn_ratio * key_dim``, and a learnt bias per head for every query-key offset on the ``resolution`` grid
    (``attention_biases``, indexed by ``attention_bias_idxs``; queries subsampled by ``stride``)."""

    def _add_heads(self, key_dim, num_heads, attn_ratio, resolution, stride=1):
        """The heads' widths, the logit scale and the biases."""
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.key_attn_dim = key_dim * num_heads
        self.val_dim = int(attn_ratio * key_dim)
        self.val_attn_dim = self.val_dim * num_heads
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, resolution[0] * resolution[1]))
        self.register_buffer("attention_bias_idxs", attention_bias_indices(resolution, stride), persistent=False)

    def _attention(self, q, k):
        """The attention weights of queries (..., queries, key_dim) and keys (..., key_dim, keys): softmax over the
        keys of q.k / sqrt(key_dim) plus the heads' biases."""
        attn = q @ k * self.scale + self.attention_biases[:, self.attention_bias_idxs]
        return attn.softmax(dim=-1)


class Attention(BiasedAttention):
    """Multi-head self-attention with learnt relative-position biases on a ``resolution`` grid.

    One projection ``qkv`` gives each head a query and a key of ``key_dim`` channels and a value of
    ``attn_ratio * key_dim``; every logit q.k / sqrt(key_dim) gets the head's bias for the offset between the query
    and the key (``attention_biases``, indexed by ``attention_bias_idxs``); the heads' outputs go through the
    activation and ``proj`` (its BatchNorm's scale starting at 0, so the block starts as the identity). Tokens are a
    (N, H*W, C) sequence, or with ``use_conv`` a (N, C, H, W) map.
    """

    def __init__(self, dim, key_dim, num_heads=8, attn_ratio=4.0, resolution=14, use_conv=False, act_layer=nn.SiLU):
        super().__init__()
        ln_layer = ConvNorm if use_conv else LinearNorm
        resolution = pair(resolution)
        self.use_conv = use_conv
        self.resolution = resolution
        self._add_heads(key_dim, num_heads, attn_ratio, resolution)
        self.qkv = ln_layer(dim, self.val_attn_dim + self.key_attn_dim * 2)
        self.proj = nn.Sequential()
        self.proj.add_module("act", act_layer())
        self.proj.add_module("ln", ln_layer(self.val_attn_dim, dim, bn_weight_init=0))

    def forward(self, x):
        if self.use_conv:
            batch, _, height, width = x.shape
            qkv = self.qkv(x).view(batch, self.num_heads, -1, height * width)
            q, k, v = qkv.split([self.key_dim, self.key_dim, self.val_dim], dim=2)
            attn = self._attention(q.transpose(-2, -1), k)
            x = (v @ attn.transpose(-2, -1)).view(batch, -1, height, width)
        else:
            batch, tokens, _ = x.shape
            qkv = self.qkv(x).view(batch, tokens, self.num_heads, -1)
            q, k, v = qkv.split([self.key_dim, self.key_dim, self.val_dim], dim=3)
            attn = self._attention(q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1))
            x = (attn @ v.permute(0, 2, 1, 3)).transpose(1, 2).reshape(batch, tokens, self.val_attn_dim)
        x = self.proj(x)
        return x


class AttentionDownsample(BiasedAttention):
    """Shrink attention: every ``stride``-th position of the ``resolution`` grid (rows and columns) queries all the
    positions, so the output grid is ``stride`` times smaller, with ``out_dim`` channels.

    ``kv`` gives each head a key of ``key_dim`` channels and a value of ``attn_ratio * key_dim``; ``q`` subsamples the
    input (``down``) and projects the queries (``ln``); the logits get learnt relative-position biases as in
    ``Attention``; the heads' outputs go through the activation and ``proj``.
    """

    def __init__(self, in_dim, out_dim, key_dim, num_heads=8, attn_ratio=2.0, stride=2, resolution=14,
                 use_conv=False, act_layer=nn.SiLU):
        super().__init__()
        resolution = pair(resolution)
        self.stride = stride
        self.resolution = resolution
        self.use_conv = use_conv
        self._add_heads(key_dim, num_heads, attn_ratio, resolution, stride)
        if use_conv:
            ln_layer = ConvNorm
            down = nn.AvgPool2d(kernel_size=1, stride=stride, padding=0, count_include_pad=False)
        else:
            ln_layer = LinearNorm
            down = Downsample(stride, resolution)
        self.kv = ln_layer(in_dim, self.val_attn_dim + self.key_attn_dim)
        self.q = nn.Sequential()
        self.q.add_module("down", down)
        self.q.add_module("ln", ln_layer(in_dim, self.key_attn_dim))
        self.proj = nn.Sequential()
        self.proj.add_module("act", act_layer())
        self.proj.add_module("ln", ln_layer(self.val_attn_dim, out_dim))

    def forward(self, x):
        if self.use_conv:
            batch, _, height, width = x.shape
            out_height = (height - 1) // self.stride + 1
            out_width = (width - 1) // self.stride + 1
            kv = self.kv(x).view(batch, self.num_heads, -1, height * width)
            k, v = kv.split([self.key_dim, self.val_dim], dim=2)
            q = self.q(x).view(batch, self.num_heads, self.key_dim, -1)
            attn = self._attention(q.transpose(-2, -1), k)
            x = (v @ attn.transpose(-2, -1)).reshape(batch, self.val_attn_dim, out_height, out_width)
        else:
            batch, tokens, _ = x.shape
            kv = self.kv(x).view(batch, tokens, self.num_heads, -1)
            k, v = kv.split([self.key_dim, self.val_dim], dim=3)
            q = self.q(x).view(batch, -1, self.num_heads, self.key_dim).permute(0, 2, 1, 3)
            attn = self._attention(q, k.permute(0, 2, 3, 1))
            x = (attn @ v.permute(0, 2, 1, 3)).transpose(1, 2).reshape(batch, -1, self.val_attn_dim)
        x = self.proj(x)
        return x


class LevitMlp(nn.Module):
    """The feed-forward block: ``ln1`` to ``hidden_features``, the activation, dropout, ``ln2`` back (its
    BatchNorm's scale starting at 0), with ``LinearNorm`` layers, or ``ConvNorm`` ones with ``use_conv``."""

    def __init__(self, in_features, hidden_features, out_features=None, use_conv=False, act_layer=nn.SiLU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        ln_layer = ConvNorm if use_conv else LinearNorm
        self.ln1 = ln_layer(in_features, hidden_features)
        self.act = act_layer()
        self.drop = nn.Dropout(drop)
        self.ln2 = ln_layer(hidden_features, out_features, bn_weight_init=0)

    def forward(self, x):
        x = self.ln1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.ln2(x)
        return x


class LevitDownsample(nn.Module):
    """Between stages: shrink attention (``attn_downsample``, stride 2, to ``out_dim`` channels), then a residual MLP
    (``mlp``, ``mlp_ratio`` times wider) with stochastic depth ``drop_path``."""

    def __init__(self, in_dim, out_dim, key_dim, num_heads=8, attn_ratio=4.0, mlp_ratio=2.0, act_layer=nn.SiLU,
                 attn_act_layer=None, resolution=14, use_conv=False, drop_path=0.0):
        super().__init__()
        attn_act_layer = attn_act_layer or act_layer
        self.attn_downsample = AttentionDownsample(in_dim, out_dim, key_dim, num_heads=num_heads,
                                                   attn_ratio=attn_ratio, resolution=resolution, use_conv=use_conv,
                                                   act_layer=attn_act_layer)
        self.mlp = LevitMlp(out_dim, int(out_dim * mlp_ratio), use_conv=use_conv, act_layer=act_layer)
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        x = self.attn_downsample(x)
        x = x + self.drop_path(self.mlp(x))
        return x


class LevitBlock(nn.Module):
    """A transformer block without norms (the BatchNorms are inside the layers): x + drop_path(attn(x)), then
    x + drop_path(mlp(x))."""

    def __init__(self, dim, key_dim, num_heads=8, attn_ratio=4.0, mlp_ratio=2.0, resolution=14, use_conv=False,
                 act_layer=nn.SiLU, attn_act_layer=None, drop_path=0.0):
        super().__init__()
        attn_act_layer = attn_act_layer or act_layer
        self.attn = Attention(dim, key_dim, num_heads=num_heads, attn_ratio=attn_ratio, resolution=resolution,
                              use_conv=use_conv, act_layer=attn_act_layer)
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = LevitMlp(dim, int(dim * mlp_ratio), use_conv=use_conv, act_layer=act_layer)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.attn(x))
        x = x + self.drop_path2(self.mlp(x))
        return x


class LevitStage(nn.Module):
    """One stage: with ``downsample``, a ``LevitDownsample`` from ``in_dim`` to ``out_dim`` channels that halves the
    ``resolution`` grid (its heads ``in_dim / key_dim``, attention ratio 4, MLP ratio 2), else an identity; then
    ``depth`` ``LevitBlock`` layers on the (new) grid."""

    def __init__(self, in_dim, out_dim, key_dim, depth=4, num_heads=8, attn_ratio=4.0, mlp_ratio=4.0,
                 act_layer=nn.SiLU, attn_act_layer=None, resolution=14, downsample=False, use_conv=False,
                 drop_path=0.0):
        super().__init__()
        resolution = pair(resolution)
        if downsample:
            self.downsample = LevitDownsample(in_dim, out_dim, key_dim, num_heads=in_dim // key_dim, attn_ratio=4.0,
                                              mlp_ratio=2.0, act_layer=act_layer, attn_act_layer=attn_act_layer,
                                              resolution=resolution, use_conv=use_conv, drop_path=drop_path)
            resolution = tuple((r - 1) // 2 + 1 for r in resolution)
        else:
            if in_dim != out_dim:
                raise ValueError(f"a stage without downsampling keeps its width: in_dim {in_dim} != out_dim {out_dim}")
            self.downsample = nn.Identity()
        self.blocks = nn.Sequential(*[
            LevitBlock(out_dim, key_dim, num_heads=num_heads, attn_ratio=attn_ratio, mlp_ratio=mlp_ratio,
                       resolution=resolution, use_conv=use_conv, act_layer=act_layer, attn_act_layer=attn_act_layer,
                       drop_path=drop_path)
            for _ in range(depth)])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class Levit(nn.Module):
    """The stem, one ``LevitStage`` per entry of ``embed_dim`` (the first without downsampling), average pooling and a
    ``NormLinear`` head (timm's ``Levit``, its arguments and defaults).

    ``img_size`` fixes the grid the attention biases are laid out on: images must have that size (up to the stem's
    rounding). ``key_dim`` is every head's query and key width; ``num_heads``, ``attn_ratio`` (value width / key
    width) and ``mlp_ratio`` are per stage or one for all; ``depth`` gives each stage's block count. ``stem_type``:
    's16' (four convolutions) or 's8' (three). ``act_layer`` and ``attn_act_layer`` (default: ``act_layer``) are
    classes or timm's names. ``use_conv`` keeps the tokens as (N, C, H, W) maps with 1x1 convolutions instead of
    sequences with linear layers. ``global_pool``: 'avg' or '' (the unpooled features); ``drop_rate`` is the
    head's dropout, ``drop_path_rate`` every residual branch's stochastic depth (the same for all, as in timm);
    ``num_classes=0`` gives the pooled features.
    """

    default_cfg = {"first_conv": "stem.conv1.linear", "classifier": "head.linear"}

    def __init__(self, img_size=224, in_chans=3, num_classes=1000, embed_dim=(192,), key_dim=64, depth=(12,),
                 num_heads=(3,), attn_ratio=2.0, mlp_ratio=2.0, stem_type="s16", act_layer="hard_swish",
                 attn_act_layer=None, use_conv=False, global_pool="avg", drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        if global_pool not in _GLOBAL_POOLS:
            raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")
        num_stages = len(embed_dim)
        if len(depth) != num_stages:
            raise ValueError(f"depth {tuple(depth)} should give one block count per stage ({num_stages})")
        if stem_type not in ("s16", "s8"):
            raise ValueError(f"stem_type must be 's16' or 's8', got {stem_type!r}")
        act_layer = get_act_layer(act_layer)
        attn_act_layer = get_act_layer(attn_act_layer or act_layer)
        self.use_conv = use_conv
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = embed_dim[-1]
        self.embed_dim = embed_dim
        self.drop_rate = drop_rate
        self.feature_info = []
        num_heads = _per_stage(num_heads, num_stages)
        attn_ratio = _per_stage(attn_ratio, num_stages)
        mlp_ratio = _per_stage(mlp_ratio, num_stages)

        stem_cls = Stem16 if stem_type == "s16" else Stem8
        self.stem = stem_cls(in_chans, embed_dim[0], act_layer=act_layer)
        stride = self.stem.stride
        resolution = tuple(size // stride for size in pair(img_size))
        self.grid_size = resolution
        in_dim = embed_dim[0]
        stages = []
        for i in range(num_stages):
            stage_stride = 2 if i > 0 else 1
            stages.append(LevitStage(in_dim, embed_dim[i], key_dim, depth=depth[i], num_heads=num_heads[i],
                                     attn_ratio=attn_ratio[i], mlp_ratio=mlp_ratio[i], act_layer=act_layer,
                                     attn_act_layer=attn_act_layer, resolution=resolution,
                                     downsample=stage_stride == 2, use_conv=use_conv, drop_path=drop_path_rate))
            stride *= stage_stride
            resolution = tuple((r - 1) // stage_stride + 1 for r in resolution)
            self.feature_info.append(dict(num_chs=embed_dim[i], reduction=stride, module=f"stages.{i}"))
            in_dim = embed_dim[i]
        self.stages = nn.Sequential(*stages)
        self.head = self._new_head(num_classes)

    def _new_head(self, num_classes):
        """A ``NormLinear`` head for ``num_classes`` (0: an identity)."""
        return NormLinear(self.num_features, num_classes, drop=self.drop_rate) if num_classes > 0 else nn.Identity()

    @property
    def feature_wrapper(self):
        """timm's ``features_only`` model: the flattened stage list of a convolutional LeViT, the stage outputs
        from ``forward_intermediates`` (as maps) of a linear one."""
        return FlatFeatureListNet if self.use_conv else FeatureGetterNet

    def get_classifier(self):
        """The head."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new head for ``num_classes`` (0: an identity); ``global_pool`` ('avg' or '') changes the pooling too."""
        if global_pool is not None:
            if global_pool not in _GLOBAL_POOLS:
                raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")
            self.global_pool = global_pool
        self.num_classes = num_classes
        self.head = self._new_head(num_classes)
        self.head.train(self.training)

    def _embed(self, x):
        """The stem's map, as a token sequence unless ``use_conv``; refuses images of another size than the model's
        (the attention biases are laid out on its grid)."""
        x = self.stem(x)
        height, width = x.shape[-2:]
        if (height, width) != self.grid_size:
            raise ValueError(f"the stem gives a {height}x{width} grid, the model was built for "
                             f"{self.grid_size[0]}x{self.grid_size[1]}: build it with this image size (img_size)")
        if not self.use_conv:
            x = x.flatten(2).transpose(1, 2)
        return x

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's tokens: a (N, h*w, C) sequence, or a (N, C, h, w) map with
        ``use_conv``."""
        x = self._embed(x)
        x = self.stages(x)
        return x

    def _pool(self, x):
        """The tokens averaged over the grid ('avg'), or left as they are ('')."""
        if self.global_pool == "avg":
            return x.mean(dim=(-2, -1)) if self.use_conv else x.mean(dim=1)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling, then the head unless ``pre_logits``."""
        x = self._pool(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the last stage's tokens; ``stop_early`` skips the stages after
        the last one picked. ``norm`` changes nothing: there is no final norm (timm's argument)."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt)
        x = self._embed(x)
        batch = x.shape[0]
        height, width = self.grid_size
        intermediates = []
        for i, stage in enumerate(stages):
            x = stage(x)
            if i in take:
                maps = x if self.use_conv else x.reshape(batch, height, width, -1).permute(0, 3, 1, 2)
                intermediates.append(maps)
            height = (height - 1) // 2 + 1
            width = (width - 1) // 2 + 1
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_head`` or when stages go, the head
        (the features then end at the last stage kept); returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


class LevitDistilled(Levit):
    """A LeViT with a second head ``head_dist``, trained by distillation from a teacher (timm's ``LevitDistilled``;
    takes ``Levit``'s arguments).

    In eval mode, and in train mode by default, the output is the average of the two heads' logits; after
    ``set_distilled_training()`` train mode returns both, (head logits, distillation-head logits).
    """

    default_cfg = {"first_conv": "stem.conv1.linear", "classifier": ("head.linear", "head_dist.linear")}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.head_dist = self._new_head(self.num_classes)
        self.distilled_training = False

    def get_classifier(self):
        """The two heads: (head, distillation head)."""
        return self.head, self.head_dist

    def reset_classifier(self, num_classes, global_pool=None):
        """New heads for ``num_classes`` (0: identities); ``global_pool`` ('avg' or '') changes the pooling too."""
        super().reset_classifier(num_classes, global_pool)
        self.head_dist = self._new_head(num_classes)
        self.head_dist.train(self.training)

    def set_distilled_training(self, enable=True):
        """Whether train mode returns both heads' logits (for a distillation loss) instead of their average."""
        self.distilled_training = enable

    def forward_head(self, x, pre_logits=False):
        """Pooling, then both heads: their average, or both in distilled training (with ``pre_logits``, the pooled
        features)."""
        x = self._pool(x)
        if pre_logits:
            return x
        x, x_dist = self.head(x), self.head_dist(x)
        return distilled_output(self, x, x_dist)


_MODEL_CFGS = {
    "levit_128s": dict(embed_dim=(128, 256, 384), key_dim=16, num_heads=(4, 6, 8), depth=(2, 3, 4)),
    "levit_128": dict(embed_dim=(128, 256, 384), key_dim=16, num_heads=(4, 8, 12), depth=(4, 4, 4)),
    "levit_192": dict(embed_dim=(192, 288, 384), key_dim=32, num_heads=(3, 5, 6), depth=(4, 4, 4)),
    "levit_256": dict(embed_dim=(256, 384, 512), key_dim=32, num_heads=(4, 6, 8), depth=(4, 4, 4)),
    "levit_384": dict(embed_dim=(384, 512, 768), key_dim=32, num_heads=(6, 9, 12), depth=(4, 4, 4)),
    # timm's experiments without published weights: a stride-8 stem, wider, deeper; all with SiLU
    "levit_384_s8": dict(embed_dim=(384, 512, 768), key_dim=32, num_heads=(6, 9, 12), depth=(4, 4, 4),
                         act_layer="silu", stem_type="s8"),
    "levit_512_s8": dict(embed_dim=(512, 640, 896), key_dim=64, num_heads=(8, 10, 14), depth=(4, 4, 4),
                         act_layer="silu", stem_type="s8"),
    "levit_512": dict(embed_dim=(512, 768, 1024), key_dim=64, num_heads=(8, 12, 16), depth=(4, 4, 4),
                      act_layer="silu"),
    "levit_256d": dict(embed_dim=(256, 384, 512), key_dim=32, num_heads=(4, 6, 8), depth=(4, 8, 6), act_layer="silu"),
    "levit_512d": dict(embed_dim=(512, 640, 768), key_dim=64, num_heads=(8, 10, 12), depth=(4, 8, 6),
                       act_layer="silu"),
}


def _create_levit(variant, pretrained, progress, kwargs, cfg, use_conv=False, distilled=True):
    """A LeViT entrypoint's body: the distilled model (the plain one unless ``distilled``) with timm's configuration
    ``cfg`` (overridable by the caller's ``kwargs``); with ``features_only``, timm's stages (all three unless
    ``out_indices`` says otherwise)."""
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", (0, 1, 2))
    if use_conv:
        kwargs.setdefault("use_conv", True)
    model_cls = LevitDistilled if distilled else Levit
    return build_model(model_cls, variant, pretrained, progress=progress, **{**_MODEL_CFGS[cfg], **kwargs})


@register_model
def levit_128s(pretrained=False, progress=True, **kwargs):
    """LeViT-128S: widths 128, 256, 384, key width 16, heads 4, 6, 8, blocks 2, 3, 4."""
    return _create_levit("levit_128s", pretrained, progress, kwargs, "levit_128s")


@register_model
def levit_128(pretrained=False, progress=True, **kwargs):
    """LeViT-128: widths 128, 256, 384, key width 16, heads 4, 8, 12, blocks 4, 4, 4."""
    return _create_levit("levit_128", pretrained, progress, kwargs, "levit_128")


@register_model
def levit_192(pretrained=False, progress=True, **kwargs):
    """LeViT-192: widths 192, 288, 384, key width 32, heads 3, 5, 6, blocks 4, 4, 4."""
    return _create_levit("levit_192", pretrained, progress, kwargs, "levit_192")


@register_model
def levit_256(pretrained=False, progress=True, **kwargs):
    """LeViT-256: widths 256, 384, 512, key width 32, heads 4, 6, 8, blocks 4, 4, 4."""
    return _create_levit("levit_256", pretrained, progress, kwargs, "levit_256")


@register_model
def levit_384(pretrained=False, progress=True, **kwargs):
    """LeViT-384: widths 384, 512, 768, key width 32, heads 6, 9, 12, blocks 4, 4, 4."""
    return _create_levit("levit_384", pretrained, progress, kwargs, "levit_384")


@register_model
def levit_384_s8(pretrained=False, progress=True, **kwargs):
    """LeViT-384 with a stride-8 stem and SiLU: widths 384, 512, 768, key width 32, heads 6, 9, 12, blocks 4, 4, 4."""
    return _create_levit("levit_384_s8", pretrained, progress, kwargs, "levit_384_s8")


@register_model
def levit_512_s8(pretrained=False, progress=True, **kwargs):
    """LeViT-512 with a stride-8 stem and SiLU, one head: widths 512, 640, 896, key width 64, heads 8, 10, 14."""
    return _create_levit("levit_512_s8", pretrained, progress, kwargs, "levit_512_s8", distilled=False)


@register_model
def levit_512(pretrained=False, progress=True, **kwargs):
    """LeViT-512 with SiLU, one head: widths 512, 768, 1024, key width 64, heads 8, 12, 16, blocks 4, 4, 4."""
    return _create_levit("levit_512", pretrained, progress, kwargs, "levit_512", distilled=False)


@register_model
def levit_256d(pretrained=False, progress=True, **kwargs):
    """Deeper LeViT-256 with SiLU, one head: widths 256, 384, 512, key width 32, heads 4, 6, 8, blocks 4, 8, 6."""
    return _create_levit("levit_256d", pretrained, progress, kwargs, "levit_256d", distilled=False)


@register_model
def levit_512d(pretrained=False, progress=True, **kwargs):
    """Deeper LeViT-512 with SiLU, one head: widths 512, 640, 768, key width 64, heads 8, 10, 12, blocks 4, 8, 6."""
    return _create_levit("levit_512d", pretrained, progress, kwargs, "levit_512d", distilled=False)


@register_model
def levit_conv_128s(pretrained=False, progress=True, **kwargs):
    """LeViT-128S in convolutional form: widths 128, 256, 384, key width 16, heads 4, 6, 8, blocks 2, 3, 4."""
    return _create_levit("levit_conv_128s", pretrained, progress, kwargs, "levit_128s", use_conv=True)


@register_model
def levit_conv_128(pretrained=False, progress=True, **kwargs):
    """LeViT-128 in convolutional form: widths 128, 256, 384, key width 16, heads 4, 8, 12, blocks 4, 4, 4."""
    return _create_levit("levit_conv_128", pretrained, progress, kwargs, "levit_128", use_conv=True)


@register_model
def levit_conv_192(pretrained=False, progress=True, **kwargs):
    """LeViT-192 in convolutional form: widths 192, 288, 384, key width 32, heads 3, 5, 6, blocks 4, 4, 4."""
    return _create_levit("levit_conv_192", pretrained, progress, kwargs, "levit_192", use_conv=True)


@register_model
def levit_conv_256(pretrained=False, progress=True, **kwargs):
    """LeViT-256 in convolutional form: widths 256, 384, 512, key width 32, heads 4, 6, 8, blocks 4, 4, 4."""
    return _create_levit("levit_conv_256", pretrained, progress, kwargs, "levit_256", use_conv=True)


@register_model
def levit_conv_384(pretrained=False, progress=True, **kwargs):
    """LeViT-384 in convolutional form: widths 384, 512, 768, key width 32, heads 6, 9, 12, blocks 4, 4, 4."""
    return _create_levit("levit_conv_384", pretrained, progress, kwargs, "levit_384", use_conv=True)


@register_model
def levit_conv_384_s8(pretrained=False, progress=True, **kwargs):
    """LeViT-384 in convolutional form with a stride-8 stem and SiLU: widths 384, 512, 768, key width 32."""
    return _create_levit("levit_conv_384_s8", pretrained, progress, kwargs, "levit_384_s8", use_conv=True)


@register_model
def levit_conv_512_s8(pretrained=False, progress=True, **kwargs):
    """LeViT-512 in convolutional form with a stride-8 stem and SiLU, one head: widths 512, 640, 896."""
    return _create_levit("levit_conv_512_s8", pretrained, progress, kwargs, "levit_512_s8", use_conv=True,
                         distilled=False)


@register_model
def levit_conv_512(pretrained=False, progress=True, **kwargs):
    """LeViT-512 in convolutional form with SiLU, one head: widths 512, 768, 1024, key width 64, blocks 4, 4, 4."""
    return _create_levit("levit_conv_512", pretrained, progress, kwargs, "levit_512", use_conv=True,
                         distilled=False)


@register_model
def levit_conv_256d(pretrained=False, progress=True, **kwargs):
    """Deeper LeViT-256 in convolutional form with SiLU, one head: widths 256, 384, 512, blocks 4, 8, 6."""
    return _create_levit("levit_conv_256d", pretrained, progress, kwargs, "levit_256d", use_conv=True,
                         distilled=False)


@register_model
def levit_conv_512d(pretrained=False, progress=True, **kwargs):
    """Deeper LeViT-512 in convolutional form with SiLU, one head: widths 512, 640, 768, blocks 4, 8, 6."""
    return _create_levit("levit_conv_512d", pretrained, progress, kwargs, "levit_512d", use_conv=True,
                         distilled=False)
