"""PP-LCNetV2 (PaddleClas 2022; the successor of Cui et al. 2021, "PP-LCNet: A Lightweight CPU Convolutional Neural
Network", its SSLD weights from Cui et al. 2021, "Beyond Self-Supervision: A Simple Yet Effective Network Distillation
Alternative to Improve Backbones"): lcnetv2_small, lcnetv2_base and lcnetv2_large.

A CPU-oriented chain of depthwise separable blocks: a 3x3 stride-2 stem and a first block, then four stages that
halve the resolution at their first block. In the last two stages the depthwise convolution is trained as parallel
depthwise branches of decreasing kernel size (5x5, 3x3 and, where the stride allows, 1x1), each with its BatchNorm,
summed before the activation; ``reparameterize`` folds them into one 5x5 convolution for inference. Squeeze-and-
excitation (third stage, with a two-step pointwise convolution) and shortcuts (fourth stage) are used sparingly, as
both cost latency on CPUs. The head pools, then widens to 1280 channels with a 1x1 convolution before the classifier.
Model names, module names, ``state_dict`` keys and (seeded) initialisation follow timm's ``lcnetv2`` module, so its
checkpoints load directly.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from ._attention import SEModule
from ._conv import create_conv2d
from ._layers import BatchNormAct2d, ConvNormAct, SelectAdaptivePool2d, create_act_layer
from ._reparam import biased_conv_like, fold_batchnorm, pad_kernel, sum_branches

__all__ = []

# timm's BatchNorm with its activation as this family builds it: in place
_BatchNormAct = partial(BatchNormAct2d, inplace=True)


class RepDepthwiseSeparable(nn.Module):
    """PP-LCNetV2's block: a depthwise ``dw_kernel_size`` convolution carrying the stride, optional
    squeeze-and-excitation (``se``, reduced by ``se_ratio``), a pointwise convolution to ``out_chs`` (``pw_conv``;
    with ``split_pw`` two, through ``pw_ratio`` of ``out_chs``), and the input added back where ``use_shortcut``
    is asked and the shape is kept.

    Without ``use_rep`` the depthwise convolution is one ConvNormAct with the activation (``dw_conv``). With it,
    the training form is a list of depthwise conv + BatchNorm branches of kernel sizes ``dw_kernel_size``,
    ``dw_kernel_size - 2``... down to 1 (``dw_conv_list``; the 1x1 branch only at stride 1), summed, then the
    activation (``dw_act``); ``reparameterize`` (or ``inference_mode``) turns them into one biased convolution
    (``dw_conv``) with the same eval-mode output.
    """

    def __init__(self, in_chs, out_chs, stride=1, dw_kernel_size=3, split_pw=False, use_rep=False, use_se=False,
                 use_shortcut=False, pw_ratio=0.5, se_ratio=0.25, act_layer=nn.ReLU, norm_layer=_BatchNormAct,
                 inference_mode=False):
        super().__init__()
        self.in_chs = in_chs
        self.out_chs = out_chs
        self.stride = stride
        self.dw_kernel_size = dw_kernel_size
        self.use_shortcut = use_shortcut and stride == 1 and in_chs == out_chs
        # plain attributes until a module takes the name: a folded dw_conv then comes last, as in timm's state_dict
        self.dw_conv_list = None
        self.dw_conv = None
        depthwise = partial(ConvNormAct, in_chs, in_chs, stride=stride, groups=in_chs, norm_layer=norm_layer,
                            act_layer=act_layer)
        if use_rep and inference_mode:
            self.dw_conv = create_conv2d(in_chs, in_chs, dw_kernel_size, stride, groups=in_chs, bias=True)
        elif use_rep:
            kernel_sizes = [k for k in range(dw_kernel_size, 0, -2) if k > 1 or stride == 1]
            self.dw_conv_list = nn.ModuleList([depthwise(k, apply_act=False) for k in kernel_sizes])
        else:
            self.dw_conv = depthwise(dw_kernel_size)
        self.dw_act = create_act_layer(act_layer, inplace=True) if use_rep else nn.Identity()
        if use_se:
            self.se = SEModule(in_chs, rd_channels=int(in_chs * se_ratio), act_layer=act_layer)
        else:
            self.se = nn.Identity()
        pointwise = partial(ConvNormAct, norm_layer=norm_layer, act_layer=act_layer)
        if split_pw:
            mid_chs = int(out_chs * pw_ratio)
            self.pw_conv = nn.Sequential(pointwise(in_chs, mid_chs), pointwise(mid_chs, out_chs))
        else:
            self.pw_conv = pointwise(in_chs, out_chs)

    def forward(self, x):
        shortcut = x
        if self.dw_conv is not None:
            x = self.dw_conv(x)
        else:
            x = self._sum_branches(x)
        x = self.dw_act(x)
        x = self.se(x)
        x = self.pw_conv(x)
        if self.use_shortcut:
            x = x + shortcut
        return x

    def _sum_branches(self, x):
        """The depthwise branches' outputs, added in order."""
        out = self.dw_conv_list[0](x)
        for branch in self.dw_conv_list[1:]:
            out = out + branch(x)
        return out

    def reparameterize(self):
        """Switch to the inference form: each branch's BatchNorm folded (with its running statistics) into its
        kernel, the kernels zero-padded to ``dw_kernel_size`` and summed into one biased depthwise convolution
        (``dw_conv``), the branches removed. Nothing to do without branches."""
        if self.dw_conv_list is None:
            return
        with torch.no_grad():
            folded = [fold_batchnorm(branch.conv.weight, branch.bn) for branch in self.dw_conv_list]
            kernel, bias = sum_branches([(pad_kernel(k, self.dw_kernel_size), b) for k, b in folded])
        self.dw_conv = biased_conv_like(self.dw_conv_list[0].conv, kernel, bias)
        del self.dw_conv_list
        self.dw_conv_list = None


# each stage's base width (doubled, times the scale), depthwise kernel size, split pointwise convolution,
# re-parameterisable depthwise branches, squeeze-and-excitation and shortcut
_STAGE_SETTINGS = (
    (64, 3, False, False, False, False),
    (128, 3, False, False, False, False),
    (256, 5, True, True, True, False),
    (512, 5, False, True, False, True),
)


class LCNetV2(nn.Module):
    """PP-LCNetV2: a stem (``stem``: a 3x3 stride-2 ConvNormAct to ``32 * scale`` channels and a stride-1 block to
    ``64 * scale``), four stages of ``depths[i]`` blocks (``stages``, widths ``128, 256, 512, 1024`` times
    ``scale``, rounded to multiples of 8), then global pooling (``global_pool``), a bias-free 1x1 convolution to
    ``head_hidden_size`` channels with the activation (``conv_head``, ``act2``; left out when ``head_hidden_size``
    is None), flattening, dropout ``drop_rate`` and the linear ``classifier``.

    ``num_features`` is the last stage's width, ``head_hidden_size`` the classifier's input width. Pooling must keep
    the width (not 'catavgmax'); '' leaves the map unpooled. ``inference_mode`` builds the re-parameterisable
    blocks in their folded form (for folded checkpoints).
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "classifier"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, scale=1.0, depths=(2, 2, 6, 2), in_chans=3, num_classes=1000, global_pool="avg",
                 head_hidden_size=1280, act_layer=nn.ReLU, norm_layer=_BatchNormAct, drop_rate=0.0,
                 inference_mode=False):
        super().__init__()
        self.in_chans = in_chans
        self.num_classes = num_classes
        self.drop_rate = drop_rate
        block = partial(RepDepthwiseSeparable, act_layer=act_layer, norm_layer=norm_layer,
                        inference_mode=inference_mode)
        stem_chs = _make_divisible(32 * scale, 8)
        prev_chs = _make_divisible(64 * scale, 8)
        self.stem = nn.Sequential(
            ConvNormAct(in_chans, stem_chs, 3, stride=2, norm_layer=norm_layer, act_layer=act_layer),
            block(stem_chs, prev_chs, stride=1, dw_kernel_size=3),
        )
        stages = []
        self.feature_info = []
        for stage_idx, (base_chs, kernel_size, split_pw, use_rep, use_se, use_shortcut) in enumerate(
                _STAGE_SETTINGS):
            out_chs = _make_divisible(base_chs * 2 * scale, 8)
            blocks = []
            for block_idx in range(depths[stage_idx]):
                blocks.append(block(prev_chs, out_chs, stride=2 if block_idx == 0 else 1, dw_kernel_size=kernel_size,
                                    split_pw=split_pw, use_rep=use_rep, use_se=use_se, use_shortcut=use_shortcut))
                prev_chs = out_chs
            stages.append(nn.Sequential(*blocks))
            self.feature_info.append(dict(num_chs=out_chs, reduction=2 ** (stage_idx + 2),
                                          module=f"stages.{stage_idx}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = prev_chs
        self.head_hidden_size = head_hidden_size or self.num_features
        self.global_pool = self._make_pool(global_pool)
        if head_hidden_size:
            self.conv_head = create_conv2d(self.num_features, self.head_hidden_size, 1, bias=False)
            self.act2 = create_act_layer(act_layer, inplace=True)
        else:
            self.conv_head = nn.Identity()
            self.act2 = nn.Identity()
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self.classifier = self._make_classifier(num_classes)
        self._init_weights()

    def _init_weights(self):
        """timm's scheme, in module order: He-normal (fan-out, ReLU gain) convolution weights and zero convolution
        biases, BatchNorms at the identity, zero linear biases (linear weights keep their default draws)."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    @staticmethod
    def _make_pool(global_pool):
        """Unflattened global pooling of type ``global_pool``; one that changes the width is refused (the head
        convolution is sized for the last stage's width)."""
        pool = SelectAdaptivePool2d(global_pool, flatten=False)
        if pool.feat_mult() != 1:
            raise ValueError(f"LCNetV2's head needs pooling that keeps the width, not '{global_pool}'")
        return pool

    def _make_classifier(self, num_classes):
        """A linear classifier for ``num_classes`` on ``head_hidden_size`` (0: an identity)."""
        return nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pre-logits features), after another pooling
        ``global_pool`` if given; the head convolution stays; the new layers take the model's training mode."""
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = self._make_pool(global_pool).train(self.training)
            self.flatten = (nn.Flatten(1) if global_pool else nn.Identity()).train(self.training)
        self.classifier = self._make_classifier(num_classes).train(self.training)

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling, the head convolution with its activation, flattening; then dropout and the classifier unless
        ``pre_logits``."""
        x = self.global_pool(x)
        x = self.conv_head(x)
        x = self.act2(x)
        x = self.flatten(x)
        if pre_logits:
            return x
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) and, unless
        ``intermediates_only``, the last map computed; ``stop_early`` skips the stages after the last one picked.
        ``norm`` is accepted for timm's API: there is no final norm."""
        return stage_intermediates(x, self.stem, self.stages, indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, when asked or when stages go, the head (its
        convolution, pooling and classifier); returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.conv_head = nn.Identity()
            self.act2 = nn.Identity()
            self.head_hidden_size = self.num_features
            self.reset_classifier(0, "")
        return take


def _create_lcnetv2(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless ``out_indices`` says otherwise, under
    timm's flattened names (``stem_0``, ``stages_2``...)."""
    return build_model(LCNetV2, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def lcnetv2_small(pretrained=False, progress=True, **kwargs):
    """PP-LCNetV2 small: scale 0.75, depths (2, 2, 4, 2)."""
    return _create_lcnetv2("lcnetv2_small", pretrained, progress, kwargs, scale=0.75, depths=(2, 2, 4, 2))


@register_model
def lcnetv2_base(pretrained=False, progress=True, **kwargs):
    """PP-LCNetV2 base: scale 1.0, depths (2, 2, 6, 2)."""
    return _create_lcnetv2("lcnetv2_base", pretrained, progress, kwargs, scale=1.0, depths=(2, 2, 6, 2))


@register_model
def lcnetv2_large(pretrained=False, progress=True, **kwargs):
    """PP-LCNetV2 large: scale 1.25, depths (2, 2, 8, 2)."""
    return _create_lcnetv2("lcnetv2_large", pretrained, progress, kwargs, scale=1.25, depths=(2, 2, 8, 2))
