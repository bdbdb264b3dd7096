"""Layers that several timm families share, with timm's module names (so their ``state_dict`` keys are timm's):
activations chosen by name, patch embedding, the transformer MLP and its 1x1-convolution form, global pooling
chosen by name and the head built on it, BatchNorm + activation, convolution + norm + activation, anti-aliased
downsampling, an Inception block's concatenated branches, stochastic depth, and timm's truncated-normal
initialisation. Channel attention lives in ``_attention``, the LayerNorms in ``_norm``, convolution padding and
its special convolutions in ``_conv``.
"""
import math
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from ...ops.stochastic_depth import StochasticDepth
from ._conv import create_conv2d

__all__ = ["pair", "drop_path_module", "trunc_normal_", "init_linear_layers", "GELU", "get_act_layer",
           "create_act_layer", "PatchEmbed", "Mlp", "ConvMlp", "SelectAdaptivePool2d", "create_classifier",
           "ClassifierHead", "BatchNormAct2d", "BlurPool2d", "create_aa", "ConvNormAct", "ConcatBranches"]


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


class GELU(nn.Module):
    """The exact GELU, taking (and ignoring) ``inplace`` as the other activations do: timm's ``GELU`` (printed
    ``GELU()``), so that a layer may build any activation of the table below in place."""

    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return F.gelu(x)


_ACT_LAYERS = {"relu": nn.ReLU, "relu6": nn.ReLU6, "leaky_relu": nn.LeakyReLU, "silu": nn.SiLU, "swish": nn.SiLU,
               "mish": nn.Mish, "gelu": GELU, "hard_swish": nn.Hardswish}


def get_act_layer(act_layer):
    """An activation class from timm's name for it ('relu', 'relu6', 'leaky_relu', 'silu' or 'swish', 'mish', 'gelu',
    'hard_swish') or the class itself (timm's ``get_act_layer``, for the names the families here use)."""
    if not isinstance(act_layer, str):
        return act_layer
    if act_layer not in _ACT_LAYERS:
        raise ValueError(f"unknown act_layer '{act_layer}': expected one of {sorted(_ACT_LAYERS)} or a class")
    return _ACT_LAYERS[act_layer]


def create_act_layer(act_layer, inplace=False):
    """An activation module from its name or class, in place if ``inplace`` where the class takes that argument
    (timm's ``create_act_layer``: a class without it, such as ``nn.GELU``, is built without)."""
    act_layer = get_act_layer(act_layer)
    try:
        return act_layer(inplace=inplace)
    except TypeError:
        return act_layer()


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


class ConvMlp(nn.Module):
    """The feed-forward block of 1x1 convolutions over an NCHW map (timm's ``ConvMlp``, global context attention's
    bottleneck): ``fc1`` to ``hidden_features`` channels, ``norm`` (an identity unless ``norm_layer``), the activation
    (``act``), ``drop`` (no dropout, timm's slot) and ``fc2`` back to ``in_features``."""

    def __init__(self, in_features, hidden_features, act_layer=nn.ReLU, norm_layer=None):
        super().__init__()
        self.fc1 = nn.Conv2d(in_features, hidden_features, kernel_size=1)
        self.norm = norm_layer(hidden_features) if norm_layer else nn.Identity()
        self.act = act_layer()
        self.drop = nn.Dropout(0.0)
        self.fc2 = nn.Conv2d(hidden_features, in_features, kernel_size=1)

    def forward(self, x):
        x = self.fc1(x)
        x = self.norm(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
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


class BlurPool2d(nn.Module):
    """Anti-aliased downsampling (Zhang 2019, "Making Convolutional Networks Shift-Invariant Again"): each channel
    blurred by a fixed ``filt_size`` x ``filt_size`` binomial filter, then subsampled by ``stride``, so that the
    subsampling no longer aliases high frequencies. The map is padded by half the filter's reach with ``pad_mode``
    ('reflect', or 'constant': zeros). The filter, the outer product of the binomial coefficients of
    ``filt_size - 1`` over their sum (1-2-1 / 4 for size 3), is a buffer left out of the ``state_dict``."""

    def __init__(self, channels, filt_size=3, stride=2, pad_mode="reflect"):
        super().__init__()
        if filt_size < 2:
            raise ValueError(f"filt_size must be at least 2, got {filt_size}")
        self.channels = channels
        self.stride = stride
        self.pad_mode = pad_mode
        self.padding = ((stride - 1) + (filt_size - 1)) // 2
        coeffs = torch.tensor([math.comb(filt_size - 1, k) for k in range(filt_size)], dtype=torch.float32)
        coeffs = coeffs / 2 ** (filt_size - 1)
        blur = coeffs[:, None] * coeffs[None, :]
        self.register_buffer("filt", blur[None, None].repeat(channels, 1, 1, 1), persistent=False)

    def forward(self, x):
        x = F.pad(x, (self.padding,) * 4, mode=self.pad_mode)
        return F.conv2d(x, self.filt.to(x.dtype), stride=self.stride, groups=self.channels)


_AA_LAYERS = {"avg": nn.AvgPool2d, "blurpc": partial(BlurPool2d, pad_mode="constant")}


def create_aa(aa_layer, channels, stride=2, enable=True):
    """The anti-aliasing layer that subsamples after a convolution whose stride it takes over (timm's
    ``create_aa``): 'avg' or an ``nn.AvgPool2d`` class pools ``stride`` x ``stride`` windows; 'blurpc' is
    ``BlurPool2d`` with zero padding; another class (``BlurPool2d``: reflect padding) is built as
    ``aa_layer(channels=channels, stride=stride)``. None when not ``enable``d or without ``aa_layer``."""
    if not aa_layer or not enable:
        return None
    if isinstance(aa_layer, str):
        if aa_layer not in _AA_LAYERS:
            raise ValueError(f"unknown aa_layer '{aa_layer}': expected one of {sorted(_AA_LAYERS)} or a class")
        aa_layer = _AA_LAYERS[aa_layer]
    if isinstance(aa_layer, type) and issubclass(aa_layer, nn.AvgPool2d):
        return aa_layer(stride)
    return aa_layer(channels=channels, stride=stride)


def _norm_act_layer(norm_layer, act_layer):
    """``norm_layer`` as a norm-and-activation layer with ``act_layer`` bound where it takes one, as timm's
    ``get_norm_act_layer`` makes it: ``nn.BatchNorm2d`` becomes ``BatchNormAct2d``; ``BatchNormAct2d``, or a partial
    of it that binds no activation of its own, gets ``act_layer``; another norm-and-activation layer (EvoNorm, whose
    nonlinearity is its own) stays as it is."""
    if norm_layer is nn.BatchNorm2d:
        norm_layer = BatchNormAct2d
    layer = norm_layer.func if isinstance(norm_layer, partial) else norm_layer
    if layer is not BatchNormAct2d or "act_layer" in getattr(norm_layer, "keywords", {}):
        return norm_layer
    return partial(norm_layer, act_layer=act_layer)


class ConvNormAct(nn.Module):
    """A bias-free convolution (``conv``), a norm with its activation (``bn``; no activation with
    ``apply_act=False``) and, where ``aa_layer`` takes over a stride above 1, the anti-aliasing layer that
    subsamples (``aa``): timm's ``ConvNormAct``, the basic layer of its convolutional families.

    ``padding`` is a number (or pair) of pixels, or a ``create_conv2d`` padding type: '' pads half the receptive
    field, 'same' as TensorFlow pads. ``norm_layer`` builds the norm as ``norm_layer(out_channels,
    apply_act=apply_act)``: BatchNorm (``nn.BatchNorm2d`` or ``BatchNormAct2d``, or a partial of the latter for
    another epsilon or an in-place activation) with ``act_layer`` unless the partial binds its own, another
    norm-and-activation layer (EvoNorm) as it is.
    """

    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding="", dilation=1, groups=1,
                 apply_act=True, norm_layer=nn.BatchNorm2d, act_layer=nn.ReLU, aa_layer=None):
        super().__init__()
        use_aa = bool(aa_layer) and stride > 1
        conv_stride = 1 if use_aa else stride
        if isinstance(padding, str):
            self.conv = create_conv2d(in_channels, out_channels, kernel_size, conv_stride, dilation, groups, padding)
        else:
            self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=conv_stride, padding=padding,
                                  dilation=dilation, groups=groups, bias=False)
        self.bn = _norm_act_layer(norm_layer, act_layer)(out_channels, apply_act=apply_act)
        self.aa = create_aa(aa_layer, out_channels, stride, enable=use_aa)

    @property
    def out_channels(self):
        """The convolution's output channels."""
        return self.conv.out_channels

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        if self.aa is not None:
            x = self.aa(x)
        return x


class ConcatBranches(nn.Module):
    """An Inception block whose forward runs each of its children (its branches, in the order they were made) on
    the same input and concatenates their outputs along the channels."""

    def forward(self, x):
        return torch.cat([branch(x) for branch in self.children()], 1)
