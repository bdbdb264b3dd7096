"""Mask R-CNN (He et al. 2017) and its builders."""

__all__ = []
