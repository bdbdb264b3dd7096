"""SwiftFormer (Shaker, Maaz, Rasheed, Khan, Yang and Khan 2023, "SwiftFormer: Efficient Additive Attention for
Transformer-based Real-time Mobile Vision Applications"): swiftformer_xs, swiftformer_s, swiftformer_l1 and
swiftformer_l3.

A hybrid for phones that stays on (N, C, H, W) maps. A stem of two stride-2 3x3 convolutions (BatchNorm, ReLU) and
four stages at strides 4, 8, 16 and 32, each after the first opening with a stride-2 3x3 convolution and BatchNorm.
Every block of a stage but the last is a convolutional encoder (a 3x3 depthwise convolution, BatchNorm, a 1x1
expansion with GELU and a 1x1 projection, layer-scaled and added to its input); the last is the SwiftFormer encoder:
the same local mixing, then "efficient additive attention" (queries and keys normalised per token, one learnt
vector scoring the queries, the scores normalised over the tokens pooling the queries into one global query, which
multiplies every key; a linear layer of that plus the queries) and a BatchNormed 1x1-convolution MLP, both as
layer-scaled residuals. The attention costs linear time in the number of tokens: no token-token matrix. The map is
BatchNormed, averaged and classified by two linear heads, one trained on the labels and one by distillation, whose
logits are averaged. Model names, module names, ``state_dict`` keys, defaults and (seeded) initialisation follow
timm's ``swiftformer`` module, so its checkpoints load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, normed_stage_intermediates, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._layers import distilled_output, drop_path_module, init_linear_layers
from .fastvit import LayerScale2d

__all__ = []

_GLOBAL_POOLS = ("", "avg")


def _check_global_pool(global_pool):
    """Refuse a pooling other than 'avg' and '' (none), as timm does."""
    if global_pool not in _GLOBAL_POOLS:
        raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")


class Embedding(nn.Module):
    """A stage's downsampling: a ``patch_size`` convolution of ``stride`` and ``padding`` (``proj``) from
    ``in_chans`` to ``embed_dim`` channels, then BatchNorm (``norm``)."""

    def __init__(self, in_chans=3, embed_dim=768, patch_size=16, stride=16, padding=0):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, stride, padding)
        self.norm = nn.BatchNorm2d(embed_dim)

    def forward(self, x):
        x = self.proj(x)
        x = self.norm(x)
        return x


class ConvEncoder(nn.Module):
    """The convolutional encoder: a ``kernel_size`` depthwise convolution (``dwconv``), BatchNorm (``norm``), a 1x1
    convolution to ``hidden_dim`` channels (``pwconv1``), the activation, a 1x1 convolution back (``pwconv2``) and a
    layer scale starting at 1 (``layer_scale``, an identity without ``use_layer_scale``), added to the input after
    stochastic depth (``drop_path``)."""

    def __init__(self, dim, hidden_dim=64, kernel_size=3, drop_path=0.0, act_layer=nn.GELU, use_layer_scale=True):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size, padding=kernel_size // 2, groups=dim)
        self.norm = nn.BatchNorm2d(dim)
        self.pwconv1 = nn.Conv2d(dim, hidden_dim, 1)
        self.act = act_layer()
        self.pwconv2 = nn.Conv2d(hidden_dim, dim, 1)
        self.drop_path = drop_path_module(drop_path)
        self.layer_scale = LayerScale2d(dim, 1) if use_layer_scale else nn.Identity()

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.pwconv2(x)
        x = self.layer_scale(x)
        return shortcut + self.drop_path(x)


class LocalRepresentation(ConvEncoder):
    """The SwiftFormer encoder's local mixing: a ``ConvEncoder`` whose 1x1 convolutions keep the width."""

    def __init__(self, dim, kernel_size=3, drop_path=0.0, use_layer_scale=True, act_layer=nn.GELU):
        super().__init__(dim, dim, kernel_size, drop_path, act_layer, use_layer_scale)


class Mlp(nn.Module):
    """The SwiftFormer encoder's MLP on maps: BatchNorm (``norm1``), a 1x1 convolution to ``hidden_features``
    (``fc1``), the activation, dropout, a 1x1 convolution to ``out_features`` (``fc2``) and dropout again (one
    ``drop`` module, drawing twice in training)."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.norm1 = nn.BatchNorm2d(in_features)
        self.fc1 = nn.Conv2d(in_features, hidden_features, 1)
        self.act = act_layer()
        self.fc2 = nn.Conv2d(hidden_features, out_features, 1)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.norm1(x)
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


class EfficientAdditiveAttention(nn.Module):
    """Additive attention in linear time over the tokens of an (N, C, H, W) map.

    Each token gives a query and a key (``to_query``, ``to_key``, ``token_dim * num_heads`` wide), each scaled to
    unit length. The learnt vector ``w_g`` scores every query (scaled by 1 / sqrt(token_dim)); the scores, scaled to
    unit length over the tokens, weight the sum of the queries into one global query. Its product with each key goes
    through ``proj`` and is added to the query; ``final`` maps the result to ``token_dim`` channels, back on the map.
    """

    def __init__(self, in_dims=512, token_dim=256, num_heads=1):
        super().__init__()
        self.scale_factor = token_dim ** -0.5
        self.to_query = nn.Linear(in_dims, token_dim * num_heads)
        self.to_key = nn.Linear(in_dims, token_dim * num_heads)
        self.w_g = nn.Parameter(torch.randn(token_dim * num_heads, 1))
        self.proj = nn.Linear(token_dim * num_heads, token_dim * num_heads)
        self.final = nn.Linear(token_dim * num_heads, token_dim)

    def forward(self, x):
        batch, _, height, width = x.shape
        tokens = x.flatten(2).permute(0, 2, 1)
        query = F.normalize(self.to_query(tokens), dim=-1)
        key = F.normalize(self.to_key(tokens), dim=-1)
        scores = F.normalize(query @ self.w_g * self.scale_factor, dim=1)
        global_query = torch.sum(scores * query, dim=1, keepdim=True)
        out = self.proj(global_query * key) + query
        out = self.final(out)
        return out.permute(0, 2, 1).reshape(batch, -1, height, width)


class Block(nn.Module):
    """The SwiftFormer encoder: ``LocalRepresentation`` (``local_representation``), then
    x + drop_path(layer_scale_1(attn(x))) with ``EfficientAdditiveAttention`` and
    x + drop_path(layer_scale_2(linear(x))) with an ``Mlp`` of ``mlp_ratio`` (dropout ``drop_rate``); one
    ``drop_path`` module serves both branches. The layer scales start at ``layer_scale_init_value`` (identities
    without ``use_layer_scale``)."""

    def __init__(self, dim, mlp_ratio=4.0, drop_rate=0.0, drop_path=0.0, act_layer=nn.GELU, use_layer_scale=True,
                 layer_scale_init_value=1e-5):
        super().__init__()
        self.local_representation = LocalRepresentation(dim, use_layer_scale=use_layer_scale, act_layer=act_layer)
        self.attn = EfficientAdditiveAttention(in_dims=dim, token_dim=dim)
        self.linear = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=drop_rate)
        self.drop_path = drop_path_module(drop_path)
        self.layer_scale_1 = LayerScale2d(dim, layer_scale_init_value) if use_layer_scale else nn.Identity()
        self.layer_scale_2 = LayerScale2d(dim, layer_scale_init_value) if use_layer_scale else nn.Identity()

    def forward(self, x):
        x = self.local_representation(x)
        x = x + self.drop_path(self.layer_scale_1(self.attn(x)))
        x = x + self.drop_path(self.layer_scale_2(self.linear(x)))
        return x


class Stage(nn.Module):
    """Stage ``index`` of a network of ``layers`` blocks a stage: ``downsample`` (an identity when None), then
    ``layers[index]`` blocks (``blocks``), convolutional encoders but the last, a SwiftFormer encoder. Stochastic
    depth rises linearly over all the network's blocks, from 0 at the first to ``drop_path_rate`` at the last."""

    def __init__(self, dim, index, layers, mlp_ratio=4.0, act_layer=nn.GELU, drop_rate=0.0, drop_path_rate=0.0,
                 use_layer_scale=True, layer_scale_init_value=1e-5, downsample=None):
        super().__init__()
        self.downsample = downsample if downsample is not None else nn.Identity()
        first = sum(layers[:index])
        last = layers[index] - 1
        blocks = []
        for block_idx in range(layers[index]):
            rate = drop_path_rate * (first + block_idx) / (sum(layers) - 1)
            if block_idx == last:
                blocks.append(Block(dim, mlp_ratio=mlp_ratio, drop_rate=drop_rate, drop_path=rate,
                                    act_layer=act_layer, use_layer_scale=use_layer_scale,
                                    layer_scale_init_value=layer_scale_init_value))
            else:
                blocks.append(ConvEncoder(dim, int(mlp_ratio * dim), kernel_size=3, drop_path=rate,
                                          act_layer=act_layer, use_layer_scale=use_layer_scale))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class SwiftFormer(nn.Module):
    """The stem (two stride-2 3x3 convolutions to ``embed_dims[0] // 2`` and ``embed_dims[0]`` channels, each with
    BatchNorm and ReLU), one ``Stage`` per entry of ``layers`` (widths ``embed_dims``; those marked in
    ``downsamples`` open with an ``Embedding`` of ``down_patch_size``, ``down_stride`` and ``down_pad``), a final
    BatchNorm (``norm``), average pooling, dropout (``head_drop``) and two linear heads (``head`` and the
    distillation head ``head_dist``): timm's ``SwiftFormer``, its arguments and defaults.

    The output is the heads' average in eval mode (and in train mode by default), both logits in train mode after
    ``set_distilled_training()``. ``global_pool``: 'avg' or '' (the unpooled map); ``drop_rate`` is the dropout
    before the heads, ``proj_drop_rate`` the MLPs', ``drop_path_rate`` the last block's stochastic depth.
    ``img_size`` is accepted and unused (timm's builder passes it); only ``output_stride=32`` exists.
    """

    default_cfg = {"first_conv": "stem.0", "classifier": ("head", "head_dist")}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, layers=(3, 3, 6, 4), embed_dims=(48, 56, 112, 220), mlp_ratios=4,
                 downsamples=(False, True, True, True), act_layer=nn.GELU, down_patch_size=3, down_stride=2,
                 down_pad=1, num_classes=1000, drop_rate=0.0, proj_drop_rate=0.0, drop_path_rate=0.0,
                 use_layer_scale=True, layer_scale_init_value=1e-5, global_pool="avg", output_stride=32, in_chans=3,
                 img_size=None):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"SwiftFormer only has output_stride 32, got {output_stride}")
        _check_global_pool(global_pool)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.feature_info = []
        stem_chs = embed_dims[0]
        self.stem = nn.Sequential(
            nn.Conv2d(in_chans, stem_chs // 2, 3, 2, 1),
            nn.BatchNorm2d(stem_chs // 2),
            nn.ReLU(),
            nn.Conv2d(stem_chs // 2, stem_chs, 3, 2, 1),
            nn.BatchNorm2d(stem_chs),
            nn.ReLU(),
        )
        prev_dim = stem_chs
        stages = []
        for i in range(len(layers)):
            dim = embed_dims[i]
            downsample = None
            if downsamples[i]:
                downsample = Embedding(prev_dim, dim, down_patch_size, down_stride, down_pad)
            stages.append(Stage(dim, i, layers, mlp_ratio=mlp_ratios, act_layer=act_layer, drop_rate=proj_drop_rate,
                                drop_path_rate=drop_path_rate, use_layer_scale=use_layer_scale,
                                layer_scale_init_value=layer_scale_init_value, downsample=downsample))
            prev_dim = dim
            self.feature_info.append(dict(num_chs=dim, reduction=2 ** (i + 2), module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = self.head_hidden_size = prev_dim
        self.norm = nn.BatchNorm2d(prev_dim)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        self.head_dist = self._new_head(num_classes)
        self.distilled_training = False
        init_linear_layers(self, types=(nn.Linear, nn.Conv2d))

    def _new_head(self, num_classes):
        """A linear classifier for ``num_classes`` (0: an identity) on the pooled width."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The two heads: (head, distillation head)."""
        return self.head, self.head_dist

    def reset_classifier(self, num_classes, global_pool=None):
        """New heads for ``num_classes`` (0: identities), in the model's training mode; ``global_pool`` ('avg' or
        '') changes the pooling too."""
        self.num_classes = num_classes
        if global_pool is not None:
            _check_global_pool(global_pool)
            self.global_pool = global_pool
        self.head = self._new_head(num_classes).train(self.training)
        self.head_dist = self._new_head(num_classes).train(self.training)

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
        """Average pooling (unless ``global_pool`` is ''), dropout, then the heads' average (both logits in
        distilled training); with ``pre_logits``, the pooled features."""
        if self.global_pool == "avg":
            x = x.mean(dim=(2, 3))
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
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), the last after
        the final norm with ``norm``, and (unless ``intermediates_only``) the final map (normed if the last stage
        ran); ``stop_early`` skips the stages after the last one picked."""
        return normed_stage_intermediates(x, self.stem, self.stages, self.norm, indices, norm, stop_early,
                                          output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, the final norm with ``prune_norm`` or when stages
        go, and the heads with ``prune_head`` or when stages go; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_swiftformer(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless ``out_indices`` says otherwise, under
    timm's flattened names (``stem_0``... ``stages_3``)."""
    return build_model(SwiftFormer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def swiftformer_xs(pretrained=False, progress=True, **kwargs):
    """SwiftFormer-XS: widths 48, 56, 112, 220, blocks 3, 3, 6, 4."""
    return _create_swiftformer("swiftformer_xs", pretrained, progress, kwargs, layers=[3, 3, 6, 4],
                               embed_dims=[48, 56, 112, 220])


@register_model
def swiftformer_s(pretrained=False, progress=True, **kwargs):
    """SwiftFormer-S: widths 48, 64, 168, 224, blocks 3, 3, 9, 6."""
    return _create_swiftformer("swiftformer_s", pretrained, progress, kwargs, layers=[3, 3, 9, 6],
                               embed_dims=[48, 64, 168, 224])


@register_model
def swiftformer_l1(pretrained=False, progress=True, **kwargs):
    """SwiftFormer-L1: widths 48, 96, 192, 384, blocks 4, 3, 10, 5."""
    return _create_swiftformer("swiftformer_l1", pretrained, progress, kwargs, layers=[4, 3, 10, 5],
                               embed_dims=[48, 96, 192, 384])


@register_model
def swiftformer_l3(pretrained=False, progress=True, **kwargs):
    """SwiftFormer-L3: widths 64, 128, 320, 512, blocks 4, 4, 12, 6."""
    return _create_swiftformer("swiftformer_l3", pretrained, progress, kwargs, layers=[4, 4, 12, 6],
                               embed_dims=[64, 128, 320, 512])
