"""SHViT (Yun and Ro 2024, "SHViT: Single-Head Vision Transformer with Memory Efficient Macro Design"): shvit_s1,
shvit_s2, shvit_s3 and shvit_s4.

A fast hybrid built on two observations: a large-stride patchify stem (a 16x smaller map after four stride-2 3x3
convolutions) with three stages wastes less memory access than the usual four, and multi-head attention repeats
itself across heads, so one head on a slice of the channels suffices. Every block is a residual 3x3 depthwise
convolution, then (in the ``'s'`` stages) residual single-head self-attention, then a residual 1x1-convolution
feed-forward network. The attention normalises the first ``partial_dim`` channels (GroupNorm over one group), turns
them into one query, key and value, attends over all positions, and concatenates the result with the untouched
channels before a ReLU and a 1x1 projection. Between stages, a depthwise convolution and feed-forward network on
either side of an inverted-residual block with squeeze-and-excitation (``PatchMerging``) halves the map. Every
convolution is followed by BatchNorm, and the classifier is BatchNorm plus a linear layer, so ``fuse()`` folds the
whole network into plain convolutions and one linear layer for inference, as timm's does.

Model names, module names, ``state_dict`` keys, defaults and (seeded) initialisation follow timm's ``shvit``
module, so its checkpoints load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._attention import SEModule
from ._layers import SelectAdaptivePool2d, trunc_normal_
from ._norm import GroupNorm1
from ._reparam import batchnorm_scale_shift, biased_conv_like, fold_batchnorm, identity_kernel

__all__ = []


class Conv2dNorm(nn.Sequential):
    """A bias-free convolution (``c``) followed by BatchNorm (``bn``) whose scale starts at ``bn_weight_init`` and
    shift at 0; ``fuse()`` gives the equivalent biased convolution for inference."""

    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=0, bn_weight_init=1, groups=1):
        super().__init__()
        self.add_module("c", nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, groups=groups,
                                       bias=False))
        self.add_module("bn", nn.BatchNorm2d(out_channels))
        nn.init.constant_(self.bn.weight, bn_weight_init)
        nn.init.constant_(self.bn.bias, 0)

    def fuse(self):
        """A new biased convolution with the BatchNorm's eval-mode scale folded into the filters and its shift into
        the bias (the pair itself is left unchanged)."""
        with torch.no_grad():
            kernel, bias = fold_batchnorm(self.c.weight, self.bn)
        return biased_conv_like(self.c, kernel, bias)


class Residual(nn.Module):
    """``x + m(x)``; ``fuse()`` folds a residual depthwise ``Conv2dNorm`` into one convolution (the skip becomes a
    pass-through kernel added to the fused filters) and leaves other branches as they are (their layers fuse
    inside)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return x + self.m(x)

    def fuse(self):
        """One biased depthwise convolution for a ``Conv2dNorm`` branch, else this module."""
        if not isinstance(self.m, Conv2dNorm):
            return self
        conv = self.m.c
        if conv.groups != conv.in_channels:
            raise ValueError("only a depthwise convolution's residual folds into one convolution")
        with torch.no_grad():
            kernel, bias = fold_batchnorm(conv.weight, self.m.bn)
            kernel = kernel + identity_kernel(conv.out_channels, 1, conv.kernel_size, kernel.dtype)
        return biased_conv_like(conv, kernel, bias)


class NormLinear(nn.Sequential):
    """The classifier: BatchNorm over the pooled features (``bn``) and a linear layer (``l``, truncated-normal
    weights of std ``std``, zero bias); ``fuse()`` gives the equivalent single linear layer for inference."""

    def __init__(self, in_features, out_features, bias=True, std=0.02):
        super().__init__()
        self.add_module("bn", nn.BatchNorm1d(in_features))
        self.add_module("l", nn.Linear(in_features, out_features, bias=bias))
        trunc_normal_(self.l.weight, std=std)
        if bias:
            nn.init.constant_(self.l.bias, 0)

    def fuse(self):
        """A new biased ``nn.Linear`` with the BatchNorm's eval-mode scale folded into the weight and its shift
        carried through to the bias."""
        with torch.no_grad():
            scale, shift = batchnorm_scale_shift(self.bn)
            weight = self.l.weight
            bias = weight @ shift
            if self.l.bias is not None:
                bias = bias + self.l.bias
            fused = nn.Linear(weight.shape[1], weight.shape[0]).to(weight.dtype)
            fused.weight.copy_(weight * scale[None, :])
            fused.bias.copy_(bias)
        return fused


class PatchMerging(nn.Module):
    """The downsampling, an inverted residual without shortcut: a 1x1 expansion to ``4 * dim`` (``conv1``, then
    ``act1``), a stride-2 3x3 depthwise convolution (``conv2``, then ``act2``), squeeze-and-excitation (``se``) and a
    1x1 projection to ``out_dim`` (``conv3``)."""

    def __init__(self, dim, out_dim, act_layer=nn.ReLU):
        super().__init__()
        hid_dim = int(dim * 4)
        self.conv1 = Conv2dNorm(dim, hid_dim)
        self.act1 = act_layer()
        self.conv2 = Conv2dNorm(hid_dim, hid_dim, 3, 2, 1, groups=hid_dim)
        self.act2 = act_layer()
        self.se = SEModule(hid_dim, 0.25)
        self.conv3 = Conv2dNorm(hid_dim, out_dim)

    def forward(self, x):
        x = self.conv1(x)
        x = self.act1(x)
        x = self.conv2(x)
        x = self.act2(x)
        x = self.se(x)
        x = self.conv3(x)
        return x


class FFN(nn.Module):
    """The feed-forward branch: a 1x1 ``Conv2dNorm`` to ``embed_dim`` channels (``pw1``), the activation and a 1x1
    ``Conv2dNorm`` back to ``dim`` (``pw2``, its BatchNorm's scale starting at 0 so the branch starts silent)."""

    def __init__(self, dim, embed_dim, act_layer=nn.ReLU):
        super().__init__()
        self.pw1 = Conv2dNorm(dim, embed_dim)
        self.act = act_layer()
        self.pw2 = Conv2dNorm(embed_dim, dim, bn_weight_init=0)

    def forward(self, x):
        x = self.pw1(x)
        x = self.act(x)
        x = self.pw2(x)
        return x


class SHSA(nn.Module):
    """Single-head self-attention on the first ``pdim`` of ``dim`` channels: they are normalised (``pre_norm``) and
    projected by a 1x1 ``Conv2dNorm`` (``qkv``) to a query and a key of ``qk_dim`` channels and a value of ``pdim``;
    every position attends to every other (logits scaled by 1 / sqrt(qk_dim)); the result, concatenated with the
    remaining channels, goes through the activation and a 1x1 ``Conv2dNorm`` (``proj``, its scale starting at 0)."""

    def __init__(self, dim, qk_dim, pdim, norm_layer=GroupNorm1, act_layer=nn.ReLU):
        super().__init__()
        self.scale = qk_dim ** -0.5
        self.qk_dim = qk_dim
        self.dim = dim
        self.pdim = pdim
        self.pre_norm = norm_layer(pdim)
        self.qkv = Conv2dNorm(pdim, qk_dim * 2 + pdim)
        self.proj = nn.Sequential(act_layer(), Conv2dNorm(dim, dim, bn_weight_init=0))

    def forward(self, x):
        batch, _, height, width = x.shape
        attended, untouched = torch.split(x, [self.pdim, self.dim - self.pdim], dim=1)
        attended = self.pre_norm(attended)
        qkv = self.qkv(attended)
        q, k, v = torch.split(qkv, [self.qk_dim, self.qk_dim, self.pdim], dim=1)
        q, k, v = q.flatten(2), k.flatten(2), v.flatten(2)
        attn = (q.transpose(-2, -1) @ k) * self.scale
        attn = attn.softmax(dim=-1)
        attended = (v @ attn.transpose(-2, -1)).reshape(batch, self.pdim, height, width)
        return self.proj(torch.cat([attended, untouched], dim=1))


class BasicBlock(nn.Module):
    """A block: a residual 3x3 depthwise ``Conv2dNorm`` (``conv``, its scale starting at 0), residual ``SHSA``
    (``mixer``) where ``block_type`` is ``'s'`` (else an identity), and a residual ``FFN`` of twice the width (``ffn``;
    with ReLU whatever ``act_layer``, as in timm)."""

    def __init__(self, dim, qk_dim, pdim, block_type, norm_layer=GroupNorm1, act_layer=nn.ReLU):
        super().__init__()
        self.conv = Residual(Conv2dNorm(dim, dim, 3, 1, 1, groups=dim, bn_weight_init=0))
        if block_type == "s":
            self.mixer = Residual(SHSA(dim, qk_dim, pdim, norm_layer, act_layer))
        else:
            self.mixer = nn.Identity()
        self.ffn = Residual(FFN(dim, int(dim * 2)))

    def forward(self, x):
        x = self.conv(x)
        x = self.mixer(x)
        x = self.ffn(x)
        return x


class StageBlock(nn.Module):
    """A stage: where the width changes from ``prev_dim`` to ``dim``, ``downsample`` (a residual depthwise
    ``Conv2dNorm`` and ``FFN`` at the input width, ``PatchMerging`` to ``dim`` and the same pair at the new width;
    else an identity), then ``depth`` ``BasicBlock``s (``blocks``)."""

    def __init__(self, prev_dim, dim, qk_dim, pdim, block_type, depth, norm_layer=GroupNorm1, act_layer=nn.ReLU):
        super().__init__()
        if prev_dim != dim:
            self.downsample = nn.Sequential(
                Residual(Conv2dNorm(prev_dim, prev_dim, 3, 1, 1, groups=prev_dim)),
                Residual(FFN(prev_dim, int(prev_dim * 2), act_layer)),
                PatchMerging(prev_dim, dim, act_layer),
                Residual(Conv2dNorm(dim, dim, 3, 1, 1, groups=dim)),
                Residual(FFN(dim, int(dim * 2), act_layer)),
            )
        else:
            self.downsample = nn.Identity()
        self.blocks = nn.Sequential(*[BasicBlock(dim, qk_dim, pdim, block_type, norm_layer, act_layer)
                                      for _ in range(depth)])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


def _fuse_children(module):
    """Replace, depth first, every child of ``module`` that can fuse by its fused form, then fuse inside it."""
    for name, child in module.named_children():
        if isinstance(child, (Conv2dNorm, NormLinear, Residual)):
            child = child.fuse()
            setattr(module, name, child)
        _fuse_children(child)


class SHViT(nn.Module):
    """SHViT: the stem (``patch_embed``: four stride-2 3x3 ``Conv2dNorm`` layers widening to ``embed_dim[0]`` / 8,
    / 4, / 2 and ``embed_dim[0]``, with ``act_layer`` between them), one ``StageBlock`` per entry of ``embed_dim``
    (``depth`` blocks, query and key width ``qk_dim``, attended channels ``partial_dim``, attention where ``types``
    says ``'s'``), global pooling (``global_pool``, ``flatten``), dropout and the ``NormLinear`` classifier
    (``head``, an identity with ``num_classes=0``): timm's ``SHViT``, its arguments and defaults.

    ``global_pool``: 'avg', 'max', 'avgmax' or '' (the unpooled map, with ``num_classes=0``); pooling that widens
    the features ('catavgmax') is refused, as in timm. ``drop_rate`` is the dropout before the classifier.
    ``fuse()`` folds every BatchNorm (and the depthwise convolutions' skips) into the weights for inference.
    """

    default_cfg = {"first_conv": "patch_embed.0.c", "classifier": "head.l"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=(128, 256, 384),
                 partial_dim=(32, 64, 96), qk_dim=(16, 16, 16), depth=(1, 2, 3), types=("s", "s", "s"), drop_rate=0.0,
                 norm_layer=GroupNorm1, act_layer=nn.ReLU):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.feature_info = []
        stem_chs = embed_dim[0]
        self.patch_embed = nn.Sequential(
            Conv2dNorm(in_chans, stem_chs // 8, 3, 2, 1),
            act_layer(),
            Conv2dNorm(stem_chs // 8, stem_chs // 4, 3, 2, 1),
            act_layer(),
            Conv2dNorm(stem_chs // 4, stem_chs // 2, 3, 2, 1),
            act_layer(),
            Conv2dNorm(stem_chs // 2, stem_chs, 3, 2, 1),
        )
        stages = []
        prev_chs = stem_chs
        for i in range(len(embed_dim)):
            stages.append(StageBlock(prev_chs, embed_dim[i], qk_dim[i], partial_dim[i], types[i], depth[i],
                                     norm_layer=norm_layer, act_layer=act_layer))
            prev_chs = embed_dim[i]
            self.feature_info.append(dict(num_chs=prev_chs, reduction=2 ** (i + 4), module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = self.head_hidden_size = embed_dim[-1]
        self._set_pooling(global_pool)
        self.head = self._new_head(num_classes)

    def _set_pooling(self, global_pool):
        """The pooling ``global_pool`` and, unless there is none, flattening after it; widening pools refused."""
        pool = SelectAdaptivePool2d(global_pool, flatten=False)
        if pool.feat_mult() != 1:
            raise ValueError(f"global_pool {global_pool!r} widens the pooled features, which SHViT does not support")
        self.global_pool = pool
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()

    def _new_head(self, num_classes):
        """A ``NormLinear`` classifier for ``num_classes`` (0: an identity) on the pooled width."""
        return NormLinear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer (the head's ``l``), or the identity standing for a removed head."""
        return self.head.l if isinstance(self.head, NormLinear) else self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: none) after the pooling ``global_pool`` (None: the current
        one), in the model's training mode."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self._set_pooling(global_pool)
        self.global_pool.train(self.training)
        self.flatten.train(self.training)
        self.head = self._new_head(num_classes).train(self.training)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's map (N, num_features, H / 64, W / 64)."""
        x = self.patch_embed(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling, flattening and dropout; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.flatten(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) and (unless
        ``intermediates_only``) the last stage's output; ``stop_early`` skips the stages after the last one picked.
        ``norm`` changes nothing: there is no final norm (timm's argument)."""
        return stage_intermediates(x, self.patch_embed, self.stages, indices, stop_early, output_fmt,
                                   intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_head`` or when stages go, the
        pooling and classifier; returns the absolute indices (``prune_norm`` changes nothing: there is no norm)."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def fuse(self):
        """Fold, in place, every ``Conv2dNorm`` into a biased convolution, every residual depthwise one with its
        skip, and the ``NormLinear`` head into one linear layer: the same eval-mode outputs, as timm's ``fuse``.
        Returns the model."""
        _fuse_children(self)
        return self


def _create_shvit(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's three stage outputs (strides 16 to 64) unless ``out_indices`` says otherwise,
    under timm's flattened names (``patch_embed_0``... ``stages_2``)."""
    return build_model(SHViT, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def shvit_s1(pretrained=False, progress=True, **kwargs):
    """SHViT-S1: widths 128, 224, 320, blocks 2, 4, 5, attended channels 32, 48, 68."""
    return _create_shvit("shvit_s1", pretrained, progress, kwargs, embed_dim=(128, 224, 320), depth=(2, 4, 5),
                         partial_dim=(32, 48, 68), types=("i", "s", "s"))


@register_model
def shvit_s2(pretrained=False, progress=True, **kwargs):
    """SHViT-S2: widths 128, 308, 448, blocks 2, 4, 5, attended channels 32, 66, 96."""
    return _create_shvit("shvit_s2", pretrained, progress, kwargs, embed_dim=(128, 308, 448), depth=(2, 4, 5),
                         partial_dim=(32, 66, 96), types=("i", "s", "s"))


@register_model
def shvit_s3(pretrained=False, progress=True, **kwargs):
    """SHViT-S3: widths 192, 352, 448, blocks 3, 5, 5, attended channels 48, 75, 96."""
    return _create_shvit("shvit_s3", pretrained, progress, kwargs, embed_dim=(192, 352, 448), depth=(3, 5, 5),
                         partial_dim=(48, 75, 96), types=("i", "s", "s"))


@register_model
def shvit_s4(pretrained=False, progress=True, **kwargs):
    """SHViT-S4: widths 224, 336, 448, blocks 4, 7, 6, attended channels 48, 72, 96."""
    return _create_shvit("shvit_s4", pretrained, progress, kwargs, embed_dim=(224, 336, 448), depth=(4, 7, 6),
                         partial_dim=(48, 72, 96), types=("i", "s", "s"))
