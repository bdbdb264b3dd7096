"""The R-CNN framework: transform, backbone, region proposals, RoI heads, and back to the input's coordinates."""
from ._detector import Detector, backbone_features, prepare_inputs

__all__ = ["GeneralizedRCNN"]


class GeneralizedRCNN(Detector):
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

    def forward(self, images, targets=None):
        """Losses (training) or detections (eval) for a list of images."""
        images, targets, original_image_sizes = prepare_inputs(self, images, targets)
        features = backbone_features(self.backbone, images)
        proposals, proposal_losses = self.rpn(images, features, targets)
        detections, detector_losses = self.roi_heads(features, proposals, images.image_sizes, targets)
        detections = self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
        losses = {}
        losses.update(detector_losses)
        losses.update(proposal_losses)
        return self.eager_outputs(losses, detections)
