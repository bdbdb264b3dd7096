"""Omniglot: 1,623 handwritten characters from 50 alphabets, 20 drawings each, as published for the Python code
of the Omniglot repository: ``omniglot-py/images_background`` (the 30 training alphabets) and
``images_evaluation`` (the other 20), ``<alphabet>/<character>/<drawing>.png``, plus the two zips they came in."""
import os
from os.path import join

from PIL import Image

from .utils import VisionDataset, check_integrity, download_and_extract_archive

__all__ = ["Omniglot"]


def _entries(folder, keep):
    """Names in ``folder`` that ``keep(path)`` accepts, in directory-listing order (as torchvision lists them)."""
    return [name for name in os.listdir(folder) if keep(join(folder, name))]


class Omniglot(VisionDataset):
    """Items are (PIL 'L' image, character index); characters are numbered alphabet by alphabet, drawings and
    folders taken in directory-listing order. The zip's md5 is checked on every construction, as torchvision does.

    Args:
        root: the folder holding ``omniglot-py``.
        background: the background set (True) or the evaluation set.
        loader: opens an image path (default: PIL, converted to 'L').
    """

    folder = "omniglot-py"
    download_url_prefix = "https://raw.githubusercontent.com/brendenlake/omniglot/master/python"
    zips_md5 = {"images_background": "68d2efa1b9178cc56df9314c21c6e718",
                "images_evaluation": "6b91aef0f799c5bb55b94e3f2daec811"}

    def __init__(self, root, background=True, transform=None, target_transform=None, download=False, loader=None):
        super().__init__(join(root, self.folder), transform=transform, target_transform=target_transform)
        self.background = background
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        self.target_folder = join(self.root, self._get_target_folder())
        self._alphabets = _entries(self.target_folder, os.path.isdir)
        self._characters = [join(alphabet, character) for alphabet in self._alphabets
                            for character in _entries(join(self.target_folder, alphabet), os.path.isdir)]
        self._character_images = [
            [(name, index) for name in _entries(join(self.target_folder, character),
                                                lambda p: os.path.isfile(p) and p.endswith(".png"))]
            for index, character in enumerate(self._characters)]
        self._flat_character_images = [item for images in self._character_images for item in images]
        self.loader = loader

    def __len__(self):
        return len(self._flat_character_images)

    def __getitem__(self, index):
        name, character = self._flat_character_images[index]
        path = join(self.target_folder, self._characters[character], name)
        image = Image.open(path, mode="r").convert("L") if self.loader is None else self.loader(path)
        return self._apply(image, character)

    def _get_target_folder(self):
        return "images_background" if self.background else "images_evaluation"

    def _check_integrity(self):
        name = self._get_target_folder()
        return check_integrity(join(self.root, name + ".zip"), self.zips_md5[name])

    def download(self):
        """Fetch and unpack the set's zip unless a verified copy is there."""
        if self._check_integrity():
            return
        name = self._get_target_folder()
        download_and_extract_archive(f"{self.download_url_prefix}/{name}.zip", self.root, filename=name + ".zip",
                                     md5=self.zips_md5[name])
