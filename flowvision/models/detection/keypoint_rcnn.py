"""Keypoint R-CNN (He et al. 2017): Faster R-CNN plus a conv branch that predicts one heatmap per keypoint per box.

Constructor arguments, defaults, module names (state_dict keys) and builders follow torchvision.
"""
from engine import nn
from engine.nn import functional as F

from ...ops import FrozenBatchNorm2d, MultiScaleRoIAlign
from ..registry import register_model
from ..resnet import resnet50
from ..weights import KeypointRCNN_ResNet50_FPN_Weights, ResNet50_Weights
from . import backbone_utils
from ._builder import finish_detection_model, resolve_detection_args
from .faster_rcnn import FasterRCNN

__all__ = ["KeypointRCNN", "KeypointRCNNHeads", "KeypointRCNNPredictor", "KeypointRCNN_ResNet50_FPN_Weights"]

NUM_COCO_KEYPOINTS = 17


class KeypointRCNN(FasterRCNN):
    """Faster R-CNN with a keypoint branch: ``keypoint_roi_pool`` (14x14), ``keypoint_head``, ``keypoint_predictor``.

    Training targets also need ``keypoints`` (FloatTensor[N, K, 3]: x, y, visibility); the loss dict gains
    ``loss_keypoint``. In eval mode each result gains ``keypoints`` (N, K, 3) and ``keypoints_scores`` (N, K).
    ``min_size`` defaults to multi-scale training sizes (640..800); other arguments are FasterRCNN's.
    """

    def __init__(self, backbone, num_classes=None, min_size=None, max_size=1333, image_mean=None, image_std=None,
                 rpn_anchor_generator=None, rpn_head=None, rpn_pre_nms_top_n_train=2000, rpn_pre_nms_top_n_test=1000,
                 rpn_post_nms_top_n_train=2000, rpn_post_nms_top_n_test=1000, rpn_nms_thresh=0.7,
                 rpn_fg_iou_thresh=0.7, rpn_bg_iou_thresh=0.3, rpn_batch_size_per_image=256,
                 rpn_positive_fraction=0.5, rpn_score_thresh=0.0, box_roi_pool=None, box_head=None,
                 box_predictor=None, box_score_thresh=0.05, box_nms_thresh=0.5, box_detections_per_img=100,
                 box_fg_iou_thresh=0.5, box_bg_iou_thresh=0.5, box_batch_size_per_image=512,
                 box_positive_fraction=0.25, bbox_reg_weights=None, keypoint_roi_pool=None, keypoint_head=None,
                 keypoint_predictor=None, num_keypoints=None, **kwargs):
        if not isinstance(keypoint_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"keypoint_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(keypoint_roi_pool)}")
        if min_size is None:
            min_size = (640, 672, 704, 736, 768, 800)
        if num_keypoints is not None and keypoint_predictor is not None:
            raise ValueError("num_keypoints should be None when keypoint_predictor is specified")
        if num_keypoints is None:
            num_keypoints = NUM_COCO_KEYPOINTS
        out_channels = backbone.out_channels
        if keypoint_roi_pool is None:
            keypoint_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=14,
                                                   sampling_ratio=2)
        if keypoint_head is None:
            keypoint_head = KeypointRCNNHeads(out_channels, (512,) * 8)
        if keypoint_predictor is None:
            keypoint_predictor = KeypointRCNNPredictor(512, num_keypoints)
        super().__init__(
            backbone, num_classes, min_size, max_size, image_mean, image_std, rpn_anchor_generator, rpn_head,
            rpn_pre_nms_top_n_train, rpn_pre_nms_top_n_test, rpn_post_nms_top_n_train, rpn_post_nms_top_n_test,
            rpn_nms_thresh, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image, rpn_positive_fraction,
            rpn_score_thresh, box_roi_pool, box_head, box_predictor, box_score_thresh, box_nms_thresh,
            box_detections_per_img, box_fg_iou_thresh, box_bg_iou_thresh, box_batch_size_per_image,
            box_positive_fraction, bbox_reg_weights, **kwargs)
        self.roi_heads.keypoint_roi_pool = keypoint_roi_pool
        self.roi_heads.keypoint_head = keypoint_head
        self.roi_heads.keypoint_predictor = keypoint_predictor


class KeypointRCNNHeads(nn.Sequential):
    """The keypoint branch's conv stack: one 3x3 conv + ReLU per entry of ``layers`` (their widths)."""

    def __init__(self, in_channels, layers):
        blocks = []
        next_feature = in_channels
        for out_channels in layers:
            blocks.append(nn.Conv2d(next_feature, out_channels, 3, stride=1, padding=1))
            blocks.append(nn.ReLU(inplace=True))
            next_feature = out_channels
        super().__init__(*blocks)
        for m in self.children():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(m.bias, 0)


class KeypointRCNNPredictor(nn.Module):
    """One heatmap logit map per keypoint: a stride-2 transposed conv, then 2x bilinear upsampling (14 -> 56)."""

    def __init__(self, in_channels, num_keypoints):
        super().__init__()
        deconv_kernel = 4
        self.kps_score_lowres = nn.ConvTranspose2d(in_channels, num_keypoints, deconv_kernel, stride=2,
                                                   padding=deconv_kernel // 2 - 1)
        nn.init.kaiming_normal_(self.kps_score_lowres.weight, mode="fan_out", nonlinearity="relu")
        nn.init.constant_(self.kps_score_lowres.bias, 0)
        self.up_scale = 2
        self.out_channels = num_keypoints

    def forward(self, x):
        x = self.kps_score_lowres(x)
        return F.interpolate(x, scale_factor=float(self.up_scale), mode="bilinear", align_corners=False,
                             recompute_scale_factor=False)


def _resolve_num_keypoints(weights, num_keypoints):
    """The weights' keypoint count (another one cannot load: torchvision raises too), else 17 by default."""
    if weights is None:
        return NUM_COCO_KEYPOINTS if num_keypoints is None else num_keypoints
    expected = len(weights.meta["keypoint_names"])
    if num_keypoints is not None and num_keypoints != expected:
        raise ValueError(f"The parameter 'num_keypoints' expected value {expected} but got {num_keypoints} instead.")
    return expected


@register_model
def keypointrcnn_resnet50_fpn(pretrained=False, progress=True, *, weights=None, num_classes=None, num_keypoints=None,
                              weights_backbone=ResNet50_Weights.IMAGENET1K_V1, trainable_backbone_layers=None,
                              pretrained_backbone=None, checkpoint_path=None, **kwargs):
    """Keypoint R-CNN with a ResNet-50-FPN backbone: 2 classes (background, person) and 17 COCO keypoints by default.

    ``pretrained="legacy"`` selects the older COCO_LEGACY checkpoint, as in torchvision.
    """
    if weights is None and pretrained == "legacy":
        weights = KeypointRCNN_ResNet50_FPN_Weights.COCO_LEGACY
    weights, num_classes, weights_backbone = resolve_detection_args(
        "keypointrcnn_resnet50_fpn", pretrained, weights, num_classes, weights_backbone, pretrained_backbone,
        default_num_classes=2)
    num_keypoints = _resolve_num_keypoints(weights, num_keypoints)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = backbone_utils._validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    backbone = backbone_utils._resnet_fpn_extractor(backbone, trainable_backbone_layers)
    model = KeypointRCNN(backbone, num_classes, num_keypoints=num_keypoints, **kwargs)
    model.default_cfg = {"classifier": ("roi_heads.box_predictor",)}
    return finish_detection_model(model, weights, progress, checkpoint_path)
