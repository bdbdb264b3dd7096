"""EfficientFormerV2 (Li et al. 2022, "Rethinking Vision Transformers for MobileNet Size and Speed"):
efficientformerv2_s0, efficientformerv2_s1, efficientformerv2_s2 and efficientformerv2_l.

A hybrid that stays on (N, C, H, W) maps throughout. A stem of two stride-2 3x3 convolutions (BatchNorm, GELU) and
four stages at strides 4, 8, 16 and 32, each after the first opening with a stride-2 3x3 convolution and BatchNorm
(plus, in the last stage, attention whose queries are a strided depthwise convolution plus subsampling of the
input). Every block has a residual MLP of 1x1 convolutions around a 3x3 depthwise one, all with BatchNorm; the last
``num_vit`` blocks of the third and fourth stages add residual multi-head attention before it: queries, keys and
values from 1x1 convolutions, a depthwise convolution of the values added to the output, a learnt bias per head for
every query-key offset, and "talking heads" (1x1 convolutions mixing the heads before and after the softmax). In
the third stage the attention runs on a map subsampled by a strided depthwise convolution and is upsampled
bilinearly after. Layer scales weight the residual branches. The map is BatchNormed, averaged and classified by
two linear heads, one trained on the labels and one by distillation; their logits are averaged. Model names, module
names, ``state_dict`` keys, defaults and initialisation follow timm's ``efficientformer_v2`` module, so its
checkpoints load directly. The attention biases are laid out for ``img_size``: images must have that size (up to
the convolutions' rounding).
"""
import math
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, normed_stage_intermediates, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._attention import CachedBiasAttention
from ._conv import get_padding
from ._efficientnet_blocks import LayerScale2d
from ._layers import BatchNormAct2d, distilled_output, drop_path_module, get_act_layer, init_linear_layers, pair

__all__ = []

_GLOBAL_POOLS = ("", "avg")
_NORM_LAYERS = ("batchnorm2d", "batchnorm")

_WIDTHS = {
    "L": (40, 80, 192, 384),
    "S2": (32, 64, 144, 288),
    "S1": (32, 48, 120, 224),
    "S0": (32, 48, 96, 176),
}

_DEPTHS = {
    "L": (5, 5, 15, 10),
    "S2": (4, 4, 12, 8),
    "S1": (3, 3, 9, 6),
    "S0": (2, 2, 6, 4),
}

_EXPANSION_RATIOS = {
    "L": (4, 4, (4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4), (4, 4, 4, 3, 3, 3, 3, 4, 4, 4)),
    "S2": (4, 4, (4, 4, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4), (4, 4, 3, 3, 3, 3, 4, 4)),
    "S1": (4, 4, (4, 4, 3, 3, 3, 3, 4, 4, 4), (4, 4, 3, 3, 4, 4)),
    "S0": (4, 4, (4, 3, 3, 3, 4, 4), (4, 3, 3, 4)),
}


def _repeat(value, count):
    """``value`` for each of ``count`` places: a sequence as it is, a single value repeated (timm's
    ``to_ntuple``)."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * count


def _check_global_pool(global_pool):
    """Refuse a pooling other than 'avg' and '' (none), as timm does."""
    if global_pool not in _GLOBAL_POOLS:
        raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")


def _halved(resolution):
    """A grid after a stride-2 layer: each side halved, rounded up."""
    return tuple(math.ceil(r / 2) for r in resolution)


class ConvNorm(nn.Module):
    """A convolution with bias (``conv``; padded by half its receptive field unless ``padding`` says) followed by
    its norm (``bn``)."""

    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=None, dilation=1, groups=1,
                 bias=True, norm_layer=nn.BatchNorm2d):
        super().__init__()
        if padding is None:
            padding = get_padding(kernel_size, stride, dilation)
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                              dilation=dilation, groups=groups, bias=bias)
        self.bn = norm_layer(out_channels)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x


class ConvNormAct(nn.Module):
    """A convolution with bias (``conv``; padded by half its receptive field unless ``padding`` says) followed by
    BatchNorm with its activation (``bn``, a ``BatchNormAct2d`` of epsilon ``eps``): timm's ``ConvNormAct`` as this
    family builds it (the shared ``ConvNormAct`` has no convolution bias)."""

    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=None, groups=1, eps=1e-5,
                 act_layer=nn.GELU):
        super().__init__()
        if padding is None:
            padding = get_padding(kernel_size, stride)
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, groups=groups)
        self.bn = BatchNormAct2d(out_channels, eps=eps, act_layer=act_layer)

    @property
    def out_channels(self):
        """The convolution's output channels."""
        return self.conv.out_channels

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x


def _split_heads(x, num_heads, tokens):
    """An (N, heads * d, H, W) map as (N, heads, d, tokens)."""
    return x.reshape(x.shape[0], num_heads, -1, tokens)


class Attention2d(CachedBiasAttention):
    """Multi-head self-attention on the (N, C, H, W) map of a ``resolution`` grid, with talking heads.

    1x1 ``ConvNorm`` layers give each of ``num_heads`` heads a query and key of ``key_dim`` channels (``q``, ``k``)
    and a value of ``attn_ratio * key_dim`` (``v``); every logit q.k / sqrt(key_dim) gets the head's bias for the
    query-key offset; ``talking_head1`` and ``talking_head2`` (1x1 convolutions over the heads) mix the logits
    before and the weights after the softmax; a 3x3 depthwise ``ConvNorm`` of the values (``v_local``) is added to
    the heads' output, which goes through the activation and ``proj`` back to ``dim``. With ``stride``, a strided
    depthwise ``ConvNorm`` (``stride_conv``) first shrinks the map (and the grid) and bilinear upsampling
    (``upsample``) restores it before the activation. The gathered biases are cached in eval mode (see
    ``CachedBiasAttention``); the indices are not part of the ``state_dict``.
    """

    def __init__(self, dim=384, key_dim=32, num_heads=8, attn_ratio=4, resolution=7, act_layer=nn.GELU,
                 stride=None):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        resolution = pair(resolution)
        if stride is not None:
            resolution = tuple(math.ceil(r / stride) for r in resolution)
            self.stride_conv = ConvNorm(dim, dim, kernel_size=3, stride=stride, groups=dim)
            self.upsample = nn.Upsample(scale_factor=stride, mode="bilinear")
        else:
            self.stride_conv = None
            self.upsample = None
        self.resolution = resolution
        self.N = resolution[0] * resolution[1]
        self.d = int(attn_ratio * key_dim)
        self.dh = self.d * num_heads
        self.attn_ratio = attn_ratio
        key_channels = key_dim * num_heads
        self.q = ConvNorm(dim, key_channels)
        self.k = ConvNorm(dim, key_channels)
        self.v = ConvNorm(dim, self.dh)
        self.v_local = ConvNorm(self.dh, self.dh, kernel_size=3, groups=self.dh)
        self.talking_head1 = nn.Conv2d(num_heads, num_heads, kernel_size=1)
        self.talking_head2 = nn.Conv2d(num_heads, num_heads, kernel_size=1)
        self.act = act_layer()
        self.proj = ConvNorm(self.dh, dim, 1)
        self._add_biases(num_heads, resolution, persistent=False)

    def forward(self, x):
        if self.stride_conv is not None:
            x = self.stride_conv(x)
        batch, _, height, width = x.shape
        if (height, width) != self.resolution:
            raise ValueError(f"the attention was built for a {self.resolution[0]}x{self.resolution[1]} grid, got "
                             f"{height}x{width}: build the model with this image size (img_size)")
        q = _split_heads(self.q(x), self.num_heads, self.N).permute(0, 1, 3, 2)
        k = _split_heads(self.k(x), self.num_heads, self.N)
        v = self.v(x)
        v_local = self.v_local(v)
        v = _split_heads(v, self.num_heads, self.N).permute(0, 1, 3, 2)
        attn = (q @ k) * self.scale
        attn = attn + self.get_attention_biases(x.device)
        attn = self.talking_head1(attn)
        attn = attn.softmax(dim=-1)
        attn = self.talking_head2(attn)
        x = (attn @ v).transpose(2, 3)
        x = x.reshape(batch, self.dh, height, width) + v_local
        if self.upsample is not None:
            x = self.upsample(x)
        x = self.act(x)
        x = self.proj(x)
        return x


class LocalGlobalQuery(nn.Module):
    """The queries of the downsampling attention: a stride-2 3x3 depthwise convolution (``local``) plus the input
    subsampled by two (``pool``, a 1x1 average pool), projected to ``out_dim`` channels (``proj``)."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.pool = nn.AvgPool2d(1, 2, 0)
        self.local = nn.Conv2d(in_dim, in_dim, kernel_size=3, stride=2, padding=1, groups=in_dim)
        self.proj = ConvNorm(in_dim, out_dim, 1)

    def forward(self, x):
        local_q = self.local(x)
        pool_q = self.pool(x)
        q = local_q + pool_q
        q = self.proj(q)
        return q


class Attention2dDownsample(CachedBiasAttention):
    """Attention that halves a ``resolution`` grid: queries from every other position (``LocalGlobalQuery``,
    ``key_dim`` channels per head) attend to keys and values of every position (1x1 ``ConvNorm`` layers ``k``,
    ``v``), with the heads' learnt biases per query-key offset; a stride-2 depthwise ``ConvNorm`` of the values
    (``v_local``) is added to the output, which goes through the activation and ``proj`` to ``out_dim``
    (default ``dim``) channels. No talking heads."""

    def __init__(self, dim=384, key_dim=16, num_heads=8, attn_ratio=4, resolution=7, out_dim=None,
                 act_layer=nn.GELU):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.resolution = pair(resolution)
        self.resolution2 = _halved(self.resolution)
        self.N = self.resolution[0] * self.resolution[1]
        self.N2 = self.resolution2[0] * self.resolution2[1]
        self.d = int(attn_ratio * key_dim)
        self.dh = self.d * num_heads
        self.attn_ratio = attn_ratio
        self.out_dim = out_dim or dim
        key_channels = key_dim * num_heads
        self.q = LocalGlobalQuery(dim, key_channels)
        self.k = ConvNorm(dim, key_channels, 1)
        self.v = ConvNorm(dim, self.dh, 1)
        self.v_local = ConvNorm(self.dh, self.dh, kernel_size=3, stride=2, groups=self.dh)
        self.act = act_layer()
        self.proj = ConvNorm(self.dh, self.out_dim, 1)
        self._add_biases(num_heads, self.resolution, query_stride=2, persistent=False)

    def forward(self, x):
        batch, _, height, width = x.shape
        if (height, width) != self.resolution:
            raise ValueError(f"the attention was built for a {self.resolution[0]}x{self.resolution[1]} grid, got "
                             f"{height}x{width}: build the model with this image size (img_size)")
        q = _split_heads(self.q(x), self.num_heads, self.N2).permute(0, 1, 3, 2)
        k = _split_heads(self.k(x), self.num_heads, self.N)
        v = self.v(x)
        v_local = self.v_local(v)
        v = _split_heads(v, self.num_heads, self.N).permute(0, 1, 3, 2)
        attn = (q @ k) * self.scale
        attn = attn + self.get_attention_biases(x.device)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(2, 3)
        x = x.reshape(batch, self.dh, self.resolution2[0], self.resolution2[1]) + v_local
        x = self.act(x)
        x = self.proj(x)
        return x


class Downsample(nn.Module):
    """Between stages: a stride-2 3x3 ``ConvNorm`` from ``in_chs`` to ``out_chs`` channels (``conv``), plus, with
    ``use_attn``, an ``Attention2dDownsample`` on the input's ``resolution`` grid (``attn``)."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=2, padding=1, resolution=7, use_attn=False,
                 act_layer=nn.GELU, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.conv = ConvNorm(in_chs, out_chs, kernel_size=kernel_size, stride=stride, padding=padding,
                             norm_layer=norm_layer)
        if use_attn:
            self.attn = Attention2dDownsample(dim=in_chs, out_dim=out_chs, resolution=resolution, act_layer=act_layer)
        else:
            self.attn = None

    def forward(self, x):
        out = self.conv(x)
        if self.attn is not None:
            return self.attn(x) + out
        return out


class ConvMlpWithNorm(nn.Module):
    """The blocks' MLP: a 1x1 ``ConvNormAct`` to ``hidden_features`` (``fc1``), with ``mid_conv`` a 3x3 depthwise
    ``ConvNormAct`` (``mid``, else an identity), dropout, a 1x1 ``ConvNorm`` to ``out_features`` (``fc2``), dropout.
    ``eps`` is the norms' epsilon."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, eps=1e-5, drop=0.0,
                 mid_conv=False):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = ConvNormAct(in_features, hidden_features, 1, eps=eps, act_layer=act_layer)
        if mid_conv:
            self.mid = ConvNormAct(hidden_features, hidden_features, 3, groups=hidden_features, eps=eps,
                                   act_layer=act_layer)
        else:
            self.mid = nn.Identity()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = ConvNorm(hidden_features, out_features, 1, norm_layer=partial(nn.BatchNorm2d, eps=eps))
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.mid(x)
        x = self.drop1(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class EfficientFormerV2Block(nn.Module):
    """A block on (N, C, H, W) maps: with ``use_attn``, x + drop_path(ls1(Attention2d(x))) (on the ``resolution``
    grid, subsampled by ``stride``); then x + drop_path(ls2(mlp(x))) with a ``ConvMlpWithNorm`` of ``mlp_ratio``
    and a depthwise middle convolution. The layer scales start at ``layer_scale_init_value`` (None: identities);
    without attention, ``token_mixer``, ``ls1`` and ``drop_path1`` are None."""

    def __init__(self, dim, mlp_ratio=4.0, act_layer=nn.GELU, eps=1e-5, proj_drop=0.0, drop_path=0.0,
                 layer_scale_init_value=1e-5, resolution=7, stride=None, use_attn=True):
        super().__init__()
        if use_attn:
            self.token_mixer = Attention2d(dim, resolution=resolution, act_layer=act_layer, stride=stride)
            self.ls1 = self._layer_scale(dim, layer_scale_init_value)
            self.drop_path1 = drop_path_module(drop_path)
        else:
            self.token_mixer = None
            self.ls1 = None
            self.drop_path1 = None
        self.mlp = ConvMlpWithNorm(dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer, eps=eps,
                                   drop=proj_drop, mid_conv=True)
        self.ls2 = self._layer_scale(dim, layer_scale_init_value)
        self.drop_path2 = drop_path_module(drop_path)

    @staticmethod
    def _layer_scale(dim, init_value):
        """A layer scale starting at ``init_value``, or an identity when that is None."""
        return LayerScale2d(dim, init_value) if init_value is not None else nn.Identity()

    def forward(self, x):
        if self.token_mixer is not None:
            x = x + self.drop_path1(self.ls1(self.token_mixer(x)))
        x = x + self.drop_path2(self.ls2(self.mlp(x)))
        return x


class Stem4(nn.Sequential):
    """Two stride-2 3x3 ``ConvNormAct`` layers, to ``out_chs / 2`` then ``out_chs`` channels (``conv1``,
    ``conv2``): the image becomes a 4x smaller map."""

    def __init__(self, in_chs, out_chs, act_layer=nn.GELU, eps=1e-5):
        super().__init__()
        self.stride = 4
        self.conv1 = ConvNormAct(in_chs, out_chs // 2, kernel_size=3, stride=2, padding=1, eps=eps,
                                 act_layer=act_layer)
        self.conv2 = ConvNormAct(out_chs // 2, out_chs, kernel_size=3, stride=2, padding=1, eps=eps,
                                 act_layer=act_layer)


class EfficientFormerV2Stage(nn.Module):
    """One stage on a ``resolution`` grid: with ``downsample``, a ``Downsample`` from ``dim`` to ``dim_out``
    channels (with attention if ``downsample_use_attn``) that halves the grid, else an identity (the widths must
    then agree); then ``depth`` blocks, the last ``num_vit`` with attention if ``block_use_attn`` (subsampled by
    ``block_stride``). ``mlp_ratio`` and ``drop_path`` are per block (or one for all)."""

    def __init__(self, dim, dim_out, depth, resolution=7, downsample=True, block_stride=None,
                 downsample_use_attn=False, block_use_attn=False, num_vit=1, mlp_ratio=4.0, proj_drop=0.0,
                 drop_path=0.0, layer_scale_init_value=1e-5, act_layer=nn.GELU, eps=1e-5):
        super().__init__()
        mlp_ratio = _repeat(mlp_ratio, depth)
        drop_path = _repeat(drop_path, depth)
        resolution = pair(resolution)
        if downsample:
            self.downsample = Downsample(dim, dim_out, use_attn=downsample_use_attn, resolution=resolution,
                                         norm_layer=partial(nn.BatchNorm2d, eps=eps), act_layer=act_layer)
            dim = dim_out
            resolution = _halved(resolution)
        else:
            if dim != dim_out:
                raise ValueError(f"a stage without downsampling keeps its width: dim {dim} != dim_out {dim_out}")
            self.downsample = nn.Identity()
        first_attn = depth - num_vit
        self.blocks = nn.Sequential(*[
            EfficientFormerV2Block(dim, resolution=resolution, stride=block_stride, mlp_ratio=mlp_ratio[i],
                                   use_attn=block_use_attn and i >= first_attn, proj_drop=proj_drop,
                                   drop_path=drop_path[i], layer_scale_init_value=layer_scale_init_value,
                                   act_layer=act_layer, eps=eps)
            for i in range(depth)])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class EfficientFormerV2(nn.Module):
    """The stem, one ``EfficientFormerV2Stage`` per entry of ``depths`` (widths ``embed_dims``; each but the first
    downsampling unless ``downsamples`` says otherwise; the last ``num_vit`` blocks of the third stage and beyond
    with attention, subsampled by two in the third; the fourth stage's downsampling with attention), a final
    BatchNorm (``norm``), average pooling and a linear head (``head``) plus, with ``distillation``, the
    distillation head (``head_dist``): timm's ``EfficientFormerV2``, its arguments and defaults.

    With both heads the output is their average in eval mode (and in train mode by default), both logits in train
    mode after ``set_distilled_training()``. ``img_size`` fixes the grids the attention biases are laid out on.
    ``mlp_ratios`` are per stage (or one for all), each per block (or one for the stage). ``norm_layer``:
    'batchnorm2d' (timm's other norms are not supported), of epsilon ``norm_eps`` except inside the attention
    layers (1e-5, as in timm); ``act_layer`` a class or timm's name. ``global_pool``: 'avg' or '' (the unpooled
    map); ``drop_rate`` is the dropout before the heads, ``proj_drop_rate`` the MLPs', ``drop_path_rate`` the
    stochastic depth of the last block, rising linearly from 0 at the first; ``layer_scale_init_value`` None
    drops the layer scales.
    """

    default_cfg = {"first_conv": "stem.conv1.conv", "classifier": ("head", "head_dist")}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, depths, in_chans=3, img_size=224, global_pool="avg", embed_dims=None, downsamples=None,
                 mlp_ratios=4, norm_layer="batchnorm2d", norm_eps=1e-5, act_layer="gelu", num_classes=1000,
                 drop_rate=0.0, proj_drop_rate=0.0, drop_path_rate=0.0, layer_scale_init_value=1e-5, num_vit=0,
                 distillation=True):
        super().__init__()
        _check_global_pool(global_pool)
        if norm_layer not in _NORM_LAYERS and norm_layer is not nn.BatchNorm2d:
            raise ValueError(f"norm_layer must be one of {_NORM_LAYERS} (BatchNorm), got {norm_layer!r}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.feature_info = []
        img_size = pair(img_size)
        act_layer = get_act_layer(act_layer)
        self.stem = Stem4(in_chans, embed_dims[0], act_layer=act_layer, eps=norm_eps)
        prev_dim = embed_dims[0]
        stride = 4
        num_stages = len(depths)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))
        downsamples = downsamples or (False,) + (True,) * (num_stages - 1)
        mlp_ratios = _repeat(mlp_ratios, num_stages)
        stages = []
        for i in range(num_stages):
            resolution = tuple(math.ceil(size / stride) for size in img_size)
            stages.append(EfficientFormerV2Stage(
                prev_dim, embed_dims[i], depth=depths[i], resolution=resolution, downsample=downsamples[i],
                block_stride=2 if i == 2 else None, downsample_use_attn=i >= 3, block_use_attn=i >= 2,
                num_vit=num_vit, mlp_ratio=mlp_ratios[i], proj_drop=proj_drop_rate, drop_path=rates[i].tolist(),
                layer_scale_init_value=layer_scale_init_value, act_layer=act_layer, eps=norm_eps))
            if downsamples[i]:
                stride *= 2
            prev_dim = embed_dims[i]
            self.feature_info.append(dict(num_chs=prev_dim, reduction=stride, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = self.head_hidden_size = embed_dims[-1]
        self.norm = nn.BatchNorm2d(embed_dims[-1], eps=norm_eps)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.dist = distillation
        self.head_dist = self._new_head(num_classes) if distillation else None
        init_linear_layers(self)
        self.distilled_training = False

    def _new_head(self, num_classes):
        """A linear classifier for ``num_classes`` (0: an identity)."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The two heads: (head, distillation head or None)."""
        return self.head, self.head_dist

    def reset_classifier(self, num_classes, global_pool=None):
        """New heads for ``num_classes`` (0: identities; the distillation head only where there is one);
        ``global_pool`` ('avg' or '') changes the pooling too."""
        self.num_classes = num_classes
        if global_pool is not None:
            _check_global_pool(global_pool)
            self.global_pool = global_pool
        self.head = self._new_head(num_classes)
        self.head.train(self.training)
        if self.head_dist is not None:
            self.head_dist = self._new_head(num_classes)
            self.head_dist.train(self.training)

    def set_distilled_training(self, enable=True):
        """Whether train mode returns both heads' logits (for a distillation loss) instead of their average."""
        self.distilled_training = enable

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's normed map (N, C, H/32, W/32)."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Average pooling (unless ``global_pool`` is ''), dropout, then the head, or with two heads their average
        (both in distilled training); with ``pre_logits``, the pooled features."""
        if self.global_pool == "avg":
            x = x.mean(dim=(2, 3))
        x = self.head_drop(x)
        if pre_logits:
            return x
        if self.head_dist is None:
            return self.head(x)
        x, x_dist = self.head(x), self.head_dist(x)
        return distilled_output(self, x, x_dist)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), the last after
        the final norm with ``norm``, and (unless ``intermediates_only``) the final map (normed if the last stage
        ran); ``stop_early`` skips the stages after the last one picked."""
        return normed_stage_intermediates(x, self.stem, self.stages, self.norm, indices, norm,
                                          stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, the final norm with ``prune_norm`` or when stages
        go, and the heads with ``prune_head`` or when stages go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_efficientformerv2(variant, pretrained, progress, size, num_vit, drop_path_rate, kwargs):
    """An entrypoint's body: timm's depths, widths and expansion ratios for ``size``, its ``num_vit`` attention
    blocks and ``drop_path_rate`` (overridable by the caller's ``kwargs``); ``features_only`` gives the stem's
    convolutions and the stages flattened (timm's names: ``stem_conv1``, ``stages_0``...) and returns the four
    stages' maps unless ``out_indices`` says otherwise."""
    model_args = dict(depths=_DEPTHS[size], embed_dims=_WIDTHS[size], num_vit=num_vit, drop_path_rate=drop_path_rate,
                      mlp_ratios=_EXPANSION_RATIOS[size])
    return build_model(EfficientFormerV2, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def efficientformerv2_s0(pretrained=False, progress=True, **kwargs):
    """EfficientFormerV2-S0: widths 32, 48, 96, 176, blocks 2, 2, 6, 4, two attention blocks a stage."""
    return _create_efficientformerv2("efficientformerv2_s0", pretrained, progress, "S0", 2, 0.0, kwargs)


@register_model
def efficientformerv2_s1(pretrained=False, progress=True, **kwargs):
    """EfficientFormerV2-S1: widths 32, 48, 120, 224, blocks 3, 3, 9, 6, two attention blocks a stage."""
    return _create_efficientformerv2("efficientformerv2_s1", pretrained, progress, "S1", 2, 0.0, kwargs)


@register_model
def efficientformerv2_s2(pretrained=False, progress=True, **kwargs):
    """EfficientFormerV2-S2: widths 32, 64, 144, 288, blocks 4, 4, 12, 8, four attention blocks a stage."""
    return _create_efficientformerv2("efficientformerv2_s2", pretrained, progress, "S2", 4, 0.02, kwargs)


@register_model
def efficientformerv2_l(pretrained=False, progress=True, **kwargs):
    """EfficientFormerV2-L: widths 40, 80, 192, 384, blocks 5, 5, 15, 10, six attention blocks a stage."""
    return _create_efficientformerv2("efficientformerv2_l", pretrained, progress, "L", 6, 0.1, kwargs)
