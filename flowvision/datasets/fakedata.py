"""FakeData: random images with random labels, the same for the same index (for smoke tests)."""
import numpy as np
from PIL import Image

import engine

from .utils import VisionDataset

__all__ = ["FakeData"]


class FakeData(VisionDataset):
    """``size`` random PIL images of ``image_size`` (C, H, W) with labels in [0, num_classes).

    Item ``i`` is torchvision's: a standard normal (C, H, W) image and a label, both drawn after
    seeding with ``i + random_offset``, the image converted to 8 bits as ``ToPILImage`` converts a
    float tensor (times 255, truncated, wrapped modulo 256). The global generator is left untouched.
    As in torchvision, a negative index is not wrapped (it is a seed of its own), and ``target_transform``
    is given the label as a 0-d int64 tensor; a tensor it returns is turned back into a Python number.
    """

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = tuple(image_size)
        self.random_offset = random_offset

    def __getitem__(self, index):
        if index >= self.size:
            raise IndexError(f"{type(self).__name__} index out of range")
        generator = engine.Generator().manual_seed(index + self.random_offset)
        pixels = engine.randn(*self.image_size, generator=generator).numpy()
        target = engine.randint(0, self.num_classes, (1,), generator=generator)[0]
        array = (pixels * np.float32(255)).astype(np.int32).astype(np.uint8).transpose(1, 2, 0)
        img = Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array)
        img, target = self._apply(img, target)
        return img, target.item() if isinstance(target, engine.Tensor) else target

    def __len__(self):
        return self.size
