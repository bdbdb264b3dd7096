"""ConvMixer (Trockman & Kolter 2022, "Patches Are All You Need?"): convmixer_768_32, convmixer_1024_20_ks9_p14
and convmixer_1536_20.

A convolutional network that keeps the shape of an isotropic patch model: a stem embeds ``patch_size``
patches with a strided convolution, then every layer mixes space with a large-kernel depthwise convolution
(inside a residual connection) and channels with a pointwise convolution, each followed by the activation
and BatchNorm, at one resolution and width throughout. Model names, module names, ``state_dict`` keys and
(PyTorch's default) initialisation follow timm's ``convmixer`` module, so timm's checkpoints load directly.
"""
from engine import nn

from .._features import FeatureGetterNet, stage_intermediates, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import SelectAdaptivePool2d

__all__ = []


class Residual(nn.Module):
    """fn(x) + x."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class ConvMixerLayer(nn.Sequential):
    """One ConvMixer layer: x + BN(act(depthwise conv(x))) mixes space, then BN(act(1x1 conv)) mixes channels.

    The depthwise convolution has ``kernel_size`` and "same" padding, so the map keeps its size.
    """

    def __init__(self, dim, kernel_size, act_layer=nn.GELU):
        super().__init__(
            Residual(nn.Sequential(
                nn.Conv2d(dim, dim, kernel_size, groups=dim, padding="same"),
                act_layer(),
                nn.BatchNorm2d(dim),
            )),
            nn.Conv2d(dim, dim, kernel_size=1),
            act_layer(),
            nn.BatchNorm2d(dim),
        )


class ConvMixer(nn.Module):
    """A patch-embedding stem (strided conv, activation, BN), ``depth`` ConvMixer layers of width ``dim``,
    global pooling and a linear head.

    ``global_pool`` picks the pooling (see ``SelectAdaptivePool2d``; ``''`` leaves the map unpooled);
    ``drop_rate`` is the dropout before the head; ``num_classes=0`` replaces the head by an identity.
    """

    feature_wrapper = FeatureGetterNet  # timm's features_only weight names

    default_cfg = {"first_conv": "stem.0", "classifier": "head"}

    def __init__(self, dim, depth, kernel_size=9, patch_size=7, in_chans=3, num_classes=1000, global_pool="avg",
                 drop_rate=0.0, act_layer=nn.GELU):
        super().__init__()
        self.num_classes = num_classes
        self.num_features = dim
        self.stem = nn.Sequential(
            nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size),
            act_layer(),
            nn.BatchNorm2d(dim),
        )
        self.blocks = nn.Sequential(*[ConvMixerLayer(dim, kernel_size, act_layer) for _ in range(depth)])
        self.feature_info = [dict(num_chs=dim, reduction=patch_size, module=f"blocks.{i}") for i in range(depth)]
        self.global_pool = SelectAdaptivePool2d(global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh head for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = SelectAdaptivePool2d(global_pool)
            self.global_pool.train(self.training)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()
        self.head.train(self.training)

    def forward_features(self, x):
        """The feature map after the last layer (N, dim, H / patch_size, W / patch_size)."""
        x = self.stem(x)
        x = self.blocks(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the layers picked by ``indices`` (None: all, n: the last n, or a list; index i is layer
        i's output, as ``feature_info`` counts them) as (N, dim, H / patch_size, W / patch_size) maps, and (unless
        ``intermediates_only``) the last map run. ``norm`` does nothing: there is no final norm; ``stop_early``
        skips the layers after the last one picked."""
        return stage_intermediates(x, self.stem, self.blocks, indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the layers after the last one ``indices`` picks and, with ``prune_head``, the classifier (pooling
        removed too); every layer has the same width, so ``num_features`` stays. Returns the absolute indices.
        ``prune_norm`` does nothing: there is no final norm."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = nn.Sequential(*list(self.blocks)[:max(take) + 1])
        if prune_head:
            self.reset_classifier(0, "")
        return take

    def forward_head(self, x, pre_logits=False):
        """Global pooling, dropout; then the head unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _feature_indices(depth, out_indices):
    """timm's choice of feature layers: ``out_indices`` an int n takes the last n layers, a sequence takes those
    layers (negative ones counted from the end)."""
    if isinstance(out_indices, int):
        if not 0 < out_indices <= depth:
            raise ValueError(f"out_indices={out_indices} asks for more than the {depth} layers")
        return tuple(range(depth - out_indices, depth))
    indices = tuple(depth + i if i < 0 else i for i in out_indices)
    if not all(0 <= i < depth for i in indices):
        raise ValueError(f"out_indices {tuple(out_indices)} out of range for {depth} layers")
    return indices


def _create_convmixer(variant, pretrained, progress, depth, **kwargs):
    """Build a registered variant; with ``features_only`` its features are timm's: the last three layers unless
    ``out_indices`` says otherwise."""
    if kwargs.get("features_only"):
        kwargs["out_indices"] = _feature_indices(depth, kwargs.get("out_indices", 3))
    return build_model(ConvMixer, variant, pretrained, progress=progress, depth=depth, **kwargs)


@register_model
def convmixer_1536_20(pretrained=False, progress=True, **kwargs):
    """ConvMixer-1536/20: width 1536, 20 layers, 9x9 kernels, 7x7 patches, GELU."""
    return _create_convmixer("convmixer_1536_20", pretrained, progress, 20, dim=1536, kernel_size=9, patch_size=7,
                             **kwargs)


@register_model
def convmixer_768_32(pretrained=False, progress=True, **kwargs):
    """ConvMixer-768/32: width 768, 32 layers, 7x7 kernels, 7x7 patches, ReLU."""
    return _create_convmixer("convmixer_768_32", pretrained, progress, 32, dim=768, kernel_size=7, patch_size=7,
                             act_layer=nn.ReLU, **kwargs)


@register_model
def convmixer_1024_20_ks9_p14(pretrained=False, progress=True, **kwargs):
    """ConvMixer-1024/20: width 1024, 20 layers, 9x9 kernels, 14x14 patches, GELU."""
    return _create_convmixer("convmixer_1024_20_ks9_p14", pretrained, progress, 20, dim=1024, kernel_size=9,
                             patch_size=14, **kwargs)
