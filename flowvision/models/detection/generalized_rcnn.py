"""GeneralizedRCNN: transform, backbone, RPN and RoI heads chained into one detector."""

__all__ = []
