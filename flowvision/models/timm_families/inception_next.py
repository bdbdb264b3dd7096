"""InceptionNeXt (Yu, Zhou, Yan and Wang 2024, "InceptionNeXt: When Inception Meets ConvNeXt"; arXiv 2023):
inception_next_atto, inception_next_tiny, inception_next_small and inception_next_base.

A ConvNeXt-shaped MetaFormer ("MetaNeXt"): a 4x4 patchify stem, four stages at strides 4, 8, 16 and 32 (each after
the first opens with a BatchNorm and a 2x2 stride-2 convolution), and blocks x + gamma * mlp(norm(mixer(x))). The
token mixer replaces ConvNeXt's large depthwise kernel by an Inception-style split of the channels: most pass
through untouched, and three small groups go through a 3x3 depthwise convolution and a 1xk and a kx1 depthwise band
(k = 11, or 9 for atto), which is cheaper and faster than a kxk kernel at the same reach. The norm is BatchNorm, the
MLP two 1x1 convolutions with GELU, and the head an MLP (pooling, linear to 3x the width, GELU, LayerNorm,
dropout, classifier). Model names, module names, ``state_dict`` keys and initialisation follow timm's
``inception_next`` module, so timm's (hub) checkpoints load directly.
"""
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._conv import create_conv2d, get_padding
from ._layers import ClassifierHeadApi, ConvMlp, SelectAdaptivePool2d, drop_path_module, init_linear_layers
from ._norm import LayerNorm
from .metaformer import _per_stage

__all__ = []


class InceptionDWConv2d(nn.Module):
    """The Inception depthwise token mixer: the channels split into an identity group and three groups of
    ``branch_ratio`` of them (rounded down), mixed by a ``square_kernel_size`` depthwise convolution
    (``dwconv_hw``), a 1 x ``band_kernel_size`` one (``dwconv_w``) and a ``band_kernel_size`` x 1 one (``dwconv_h``),
    all with biases, padded to keep the size (``dilation`` for a dilated stage), and concatenated back in that
    order."""

    def __init__(self, in_chs, square_kernel_size=3, band_kernel_size=11, branch_ratio=0.125, dilation=1):
        super().__init__()
        branch_chs = int(in_chs * branch_ratio)
        square_padding = get_padding(square_kernel_size, dilation=dilation)
        band_padding = get_padding(band_kernel_size, dilation=dilation)
        self.dwconv_hw = nn.Conv2d(branch_chs, branch_chs, square_kernel_size, padding=square_padding,
                                   dilation=dilation, groups=branch_chs)
        self.dwconv_w = nn.Conv2d(branch_chs, branch_chs, (1, band_kernel_size), padding=(0, band_padding),
                                  dilation=(1, dilation), groups=branch_chs)
        self.dwconv_h = nn.Conv2d(branch_chs, branch_chs, (band_kernel_size, 1), padding=(band_padding, 0),
                                  dilation=(dilation, 1), groups=branch_chs)
        self.split_indexes = (in_chs - 3 * branch_chs, branch_chs, branch_chs, branch_chs)

    def forward(self, x):
        x_id, x_hw, x_w, x_h = torch.split(x, self.split_indexes, dim=1)
        return torch.cat((x_id, self.dwconv_hw(x_hw), self.dwconv_w(x_w), self.dwconv_h(x_h)), dim=1)


def _head_pool(pool_type):
    """The MLP head's flattened global pooling; the head cannot go without one."""
    if not pool_type:
        raise ValueError("the MLP head cannot disable pooling: global_pool must be one of 'avg', 'max', 'avgmax' "
                         "or 'catavgmax'")
    return SelectAdaptivePool2d(pool_type, flatten=True)


class MlpClassifierHead(nn.Module):
    """InceptionNeXt's head: global pooling (flattened; it cannot be disabled), a linear layer to ``mlp_ratio``
    times ``in_features`` (``fc1``), ``act_layer``, ``norm_layer`` (LayerNorm, eps 1e-6), dropout (``drop``) and the
    classifier (``fc2``, an identity for ``num_classes=0``). ``num_features`` is the width the classifier sees.

    The head keeps its ``fc1``-``act``-``norm`` MLP through a ``reset`` unless ``reset_other`` removes it (pooling
    then feeds the classifier, and the input width may change to ``in_features``); while kept, the pooled width
    cannot change.
    """

    def __init__(self, in_features, num_classes=1000, pool_type="avg", mlp_ratio=3, act_layer=nn.GELU,
                 norm_layer=LayerNorm, drop=0.0, bias=True):
        super().__init__()
        self.in_features = in_features
        self.num_features = int(mlp_ratio * in_features)
        self.use_bias = bias
        self.global_pool = _head_pool(pool_type)
        self.fc1 = nn.Linear(in_features * self.global_pool.feat_mult(), self.num_features, bias=bias)
        self.act = act_layer()
        self.norm = norm_layer(self.num_features)
        self.fc2 = nn.Linear(self.num_features, num_classes, bias=bias) if num_classes > 0 else nn.Identity()
        self.drop = nn.Dropout(drop)

    def reset(self, num_classes, pool_type=None, reset_other=False, in_features=None):
        """A fresh ``fc2`` for ``num_classes`` (0: an identity), after new pooling ``pool_type`` if given;
        ``reset_other`` removes the MLP (see the class)."""
        keep_mlp = not reset_other and not isinstance(self.fc1, nn.Identity)
        if keep_mlp and in_features not in (None, self.in_features):
            raise ValueError("the head's input width can only change once its MLP is removed (reset_other)")
        if pool_type is not None:
            global_pool = _head_pool(pool_type)
            if keep_mlp and self.fc1.in_features != self.in_features * global_pool.feat_mult():
                raise ValueError(f"global_pool '{pool_type}' changes the pooled width, which needs the head's MLP "
                                 f"removed (reset_other)")
            self.global_pool = global_pool.train(self.training)
        if in_features is not None:
            self.in_features = in_features
        if reset_other:
            self.fc1 = nn.Identity().train(self.training)
            self.act = nn.Identity().train(self.training)
            self.norm = nn.Identity().train(self.training)
        if not keep_mlp:
            self.num_features = self.in_features * self.global_pool.feat_mult()
        self.fc2 = nn.Linear(self.num_features, num_classes, bias=self.use_bias) if num_classes > 0 else nn.Identity()
        self.fc2.train(self.training)

    def forward(self, x, pre_logits=False):
        x = self.global_pool(x)
        x = self.fc1(x)
        x = self.act(x)
        x = self.norm(x)
        x = self.drop(x)
        return x if pre_logits else self.fc2(x)


class MetaNeXtBlock(nn.Module):
    """x + drop_path(gamma * mlp(norm(token_mixer(x)))) on an (N, C, H, W) map: the token mixer (built with
    ``dilation``), ``norm_layer``, a 1x1-convolution MLP (``mlp_ratio`` times wide, ``act_layer``) and the layer
    scale ``gamma`` (``ls_init_value`` at first; none when it is 0 or None)."""

    def __init__(self, dim, dilation=1, token_mixer=InceptionDWConv2d, norm_layer=nn.BatchNorm2d, mlp_ratio=4,
                 act_layer=nn.GELU, ls_init_value=1e-6, drop_path=0.0):
        super().__init__()
        self.token_mixer = token_mixer(dim, dilation=dilation)
        self.norm = norm_layer(dim)
        self.mlp = ConvMlp(dim, int(mlp_ratio * dim), act_layer=act_layer)
        self.gamma = nn.Parameter(ls_init_value * torch.ones(dim)) if ls_init_value else None
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.token_mixer(x)
        x = self.norm(x)
        x = self.mlp(x)
        if self.gamma is not None:
            x = x.mul(self.gamma.reshape(1, -1, 1, 1))
        return self.drop_path(x) + shortcut


class MetaNeXtStage(nn.Module):
    """``downsample`` (``norm_layer``, then a 2x2 convolution with bias to ``out_chs`` at ``stride``; an identity
    where the stage neither strides nor changes its dilation), then ``depth`` blocks.

    ``dilation`` is (the downsampling convolution's, the blocks') dilation: where ``output_stride`` turns a stage's
    stride into dilation, the downsampling convolution keeps the size with TensorFlow's "same" padding.
    """

    def __init__(self, in_chs, out_chs, stride=2, depth=2, dilation=(1, 1), drop_path_rates=None, ls_init_value=1.0,
                 token_mixer=InceptionDWConv2d, act_layer=nn.GELU, norm_layer=nn.BatchNorm2d, mlp_ratio=4):
        super().__init__()
        if stride > 1 or dilation[0] != dilation[1]:
            if dilation[1] > 1:
                conv = create_conv2d(in_chs, out_chs, 2, stride, dilation[0], pad_type="same", bias=True)
            else:
                conv = nn.Conv2d(in_chs, out_chs, 2, stride=stride, dilation=dilation[0])
            self.downsample = nn.Sequential(norm_layer(in_chs), conv)
        else:
            self.downsample = nn.Identity()
        drop_path_rates = drop_path_rates or [0.0] * depth
        self.blocks = nn.Sequential(*[
            MetaNeXtBlock(out_chs, dilation=dilation[1], token_mixer=token_mixer, norm_layer=norm_layer,
                          mlp_ratio=mlp_ratio, act_layer=act_layer, ls_init_value=ls_init_value,
                          drop_path=drop_path_rates[i])
            for i in range(depth)
        ])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class MetaNeXt(ClassifierHeadApi, nn.Module):
    """A 4x4 stride-4 stem (convolution and ``norm_layer``), stages of MetaNeXt blocks (widths ``dims``, ``depths``
    blocks) and the ``MlpClassifierHead``.

    Per stage (one value, or one per stage): ``token_mixers`` (a class or partial taking the width and
    ``dilation``) and ``mlp_ratios``. ``output_stride`` (16, 8, 4) dilates the last stages instead of striding them.
    ``ls_init_value``: the layer scales' initial value (0 or None: no layer scale). ``drop_path_rate`` is the
    stochastic depth of the last block (rising linearly from 0 block by block), ``drop_rate`` the dropout
    before the classifier. Weights start as timm's: truncated normals (std 0.02) for convolutions and linear layers,
    zero biases.
    """

    default_cfg = {"first_conv": "stem.0", "classifier": "head.fc2"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", output_stride=32, depths=(3, 3, 9, 3),
                 dims=(96, 192, 384, 768), token_mixers=InceptionDWConv2d, norm_layer=nn.BatchNorm2d,
                 act_layer=nn.GELU, mlp_ratios=(4, 4, 4, 3), drop_rate=0.0, drop_path_rate=0.0, ls_init_value=1e-6):
        super().__init__()
        num_stages = len(depths)
        token_mixers = _per_stage(token_mixers, num_stages)
        mlp_ratios = _per_stage(mlp_ratios, num_stages)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.drop_rate = drop_rate
        self.feature_info = []
        self.stem = nn.Sequential(
            nn.Conv2d(in_chans, dims[0], kernel_size=4, stride=4),
            norm_layer(dims[0]),
        )

        drop_path_rates = [rates.tolist() for rates in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        stages = []
        prev_chs = dims[0]
        curr_stride = 4
        dilation = 1
        for i in range(num_stages):
            stride = 2 if i > 0 else 1
            if curr_stride >= output_stride and stride > 1:
                dilation *= stride
                stride = 1
            curr_stride *= stride
            first_dilation = 1 if dilation in (1, 2) else 2
            stages.append(MetaNeXtStage(
                prev_chs, dims[i], stride=stride, dilation=(first_dilation, dilation), depth=depths[i],
                drop_path_rates=drop_path_rates[i], ls_init_value=ls_init_value, token_mixer=token_mixers[i],
                act_layer=act_layer, norm_layer=norm_layer, mlp_ratio=mlp_ratios[i],
            ))
            prev_chs = dims[i]
            self.feature_info.append(dict(num_chs=prev_chs, reduction=curr_stride, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = prev_chs
        self.head = MlpClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop=drop_rate)
        self.head_hidden_size = self.head.num_features
        init_linear_layers(self, types=(nn.Conv2d, nn.Linear))

    def get_classifier(self):
        """The final linear layer (``head.fc2``)."""
        return self.head.fc2

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: an identity), after new pooling ``global_pool`` if given (and
        kept in ``global_pool``); ``reset_other`` also removes the head's MLP."""
        super().reset_classifier(num_classes, global_pool, reset_other=reset_other, in_features=self.num_features)

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps, and (unless ``intermediates_only``) the final map. ``norm`` changes nothing (there is no final norm,
        as in timm); ``stop_early`` skips the stages after the last one picked."""
        return stage_intermediates(x, self.stem, self.stages, indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks, and the head's MLP and classifier (average pooling
        kept) when asked or when stages go; returns the absolute indices (``prune_norm`` changes nothing, as in
        timm)."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "avg", reset_other=True)
        return take


def _create_inception_next(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's taps (the four stages unless ``out_indices`` says
    otherwise) under its flattened names (``stem_0``, ``stages_1``...)."""
    return build_model(MetaNeXt, variant, pretrained, progress=progress, **kwargs)


@register_model
def inception_next_atto(pretrained=False, progress=True, **kwargs):
    """InceptionNeXt-Atto: depths (2, 2, 6, 2), widths 40-320, 9-pixel bands over a quarter of the channels each."""
    config = dict(depths=(2, 2, 6, 2), dims=(40, 80, 160, 320),
                  token_mixers=partial(InceptionDWConv2d, band_kernel_size=9, branch_ratio=0.25))
    return _create_inception_next("inception_next_atto", pretrained, progress, **dict(config, **kwargs))


@register_model
def inception_next_tiny(pretrained=False, progress=True, **kwargs):
    """InceptionNeXt-T: depths (3, 3, 9, 3), widths 96-768."""
    config = dict(depths=(3, 3, 9, 3), dims=(96, 192, 384, 768), token_mixers=InceptionDWConv2d)
    return _create_inception_next("inception_next_tiny", pretrained, progress, **dict(config, **kwargs))


@register_model
def inception_next_small(pretrained=False, progress=True, **kwargs):
    """InceptionNeXt-S: depths (3, 3, 27, 3), widths 96-768."""
    config = dict(depths=(3, 3, 27, 3), dims=(96, 192, 384, 768), token_mixers=InceptionDWConv2d)
    return _create_inception_next("inception_next_small", pretrained, progress, **dict(config, **kwargs))


@register_model
def inception_next_base(pretrained=False, progress=True, **kwargs):
    """InceptionNeXt-B: depths (3, 3, 27, 3), widths 128-1024."""
    config = dict(depths=(3, 3, 27, 3), dims=(128, 256, 512, 1024), token_mixers=InceptionDWConv2d)
    return _create_inception_next("inception_next_base", pretrained, progress, **dict(config, **kwargs))
