"""Layers that several timm families share, with timm's module names (so their ``state_dict`` keys are timm's):
patch embedding, the transformer MLP, global pooling chosen by name and the head built on it, convolution +
BatchNorm + activation, an Inception block's concatenated branches, stochastic depth, and timm's truncated-normal
initialisation.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from ...ops.stochastic_depth import StochasticDepth

__all__ = ["pair", "drop_path_module", "trunc_normal_", "init_linear_layers", "PatchEmbed", "Mlp",
           "SelectAdaptivePool2d", "create_classifier", "ClassifierHead", "BatchNormAct2d", "ConvNormAct",
           "ConcatBranches"]


def pair(value):
    """``value`` as a (height, width) tuple: a sequence as it is, a number twice."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def drop_path_module(p):
    """Stochastic depth over whole samples with probability ``p`` (timm's DropPath), or an identity when ``p`` is 0."""
    return StochasticDepth(p, "row") if p > 0.0 else nn.Identity()


def _normal_cdf(x):
    """The standard normal's cumulative distribution function."""
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, std=0.02):
    """Fill with N(0, std^2) truncated to [-2, 2] as timm draws it: one uniform number per element mapped
    through the inverse of the normal's CDF (so the random stream is timm's), then clamped."""
    with torch.no_grad():
        low = _normal_cdf(-2.0 / std)
        high = _normal_cdf(2.0 / std)
        tensor.uniform_(2 * low - 1, 2 * high - 1)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.clamp_(min=-2.0, max=2.0)
    return tensor


def init_linear_layers(model, std=0.02):
    """timm's transformer init of every Linear layer of ``model``, in module order: truncated-normal weights
    (``std``), zero biases."""
    for module in model.modules():
        if isinstance(module, nn.Linear):
            trunc_normal_(module.weight, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)


class PatchEmbed(nn.Module):
    """Non-overlapping ``patch_size`` patches of an ``img_size`` image projected to ``embed_dim`` by one
    strided convolution ``proj``, as a (N, patches, embed_dim) token sequence in row-major order (patches that
    do not fit are cut off).

    Images must have the size the model was built for. ``norm`` is timm's slot for a norm over the patch
    tokens, an identity in these models.
    """

    def __init__(self, img_size=224, patch_size=16, in_chans=3, embed_dim=768, bias=True):
        super().__init__()
        self.img_size = pair(img_size)
        self.patch_size = pair(patch_size)
        self.grid_size = (self.img_size[0] // self.patch_size[0], self.img_size[1] // self.patch_size[1])
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=self.patch_size, stride=self.patch_size, bias=bias)
        self.norm = nn.Identity()

    def forward(self, x):
        height, width = x.shape[-2:]
        if (height, width) != self.img_size:
            raise ValueError(f"Input size ({height}x{width}) doesn't match the model's ({self.img_size[0]}x"
                             f"{self.img_size[1]}): build the model with img_size=({height}, {width})")
        x = self.proj(x)
        x = x.flatten(2).transpose(1, 2)
        x = self.norm(x)
        return x


class Mlp(nn.Module):
    """The feed-forward block along the last axis: ``fc1``, activation, dropout, ``norm`` (an identity unless
    ``norm_layer``), ``fc2``, dropout."""

    def __init__(self, in_features, hidden_features, act_layer=nn.GELU, norm_layer=None, drop=0.0):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class AdaptiveAvgMaxPool2d(nn.Module):
    """The mean of global average and global max pooling, per channel."""

    def forward(self, x):
        return 0.5 * (F.adaptive_avg_pool2d(x, 1) + F.adaptive_max_pool2d(x, 1))


class AdaptiveCatAvgMaxPool2d(nn.Module):
    """Global average and global max pooling concatenated along the channels (twice the channels)."""

    def forward(self, x):
        return torch.cat((F.adaptive_avg_pool2d(x, 1), F.adaptive_max_pool2d(x, 1)), 1)


_POOLS = {"avg": lambda: nn.AdaptiveAvgPool2d(1), "max": lambda: nn.AdaptiveMaxPool2d(1),
          "avgmax": AdaptiveAvgMaxPool2d, "catavgmax": AdaptiveCatAvgMaxPool2d}


class SelectAdaptivePool2d(nn.Module):
    """Global pooling chosen by name, timm's head pooling (``pool``, ``flatten``): 'avg', 'max', 'avgmax' (their
    mean), 'catavgmax' (both, concatenated) or '' (no pooling: the map passes through as it is). Pooled maps
    are flattened to (N, C) unless ``flatten=False``."""

    def __init__(self, pool_type="avg", flatten=True):
        super().__init__()
        if pool_type and pool_type not in _POOLS:
            raise ValueError(f"unknown global_pool '{pool_type}': expected '' or one of {sorted(_POOLS)}")
        self.pool_type = pool_type
        self.pool = _POOLS[pool_type]() if pool_type else nn.Identity()
        self.flatten = nn.Flatten(1) if flatten and pool_type else nn.Identity()

    def feat_mult(self):
        """How many times the input's channels the pooled features have (2 for 'catavgmax')."""
        return 2 if self.pool_type == "catavgmax" else 1

    def forward(self, x):
        x = self.pool(x)
        x = self.flatten(x)
        return x


def create_classifier(num_features, num_classes, pool_type="avg"):
    """A head's global pooling (flattened) and final linear layer, an identity for ``num_classes=0``."""
    global_pool = SelectAdaptivePool2d(pool_type)
    pooled_features = num_features * global_pool.feat_mult()
    fc = nn.Linear(pooled_features, num_classes) if num_classes > 0 else nn.Identity()
    return global_pool, fc


class ClassifierHead(nn.Module):
    """Global pooling, dropout and the final linear layer (``head.global_pool``, ``head.drop``, ``head.fc``;
    ``head.flatten`` is an identity kept for timm's module tree). ``num_features`` is the pooled width."""

    def __init__(self, in_features, num_classes, pool_type="avg", drop_rate=0.0):
        super().__init__()
        self.in_features = in_features
        self.global_pool, fc = create_classifier(in_features, num_classes, pool_type)
        self.num_features = in_features * self.global_pool.feat_mult()
        self.drop = nn.Dropout(drop_rate)
        self.fc = fc
        self.flatten = nn.Identity()

    def reset(self, num_classes, pool_type=None):
        """A fresh final layer for ``num_classes`` (0: an identity), after another pooling if ``pool_type``."""
        if pool_type is None:
            pool_type = self.global_pool.pool_type
        self.global_pool, self.fc = create_classifier(self.in_features, num_classes, pool_type)
        self.global_pool.train(self.training)
        self.fc.train(self.training)
        self.num_features = self.in_features * self.global_pool.feat_mult()

    def forward(self, x, pre_logits=False):
        x = self.global_pool(x)
        x = self.drop(x)
        if pre_logits:
            return self.flatten(x)
        x = self.fc(x)
        return self.flatten(x)


class BatchNormAct2d(nn.BatchNorm2d):
    """BatchNorm and its activation as one module, timm's layout: the statistics and affine parameters are the
    module's own (``bn.weight``...), then ``drop`` (an identity: no dropout) and ``act`` (``act_layer``, built in
    place with ``inplace`` as timm's DPN prints it; an identity with ``apply_act=False``, as for a projection
    shortcut)."""

    def __init__(self, num_features, eps=1e-5, act_layer=nn.ReLU, apply_act=True, inplace=False):
        super().__init__(num_features, eps=eps)
        self.drop = nn.Identity()
        if not apply_act:
            self.act = nn.Identity()
        else:
            self.act = act_layer(inplace=True) if inplace else act_layer()

    def forward(self, x):
        x = super().forward(x)
        x = self.drop(x)
        x = self.act(x)
        return x


class ConvNormAct(nn.Module):
    """A bias-free convolution (``conv``), then BatchNorm and ReLU (``bn``; no ReLU with ``apply_act=False``): the
    basic layer of the TensorFlow-ported families and of the selective kernel paths."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, eps=1e-5,
                 apply_act=True):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                              dilation=dilation, groups=groups, bias=False)
        self.bn = BatchNormAct2d(out_channels, eps=eps, apply_act=apply_act)

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        return x


class ConcatBranches(nn.Module):
    """An Inception block whose forward runs each of its children (its branches, in the order they were made) on
    the same input and concatenates their outputs along the channels."""

    def forward(self, x):
        return torch.cat([branch(x) for branch in self.children()], 1)
