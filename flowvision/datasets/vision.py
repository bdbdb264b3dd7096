"""Shapes shared by several datasets: ``PairedVisionDataset``, whose items go through the joint
``transforms(image, target)`` (VisionDataset folds ``transform``/``target_transform`` into it), and
``LabelledFilesDataset``, the classification sets read from lists of image files. ``StandardTransform`` and
``verify_str_arg`` (string options checked with torchvision's error wording) live in ``utils`` and are re-exported
here for the modules that import them from this one.
"""
from .folder import default_loader
from .utils import StandardTransform, VisionDataset, verify_str_arg

__all__ = ["LabelledFilesDataset", "PairedVisionDataset", "StandardTransform", "verify_str_arg"]


class PairedVisionDataset(VisionDataset):
    """A VisionDataset whose items go through the joint ``transforms``; subclasses call ``self._apply_joint``."""

    def _apply_joint(self, image, target):
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target


class LabelledFilesDataset(VisionDataset):
    """Items (``loader(self._image_files[i])``, ``self._labels[i]``); subclasses fill both lists."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader = loader
        self._image_files, self._labels = [], []

    def __getitem__(self, index):
        return self._apply(self.loader(self._image_files[index]), self._labels[index])

    def __len__(self):
        return len(self._image_files)
