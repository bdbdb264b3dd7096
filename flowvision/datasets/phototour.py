"""Multi-view stereo correspondence (Brown et al.'s "PhotoTour" patches): 64x64 grey patches of Notre Dame,
Yosemite and Liberty, stored 16x16 to a 1024x1024 BMP, with each patch's 3-D point id in ``info.txt`` and the
matching and non-matching pairs in ``m50_100000_100000_0.txt``.

The first construction reads all that into ``root/<name>.pt`` (data, labels, matches), written with ``engine.save``
in PyTorch's format, so that the cache is the one torchvision writes and reads.
"""
import os

import numpy as np
from PIL import Image

import engine
from .utils import VisionDataset, download_url, extract_archive

__all__ = ["PhotoTour"]

_PATCH = 64


def read_image_file(data_dir, image_ext, n):
    """The first ``n`` 64x64 patches of the sorted ``*.<image_ext>`` images, row by row, as a uint8 tensor; patches
    reaching past an image's edge are zero-filled there. Grey and palette images give their stored values."""
    patches = []
    for name in sorted(f for f in os.listdir(data_dir) if f.endswith(image_ext)):
        with Image.open(os.path.join(data_dir, name)) as image:
            pixels = np.asarray(image if image.mode in ("L", "P") else image.convert("L"))
        rows, cols = -(-pixels.shape[0] // _PATCH), -(-pixels.shape[1] // _PATCH)
        padded = np.zeros((rows * _PATCH, cols * _PATCH), np.uint8)
        padded[:pixels.shape[0], :pixels.shape[1]] = pixels
        patches.append(padded.reshape(rows, _PATCH, cols, _PATCH).swapaxes(1, 2).reshape(-1, _PATCH, _PATCH))
    stacked = np.concatenate(patches) if patches else np.zeros((0, _PATCH, _PATCH), np.uint8)
    return engine.from_numpy(np.ascontiguousarray(stacked[:n]))


def read_info_file(data_dir, info_file):
    """The 3-D point id of every patch (first column of ``info_file``) as an int64 tensor."""
    with open(os.path.join(data_dir, info_file)) as f:
        return engine.tensor([int(line.split()[0]) for line in f], dtype=engine.int64)


def read_matches_files(data_dir, matches_file):
    """(patch1, patch2, same 3-D point) rows of the pairs file as an int64 tensor."""
    with open(os.path.join(data_dir, matches_file)) as f:
        rows = [line.split() for line in f]
    return engine.tensor([[int(r[0]), int(r[3]), int(r[1] == r[4])] for r in rows], dtype=engine.int64)


class PhotoTour(VisionDataset):
    """``train=True``: items are single patches (uint8 tensors 64x64); ``train=False``: (patch1, patch2, match),
    match a 0-d int64 tensor (1 when both show the same 3-D point).

    Args:
        name: ``notredame``, ``yosemite``, ``liberty`` or their ``_harris`` variants.
    """

    urls = {
        "notredame_harris": ["http://matthewalunbrown.com/patchdata/notredame_harris.zip", "notredame_harris.zip",
                             "69f8c90f78e171349abdf0307afefe4d"],
        "yosemite_harris": ["http://matthewalunbrown.com/patchdata/yosemite_harris.zip", "yosemite_harris.zip",
                            "a73253d1c6fbd3ba2613c45065c00d46"],
        "liberty_harris": ["http://matthewalunbrown.com/patchdata/liberty_harris.zip", "liberty_harris.zip",
                           "c731fcfb3abb4091110d0ae8c7ba182c"],
        "notredame": ["http://icvl.ee.ic.ac.uk/vbalnt/notredame.zip", "notredame.zip",
                      "509eda8535847b8c0a90bbb210c83484"],
        "yosemite": ["http://icvl.ee.ic.ac.uk/vbalnt/yosemite.zip", "yosemite.zip", "533b2e8eb7ede31be40abc317b2fd4f0"],
        "liberty": ["http://icvl.ee.ic.ac.uk/vbalnt/liberty.zip", "liberty.zip", "fdd9152f138ea5ef2091746689176414"],
    }
    means = {"notredame": 0.4854, "yosemite": 0.4844, "liberty": 0.4437, "notredame_harris": 0.4854,
             "yosemite_harris": 0.4844, "liberty_harris": 0.4437}
    stds = {"notredame": 0.1864, "yosemite": 0.1818, "liberty": 0.2019, "notredame_harris": 0.1864,
            "yosemite_harris": 0.1818, "liberty_harris": 0.2019}
    lens = {"notredame": 468159, "yosemite": 633587, "liberty": 450092, "liberty_harris": 379587,
            "yosemite_harris": 450912, "notredame_harris": 325295}
    image_ext = "bmp"
    info_file = "info.txt"
    matches_files = "m50_100000_100000_0.txt"

    def __init__(self, root, name, train=True, transform=None, download=False):
        super().__init__(root, transform=transform)
        self.name = name
        self.data_dir = os.path.join(self.root, name)
        self.data_down = os.path.join(self.root, f"{name}.zip")
        self.data_file = os.path.join(self.root, f"{name}.pt")
        self.train = train
        self.mean = self.means[name]
        self.std = self.stds[name]
        if download:
            self.download()
        if not self._check_datafile_exists():
            self.cache()
        self.data, self.labels, self.matches = engine.load(self.data_file)

    def __getitem__(self, index):
        if self.train:
            patch = self.data[index]
            return self.transform(patch) if self.transform is not None else patch
        first, second, same = self.matches[index]
        patches = self.data[int(first)], self.data[int(second)]
        if self.transform is not None:
            patches = tuple(self.transform(p) for p in patches)
        return patches[0], patches[1], same

    def __len__(self):
        return len(self.data if self.train else self.matches)

    def _check_datafile_exists(self):
        return os.path.exists(self.data_file)

    def _check_downloaded(self):
        return os.path.exists(self.data_dir)

    def download(self):
        """Fetch and unpack the set's zip into ``root/<name>`` unless the cache or the folder is there."""
        if self._check_datafile_exists() or self._check_downloaded():
            return
        url, filename, md5 = self.urls[self.name]
        archive = download_url(url, self.root, filename, md5)
        extract_archive(archive, self.data_dir, remove_finished=True)

    def cache(self):
        """Read the patches, point ids and pairs of ``root/<name>`` into ``root/<name>.pt``."""
        if not self._check_downloaded():
            raise RuntimeError(f"Dataset not found: neither {self.data_file} nor {self.data_dir} exists. You can use "
                               "download=True to download it")
        engine.save((read_image_file(self.data_dir, self.image_ext, self.lens[self.name]),
                     read_info_file(self.data_dir, self.info_file),
                     read_matches_files(self.data_dir, self.matches_files)), self.data_file)

    def extra_repr(self):
        return f"Split: {'Train' if self.train else 'Test'}"
