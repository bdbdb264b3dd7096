"""Mask R-CNN (He et al. 2017): Faster R-CNN plus a small FCN that predicts a binary mask per detected box.

Constructor arguments, defaults, module names (state_dict keys) and builders follow torchvision.
"""
from collections import OrderedDict

from engine import nn

from ...ops import Conv2dNormActivation, MultiScaleRoIAlign
from ..registry import register_model
from ..weights import MaskRCNN_ResNet50_FPN_V2_Weights, MaskRCNN_ResNet50_FPN_Weights, ResNet50_Weights
from .faster_rcnn import FasterRCNN, _kaiming_init, _resnet50_fpn_rcnn, _v2_heads

__all__ = ["MaskRCNN", "MaskRCNNHeads", "MaskRCNNPredictor", "MaskRCNN_ResNet50_FPN_Weights",
           "MaskRCNN_ResNet50_FPN_V2_Weights"]


class MaskRCNN(FasterRCNN):
    """Faster R-CNN with a mask branch: ``mask_roi_pool`` (14x14 RoIAlign), ``mask_head``, ``mask_predictor``.

    Training targets also need ``masks`` (UInt8Tensor[N, H, W]); the loss dict gains ``loss_mask``. In eval
    mode each result gains ``masks`` (FloatTensor[N, 1, H, W], probabilities pasted into the image).
    All other arguments (positional ones in FasterRCNN's order) are FasterRCNN's.
    """

    def __init__(self, backbone, num_classes=None, *args, mask_roi_pool=None, mask_head=None, mask_predictor=None,
                 **kwargs):
        if not isinstance(mask_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"mask_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(mask_roi_pool)}")
        if num_classes is not None and mask_predictor is not None:
            raise ValueError("num_classes should be None when mask_predictor is specified")
        out_channels = backbone.out_channels
        if mask_roi_pool is None:
            mask_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=14, sampling_ratio=2)
        if mask_head is None:
            mask_head = MaskRCNNHeads(out_channels, (256, 256, 256, 256), 1)
        if mask_predictor is None:
            mask_predictor = MaskRCNNPredictor(256, 256, num_classes)
        super().__init__(backbone, num_classes, *args, **kwargs)
        self.roi_heads.mask_roi_pool = mask_roi_pool
        self.roi_heads.mask_head = mask_head
        self.roi_heads.mask_predictor = mask_predictor


class MaskRCNNHeads(nn.Sequential):
    """The mask FCN: one 3x3 conv(-norm)-ReLU block per entry of ``layers`` (their widths), dilated by ``dilation``."""

    _version = 2

    def __init__(self, in_channels, layers, dilation, norm_layer=None):
        blocks = []
        next_feature = in_channels
        for layer_features in layers:
            blocks.append(Conv2dNormActivation(next_feature, layer_features, kernel_size=3, stride=1,
                                               padding=dilation, dilation=dilation, norm_layer=norm_layer))
            next_feature = layer_features
        super().__init__(*blocks)
        _kaiming_init(self)

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Version-1 checkpoints name the convolutions ``mask_fcn{i}`` (1-based) instead of ``{i-1}.0``."""
        if version is not None and version >= 2:
            return
        for i in range(len(self)):
            for kind in ("weight", "bias"):
                old_key = f"{prefix}mask_fcn{i + 1}.{kind}"
                if old_key in state_dict:
                    state_dict[f"{prefix}{i}.0.{kind}"] = state_dict.pop(old_key)


class MaskRCNNPredictor(nn.Sequential):
    """Upsample the mask features 2x (transposed conv + ReLU), then one 1x1 conv gives a mask logit map per class."""

    def __init__(self, in_channels, dim_reduced, num_classes):
        super().__init__(OrderedDict([
            ("conv5_mask", nn.ConvTranspose2d(in_channels, dim_reduced, 2, 2, 0)),
            ("relu", nn.ReLU(inplace=True)),
            ("mask_fcn_logits", nn.Conv2d(dim_reduced, num_classes, 1, 1, 0)),
        ]))
        for name, param in self.named_parameters():
            if "weight" in name:
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")


MASK_CLASSIFIER = ("roi_heads.box_predictor", "roi_heads.mask_predictor.mask_fcn_logits")


def _mask_v2_heads(out_channels):
    """Faster R-CNN v2's components plus a 4-conv mask head with BatchNorm."""
    heads = _v2_heads(out_channels)
    heads["mask_head"] = MaskRCNNHeads(out_channels, [256, 256, 256, 256], 1, norm_layer=nn.BatchNorm2d)
    return heads


@register_model
def maskrcnn_resnet50_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None,
                          weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers=None,
                          pretrained_backbone=None, checkpoint_path=None, **kwargs):
    """Mask R-CNN with a ResNet-50-FPN backbone (frozen BatchNorm when any weights are loaded)."""
    return _resnet50_fpn_rcnn(MaskRCNN, "maskrcnn_resnet50_fpn", pretrained, progress, weights, num_classes,
                              weights_backbone, trainable_backbone_layers, pretrained_backbone, checkpoint_path,
                              classifier=MASK_CLASSIFIER, **kwargs)


@register_model
def maskrcnn_resnet50_fpn_v2(pretrained=False, progress=True, *, weights=None, num_classes=None,
                             weights_backbone=None, trainable_backbone_layers=None, pretrained_backbone=None,
                             checkpoint_path=None, **kwargs):
    """Mask R-CNN v2 (Li et al. 2021): trainable BatchNorm everywhere, 2-conv RPN head, conv box and mask heads.

    As in torchvision, the backbone gets no ImageNet weights unless ``weights_backbone`` is given.
    """
    return _resnet50_fpn_rcnn(MaskRCNN, "maskrcnn_resnet50_fpn_v2", pretrained, progress, weights, num_classes,
                              weights_backbone, trainable_backbone_layers, pretrained_backbone, checkpoint_path,
                              v2_heads=_mask_v2_heads, classifier=MASK_CLASSIFIER, **kwargs)
