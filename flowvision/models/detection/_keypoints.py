"""Keypoint R-CNN's heatmap targets, loss and decoding of heatmaps to keypoints."""

__all__ = []
