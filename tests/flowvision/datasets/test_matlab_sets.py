"""The .mat reader against scipy.io (files written by scipy, compressed or not), and the datasets that need it
(SBDataset, SVHN, Flowers102, StanfordCars, ImageNet's devkit, Caltech101 with Caltech256 beside it) against
torchvision's classes, which read the same files with scipy."""
import hashlib
import io
import os
import tarfile

import numpy as np
import pytest
import scipy.io
import scipy.sparse
import torchvision.datasets as tvd
from PIL import Image
from torchvision.datasets import imagenet as tv_imagenet

import flowvision.datasets as fd
from flowvision.datasets import imagenet as fd_imagenet
from flowvision.datasets.matlab import read_mat  # noqa: E402
from http_server import FileServer  # noqa: E402


@pytest.mark.parametrize("compress", [False, True])
def test_read_mat_matches_scipy(tmp_path, compress):
    rng = np.random.default_rng(0)
    cells = np.empty((3, 1), dtype=object)
    for i in range(3):
        cells[i, 0] = scipy.sparse.csc_matrix((rng.random((5, 7)) > 0.7) * rng.random((5, 7)))
    variables = {"X": rng.integers(0, 256, (4, 5, 3, 2)).astype(np.uint8), "y": rng.integers(1, 11, (2, 1)) * 1.0,
                 "word": "hello", "rows": np.array(["ab", "cd"]), "flags": np.array([[True, False, True]]),
                 "sparse_flags": scipy.sparse.csc_matrix(rng.random((4, 3)) > 0.5),
                 "small": np.arange(6, dtype=np.int16).reshape(2, 3), "big": np.arange(3, dtype=np.int64) << 40,
                 "record": {"Segmentation": rng.integers(0, 21, (5, 7)).astype(np.uint8), "Boundaries": cells,
                            "Nested": {"f": np.float32(1.5)}}}
    path = tmp_path / "vars.mat"
    scipy.io.savemat(path, variables, do_compression=compress)
    ours, ref = read_mat(path), scipy.io.loadmat(path)
    assert sorted(ours) == sorted(k for k in ref if not k.startswith("__"))
    for name in ("X", "y", "flags", "small", "big"):
        assert ours[name].dtype == ref[name].dtype, name
        np.testing.assert_array_equal(ours[name], ref[name], err_msg=name)
    assert ours["sparse_flags"].dtype == ref["sparse_flags"].dtype
    np.testing.assert_array_equal(ours["sparse_flags"], ref["sparse_flags"].toarray())
    assert ours["word"] == ref["word"][0] and ours["rows"] == list(ref["rows"])
    record, ref_record = ours["record"][0, 0], ref["record"][0, 0]
    np.testing.assert_array_equal(record["Segmentation"], ref_record["Segmentation"])
    for i in range(3):
        np.testing.assert_array_equal(record["Boundaries"][i, 0], ref_record["Boundaries"][i, 0].toarray())
    assert record["Nested"][0, 0]["f"].dtype == np.float32 and record["Nested"][0, 0]["f"][0, 0] == 1.5


def test_read_mat_errors(tmp_path):
    (tmp_path / "bad.mat").write_bytes(b"MATLAB 7.3 MAT-file" + b"\0" * 200)
    with pytest.raises(ValueError, match="is not a MATLAB level-5 .mat file"):
        read_mat(tmp_path / "bad.mat")
    scipy.io.savemat(tmp_path / "c.mat", {"z": np.array([[1 + 2j]])})
    with pytest.raises(ValueError, match="complex .mat variable 'z' is not supported"):
        read_mat(tmp_path / "c.mat")
    scipy.io.savemat(tmp_path / "t.mat", {"x": np.arange(300.0)})
    (tmp_path / "t.mat").write_bytes((tmp_path / "t.mat").read_bytes()[:-100])
    with pytest.raises(ValueError, match="truncated .mat data"):
        read_mat(tmp_path / "t.mat")


@pytest.fixture
def sbd_root(tmp_path, write_image):
    rng = np.random.default_rng(1)
    names = ["2008_000002", "2008_000003", "2008_000007"]
    (tmp_path / "cls").mkdir()
    for i, name in enumerate(names):
        h, w = 6 + i, 9
        write_image(tmp_path / "img" / f"{name}.jpg", h, w, i)
        boundaries = np.empty((20, 1), dtype=object)
        for c in range(20):
            boundaries[c, 0] = scipy.sparse.csc_matrix((rng.random((h, w)) > 0.8).astype(np.float64))
        gt = {"Segmentation": rng.integers(0, 21, (h, w)).astype(np.uint8), "Boundaries": boundaries,
              "CategoriesPresent": np.array([[1, 5]], dtype=np.uint8)}
        scipy.io.savemat(tmp_path / "cls" / f"{name}.mat", {"GTcls": gt}, do_compression=bool(i % 2))
    (tmp_path / "train.txt").write_text("".join(n + "\n" for n in names))
    (tmp_path / "val.txt").write_text(names[1] + "\n")
    return tmp_path


@pytest.mark.parametrize("mode", ["segmentation", "boundaries"])
@pytest.mark.parametrize("image_set", ["train", "val"])
def test_sbd_matches_torchvision(sbd_root, compare_datasets, mode, image_set):
    ours = fd.SBDataset(str(sbd_root), image_set=image_set, mode=mode)
    ref = tvd.SBDataset(str(sbd_root), image_set=image_set, mode=mode)
    assert len(ours) == len(ref) and ours.images == ref.images and ours.masks == ref.masks
    for i in range(len(ref)):
        (image, target), (ref_image, ref_target) = ours[i], ref[i]
        compare_datasets([image], [ref_image])
        if mode == "segmentation":
            compare_datasets([target], [ref_target])
        else:
            assert target.dtype == ref_target.dtype and target.shape == (20, ref_image.height, ref_image.width)
            np.testing.assert_array_equal(target, ref_target)
    assert "Mode: " + mode in repr(ours)


def test_sbd_wrapped_and_errors(sbd_root, compare_datasets):
    wrapped = fd.wrap_dataset_for_transforms_v2(fd.SBDataset(str(sbd_root), mode="segmentation"))
    compare_datasets(wrapped, tvd.wrap_dataset_for_transforms_v2(tvd.SBDataset(str(sbd_root), mode="segmentation")))
    with pytest.raises(RuntimeError, match="SBDataset with mode='boundaries' is currently not supported"):
        fd.wrap_dataset_for_transforms_v2(fd.SBDataset(str(sbd_root)))
    with pytest.raises(ValueError, match="Unknown value 'edges' for argument mode"):
        fd.SBDataset(str(sbd_root), mode="edges")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.SBDataset(str(sbd_root / "missing"))


def test_svhn_matches_torchvision_and_downloads(tmp_path, compare_datasets, monkeypatch):
    rng = np.random.default_rng(2)
    blobs = {}
    for split, n in (("train", 5), ("test", 3)):
        path = tmp_path / "src" / f"{split}_32x32.mat"
        path.parent.mkdir(exist_ok=True)
        labels = rng.integers(1, 11, (n, 1)).astype(np.uint8)
        labels[0, 0] = 10  # the digit 0
        scipy.io.savemat(path, {"X": rng.integers(0, 256, (32, 32, 3, n)).astype(np.uint8), "y": labels},
                         do_compression=split == "train")
        blobs[path.name] = path.read_bytes()
    split_list = {split: [None, f"{split}_32x32.mat", hashlib.md5(blobs[f"{split}_32x32.mat"]).hexdigest()]
                  for split in ("train", "test")}
    with FileServer() as server:
        server.files.update(blobs)
        for entry in split_list.values():
            entry[0] = server.url(entry[1])
        for cls in (fd.SVHN, tvd.SVHN):
            monkeypatch.setattr(cls, "split_list", split_list)
        for split in ("train", "test"):
            ours = fd.SVHN(str(tmp_path / "root"), split=split, download=True)
            ref = tvd.SVHN(str(tmp_path / "root"), split=split)
            compare_datasets(ours, ref)
            np.testing.assert_array_equal(ours.data, ref.data)
            np.testing.assert_array_equal(ours.labels, ref.labels)
            assert ours.labels.dtype == ref.labels.dtype and 0 in ours.labels
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.SVHN(str(tmp_path / "elsewhere"))


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_flowers102_matches_torchvision(tmp_path, write_image, compare_datasets, monkeypatch, split):
    rng = np.random.default_rng(3)
    base = tmp_path / "flowers-102"
    for image_id in range(1, 8):
        write_image(base / "jpg" / f"image_{image_id:05d}.jpg", 6, 8 + image_id, image_id)
    scipy.io.savemat(base / "imagelabels.mat", {"labels": rng.integers(1, 103, (1, 7)).astype(np.uint8)})
    scipy.io.savemat(base / "setid.mat", {"trnid": np.array([[3, 1, 6]], np.uint16),
                                          "valid": np.array([[2, 7]], np.uint16),
                                          "tstid": np.array([[5, 4]], np.uint16)}, do_compression=True)
    md5 = {name: hashlib.md5((base / name).read_bytes()).hexdigest() for name in ("imagelabels.mat", "setid.mat")}
    for cls in (fd.Flowers102, tvd.Flowers102):
        monkeypatch.setattr(cls, "_file_dict", dict(cls._file_dict, label=("imagelabels.mat", md5["imagelabels.mat"]),
                                                    setid=("setid.mat", md5["setid.mat"])))
    ours, ref = fd.Flowers102(str(tmp_path), split=split), tvd.Flowers102(str(tmp_path), split=split)
    compare_datasets(ours, ref)
    assert ours._labels == ref._labels and ours._image_files == ref._image_files and ours.classes == ref.classes


@pytest.fixture
def caltech_root(tmp_path, write_image):
    rng = np.random.default_rng(4)
    base = tmp_path / "caltech101"
    for c, (category, count) in enumerate([("airplanes", 2), ("BACKGROUND_Google", 1), ("accordion", 3)]):
        for n in range(1, count + 1):
            write_image(base / "101_ObjectCategories" / category / f"image_{n:04d}.jpg", 6 + n, 9, 10 * c + n,
                        mode="L" if n == 2 else "RGB")
            folder = base / "Annotations" / {"airplanes": "Airplanes_Side_2"}.get(category, category)
            folder.mkdir(parents=True, exist_ok=True)
            scipy.io.savemat(folder / f"annotation_{n:04d}.mat",
                             {"box_coord": np.array([[1, 5, 1, 7]], np.uint16),
                              "obj_contour": rng.uniform(0, 9, (2, 4 + n))}, do_compression=n == 1)
    base256 = tmp_path / "caltech256" / "256_ObjectCategories"
    for label, (category, count) in enumerate([("001.ak47", 2), ("002.american-flag", 1)]):
        for n in range(1, count + 1):
            write_image(base256 / category / f"{label + 1:03d}_{n:04d}.jpg", 5 + n, 7, 30 + n)
        (base256 / category / "Thumbs.db").write_bytes(b"not an image")
    return tmp_path


@pytest.mark.parametrize("target_type", ["category", "annotation", ["annotation", "category"]])
def test_caltech101_matches_torchvision(caltech_root, compare_datasets, target_type):
    ours, ref = fd.Caltech101(str(caltech_root), target_type), tvd.Caltech101(str(caltech_root), target_type)
    assert ours.categories == ref.categories == ["accordion", "airplanes"]
    assert ours.annotation_categories == ref.annotation_categories and ours.index == ref.index and ours.y == ref.y
    for i in range(len(ref)):
        (image, target), (ref_image, ref_target) = ours[i], ref[i]
        compare_datasets([image], [ref_image])
        for part, ref_part in zip(target if isinstance(target, tuple) else [target],
                                  ref_target if isinstance(ref_target, tuple) else [ref_target]):
            assert type(part) is type(ref_part)
            np.testing.assert_array_equal(part, ref_part)
            assert getattr(part, "dtype", None) == getattr(ref_part, "dtype", None)
    if target_type == "category":
        compare_datasets(fd.wrap_dataset_for_transforms_v2(ours), tvd.wrap_dataset_for_transforms_v2(ref))
    else:
        with pytest.raises(RuntimeError, match="Caltech101 dataset with `target_type=\\['annotation', ...\\]`"):
            fd.wrap_dataset_for_transforms_v2(ours)


def test_caltech256_matches_torchvision(caltech_root, compare_datasets):
    ours, ref = fd.Caltech256(str(caltech_root)), tvd.Caltech256(str(caltech_root))
    compare_datasets(ours, ref)
    assert ours.categories == ref.categories and ours.index == ref.index and ours.y == ref.y
    compare_datasets(fd.wrap_dataset_for_transforms_v2(ours), tvd.wrap_dataset_for_transforms_v2(ref))
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.Caltech256(str(caltech_root / "none"))


@pytest.mark.parametrize("split", ["train", "test"])
def test_stanford_cars_matches_torchvision(tmp_path, write_image, compare_datasets, split):
    base = tmp_path / "stanford_cars"
    (base / "devkit").mkdir(parents=True)
    names = np.empty((1, 3), dtype=object)
    names[0, :] = ["AM General Hummer SUV 2000", "Acura RL Sedan 2012", "smart fortwo Convertible 2012"]
    scipy.io.savemat(base / "devkit" / "cars_meta.mat", {"class_names": names})
    folder = "cars_train" if split == "train" else "cars_test"
    records = []
    for i, label in enumerate([3, 1, 2, 3]):
        write_image(base / folder / f"{i + 1:05d}.jpg", 6, 7 + i, i)
        records.append({"bbox_x1": np.uint8(1), "bbox_y1": np.uint8(2), "bbox_x2": np.uint8(5),
                        "bbox_y2": np.uint8(4), "class": np.uint8(label), "fname": f"{i + 1:05d}.jpg"})
    annotations = np.empty((1, 4), dtype=[(key, object) for key in records[0]])
    for i, record in enumerate(records):
        annotations[0, i] = tuple(record.values())
    path = base / "devkit" / "cars_train_annos.mat" if split == "train" else base / "cars_test_annos_withlabels.mat"
    scipy.io.savemat(path, {"annotations": annotations}, do_compression=split == "test")
    ours, ref = fd.StanfordCars(str(tmp_path), split=split), tvd.StanfordCars(str(tmp_path), split=split)
    compare_datasets(ours, ref)
    assert ours._samples == ref._samples and ours.classes == ref.classes
    assert [type(t) for _, t in ours._samples] == [type(t) for _, t in ref._samples]
    with pytest.raises(ValueError, match="cannot be downloaded anymore"):
        fd.StanfordCars(str(tmp_path), download=True)


def _tar(files, gz=False):
    """A tar (gzipped when asked) of {member name: bytes}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _jpeg_bytes(seed, height=6, width=8):
    buf = io.BytesIO()
    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8)).save(buf, format="JPEG")
    return buf.getvalue()


@pytest.fixture
def imagenet_archives(tmp_path, monkeypatch):
    """The three official archives in miniature: a devkit with a synset tree (two leaves, one inner node) and the
    validation labels, a training tar of per-class tars, a flat validation tar; md5s patched into both classes."""
    synsets = np.empty((1, 3), dtype=[(name, object) for name in ("ILSVRC2012_ID", "WNID", "words", "gloss",
                                                                     "num_children", "children")])
    synsets[0, 0] = (2.0, "n01443537", "goldfish, Carassius auratus", "a fish", 0.0, np.zeros((1, 0)))
    synsets[0, 1] = (1.0, "n01440764", "tench, Tinca tinca", "a fish", 0.0, np.zeros((1, 0)))
    synsets[0, 2] = (3.0, "n00000001", "fish", "animals", 2.0, np.array([[1.0, 2.0]]))
    meta = io.BytesIO()
    scipy.io.savemat(meta, {"synsets": synsets}, do_compression=True)
    archives = {
        "ILSVRC2012_devkit_t12.tar.gz": _tar({"ILSVRC2012_devkit_t12/data/meta.mat": meta.getvalue(),
                                              "ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt":
                                                  b"2\n1\n2\n"}, gz=True),
        "ILSVRC2012_img_train.tar": _tar({
            "n01440764.tar": _tar({"n01440764_10.JPEG": _jpeg_bytes(1), "n01440764_2.JPEG": _jpeg_bytes(2)}),
            "n01443537.tar": _tar({"n01443537_7.JPEG": _jpeg_bytes(3, 5, 9)})}),
        "ILSVRC2012_img_val.tar": _tar({f"ILSVRC2012_val_{i:08d}.JPEG": _jpeg_bytes(10 + i) for i in (1, 2, 3)}),
    }
    table = {key: (name, hashlib.md5(archives[name]).hexdigest()) for key, name in
             (("devkit", "ILSVRC2012_devkit_t12.tar.gz"), ("train", "ILSVRC2012_img_train.tar"),
              ("val", "ILSVRC2012_img_val.tar"))}
    monkeypatch.setattr(fd_imagenet, "ARCHIVE_META", table)
    monkeypatch.setattr(tv_imagenet, "ARCHIVE_META", table)
    return archives


def _write_archives(root, archives):
    root.mkdir()
    for name, data in archives.items():
        (root / name).write_bytes(data)
    return str(root)


@pytest.mark.parametrize("split", ["train", "val"])
def test_imagenet_prepares_and_matches_torchvision(tmp_path, imagenet_archives, compare_datasets, split):
    ours = fd.ImageNet(_write_archives(tmp_path / "ours", imagenet_archives), split=split)
    ref = tvd.ImageNet(_write_archives(tmp_path / "ref", imagenet_archives), split=split)
    compare_datasets(ours, ref)
    assert ours.classes == ref.classes == [("tench", "Tinca tinca"), ("goldfish", "Carassius auratus")]
    assert ours.wnids == ref.wnids and ours.class_to_idx == ref.class_to_idx and ours.wnid_to_idx == ref.wnid_to_idx
    assert [os.path.relpath(p, ours.root) for p, _ in ours.samples] == [os.path.relpath(p, ref.root)
                                                                         for p, _ in ref.samples]
    # each reads the other's meta.bin (torch.save's format)
    assert fd_imagenet.load_meta_file(ref.root) == tv_imagenet.load_meta_file(ours.root)
    compare_datasets(fd.wrap_dataset_for_transforms_v2(ours), tvd.wrap_dataset_for_transforms_v2(ref))


def test_imagenet_errors(tmp_path, imagenet_archives):
    with pytest.raises(RuntimeError, match="The archive ILSVRC2012_devkit_t12.tar.gz is not present in the root "
                                           "directory or is corrupted. You need to download it externally"):
        fd.ImageNet(str(tmp_path))
    with pytest.raises(RuntimeError, match="The meta file .*meta.bin is not present"):
        fd_imagenet.load_meta_file(str(tmp_path))
    with pytest.raises(ValueError, match="Unknown value 'test' for argument split"):
        fd.ImageNet(str(tmp_path), split="test")
