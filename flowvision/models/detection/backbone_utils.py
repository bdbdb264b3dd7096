"""Backbones for the detectors: a ResNet or MobileNet trunk with a Feature Pyramid Network on top."""

__all__ = []
