"""ResNet, ResNeXt and Wide ResNet (He et al. 2015; Xie et al. 2016; Zagoruyko & Komodakis 2016).

Module names, state_dict keys and initialisation follow torchvision, so its checkpoints load
directly; the model API (``forward_features``, ``forward_head``, ``reset_classifier``,
``features_only``, ``in_chans``) follows timm.
"""
import engine as torch
from engine import nn

from ._features import intermediate_stages, take_indices
from ._helpers import build_model
from .registry import register_model

__all__ = ["ResNet", "BasicBlock", "Bottleneck"]


def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution, padded to keep the size at stride 1, without bias (a norm follows)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation,
                     groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution without bias."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34)."""

    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        identity = x if self.downsample is None else self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (grouped, strided) and 1x1 expand convolutions with a residual connection.

    The stride sits on the 3x3 convolution (ResNet v1.5), as in torchvision.
    """

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64,
                 dilation=1, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)
        out = self.conv3(out)
        out = self.bn3(out)
        identity = x if self.downsample is None else self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    """A stem (7x7 conv, norm, ReLU, max pool), four stages of residual blocks, pooling and a classifier.

    ``num_classes=0`` replaces the classifier with an identity (pooled features); ``in_chans``
    sets the input channels of the stem.
    """

    default_cfg = {"first_conv": "conv1", "classifier": "fc"}

    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1,
                 width_per_group=64, replace_stride_with_dilation=None, norm_layer=None, in_chans=3):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer
        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None or a 3-element tuple, "
                             f"got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.num_classes = num_classes
        self.conv1 = nn.Conv2d(in_chans, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.feature_info = [dict(num_chs=self.inplanes, reduction=2, module="relu")]
        reduction = 4
        stages = zip((64, 128, 256, 512), layers, (1, 2, 2, 2), [False, *replace_stride_with_dilation])
        for index, (planes, blocks, stride, dilate) in enumerate(stages, start=1):
            name = f"layer{index}"
            self.add_module(name, self._make_layer(block, planes, blocks, stride=stride, dilate=dilate))
            reduction *= 1 if stride == 1 or dilate else stride
            self.feature_info.append(dict(num_chs=self.inplanes, reduction=reduction, module=name))
        self.num_features = 512 * block.expansion
        self.head_hidden_size = self.num_features
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = self._classifier(num_classes)
        self._init_weights(zero_init_residual)

    def _init_weights(self, zero_init_residual):
        """Kaiming-normal (fan_out) convolutions, unit/zero norms; optionally zero each block's last norm."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _classifier(self, num_classes):
        """The final linear layer, or an identity when ``num_classes`` is 0."""
        return nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        """One stage: a first block that may downsample (or dilate), then ``blocks - 1`` plain blocks."""
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width,
                        previous_dilation, norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def get_classifier(self):
        """The classification layer (an identity once ``prune_intermediate_layers`` took the head away, as timm's)."""
        return nn.Identity() if self.fc is None else self.fc

    def reset_classifier(self, num_classes):
        """Replace the classifier with a fresh one for ``num_classes`` (0: return pooled features)."""
        self.num_classes = num_classes
        self.fc = self._classifier(num_classes)

    def forward_features(self, x):
        """The feature map after the last stage (N, num_features, H/32, W/32)."""
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        return x

    def _stem(self, x):
        """The stem up to its ReLU: timm's first intermediate (``feature_info``'s ``relu``), before the max pool."""
        x = self.conv1(x)
        x = self.bn1(x)
        return self.relu(x)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """timm's ResNet intermediates on torchvision's modules: the five ``feature_info`` stages, index 0 the stem's
        ReLU output (before ``maxpool``) and 1-4 the outputs of ``layer1``-``layer4``, as timm's ResNet taps them.

        ``indices``: None (all), n (the last n) or a list (negative from the end). Returns the picked maps and,
        unless ``intermediates_only``, the last map computed (``forward_features``' output when every layer runs).
        ``stop_early`` skips the layers after the last one picked; the max pool after the stem still runs, as in
        timm. ``norm`` changes nothing: there is no final norm. Only ``output_fmt='NCHW'``.
        """
        stages = [self._stem, self.layer1, self.layer2, self.layer3, self.layer4]
        take, stages = intermediate_stages(stages, indices, stop_early, output_fmt)
        intermediates = []
        for i, stage in enumerate(stages):
            x = stage(x)
            if i in take:
                intermediates.append(x)
            if i == 0:
                x = self.maxpool(x)
        return intermediates if intermediates_only else (x, intermediates)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Keep what ``forward_intermediates(indices=indices)`` needs, as timm's ResNet does: the layers after the
        last stage picked become empty Sequentials (the max pool an identity when only the stem is kept), and then
        ``num_features`` / ``head_hidden_size`` are that stage's channels. With ``prune_head``, or when layers go,
        the head goes too: ``forward_head`` then returns the feature map unpooled (timm's classifier and pooling
        reset to none) until ``reset_classifier`` builds a new one. ``prune_norm`` changes nothing (no final norm).
        Returns the absolute indices kept."""
        take = take_indices(len(self.feature_info), indices)
        last = max(take)
        for name in ("layer1", "layer2", "layer3", "layer4")[last:]:
            setattr(self, name, nn.Sequential())
        if last == 0:
            self.maxpool = nn.Identity()
        prune_end = last < len(self.feature_info) - 1
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.num_classes = 0
            self.fc = None
        return take

    def forward_head(self, x, pre_logits=False):
        """Global average pool and flatten, then the classifier unless ``pre_logits``; the map as it is when
        ``prune_intermediate_layers`` took the head away."""
        if self.fc is None:
            return x
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_resnet(variant, block, layers, pretrained=False, progress=True, **kwargs):
    """Build a registered ResNet variant (``progress`` is for the weight download, torchvision-style)."""
    return build_model(ResNet, variant, pretrained, progress=progress, block=block, layers=layers, **kwargs)


@register_model
def resnet18(pretrained=False, progress=True, **kwargs):
    """ResNet-18 (He et al., "Deep Residual Learning for Image Recognition")."""
    return _create_resnet("resnet18", BasicBlock, [2, 2, 2, 2], pretrained, progress, **kwargs)


@register_model
def resnet34(pretrained=False, progress=True, **kwargs):
    """ResNet-34."""
    return _create_resnet("resnet34", BasicBlock, [3, 4, 6, 3], pretrained, progress, **kwargs)


@register_model
def resnet50(pretrained=False, progress=True, **kwargs):
    """ResNet-50 (v1.5: stride on the 3x3 convolution)."""
    return _create_resnet("resnet50", Bottleneck, [3, 4, 6, 3], pretrained, progress, **kwargs)


@register_model
def resnet101(pretrained=False, progress=True, **kwargs):
    """ResNet-101."""
    return _create_resnet("resnet101", Bottleneck, [3, 4, 23, 3], pretrained, progress, **kwargs)


@register_model
def resnet152(pretrained=False, progress=True, **kwargs):
    """ResNet-152."""
    return _create_resnet("resnet152", Bottleneck, [3, 8, 36, 3], pretrained, progress, **kwargs)


@register_model
def resnext50_32x4d(pretrained=False, progress=True, **kwargs):
    """ResNeXt-50 32x4d (Xie et al., "Aggregated Residual Transformations for Deep Neural Networks")."""
    kwargs.update(groups=32, width_per_group=4)
    return _create_resnet("resnext50_32x4d", Bottleneck, [3, 4, 6, 3], pretrained, progress, **kwargs)


@register_model
def resnext101_32x8d(pretrained=False, progress=True, **kwargs):
    """ResNeXt-101 32x8d."""
    kwargs.update(groups=32, width_per_group=8)
    return _create_resnet("resnext101_32x8d", Bottleneck, [3, 4, 23, 3], pretrained, progress, **kwargs)


@register_model
def resnext101_64x4d(pretrained=False, progress=True, **kwargs):
    """ResNeXt-101 64x4d."""
    kwargs.update(groups=64, width_per_group=4)
    return _create_resnet("resnext101_64x4d", Bottleneck, [3, 4, 23, 3], pretrained, progress, **kwargs)


@register_model
def wide_resnet50_2(pretrained=False, progress=True, **kwargs):
    """Wide ResNet-50-2 (Zagoruyko & Komodakis, "Wide Residual Networks"): bottlenecks twice as wide."""
    kwargs.update(width_per_group=64 * 2)
    return _create_resnet("wide_resnet50_2", Bottleneck, [3, 4, 6, 3], pretrained, progress, **kwargs)


@register_model
def wide_resnet101_2(pretrained=False, progress=True, **kwargs):
    """Wide ResNet-101-2."""
    kwargs.update(width_per_group=64 * 2)
    return _create_resnet("wide_resnet101_2", Bottleneck, [3, 4, 23, 3], pretrained, progress, **kwargs)
