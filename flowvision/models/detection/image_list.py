"""ImageList: a padded batch of images together with their sizes before padding."""

__all__ = ["ImageList"]


class ImageList:
    """A batch tensor of zero-padded images plus each image's (height, width) before padding."""

    def __init__(self, tensors, image_sizes):
        self.tensors = tensors
        self.image_sizes = image_sizes

    def to(self, device):
        """The same batch with its tensor moved to ``device``."""
        return ImageList(self.tensors.to(device), self.image_sizes)
