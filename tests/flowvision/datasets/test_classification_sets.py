"""Classification datasets (Food101, DTD, EuroSAT, Country211, GTSRB, SUN397, FGVCAircraft, OxfordIIITPet, USPS,
STL10, KMNIST, EMNIST, QMNIST, Places365) on tiny trees in their real layouts and file formats, item by item against
torchvision's classes on the same root; downloads from a local server with the archive's md5 patched in."""
import bz2
import gzip
import hashlib
import io
import json
import tarfile
import zipfile

import numpy as np
import pytest
import torchvision.datasets as tvd

import flowvision.datasets as fd
from http_server import FileServer


def _jpegs(write_image, folder, names, seed=0):
    for i, name in enumerate(names):
        write_image(folder / name, 7 + i % 3, 9 + i % 4, seed + i)


def _food101(root, write_image):
    base = root / "food-101"
    lists = {"train": {"pizza": ["pizza/11", "pizza/3"], "apple_pie": ["apple_pie/7"], "ramen": ["ramen/1"]},
             "test": {"ramen": ["ramen/2"], "pizza": ["pizza/5"], "apple_pie": ["apple_pie/8"]}}
    (base / "meta").mkdir(parents=True)
    for split, files in lists.items():
        (base / "meta" / f"{split}.json").write_text(json.dumps(files))
        _jpegs(write_image, base / "images", [f"{stem}.jpg" for stems in files.values() for stem in stems])


def _dtd(root, write_image):
    data = root / "dtd" / "dtd"
    files = ["banded/banded_0002.jpg", "zigzagged/zigzagged_0001.jpg", "banded/banded_0001.jpg", "dotted/d_1.jpg"]
    _jpegs(write_image, data / "images", files)
    (data / "labels").mkdir()
    for split in ("train", "val", "test"):
        for partition in (1, 10):
            chosen = files[:3] if split == "train" else files[1:] if partition == 10 else files
            (data / "labels" / f"{split}{partition}.txt").write_text("".join(f + "\n" for f in chosen))


def _eurosat(root, write_image):
    _jpegs(write_image, root / "eurosat" / "2750", ["Forest/Forest_1.jpg", "AnnualCrop/AnnualCrop_2.jpg",
                                                    "AnnualCrop/AnnualCrop_1.jpg", "River/River_9.jpg"])


def _country211(root, write_image):
    for i, split in enumerate(("train", "valid", "test")):
        _jpegs(write_image, root / "country211" / split, ["AD/1.jpg", "ZW/2.jpg", "FR/3.jpg", "FR/4.jpg"][i:], i)


def _gtsrb(root, write_image):
    training = root / "gtsrb" / "GTSRB" / "Training"
    _jpegs(write_image, training, ["00000/00000_00000.ppm", "00000/00000_00001.ppm", "00002/00001_00000.ppm"])
    (training / "00000" / "GT-00000.csv").write_text("Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId\n")
    _jpegs(write_image, root / "gtsrb" / "GTSRB" / "Final_Test" / "Images", ["00000.ppm", "00001.ppm"], 5)
    (root / "gtsrb" / "GT-final_test.csv").write_text(
        "Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId\n00000.ppm;9;7;1;1;8;6;16\n"
        "00001.ppm; 10;8;1;1;9;7; 1\n")


def _sun397(root, write_image):
    data = root / "SUN397"
    data.mkdir()
    (data / "ClassName.txt").write_text("/a/abbey\n/b/bedroom\n/m/market/outdoor\n")
    _jpegs(write_image, data, ["a/abbey/sun_aaa.jpg", "m/market/outdoor/sun_b.jpg", "b/bedroom/sun_c.jpg",
                               "a/abbey/sun_d.jpg", "a/abbey/other.jpg"])


def _fgvc_aircraft(root, write_image):
    data = root / "fgvc-aircraft-2013b" / "data"
    data.mkdir(parents=True)
    labels = {"variant": ["737-300", "A320", "Tu-154"], "family": ["Boeing 737", "A320", "Tu-154"],
              "manufacturer": ["Boeing", "Airbus", "Tupolev"]}
    files = {"variant": "variants.txt", "family": "families.txt", "manufacturer": "manufacturers.txt"}
    images = ["1025794", "0034309", "2233998"]
    _jpegs(write_image, data / "images", [f"{name}.jpg" for name in images])
    for level, names in labels.items():
        (data / files[level]).write_text("".join(n + "\n" for n in sorted(names)))
        for split in ("train", "val", "trainval", "test"):
            lines = [f"{image} {name}\n" for image, name in zip(images, names)]
            (data / f"images_{level}_{split}.txt").write_text("".join(lines[: 2 if split == "val" else 3]))


def _oxford_iiit_pet(root, write_image):
    base = root / "oxford-iiit-pet"
    rows = [("Abyssinian_1", 1, 1), ("great_pyrenees_12", 3, 2), ("Bombay_3", 2, 1), ("Abyssinian_2", 1, 1)]
    for i, (image_id, _, _) in enumerate(rows):
        write_image(base / "images" / f"{image_id}.jpg", 8 + i, 10, i)
        write_image(base / "annotations" / "trimaps" / f"{image_id}.png", 8 + i, 10, 10 + i, mode="L")
    for split, chosen in (("trainval", rows), ("test", rows[1:3])):
        (base / "annotations" / f"{split}.txt").write_text(
            "".join(f"{image_id} {label} {species} {i + 1}\n" for i, (image_id, label, species) in enumerate(chosen)))


_BUILDERS = {"Food101": _food101, "DTD": _dtd, "EuroSAT": _eurosat, "Country211": _country211, "GTSRB": _gtsrb,
             "SUN397": _sun397, "FGVCAircraft": _fgvc_aircraft, "OxfordIIITPet": _oxford_iiit_pet}

_CASES = [("Food101", {}), ("Food101", {"split": "test"}), ("DTD", {}), ("DTD", {"split": "val", "partition": 10}),
          ("EuroSAT", {}), ("Country211", {}), ("Country211", {"split": "test"}), ("GTSRB", {}),
          ("GTSRB", {"split": "test"}), ("SUN397", {}), ("FGVCAircraft", {}),
          ("FGVCAircraft", {"split": "val", "annotation_level": "manufacturer"}),
          ("FGVCAircraft", {"annotation_level": "family"}), ("OxfordIIITPet", {}),
          ("OxfordIIITPet", {"split": "test", "target_types": ["segmentation", "binary-category", "category"]}),
          ("OxfordIIITPet", {"target_types": []}), ("OxfordIIITPet", {"target_types": "segmentation"})]


@pytest.mark.parametrize("name, kwargs", _CASES, ids=[f"{n}-{'-'.join(map(str, k.values()))}" for n, k in _CASES])
def test_image_sets_match_torchvision(tmp_path, write_image, compare_datasets, name, kwargs):
    _BUILDERS[name](tmp_path, write_image)
    ours, ref = getattr(fd, name)(str(tmp_path), **kwargs), getattr(tvd, name)(str(tmp_path), **kwargs)
    compare_datasets(ours, ref)
    assert len(ours) > 0 and ours.root == ref.root
    for attr in ("classes", "class_to_idx", "bin_classes", "_image_files", "_labels", "samples"):
        if hasattr(ref, attr):
            assert getattr(ours, attr) == getattr(ref, attr), attr


def test_image_sets_transforms_and_errors(tmp_path, write_image):
    _food101(tmp_path, write_image)
    ds = fd.Food101(str(tmp_path), transform=lambda im: im.size, target_transform=lambda t: -t)
    assert ds[0] == ((9, 7), -1) and "split=train" in repr(ds)
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        fd.Food101(str(tmp_path), split="val")
    for cls in (fd.Food101, fd.DTD, fd.EuroSAT, fd.Country211, fd.GTSRB, fd.SUN397, fd.FGVCAircraft,
                fd.OxfordIIITPet):
        with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
            cls(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="Parameter 'partition' should be an integer with `1 <= partition <= 10`"):
        fd.DTD(str(tmp_path), partition=11)
    with pytest.raises(ValueError, match="Unknown value 'mask' for argument target_types"):
        fd.OxfordIIITPet(str(tmp_path), target_types=["category", "mask"])


def _tar_gz(root, top):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(root / top, arcname=top)
    return buf.getvalue()


def test_downloads_from_local_server(tmp_path, write_image, monkeypatch, compare_datasets):
    source = tmp_path / "source"
    _food101(source, write_image)
    _eurosat(source, write_image)
    food = _tar_gz(source, "food-101")
    eurosat = io.BytesIO()
    with zipfile.ZipFile(eurosat, "w") as z:
        for path in sorted((source / "eurosat").rglob("*.jpg")):
            z.write(path, str(path.relative_to(source / "eurosat")))
    with FileServer() as server:
        server.files.update({"food-101.tar.gz": food, "EuroSAT.zip": eurosat.getvalue()})
        monkeypatch.setattr(fd.Food101, "_URL", server.url("food-101.tar.gz"))
        monkeypatch.setattr(fd.Food101, "_MD5", hashlib.md5(food).hexdigest())
        monkeypatch.setattr(fd.EuroSAT, "_URL", server.url("EuroSAT.zip"))
        monkeypatch.setattr(fd.EuroSAT, "_MD5", hashlib.md5(eurosat.getvalue()).hexdigest())
        root = tmp_path / "root"
        food_ds = fd.Food101(str(root), download=True)
        eurosat_ds = fd.EuroSAT(str(root), download=True)
        fd.Food101(str(root), split="test", download=True)
        assert len(server.requests) == 2  # an extracted dataset is not fetched again
        monkeypatch.setattr(fd.Food101, "_MD5", "0" * 32)
        with pytest.raises(RuntimeError, match="does not match the expected md5"):
            fd.Food101(str(tmp_path / "other"), download=True)
    compare_datasets(food_ds, tvd.Food101(str(root)))
    compare_datasets(eurosat_ds, tvd.EuroSAT(str(root)))


# ---------------------------------------------------------------- binary formats: USPS, STL10, the MNIST family

def _usps_lines(rng, n):
    lines = []
    for _ in range(n):
        values = rng.uniform(-1, 1, 256).round(6)
        lines.append(f"{int(rng.integers(1, 11))} " + " ".join(f"{i + 1}:{v:.6f}" for i, v in enumerate(values)))
    return ("\n".join(lines) + "\n").encode()


def test_usps_matches_torchvision_and_downloads(tmp_path, compare_datasets, monkeypatch):
    rng = np.random.default_rng(0)
    archives = {"usps.bz2": bz2.compress(_usps_lines(rng, 5)), "usps.t.bz2": bz2.compress(_usps_lines(rng, 3))}
    with FileServer() as server:
        server.files.update(archives)
        split_list = {split: [server.url(name), name, hashlib.md5(archives[name]).hexdigest()]
                      for split, name in (("train", "usps.bz2"), ("test", "usps.t.bz2"))}
        monkeypatch.setattr(fd.USPS, "split_list", split_list)
        for train in (True, False):
            ours = fd.USPS(str(tmp_path), train=train, download=True)
            ref = tvd.USPS(str(tmp_path), train=train)
            compare_datasets(ours, ref)
            np.testing.assert_array_equal(ours.data, ref.data)
            assert ours.targets == ref.targets
    with pytest.raises(FileNotFoundError):
        fd.USPS(str(tmp_path / "missing"))


@pytest.fixture
def stl10_root(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    folder = tmp_path / "stl10_binary"
    folder.mkdir()
    files = {"train_X.bin": rng.integers(0, 256, 4 * 3 * 96 * 96, dtype=np.uint8).tobytes(),
             "train_y.bin": rng.integers(1, 11, 4, dtype=np.uint8).tobytes(),
             "unlabeled_X.bin": rng.integers(0, 256, 2 * 3 * 96 * 96, dtype=np.uint8).tobytes(),
             "test_X.bin": rng.integers(0, 256, 3 * 3 * 96 * 96, dtype=np.uint8).tobytes(),
             "test_y.bin": rng.integers(1, 11, 3, dtype=np.uint8).tobytes()}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "fold_indices.txt").write_text("3 0 \n1 2\n" + "0\n" * 8)
    (folder / "class_names.txt").write_text("\n".join(f"class{i}" for i in range(10)) + "\n")
    for cls in (fd.STL10, tvd.STL10):
        monkeypatch.setattr(cls, "train_list", [[n, hashlib.md5(files[n]).hexdigest()]
                                                for n in ("train_X.bin", "train_y.bin", "unlabeled_X.bin")])
        monkeypatch.setattr(cls, "test_list", [[n, hashlib.md5(files[n]).hexdigest()]
                                               for n in ("test_X.bin", "test_y.bin")])
    return tmp_path


@pytest.mark.parametrize("split, folds", [("train", None), ("train", 0), ("train+unlabeled", 1),
                                          ("unlabeled", None), ("test", None)])
def test_stl10_matches_torchvision(stl10_root, compare_datasets, split, folds):
    ours, ref = fd.STL10(str(stl10_root), split, folds), tvd.STL10(str(stl10_root), split, folds)
    compare_datasets(ours, ref)
    np.testing.assert_array_equal(ours.labels, ref.labels)
    assert ours.classes == ref.classes


def test_stl10_errors(stl10_root, tmp_path):
    with pytest.raises(ValueError, match=r"Value for argument folds should be in the range \[0, 10\), but got 10"):
        fd.STL10(str(stl10_root), folds=10)
    with pytest.raises(ValueError, match="Expected type None or int for argument folds, but got type <class 'str'>"):
        fd.STL10(str(stl10_root), folds="1")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.STL10(str(tmp_path / "nothing"))


def _idx(arr):
    codes = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C}
    header = bytes([0, 0, codes[arr.dtype], arr.ndim]) + np.array(arr.shape, ">i4").tobytes()
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


def _write_idx(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, arr in files.items():
        (folder / name).write_bytes(_idx(arr))


def _images(rng, n):
    return rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)


def test_kmnist_matches_torchvision_and_downloads(tmp_path, compare_datasets, monkeypatch):
    rng = np.random.default_rng(2)
    raw = {"train-images-idx3-ubyte": _images(rng, 4), "train-labels-idx1-ubyte": rng.integers(0, 10, 4, np.uint8),
           "t10k-images-idx3-ubyte": _images(rng, 2), "t10k-labels-idx1-ubyte": rng.integers(0, 10, 2, np.uint8)}
    gz = {name + ".gz": gzip.compress(_idx(arr), mtime=0) for name, arr in raw.items()}
    with FileServer() as server:
        server.files.update(gz)
        monkeypatch.setattr(fd.KMNIST, "mirrors", [server.base_url])
        monkeypatch.setattr(fd.KMNIST, "resources", [(n, hashlib.md5(d).hexdigest()) for n, d in gz.items()])
        ours = fd.KMNIST(str(tmp_path), download=True)
    ref = tvd.KMNIST(str(tmp_path))
    compare_datasets(ours, ref)
    assert ours.classes == ref.classes and ours.class_to_idx == ref.class_to_idx
    compare_datasets(fd.KMNIST(str(tmp_path), train=False), tvd.KMNIST(str(tmp_path), train=False))


@pytest.mark.parametrize("split", ["letters", "balanced"])
def test_emnist_matches_torchvision(tmp_path, compare_datasets, split):
    rng = np.random.default_rng(3)
    for part, n in (("train", 5), ("test", 3)):
        _write_idx(tmp_path / "EMNIST" / "raw", {
            f"emnist-{split}-{part}-images-idx3-ubyte": _images(rng, n),
            f"emnist-{split}-{part}-labels-idx1-ubyte": rng.integers(0, 27, n, np.uint8)})
    for train in (True, False):
        ours, ref = fd.EMNIST(str(tmp_path), split, train=train), tvd.EMNIST(str(tmp_path), split, train=train)
        compare_datasets(ours, ref)
        assert ours.classes == ref.classes and str(ours.targets.dtype) == "engine.int64"
    with pytest.raises(ValueError, match="Unknown value 'bogus' for argument split"):
        fd.EMNIST(str(tmp_path), "bogus")
    with pytest.raises(RuntimeError, match="Dataset not found"):
        fd.EMNIST(str(tmp_path), "digits")


def test_emnist_download_unpacks_the_gzip_folder(tmp_path, compare_datasets, monkeypatch):
    rng = np.random.default_rng(4)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for part, n in (("train", 4), ("test", 2)):
            z.writestr(f"gzip/emnist-digits-{part}-images-idx3-ubyte.gz", gzip.compress(_idx(_images(rng, n))))
            z.writestr(f"gzip/emnist-digits-{part}-labels-idx1-ubyte.gz",
                       gzip.compress(_idx(rng.integers(0, 10, n, np.uint8))))
    with FileServer() as server:
        server.files["gzip.zip"] = buf.getvalue()
        monkeypatch.setattr(fd.EMNIST, "url", server.url("gzip.zip"))
        monkeypatch.setattr(fd.EMNIST, "md5", hashlib.md5(buf.getvalue()).hexdigest())
        ours = fd.EMNIST(str(tmp_path), "digits", download=True)
    assert not (tmp_path / "EMNIST" / "raw" / "gzip").exists()
    compare_datasets(ours, tvd.EMNIST(str(tmp_path), "digits"))


@pytest.mark.parametrize("what, compat", [("train", True), ("test", False), ("test10k", True), ("test50k", False),
                                          ("nist", True)])
def test_qmnist_matches_torchvision(tmp_path, compare_datasets, monkeypatch, what, compat):
    rng = np.random.default_rng(5)
    monkeypatch.setattr(fd.QMNIST, "_TEST10K", 3)  # the test file's MNIST part, scaled down with the file
    test_images = _images(rng, 5)
    test_labels = rng.integers(0, 10, (5, 8)).astype(np.int32)
    files = {"qmnist-train-images-idx3-ubyte": _images(rng, 4),
             "qmnist-train-labels-idx2-int": rng.integers(0, 10, (4, 8)).astype(np.int32),
             "qmnist-test-images-idx3-ubyte": test_images, "qmnist-test-labels-idx2-int": test_labels,
             "xnist-images-idx3-ubyte": _images(rng, 2),
             "xnist-labels-idx2-int": rng.integers(0, 9, (2, 8)).astype(np.int32)}
    _write_idx(tmp_path / "QMNIST" / "raw", files)
    ours = fd.QMNIST(str(tmp_path), what=what, compat=compat)
    if what in ("test10k", "test50k"):  # torchvision cuts at the real 10,000: compare against its own arrays
        part = slice(0, 3) if what == "test10k" else slice(3, None)
        np.testing.assert_array_equal(ours.data.numpy(), test_images[part])
        np.testing.assert_array_equal(ours.targets.numpy(), test_labels[part])
        return
    ref = tvd.QMNIST(str(tmp_path), what=what, compat=compat)
    compare_datasets(ours, ref)
    np.testing.assert_array_equal(ours.targets.numpy(), ref.targets.numpy())
    assert "Split: " + what in repr(ours)


@pytest.mark.parametrize("target_types", ["category", "segmentation", ["binary-category", "segmentation"], []])
def test_wrapped_pets_and_gtsrb_match_torchvision(tmp_path, write_image, compare_datasets, target_types):
    _oxford_iiit_pet(tmp_path, write_image)
    _gtsrb(tmp_path, write_image)
    ours = fd.wrap_dataset_for_transforms_v2(fd.OxfordIIITPet(str(tmp_path), target_types=target_types))
    compare_datasets(ours, tvd.wrap_dataset_for_transforms_v2(tvd.OxfordIIITPet(str(tmp_path),
                                                                                target_types=target_types)))
    compare_datasets(fd.wrap_dataset_for_transforms_v2(fd.GTSRB(str(tmp_path))),
                     tvd.wrap_dataset_for_transforms_v2(tvd.GTSRB(str(tmp_path))))


def test_places365_downloads_and_matches_torchvision(tmp_path, write_image, monkeypatch, compare_datasets):
    """The devkit (categories and file lists) and the val/train image tars served locally, md5s patched in."""
    source = tmp_path / "source"
    (source / "devkit").mkdir(parents=True)
    (source / "devkit" / "categories_places365.txt").write_text("/a/airfield 0\n/a/alley 1\n/b/bakery/shop 2\n")
    (source / "devkit" / "places365_train_standard.txt").write_text(
        "/a/alley/00000001.jpg 1\n/b/bakery/shop/00000002.jpg 2\n/a/airfield/00000003.jpg 0\n")
    (source / "devkit" / "places365_val.txt").write_text("Places365_val_00000001.jpg 2\nPlaces365_val_00000002.jpg 0\n")
    (source / "devkit" / "places365_test.txt").write_text("Places365_test_00000001.jpg\n")
    _jpegs(write_image, source / "images" / "data_256", ["a/alley/00000001.jpg", "b/bakery/shop/00000002.jpg",
                                                         "a/airfield/00000003.jpg"])
    _jpegs(write_image, source / "images" / "val_256", ["Places365_val_00000001.jpg", "Places365_val_00000002.jpg"])

    def tar(folder, names):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for name in names:
                t.add(folder / name, arcname=name)
        return buf.getvalue()

    devkit = tar(source / "devkit", sorted(p.name for p in (source / "devkit").iterdir()))
    archives = {"filelist_places365-standard.tar": devkit,
                "train_256_places365standard.tar": tar(source / "images", ["data_256"]),
                "val_256.tar": tar(source / "images", ["val_256"])}
    md5 = {name: hashlib.md5(data).hexdigest() for name, data in archives.items()}
    files = {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in (source / "devkit").iterdir()}
    for cls in (fd.Places365, tvd.Places365):
        monkeypatch.setattr(cls, "_CATEGORIES_META", ("categories_places365.txt", files["categories_places365.txt"]))
        monkeypatch.setattr(cls, "_FILE_LIST_META", {key: (name, files[name]) for key, (name, _) in
                                                     cls._FILE_LIST_META.items() if name in files})
    monkeypatch.setattr(fd.Places365, "_DEVKIT_META", {"standard": ("filelist_places365-standard.tar",
                                                                    md5["filelist_places365-standard.tar"])})
    monkeypatch.setattr(fd.Places365, "_IMAGES_META", {
        ("train-standard", True): ("train_256_places365standard.tar", md5["train_256_places365standard.tar"]),
        ("val", True): ("val_256.tar", md5["val_256.tar"])})
    root = str(tmp_path / "root")
    with pytest.raises(RuntimeError, match="categories_places365.txt does not exist or is corrupted. You can set"):
        fd.Places365(root)
    with FileServer() as server:
        server.files.update(archives)
        monkeypatch.setattr(fd.Places365, "_BASE_URL", server.base_url)
        datasets = {split: fd.Places365(root, split=split, small=True, download=True)
                    for split in ("train-standard", "val")}
        assert sorted(path for path, _ in server.requests) == sorted("/" + name for name in archives)
    for split, ours in datasets.items():
        ref = tvd.Places365(root, split=split, small=True)
        compare_datasets(ours, ref)
        assert ours.classes == ref.classes and ours.class_to_idx == ref.class_to_idx and ours.imgs == ref.imgs
    test = fd.Places365(root, split="test", small=True)
    assert test.targets == [None] and test.imgs == tvd.Places365(root, split="test", small=True).imgs
