"""Faster R-CNN (Ren et al. 2015) and its builders."""

__all__ = []
