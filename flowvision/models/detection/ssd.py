"""SSD (Liu et al. 2016, "SSD: Single Shot MultiBox Detector") and the ssd300_vgg16 builder.

Names, arguments, defaults, state_dict keys and outputs follow torchvision.models.detection.ssd.
"""
import warnings
from collections import OrderedDict

import engine as torch
from engine import nn
from engine.nn import functional as F

from ...ops import boxes as box_ops
from ..registry import register_model
from ..vgg import vgg16
from ..weights import SSD300_VGG16_Weights, VGG16_Weights
from . import _utils as det_utils
from ._builder import finish_detection_model, resolve_detection_args
from ._detector import Detector, backbone_features, default_transform, prepare_inputs
from ._one_stage import _iou_matcher, _match_anchors, _per_anchor
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers

__all__ = ["SSD", "SSD300_VGG16_Weights", "SSDHead", "SSDScoringHead", "SSDClassificationHead", "SSDRegressionHead",
           "SSDFeatureExtractorVGG", "ssd300_vgg16"]


def _xavier_init(conv):
    """Xavier-uniform weights and zero biases for every Conv2d inside ``conv``."""
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


def retrieve_out_channels(model, size):
    """Channel counts of ``model``'s feature maps, found by running it once on a zeros image of ``size`` (w, h)."""
    in_training = model.training
    model.eval()
    with torch.no_grad():
        features = model(torch.zeros((1, 3, size[1], size[0])))
    if isinstance(features, torch.Tensor):
        features = OrderedDict([("0", features)])
    model.train(in_training)
    return [x.size(1) for x in features.values()]


def _topk_min(input, orig_kval, axis):
    """``orig_kval`` capped at the length of ``input`` along ``axis`` (a valid top-k count)."""
    return min(orig_kval, input.size(axis))


class SSDHead(nn.Module):
    """Per-level 3x3 convolutions predicting class logits and box offsets for every default box."""

    def __init__(self, in_channels, num_anchors, num_classes):
        super().__init__()
        self.classification_head = SSDClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = SSDRegressionHead(in_channels, num_anchors)

    def forward(self, x):
        return {
            "bbox_regression": self.regression_head(x),
            "cls_logits": self.classification_head(x),
        }


class SSDScoringHead(nn.Module):
    """Run one module per feature level and concatenate the (N, H*W*A, num_columns) results over levels."""

    def __init__(self, module_list, num_columns):
        super().__init__()
        self.module_list = module_list
        self.num_columns = num_columns

    def _get_result_from_module_list(self, x, idx):
        """The output of the module of level ``idx`` (negative counts from the end) on ``x``."""
        return self.module_list[idx](x)

    def _flatten_level(self, results):
        """(N, A * K, H, W) -> (N, H * W * A, K), anchors ordered by position then anchor."""
        return _per_anchor(results, self.num_columns)

    def forward(self, x):
        all_results = [self._flatten_level(self._get_result_from_module_list(features, i))
                       for i, features in enumerate(x)]
        return torch.cat(all_results, dim=1)


class SSDClassificationHead(SSDScoringHead):
    """A 3x3 conv per level giving ``num_classes`` logits per default box."""

    def __init__(self, in_channels, num_anchors, num_classes):
        cls_logits = nn.ModuleList()
        for channels, anchors in zip(in_channels, num_anchors):
            cls_logits.append(nn.Conv2d(channels, num_classes * anchors, kernel_size=3, padding=1))
        _xavier_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDRegressionHead(SSDScoringHead):
    """A 3x3 conv per level giving 4 box offsets per default box."""

    def __init__(self, in_channels, num_anchors):
        bbox_reg = nn.ModuleList()
        for channels, anchors in zip(in_channels, num_anchors):
            bbox_reg.append(nn.Conv2d(channels, 4 * anchors, kernel_size=3, padding=1))
        _xavier_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSD(Detector):
    """SSD: a backbone giving several feature maps, a head scoring default boxes on each, and the
    fixed-size transform; returns losses in training (with ``targets``) and detections in eval mode.

    ``positive_fraction`` sets the hard-negative ratio ((1 - f) / f negatives per positive);
    ``iou_thresh`` is the anchor/ground-truth IoU that makes an anchor positive.
    """

    def __init__(self, backbone, anchor_generator, size, num_classes, image_mean=None, image_std=None, head=None,
                 score_thresh=0.01, nms_thresh=0.45, detections_per_img=200, iou_thresh=0.5,
                 topk_candidates=400, positive_fraction=0.25, **kwargs):
        super().__init__()
        self.backbone = backbone
        self.anchor_generator = anchor_generator
        self.box_coder = det_utils.BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
        if head is None:
            head = self._default_head(backbone, anchor_generator, size, num_classes)
        self.head = head
        self.proposal_matcher = det_utils.SSDMatcher(iou_thresh)
        self.transform = default_transform(min(size), max(size), image_mean, image_std, size_divisible=1,
                                           fixed_size=size, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates
        self.neg_to_pos_ratio = (1.0 - positive_fraction) / positive_fraction

    @staticmethod
    def _default_head(backbone, anchor_generator, size, num_classes):
        """An SSDHead sized by the backbone's ``out_channels`` (or a probe run) and the anchors per location."""
        if hasattr(backbone, "out_channels"):
            out_channels = backbone.out_channels
        else:
            out_channels = retrieve_out_channels(backbone, size)
        if len(out_channels) != len(anchor_generator.aspect_ratios):
            raise ValueError(f"The length of the output channels from the backbone ({len(out_channels)}) do not "
                             "match the length of the anchor generator aspect ratios "
                             f"({len(anchor_generator.aspect_ratios)})")
        return SSDHead(out_channels, anchor_generator.num_anchors_per_location(), num_classes)

    def _hard_negatives(self, cls_loss, foreground_idxs):
        """Mask of the highest-loss background anchors, ``neg_to_pos_ratio`` per positive of each image."""
        num_negative = self.neg_to_pos_ratio * foreground_idxs.sum(1, keepdim=True)
        negative_loss = cls_loss.detach().clone()
        negative_loss[foreground_idxs] = -float("inf")
        _, idx = negative_loss.sort(1, descending=True)
        return idx.sort(1)[1] < num_negative

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs):
        """Smooth-L1 box loss on matched anchors and cross-entropy on positives plus mined hard negatives,
        both divided by the number of positives."""
        bbox_regression = head_outputs["bbox_regression"]
        cls_logits = head_outputs["cls_logits"]
        num_foreground = 0
        bbox_loss = []
        cls_targets = []
        for targets_per_image, bbox_regression_per_image, cls_logits_per_image, anchors_per_image, \
                matched_idxs_per_image in zip(targets, bbox_regression, cls_logits, anchors, matched_idxs):
            foreground_idxs_per_image = torch.where(matched_idxs_per_image >= 0)[0]
            foreground_matched_idxs_per_image = matched_idxs_per_image[foreground_idxs_per_image]
            num_foreground += foreground_matched_idxs_per_image.numel()
            matched_gt_boxes_per_image = targets_per_image["boxes"][foreground_matched_idxs_per_image]
            bbox_regression_per_image = bbox_regression_per_image[foreground_idxs_per_image, :]
            anchors_per_image = anchors_per_image[foreground_idxs_per_image, :]
            target_regression = self.box_coder.encode_single(matched_gt_boxes_per_image, anchors_per_image)
            bbox_loss.append(F.smooth_l1_loss(bbox_regression_per_image, target_regression, reduction="sum"))
            gt_classes_target = torch.zeros((cls_logits_per_image.size(0),), dtype=targets_per_image["labels"].dtype,
                                            device=cls_logits_per_image.device)
            matched_labels = targets_per_image["labels"][foreground_matched_idxs_per_image]
            gt_classes_target[foreground_idxs_per_image] = matched_labels
            cls_targets.append(gt_classes_target)
        bbox_loss = torch.stack(bbox_loss)
        cls_targets = torch.stack(cls_targets)
        num_classes = cls_logits.size(-1)
        cls_loss = F.cross_entropy(cls_logits.view(-1, num_classes), cls_targets.view(-1), reduction="none")
        cls_loss = cls_loss.view(cls_targets.size())
        foreground_idxs = cls_targets > 0
        background_idxs = self._hard_negatives(cls_loss, foreground_idxs)
        N = max(1, num_foreground)
        return {
            "bbox_regression": bbox_loss.sum() / N,
            "classification": (cls_loss[foreground_idxs].sum() + cls_loss[background_idxs].sum()) / N,
        }

    def _match(self, anchors, targets):
        """Per image, the matched ground-truth index of every anchor (-1: background)."""
        return _match_anchors(anchors, targets, _iou_matcher(self.proposal_matcher))

    def forward(self, images, targets=None):
        images, targets, original_image_sizes = prepare_inputs(self, images, targets)
        features = list(backbone_features(self.backbone, images).values())
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        losses = {}
        detections = []
        if self.training:
            matched_idxs = self._match(anchors, targets)
            losses = self.compute_loss(targets, head_outputs, anchors, matched_idxs)
        else:
            detections = self.postprocess_detections(head_outputs, anchors, images.image_sizes)
            detections = self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
        return self.eager_outputs(losses, detections)

    def _candidates(self, scores):
        """Anchor indices, scores and labels of each foreground class's top ``topk_candidates`` scores above
        ``score_thresh``, class by class (all classes at once: one top-k over the anchors)."""
        class_scores = scores[:, 1:]
        masked = torch.where(class_scores > self.score_thresh, class_scores,
                             torch.full_like(class_scores, -float("inf")))
        num_topk = _topk_min(masked, self.topk_candidates, 0)
        top_scores, top_idxs = masked.topk(num_topk, dim=0)
        top_scores, top_idxs = top_scores.t(), top_idxs.t()
        keep = top_scores > self.score_thresh
        labels = torch.where(keep)[0] + 1
        return top_idxs[keep], top_scores[keep], labels

    def postprocess_detections(self, head_outputs, image_anchors, image_shapes):
        """Decode boxes, keep per class the top-scoring candidates, run per-class NMS, keep the best
        ``detections_per_img``."""
        bbox_regression = head_outputs["bbox_regression"]
        pred_scores = F.softmax(head_outputs["cls_logits"], dim=-1)
        detections = []
        for boxes, scores, anchors, image_shape in zip(bbox_regression, pred_scores, image_anchors, image_shapes):
            boxes = self.box_coder.decode_single(boxes, anchors)
            boxes = box_ops.clip_boxes_to_image(boxes, image_shape)
            anchor_idxs, image_scores, image_labels = self._candidates(scores)
            image_boxes = boxes[anchor_idxs]
            keep = box_ops.batched_nms(image_boxes, image_scores, image_labels, self.nms_thresh)
            keep = keep[: self.detections_per_img]
            detections.append({
                "boxes": image_boxes[keep],
                "scores": image_scores[keep],
                "labels": image_labels[keep],
            })
        return detections


class SSDFeatureExtractorVGG(nn.Module):
    """VGG-16 cut at conv4_3 (L2-normalised and rescaled by a learned per-channel weight), then conv5 with
    a 3x3/1 pool and dilated fc6/fc7 convolutions, then the extra down-sampling blocks (one more if ``highres``).

    The third max pool of ``backbone`` is switched to ceil mode (38x38 conv4_3 maps at 300x300, as the paper).
    """

    def __init__(self, backbone, highres):
        super().__init__()
        _, _, maxpool3_pos, maxpool4_pos, _ = (i for i, layer in enumerate(backbone) if isinstance(layer, nn.MaxPool2d))
        backbone[maxpool3_pos].ceil_mode = True
        self.scale_weight = nn.Parameter(torch.ones(512) * 20)
        self.features = nn.Sequential(*backbone[:maxpool4_pos])
        extra = nn.ModuleList([
            _vgg_extra_block(1024, 256, 512, stride=2, padding=1),  # conv8_2
            _vgg_extra_block(512, 128, 256, stride=2, padding=1),  # conv9_2
            _vgg_extra_block(256, 128, 256),  # conv10_2
            _vgg_extra_block(256, 128, 256),  # conv11_2
        ])
        if highres:
            extra.append(_vgg_extra_block(256, 128, 256, kernel_size=4))  # conv12_2 (SSD512)
        _xavier_init(extra)
        fc = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=False),  # pool5, 3x3/1
            nn.Conv2d(in_channels=512, out_channels=1024, kernel_size=3, padding=6, dilation=6),  # atrous fc6
            nn.ReLU(inplace=True),
            nn.Conv2d(in_channels=1024, out_channels=1024, kernel_size=1),  # fc7
            nn.ReLU(inplace=True),
        )
        _xavier_init(fc)
        extra.insert(0, nn.Sequential(*backbone[maxpool4_pos:-1], fc))  # conv5_3 (without pool5) and fc
        self.extra = extra

    def forward(self, x):
        x = self.features(x)
        rescaled = self.scale_weight.view(1, -1, 1, 1) * F.normalize(x)
        output = [rescaled]
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _vgg_extra_block(in_channels, mid_channels, out_channels, kernel_size=3, stride=1, padding=0):
    """1x1 reduction then a (usually strided) kxk convolution, each followed by ReLU."""
    return nn.Sequential(
        nn.Conv2d(in_channels, mid_channels, kernel_size=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(mid_channels, out_channels, kernel_size=kernel_size, padding=padding, stride=stride),
        nn.ReLU(inplace=True),
    )


def _vgg_extractor(backbone, highres, trainable_layers):
    """Freeze all but the last ``trainable_layers`` stages of a VGG's features and wrap them for SSD."""
    backbone = backbone.features
    stage_indices = [0] + [i for i, b in enumerate(backbone) if isinstance(b, nn.MaxPool2d)][:-1]
    num_stages = len(stage_indices)
    if not 0 <= trainable_layers <= num_stages:
        raise AssertionError(f"trainable_layers should be in the range [0, {num_stages}]. "
                             f"Instead got {trainable_layers}")
    freeze_before = len(backbone) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    for b in backbone[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    return SSDFeatureExtractorVGG(backbone, highres)


def _ignore_size(kwargs):
    """Drop a ``size`` argument (the SSD builders fix it) with torchvision's warning."""
    if "size" in kwargs:
        warnings.warn("The size of the model is already fixed; ignoring the parameter.")
        kwargs.pop("size")


@register_model
def ssd300_vgg16(pretrained=False, progress=True, *, weights=None, num_classes=None,
                 weights_backbone=VGG16_Weights.IMAGENET1K_FEATURES, trainable_backbone_layers=None,
                 pretrained_backbone=None, checkpoint_path=None, **kwargs):
    """SSD300 on VGG-16 (COCO_V1: 25.1 box mAP); ``trainable_backbone_layers`` in [0, 5], default 4."""
    if pretrained_backbone is not None:  # the legacy flag means the SSD-specific VGG features here
        weights_backbone = VGG16_Weights.IMAGENET1K_FEATURES if pretrained_backbone else None
    weights, num_classes, weights_backbone = resolve_detection_args(
        "ssd300_vgg16", pretrained, weights, num_classes, weights_backbone)
    _ignore_size(kwargs)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 4)
    backbone = vgg16(weights=weights_backbone, progress=progress)
    backbone = _vgg_extractor(backbone, False, trainable_backbone_layers)
    anchor_generator = DefaultBoxGenerator(
        [[2], [2, 3], [2, 3], [2, 3], [2], [2]],
        scales=[0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05],
        steps=[8, 16, 32, 64, 100, 300],
    )
    defaults = {
        "image_mean": [0.48235, 0.45882, 0.40784],  # the backbone's (Caffe) input scaling:
        "image_std": [1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0],  # mean-subtracted 0-255 pixels
    }
    model = SSD(backbone, anchor_generator, (300, 300), num_classes, **{**defaults, **kwargs})
    model.default_cfg = {"classifier": ("head.classification_head",)}
    return finish_detection_model(model, weights, progress, checkpoint_path)
