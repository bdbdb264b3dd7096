"""Region Proposal Network (Ren et al. 2015): objectness and box deltas per anchor, proposals, losses."""

__all__ = []
