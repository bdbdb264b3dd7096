"""SSDlite (Sandler et al. 2018) on MobileNetV3 and its builder."""

__all__ = []
