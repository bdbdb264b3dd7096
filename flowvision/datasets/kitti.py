"""KITTI 2D object detection: ``Kitti/raw/<training|testing>/image_2/*.png`` with one label file per training image
in ``label_2`` (space-separated: type, truncation, occlusion, alpha, 2-d box, 3-d size, 3-d location, yaw)."""
import csv
import os

from PIL import Image

from .utils import download_and_extract_archive
from .vision import PairedVisionDataset

__all__ = ["Kitti"]


class Kitti(PairedVisionDataset):
    """Items are (PIL image, list of object dicts) for training, (PIL image, None) for testing. Images come in the
    directory's listing order, as torchvision takes them."""

    data_url = "https://s3.eu-central-1.amazonaws.com/avg-kitti/"
    resources = ["data_object_image_2.zip", "data_object_label_2.zip"]
    image_dir_name = "image_2"
    labels_dir_name = "label_2"

    def __init__(self, root, train=True, transform=None, target_transform=None, transforms=None, download=False):
        super().__init__(root, transforms, transform, target_transform)
        self.images, self.targets = [], []
        self.train = train
        self._location = "training" if train else "testing"
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You may use download=True to download it.")
        image_dir = os.path.join(self._raw_folder, self._location, self.image_dir_name)
        labels_dir = os.path.join(self._raw_folder, self._location, self.labels_dir_name)
        for name in os.listdir(image_dir):
            self.images.append(os.path.join(image_dir, name))
            if train:
                self.targets.append(os.path.join(labels_dir, f"{name.split('.')[0]}.txt"))

    @property
    def _raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    def _check_exists(self):
        folders = [self.image_dir_name] + ([self.labels_dir_name] if self.train else [])
        return all(os.path.isdir(os.path.join(self._raw_folder, self._location, name)) for name in folders)

    def _parse_target(self, index):
        with open(self.targets[index]) as f:
            return [{"type": row[0], "truncated": float(row[1]), "occluded": int(row[2]), "alpha": float(row[3]),
                     "bbox": [float(v) for v in row[4:8]], "dimensions": [float(v) for v in row[8:11]],
                     "location": [float(v) for v in row[11:14]], "rotation_y": float(row[14])}
                    for row in csv.reader(f, delimiter=" ")]

    def __getitem__(self, index):
        target = self._parse_target(index) if self.train else None
        return self._apply_joint(Image.open(self.images[index]), target)

    def __len__(self):
        return len(self.images)

    def download(self):
        """Fetch and unpack the image and label zips unless the folders are there."""
        if self._check_exists():
            return
        os.makedirs(self._raw_folder, exist_ok=True)
        for name in self.resources:
            download_and_extract_archive(self.data_url + name, self._raw_folder, filename=name)
