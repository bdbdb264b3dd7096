"""Mask R-CNN (He et al. 2017): Faster R-CNN plus a small FCN that predicts a binary mask per detected box.

Constructor arguments, defaults, module names (state_dict keys) and builders follow torchvision.
"""
from collections import OrderedDict

from engine import nn

from ...ops import Conv2dNormActivation, FrozenBatchNorm2d, MultiScaleRoIAlign
from ..registry import register_model
from ..resnet import resnet50
from ..weights import MaskRCNN_ResNet50_FPN_V2_Weights, MaskRCNN_ResNet50_FPN_Weights, ResNet50_Weights
from . import backbone_utils
from ._builder import finish_detection_model, resolve_detection_args
from .faster_rcnn import FasterRCNN, FastRCNNConvFCHead, _default_anchorgen
from .rpn import RPNHead

__all__ = ["MaskRCNN", "MaskRCNNHeads", "MaskRCNNPredictor", "MaskRCNN_ResNet50_FPN_Weights",
           "MaskRCNN_ResNet50_FPN_V2_Weights"]


class MaskRCNN(FasterRCNN):
    """Faster R-CNN with a mask branch: ``mask_roi_pool`` (14x14 RoIAlign), ``mask_head``, ``mask_predictor``.

    Training targets also need ``masks`` (UInt8Tensor[N, H, W]); the loss dict gains ``loss_mask``. In eval
    mode each result gains ``masks`` (FloatTensor[N, 1, H, W], probabilities pasted into the image).
    All other arguments are FasterRCNN's.
    """

    def __init__(self, backbone, num_classes=None, min_size=800, max_size=1333, image_mean=None, image_std=None,
                 rpn_anchor_generator=None, rpn_head=None, rpn_pre_nms_top_n_train=2000, rpn_pre_nms_top_n_test=1000,
                 rpn_post_nms_top_n_train=2000, rpn_post_nms_top_n_test=1000, rpn_nms_thresh=0.7,
                 rpn_fg_iou_thresh=0.7, rpn_bg_iou_thresh=0.3, rpn_batch_size_per_image=256,
                 rpn_positive_fraction=0.5, rpn_score_thresh=0.0, box_roi_pool=None, box_head=None,
                 box_predictor=None, box_score_thresh=0.05, box_nms_thresh=0.5, box_detections_per_img=100,
                 box_fg_iou_thresh=0.5, box_bg_iou_thresh=0.5, box_batch_size_per_image=512,
                 box_positive_fraction=0.25, bbox_reg_weights=None, mask_roi_pool=None, mask_head=None,
                 mask_predictor=None, **kwargs):
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
        super().__init__(
            backbone, num_classes, min_size, max_size, image_mean, image_std, rpn_anchor_generator, rpn_head,
            rpn_pre_nms_top_n_train, rpn_pre_nms_top_n_test, rpn_post_nms_top_n_train, rpn_post_nms_top_n_test,
            rpn_nms_thresh, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image, rpn_positive_fraction,
            rpn_score_thresh, box_roi_pool, box_head, box_predictor, box_score_thresh, box_nms_thresh,
            box_detections_per_img, box_fg_iou_thresh, box_bg_iou_thresh, box_batch_size_per_image,
            box_positive_fraction, bbox_reg_weights, **kwargs)
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
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)

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


def _finish(model, weights, progress, checkpoint_path):
    """Mark the class-dependent layers for fine-tuning loads, then load weights."""
    model.default_cfg = {"classifier": ("roi_heads.box_predictor", "roi_heads.mask_predictor.mask_fcn_logits")}
    return finish_detection_model(model, weights, progress, checkpoint_path)


@register_model
def maskrcnn_resnet50_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None,
                          weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers=None,
                          pretrained_backbone=None, checkpoint_path=None, **kwargs):
    """Mask R-CNN with a ResNet-50-FPN backbone (frozen BatchNorm when any weights are loaded)."""
    weights, num_classes, weights_backbone = resolve_detection_args(
        "maskrcnn_resnet50_fpn", pretrained, weights, num_classes, weights_backbone, pretrained_backbone)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = backbone_utils._validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    backbone = backbone_utils._resnet_fpn_extractor(backbone, trainable_backbone_layers)
    model = MaskRCNN(backbone, num_classes=num_classes, **kwargs)
    return _finish(model, weights, progress, checkpoint_path)


@register_model
def maskrcnn_resnet50_fpn_v2(pretrained=False, progress=True, *, weights=None, num_classes=None,
                             weights_backbone=None, trainable_backbone_layers=None, pretrained_backbone=None,
                             checkpoint_path=None, **kwargs):
    """Mask R-CNN v2 (Li et al. 2021): trainable BatchNorm everywhere, 2-conv RPN head, conv box and mask heads.

    As in torchvision, the backbone gets no ImageNet weights unless ``weights_backbone`` is given.
    """
    weights, num_classes, weights_backbone = resolve_detection_args(
        "maskrcnn_resnet50_fpn_v2", pretrained, weights, num_classes, weights_backbone, pretrained_backbone)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = backbone_utils._validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    backbone = resnet50(weights=weights_backbone, progress=progress)
    backbone = backbone_utils._resnet_fpn_extractor(backbone, trainable_backbone_layers, norm_layer=nn.BatchNorm2d)
    rpn_anchor_generator = _default_anchorgen()
    rpn_head = RPNHead(backbone.out_channels, rpn_anchor_generator.num_anchors_per_location()[0], conv_depth=2)
    box_head = FastRCNNConvFCHead((backbone.out_channels, 7, 7), [256, 256, 256, 256], [1024],
                                  norm_layer=nn.BatchNorm2d)
    mask_head = MaskRCNNHeads(backbone.out_channels, [256, 256, 256, 256], 1, norm_layer=nn.BatchNorm2d)
    model = MaskRCNN(backbone, num_classes=num_classes, rpn_anchor_generator=rpn_anchor_generator,
                     rpn_head=rpn_head, box_head=box_head, mask_head=mask_head, **kwargs)
    return _finish(model, weights, progress, checkpoint_path)
