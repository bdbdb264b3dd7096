"""Detection backbones: a ResNet or MobileNet trunk with a Feature Pyramid Network on top, partly frozen."""
import warnings

from engine import nn

from ...ops.feature_pyramid_network import FeaturePyramidNetwork, LastLevelMaxPool
from ...ops.misc import FrozenBatchNorm2d
from .. import mobilenetv2, mobilenetv3, resnet
from .._utils import IntermediateLayerGetter
from ..segmentation.deeplabv3 import stage_indices as _stage_indices

__all__ = ["BackboneWithFPN", "resnet_fpn_backbone", "mobilenet_backbone"]


class BackboneWithFPN(nn.Module):
    """The backbone's ``return_layers`` outputs fed through an FPN; returns the FPN's ordered feature dict."""

    def __init__(self, backbone, return_layers, in_channels_list, out_channels, extra_blocks=None, norm_layer=None):
        super().__init__()
        if extra_blocks is None:
            extra_blocks = LastLevelMaxPool()
        self.body = IntermediateLayerGetter(backbone, return_layers=return_layers)
        self.fpn = FeaturePyramidNetwork(in_channels_list=in_channels_list, out_channels=out_channels,
                                         extra_blocks=extra_blocks, norm_layer=norm_layer)
        self.out_channels = out_channels

    def forward(self, x):
        x = self.body(x)
        x = self.fpn(x)
        return x


def _legacy_weights(pretrained, weights):
    """torchvision's deprecated ``pretrained=True``: the IMAGENET1K_V1 backbone weights (with its warning)."""
    if pretrained is None:
        return weights
    warnings.warn("The parameter 'pretrained' is deprecated since 0.13 and may be removed in the future, "
                  "please use 'weights' instead.")
    return "IMAGENET1K_V1" if pretrained else None


def _builder(modules, name, kind):
    """The registered builder ``name`` from one of ``modules`` (a clear error for an unknown name)."""
    for module in modules:
        if name in getattr(module, "__all__", ()) or callable(module.__dict__.get(name)):
            return module.__dict__[name]
    raise ValueError(f"Unknown {kind} backbone_name '{name}'")


def resnet_fpn_backbone(*, backbone_name, weights=None, norm_layer=FrozenBatchNorm2d, trainable_layers=3,
                        returned_layers=None, extra_blocks=None, pretrained=None):
    """A named ResNet (``weights`` optional) with its last ``trainable_layers`` stages trainable, plus an FPN."""
    weights = _legacy_weights(pretrained, weights)
    backbone = _builder([resnet], backbone_name, "resnet")(weights=weights, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, trainable_layers, returned_layers, extra_blocks)


def _freeze_resnet(backbone, trainable_layers):
    """Stop gradients to every ResNet parameter outside the last ``trainable_layers`` of layer4..conv1 (+bn1 at 5)."""
    if trainable_layers < 0 or trainable_layers > 5:
        raise ValueError(f"Trainable layers should be in the range [0,5], got {trainable_layers}")
    layers_to_train = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    if trainable_layers == 5:
        layers_to_train.append("bn1")
    for name, parameter in backbone.named_parameters():
        if not name.startswith(tuple(layers_to_train)):
            parameter.requires_grad_(False)


def _resnet_fpn_extractor(backbone, trainable_layers, returned_layers=None, extra_blocks=None, norm_layer=None):
    """Freeze early ResNet stages and put a 256-channel FPN on ``returned_layers`` (default layer1..layer4)."""
    _freeze_resnet(backbone, trainable_layers)
    if extra_blocks is None:
        extra_blocks = LastLevelMaxPool()
    if returned_layers is None:
        returned_layers = [1, 2, 3, 4]
    if min(returned_layers) <= 0 or max(returned_layers) >= 5:
        raise ValueError(f"Each returned layer should be in the range [1,4]. Got {returned_layers}")
    return_layers = {f"layer{k}": str(v) for v, k in enumerate(returned_layers)}
    in_channels_stage2 = backbone.inplanes // 8
    in_channels_list = [in_channels_stage2 * 2 ** (i - 1) for i in returned_layers]
    return BackboneWithFPN(backbone, return_layers, in_channels_list, 256, extra_blocks=extra_blocks,
                           norm_layer=norm_layer)


def _resnet50_fpn(weights, weights_backbone, progress, trainable_backbone_layers, trainable_bn=False,
                  make_extra_blocks=None, **fpn_kwargs):
    """The ResNet-50-FPN of a detection builder: 3 of 5 stages trainable by default when any weights load.

    v1 models (``trainable_bn=False``) freeze BatchNorm when any weights load; v2 ones keep it trainable.
    ``fpn_kwargs`` go to ``_resnet_fpn_extractor`` (returned_layers, norm_layer); ``make_extra_blocks``
    builds its extra blocks after the ResNet, in torchvision's order of random initialisation.
    """
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = FrozenBatchNorm2d if is_trained and not trainable_bn else nn.BatchNorm2d
    backbone = resnet.resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    if make_extra_blocks is not None:
        fpn_kwargs["extra_blocks"] = make_extra_blocks()
    return _resnet_fpn_extractor(backbone, trainable_backbone_layers, **fpn_kwargs)


def _validate_trainable_layers(is_trained, trainable_backbone_layers, max_value, default_value):
    """The number of trainable backbone stages: all of them without pretrained weights, else the given/default."""
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn("Changing trainable_backbone_layers has no effect if neither pretrained nor "
                          "pretrained_backbone have been set to True, falling back to "
                          f"trainable_backbone_layers={max_value} so that all layers are trainable")
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if trainable_backbone_layers < 0 or trainable_backbone_layers > max_value:
        raise ValueError(f"Trainable backbone layers should be in the range [0,{max_value}], "
                         f"got {trainable_backbone_layers} ")
    return trainable_backbone_layers


def mobilenet_backbone(*, backbone_name, weights=None, fpn, norm_layer=FrozenBatchNorm2d, trainable_layers=2,
                       returned_layers=None, extra_blocks=None, pretrained=None):
    """A named MobileNet's features (``weights`` optional), partly frozen, with an FPN or a 1x1 conv to 256."""
    weights = _legacy_weights(pretrained, weights)
    builder = _builder([mobilenetv2, mobilenetv3], backbone_name, "mobilenet")
    backbone = builder(weights=weights, norm_layer=norm_layer)
    return _mobilenet_extractor(backbone, fpn, trainable_layers, returned_layers, extra_blocks)


def _mobilenet_extractor(backbone, fpn, trainable_layers, returned_layers=None, extra_blocks=None, norm_layer=None):
    """Freeze a MobileNet's early stages; return BackboneWithFPN on stage outputs, or features + 1x1 conv."""
    backbone = backbone.features
    stage_indices = _stage_indices(backbone)
    num_stages = len(stage_indices)
    if trainable_layers < 0 or trainable_layers > num_stages:
        raise ValueError(f"Trainable layers should be in the range [0,{num_stages}], got {trainable_layers} ")
    freeze_before = len(backbone) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    for b in backbone[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    out_channels = 256
    if not fpn:
        m = nn.Sequential(backbone, nn.Conv2d(backbone[-1].out_channels, out_channels, 1))
        m.out_channels = out_channels
        return m
    if extra_blocks is None:
        extra_blocks = LastLevelMaxPool()
    if returned_layers is None:
        returned_layers = [num_stages - 2, num_stages - 1]
    if min(returned_layers) < 0 or max(returned_layers) >= num_stages:
        raise ValueError(f"Each returned layer should be in the range [0,{num_stages - 1}], got {returned_layers} ")
    return_layers = {f"{stage_indices[k]}": str(v) for v, k in enumerate(returned_layers)}
    in_channels_list = [backbone[stage_indices[i]].out_channels for i in returned_layers]
    return BackboneWithFPN(backbone, return_layers, in_channels_list, out_channels, extra_blocks=extra_blocks,
                           norm_layer=norm_layer)
