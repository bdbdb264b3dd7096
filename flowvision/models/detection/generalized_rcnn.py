"""The R-CNN framework: transform, backbone, region proposals, RoI heads, and back to the input's coordinates."""
from collections import OrderedDict

import engine
from engine import nn

__all__ = ["GeneralizedRCNN"]


def _check_target_boxes(targets):
    """Training targets must exist and hold (N, 4) box tensors."""
    if targets is None:
        raise AssertionError("targets should not be none when in training mode")
    for target in targets:
        boxes = target["boxes"]
        if not isinstance(boxes, engine.Tensor):
            raise AssertionError(f"Expected target boxes to be of type Tensor, got {type(boxes)}.")
        if not (len(boxes.shape) == 2 and boxes.shape[-1] == 4):
            raise AssertionError(f"Expected target boxes to be a tensor of shape [N, 4], got {boxes.shape}.")


def _check_degenerate_boxes(targets):
    """Every box needs x2 > x1 and y2 > y1; name the first bad one and its target otherwise."""
    for target_idx, target in enumerate(targets):
        boxes = target["boxes"]
        degenerate_boxes = boxes[:, 2:] <= boxes[:, :2]
        if degenerate_boxes.any():
            bb_idx = engine.where(degenerate_boxes.any(dim=1))[0][0]
            degen_bb = boxes[bb_idx].tolist()
            raise AssertionError("All bounding boxes should have positive height and width."
                                 f" Found invalid box {degen_bb} for target at index {target_idx}.")


class GeneralizedRCNN(nn.Module):
    """Runs ``transform`` -> ``backbone`` -> ``rpn`` -> ``roi_heads`` -> ``transform.postprocess``.

    Takes a list of CHW images (sizes may differ) and, in training, their targets; returns the loss
    dict in training mode and one detection dict per image (in input pixels) in eval mode.
    """

    def __init__(self, backbone, rpn, roi_heads, transform):
        super().__init__()
        self.transform = transform
        self.backbone = backbone
        self.rpn = rpn
        self.roi_heads = roi_heads

    def eager_outputs(self, losses, detections):
        """Losses in training mode, detections otherwise."""
        if self.training:
            return losses
        return detections

    def forward(self, images, targets=None):
        """Losses (training) or detections (eval) for a list of images."""
        if self.training:
            _check_target_boxes(targets)
        original_image_sizes = [self._image_size(img) for img in images]
        images, targets = self.transform(images, targets)
        if targets is not None:
            _check_degenerate_boxes(targets)
        features = self.backbone(images.tensors)
        if isinstance(features, engine.Tensor):
            features = OrderedDict([("0", features)])
        proposals, proposal_losses = self.rpn(images, features, targets)
        detections, detector_losses = self.roi_heads(features, proposals, images.image_sizes, targets)
        detections = self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
        losses = {}
        losses.update(detector_losses)
        losses.update(proposal_losses)
        return self.eager_outputs(losses, detections)

    @staticmethod
    def _image_size(img):
        """(H, W) of one image; it needs at least two dimensions."""
        val = img.shape[-2:]
        if len(val) != 2:
            raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W instead got {val}")
        return (val[0], val[1])
