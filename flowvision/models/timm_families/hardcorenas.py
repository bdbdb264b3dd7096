"""HardCoRe-NAS (Nayman, Aflalo, Noy and Zelnik-Manor 2021, "HardCoRe-NAS: Hard Constrained diffeRentiable Neural
Architecture Search"): hardcorenas_a to hardcorenas_f.

Six MobileNetV3-like networks found by a differentiable search under hard latency limits (A the fastest, F the
slowest): a 32-channel stem, a depthwise-separable block, inverted residuals of 3x3 or 5x5 kernels whose expansion
ratio and squeeze-and-excitation (ReLU inside, a hard-sigmoid gate) the search chose block by block, ReLU in the
early stages and hard-swish later, a 1x1 convolution to 960 channels and MobileNetV3's efficient head (pooling,
then a 1280-channel 1x1 convolution). The models are our ``MobileNetV3`` class built from the stage strings with
timm's EfficientNet builder (``_efficientnet_blocks``); model names, module names, ``state_dict`` keys and
initialisation follow timm's ``hardcorenas`` module, so its checkpoints load directly.
"""
from functools import partial

from engine import nn

from .._helpers import build_model
from ..registry import register_model
from ._efficientnet_blocks import SqueezeExcite, decode_arch_def, round_channels
from .mobilenetv3 import MobileNetV3

__all__ = []

# squeeze-and-excitation as the search used it: ReLU inside, a hard-sigmoid gate, widths rounded to multiples of 8
_SE_LAYER = partial(SqueezeExcite, gate_layer=nn.Hardsigmoid, force_act_layer=nn.ReLU, rd_round_fn=round_channels)


def _gen_hardcorenas(variant, pretrained, progress, arch_def, kwargs):
    """Build a registered variant from its stage strings: a 32-channel stem, hard-swish (where a block does not ask
    for ReLU), the search's squeeze-and-excitation and a 1280-channel head; ``kwargs`` may override any of these or
    pass other ``MobileNetV3`` arguments (``bn_eps``, ``drop_rate``...). ``features_only`` gives the stem's and the
    stages' maps at strides 2 to 32."""
    model_args = dict(block_args=decode_arch_def(arch_def), num_features=1280, stem_size=32,
                      act_layer=nn.Hardswish, se_layer=_SE_LAYER)
    return build_model(MobileNetV3, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def hardcorenas_a(pretrained=False, progress=True, **kwargs):
    """HardCoRe-NAS A, the fastest (5.3M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_nre"],
        ["ir_r1_k5_s2_e3_c24_nre", "ir_r1_k5_s1_e3_c24_nre_se0.25"],
        ["ir_r1_k5_s2_e3_c40_nre", "ir_r1_k5_s1_e6_c40_nre_se0.25"],
        ["ir_r1_k5_s2_e6_c80_se0.25", "ir_r1_k5_s1_e6_c80_se0.25"],
        ["ir_r1_k5_s1_e6_c112_se0.25", "ir_r1_k5_s1_e6_c112_se0.25"],
        ["ir_r1_k5_s2_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25"],
        ["cn_r1_k1_s1_c960"],
    ]
    return _gen_hardcorenas("hardcorenas_a", pretrained, progress, arch_def, kwargs)


@register_model
def hardcorenas_b(pretrained=False, progress=True, **kwargs):
    """HardCoRe-NAS B (5.2M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_nre"],
        ["ir_r1_k5_s2_e3_c24_nre", "ir_r1_k5_s1_e3_c24_nre_se0.25", "ir_r1_k3_s1_e3_c24_nre"],
        ["ir_r1_k5_s2_e3_c40_nre", "ir_r1_k5_s1_e3_c40_nre", "ir_r1_k5_s1_e3_c40_nre"],
        ["ir_r1_k5_s2_e3_c80", "ir_r1_k5_s1_e3_c80", "ir_r1_k3_s1_e3_c80", "ir_r1_k3_s1_e3_c80"],
        ["ir_r1_k5_s1_e3_c112", "ir_r1_k3_s1_e3_c112", "ir_r1_k3_s1_e3_c112", "ir_r1_k3_s1_e3_c112"],
        ["ir_r1_k5_s2_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25", "ir_r1_k3_s1_e3_c192_se0.25"],
        ["cn_r1_k1_s1_c960"],
    ]
    return _gen_hardcorenas("hardcorenas_b", pretrained, progress, arch_def, kwargs)


@register_model
def hardcorenas_c(pretrained=False, progress=True, **kwargs):
    """HardCoRe-NAS C (5.5M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_nre"],
        ["ir_r1_k5_s2_e3_c24_nre", "ir_r1_k5_s1_e3_c24_nre_se0.25"],
        ["ir_r1_k5_s2_e3_c40_nre", "ir_r1_k5_s1_e3_c40_nre", "ir_r1_k5_s1_e3_c40_nre", "ir_r1_k5_s1_e3_c40_nre"],
        ["ir_r1_k5_s2_e4_c80", "ir_r1_k5_s1_e6_c80_se0.25", "ir_r1_k3_s1_e3_c80", "ir_r1_k3_s1_e3_c80"],
        ["ir_r1_k5_s1_e6_c112_se0.25", "ir_r1_k3_s1_e3_c112", "ir_r1_k3_s1_e3_c112", "ir_r1_k3_s1_e3_c112"],
        ["ir_r1_k5_s2_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25", "ir_r1_k3_s1_e3_c192_se0.25"],
        ["cn_r1_k1_s1_c960"],
    ]
    return _gen_hardcorenas("hardcorenas_c", pretrained, progress, arch_def, kwargs)


@register_model
def hardcorenas_d(pretrained=False, progress=True, **kwargs):
    """HardCoRe-NAS D (7.5M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_nre"],
        ["ir_r1_k5_s2_e3_c24_nre_se0.25", "ir_r1_k5_s1_e3_c24_nre_se0.25"],
        ["ir_r1_k5_s2_e3_c40_nre_se0.25", "ir_r1_k5_s1_e4_c40_nre_se0.25", "ir_r1_k3_s1_e3_c40_nre_se0.25"],
        ["ir_r1_k5_s2_e4_c80_se0.25", "ir_r1_k3_s1_e3_c80_se0.25", "ir_r1_k3_s1_e3_c80_se0.25",
         "ir_r1_k3_s1_e3_c80_se0.25"],
        ["ir_r1_k3_s1_e4_c112_se0.25", "ir_r1_k5_s1_e4_c112_se0.25", "ir_r1_k3_s1_e3_c112_se0.25",
         "ir_r1_k5_s1_e3_c112_se0.25"],
        ["ir_r1_k5_s2_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25",
         "ir_r1_k3_s1_e6_c192_se0.25"],
        ["cn_r1_k1_s1_c960"],
    ]
    return _gen_hardcorenas("hardcorenas_d", pretrained, progress, arch_def, kwargs)


@register_model
def hardcorenas_e(pretrained=False, progress=True, **kwargs):
    """HardCoRe-NAS E (8.1M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_nre"],
        ["ir_r1_k5_s2_e3_c24_nre_se0.25", "ir_r1_k5_s1_e3_c24_nre_se0.25"],
        ["ir_r1_k5_s2_e6_c40_nre_se0.25", "ir_r1_k5_s1_e4_c40_nre_se0.25", "ir_r1_k5_s1_e4_c40_nre_se0.25",
         "ir_r1_k3_s1_e3_c40_nre_se0.25"],
        ["ir_r1_k5_s2_e4_c80_se0.25", "ir_r1_k3_s1_e6_c80_se0.25"],
        ["ir_r1_k5_s1_e6_c112_se0.25", "ir_r1_k5_s1_e6_c112_se0.25", "ir_r1_k5_s1_e6_c112_se0.25",
         "ir_r1_k5_s1_e3_c112_se0.25"],
        ["ir_r1_k5_s2_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25",
         "ir_r1_k3_s1_e6_c192_se0.25"],
        ["cn_r1_k1_s1_c960"],
    ]
    return _gen_hardcorenas("hardcorenas_e", pretrained, progress, arch_def, kwargs)


@register_model
def hardcorenas_f(pretrained=False, progress=True, **kwargs):
    """HardCoRe-NAS F, the slowest (8.2M parameters)."""
    arch_def = [
        ["ds_r1_k3_s1_e1_c16_nre"],
        ["ir_r1_k5_s2_e3_c24_nre_se0.25", "ir_r1_k5_s1_e3_c24_nre_se0.25"],
        ["ir_r1_k5_s2_e6_c40_nre_se0.25", "ir_r1_k5_s1_e6_c40_nre_se0.25"],
        ["ir_r1_k5_s2_e6_c80_se0.25", "ir_r1_k5_s1_e6_c80_se0.25", "ir_r1_k3_s1_e3_c80_se0.25",
         "ir_r1_k3_s1_e3_c80_se0.25"],
        ["ir_r1_k3_s1_e6_c112_se0.25", "ir_r1_k5_s1_e6_c112_se0.25", "ir_r1_k5_s1_e6_c112_se0.25",
         "ir_r1_k3_s1_e3_c112_se0.25"],
        ["ir_r1_k5_s2_e6_c192_se0.25", "ir_r1_k5_s1_e6_c192_se0.25", "ir_r1_k3_s1_e6_c192_se0.25",
         "ir_r1_k3_s1_e6_c192_se0.25"],
        ["cn_r1_k1_s1_c960"],
    ]
    return _gen_hardcorenas("hardcorenas_f", pretrained, progress, arch_def, kwargs)
