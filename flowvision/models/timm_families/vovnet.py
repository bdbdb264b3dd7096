"""VoVNet (Lee et al. 2019, "An Energy and GPU-Computation Efficient Backbone Network for Real-Time Object
Detection"), in its V2 form with residual blocks and effective squeeze-and-excitation (Lee & Park 2020, "CenterMask:
Real-Time Anchor-Free Instance Segmentation"): ese_vovnet19b_dw, ese_vovnet39b and ese_vovnet57b; and, without
published weights (built to train from scratch), the V1 models vovnet39a and vovnet57a, the narrower
ese_vovnet19b_slim and ese_vovnet19b_slim_dw, the deeper ese_vovnet99b, eca_vovnet39b (efficient channel attention,
Wang et al. 2020, "ECA-Net") and ese_vovnet39b_evos (EvoNorm-S0 in place of BatchNorm and ReLU, Liu et al. 2020,
"Evolving Normalization-Activation Layers").

A densely connected network that aggregates once: each one-shot aggregation (OSA) block runs a chain of 3x3
convolutions and concatenates the block's input with every link's output only at the end, where a 1x1 convolution
mixes them (DenseNet concatenates at every layer, which costs memory traffic). A stem of three 3x3 convolutions
reduces the image by 4; four stages follow, the last three opening with a 3x3 stride-2 max pool. Every block of a
stage but the first adds its input back, and the last block of each stage ends in effective squeeze-and-excitation
(one 1x1 convolution on the pooled map and a hard-sigmoid gate, keeping every channel; ECA's 1-d convolution across
the channel means in ``eca_vovnet39b``). The V1 models have neither the residuals nor the attention. The ``_dw``
models make the chain's and stem's convolutions depthwise-separable, narrowing the block input with a 1x1
convolution first. Model
names, module names, ``state_dict`` keys and initialisation follow timm's ``vovnet`` module, so its checkpoints load
directly.
"""
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._attention import EcaModule, EffectiveSEModule
from ._conv import create_conv2d
from ._layers import (BatchNormAct2d, ClassifierHead, ClassifierHeadApi, ConvNormAct, _norm_act_layer,
                      drop_path_module)
from .resnetv2 import EvoNorm2dS0

__all__ = []

# timm's BatchNormAct2d, whose activation runs in place
_batch_norm_act = partial(BatchNormAct2d, inplace=True)

MODEL_CFGS = {
    "vovnet39a": dict(stem_chs=[64, 64, 128], stage_conv_chs=[128, 160, 192, 224], stage_out_chs=[256, 512, 768, 1024],
                      layer_per_block=5, block_per_stage=[1, 1, 2, 2], residual=False, depthwise=False, attn=""),
    "vovnet57a": dict(stem_chs=[64, 64, 128], stage_conv_chs=[128, 160, 192, 224], stage_out_chs=[256, 512, 768, 1024],
                      layer_per_block=5, block_per_stage=[1, 1, 4, 3], residual=False, depthwise=False, attn=""),
    "ese_vovnet19b_slim_dw": dict(stem_chs=[64, 64, 64], stage_conv_chs=[64, 80, 96, 112],
                                  stage_out_chs=[112, 256, 384, 512], layer_per_block=3, block_per_stage=[1, 1, 1, 1],
                                  residual=True, depthwise=True, attn="ese"),
    "ese_vovnet19b_dw": dict(stem_chs=[64, 64, 64], stage_conv_chs=[128, 160, 192, 224],
                             stage_out_chs=[256, 512, 768, 1024], layer_per_block=3, block_per_stage=[1, 1, 1, 1],
                             residual=True, depthwise=True, attn="ese"),
    "ese_vovnet19b_slim": dict(stem_chs=[64, 64, 128], stage_conv_chs=[64, 80, 96, 112],
                               stage_out_chs=[112, 256, 384, 512], layer_per_block=3, block_per_stage=[1, 1, 1, 1],
                               residual=True, depthwise=False, attn="ese"),
    "ese_vovnet39b": dict(stem_chs=[64, 64, 128], stage_conv_chs=[128, 160, 192, 224],
                          stage_out_chs=[256, 512, 768, 1024], layer_per_block=5, block_per_stage=[1, 1, 2, 2],
                          residual=True, depthwise=False, attn="ese"),
    "ese_vovnet57b": dict(stem_chs=[64, 64, 128], stage_conv_chs=[128, 160, 192, 224],
                          stage_out_chs=[256, 512, 768, 1024], layer_per_block=5, block_per_stage=[1, 1, 4, 3],
                          residual=True, depthwise=False, attn="ese"),
    "ese_vovnet99b": dict(stem_chs=[64, 64, 128], stage_conv_chs=[128, 160, 192, 224],
                          stage_out_chs=[256, 512, 768, 1024], layer_per_block=5, block_per_stage=[1, 3, 9, 3],
                          residual=True, depthwise=False, attn="ese"),
    "eca_vovnet39b": dict(stem_chs=[64, 64, 128], stage_conv_chs=[128, 160, 192, 224],
                          stage_out_chs=[256, 512, 768, 1024], layer_per_block=5, block_per_stage=[1, 1, 2, 2],
                          residual=True, depthwise=False, attn="eca"),
}
# the EvoNorm model is ese_vovnet39b with another norm
MODEL_CFGS["ese_vovnet39b_evos"] = MODEL_CFGS["ese_vovnet39b"]


_ATTN_LAYERS = {"ese": EffectiveSEModule, "eca": EcaModule}


class SeparableConvNormAct(nn.Module):
    """A depthwise ``kernel_size`` convolution (``conv_dw``, carrying the stride), a pointwise 1x1 convolution
    (``conv_pw``), both bias-free, then a norm with its activation (``bn``): timm's ``SeparableConvNormAct``, a
    cheap stand-in for a full convolution."""

    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, norm_layer=nn.BatchNorm2d,
                 act_layer=nn.ReLU):
        super().__init__()
        self.conv_dw = create_conv2d(in_channels, in_channels, kernel_size, stride=stride, groups=in_channels)
        self.conv_pw = create_conv2d(in_channels, out_channels, 1)
        self.bn = _norm_act_layer(norm_layer, act_layer)(out_channels)

    def forward(self, x):
        x = self.conv_dw(x)
        x = self.conv_pw(x)
        x = self.bn(x)
        return x


class SequentialAppendList(nn.Sequential):
    """The chain of an OSA block: each convolution takes the previous one's output; ``forward(x, outputs)`` appends
    every output to ``outputs`` (which holds the block's input) and returns them all concatenated along the
    channels."""

    def forward(self, x, outputs):
        for layer in self:
            x = layer(x)
            outputs.append(x)
        return torch.cat(outputs, dim=1)


class OsaBlock(nn.Module):
    """One-shot aggregation: ``layer_per_block`` 3x3 convolutions to ``mid_chs`` in a chain (``conv_mid``;
    depthwise-separable with ``depthwise``, after a 1x1 convolution ``conv_reduction`` to ``mid_chs`` where the
    input's width differs), the input and every link's output concatenated and mixed by a 1x1 convolution to
    ``out_chs`` (``conv_concat``), then attention (``attn``: 'ese', 'eca' or '' for none), stochastic depth
    (``drop_path``, a module or None) and, with ``residual``, the input added."""

    def __init__(self, in_chs, mid_chs, out_chs, layer_per_block, residual=False, depthwise=False, attn="",
                 norm_layer=_batch_norm_act, act_layer=nn.ReLU, drop_path=None):
        super().__init__()
        self.residual = residual
        self.depthwise = depthwise
        conv_kwargs = dict(norm_layer=norm_layer, act_layer=act_layer)
        if depthwise and in_chs != mid_chs:
            if residual:
                raise ValueError("a depthwise OSA block that narrows its input cannot be residual")
            self.conv_reduction = ConvNormAct(in_chs, mid_chs, 1, **conv_kwargs)
        else:
            self.conv_reduction = None
        mid_convs = []
        next_in_chs = in_chs
        for _ in range(layer_per_block):
            if depthwise:
                mid_convs.append(SeparableConvNormAct(mid_chs, mid_chs, **conv_kwargs))
            else:
                mid_convs.append(ConvNormAct(next_in_chs, mid_chs, 3, **conv_kwargs))
            next_in_chs = mid_chs
        self.conv_mid = SequentialAppendList(*mid_convs)
        self.conv_concat = ConvNormAct(in_chs + layer_per_block * mid_chs, out_chs, **conv_kwargs)
        if attn and attn not in _ATTN_LAYERS:
            raise ValueError(f"unknown attn '{attn}': expected '' or one of {sorted(_ATTN_LAYERS)}")
        self.attn = _ATTN_LAYERS[attn](out_chs) if attn else None
        self.drop_path = drop_path

    def forward(self, x):
        outputs = [x]
        if self.conv_reduction is not None:
            x = self.conv_reduction(x)
        x = self.conv_mid(x, outputs)
        x = self.conv_concat(x)
        if self.attn is not None:
            x = self.attn(x)
        if self.drop_path is not None:
            x = self.drop_path(x)
        if self.residual:
            x = x + outputs[0]
        return x


class OsaStage(nn.Module):
    """A 3x3 stride-2 max pool (``pool``, rounding up; none without ``downsample``), then ``block_per_stage`` OSA
    blocks (``blocks``): all but the first residual (with ``residual``), only the last with attention ``attn``;
    ``drop_path_rates`` gives each block's stochastic depth."""

    def __init__(self, in_chs, mid_chs, out_chs, block_per_stage, layer_per_block, downsample=True, residual=True,
                 depthwise=False, attn="ese", norm_layer=_batch_norm_act, act_layer=nn.ReLU, drop_path_rates=None):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True) if downsample else None
        blocks = []
        for i in range(block_per_stage):
            rate = drop_path_rates[i] if drop_path_rates is not None else 0.0
            blocks.append(OsaBlock(in_chs, mid_chs, out_chs, layer_per_block, residual=residual and i > 0,
                                   depthwise=depthwise, attn=attn if i == block_per_stage - 1 else "",
                                   norm_layer=norm_layer, act_layer=act_layer,
                                   drop_path=drop_path_module(rate) if rate > 0.0 else None))
            in_chs = out_chs
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        if self.pool is not None:
            x = self.pool(x)
        x = self.blocks(x)
        return x


class VovNet(ClassifierHeadApi, nn.Module):
    """VoVNet: a stem of three 3x3 convolutions (``stem``: the first strides 2, the last by ``stem_stride // 2``;
    the last two depthwise-separable with ``depthwise``), four OSA stages (``stages``; each but a stride-4 stem's
    first opens with a max pool) and the classifier head (``head``).

    ``cfg`` is timm's model configuration (``stem_chs``, ``stage_conv_chs``, ``stage_out_chs``,
    ``layer_per_block``, ``block_per_stage``, ``residual``, ``depthwise``, ``attn``, optionally ``stem_stride``);
    keyword arguments named like its keys override them. Only ``output_stride`` 32 is supported (as in timm).
    ``drop_path_rate`` is the stochastic depth of the last block, rising linearly from 0 at the first.
    ``norm_layer`` is every convolution's norm with ``act_layer`` (BatchNorm and ReLU), or a norm with its own
    nonlinearity (``EvoNorm2dS0``), which then replaces both.
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, cfg, in_chans=3, num_classes=1000, global_pool="avg", output_stride=32,
                 norm_layer=_batch_norm_act, act_layer=nn.ReLU, drop_rate=0.0, drop_path_rate=0.0, **kwargs):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"VovNet supports only output_stride 32, got {output_stride}")
        unknown = set(kwargs) - set(cfg) - {"stem_stride"}
        if unknown:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected keyword argument(s): {sorted(unknown)}")
        cfg = dict(cfg, **kwargs)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        stem_stride = cfg.get("stem_stride", 4)
        stem_chs = cfg["stem_chs"]
        stage_conv_chs = cfg["stage_conv_chs"]
        stage_out_chs = cfg["stage_out_chs"]
        block_per_stage = cfg["block_per_stage"]
        conv_kwargs = dict(norm_layer=norm_layer, act_layer=act_layer)
        conv_type = SeparableConvNormAct if cfg["depthwise"] else ConvNormAct
        self.stem = nn.Sequential(
            ConvNormAct(in_chans, stem_chs[0], 3, stride=2, **conv_kwargs),
            conv_type(stem_chs[0], stem_chs[1], 3, stride=1, **conv_kwargs),
            conv_type(stem_chs[1], stem_chs[2], 3, stride=stem_stride // 2, **conv_kwargs),
        )
        self.feature_info = [dict(num_chs=stem_chs[1], reduction=2, module=f"stem.{1 if stem_stride == 4 else 2}")]
        reduction = stem_stride
        rates = [r.tolist() for r in torch.linspace(0, drop_path_rate, sum(block_per_stage)).split(block_per_stage)]
        in_chs = stem_chs[-1:] + stage_out_chs[:-1]
        stages = []
        for i in range(4):
            downsample = stem_stride == 2 or i > 0
            stages.append(OsaStage(in_chs[i], stage_conv_chs[i], stage_out_chs[i], block_per_stage[i],
                                   cfg["layer_per_block"], downsample=downsample, residual=cfg["residual"],
                                   depthwise=cfg["depthwise"], attn=cfg["attn"], drop_path_rates=rates[i],
                                   **conv_kwargs))
            self.num_features = stage_out_chs[i]
            reduction *= 2 if downsample else 1
            self.feature_info.append(dict(num_chs=self.num_features, reduction=reduction, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights()

    def _init_weights(self):
        """timm's initialisation, in module order: convolution weights He-normal (fan-out, ReLU gain; their biases
        keep PyTorch's default), the classifier's bias 0 (its weight PyTorch's default)."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier on the ``num_features`` channels (fewer after pruning) for ``num_classes`` (0: the
        pooled features), after another pooling ``global_pool`` if given."""
        self.head.in_features = self.num_features
        super().reset_classifier(num_classes, global_pool)

    def forward_features(self, x):
        """The map after the last stage (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs picked by ``indices`` (None: all five, n: the last n, or a list) among the stem's before its
        last convolution and the four stages', and (unless ``intermediates_only``) the last stage's output;
        ``stop_early`` skips the stages after the last one picked. ``norm`` changes nothing: there is no final norm
        (timm's argument)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(1 + len(self.stages), indices)
        intermediates = []
        x = self.stem[:-1](x)
        if 0 in take:
            intermediates.append(x)
        x = self.stem[-1](x)
        stages = self.stages[:max(take)] if stop_early else self.stages
        for i, stage in enumerate(stages, start=1):
            x = stage(x)
            if i in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last output ``indices`` picks (see ``forward_intermediates``; the stem's last
        convolution too where only the stem's output is kept) and, with ``prune_head`` or when stages go, the
        classifier and pooling; returns the absolute indices."""
        take = take_indices(1 + len(self.stages), indices)
        last = max(take)
        prune_end = last < len(self.stages)
        self.stages = self.stages[:last]
        if last == 0:
            self.stem[-1] = nn.Identity()
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take


def _create_vovnet(variant, pretrained, progress, **kwargs):
    """Build a registered variant from its configuration; ``features_only`` gives timm's five taps (the stem's
    stride-2 convolution, the four stages) unless ``out_indices`` says otherwise, under timm's flattened names
    (``stem_1``, ``stages_0``...)."""
    return build_model(VovNet, variant, pretrained, progress=progress, cfg=MODEL_CFGS[variant], **kwargs)


@register_model
def ese_vovnet19b_dw(pretrained=False, progress=True, **kwargs):
    """eSE-VoVNet-19b with depthwise-separable convolutions."""
    return _create_vovnet("ese_vovnet19b_dw", pretrained, progress, **kwargs)


@register_model
def ese_vovnet39b(pretrained=False, progress=True, **kwargs):
    """eSE-VoVNet-39b."""
    return _create_vovnet("ese_vovnet39b", pretrained, progress, **kwargs)


@register_model
def ese_vovnet57b(pretrained=False, progress=True, **kwargs):
    """eSE-VoVNet-57b."""
    return _create_vovnet("ese_vovnet57b", pretrained, progress, **kwargs)


@register_model
def vovnet39a(pretrained=False, progress=True, **kwargs):
    """VoVNet-39 (V1): no residuals, no attention."""
    return _create_vovnet("vovnet39a", pretrained, progress, **kwargs)


@register_model
def vovnet57a(pretrained=False, progress=True, **kwargs):
    """VoVNet-57 (V1): no residuals, no attention."""
    return _create_vovnet("vovnet57a", pretrained, progress, **kwargs)


@register_model
def ese_vovnet19b_slim_dw(pretrained=False, progress=True, **kwargs):
    """eSE-VoVNet-19b-slim with depthwise-separable convolutions: half the chain widths, stages of 112-512."""
    return _create_vovnet("ese_vovnet19b_slim_dw", pretrained, progress, **kwargs)


@register_model
def ese_vovnet19b_slim(pretrained=False, progress=True, **kwargs):
    """eSE-VoVNet-19b-slim: half the chain widths, stages of 112-512 channels."""
    return _create_vovnet("ese_vovnet19b_slim", pretrained, progress, **kwargs)


@register_model
def ese_vovnet99b(pretrained=False, progress=True, **kwargs):
    """eSE-VoVNet-99b: 1-3-9-3 blocks."""
    return _create_vovnet("ese_vovnet99b", pretrained, progress, **kwargs)


@register_model
def eca_vovnet39b(pretrained=False, progress=True, **kwargs):
    """ECA-VoVNet-39b: eSE-VoVNet-39b with efficient channel attention."""
    return _create_vovnet("eca_vovnet39b", pretrained, progress, **kwargs)


@register_model
def ese_vovnet39b_evos(pretrained=False, progress=True, **kwargs):
    """eSE-VoVNet-39b with EvoNorm-S0 (32 groups) as every norm and activation."""
    return _create_vovnet("ese_vovnet39b_evos", pretrained, progress, norm_layer=EvoNorm2dS0, **kwargs)
