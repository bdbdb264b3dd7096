"""ImageList: a padded batch of images together with their sizes before padding."""

__all__ = []
