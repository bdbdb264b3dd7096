"""SUN397 scene categories: ``SUN397/<letter>/<scene>[/<sub>]/sun_*.jpg``, class names in ``SUN397/ClassName.txt``."""
from pathlib import Path

from .folder import default_loader
from .utils import download_and_extract_archive
from .vision import LabelledFilesDataset

__all__ = ["SUN397"]


class SUN397(LabelledFilesDataset):
    """Items are (RGB PIL image, class index); a class is an image's folder path below its letter folder."""

    _DATASET_URL = "http://vision.princeton.edu/projects/2010/SUN/SUN397.tar.gz"
    _DATASET_MD5 = "8ca2778205c41d23104230ba66911c7a"

    def __init__(self, root, transform=None, target_transform=None, download=False, loader=default_loader):
        super().__init__(root, transform, target_transform, loader)
        self._data_dir = Path(self.root) / "SUN397"
        if download and not self._data_dir.is_dir():
            download_and_extract_archive(self._DATASET_URL, self.root, md5=self._DATASET_MD5)
        if not self._data_dir.is_dir():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        with open(self._data_dir / "ClassName.txt") as f:
            self.classes = [line[3:].strip() for line in f]  # lines read "/a/abbey": drop "/a/"
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        # the file system's order, as the reference takes it
        self._image_files = list(self._data_dir.rglob("sun_*.jpg"))
        self._labels = [self.class_to_idx["/".join(path.relative_to(self._data_dir).parts[1:-1])]
                        for path in self._image_files]
