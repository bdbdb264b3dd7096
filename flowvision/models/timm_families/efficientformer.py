"""EfficientFormer (Li et al. 2022, "EfficientFormer: Vision Transformers at MobileNet Speed"): efficientformer_l1,
efficientformer_l3 and efficientformer_l7.

A hybrid designed for mobile latency. A stem of two stride-2 3x3 convolutions (BatchNorm, ReLU) and four stages at
strides 4, 8, 16 and 32, each after the first opening with a stride-2 3x3 convolution and BatchNorm. The blocks of
the first stages are PoolFormer-like and stay on the (N, C, H, W) map: average pooling minus the input as the token
mixer, an MLP of 1x1 convolutions with BatchNorms, layer scales on both residual branches. The last ``num_vit``
blocks of the last stage are transformer blocks on the flattened (N, H*W, C) tokens: LayerNorm, multi-head
attention with a learnt bias per head for every query-key offset on the 7x7 grid, LayerNorm, a linear MLP. The
tokens are LayerNormed, averaged and classified by two linear heads, one trained on the labels and one by
distillation; their logits are averaged. Model names, module names, ``state_dict`` keys, defaults and
initialisation follow timm's ``efficientformer`` module, so its checkpoints load directly. The attention biases
are laid out on a 7x7 grid: images must give one at stride 32 (193 to 224 pixels a side).
"""
import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._attention import CachedBiasAttention
from ._efficientnet_blocks import LayerScale2d
from ._layers import Mlp, distilled_output, drop_path_module, init_linear_layers, pair
from .metaformer import Pooling
from .vision_transformer import LayerScale

__all__ = []

_GLOBAL_POOLS = ("", "avg")

_WIDTHS = {
    "l1": (48, 96, 224, 448),
    "l3": (64, 128, 320, 512),
    "l7": (96, 192, 384, 768),
}

_DEPTHS = {
    "l1": (3, 2, 6, 4),
    "l3": (4, 4, 12, 6),
    "l7": (6, 6, 18, 8),
}


def _check_global_pool(global_pool):
    """Refuse a pooling other than 'avg' and '' (none), as timm does."""
    if global_pool not in _GLOBAL_POOLS:
        raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")


class Attention(CachedBiasAttention):
    """Multi-head self-attention over the (N, H*W, C) tokens of a ``resolution`` grid: ``qkv`` gives each of
    ``num_heads`` heads a query and a key of ``key_dim`` channels and a value of ``attn_ratio * key_dim``; every
    logit q.k / sqrt(key_dim) gets the head's bias for the query-key offset; ``proj`` maps the heads back to
    ``dim``. The bias indices are part of the ``state_dict``, as in timm."""

    def __init__(self, dim=384, key_dim=32, num_heads=8, attn_ratio=4, resolution=7):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.key_attn_dim = key_dim * num_heads
        self.val_dim = int(attn_ratio * key_dim)
        self.val_attn_dim = self.val_dim * num_heads
        self.attn_ratio = attn_ratio
        self.resolution = pair(resolution)
        self.qkv = nn.Linear(dim, self.key_attn_dim * 2 + self.val_attn_dim)
        self.proj = nn.Linear(self.val_attn_dim, dim)
        self._add_biases(num_heads, self.resolution)

    def forward(self, x):
        batch, tokens, _ = x.shape
        if tokens != self.resolution[0] * self.resolution[1]:
            raise ValueError(f"the attention was built for a {self.resolution[0]}x{self.resolution[1]} grid "
                             f"({self.resolution[0] * self.resolution[1]} tokens), got {tokens} tokens: the image "
                             f"size does not fit the model")
        qkv = self.qkv(x).reshape(batch, tokens, self.num_heads, -1).permute(0, 2, 1, 3)
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.val_dim], dim=3)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn + self.get_attention_biases(x.device)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(batch, tokens, self.val_attn_dim)
        x = self.proj(x)
        return x


class Stem4(nn.Sequential):
    """Two stride-2 3x3 convolutions, to ``out_chs / 2`` then ``out_chs`` channels, each with its norm and
    activation (``conv1``, ``norm1``, ``act1``, ``conv2``...): the image becomes a 4x smaller map."""

    def __init__(self, in_chs, out_chs, act_layer=nn.ReLU, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.stride = 4
        self.add_module("conv1", nn.Conv2d(in_chs, out_chs // 2, kernel_size=3, stride=2, padding=1))
        self.add_module("norm1", norm_layer(out_chs // 2))
        self.add_module("act1", act_layer())
        self.add_module("conv2", nn.Conv2d(out_chs // 2, out_chs, kernel_size=3, stride=2, padding=1))
        self.add_module("norm2", norm_layer(out_chs))
        self.add_module("act2", act_layer())


class Downsample(nn.Module):
    """Between stages: a strided convolution (``conv``, padded by half its kernel unless ``padding`` says) and
    its norm (``norm``)."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=2, padding=None, norm_layer=nn.BatchNorm2d):
        super().__init__()
        if padding is None:
            padding = kernel_size // 2
        self.conv = nn.Conv2d(in_chs, out_chs, kernel_size=kernel_size, stride=stride, padding=padding)
        self.norm = norm_layer(out_chs)

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        return x


class Flat(nn.Module):
    """An (N, C, H, W) map as its (N, H*W, C) token sequence, where the transformer blocks begin."""

    def forward(self, x):
        return x.flatten(2).transpose(1, 2)


class ConvMlpWithNorm(nn.Module):
    """The MLP of the convolutional blocks: a 1x1 convolution to ``hidden_features`` (``fc1``) with its norm
    (``norm1``), the activation, dropout, a 1x1 convolution to ``out_features`` (``fc2``) with its norm (``norm2``),
    dropout (the same ``drop`` module twice). Without ``norm_layer`` the norms are identities."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU,
                 norm_layer=nn.BatchNorm2d, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Conv2d(in_features, hidden_features, 1)
        self.norm1 = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.act = act_layer()
        self.fc2 = nn.Conv2d(hidden_features, out_features, 1)
        self.norm2 = norm_layer(out_features) if norm_layer is not None else nn.Identity()
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.norm1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.norm2(x)
        x = self.drop(x)
        return x


class MetaBlock1d(nn.Module):
    """The transformer block on (N, H*W, C) tokens: x + drop_path(ls1(attention(norm1(x)))), then
    x + drop_path(ls2(mlp(norm2(x)))), the layer scales starting at ``layer_scale_init_value``."""

    def __init__(self, dim, mlp_ratio=4.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm, proj_drop=0.0, drop_path=0.0,
                 layer_scale_init_value=1e-5):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.token_mixer = Attention(dim)
        self.ls1 = LayerScale(dim, layer_scale_init_value)
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        self.ls2 = LayerScale(dim, layer_scale_init_value)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.token_mixer(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class MetaBlock2d(nn.Module):
    """The convolutional block on (N, C, H, W) maps: x + drop_path(ls1(pool(x) - x)), then
    x + drop_path(ls2(mlp(x))) with ``ConvMlpWithNorm``, the layer scales starting at ``layer_scale_init_value``."""

    def __init__(self, dim, pool_size=3, mlp_ratio=4.0, act_layer=nn.GELU, norm_layer=nn.BatchNorm2d, proj_drop=0.0,
                 drop_path=0.0, layer_scale_init_value=1e-5):
        super().__init__()
        self.token_mixer = Pooling(pool_size=pool_size)
        self.ls1 = LayerScale2d(dim, layer_scale_init_value)
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = ConvMlpWithNorm(dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer,
                                   norm_layer=norm_layer, drop=proj_drop)
        self.ls2 = LayerScale2d(dim, layer_scale_init_value)
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.token_mixer(x)))
        x = x + self.drop_path2(self.ls2(self.mlp(x)))
        return x


class EfficientFormerStage(nn.Module):
    """One stage: with ``downsample``, a ``Downsample`` from ``dim`` to ``dim_out`` channels, else an identity
    (the widths must then agree); then ``depth`` blocks, the last ``num_vit`` of them transformer blocks preceded
    by ``Flat`` (which comes first when every block is one), the others convolutional. ``drop_path`` gives each
    block's stochastic-depth rate."""

    def __init__(self, dim, dim_out, depth, downsample=True, num_vit=1, pool_size=3, mlp_ratio=4.0,
                 act_layer=nn.GELU, norm_layer=nn.BatchNorm2d, norm_layer_cl=nn.LayerNorm, proj_drop=0.0,
                 drop_path=0.0, layer_scale_init_value=1e-5):
        super().__init__()
        if downsample:
            self.downsample = Downsample(dim, dim_out, norm_layer=norm_layer)
            dim = dim_out
        else:
            if dim != dim_out:
                raise ValueError(f"a stage without downsampling keeps its width: dim {dim} != dim_out {dim_out}")
            self.downsample = nn.Identity()
        first_vit = depth - num_vit
        blocks = []
        if num_vit and first_vit <= 0:
            blocks.append(Flat())
        for block_idx in range(depth):
            if num_vit and block_idx >= first_vit:
                blocks.append(MetaBlock1d(dim, mlp_ratio=mlp_ratio, act_layer=act_layer, norm_layer=norm_layer_cl,
                                          proj_drop=proj_drop, drop_path=drop_path[block_idx],
                                          layer_scale_init_value=layer_scale_init_value))
            else:
                blocks.append(MetaBlock2d(dim, pool_size=pool_size, mlp_ratio=mlp_ratio, act_layer=act_layer,
                                          norm_layer=norm_layer, proj_drop=proj_drop, drop_path=drop_path[block_idx],
                                          layer_scale_init_value=layer_scale_init_value))
                if num_vit and block_idx == first_vit - 1:
                    blocks.append(Flat())
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class EfficientFormer(nn.Module):
    """The stem, one ``EfficientFormerStage`` per entry of ``depths`` (widths ``embed_dims``; each but the first
    downsampling unless ``downsamples`` says otherwise; transformer blocks only at the end of the last, ``num_vit``
    of them), a final norm on the tokens (``norm``), average pooling over them and two linear heads (``head`` and
    the distillation head ``head_dist``), timm's ``EfficientFormer`` with its arguments and defaults.

    In eval mode, and in train mode by default, the output is the average of the two heads' logits; after
    ``set_distilled_training()`` train mode returns both. ``global_pool``: 'avg' or '' (the unpooled tokens);
    ``drop_rate`` is the dropout before the heads, ``proj_drop_rate`` the MLPs', ``drop_path_rate`` the stochastic
    depth of the last block, rising linearly from 0 at the first. ``img_size`` is accepted and ignored (as in
    timm): the attention's grid is 7x7.
    """

    default_cfg = {"first_conv": "stem.conv1", "classifier": ("head", "head_dist")}
    feature_wrapper = FeatureGetterNet

    def __init__(self, depths=(3, 2, 6, 4), embed_dims=(48, 96, 224, 448), in_chans=3, num_classes=1000,
                 global_pool="avg", downsamples=None, num_vit=0, mlp_ratios=4, pool_size=3,
                 layer_scale_init_value=1e-5, act_layer=nn.GELU, norm_layer=nn.BatchNorm2d,
                 norm_layer_cl=nn.LayerNorm, drop_rate=0.0, proj_drop_rate=0.0, drop_path_rate=0.0, img_size=None):
        super().__init__()
        _check_global_pool(global_pool)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.stem = Stem4(in_chans, embed_dims[0], norm_layer=norm_layer)
        self.num_stages = len(depths)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).split(list(depths))
        downsamples = downsamples or (False,) + (True,) * (self.num_stages - 1)
        stages = []
        self.feature_info = []
        prev_dim = embed_dims[0]
        for i in range(self.num_stages):
            stages.append(EfficientFormerStage(
                prev_dim, embed_dims[i], depths[i], downsample=downsamples[i],
                num_vit=num_vit if i == self.num_stages - 1 else 0, pool_size=pool_size, mlp_ratio=mlp_ratios,
                act_layer=act_layer, norm_layer=norm_layer, norm_layer_cl=norm_layer_cl, proj_drop=proj_drop_rate,
                drop_path=rates[i].tolist(), layer_scale_init_value=layer_scale_init_value))
            prev_dim = embed_dims[i]
            self.feature_info.append(dict(num_chs=embed_dims[i], reduction=2 ** (i + 2), module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = self.head_hidden_size = embed_dims[-1]
        self.norm = norm_layer_cl(self.num_features)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.head_dist = self._new_head(num_classes)
        self.distilled_training = False
        init_linear_layers(self)

    def _new_head(self, num_classes):
        """A linear classifier for ``num_classes`` (0: an identity)."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The two heads: (head, distillation head)."""
        return self.head, self.head_dist

    def reset_classifier(self, num_classes, global_pool=None):
        """New heads for ``num_classes`` (0: identities); ``global_pool`` ('avg' or '') changes the pooling too.
        Once ``prune_intermediate_layers`` has dropped the last stage, only ``reset_classifier(0, '')`` is
        allowed."""
        if global_pool is not None:
            _check_global_pool(global_pool)
        global_pool = self.global_pool if global_pool is None else global_pool
        if len(self.stages) != self.num_stages and (num_classes or global_pool):
            raise ValueError("pooling and classifiers need the final stage, which prune_intermediate_layers dropped")
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.head = self._new_head(num_classes)
        self.head.train(self.training)
        self.head_dist = self._new_head(num_classes)
        self.head_dist.train(self.training)

    def set_distilled_training(self, enable=True):
        """Whether train mode returns both heads' logits (for a distillation loss) instead of their average."""
        self.distilled_training = enable

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's normed tokens (N, H/32 * W/32, C)."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Average pooling over the tokens (unless ``global_pool`` is ''), dropout, then both heads: their average,
        or both in distilled training (with ``pre_logits``, the pooled features)."""
        if self.global_pool == "avg":
            x = x.mean(dim=1)
        x = self.head_drop(x)
        if pre_logits:
            return x
        x, x_dist = self.head(x), self.head_dist(x)
        return distilled_output(self, x, x_dist)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps (the last stage's tokens laid back on their grid, after the final norm with ``norm``) and, unless
        ``intermediates_only``, the final tokens (normed if the last stage ran); ``stop_early`` skips the stages
        after the last one picked."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt)
        last_idx = len(self.stages) - 1
        x = self.stem(x)
        height, width = x.shape[-2:]
        intermediates = []
        for i, stage in enumerate(stages):
            x = stage(x)
            if x.ndim == 4:
                height, width = x.shape[-2:]
            elif not isinstance(stage.downsample, nn.Identity):
                height = (height - 1) // 2 + 1
                width = (width - 1) // 2 + 1
            if i in take:
                inter = self.norm(x) if norm and i == last_idx else x
                if inter.ndim == 3:
                    inter = inter.reshape(inter.shape[0], height, width, -1).permute(0, 3, 1, 2)
                intermediates.append(inter)
        if intermediates_only:
            return intermediates
        if len(stages) == len(self.stages):
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, the final norm with ``prune_norm`` or when stages
        go, and the heads with ``prune_head`` or when stages go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_efficientformer(variant, pretrained, progress, size, num_vit, kwargs):
    """An entrypoint's body: timm's widths and depths for ``size`` and its ``num_vit`` transformer blocks
    (overridable by the caller's ``kwargs``); with ``features_only``, every stage unless ``out_indices`` says
    otherwise (timm's default, 4: the last four)."""
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", 4)
    model_args = dict(depths=_DEPTHS[size], embed_dims=_WIDTHS[size], num_vit=num_vit)
    return build_model(EfficientFormer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def efficientformer_l1(pretrained=False, progress=True, **kwargs):
    """EfficientFormer-L1: widths 48, 96, 224, 448, blocks 3, 2, 6, 4, one transformer block."""
    return _create_efficientformer("efficientformer_l1", pretrained, progress, "l1", 1, kwargs)


@register_model
def efficientformer_l3(pretrained=False, progress=True, **kwargs):
    """EfficientFormer-L3: widths 64, 128, 320, 512, blocks 4, 4, 12, 6, four transformer blocks."""
    return _create_efficientformer("efficientformer_l3", pretrained, progress, "l3", 4, kwargs)


@register_model
def efficientformer_l7(pretrained=False, progress=True, **kwargs):
    """EfficientFormer-L7: widths 96, 192, 384, 768, blocks 6, 6, 18, 8, all of the last stage's transformers."""
    return _create_efficientformer("efficientformer_l7", pretrained, progress, "l7", 8, kwargs)
