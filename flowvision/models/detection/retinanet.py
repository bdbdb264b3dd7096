"""RetinaNet (Lin et al. 2017, focal loss) and its builders."""

__all__ = []
