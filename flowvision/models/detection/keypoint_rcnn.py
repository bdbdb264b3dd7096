"""Keypoint R-CNN (He et al. 2017) and its builder."""

__all__ = []
