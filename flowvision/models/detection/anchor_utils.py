"""Anchor generators: AnchorGenerator (R-CNN, RetinaNet, FCOS) and DefaultBoxGenerator (SSD)."""

__all__ = []
