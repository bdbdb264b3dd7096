"""MNASNet (Tan et al. 2019, "MnasNet: Platform-Aware Neural Architecture Search for Mobile"), the B1 variant.

A depthwise-separable stem, six stacks of inverted residuals found by architecture search, a 1x1
conv to 1280 channels and a classifier; ``alpha`` scales every width. Module names, state_dict keys
and initialisation follow torchvision, so its checkpoints load directly, including checkpoints of
the first version, whose stem did not scale with ``alpha`` (see ``MNASNet._upgrade_state_dict``).
The model API (``forward_features``, ``forward_head``, ``reset_classifier``, ``in_chans``,
``feature_info``) follows timm.
"""
import warnings

from engine import nn

from ._features import sequential_feature_info
from ._helpers import build_model
from ._utils import linear_or_identity
from .registry import register_model

__all__ = ["MNASNet"]

# The paper's TensorFlow batch-norm decay 0.9997, as a PyTorch momentum.
_BN_MOMENTUM = 1 - 0.9997


class _InvertedResidual(nn.Module):
    """Expand with a 1x1 conv, filter with a depthwise conv (3x3 or 5x5), project linearly with a 1x1 conv.

    The input is added back when the block keeps stride and width.
    """

    def __init__(self, in_ch, out_ch, kernel_size, stride, expansion_factor, bn_momentum=0.1):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if kernel_size not in (3, 5):
            raise ValueError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
        mid_ch = in_ch * expansion_factor
        self.apply_residual = in_ch == out_ch and stride == 1
        self.layers = nn.Sequential(
            nn.Conv2d(in_ch, mid_ch, 1, bias=False),
            nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_ch, mid_ch, kernel_size, padding=kernel_size // 2, stride=stride, groups=mid_ch, bias=False),
            nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_ch, out_ch, 1, bias=False),
            nn.BatchNorm2d(out_ch, momentum=bn_momentum),
        )

    def forward(self, input):
        if self.apply_residual:
            return self.layers(input) + input
        return self.layers(input)


def _stack(in_ch, out_ch, kernel_size, stride, exp_factor, repeats, bn_momentum):
    """``repeats`` inverted residuals; only the first changes width and stride (so it has no skip)."""
    if repeats < 1:
        raise ValueError(f"repeats should be >= 1, instead got {repeats}")
    blocks = [_InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, bn_momentum=bn_momentum)]
    for _ in range(1, repeats):
        blocks.append(_InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, bn_momentum=bn_momentum))
    return nn.Sequential(*blocks)


def _round_to_multiple_of(val, divisor, round_up_bias=0.9):
    """``val`` rounded to a multiple of ``divisor``, rounding up when rounding down would lose over 10%."""
    if not 0.0 < round_up_bias < 1.0:
        raise ValueError(f"round_up_bias should be greater than 0.0 and smaller than 1.0 instead of {round_up_bias}")
    new_val = max(divisor, int(val + divisor / 2) // divisor * divisor)
    return new_val if new_val >= round_up_bias * val else new_val + divisor


def _get_depths(alpha):
    """The widths of the stem, its projection and the six stacks, scaled by ``alpha``."""
    depths = [32, 16, 24, 40, 80, 96, 192, 320]
    return [_round_to_multiple_of(depth * alpha, 8) for depth in depths]


def _stem(in_chans, stem_ch, proj_ch):
    """The stem as 8 flat layers: a strided 3x3 conv and a 3x3 depthwise conv, each with BatchNorm and ReLU,
    then a linear 1x1 projection with BatchNorm (a depthwise-separable conv without skip)."""
    return [
        nn.Conv2d(in_chans, stem_ch, 3, padding=1, stride=2, bias=False),
        nn.BatchNorm2d(stem_ch, momentum=_BN_MOMENTUM),
        nn.ReLU(inplace=True),
        nn.Conv2d(stem_ch, stem_ch, 3, padding=1, stride=1, groups=stem_ch, bias=False),
        nn.BatchNorm2d(stem_ch, momentum=_BN_MOMENTUM),
        nn.ReLU(inplace=True),
        nn.Conv2d(stem_ch, proj_ch, 1, padding=0, stride=1, bias=False),
        nn.BatchNorm2d(proj_ch, momentum=_BN_MOMENTUM),
    ]


def _init_linear(linear):
    """Kaiming-uniform weights over the outputs (sigmoid gain) and a zero bias."""
    nn.init.kaiming_uniform_(linear.weight, mode="fan_out", nonlinearity="sigmoid")
    nn.init.zeros_(linear.bias)


class MNASNet(nn.Module):
    """MNASNet-B1 with width multiplier ``alpha``; ``num_classes=0`` replaces the classifier with an identity.

    Version 2 (this one) scales the stem with ``alpha``; version 1 kept it at 32 and 16 channels.
    """

    _version = 2
    default_cfg = {"first_conv": "layers.0", "classifier": "classifier.1"}

    def __init__(self, alpha, num_classes=1000, dropout=0.2, in_chans=3):
        super().__init__()
        if alpha <= 0.0:
            raise ValueError(f"alpha should be greater than 0.0 instead of {alpha}")
        self.alpha = alpha
        self.num_classes = num_classes
        self.in_chans = in_chans
        depths = _get_depths(alpha)
        layers = _stem(in_chans, depths[0], depths[1]) + [
            _stack(depths[1], depths[2], 3, 2, 3, 3, _BN_MOMENTUM),
            _stack(depths[2], depths[3], 5, 2, 3, 3, _BN_MOMENTUM),
            _stack(depths[3], depths[4], 5, 2, 6, 3, _BN_MOMENTUM),
            _stack(depths[4], depths[5], 3, 1, 6, 2, _BN_MOMENTUM),
            _stack(depths[5], depths[6], 5, 2, 6, 4, _BN_MOMENTUM),
            _stack(depths[6], depths[7], 3, 1, 6, 1, _BN_MOMENTUM),
            nn.Conv2d(depths[7], 1280, 1, padding=0, stride=1, bias=False),
            nn.BatchNorm2d(1280, momentum=_BN_MOMENTUM),
            nn.ReLU(inplace=True),
        ]
        self.layers = nn.Sequential(*layers)
        self.feature_info = sequential_feature_info(self.layers, prefix="layers", in_chans=in_chans)
        self.num_features = 1280
        self.head_hidden_size = self.num_features
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True),
                                        linear_or_identity(self.num_features, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                _init_linear(m)

    def _linear(self, num_classes):
        """A fresh final linear layer, initialised, or an identity for 0 classes."""
        linear = linear_or_identity(self.num_features, num_classes)
        if num_classes > 0:
            _init_linear(linear)
        return linear

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Rebuild the fixed-width stem of version 1 when ``state_dict`` is such a checkpoint.

        The version comes from the checkpoint's metadata (``engine.load`` of a torch file keeps it); a
        plain dict of arrays has none, and then a 32-channel stem weight where this model's is narrower
        marks version 1. Models with ``alpha=1.0`` are the same in both versions.
        """
        if version not in (None, 1, 2):
            raise ValueError(f"version should be set to 1 or 2 instead of {version}")
        if self.alpha == 1.0 or version == 2:
            return
        stem_weight = state_dict.get(prefix + "layers.0.weight")
        depths = _get_depths(self.alpha)
        if version is None and (stem_weight is None or stem_weight.shape[0] != 32 or depths[0] == 32):
            return
        current = self.layers[0].weight
        for idx, layer in enumerate(_stem(self.in_chans, 32, 16) + [_stack(16, depths[2], 3, 2, 3, 3, _BN_MOMENTUM)]):
            self.layers[idx] = layer.to(device=current.device, dtype=current.dtype)
        self.feature_info = sequential_feature_info(self.layers, prefix="layers", in_chans=self.in_chans)
        self._version = 1
        warnings.warn("This checkpoint is of the first version of MNASNet, whose stem does not scale with alpha: "
                      "the model now has that stem and loads it. Training a new model or fine-tuning from a "
                      "current ImageNet checkpoint gives the current architecture.", UserWarning)

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier[1]

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.classifier[1] = self._linear(num_classes)

    def forward_features(self, x):
        """The feature map after the last 1x1 conv (N, 1280, H/32, W/32)."""
        return self.layers(x)

    def forward_head(self, x, pre_logits=False):
        """Global average pool, then dropout and the classifier unless ``pre_logits``."""
        x = x.mean([2, 3])
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_mnasnet(variant, alpha, pretrained, progress, **kwargs):
    """Build a registered MNASNet variant of width multiplier ``alpha``."""
    return build_model(MNASNet, variant, pretrained, progress=progress, alpha=alpha, **kwargs)


@register_model
def mnasnet0_5(pretrained=False, progress=True, **kwargs):
    """MNASNet with width multiplier 0.5."""
    return _create_mnasnet("mnasnet0_5", 0.5, pretrained, progress, **kwargs)


@register_model
def mnasnet0_75(pretrained=False, progress=True, **kwargs):
    """MNASNet with width multiplier 0.75."""
    return _create_mnasnet("mnasnet0_75", 0.75, pretrained, progress, **kwargs)


@register_model
def mnasnet1_0(pretrained=False, progress=True, **kwargs):
    """MNASNet with width multiplier 1.0."""
    return _create_mnasnet("mnasnet1_0", 1.0, pretrained, progress, **kwargs)


@register_model
def mnasnet1_3(pretrained=False, progress=True, **kwargs):
    """MNASNet with width multiplier 1.3."""
    return _create_mnasnet("mnasnet1_3", 1.3, pretrained, progress, **kwargs)
