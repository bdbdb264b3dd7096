"""What every detector's constructor and forward share: input and target checks, the default transform,
backbone features as an ordered dict, and torchvision's ``eager_outputs``.

Used by GeneralizedRCNN (Faster/Mask/Keypoint R-CNN), RetinaNet, FCOS and SSD(lite).
"""
from collections import OrderedDict

import engine
from engine import nn

from .transform import GeneralizedRCNNTransform

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


class Detector(nn.Module):
    """Base of the detectors: ``eager_outputs`` gives the losses in training mode, the detections otherwise."""

    def eager_outputs(self, losses, detections):
        """The losses in training mode, the detections in eval mode."""
        if self.training:
            return losses
        return detections


def check_out_channels(backbone):
    """The detection heads are sized by the backbone's ``out_channels``: it must have one."""
    if not hasattr(backbone, "out_channels"):
        raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                         "channels (assumed to be the same for all the levels)")


def default_transform(min_size, max_size, image_mean, image_std, **kwargs):
    """GeneralizedRCNNTransform with ImageNet's mean and std where ``image_mean`` / ``image_std`` are None."""
    if image_mean is None:
        image_mean = IMAGENET_MEAN
    if image_std is None:
        image_std = IMAGENET_STD
    return GeneralizedRCNNTransform(min_size, max_size, image_mean, image_std, **kwargs)


def check_training_targets(targets, name_shape=True):
    """Training needs targets whose ``boxes`` are Tensor[N, 4]; ``name_shape``: the error names the shape found
    (all of torchvision's detectors but RetinaNet do)."""
    if targets is None:
        raise AssertionError("targets should not be none when in training mode")
    for target in targets:
        boxes = target["boxes"]
        if not isinstance(boxes, engine.Tensor):
            raise AssertionError(f"Expected target boxes to be of type Tensor, got {type(boxes)}.")
        if not (len(boxes.shape) == 2 and boxes.shape[-1] == 4):
            found = f", got {boxes.shape}" if name_shape else ""
            raise AssertionError(f"Expected target boxes to be a tensor of shape [N, 4]{found}.")


def check_degenerate_boxes(targets):
    """Refuse (transformed) target boxes with x2 <= x1 or y2 <= y1, naming the first one and its target."""
    if targets is None:
        return
    for target_idx, target in enumerate(targets):
        boxes = target["boxes"]
        degenerate_boxes = boxes[:, 2:] <= boxes[:, :2]
        if degenerate_boxes.any():
            bb_idx = engine.where(degenerate_boxes.any(dim=1))[0][0]
            degen_bb = boxes[bb_idx].tolist()
            raise AssertionError("All bounding boxes should have positive height and width."
                                 f" Found invalid box {degen_bb} for target at index {target_idx}.")


def image_size(img):
    """(H, W) of one input image; it needs at least two dimensions."""
    val = img.shape[-2:]
    if len(val) != 2:
        raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W instead got {val}")
    return (val[0], val[1])


def prepare_inputs(model, images, targets, name_shape=True):
    """Check the inputs, note the images' sizes, then resize and batch images and targets with ``model.transform``.
    ``name_shape``: as in ``check_training_targets``.

    Returns (ImageList, transformed targets, original (H, W) per image).
    """
    if model.training:
        check_training_targets(targets, name_shape)
    original_image_sizes = [image_size(img) for img in images]
    images, targets = model.transform(images, targets)
    check_degenerate_boxes(targets)
    return images, targets, original_image_sizes


def backbone_features(backbone, images):
    """The backbone's feature maps of the batched images as an ordered dict (a lone tensor becomes level '0')."""
    features = backbone(images.tensors)
    if isinstance(features, engine.Tensor):
        features = OrderedDict([("0", features)])
    return features
