"""LSUN scene categories: one LMDB database per category and split, ``root/<category>_<split>_lmdb`` (and
``root/test_lmdb``), whose values are encoded images (WebP in the published files) under their image ids; reading
them needs the ``lmdb`` package."""
import bisect
import io
import os
import weakref
from collections.abc import Iterable

from PIL import Image

from .utils import VisionDataset
from .vision import verify_str_arg

__all__ = ["LSUN", "LSUNClass"]

CATEGORIES = ("bedroom", "bridge", "church_outdoor", "classroom", "conference_room", "dining_room", "kitchen",
              "living_room", "restaurant", "tower")
SPLITS = ("train", "val", "test")

# lmdb refuses to open one environment twice in a process: datasets over the same database share it
_OPEN = weakref.WeakValueDictionary()


def _lmdb():
    """The lmdb module, imported on first use so that flowvision does not need it unless LSUN is used."""
    try:
        import lmdb
    except ImportError:
        raise RuntimeError("lmdb is not found. This dataset needs to have lmdb installed: please run pip install "
                           "lmdb") from None
    return lmdb


class LSUNClass(VisionDataset):
    """The images of one LMDB database, in key order: items are (RGB PIL image, None)."""

    def __init__(self, root, transform=None, target_transform=None):
        super().__init__(os.fspath(root), transform=transform, target_transform=target_transform)
        self._open()
        with self.env.begin(write=False) as txn:
            self.length = txn.stat()["entries"]
            self.keys = list(txn.cursor().iternext(keys=True, values=False))

    def _open(self):
        key = os.path.realpath(self.root)
        self.env = _OPEN.get(key)
        if self.env is None:
            self.env = _lmdb().open(self.root, max_readers=1, readonly=True, lock=False, readahead=False,
                                    meminit=False)
            _OPEN[key] = self.env

    def __getstate__(self):
        # an open environment does not pickle; the copy reopens the database (as a spawned DataLoader worker must)
        state = dict(self.__dict__)
        del state["env"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._open()

    def __getitem__(self, index):
        with self.env.begin(write=False) as txn:
            data = txn.get(self.keys[index])
        return self._apply(Image.open(io.BytesIO(data)).convert("RGB"), None)

    def __len__(self):
        return self.length


def _names(values):
    return ", ".join(f"'{v}'" for v in values)


def _verify_classes(classes):
    """The database names for ``classes``: a split (every category's, or ``["test"]``) or a list of
    ``<category>_<split>`` names."""
    if isinstance(classes, str):
        verify_str_arg(classes, "classes", SPLITS)
        return ["test"] if classes == "test" else [f"{category}_{classes}" for category in CATEGORIES]
    if not isinstance(classes, Iterable):
        raise ValueError(f"Expected type str or Iterable for argument classes, but got type {type(classes)}.")
    classes = list(classes)
    for name in classes:
        if not isinstance(name, str):
            raise ValueError(f"Expected type str for elements in argument classes, but got type {type(name)}.")
        category, _, split = name.rpartition("_")
        if category not in CATEGORIES:
            raise ValueError(f"Unknown value '{category}' for LSUN class. Valid values are {{{_names(CATEGORIES)}}}.")
        if split not in SPLITS:
            raise ValueError(f"Unknown value '{split}' for postfix. Valid values are {{{_names(SPLITS)}}}.")
    return classes


class LSUN(VisionDataset):
    """The databases of ``classes`` one after another: items are (RGB PIL image, index of its database in
    ``classes``).

    Args:
        classes: ``"train"``, ``"val"`` (every category's database of that split), ``"test"``, or a list of
            ``<category>_<split>`` names such as ``["bedroom_train", "church_outdoor_train"]``.
    """

    def __init__(self, root, classes="train", transform=None, target_transform=None):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.classes = _verify_classes(classes)
        self.dbs = [LSUNClass(os.path.join(self.root, f"{name}_lmdb"), transform=transform) for name in self.classes]
        self.indices = []  # end of each database's items
        for db in self.dbs:
            self.indices.append((self.indices[-1] if self.indices else 0) + len(db))
        self.length = self.indices[-1] if self.indices else 0

    def __getitem__(self, index):
        if not -self.length <= index < self.length:
            raise IndexError(f"index {index} is out of range for a dataset of {self.length} images")
        index %= self.length
        target = bisect.bisect_right(self.indices, index)
        image, _ = self.dbs[target][index - (self.indices[target - 1] if target else 0)]
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __len__(self):
        return self.length

    def extra_repr(self):
        return f"Classes: {self.classes}"
