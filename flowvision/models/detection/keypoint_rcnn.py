"""Keypoint R-CNN (He et al. 2017): Faster R-CNN plus a conv branch that predicts one heatmap per keypoint per box.

Constructor arguments, defaults, module names (state_dict keys) and builders follow torchvision.
"""
from engine import nn
from engine.nn import functional as F

from ...ops import MultiScaleRoIAlign
from ..registry import register_model
from ..weights import KeypointRCNN_ResNet50_FPN_Weights, ResNet50_Weights
from .faster_rcnn import FasterRCNN, _finish, _kaiming_init, _resnet50_fpn_parts

__all__ = ["KeypointRCNN", "KeypointRCNNHeads", "KeypointRCNNPredictor", "KeypointRCNN_ResNet50_FPN_Weights"]

NUM_COCO_KEYPOINTS = 17


class KeypointRCNN(FasterRCNN):
    """Faster R-CNN with a keypoint branch: ``keypoint_roi_pool`` (14x14), ``keypoint_head``, ``keypoint_predictor``.

    Training targets also need ``keypoints`` (FloatTensor[N, K, 3]: x, y, visibility); the loss dict gains
    ``loss_keypoint``. In eval mode each result gains ``keypoints`` (N, K, 3) and ``keypoints_scores`` (N, K).
    ``min_size`` defaults to multi-scale training sizes (640..800); other arguments (positional ones in
    FasterRCNN's order) are FasterRCNN's.
    """

    def __init__(self, backbone, num_classes=None, min_size=None, *args, keypoint_roi_pool=None, keypoint_head=None,
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
        super().__init__(backbone, num_classes, min_size, *args, **kwargs)
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
        _kaiming_init(self)


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
    weights, num_classes, backbone = _resnet50_fpn_parts(
        "keypointrcnn_resnet50_fpn", pretrained, progress, weights, num_classes, weights_backbone, pretrained_backbone,
        trainable_backbone_layers, default_num_classes=2)
    num_keypoints = _resolve_num_keypoints(weights, num_keypoints)
    model = KeypointRCNN(backbone, num_classes, num_keypoints=num_keypoints, **kwargs)
    return _finish(model, weights, progress, checkpoint_path)
