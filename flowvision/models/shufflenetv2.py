"""ShuffleNetV2 (Ma et al. 2018, "ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design").

Each unit splits its channels in two, transforms one half (or, when it downsamples, both halves
from the full input), concatenates and shuffles the channels so the halves mix in the next unit.
Module names, state_dict keys and initialisation (PyTorch's defaults) follow torchvision, so its
checkpoints load directly; the model API (``forward_features``, ``forward_head``,
``reset_classifier``, ``in_chans``, ``feature_info``) follows timm.
"""
import engine as torch
from engine import nn

from ._helpers import build_model
from .registry import register_model

__all__ = ["ShuffleNetV2"]


def depthwise_conv(channels, stride):
    """A 3x3 depthwise convolution without bias."""
    return nn.Conv2d(channels, channels, 3, stride, 1, bias=False, groups=channels)


def conv1x1(in_channels, out_channels):
    """A 1x1 convolution without bias."""
    return nn.Conv2d(in_channels, out_channels, 1, 1, 0, bias=False)


class InvertedResidual(nn.Module):
    """One ShuffleNetV2 unit.

    At stride 1 the first half of the channels passes through unchanged and ``branch2`` transforms
    the second; at stride 2 ``branch1`` and ``branch2`` both read the whole input, doubling the
    width. The concatenation is channel-shuffled with 2 groups.
    """

    def __init__(self, inp, oup, stride):
        super().__init__()
        if not 1 <= stride <= 3:
            raise ValueError("illegal stride value")
        self.stride = stride
        branch_features = oup // 2
        if stride == 1 and inp != branch_features * 2:
            raise ValueError(f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. "
                             "If stride == 1 then inp should be equal to oup // 2 << 1.")
        if stride > 1:
            self.branch1 = nn.Sequential(
                depthwise_conv(inp, stride),
                nn.BatchNorm2d(inp),
                conv1x1(inp, branch_features),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            conv1x1(inp if stride > 1 else branch_features, branch_features),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            depthwise_conv(branch_features, stride),
            nn.BatchNorm2d(branch_features),
            conv1x1(branch_features, branch_features),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


def channel_shuffle(x, groups):
    """Interleave the channels of ``groups`` equal groups (written out rather than ``torch.channel_shuffle``, so
    that a traced graph has torchvision's nodes and node names)."""
    batch, channels, height, width = x.size()
    x = x.view(batch, groups, channels // groups, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batch, channels, height, width)


class ShuffleNetV2(nn.Module):
    """A strided 3x3 stem and max pool, three stages of units, a 1x1 conv, global pooling and a classifier.

    ``stages_repeats`` gives the units of stages 2-4; ``stages_out_channels`` the widths of the stem,
    the three stages and the last conv. ``num_classes=0`` replaces the classifier with an identity.
    """

    default_cfg = {"first_conv": "conv1.0", "classifier": "fc"}

    def __init__(self, stages_repeats, stages_out_channels, num_classes=1000, inverted_residual=InvertedResidual,
                 in_chans=3):
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels
        self.num_classes = num_classes
        stem_channels = stages_out_channels[0]
        self.conv1 = nn.Sequential(
            nn.Conv2d(in_chans, stem_channels, 3, 2, 1, bias=False),
            nn.BatchNorm2d(stem_channels),
            nn.ReLU(inplace=True),
        )
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        input_channels = stem_channels
        for i, (repeats, output_channels) in enumerate(zip(stages_repeats, stages_out_channels[1:4])):
            units = [inverted_residual(input_channels, output_channels, 2)]
            for _ in range(repeats - 1):
                units.append(inverted_residual(output_channels, output_channels, 1))
            setattr(self, f"stage{i + 2}", nn.Sequential(*units))
            input_channels = output_channels
        self.num_features = stages_out_channels[-1]
        self.head_hidden_size = self.num_features
        self.conv5 = nn.Sequential(
            conv1x1(input_channels, self.num_features),
            nn.BatchNorm2d(self.num_features),
            nn.ReLU(inplace=True),
        )
        self.fc = self._classifier(num_classes)
        self.feature_info = [
            dict(num_chs=stem_channels, reduction=2, module="conv1"),
            dict(num_chs=stem_channels, reduction=4, module="maxpool"),
            dict(num_chs=stages_out_channels[1], reduction=8, module="stage2"),
            dict(num_chs=stages_out_channels[2], reduction=16, module="stage3"),
            dict(num_chs=self.num_features, reduction=32, module="conv5"),
        ]

    def _classifier(self, num_classes):
        """The final linear layer, or an identity when ``num_classes`` is 0."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer."""
        return self.fc

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.fc = self._classifier(num_classes)

    def forward_features(self, x):
        """The feature map after the last 1x1 conv (N, num_features, H/32, W/32)."""
        x = self.conv1(x)
        x = self.maxpool(x)
        x = self.stage2(x)
        x = self.stage3(x)
        x = self.stage4(x)
        x = self.conv5(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Global average pool, then the classifier unless ``pre_logits``."""
        x = x.mean([2, 3])
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_shufflenetv2(variant, stages_out_channels, pretrained, progress, **kwargs):
    """Build a registered ShuffleNetV2 variant: 4, 8 and 4 units in stages 2-4, widths per variant."""
    return build_model(ShuffleNetV2, variant, pretrained, progress=progress, stages_repeats=[4, 8, 4],
                       stages_out_channels=stages_out_channels, **kwargs)


@register_model
def shufflenet_v2_x0_5(pretrained=False, progress=True, **kwargs):
    """ShuffleNetV2 with 0.5x output channels."""
    return _create_shufflenetv2("shufflenet_v2_x0_5", [24, 48, 96, 192, 1024], pretrained, progress, **kwargs)


@register_model
def shufflenet_v2_x1_0(pretrained=False, progress=True, **kwargs):
    """ShuffleNetV2 with 1.0x output channels."""
    return _create_shufflenetv2("shufflenet_v2_x1_0", [24, 116, 232, 464, 1024], pretrained, progress, **kwargs)


@register_model
def shufflenet_v2_x1_5(pretrained=False, progress=True, **kwargs):
    """ShuffleNetV2 with 1.5x output channels."""
    return _create_shufflenetv2("shufflenet_v2_x1_5", [24, 176, 352, 704, 1024], pretrained, progress, **kwargs)


@register_model
def shufflenet_v2_x2_0(pretrained=False, progress=True, **kwargs):
    """ShuffleNetV2 with 2.0x output channels."""
    return _create_shufflenetv2("shufflenet_v2_x2_0", [24, 244, 488, 976, 2048], pretrained, progress, **kwargs)
