"""What every detection builder does around the model itself: resolve weights arguments, load, fix eps.

torchvision's detection builders share this logic; differences from it: ``num_classes`` may differ
from the weights' (fine-tuning keeps everything but the class-dependent predictors, with a warning),
and the legacy checkpoints' FrozenBatchNorm eps comes from the manifest instead of a per-builder check.
"""
from flowvision.ops.misc import FrozenBatchNorm2d

from .._helpers import load_checkpoint
from ..weights import load_pretrained, resolve_weights

__all__ = ["resolve_detection_args", "finish_detection_model", "overwrite_eps"]

COCO_NUM_CLASSES = 91


def resolve_detection_args(variant, pretrained, weights, num_classes, weights_backbone, pretrained_backbone=None,
                           default_num_classes=COCO_NUM_CLASSES):
    """The (weights, num_classes, weights_backbone) a detection builder should use.

    ``pretrained=True`` alone means the default COCO weights; with detector weights the backbone's
    ImageNet weights would be overwritten, so none are loaded; ``num_classes`` defaults to the weights'.
    """
    if weights is None and pretrained:
        weights = "DEFAULT"
    weights = resolve_weights(variant, weights=weights)
    if pretrained_backbone is not None:
        weights_backbone = "IMAGENET1K_V1" if pretrained_backbone else None
    if weights is not None:
        weights_backbone = None
        if num_classes is None:
            num_classes = weights.meta["num_classes"]
    elif num_classes is None:
        num_classes = default_num_classes
    return weights, num_classes, weights_backbone


def overwrite_eps(model, eps):
    """Set the eps of every FrozenBatchNorm2d in ``model`` (older checkpoints were trained with eps=0)."""
    for module in model.modules():
        if isinstance(module, FrozenBatchNorm2d):
            module.eps = eps


def finish_detection_model(model, weights, progress, checkpoint_path):
    """Load the published ``weights`` (then their FrozenBatchNorm eps) or a local ``checkpoint_path``."""
    if weights is not None:
        load_pretrained(model, weights, progress=progress)
        eps = weights.meta.get("frozen_bn_eps")
        if eps is not None:
            overwrite_eps(model, eps)
    if checkpoint_path:
        load_checkpoint(model, checkpoint_path)
    return model
