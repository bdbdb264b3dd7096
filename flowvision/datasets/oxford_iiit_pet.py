"""The Oxford-IIIT Pet dataset: 37 cat and dog breeds with trimap segmentations.

``oxford-iiit-pet/annotations/<split>.txt`` lists ``<image id> <class 1-37> <species 1-2> <breed id>``;
images are ``images/<id>.jpg``, trimaps ``annotations/trimaps/<id>.png``.
"""
import pathlib

from PIL import Image

from .utils import download_and_extract_archive
from .vision import PairedVisionDataset, verify_str_arg

__all__ = ["OxfordIIITPet"]


class OxfordIIITPet(PairedVisionDataset):
    """Items are (RGB PIL image, target): one target type gives it alone, several a tuple, an empty list None.

    Args:
        split: ``"trainval"`` or ``"test"``.
        target_types: ``"category"`` (breed 0-36), ``"binary-category"`` (0 cat, 1 dog), ``"segmentation"``
            (the trimap PIL image), or a sequence of them.
    """

    _RESOURCES = (("https://www.robots.ox.ac.uk/~vgg/data/pets/data/images.tar.gz", "5c4f3ee8e5d25df40f4fd59a7f44e54c"),
                  ("https://www.robots.ox.ac.uk/~vgg/data/pets/data/annotations.tar.gz",
                   "95a8c909bbe2e81eed6a22bccdf3f68f"))
    _VALID_TARGET_TYPES = ("category", "binary-category", "segmentation")

    def __init__(self, root, split="trainval", target_types="category", transforms=None, transform=None,
                 target_transform=None, download=False):
        self._split = verify_str_arg(split, "split", ("trainval", "test"))
        if isinstance(target_types, str):
            target_types = [target_types]
        self._target_types = [verify_str_arg(t, "target_types", self._VALID_TARGET_TYPES) for t in target_types]
        super().__init__(root, transforms, transform, target_transform)
        self._base_folder = pathlib.Path(self.root) / "oxford-iiit-pet"
        self._images_folder = self._base_folder / "images"
        self._anns_folder = self._base_folder / "annotations"
        self._segs_folder = self._anns_folder / "trimaps"
        if download and not self._check_exists():
            for url, md5 in self._RESOURCES:
                download_and_extract_archive(url, str(self._base_folder), md5=md5)
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        image_ids, self._labels, self._bin_labels = [], [], []
        with open(self._anns_folder / f"{self._split}.txt") as f:
            for line in f:
                image_id, label, species, _ = line.strip().split()
                image_ids.append(image_id)
                self._labels.append(int(label) - 1)
                self._bin_labels.append(int(species) - 1)
        self.bin_classes = ["Cat", "Dog"]
        breeds = sorted({(image_id.rsplit("_", 1)[0], label) for image_id, label in zip(image_ids, self._labels)},
                        key=lambda breed_and_label: breed_and_label[1])
        self.classes = [" ".join(part.title() for part in breed.split("_")) for breed, _ in breeds]
        self.bin_class_to_idx = {name: i for i, name in enumerate(self.bin_classes)}
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self._images = [self._images_folder / f"{image_id}.jpg" for image_id in image_ids]
        self._segs = [self._segs_folder / f"{image_id}.png" for image_id in image_ids]

    def _check_exists(self):
        return self._images_folder.is_dir() and self._anns_folder.is_dir()

    def _target(self, index, target_type):
        if target_type == "category":
            return self._labels[index]
        if target_type == "binary-category":
            return self._bin_labels[index]
        return Image.open(self._segs[index])

    def __getitem__(self, index):
        targets = [self._target(index, t) for t in self._target_types]
        target = None if not targets else targets[0] if len(targets) == 1 else tuple(targets)
        return self._apply_joint(Image.open(self._images[index]).convert("RGB"), target)

    def __len__(self):
        return len(self._images)
