"""PatchCamelyon (PCAM): 327,680 colour 96x96 patches of lymph node scans, each labelled 1 when it shows metastatic
tissue. Each split is two HDF5 files in ``root/pcam``: ``camelyonpatch_level_2_split_<split>_x.h5`` (dataset ``x``,
uint8 [N, 96, 96, 3]) and ``..._y.h5`` (dataset ``y``, [N, 1, 1, 1]); reading them needs the ``h5py`` package."""
import os

from PIL import Image

from .utils import VisionDataset, check_integrity, extract_archive
from .vision import verify_str_arg

__all__ = ["PCAM"]


def _h5py():
    """The h5py module, imported on first use so that flowvision does not need it unless PCAM is used."""
    try:
        import h5py
    except ImportError:
        raise RuntimeError("h5py is not found. This dataset needs to have h5py installed: please run pip install "
                           "h5py") from None
    return h5py


class PCAM(VisionDataset):
    """Items are (RGB PIL image, int label 0/1).

    The files live on Google Drive, which flowvision does not download from: put the gzipped files
    (``<name>.h5.gz``, as published) or the unpacked ``.h5`` files into ``root/pcam`` by hand; ``download=True``
    then checks the archives' md5 and unpacks them.

    Args:
        split: ``"train"``, ``"test"`` or ``"val"``.
    """

    # per split and kind: (file name, Google Drive file id, md5 of the gzipped file)
    _FILES = {
        "train": {
            "images": ("camelyonpatch_level_2_split_train_x.h5", "1Ka0XfEMiwgCYPdTI-vv6eUElOBnKFKQ2",
                       "1571f514728f59376b705fc836ff4b63"),
            "targets": ("camelyonpatch_level_2_split_train_y.h5", "1269yhu3pZDP8UYFQs-NYs3FPwuK-nGSG",
                        "35c2d7259d906cfc8143347bb8e05be7"),
        },
        "test": {
            "images": ("camelyonpatch_level_2_split_test_x.h5", "1qV65ZqZvWzuIVthK8eVDhIwrbnsJdbg_",
                       "d8c2d60d490dbd479f8199bdfa0cf6ec"),
            "targets": ("camelyonpatch_level_2_split_test_y.h5", "17BHrSrwWKjYsOgTMmoqrIjDy6Fa2o_gP",
                        "60a7035772fbdb7f34eb86d4420cf66a"),
        },
        "val": {
            "images": ("camelyonpatch_level_2_split_valid_x.h5", "1hgshYGWK8V-eGRy8LToWJJgDU_rXWVJ3",
                       "d5b63470df7cfa627aeec8b9dc0c066e"),
            "targets": ("camelyonpatch_level_2_split_valid_y.h5", "1bH8ZRbhSVAhScTS0p9-ZzGnX91cHT3uO",
                        "2b85f58b927af9964a4c15b8f7e8f179"),
        },
    }

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False):
        _h5py()
        self._split = verify_str_arg(split, "split", ("train", "test", "val"))
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._base_folder = os.path.join(self.root, "pcam")
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")

    def _path(self, kind):
        return os.path.join(self._base_folder, self._FILES[self._split][kind][0])

    def __len__(self):
        with _h5py().File(self._path("images"), "r") as images:
            return images["x"].shape[0]

    def __getitem__(self, index):
        # the files are opened per item, not kept open, so that the dataset pickles and forks into workers
        h5py = _h5py()
        with h5py.File(self._path("images"), "r") as images:
            image = Image.fromarray(images["x"][index]).convert("RGB")
        with h5py.File(self._path("targets"), "r") as targets:
            target = int(targets["y"][index, 0, 0, 0])
        return self._apply(image, target)

    def _check_exists(self):
        return all(os.path.exists(self._path(kind)) for kind in ("images", "targets"))

    def _download(self):
        """Unpack the md5-checked ``.h5.gz`` files put in place by hand (those whose ``.h5`` is not there yet)."""
        if self._check_exists():
            return
        for name, file_id, md5 in self._FILES[self._split].values():
            if os.path.exists(os.path.join(self._base_folder, name)):
                continue
            archive = os.path.join(self._base_folder, name + ".gz")
            if not check_integrity(archive, md5):
                raise RuntimeError(f"{name}.gz is on Google Drive (file id {file_id}), which flowvision does not "
                                   f"download from: fetch it by hand into {self._base_folder} (md5 {md5})")
            extract_archive(archive)
