"""Classification sets published as class-per-folder trees: EuroSAT (``eurosat/2750/<class>/``) and Country211
(``country211/<split>/<country code>/``). They are ImageFolders whose ``root`` stays the folder given."""
import os
from pathlib import Path

from .folder import ImageFolder, default_loader
from .utils import download_and_extract_archive
from .vision import verify_str_arg

__all__ = ["EuroSAT", "Country211"]


class EuroSAT(ImageFolder):
    """EuroSAT's 27,000 Sentinel-2 RGB tiles in 10 land-use classes; items are (RGB PIL image, class index)."""

    _URL = ("https://huggingface.co/datasets/torchgeo/eurosat/resolve/c877bcd43f099cd0196738f714544e355477f3fd/"
            "EuroSAT.zip")
    _MD5 = "c8fa014336c82ac7804f0398fcb19387"

    def __init__(self, root, transform=None, target_transform=None, download=False, loader=default_loader):
        root = os.path.expanduser(root)
        self._base_folder = os.path.join(root, "eurosat")
        self._data_folder = os.path.join(self._base_folder, "2750")
        if download:
            self.download()
        if not os.path.exists(self._data_folder):
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        super().__init__(self._data_folder, transform=transform, target_transform=target_transform, loader=loader)
        self.root = root

    def download(self):
        """Fetch and unpack the zip (md5-checked) unless the image folder is there."""
        if not os.path.exists(self._data_folder):
            os.makedirs(self._base_folder, exist_ok=True)
            download_and_extract_archive(self._URL, self._base_folder, md5=self._MD5)


class Country211(ImageFolder):
    """Country211: geolocated photos of 211 countries (ISO codes as class folders); split ``train``, ``valid`` or
    ``test``."""

    _URL = "https://openaipublic.azureedge.net/clip/data/country211.tgz"
    _MD5 = "84988d7644798601126c29e9877aab6a"

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False,
                 loader=default_loader):
        self._split = verify_str_arg(split, "split", ("train", "valid", "test"))
        root = str(Path(root).expanduser())
        self._base_folder = Path(root) / "country211"
        if download and not self._base_folder.is_dir():
            download_and_extract_archive(self._URL, root, md5=self._MD5)
        if not self._base_folder.is_dir():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        super().__init__(str(self._base_folder / self._split), transform=transform,
                         target_transform=target_transform, loader=loader)
        self.root = root
