"""Video ResNets: R3D, MC3 and R(2+1)D (Tran et al., "A Closer Look at Spatiotemporal Convolutions for Action
Recognition", 2018).

A ResNet-18 whose convolutions span time as well as space: full 3x3x3 convolutions (R3D), 3-d ones in the
first stage and spatial-only ones after it (MC3, "mixed convolutions"), or each 3x3x3 convolution factored
into a spatial 1x3x3 and a temporal 3x1x1 one with as many parameters (R(2+1)D). Inputs are clips
(N, 3, T, H, W). Module names, state_dict keys and initialisation follow torchvision, so its Kinetics-400
checkpoints load directly; the model API (``forward_features``, ``forward_head``, ``reset_classifier``,
``in_chans``) follows timm.
"""
import engine as torch
from engine import nn

from .._helpers import build_model
from ..registry import register_model

__all__ = ["VideoResNet", "BasicBlock", "Bottleneck", "BasicStem", "R2Plus1dStem", "Conv3DSimple",
           "Conv3DNoTemporal", "Conv2Plus1D"]


class Conv3DSimple(nn.Conv3d):
    """A full 3x3x3 convolution (R3D); striding shrinks time as well as space."""

    def __init__(self, in_planes, out_planes, midplanes=None, stride=1, padding=1):
        super().__init__(in_planes, out_planes, kernel_size=(3, 3, 3), stride=stride, padding=padding, bias=False)

    @staticmethod
    def get_downsample_stride(stride):
        return stride, stride, stride


class Conv2Plus1D(nn.Sequential):
    """A 3x3x3 convolution factored into a spatial 1x3x3 one to ``midplanes`` channels, a norm and a ReLU,
    then a temporal 3x1x1 one (R(2+1)D)."""

    def __init__(self, in_planes, out_planes, midplanes, stride=1, padding=1):
        super().__init__(
            nn.Conv3d(in_planes, midplanes, kernel_size=(1, 3, 3), stride=(1, stride, stride),
                      padding=(0, padding, padding), bias=False),
            nn.BatchNorm3d(midplanes),
            nn.ReLU(inplace=True),
            nn.Conv3d(midplanes, out_planes, kernel_size=(3, 1, 1), stride=(stride, 1, 1), padding=(padding, 0, 0),
                      bias=False),
        )

    @staticmethod
    def get_downsample_stride(stride):
        return stride, stride, stride


class Conv3DNoTemporal(nn.Conv3d):
    """A spatial-only 1x3x3 convolution (MC3's later stages); time keeps its length."""

    def __init__(self, in_planes, out_planes, midplanes=None, stride=1, padding=1):
        super().__init__(in_planes, out_planes, kernel_size=(1, 3, 3), stride=(1, stride, stride),
                         padding=(0, padding, padding), bias=False)

    @staticmethod
    def get_downsample_stride(stride):
        return 1, stride, stride


def _midplanes(inplanes, planes):
    """R(2+1)D's intermediate width: the factored pair has the parameters of one 3x3x3 convolution."""
    return (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)


class BasicBlock(nn.Module):
    """Two convolutions from ``conv_builder`` with a residual connection."""

    expansion = 1

    def __init__(self, inplanes, planes, conv_builder, stride=1, downsample=None):
        super().__init__()
        midplanes = _midplanes(inplanes, planes)
        self.conv1 = nn.Sequential(conv_builder(inplanes, planes, midplanes, stride), nn.BatchNorm3d(planes),
                                   nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes), nn.BatchNorm3d(planes))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.conv2(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        out = self.relu(out)
        return out


class Bottleneck(nn.Module):
    """1x1x1 reduction, a convolution from ``conv_builder``, 1x1x1 expansion by 4, with a residual connection."""

    expansion = 4

    def __init__(self, inplanes, planes, conv_builder, stride=1, downsample=None):
        super().__init__()
        midplanes = _midplanes(inplanes, planes)
        self.conv1 = nn.Sequential(nn.Conv3d(inplanes, planes, kernel_size=1, bias=False), nn.BatchNorm3d(planes),
                                   nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes, stride), nn.BatchNorm3d(planes),
                                   nn.ReLU(inplace=True))
        self.conv3 = nn.Sequential(nn.Conv3d(planes, planes * self.expansion, kernel_size=1, bias=False),
                                   nn.BatchNorm3d(planes * self.expansion))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.conv2(out)
        out = self.conv3(out)
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        out = self.relu(out)
        return out


class BasicStem(nn.Sequential):
    """A 3x7x7 convolution halving height and width, a norm and a ReLU."""

    def __init__(self, in_chans=3):
        super().__init__(
            nn.Conv3d(in_chans, 64, kernel_size=(3, 7, 7), stride=(1, 2, 2), padding=(1, 3, 3), bias=False),
            nn.BatchNorm3d(64),
            nn.ReLU(inplace=True),
        )


class R2Plus1dStem(nn.Sequential):
    """The stem factored as R(2+1)D's convolutions: a spatial 1x7x7 one to 45 channels, then a temporal 3x1x1."""

    def __init__(self, in_chans=3):
        super().__init__(
            nn.Conv3d(in_chans, 45, kernel_size=(1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False),
            nn.BatchNorm3d(45),
            nn.ReLU(inplace=True),
            nn.Conv3d(45, 64, kernel_size=(3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0), bias=False),
            nn.BatchNorm3d(64),
            nn.ReLU(inplace=True),
        )


class VideoResNet(nn.Module):
    """A stem, four residual stages (the convolution kind chosen per stage) and a linear classifier over the
    clip's pooled features; ``num_classes=0`` leaves the pooled 512-d features.

    ``zero_init_residual`` starts every residual branch's last norm at zero, so each block begins as the
    identity (torchvision's flag zeroes nothing in these BasicBlock models: it names a ``bn3`` they lack).
    """

    default_cfg = {"first_conv": "stem.0", "classifier": "fc"}

    def __init__(self, block, conv_makers, layers, stem, num_classes=400, zero_init_residual=False, in_chans=3):
        super().__init__()
        self.inplanes = 64
        self.num_classes = num_classes
        self.stem = stem(in_chans)
        self.feature_info = [dict(num_chs=64, reduction=2, module="stem")]
        self.layer1 = self._make_layer(block, conv_makers[0], 64, layers[0], stride=1)
        self.layer2 = self._make_layer(block, conv_makers[1], 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, conv_makers[2], 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, conv_makers[3], 512, layers[3], stride=2)
        for i, reduction in enumerate((2, 4, 8, 16)):
            self.feature_info.append(dict(num_chs=(64 << i) * block.expansion, reduction=reduction,
                                          module=f"layer{i + 1}"))
        self.num_features = 512 * block.expansion
        self.head_hidden_size = self.num_features
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = self._classifier(num_classes)
        self._init_weights(zero_init_residual)

    def _init_weights(self, zero_init_residual):
        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.constant_(m.conv3[1].weight, 0)
                elif isinstance(m, BasicBlock):
                    nn.init.constant_(m.conv2[1].weight, 0)

    def _classifier(self, num_classes):
        """The final linear layer, or an identity when ``num_classes`` is 0."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def _make_layer(self, block, conv_builder, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            ds_stride = conv_builder.get_downsample_stride(stride)
            downsample = nn.Sequential(
                nn.Conv3d(self.inplanes, planes * block.expansion, kernel_size=1, stride=ds_stride, bias=False),
                nn.BatchNorm3d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, conv_builder, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, conv_builder))
        return nn.Sequential(*layers)

    def get_classifier(self):
        return self.fc

    def reset_classifier(self, num_classes):
        """Replace the classifier with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.fc = self._classifier(num_classes)

    def forward_features(self, x):
        """The stem and the four stages: (N, C, T, H, W) clips to (N, 512, T', H/16, W/16) features."""
        x = self.stem(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Average over time and space, flatten, then the classifier unless ``pre_logits``."""
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def kinetics_weights(pretrained, weights):
    """The ``weights=`` a video builder passes on: as given, or Kinetics-400's for the legacy ``pretrained=True``."""
    return "KINETICS400_V1" if pretrained and weights is None else weights


def _create_video_resnet(variant, conv_makers, stem, pretrained, progress, **kwargs):
    """Build a registered video ResNet-18."""
    kwargs["weights"] = kinetics_weights(pretrained, kwargs.get("weights"))
    return build_model(VideoResNet, variant, progress=progress, block=BasicBlock, conv_makers=conv_makers,
                       layers=[2, 2, 2, 2], stem=stem, **kwargs)


@register_model
def r3d_18(pretrained=False, progress=True, **kwargs):
    """R3D-18: a ResNet-18 of 3x3x3 convolutions."""
    return _create_video_resnet("r3d_18", [Conv3DSimple] * 4, BasicStem, pretrained, progress, **kwargs)


@register_model
def mc3_18(pretrained=False, progress=True, **kwargs):
    """MC3-18: 3x3x3 convolutions in the first stage, spatial 1x3x3 ones in the three after it."""
    return _create_video_resnet("mc3_18", [Conv3DSimple] + [Conv3DNoTemporal] * 3, BasicStem, pretrained, progress,
                                **kwargs)


@register_model
def r2plus1d_18(pretrained=False, progress=True, **kwargs):
    """R(2+1)D-18: every 3-d convolution, the stem's included, factored into a spatial and a temporal one."""
    return _create_video_resnet("r2plus1d_18", [Conv2Plus1D] * 4, R2Plus1dStem, pretrained, progress, **kwargs)
