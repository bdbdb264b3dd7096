"""Layers that several timm families share, with timm's module names (so their ``state_dict`` keys are timm's):
activations chosen by name, patch embedding, the fused-qkv biases and the pre-norm residual block of some
transformers, the transformer MLP and its 1x1-convolution form, global pooling chosen by name and the head built on
it (and the classifier API of the models that end in it), BatchNorm or LayerNorm + activation, convolution + norm +
activation, anti-aliased downsampling, an Inception block's concatenated branches, stochastic depth, and timm's
truncated-normal initialisations. Channel attention lives in ``_attention``, the plain norms in ``_norm``,
convolution padding, its special convolutions and TensorFlow's "same" pooling in ``_conv``.
"""
import math
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from ...ops.stochastic_depth import StochasticDepth
from ._conv import create_conv2d, pair
from ._norm import LayerNorm2d

__all__ = ["pair", "drop_path_module", "trunc_normal_", "trunc_normal_tf_", "init_linear_layers", "GELU", "GELUTanh",
           "get_act_layer", "create_act_layer", "PatchEmbed", "Mlp", "ConvMlp", "SelectAdaptivePool2d",
           "create_classifier", "ClassifierHead", "ClassifierHeadApi", "BatchNormAct2d", "LayerNormAct2d",
           "BlurPool2d", "create_aa", "ConvNormAct", "ConcatBranches", "QkvBias", "PreNormBlock", "TOKEN_POOLS",
           "check_token_pool", "LinearHeadApi", "TokenPoolHeadApi", "MeanTokenHeadApi", "PooledHeadApi"]


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


def trunc_normal_tf_(tensor, std=0.02):
    """timm's ``trunc_normal_tf_``: N(0, 1) truncated to [-2, 2] (drawn as ``trunc_normal_`` draws it, so the
    random stream is timm's), then scaled by ``std``: the cut is at two standard deviations whatever ``std``."""
    trunc_normal_(tensor, std=1.0)
    with torch.no_grad():
        tensor.mul_(std)
    return tensor


def distilled_output(model, x, x_dist):
    """The outputs of a distilled model's two heads (timm's DeiT, LeViT, PiT, EfficientFormer, RepViT...): both, for
    a distillation loss, in ``model``'s distilled training; otherwise their average."""
    if model.distilled_training and model.training:
        return x, x_dist
    return (x + x_dist) / 2


def init_linear_layers(model, std=0.02, types=(nn.Linear,)):
    """timm's transformer init of every Linear layer of ``model`` (or every layer of ``types``: convolutions too in
    timm's convolutional transformers), in module order: truncated-normal weights (``std``), zero biases."""
    for module in model.modules():
        if isinstance(module, types):
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


class GELUTanh(GELU):
    """GELU with its tanh approximation (timm's ``GELUTanh``, the TensorFlow MaxViTs' activation), taking (and
    ignoring) ``inplace`` as the other activations do."""

    def forward(self, x):
        return F.gelu(x, approximate="tanh")


_ACT_LAYERS = {"relu": nn.ReLU, "relu6": nn.ReLU6, "leaky_relu": nn.LeakyReLU, "silu": nn.SiLU, "swish": nn.SiLU,
               "mish": nn.Mish, "gelu": GELU, "gelu_tanh": GELUTanh, "hard_swish": nn.Hardswish}


def get_act_layer(act_layer):
    """An activation class from timm's name for it ('relu', 'relu6', 'leaky_relu', 'silu' or 'swish', 'mish', 'gelu',
    'gelu_tanh', 'hard_swish') or the class itself (timm's ``get_act_layer``, for the names the families here
    use)."""
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


class QkvBias:
    """The biases of a bias-free fused ``qkv`` projection as EVA, BEiT and Swin V2 learn them (a mixin before
    ``nn.Module``): a query and a value bias (``q_bias``, ``v_bias``) and a fixed zero key bias (``k_bias``, a
    non-persistent buffer: a key bias cancels in the softmax)."""

    def _add_qkv_bias(self, dim, enabled=True):
        """The three ``dim``-wide biases, or None for each when not ``enabled``."""
        if enabled:
            self.q_bias = nn.Parameter(torch.zeros(dim))
            self.register_buffer("k_bias", torch.zeros(dim), persistent=False)
            self.v_bias = nn.Parameter(torch.zeros(dim))
        else:
            self.q_bias = self.k_bias = self.v_bias = None

    def _qkv_bias(self):
        """The biases concatenated in the projection's (q, k, v) order, or None."""
        return None if self.q_bias is None else torch.cat((self.q_bias, self.k_bias, self.v_bias))


class PreNormBlock(nn.Module):
    """A pre-norm residual block without layer scale (VOLO's outlooker and transformer blocks, MobileViTv2's):
    x + drop_path1(attn(norm1(x))), then x + drop_path2(mlp(norm2(x)))."""

    def _add_branches(self, dim, attn, mlp, drop_path, norm_layer):
        """Register ``norm1``, ``attn``, ``drop_path1`` (stochastic depth ``drop_path``), ``norm2``, ``mlp`` and
        ``drop_path2``, in timm's order."""
        self.norm1 = norm_layer(dim)
        self.attn = attn
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = mlp
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.attn(self.norm1(x)))
        x = x + self.drop_path2(self.mlp(self.norm2(x)))
        return x


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


def _norm_slot(norm_layer, features, placeholder):
    """The hidden norm of an MLP: ``norm_layer(features)``; without one, timm's identity slot, or None (no ``norm``
    at all) where ``placeholder`` is False, for the ports whose module tree leaves timm's no-op slots out."""
    if norm_layer is not None:
        return norm_layer(features)
    return nn.Identity() if placeholder else None


class Mlp(nn.Module):
    """The feed-forward block (timm's ``Mlp``, its arguments and defaults): ``fc1`` to ``hidden_features`` (by
    default ``in_features``), activation, dropout, ``norm`` (an identity unless ``norm_layer``; left out with
    ``norm_placeholder=False``), ``fc2`` to ``out_features`` (by default ``in_features``), dropout. ``bias`` and
    ``drop`` are one value for both layers or a pair; ``use_conv`` makes the layers 1x1 convolutions over (N, C, H,
    W) maps instead of linear layers over the last axis."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, norm_layer=None,
                 bias=True, drop=0.0, use_conv=False, norm_placeholder=True):
        super().__init__()
        hidden_features = hidden_features or in_features
        out_features = out_features or in_features
        bias1, bias2 = pair(bias)
        drop1, drop2 = pair(drop)
        linear_layer = partial(nn.Conv2d, kernel_size=1) if use_conv else nn.Linear
        self.fc1 = linear_layer(in_features, hidden_features, bias=bias1)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop1)
        self.norm = _norm_slot(norm_layer, hidden_features, norm_placeholder)
        self.fc2 = linear_layer(hidden_features, out_features, bias=bias2)
        self.drop2 = nn.Dropout(drop2)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        if self.norm is not None:
            x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class ConvMlp(nn.Module):
    """The feed-forward block of 1x1 convolutions over an NCHW map (timm's ``ConvMlp``, global context attention's
    bottleneck): ``fc1`` to ``hidden_features`` channels, ``norm`` (an identity unless ``norm_layer``; left out with
    ``norm_placeholder=False``), the activation (``act``), dropout ``drop`` and ``fc2`` back to ``in_features``,
    both with biases unless ``bias=False``."""

    def __init__(self, in_features, hidden_features, act_layer=nn.ReLU, norm_layer=None, bias=True, drop=0.0,
                 norm_placeholder=True):
        super().__init__()
        self.fc1 = nn.Conv2d(in_features, hidden_features, kernel_size=1, bias=bias)
        self.norm = _norm_slot(norm_layer, hidden_features, norm_placeholder)
        self.act = act_layer()
        self.drop = nn.Dropout(drop)
        self.fc2 = nn.Conv2d(hidden_features, in_features, kernel_size=1, bias=bias)

    def forward(self, x):
        x = self.fc1(x)
        if self.norm is not None:
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


class ClassifierHeadApi:
    """timm's classifier API of a model that ends in a ``head`` with ``reset`` and ``fc`` (a ``ClassifierHead``, or
    a family's own) after ``forward_features``: a mixin before ``nn.Module``. A model that keeps its pooling's name
    in ``global_pool`` has it follow ``reset_classifier``."""

    def get_classifier(self):
        """The final linear layer."""
        return self.head.fc

    def reset_classifier(self, num_classes, global_pool=None, **head_args):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after another pooling ``global_pool``
        if given; ``head_args`` go to the head's ``reset`` (``reset_other`` of ConvNeXt's MLP head)."""
        self.num_classes = num_classes
        self.head.reset(num_classes, global_pool, **head_args)
        self.head_hidden_size = self.head.num_features
        if global_pool is not None and isinstance(getattr(self, "global_pool", None), str):
            self.global_pool = global_pool

    def forward_head(self, x, pre_logits=False):
        """Pooling and dropout; then the classifier unless ``pre_logits``."""
        return self.head(x, pre_logits=pre_logits)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


TOKEN_POOLS = ("", "token", "avg")


def check_token_pool(global_pool, has_class_token=True, pools=TOKEN_POOLS):
    """Refuse a token-sequence pooling other than those in ``pools`` ('': none, 'token': the class token, 'avg':
    the patch tokens' average), and 'token' without a class token."""
    if global_pool not in pools:
        raise ValueError(f"global_pool must be one of {pools}, got {global_pool!r}")
    if global_pool == "token" and not has_class_token:
        raise ValueError("global_pool='token' needs the class token")


class LinearHeadApi:
    """timm's classifier API of a model that ends in ``head_drop`` and a linear ``head`` on ``num_features`` (an
    identity without classes) after a pooling named by the string ``global_pool``: a mixin before ``nn.Module``.
    The model (or a subclass) gives ``_check_pool``, which refuses a pooling the family lacks, and
    ``forward_head``."""

    def get_classifier(self):
        """The final linear layer (an identity without classes)."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) head for ``num_classes`` (0: an identity); ``global_pool`` changes the pooling
        too."""
        if global_pool is not None:
            self._check_pool(global_pool)
            self.global_pool = global_pool
        self.num_classes = num_classes
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.head.train(self.training)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


class TokenPoolHeadApi(LinearHeadApi):
    """``LinearHeadApi`` for a transformer whose ``forward_features`` returns the token sequence (class token
    first, ``num_prefix_tokens`` of them), pooled as ``check_token_pool`` allows. ``global_pools`` lists the
    poolings in the order the family's error message gives them."""

    global_pools = TOKEN_POOLS

    def _check_pool(self, global_pool):
        """Refuse a pooling not in ``global_pools``, and 'token' once the class token is gone."""
        check_token_pool(global_pool, self.num_prefix_tokens, self.global_pools)

    def forward_head(self, x, pre_logits=False):
        """Pooling (the class token, or the patch tokens' average), head dropout, then the head unless
        ``pre_logits``."""
        if self.global_pool == "avg":
            x = x[:, self.num_prefix_tokens:].mean(dim=1)
        elif self.global_pool == "token":
            x = x[:, 0]
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)


class MeanTokenHeadApi(LinearHeadApi):
    """``LinearHeadApi`` for a model whose ``forward_features`` returns (N, tokens, C) tokens without a class
    token, averaged with ``global_pool='avg'`` (passed through with '')."""

    def forward_head(self, x, pre_logits=False):
        """The tokens' mean (unless ``global_pool`` is ''), dropout and, unless ``pre_logits``, the classifier."""
        if self.global_pool == "avg":
            x = x.mean(dim=1)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)


class PooledHeadApi:
    """timm's classifier API of a model that ends in a ``global_pool`` module and a ``head`` built together by
    ``create_classifier`` on ``num_features``, with ``head_drop`` between them: a mixin before ``nn.Module``."""

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) classifier for ``num_classes`` (0: an identity), after another pooling
        ``global_pool`` if given."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool, self.head = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.global_pool.train(self.training)
        self.head.train(self.training)

    def forward_head(self, x, pre_logits=False):
        """Global pooling, dropout, then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


class _NormAct:
    """The slots timm's norm-and-activation layers add after their norm (a mixin before the norm class): ``drop``
    (an identity: no dropout) and ``act`` (``act_layer``, built in place with ``inplace``; an identity with
    ``apply_act=False``, as for a projection shortcut)."""

    def _add_act(self, act_layer, apply_act, inplace):
        """Register ``drop`` and ``act`` after the norm's own parameters."""
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


class BatchNormAct2d(_NormAct, nn.BatchNorm2d):
    """BatchNorm and its activation as one module, timm's layout: the statistics and affine parameters are the
    module's own (``bn.weight``...), then ``drop`` and ``act`` (see ``_NormAct``; in place with ``inplace`` as timm's
    DPN prints it)."""

    def __init__(self, num_features, eps=1e-5, act_layer=nn.ReLU, apply_act=True, inplace=False):
        super().__init__(num_features, eps=eps)
        self._add_act(act_layer, apply_act, inplace)


class LayerNormAct2d(_NormAct, LayerNorm2d):
    """LayerNorm over the channels of an (N, C, H, W) map and its activation as one module (timm's
    ``LayerNormAct2d``, the norm of the ConvNeXt-based MaxxViT stems): then ``drop`` and ``act`` (see
    ``_NormAct``)."""

    def __init__(self, num_channels, eps=1e-6, act_layer=nn.ReLU, apply_act=True, inplace=False):
        super().__init__(num_channels, eps=eps)
        self._add_act(act_layer, apply_act, inplace)


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
