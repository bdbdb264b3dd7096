"""PCAM (HDF5 files written with h5py) and LSUN (LMDB databases written with lmdb) on tiny files in their real
layouts, against torchvision's classes on the same files; PCAM's by-hand download (gzipped files, md5s patched in)."""
import gzip
import hashlib
import io
import pickle
import sys

import numpy as np
import pytest
import torchvision.datasets as tvd
from PIL import Image

import flowvision.datasets as fd

h5py = pytest.importorskip("h5py")
lmdb = pytest.importorskip("lmdb")

_PCAM_SIZES = {"train": 5, "test": 3, "val": 2}


def _pcam(root, gzipped=False):
    """Per split, uint8 images [N, 96, 96, 3] and labels [N, 1, 1, 1] as published (``gzipped``: only the
    ``.h5.gz`` files); returns {file name: bytes of what was written}."""
    rng = np.random.default_rng(0)
    base = root / "pcam"
    base.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, count in _PCAM_SIZES.items():
        arrays = {"images": ("x", rng.integers(0, 256, (count, 96, 96, 3), dtype=np.uint8)),
                  "targets": ("y", rng.integers(0, 2, (count, 1, 1, 1), dtype=np.uint8))}
        for kind, (key, data) in arrays.items():
            name = fd.PCAM._FILES[split][kind][0]
            with h5py.File(base / name, "w") as f:
                f.create_dataset(key, data=data)
            if gzipped:
                raw = (base / name).read_bytes()
                (base / name).unlink()
                name += ".gz"
                (base / name).write_bytes(gzip.compress(raw))
            written[name] = (base / name).read_bytes()
    return written


@pytest.mark.parametrize("split", ["train", "test", "val"])
def test_pcam_matches_torchvision(tmp_path, compare_datasets, split):
    _pcam(tmp_path)
    ours, ref = fd.PCAM(str(tmp_path), split=split), tvd.PCAM(str(tmp_path), split=split)
    assert len(ours) == _PCAM_SIZES[split]
    compare_datasets(ours, ref)
    image, target = ours[-1]
    assert (image.mode, image.size, type(target)) == ("RGB", (96, 96), int)
    flipped = fd.PCAM(tmp_path, split=split, transform=lambda im: im.rotate(90), target_transform=lambda t: 1 - t)
    compare_datasets(flipped, tvd.PCAM(tmp_path, split=split, transform=lambda im: im.rotate(90),
                                       target_transform=lambda t: 1 - t))
    compare_datasets(pickle.loads(pickle.dumps(ours)), ref)


def test_pcam_download_unpacks_files_put_by_hand(tmp_path, monkeypatch, compare_datasets):
    written = _pcam(tmp_path, gzipped=True)
    files = {split: {kind: (name, file_id, hashlib.md5(written[name + ".gz"]).hexdigest())
                     for kind, (name, file_id, _) in kinds.items()} for split, kinds in fd.PCAM._FILES.items()}
    monkeypatch.setattr(fd.PCAM, "_FILES", files)
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True to download it"):
        fd.PCAM(str(tmp_path), split="val")
    ours = fd.PCAM(str(tmp_path), split="val", download=True)
    assert (tmp_path / "pcam" / "camelyonpatch_level_2_split_valid_y.h5.gz").exists()  # the archives stay
    compare_datasets(ours, tvd.PCAM(str(tmp_path), split="val"))


def test_pcam_download_refuses_missing_or_corrupt_archives(tmp_path):
    with pytest.raises(RuntimeError, match=r"camelyonpatch_level_2_split_test_x\.h5\.gz is on Google Drive \(file "
                                           r"id 1qV65ZqZvWzuIVthK8eVDhIwrbnsJdbg_\), .* fetch it by hand .*md5 d8c2"):
        fd.PCAM(str(tmp_path), split="test", download=True)
    _pcam(tmp_path, gzipped=True)  # present, but not the published files' md5
    with pytest.raises(RuntimeError, match="split_train_x.h5.gz is on Google Drive"):
        fd.PCAM(str(tmp_path), download=True)


def test_pcam_bad_split(tmp_path):
    with pytest.raises(ValueError, match=r"Unknown value 'valid' for argument split. Valid values are "
                                         r"\{'train', 'test', 'val'\}."):
        fd.PCAM(str(tmp_path), split="valid")


def test_missing_packages_are_named(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    monkeypatch.setitem(sys.modules, "lmdb", None)
    with pytest.raises(RuntimeError, match="^h5py is not found. This dataset needs to have h5py installed: please "
                                           "run pip install h5py$"):
        fd.PCAM(str(tmp_path))
    with pytest.raises(RuntimeError, match="^lmdb is not found. .* please run pip install lmdb$"):
        fd.LSUNClass(str(tmp_path))


def _encoded(rng, index):
    """A small random image encoded as LSUN stores them (mostly WebP; a JPEG and a grayscale PNG for variety)."""
    height, width = int(rng.integers(5, 12)), int(rng.integers(5, 12))
    image = Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
    fmt = ("WEBP", "JPEG", "PNG")[index % 3]
    buf = io.BytesIO()
    (image.convert("L") if fmt == "PNG" else image).save(buf, format=fmt)
    return buf.getvalue()


def _lsun(root, counts):
    """One database ``root/<name>_lmdb`` per name, with images under 40-hex-digit ids (unsorted on insertion)."""
    rng = np.random.default_rng(1)
    for name, count in counts.items():
        env = lmdb.open(str(root / f"{name}_lmdb"), map_size=1 << 20)
        with env.begin(write=True) as txn:
            for i in range(count):
                txn.put(hashlib.sha1(f"{name}{i}".encode()).hexdigest().encode(), _encoded(rng, i))
        env.close()


@pytest.fixture(scope="module")
def lsun_databases(tmp_path_factory):
    """Two equal roots (ours, torchvision's: lmdb refuses a second open of a database that torchvision holds
    open) with every category's val database, two train ones and the test one."""
    counts = {f"{category}_val": 1 + i % 2 for i, category in enumerate(fd.lsun.CATEGORIES)}
    counts.update(bedroom_train=4, church_outdoor_train=3, test=2)
    roots = tmp_path_factory.mktemp("ours"), tmp_path_factory.mktemp("ref")
    for root in roots:
        _lsun(root, counts)
    return roots


@pytest.fixture
def lsun_roots(lsun_databases, tmp_path, monkeypatch):
    """The roots, with the working directory moved to a folder of its own: torchvision's LSUNClass writes a key
    cache there."""
    monkeypatch.chdir(tmp_path)
    return lsun_databases


@pytest.mark.parametrize("classes", [["church_outdoor_train", "bedroom_train"], "val", "test",
                                     ("bedroom_train", "tower_val")])
def test_lsun_matches_torchvision(lsun_roots, compare_datasets, classes):
    ours, ref = fd.LSUN(str(lsun_roots[0]), classes=classes), tvd.LSUN(str(lsun_roots[1]), classes=classes)
    assert ours.classes == ref.classes and ours.indices == ref.indices
    compare_datasets(ours, ref)
    assert repr(ours).splitlines()[-1] == repr(ref).splitlines()[-1]


def test_lsun_transforms_sharing_and_pickling(lsun_roots, compare_datasets):
    root, ref_root = lsun_roots
    kwargs = dict(classes=["bedroom_train", "church_outdoor_train"], transform=lambda im: im.transpose(0),
                  target_transform=lambda t: t + 10)
    ours = fd.LSUN(root, **kwargs)
    compare_datasets(ours, tvd.LSUN(str(ref_root), **kwargs))
    assert [ours[i][1] for i in (0, 3, 4, -1)] == [10, 10, 11, 11]
    twice = fd.LSUN(str(root), classes=["bedroom_train", "bedroom_train"])  # torchvision cannot open one twice
    assert twice.dbs[0].env is twice.dbs[1].env and len(twice) == 8
    compare_datasets(pickle.loads(pickle.dumps(twice)), twice)
    one = fd.LSUNClass(str(root / "test_lmdb"), target_transform=lambda t: "none" if t is None else t)
    compare_datasets(one, tvd.LSUNClass(str(ref_root / "test_lmdb"), target_transform=lambda t: "none"))
    assert one.keys == sorted(one.keys) and len(one.keys[0]) == 40
    with pytest.raises(IndexError, match="index 7 is out of range for a dataset of 7 images"):
        ours[7]


def test_lsun_bad_classes(tmp_path):
    categories = "'bedroom', 'bridge', 'church_outdoor', 'classroom', 'conference_room', 'dining_room', " \
                 "'kitchen', 'living_room', 'restaurant', 'tower'"
    cases = [(5, "Expected type str or Iterable for argument classes, but got type <class 'int'>."),
             (["bedroom_train", 3], "Expected type str for elements in argument classes, but got type <class 'int'>."),
             (["beach_train"], f"Unknown value 'beach' for LSUN class. Valid values are {{{categories}}}."),
             (["test"], f"Unknown value '' for LSUN class. Valid values are {{{categories}}}."),
             (["bedroom_valid"], "Unknown value 'valid' for postfix. Valid values are {'train', 'val', 'test'}."),
             ("bedroom_train", "Unknown value 'bedroom_train' for argument classes. Valid values are "
                               "{'train', 'val', 'test'}.")]
    for classes, message in cases:
        with pytest.raises(ValueError) as info:
            fd.LSUN(str(tmp_path), classes=classes)
        assert str(info.value) == message
    with pytest.raises(lmdb.Error, match="No such file or directory"):
        fd.LSUN(str(tmp_path), classes=["bedroom_train"])
