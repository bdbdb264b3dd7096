"""ConvNeXt (Liu et al. 2022, "A ConvNet for the 2020s"): tiny, small, base and large.

A ResNet modernised step by step towards a vision transformer: a 4x4 "patchify" stem, large 7x7
depthwise convolutions, an inverted bottleneck run channels-last as two linear layers with GELU,
LayerNorm instead of BatchNorm, per-channel layer scale and stochastic depth on every residual
branch. Module names, state_dict keys and initialisation follow torchvision, so its checkpoints
load directly; the model API (``forward_features``, ``forward_head``, ``reset_classifier``,
``features_only``, ``in_chans``) follows timm.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from ..ops.misc import Conv2dNormActivation, Permute
from ..ops.stochastic_depth import StochasticDepth
from ._features import sequential_feature_info
from ._helpers import build_model
from .registry import register_model

__all__ = ["ConvNeXt"]


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channel axis of an NCHW map (each pixel normalised across its channels).

    The map is viewed channels-last so the usual trailing-axis LayerNorm applies, then put back.
    """

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


class CNBlock(nn.Module):
    """7x7 depthwise conv, then channels-last LayerNorm, Linear(4x), GELU, Linear(1x); scaled, dropped, added.

    ``layer_scale`` is the initial value of the learnt per-channel scale of the branch;
    ``stochastic_depth_prob`` the probability of dropping the branch for a sample in training.
    """

    def __init__(self, dim, layer_scale, stochastic_depth_prob, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            norm_layer(dim),
            nn.Linear(dim, 4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(4 * dim, dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input):
        result = self.layer_scale * self.block(input)
        result = self.stochastic_depth(result)
        result += input
        return result


class CNBlockConfig:
    """One stage of the paper's Section 3: its width, the width after its downsampling (None: last stage), depth."""

    def __init__(self, input_channels, out_channels, num_layers):
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self):
        return (f"{type(self).__name__}(input_channels={self.input_channels}, "
                f"out_channels={self.out_channels}, num_layers={self.num_layers})")


def _init_conv_or_linear(module):
    """Truncated-normal (std 0.02) weights and zero biases, as the paper trains ConvNeXt."""
    nn.init.trunc_normal_(module.weight, std=0.02)
    if module.bias is not None:
        nn.init.zeros_(module.bias)


class ConvNeXt(nn.Module):
    """A patchify stem, four stages of ``CNBlock`` joined by LayerNorm + 2x2 strided-conv downsampling,
    global pooling and a LayerNorm + Flatten + Linear head.

    ``stochastic_depth_prob`` grows linearly from 0 at the first block to this value at the last.
    ``num_classes=0`` replaces the final linear layer with an identity (normalised pooled features).
    """

    default_cfg = {"first_conv": "features.0.0", "classifier": "classifier.2"}

    def __init__(self, block_setting, stochastic_depth_prob=0.0, layer_scale=1e-6, num_classes=1000, block=None,
                 norm_layer=None, in_chans=3):
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        if not all(isinstance(s, CNBlockConfig) for s in block_setting):
            raise TypeError("The block_setting should be List[CNBlockConfig]")
        if block is None:
            block = CNBlock
        if norm_layer is None:
            norm_layer = partial(LayerNorm2d, eps=1e-6)
        self.num_classes = num_classes
        layers = [Conv2dNormActivation(in_chans, block_setting[0].input_channels, kernel_size=4, stride=4, padding=0,
                                       norm_layer=norm_layer, activation_layer=None, bias=True)]
        total_blocks = sum(cnf.num_layers for cnf in block_setting)
        block_id = 0
        for cnf in block_setting:
            stage = []
            for _ in range(cnf.num_layers):
                sd_prob = stochastic_depth_prob * block_id / (total_blocks - 1.0)
                stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(
                    norm_layer(cnf.input_channels),
                    nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2, stride=2),
                ))
        self.features = nn.Sequential(*layers)
        self.feature_info = sequential_feature_info(self.features, in_chans=in_chans)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        last = block_setting[-1]
        self.num_features = last.out_channels if last.out_channels is not None else last.input_channels
        self.head_hidden_size = self.num_features
        self.classifier = nn.Sequential(
            norm_layer(self.num_features),
            nn.Flatten(1),
            self._final_linear(num_classes),
        )
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                _init_conv_or_linear(m)

    def _final_linear(self, num_classes):
        """The last layer of the head, or an identity when ``num_classes`` is 0."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier[2]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return the pre-logits)."""
        self.num_classes = num_classes
        self.classifier[2] = self._final_linear(num_classes)
        if num_classes > 0:
            _init_conv_or_linear(self.classifier[2])

    def forward_features(self, x):
        """The feature map after the last stage (N, num_features, H/32, W/32)."""
        return self.features(x)

    def forward_head(self, x, pre_logits=False):
        """Pool, normalise over channels and flatten; then the final linear layer unless ``pre_logits``."""
        x = self.avgpool(x)
        x = self.classifier[0](x)
        x = self.classifier[1](x)
        return x if pre_logits else self.classifier[2](x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_convnext(variant, block_setting, default_sd_prob, pretrained, progress, **kwargs):
    """Build a registered ConvNeXt variant; ``default_sd_prob`` is its stochastic depth unless one is given."""
    kwargs.setdefault("stochastic_depth_prob", default_sd_prob)
    return build_model(ConvNeXt, variant, pretrained, progress=progress, block_setting=block_setting, **kwargs)


@register_model
def convnext_tiny(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-T: widths 96-768, depths 3-3-9-3, stochastic depth 0.1."""
    setting = [CNBlockConfig(96, 192, 3), CNBlockConfig(192, 384, 3), CNBlockConfig(384, 768, 9),
               CNBlockConfig(768, None, 3)]
    return _create_convnext("convnext_tiny", setting, 0.1, pretrained, progress, **kwargs)


@register_model
def convnext_small(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-S: widths 96-768, depths 3-3-27-3, stochastic depth 0.4."""
    setting = [CNBlockConfig(96, 192, 3), CNBlockConfig(192, 384, 3), CNBlockConfig(384, 768, 27),
               CNBlockConfig(768, None, 3)]
    return _create_convnext("convnext_small", setting, 0.4, pretrained, progress, **kwargs)


@register_model
def convnext_base(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-B: widths 128-1024, depths 3-3-27-3, stochastic depth 0.5."""
    setting = [CNBlockConfig(128, 256, 3), CNBlockConfig(256, 512, 3), CNBlockConfig(512, 1024, 27),
               CNBlockConfig(1024, None, 3)]
    return _create_convnext("convnext_base", setting, 0.5, pretrained, progress, **kwargs)


@register_model
def convnext_large(pretrained=False, progress=True, **kwargs):
    """ConvNeXt-L: widths 192-1536, depths 3-3-27-3, stochastic depth 0.5."""
    setting = [CNBlockConfig(192, 384, 3), CNBlockConfig(384, 768, 3), CNBlockConfig(768, 1536, 27),
               CNBlockConfig(1536, None, 3)]
    return _create_convnext("convnext_large", setting, 0.5, pretrained, progress, **kwargs)
