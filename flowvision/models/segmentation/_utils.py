"""The shared segmentation model (backbone, head, optional auxiliary head) and the builders' argument logic."""
from collections import OrderedDict

from engine import nn
from engine.nn import functional as F

from .._helpers import load_checkpoint
from ..weights import load_pretrained, resolve_weights

__all__ = ["_SimpleSegmentationModel"]

LEGACY_TAG = "COCO_WITH_VOC_LABELS_V1"
VOC_NUM_CLASSES = 21


class _SimpleSegmentationModel(nn.Module):
    """``backbone`` returns ``{"out", "aux"}`` features; each head's logits are upsampled to the input size.

    ``forward`` returns an ordered dict with ``"out"`` and, when there is an auxiliary head, ``"aux"``.
    """

    def __init__(self, backbone, classifier, aux_classifier=None):
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x):
        input_shape = x.shape[-2:]
        features = self.backbone(x)
        result = OrderedDict()
        out = self.classifier(features["out"])
        result["out"] = F.interpolate(out, size=input_shape, mode="bilinear", align_corners=False)
        if self.aux_classifier is not None:
            aux = self.aux_classifier(features["aux"])
            result["aux"] = F.interpolate(aux, size=input_shape, mode="bilinear", align_corners=False)
        return result


def _override(param, actual, expected):
    """``expected``, unless the caller asked for a different value of ``param`` (then a ValueError)."""
    if actual is not None and actual != expected:
        raise ValueError(f"The parameter '{param}' expected value {expected} but got {actual} instead.")
    return expected


def resolve_segmentation_args(variant, pretrained, weights, num_classes, aux_loss, weights_backbone,
                              pretrained_backbone):
    """The (weights, num_classes, aux_loss, weights_backbone) a segmentation builder should use.

    Published weights fix the class count and the auxiliary head, and make backbone weights pointless;
    the legacy ``pretrained``/``pretrained_backbone`` flags map to the COCO and IMAGENET1K_V1 weights.
    """
    if weights is None and pretrained:
        weights = LEGACY_TAG
    weights = resolve_weights(variant, weights=weights)
    if pretrained_backbone is not None:
        weights_backbone = "IMAGENET1K_V1" if pretrained_backbone else None
    if weights is not None:
        weights_backbone = None
        num_classes = _override("num_classes", num_classes, len(weights.meta["categories"]))
        aux_loss = _override("aux_loss", aux_loss, True)
    elif num_classes is None:
        num_classes = VOC_NUM_CLASSES
    return weights, num_classes, aux_loss, weights_backbone


def finish_model(model, weights, progress, checkpoint_path):
    """Load the published ``weights`` or a local ``checkpoint_path`` into a freshly built model."""
    if weights is not None:
        load_pretrained(model, weights, progress=progress)
    if checkpoint_path:
        load_checkpoint(model, checkpoint_path)
    return model
