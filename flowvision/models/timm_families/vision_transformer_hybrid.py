"""Hybrid Vision Transformers (Dosovitskiy et al. 2020, "An Image is Worth 16x16 Words: Transformers for Image
Recognition at Scale"; Steiner et al. 2021, "How to train your ViT? Data, Augmentation, and Regularization in
Vision Transformers"): timm's ``vision_transformer_hybrid`` models with ImageNet-1k weights, the original paper's
R50+ViT-B/16 at 224 (vit_base_r50_s16_224, ImageNet-21k features), MobileCLIP's ViT-B image tower (Vasu et al.
2024, "MobileCLIP: Fast Image-Text Models through Multi-Modal Reinforced Training"; Faghri et al. 2025,
"MobileCLIP2: Improving Multi-Modal Reinforced Training": vit_base_mci_224), and timm's hybrids without published
weights: vit_base_r26_s32_224, vit_base_resnet26d_224, vit_base_resnet50d_224, vit_small_resnet26d_224 and
vit_small_resnet50d_s16_224.

A convolutional backbone turns the image into a feature map, whose positions (or patches of positions) become the
transformer's tokens: a ResNet-style stem and stages of ordinary (not pre-activated) bottlenecks with
weight-standardised convolutions, GroupNorm and TensorFlow's "same" padding, as in the original JAX models. The
R26 and R50 variants use two to four stages of the backbone and one-position patches; the R-Ti variants only its
stem (stride 4) and 8x8 patches. The ``resnet26d`` / ``resnet50d`` variants read instead the last map of timm's
ResNet-D (``timm_families.resnet``, built with ``features_only``: BatchNorm, a deep stem, average-pool shortcuts),
after its fourth stage (stride 32) or its third (``s16``). MobileCLIP's ViT-B has a convolutional stem instead
(4x4/4 and two 2x2/2 convolutions, BatchNorm and GELU between them, stride 16) whose 768-wide map is the embedding
itself (no projection), and position embeddings on the patch tokens only. The transformer is timm's
``VisionTransformer`` (``timm_families.vision_transformer``); only the patch embedding differs. Model names, module
names, ``state_dict`` keys and (seeded) initialisation follow timm, so its checkpoints load directly.
"""
import math
import warnings
from collections import OrderedDict
from functools import partial

from engine import nn

from .._features import FeatureListNet
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._conv import MaxPool2dSame, _needs_dynamic_padding, _pad_same, create_conv2d, get_padding
from ._layers import BatchNormAct2d, ConvNormAct, drop_path_module, pair
from .resnet import resnet26d, resnet50d
from .resnetv2 import ClassifierHead, GroupNormAct, ResNetStage, StdConv2d
from .vision_transformer import VisionTransformer

__all__ = []


class StdConv2dSame(StdConv2d):
    """A weight-standardised convolution (``StdConv2d``) with TensorFlow's "same" padding: a fixed symmetric
    padding where one gives it (stride 1, odd kernel), otherwise padding computed from each input's size with the
    odd pixel at the bottom and right (timm's ``StdConv2dSame``, the ported JAX hybrids' convolution)."""

    def __init__(self, in_channel, out_channels, kernel_size, stride=1, dilation=1, groups=1, eps=1e-6):
        super().__init__(in_channel, out_channels, kernel_size, stride=stride, dilation=dilation, groups=groups,
                         eps=eps)
        self.same_pad = _needs_dynamic_padding("same", kernel_size, stride, dilation)
        padding = 0 if self.same_pad else get_padding(kernel_size, stride, dilation)
        self.padding = (padding, padding)

    def forward(self, x):
        if self.same_pad:
            x = _pad_same(x, self.kernel_size, self.stride, self.dilation)
        return super().forward(x)


def _same_size(size, stride):
    """The length of an axis of ``size`` pixels after a "same"-padded layer of ``stride``."""
    return math.ceil(size / stride)


# The hybrids' layers: "same" convolutions standardised with eps 1e-8, GroupNorm of 32 groups with ReLU
_conv_layer = partial(StdConv2dSame, eps=1e-8)
_norm_layer = partial(GroupNormAct, num_groups=32, act_layer=nn.ReLU)


def _stem_layers(in_chans, out_chs):
    """The non-pre-activation "same" stem: a 7x7/2 convolution (``conv``), its norm with ReLU (``norm``) and a
    3x3/2 max pool padded as TensorFlow pads (``pool``)."""
    return OrderedDict([
        ("conv", _conv_layer(in_chans, out_chs, 7, stride=2)),
        ("norm", _norm_layer(out_chs)),
        ("pool", MaxPool2dSame(3, 2)),
    ])


class ResNetStem(nn.Sequential):
    """The backbone of the stem-only hybrids (timm's ``create_resnetv2_stem`` with ``preact=False`` and the 'same'
    stem): ``_stem_layers``, stride 4, ``num_features`` channels. Keeps the convolution's default initialisation,
    as timm does."""

    def __init__(self, in_chans=3, out_chs=64):
        super().__init__(_stem_layers(in_chans, out_chs))
        self.num_features = out_chs

    @staticmethod
    def output_size(img_size):
        """The (height, width) of the map it makes of an ``img_size`` image."""
        return tuple(_same_size(_same_size(size, 2), 2) for size in img_size)


class ConvStemOutput(nn.Module):
    """The convolutional stem's last layer: a biased convolution (``conv``, ``padding`` pixels or a
    ``create_conv2d`` padding type), no norm (``bn``, an empty slot as in timm's ``ConvNormAct`` without norm) and no
    activation."""

    def __init__(self, in_chs, out_chs, kernel_size, stride, padding):
        super().__init__()
        if isinstance(padding, str):
            self.conv = create_conv2d(in_chs, out_chs, kernel_size, stride, pad_type=padding, bias=True)
        else:
            self.conv = nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=padding, bias=True)
        self.bn = nn.Sequential()

    def forward(self, x):
        return self.conv(x)


class ConvStem(nn.Sequential):
    """MobileCLIP's convolutional stem (timm's ``ConvStem``): layers ``0``, ``1``... of ``channels`` widths (an int:
    ``depth`` widths halving backwards from it), ``kernel_size``, ``stride`` and ``padding`` (one each, or one per
    layer), each a convolution with BatchNorm and ``act_layer`` but the last, a biased convolution alone. Keeps the
    convolutions' default initialisation, as timm does."""

    def __init__(self, in_chans=3, depth=3, channels=64, kernel_size=3, stride=(2, 2, 2), padding="",
                 act_layer=nn.ReLU):
        super().__init__()
        if isinstance(channels, int):
            channels = tuple(channels // 2 ** i for i in range(depth))[::-1]
        kernel_size, padding = (v if isinstance(v, (tuple, list)) else (v,) * depth for v in (kernel_size, padding))
        if not depth == len(stride) == len(kernel_size) == len(channels) == len(padding):
            raise ValueError(f"a {depth}-layer stem needs as many widths, kernel sizes, strides and paddings")
        norm_layer = partial(BatchNormAct2d, act_layer=act_layer)
        in_chs = in_chans
        for i, (chs, kernel, step, pad) in enumerate(zip(channels, kernel_size, stride, padding)):
            if i == depth - 1:
                layer = ConvStemOutput(in_chs, chs, kernel, step, pad)
            else:
                layer = ConvNormAct(in_chs, chs, kernel, stride=step, padding=pad, norm_layer=norm_layer)
            self.add_module(str(i), layer)
            in_chs = chs
        self.num_features = in_chs

    def output_size(self, img_size):
        """The (height, width) of the map it makes of an ``img_size`` image."""
        size = tuple(img_size)
        for layer in self:
            conv = layer.conv
            size = tuple((s + 2 * p - d * (k - 1) - 1) // t + 1
                         for s, p, d, k, t in zip(size, conv.padding, conv.dilation, conv.kernel_size, conv.stride))
        return size


class DownsampleConv(nn.Module):
    """The projection shortcut of a non-pre-activated bottleneck: a strided 1x1 convolution (``conv``) and a norm
    without activation (``norm``)."""

    def __init__(self, in_chs, out_chs, stride, conv_layer, norm_layer):
        super().__init__()
        self.conv = conv_layer(in_chs, out_chs, 1, stride=stride)
        self.norm = norm_layer(out_chs, apply_act=False)

    def forward(self, x):
        x = self.conv(x)
        x = self.norm(x)
        return x


class Bottleneck(nn.Module):
    """The ResNet v1.5 bottleneck (timm's non-pre-activation ``Bottleneck`` in ``resnetv2``): 1x1 convolution,
    norm and activation, 3x3 convolution (carrying the stride), norm and activation, 1x1 convolution and a norm
    without activation (``norm3``), then drop-path, the shortcut added and ReLU (``act3``). A stage's first block
    (``project``) projects its shortcut (``DownsampleConv``). Takes the arguments ``ResNetStage`` hands its blocks;
    ``avg_down`` shortcuts are not part of these models and are refused."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, first_dilation=1, bottle_ratio=0.25, project=False,
                 avg_down=False, conv_layer=_conv_layer, norm_layer=_norm_layer, act_layer=nn.ReLU,
                 drop_path_rate=0.0):
        super().__init__()
        if avg_down:
            raise ValueError("the non-pre-activation bottleneck has no average-pool shortcut")
        mid_chs = _make_divisible(out_chs * bottle_ratio, 8)
        self.downsample = DownsampleConv(in_chs, out_chs, stride, conv_layer, norm_layer) if project else None
        self.conv1 = conv_layer(in_chs, mid_chs, 1)
        self.norm1 = norm_layer(mid_chs)
        self.conv2 = conv_layer(mid_chs, mid_chs, 3, stride=stride, dilation=first_dilation)
        self.norm2 = norm_layer(mid_chs)
        self.conv3 = conv_layer(mid_chs, out_chs, 1)
        self.norm3 = norm_layer(out_chs, apply_act=False)
        self.drop_path = drop_path_module(drop_path_rate)
        self.act3 = act_layer(inplace=True)

    def zero_init_last(self):
        """Zero the last norm's scale, so the block starts as its shortcut (followed by ReLU)."""
        nn.init.zeros_(self.norm3.weight)

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = self.conv1(x)
        x = self.norm1(x)
        x = self.conv2(x)
        x = self.norm2(x)
        x = self.conv3(x)
        x = self.norm3(x)
        x = self.drop_path(x)
        x = self.act3(x + shortcut)
        return x


class ResNetBackbone(nn.Module):
    """The hybrids' ResNet backbone (timm's ``ResNetV2`` with ``preact=False``, the 'same' stem, no classes and no
    pooling): ``ResNetStem``'s layers (``stem``), stages of ``layers`` bottlenecks (``ResNetStage``) of widths
    ``channels`` (the first at stride 1, the others 2), an identity ``norm`` and a headless ``head`` (timm's slots),
    giving a (N, num_features, H / 2^(len(layers) + 1), W / ...) map.

    ``init_weights`` is timm's: He-normal convolutions (fan-out), unit norms and, with ``zero_init_last``, each
    block's last norm zeroed. The constructor runs it without zeroing; the ViT's init runs it again with.
    """

    def __init__(self, layers, channels=(256, 512, 1024, 2048), in_chans=3, stem_chs=64):
        super().__init__()
        if not 0 < len(layers) <= len(channels):
            raise ValueError(f"{len(layers)} stage depths for {len(channels)} stage widths")
        stem_chs = _make_divisible(stem_chs, 8)
        self.stem = nn.Sequential(_stem_layers(in_chans, stem_chs))
        self.stages = nn.Sequential()
        prev_chs = stem_chs
        for i, (depth, width) in enumerate(zip(layers, channels)):
            out_chs = _make_divisible(width, 8)
            stage = ResNetStage(prev_chs, out_chs, 1 if i == 0 else 2, 1, depth, [0.0] * depth, block_fn=Bottleneck,
                                conv_layer=_conv_layer, norm_layer=_norm_layer)
            self.stages.add_module(str(i), stage)
            prev_chs = out_chs
        self.num_stages = len(layers)
        self.num_features = prev_chs
        self.norm = nn.Identity()
        self.head = ClassifierHead(self.num_features, 0, "")
        self.init_weights(zero_init_last=False)

    def init_weights(self, zero_init_last=True):
        """timm's ``ResNetV2`` init, module by module: convolutions He-normal over their fan-out, GroupNorms with
        unit scale and zero shift, then (``zero_init_last``) each block's last norm scale zeroed."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.GroupNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
        if zero_init_last:
            for module in self.modules():
                if isinstance(module, Bottleneck):
                    module.zero_init_last()

    def output_size(self, img_size):
        """The (height, width) of the map it makes of an ``img_size`` image."""
        stride = 2 ** (self.num_stages + 1)
        return tuple(_same_size(size, stride) for size in img_size)

    def forward(self, x):
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        x = self.head(x)
        return x


def _backbone_width(backbone):
    """The channels of the map ``backbone`` makes: its ``num_features``, or a feature extractor's last feature's."""
    if isinstance(backbone, FeatureListNet):
        return backbone.feature_info.channels()[-1]
    return backbone.num_features


def _backbone_map_size(backbone, img_size):
    """The (height, width) of the map ``backbone`` makes of an ``img_size`` image: its ``output_size``, or for a
    features_only ResNet (a ``FeatureListNet``) each side divided by the last feature's reduction, rounded up, as
    each of its padded strided convolutions and pools halves a side rounding up (timm runs the backbone on a blank
    image to find it)."""
    if isinstance(backbone, FeatureListNet):
        reduction = backbone.feature_info.reduction()[-1]
        return tuple(_same_size(size, reduction) for size in img_size)
    return backbone.output_size(img_size)


class HybridEmbed(nn.Module):
    """Tokens from a CNN: the ``backbone``'s feature map cut into ``patch_size`` patches, each projected to the
    embedding by ``proj`` (a strided convolution), as a (N, patches, embed_dim) sequence (timm's ``HybridEmbed``).

    ``feature_size`` is the map's size for an ``img_size`` image (``_backbone_map_size``, where timm runs the
    backbone on a blank image), ``feature_ratio`` the backbone's stride; images of another size are refused. A
    backbone that returns a list of maps (a features_only ResNet) gives its last.
    """

    def __init__(self, backbone, proj, img_size, patch_size):
        super().__init__()
        self.backbone = backbone
        self.proj = proj
        self.img_size = pair(img_size)
        self.patch_size = pair(patch_size)
        self.feature_size = _backbone_map_size(backbone, self.img_size)
        self.feature_ratio = tuple(i // f for i, f in zip(self.img_size, self.feature_size))
        if any(f % p for f, p in zip(self.feature_size, self.patch_size)):
            raise ValueError(f"the backbone's {self.feature_size[0]}x{self.feature_size[1]} map does not split into "
                             f"{self.patch_size[0]}x{self.patch_size[1]} patches")
        self.feature_dim = _backbone_width(backbone)
        self.grid_size = tuple(f // p for f, p in zip(self.feature_size, self.patch_size))
        self.num_patches = self.grid_size[0] * self.grid_size[1]

    def feat_ratio(self):
        """The stride of a token over the image: the backbone's stride times the patch size (the larger axis)."""
        return max(r * p for r, p in zip(self.feature_ratio, self.patch_size))

    def forward(self, x):
        height, width = x.shape[-2:]
        if (height, width) != self.img_size:
            raise ValueError(f"Input size ({height}x{width}) doesn't match the model's ({self.img_size[0]}x"
                             f"{self.img_size[1]}): build the model with img_size=({height}, {width})")
        x = self.backbone(x)
        if isinstance(x, (list, tuple)):
            x = x[-1]
        x = self.proj(x)
        x = x.flatten(2).transpose(1, 2)
        return x


class HybridVisionTransformer(VisionTransformer):
    """timm's ``VisionTransformer`` whose patch embedding is a ``HybridEmbed`` over ``backbone`` (a
    ``ResNetBackbone``, ``ResNetStem``, ``ConvStem`` or features_only ResNet-D, built by the entrypoint before the
    transformer, as timm builds it): ``patch_size`` (default 1: a token per backbone position) cuts the backbone's
    map; with ``proj=False`` the map's pixels are the tokens as they are (its width must be ``embed_dim``). Takes the
    ViT's other arguments and defaults; ``feature_info`` reductions count the backbone's stride.

    The embedding's projection is built where the ViT builds its patch projection and the weights are drawn after
    the whole model is assembled, so a seed gives timm's weights: the backbone's convolutions drawn again by its
    ``init_weights`` (its blocks' last norms zeroed) in the ViT's init, as timm's init reaches the backbone too.
    """

    def __init__(self, backbone, img_size=224, patch_size=1, in_chans=3, weight_init="", proj=True, **kwargs):
        if weight_init not in ("", "skip"):
            raise ValueError(f"weight_init must be '' (timm's) or 'skip', got {weight_init!r}")
        embed_dim = kwargs.get("embed_dim", 768)
        width = _backbone_width(backbone)
        if not proj and width != embed_dim:
            raise ValueError(f"without projection the backbone's width ({width}) must be embed_dim ({embed_dim})")
        feature_size = _backbone_map_size(backbone, pair(img_size))
        # without projection the ViT's patch convolution is built on no input channels: it draws no random numbers
        # (timm builds none) and is dropped
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Initializing zero-element tensors is a no-op")
            super().__init__(img_size=feature_size, patch_size=patch_size,
                             in_chans=width if proj else 0, weight_init="skip", **kwargs)
        self.in_chans = in_chans
        projection = self.patch_embed.proj if proj else nn.Identity()
        self.patch_embed = HybridEmbed(backbone, projection, img_size, patch_size)
        for info in self.feature_info:
            info["reduction"] = self.patch_embed.feat_ratio()
        if weight_init != "skip":
            self.init_weights()

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the backbone's stem convolution) and ``classifier``."""
        backbone = self.patch_embed.backbone
        if isinstance(backbone, ConvStem):
            return {"first_conv": "patch_embed.backbone.0.conv", "classifier": "head"}
        if isinstance(backbone, FeatureListNet):
            stem = "conv1.0" if isinstance(backbone.conv1, nn.Sequential) else "conv1"
            return {"first_conv": f"patch_embed.backbone.{stem}", "classifier": "head"}
        stem = "" if isinstance(backbone, ResNetStem) else "stem."
        return {"first_conv": f"patch_embed.backbone.{stem}conv", "classifier": "head"}


def _create_hybrid(variant, pretrained, progress, kwargs, layers, **model_args):
    """A hybrid entrypoint's body: the backbone (``ResNetStem`` for no ``layers``) built first, for the caller's
    ``in_chans``, then the transformer with timm's arguments, overridable by the caller's ``kwargs``."""
    in_chans = kwargs.get("in_chans", 3)
    backbone = ResNetBackbone(layers, in_chans=in_chans) if layers else ResNetStem(in_chans)
    return build_model(HybridVisionTransformer, variant, pretrained, progress=progress, backbone=backbone,
                       **{**model_args, **kwargs})


def _create_resnet_hybrid(variant, pretrained, progress, kwargs, resnet, stage, **model_args):
    """An entrypoint's body for the hybrids over a timm ResNet: ``resnet`` (an entrypoint of ``resnet``) built
    first as a features_only network ending at ``stage`` (4: stride 32, 3: stride 16) for the caller's
    ``in_chans``, then the transformer with timm's arguments, overridable by the caller's ``kwargs``."""
    backbone = resnet(pretrained, in_chans=kwargs.get("in_chans", 3), features_only=True, out_indices=[stage])
    return build_model(HybridVisionTransformer, variant, pretrained, progress=progress, backbone=backbone,
                       **{**model_args, **kwargs})


@register_model
def vit_tiny_r_s16_p8_224(pretrained=False, progress=True, **kwargs):
    """R+ViT-Ti/S16 at 224: the ResNet stem (stride 4), 8x8 patches, width 192, 12 blocks, 3 heads."""
    return _create_hybrid("vit_tiny_r_s16_p8_224", pretrained, progress, kwargs, (), img_size=224, patch_size=8,
                          embed_dim=192, depth=12, num_heads=3)


@register_model
def vit_tiny_r_s16_p8_384(pretrained=False, progress=True, **kwargs):
    """R+ViT-Ti/S16 at 384: the ResNet stem (stride 4), 8x8 patches, width 192, 12 blocks, 3 heads."""
    return _create_hybrid("vit_tiny_r_s16_p8_384", pretrained, progress, kwargs, (), img_size=384, patch_size=8,
                          embed_dim=192, depth=12, num_heads=3)


@register_model
def vit_small_r26_s32_224(pretrained=False, progress=True, **kwargs):
    """R26+ViT-S/S32 at 224: four stages of 2 bottlenecks (stride 32), width 384, 12 blocks, 6 heads."""
    return _create_hybrid("vit_small_r26_s32_224", pretrained, progress, kwargs, (2, 2, 2, 2), img_size=224,
                          patch_size=1, embed_dim=384, depth=12, num_heads=6)


@register_model
def vit_small_r26_s32_384(pretrained=False, progress=True, **kwargs):
    """R26+ViT-S/S32 at 384: four stages of 2 bottlenecks (stride 32), width 384, 12 blocks, 6 heads."""
    return _create_hybrid("vit_small_r26_s32_384", pretrained, progress, kwargs, (2, 2, 2, 2), img_size=384,
                          patch_size=1, embed_dim=384, depth=12, num_heads=6)


@register_model
def vit_base_r50_s16_224(pretrained=False, progress=True, **kwargs):
    """R50+ViT-B/16 at 224 (the original paper's hybrid): three ResNet-50 stages of 3, 4, 9 bottlenecks (stride
    16), width 768, 12 blocks, 12 heads."""
    return _create_hybrid("vit_base_r50_s16_224", pretrained, progress, kwargs, (3, 4, 9), img_size=224,
                          patch_size=1, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_base_r50_s16_384(pretrained=False, progress=True, **kwargs):
    """R50+ViT-B/16 at 384 (the original paper's hybrid): three ResNet-50 stages of 3, 4, 9 bottlenecks (stride
    16), width 768, 12 blocks, 12 heads."""
    return _create_hybrid("vit_base_r50_s16_384", pretrained, progress, kwargs, (3, 4, 9), img_size=384,
                          patch_size=1, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_large_r50_s32_224(pretrained=False, progress=True, **kwargs):
    """R50+ViT-L/S32 at 224: the four ResNet-50 stages (stride 32), width 1024, 24 blocks, 16 heads."""
    return _create_hybrid("vit_large_r50_s32_224", pretrained, progress, kwargs, (3, 4, 6, 3), img_size=224,
                          patch_size=1, embed_dim=1024, depth=24, num_heads=16)


@register_model
def vit_large_r50_s32_384(pretrained=False, progress=True, **kwargs):
    """R50+ViT-L/S32 at 384: the four ResNet-50 stages (stride 32), width 1024, 24 blocks, 16 heads."""
    return _create_hybrid("vit_large_r50_s32_384", pretrained, progress, kwargs, (3, 4, 6, 3), img_size=384,
                          patch_size=1, embed_dim=1024, depth=24, num_heads=16)


@register_model
def vit_base_mci_224(pretrained=False, progress=True, **kwargs):
    """MobileCLIP-B's image tower: a convolutional stem (stride 16, 768 wide, no projection), ViT-B (12 blocks, 12
    heads) with position embeddings on the patch tokens only, at 224."""
    backbone = ConvStem(kwargs.get("in_chans", 3), channels=(768 // 4, 768 // 4, 768), stride=(4, 2, 2),
                        kernel_size=(4, 2, 2), padding=0, act_layer=nn.GELU)
    model_args = dict(img_size=224, patch_size=1, proj=False, embed_dim=768, depth=12, num_heads=12,
                      no_embed_class=True)
    return build_model(HybridVisionTransformer, "vit_base_mci_224", pretrained, progress=progress, backbone=backbone,
                       **{**model_args, **kwargs})


@register_model
def vit_base_r26_s32_224(pretrained=False, progress=True, **kwargs):
    """R26+ViT-B/S32 at 224: four stages of 2 bottlenecks (stride 32), width 768, 12 blocks, 12 heads."""
    return _create_hybrid("vit_base_r26_s32_224", pretrained, progress, kwargs, (2, 2, 2, 2), img_size=224,
                          patch_size=1, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_base_resnet26d_224(pretrained=False, progress=True, **kwargs):
    """ResNet-26-D (stride 32) + ViT-B at 224: width 768, 12 blocks, 12 heads, a token per backbone position."""
    return _create_resnet_hybrid("vit_base_resnet26d_224", pretrained, progress, kwargs, resnet26d, 4, img_size=224,
                                 patch_size=1, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_base_resnet50d_224(pretrained=False, progress=True, **kwargs):
    """ResNet-50-D (stride 32) + ViT-B at 224: width 768, 12 blocks, 12 heads, a token per backbone position."""
    return _create_resnet_hybrid("vit_base_resnet50d_224", pretrained, progress, kwargs, resnet50d, 4, img_size=224,
                                 patch_size=1, embed_dim=768, depth=12, num_heads=12)


@register_model
def vit_small_resnet26d_224(pretrained=False, progress=True, **kwargs):
    """ResNet-26-D (stride 32) + a small ViT at 224: width 768, 8 blocks, 8 heads, MLP ratio 3."""
    return _create_resnet_hybrid("vit_small_resnet26d_224", pretrained, progress, kwargs, resnet26d, 4, img_size=224,
                                 patch_size=1, embed_dim=768, depth=8, num_heads=8, mlp_ratio=3)


@register_model
def vit_small_resnet50d_s16_224(pretrained=False, progress=True, **kwargs):
    """ResNet-50-D's first three stages (stride 16) + a small ViT at 224: width 768, 8 blocks, 8 heads, MLP ratio
    3."""
    return _create_resnet_hybrid("vit_small_resnet50d_s16_224", pretrained, progress, kwargs, resnet50d, 3,
                                 img_size=224, patch_size=1, embed_dim=768, depth=8, num_heads=8, mlp_ratio=3)
