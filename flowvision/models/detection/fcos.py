"""FCOS (Tian et al. 2019): anchor-free one-stage detection, and its builder."""

__all__ = []
