"""RoIHeads: the second stage of the R-CNN family (box, mask and keypoint branches)."""

__all__ = []
