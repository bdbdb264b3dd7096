"""Base for the datasets whose items pair an image with a structured target (detection, segmentation, ...).

torchvision's datasets take, besides ``transform``/``target_transform``, a joint ``transforms(image, target)``;
the two ways are exclusive, and the separate pair is folded into ``transforms`` so that either way one callable
transforms an item. ``LabelledFilesDataset`` is the common shape of the classification sets read from lists of
image files, and ``verify_str_arg`` checks string options with torchvision's error wording.
"""
from .folder import default_loader
from .utils import VisionDataset

__all__ = ["LabelledFilesDataset", "PairedVisionDataset", "StandardTransform", "verify_str_arg"]


class StandardTransform:
    """``transform`` on the image and ``target_transform`` on the target, as one ``(image, target)`` callable."""

    def __init__(self, transform=None, target_transform=None):
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, image, target):
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self):
        parts = [f"{name}: {getattr(self, name)!r}" for name in ("transform", "target_transform")
                 if getattr(self, name) is not None]
        return f"{type(self).__name__}({', '.join(parts)})"


class PairedVisionDataset(VisionDataset):
    """A VisionDataset that also takes the joint ``transforms``; subclasses call ``self._apply_joint``."""

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        separate = transform is not None or target_transform is not None
        if transforms is not None and separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        super().__init__(root, transform, target_transform)
        self.transforms = StandardTransform(transform, target_transform) if separate else transforms

    def _apply_joint(self, image, target):
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target


class LabelledFilesDataset(VisionDataset):
    """Items (``loader(self._image_files[i])``, ``self._labels[i]``); subclasses fill both lists."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader):
        super().__init__(root, transform, target_transform)
        self.loader = loader
        self._image_files, self._labels = [], []

    def __getitem__(self, index):
        return self._apply(self.loader(self._image_files[index]), self._labels[index])

    def __len__(self):
        return len(self._image_files)


def verify_str_arg(value, arg=None, valid_values=None):
    """``value`` when it is a string among ``valid_values`` (any string when None); a ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"Expected type str{f' for argument {arg}' if arg else ''}, but got type {type(value)}.")
    if valid_values is not None and value not in valid_values:
        listed = ", ".join(repr(v) for v in valid_values)
        raise ValueError(f"Unknown value '{value}' for argument {arg}. Valid values are {{{listed}}}.")
    return value
