"""RepViT (Wang et al. 2023, "RepViT: Revisiting Mobile CNN From ViT Perspective"): repvit_m0_9, repvit_m1,
repvit_m1_0, repvit_m1_1, repvit_m1_5, repvit_m2, repvit_m2_3 and repvit_m3.

A MobileNetV3-style convolutional network redesigned with the macro and micro choices of efficient vision
transformers. A stem of two stride-2 3x3 convolutions (GELU between them) gives a 4x smaller map; four stages follow
(each but the first opens with a downsampling block: a block, a stride-2 depthwise convolution, a 1x1 widening and
a feed-forward residual). Every block separates its token mixer from its channel mixer: the token mixer is a
re-parameterisable 3x3 depthwise convolution (a 3x3 branch, a 1x1 branch and the identity, summed; then BatchNorm),
squeeze-and-excitation on every other block, and the channel mixer a residual 1x1 feed-forward network (GELU). The
averaged features go to two BatchNorm + linear heads, one trained on the labels and one by distillation from a
teacher; their logits are averaged. Every convolution is followed by BatchNorm, so ``RepVit.fuse`` folds the model
into plain biased convolutions (the token mixer into one 3x3 depthwise convolution) and one linear head for
inference, as timm's does. The ``legacy`` variants (repvit_m1, repvit_m2, repvit_m3) keep the original release's
token mixer: its 1x1 branch has its own BatchNorm, and there is no BatchNorm after the sum. Model names, module
names, ``state_dict`` keys and (PyTorch's default) initialisation follow timm's ``repvit`` module, so its checkpoints
load directly.
"""
import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._attention import SEModule
from ._layers import distilled_output, get_act_layer, trunc_normal_
from ._reparam import batchnorm_scale_shift, biased_conv_like, fold_batchnorm, identity_kernel, pad_kernel

__all__ = []

_GLOBAL_POOLS = ("", "avg")


class ConvNorm(nn.Sequential):
    """A bias-free convolution (``c``) and BatchNorm (``bn``, its scale starting at ``bn_weight_init``): RepViT's
    every convolution, in a form ``fuse`` folds into one biased convolution."""

    def __init__(self, in_dim, out_dim, kernel_size=1, stride=1, padding=0, dilation=1, groups=1,
                 bn_weight_init=1.0):
        super().__init__()
        self.add_module("c", nn.Conv2d(in_dim, out_dim, kernel_size, stride, padding, dilation, groups, bias=False))
        self.add_module("bn", nn.BatchNorm2d(out_dim))
        nn.init.constant_(self.bn.weight, bn_weight_init)
        nn.init.constant_(self.bn.bias, 0)

    def fuse(self):
        """The biased convolution equal to this one in eval mode."""
        with torch.no_grad():
            kernel, bias = fold_batchnorm(self.c.weight, self.bn)
        return biased_conv_like(self.c, kernel, bias)


class NormLinear(nn.Sequential):
    """A classifier head: BatchNorm over the pooled features (``bn``), then a linear map (``l``) with
    truncated-normal weights (``std``) and zero bias; ``fuse`` folds the two into one linear map."""

    def __init__(self, in_dim, out_dim, bias=True, std=0.02):
        super().__init__()
        self.add_module("bn", nn.BatchNorm1d(in_dim))
        self.add_module("l", nn.Linear(in_dim, out_dim, bias=bias))
        trunc_normal_(self.l.weight, std=std)
        if bias:
            nn.init.constant_(self.l.bias, 0)

    def fuse(self):
        """The biased linear map equal to this head in eval mode."""
        with torch.no_grad():
            scale, shift = batchnorm_scale_shift(self.bn)
            weight = self.l.weight * scale[None, :]
            bias = self.l.weight @ shift
            if self.l.bias is not None:
                bias = bias + self.l.bias
            linear = nn.Linear(weight.shape[1], weight.shape[0]).to(weight.dtype)
            linear.weight.copy_(weight)
            linear.bias.copy_(bias)
        return linear


class RepVggDw(nn.Module):
    """RepViT's token mixer: a ``kernel_size`` depthwise ConvNorm (``conv``), a 1x1 depthwise convolution
    (``conv1``) and the input, summed, then BatchNorm (``bn``). The ``legacy`` form gives the 1x1 branch its own
    BatchNorm (a ConvNorm) and has no BatchNorm after the sum (``bn`` an identity).

    ``fuse`` folds the three branches (and the BatchNorms) into one biased depthwise convolution.
    """

    def __init__(self, ed, kernel_size, legacy=False):
        super().__init__()
        self.conv = ConvNorm(ed, ed, kernel_size, 1, (kernel_size - 1) // 2, groups=ed)
        if legacy:
            self.conv1 = ConvNorm(ed, ed, 1, 1, 0, groups=ed)
            self.bn = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(ed, ed, 1, 1, 0, groups=ed)
            self.bn = nn.BatchNorm2d(ed)
        self.dim = ed
        self.legacy = legacy

    def forward(self, x):
        return self.bn(self.conv(x) + self.conv1(x) + x)

    def fuse(self):
        """The biased depthwise convolution equal to this mixer in eval mode."""
        with torch.no_grad():
            kernel, bias = fold_batchnorm(self.conv.c.weight, self.conv.bn)
            if self.legacy:
                point_kernel, point_bias = fold_batchnorm(self.conv1.c.weight, self.conv1.bn)
            else:
                point_kernel, point_bias = self.conv1.weight, self.conv1.bias
            size = kernel.shape[-1]
            identity = identity_kernel(self.dim, 1, size, kernel.dtype)
            kernel = kernel + pad_kernel(point_kernel, size) + identity
            bias = bias + point_bias
            if not self.legacy:
                kernel, bias = fold_batchnorm(kernel, self.bn, bias)
        return biased_conv_like(self.conv.c, kernel, bias)


class RepVitMlp(nn.Module):
    """RepViT's channel mixer: a 1x1 ConvNorm widening to ``hidden_dim`` (``conv1``), the activation and a 1x1
    ConvNorm back to ``in_dim`` (``conv2``) whose BatchNorm scale starts at 0, so that a residual branch starts as
    nothing."""

    def __init__(self, in_dim, hidden_dim, act_layer):
        super().__init__()
        self.conv1 = ConvNorm(in_dim, hidden_dim, 1, 1, 0)
        self.act = act_layer()
        self.conv2 = ConvNorm(hidden_dim, in_dim, 1, 1, 0, bn_weight_init=0)

    def forward(self, x):
        x = self.conv1(x)
        x = self.act(x)
        x = self.conv2(x)
        return x


class RepViTBlock(nn.Module):
    """A RepViT block: the token mixer (``token_mixer``), squeeze-and-excitation to a quarter of the channels where
    ``use_se`` (``se``, else an identity), then the channel mixer (``channel_mixer``, expanding by ``mlp_ratio``)
    as a residual branch."""

    def __init__(self, in_dim, mlp_ratio, kernel_size, use_se, act_layer, legacy=False):
        super().__init__()
        self.token_mixer = RepVggDw(in_dim, kernel_size, legacy)
        self.se = SEModule(in_dim, 0.25) if use_se else nn.Identity()
        self.channel_mixer = RepVitMlp(in_dim, in_dim * mlp_ratio, act_layer)

    def forward(self, x):
        x = self.token_mixer(x)
        x = self.se(x)
        return x + self.channel_mixer(x)


class RepVitStem(nn.Module):
    """Two stride-2 3x3 ConvNorms (to ``out_chs / 2``, then ``out_chs``; ``conv1``, ``conv2``) with the activation
    between them (``act1``): a 4x smaller map."""

    def __init__(self, in_chs, out_chs, act_layer):
        super().__init__()
        self.conv1 = ConvNorm(in_chs, out_chs // 2, 3, 2, 1)
        self.act1 = act_layer()
        self.conv2 = ConvNorm(out_chs // 2, out_chs, 3, 2, 1)
        self.stride = 4

    def forward(self, x):
        x = self.conv1(x)
        x = self.act1(x)
        x = self.conv2(x)
        return x


class RepVitDownsample(nn.Module):
    """The block that opens a stage: a RepViT block without squeeze-and-excitation (``pre_block``), a stride-2
    depthwise ConvNorm (``spatial_downsample``), a 1x1 ConvNorm to ``out_dim`` (``channel_downsample``) and a
    residual channel mixer (``ffn``)."""

    def __init__(self, in_dim, mlp_ratio, out_dim, kernel_size, act_layer, legacy=False):
        super().__init__()
        self.pre_block = RepViTBlock(in_dim, mlp_ratio, kernel_size, use_se=False, act_layer=act_layer, legacy=legacy)
        self.spatial_downsample = ConvNorm(in_dim, in_dim, kernel_size, stride=2, padding=(kernel_size - 1) // 2,
                                           groups=in_dim)
        self.channel_downsample = ConvNorm(in_dim, out_dim, 1, 1)
        self.ffn = RepVitMlp(out_dim, out_dim * mlp_ratio, act_layer)

    def forward(self, x):
        x = self.pre_block(x)
        x = self.spatial_downsample(x)
        x = self.channel_downsample(x)
        return x + self.ffn(x)


class RepVitClassifier(nn.Module):
    """The classifier: dropout (``head_drop``), a NormLinear (``head``) and, with ``distillation``, a second one
    trained by distillation (``head_dist``); identities for ``num_classes=0``.

    A distilled classifier returns the average of its heads' logits, or both (head, distillation head) in train
    mode after ``distilled_training`` is set. ``fuse`` folds it into one linear map (the heads averaged).
    """

    def __init__(self, dim, num_classes, distillation=False, drop=0.0):
        super().__init__()
        self.head_drop = nn.Dropout(drop)
        self.head = NormLinear(dim, num_classes) if num_classes > 0 else nn.Identity()
        self.distillation = distillation
        self.distilled_training = False
        self.num_classes = num_classes
        if distillation:
            self.head_dist = NormLinear(dim, num_classes) if num_classes > 0 else nn.Identity()

    def forward(self, x):
        x = self.head_drop(x)
        if not self.distillation:
            return self.head(x)
        x, x_dist = self.head(x), self.head_dist(x)
        return distilled_output(self, x, x_dist)

    def fuse(self):
        """The linear map equal to this classifier in eval mode (an identity without classes)."""
        if self.num_classes <= 0:
            return nn.Identity()
        head = self.head.fuse()
        if self.distillation:
            head_dist = self.head_dist.fuse()
            with torch.no_grad():
                head.weight.copy_((head.weight + head_dist.weight) / 2)
                head.bias.copy_((head.bias + head_dist.bias) / 2)
        return head


class RepVitStage(nn.Module):
    """A stage: a ``RepVitDownsample`` from ``in_dim`` to ``out_dim`` where ``downsample`` (else an identity, the
    widths equal) and ``depth`` RepViT blocks (``blocks``), squeeze-and-excitation on the first and every other
    one."""

    def __init__(self, in_dim, out_dim, depth, mlp_ratio, act_layer, kernel_size=3, downsample=True, legacy=False):
        super().__init__()
        if downsample:
            self.downsample = RepVitDownsample(in_dim, mlp_ratio, out_dim, kernel_size, act_layer=act_layer,
                                               legacy=legacy)
        elif in_dim != out_dim:
            raise ValueError(f"a stage without downsampling keeps its width: got {in_dim} to {out_dim} channels")
        else:
            self.downsample = nn.Identity()
        self.blocks = nn.Sequential(*[
            RepViTBlock(out_dim, mlp_ratio, kernel_size, index % 2 == 0, act_layer, legacy) for index in range(depth)
        ])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


def _fuse_children(module):
    """Replace each child of ``module`` that has ``fuse`` by its fused form, recursively (into the fused forms
    too), as timm's ``RepVit.fuse`` walks the tree."""
    for name, child in list(module.named_children()):
        if hasattr(child, "fuse"):
            child = child.fuse()
            setattr(module, name, child)
        _fuse_children(child)


class RepVitApi:
    """timm's model API of RepViT and of the networks built on its stem-stages-classifier layout (iFormer): a
    ``stem``, ``stages``, average pooling, ``head_drop`` and a ``classifier_class`` head, distilled or not, that
    ``fuse()`` folds with the rest."""

    classifier_class = RepVitClassifier

    @staticmethod
    def _check_pool(global_pool):
        """Refuse pooling other than 'avg' or '' (timm's head averages or leaves the map)."""
        if global_pool not in _GLOBAL_POOLS:
            raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")

    def get_classifier(self):
        """The classifier (both heads where distilled; one linear map once fused)."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None, distillation=False):
        """A fresh classifier for ``num_classes`` (0: identities), with a distillation head only where
        ``distillation`` (as timm's, which drops it by default); ``global_pool`` ('avg' or '') changes the pooling
        too. The new classifier takes the model's dtype and training mode."""
        self.num_classes = num_classes
        self.distillation = distillation
        if global_pool is not None:
            self._check_pool(global_pool)
            self.global_pool = global_pool
        self.head = self.classifier_class(self.head_hidden_size, num_classes, distillation)
        self.head.to(next(self.stem.parameters()).dtype)
        self.head.train(self.training)

    def set_distilled_training(self, enable=True):
        """Whether train mode returns both heads' logits (for a distillation loss) instead of their average."""
        self.head.distilled_training = enable

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Average pooling (with 'avg') and dropout, then the classifier unless ``pre_logits``."""
        if self.global_pool == "avg":
            x = x.mean((2, 3))
        x = self.head_drop(x)
        if pre_logits:
            return x
        return self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) and, unless
        ``intermediates_only``, the last map; ``stop_early`` skips the stages after the last one picked. ``norm``
        changes nothing: there is no final norm (timm's argument)."""
        return stage_intermediates(x, self.stem, self.stages, indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_head`` or when stages go, the
        classifier (the features then end at the last stage kept); returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def fuse(self):
        """Switch to the inference form, in place, as timm's: every ConvNorm folded into a biased convolution,
        every re-parameterisable mixer into one depthwise convolution and the classifier into one linear map
        (train mode then changes nothing but dropout and stochastic depth). Returns the model."""
        _fuse_children(self)
        return self


class RepVit(RepVitApi, nn.Module):
    """RepViT: the stem (``stem``), one ``RepVitStage`` per entry of ``embed_dim`` with ``depth`` blocks each (all
    but the first downsampling by 2; ``stages``), average pooling, dropout (``head_drop``) and the classifier
    (``head``, two heads with ``distillation``).

    ``mlp_ratio`` (one for all, or per stage) is the channel mixers' expansion, ``kernel_size`` the depthwise
    convolutions', ``act_layer`` the activation (a class or timm's name). ``global_pool``: 'avg' or '' (the
    unpooled map); ``num_classes=0`` gives the pooled features. ``img_size`` is timm's argument; any image size runs.
    ``fuse()`` switches the model to its inference form in place.
    """

    default_cfg = {"first_conv": "stem.conv1.c", "classifier": ("head.head.l", "head.head_dist.l")}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, img_size=224, embed_dim=(48,), depth=(2,), mlp_ratio=2, global_pool="avg",
                 kernel_size=3, num_classes=1000, act_layer=nn.GELU, distillation=True, drop_rate=0.0,
                 legacy=False):
        super().__init__()
        self._check_pool(global_pool)
        num_stages = len(embed_dim)
        if len(depth) != num_stages:
            raise ValueError(f"depth {tuple(depth)} should give one block count per stage ({num_stages})")
        act_layer = get_act_layer(act_layer)
        mlp_ratios = tuple(mlp_ratio) if isinstance(mlp_ratio, (tuple, list)) else (mlp_ratio,) * num_stages
        self.global_pool = global_pool
        self.embed_dim = embed_dim
        self.num_classes = num_classes
        self.distillation = distillation
        self.in_chans = in_chans
        self.stem = RepVitStem(in_chans, embed_dim[0], act_layer)
        stride = self.stem.stride
        self.feature_info = []
        stages = []
        in_dim = embed_dim[0]
        for i in range(num_stages):
            downsample = i > 0
            stages.append(RepVitStage(in_dim, embed_dim[i], depth[i], mlp_ratio=mlp_ratios[i], act_layer=act_layer,
                                      kernel_size=kernel_size, downsample=downsample, legacy=legacy))
            stride *= 2 if downsample else 1
            self.feature_info.append(dict(num_chs=embed_dim[i], reduction=stride, module=f"stages.{i}"))
            in_dim = embed_dim[i]
        self.stages = nn.Sequential(*stages)
        self.num_features = self.head_hidden_size = embed_dim[-1]
        self.head_drop = nn.Dropout(drop_rate)
        self.head = RepVitClassifier(embed_dim[-1], num_classes, distillation)

def _create_repvit(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless
    ``out_indices`` says otherwise, under timm's flattened names (``stages_0``...)."""
    return build_model(RepVit, variant, pretrained, progress=progress, **kwargs)


@register_model
def repvit_m0_9(pretrained=False, progress=True, **kwargs):
    """RepViT-M0.9: widths 48, 96, 192, 384, blocks 2, 2, 14, 2."""
    return _create_repvit("repvit_m0_9", pretrained, progress, **{**dict(embed_dim=(48, 96, 192, 384),
                                                                          depth=(2, 2, 14, 2)), **kwargs})


@register_model
def repvit_m1(pretrained=False, progress=True, **kwargs):
    """RepViT-M1 (the original release's token mixer): widths 48, 96, 192, 384, blocks 2, 2, 14, 2."""
    return _create_repvit("repvit_m1", pretrained, progress, **{**dict(embed_dim=(48, 96, 192, 384),
                                                                        depth=(2, 2, 14, 2), legacy=True), **kwargs})


@register_model
def repvit_m1_0(pretrained=False, progress=True, **kwargs):
    """RepViT-M1.0: widths 56, 112, 224, 448, blocks 2, 2, 14, 2."""
    return _create_repvit("repvit_m1_0", pretrained, progress, **{**dict(embed_dim=(56, 112, 224, 448),
                                                                          depth=(2, 2, 14, 2)), **kwargs})


@register_model
def repvit_m1_1(pretrained=False, progress=True, **kwargs):
    """RepViT-M1.1: widths 64, 128, 256, 512, blocks 2, 2, 12, 2."""
    return _create_repvit("repvit_m1_1", pretrained, progress, **{**dict(embed_dim=(64, 128, 256, 512),
                                                                          depth=(2, 2, 12, 2)), **kwargs})


@register_model
def repvit_m1_5(pretrained=False, progress=True, **kwargs):
    """RepViT-M1.5: widths 64, 128, 256, 512, blocks 4, 4, 24, 4."""
    return _create_repvit("repvit_m1_5", pretrained, progress, **{**dict(embed_dim=(64, 128, 256, 512),
                                                                          depth=(4, 4, 24, 4)), **kwargs})


@register_model
def repvit_m2(pretrained=False, progress=True, **kwargs):
    """RepViT-M2 (the original release's token mixer): widths 64, 128, 256, 512, blocks 2, 2, 12, 2."""
    return _create_repvit("repvit_m2", pretrained, progress, **{**dict(embed_dim=(64, 128, 256, 512),
                                                                        depth=(2, 2, 12, 2), legacy=True), **kwargs})


@register_model
def repvit_m2_3(pretrained=False, progress=True, **kwargs):
    """RepViT-M2.3: widths 80, 160, 320, 640, blocks 6, 6, 34, 2."""
    return _create_repvit("repvit_m2_3", pretrained, progress, **{**dict(embed_dim=(80, 160, 320, 640),
                                                                          depth=(6, 6, 34, 2)), **kwargs})


@register_model
def repvit_m3(pretrained=False, progress=True, **kwargs):
    """RepViT-M3 (the original release's token mixer): widths 64, 128, 256, 512, blocks 4, 4, 18, 2."""
    return _create_repvit("repvit_m3", pretrained, progress, **{**dict(embed_dim=(64, 128, 256, 512),
                                                                        depth=(4, 4, 18, 2), legacy=True), **kwargs})
