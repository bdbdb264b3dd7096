"""Mask R-CNN's mask targets, loss, inference and pasting of the predicted masks into the image."""

__all__ = []
