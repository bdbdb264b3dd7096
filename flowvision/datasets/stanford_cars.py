"""Stanford Cars: 196 car models, images in ``stanford_cars/cars_<train|test>`` with their labels in MATLAB files
(``devkit/cars_train_annos.mat``, ``cars_test_annos_withlabels.mat``; class names in ``devkit/cars_meta.mat``),
read with flowvision's own .mat reader."""
import pathlib

from .folder import default_loader
from .matlab import read_mat
from .utils import VisionDataset
from .vision import verify_str_arg

__all__ = ["StanfordCars"]


class StanfordCars(VisionDataset):
    """Items are (RGB PIL image, class 0-195). The original download is gone:
    ``download=True`` raises, as torchvision's does."""

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False,
                 loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = pathlib.Path(root) / "stanford_cars"
        devkit = self._base_folder / "devkit"
        if split == "train":
            self._annotations_mat_path = devkit / "cars_train_annos.mat"
            self._images_base_path = self._base_folder / "cars_train"
        else:
            self._annotations_mat_path = self._base_folder / "cars_test_annos_withlabels.mat"
            self._images_base_path = self._base_folder / "cars_test"
        if download:
            self.download()
        if not (devkit.is_dir() and self._annotations_mat_path.exists() and self._images_base_path.is_dir()):
            raise RuntimeError("Dataset not found.")
        annotations = read_mat(self._annotations_mat_path)["annotations"].ravel()
        self._samples = [(str(self._images_base_path / a["fname"]), int(a["class"].ravel()[0]) - 1)
                         for a in annotations]
        self.classes = list(read_mat(devkit / "cars_meta.mat")["class_names"].ravel())
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.loader = loader

    def download(self):
        """Refuses, as torchvision's does: the original files are no longer served."""
        raise ValueError("The original URL is broken so the StanfordCars dataset cannot be downloaded anymore.")

    def __getitem__(self, index):
        path, target = self._samples[index]
        return self._apply(self.loader(path), target)

    def __len__(self):
        return len(self._samples)
