"""Places365 scenes: categories in ``categories_places365.txt``, per-split file lists
(``places365_<split>.txt``: image path and class index; the test list has no class), images in
``data_<large|256>_<standard|challenge>`` (training) or ``<split>_<large|256>`` (val, test)."""
import os
from urllib.parse import urljoin

from .folder import default_loader
from .utils import VisionDataset, check_integrity, download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["Places365"]


class Places365(VisionDataset):
    """Items are (RGB PIL image, class index, or None for the test split).

    Args:
        split: ``"train-standard"``, ``"train-challenge"``, ``"val"`` or ``"test"``.
        small: the 256x256 images instead of the full-size ones.
        download: fetch the file lists (devkit) and the images.
    """

    _SPLITS = ("train-standard", "train-challenge", "val", "test")
    _BASE_URL = "http://data.csail.mit.edu/places/places365/"
    _DEVKIT_META = {"standard": ("filelist_places365-standard.tar", "35a0585fee1fa656440f3ab298f8479c"),
                    "challenge": ("filelist_places365-challenge.tar", "70a8307e459c3de41690a7c76c931734")}
    _CATEGORIES_META = ("categories_places365.txt", "06c963b85866bd0649f97cb43dd16673")
    _FILE_LIST_META = {"train-standard": ("places365_train_standard.txt", "30f37515461640559006b8329efbed1a"),
                       "train-challenge": ("places365_train_challenge.txt", "b2931dc997b8c33c27e7329c073a6b57"),
                       "val": ("places365_val.txt", "e9f2fd57bfd9d07630173f4e8708e4b1"),
                       "test": ("places365_test.txt", "2fce8233fe493576d724142e45d93653")}
    _IMAGES_META = {
        ("train-standard", False): ("train_large_places365standard.tar", "67e186b496a84c929568076ed01a8aa1"),
        ("train-challenge", False): ("train_large_places365challenge.tar", "605f18e68e510c82b958664ea134545f"),
        ("val", False): ("val_large.tar", "9b71c4993ad89d2d8bcbdc4aef38042f"),
        ("test", False): ("test_large.tar", "41a4b6b724b1d2cd862fb3871ed59913"),
        ("train-standard", True): ("train_256_places365standard.tar", "53ca1c756c3d1e7809517cc47c5561c5"),
        ("train-challenge", True): ("train_256_places365challenge.tar", "741915038a5e3471ec7332404dfb64ef"),
        ("val", True): ("val_256.tar", "e27b17d8d44f4af9a78502beb927f808"),
        ("test", True): ("test_256.tar", "f532f6ad7b582262a2ec8009075e186b"),
    }

    def __init__(self, root, split="train-standard", small=False, download=False, transform=None,
                 target_transform=None, loader=default_loader):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self._SPLITS)
        self.small = small
        self.loader = loader
        self.classes, self.class_to_idx = self.load_categories(download)
        self.imgs, self.targets = self.load_file_list(download)
        if download:
            self.download_images()

    @property
    def variant(self):
        return "challenge" if "challenge" in self.split else "standard"

    @property
    def images_dir(self):
        size = "256" if self.small else "large"
        name = f"data_{size}_{self.variant}" if self.split.startswith("train") else f"{self.split}_{size}"
        return os.path.join(self.root, name)

    def _checked(self, name, md5, download):
        """The path of a devkit file, fetching the devkit when it is missing or corrupt and ``download`` is set."""
        path = os.path.join(self.root, name)
        if not check_integrity(path, md5):
            if not download:
                raise RuntimeError(f"The file {path} does not exist or is corrupted. "
                                   "You can set download=True to download it.")
            self.download_devkit()
        return path

    def load_categories(self, download=True):
        with open(self._checked(*self._CATEGORIES_META, download)) as f:
            class_to_idx = {name: int(index) for name, index in (line.split() for line in f)}
        return sorted(class_to_idx), class_to_idx

    def load_file_list(self, download=True):
        with open(self._checked(*self._FILE_LIST_META[self.split], download)) as f:
            entries = [(line.split() + [None])[:2] for line in f]
        images = [(os.path.join(self.images_dir, image.lstrip("/").replace("/", os.sep)),
                   int(index) if index is not None else None) for image, index in entries]
        return images, [target for _, target in images]

    def download_devkit(self):
        name, md5 = self._DEVKIT_META[self.variant]
        download_and_extract_archive(urljoin(self._BASE_URL, name), self.root, md5=md5)

    def download_images(self):
        """Fetch and unpack the split's image tar (md5-checked) unless its folder is there."""
        if os.path.exists(self.images_dir):
            return
        name, md5 = self._IMAGES_META[self.split, self.small]
        download_and_extract_archive(urljoin(self._BASE_URL, name), self.root, md5=md5)
        if self.split.startswith("train"):  # the tar unpacks to data_<size>: name it after the variant
            os.rename(self.images_dir.rsplit("_", 1)[0], self.images_dir)

    def __getitem__(self, index):
        path, target = self.imgs[index]
        return self._apply(self.loader(path), target)

    def __len__(self):
        return len(self.imgs)

    def extra_repr(self):
        return f"Split: {self.split}\nSmall: {self.small}"
