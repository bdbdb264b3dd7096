"""flowvision.datasets: image folders, CIFAR/MNIST downloaded from a local server in their real formats, safety."""
import gzip
import hashlib
import io
import os
import pickle
import shutil
import socket
import tarfile
import zipfile

import numpy as np
import pytest
import torchvision.datasets as tvd
from PIL import Image

import flowvision.datasets as fd
from engine.utils.data import DataLoader
from flowvision.datasets import cifar, utils as dutils
from flowvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset
from http_server import FileServer

DATA_IMAGES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "data", "images")


def _md5(data):
    return hashlib.md5(data).hexdigest()


@pytest.fixture
def server():
    with FileServer() as s:
        yield s


# ---------------------------------------------------------------- image folders

def _source_images():
    """Small PIL images: the repository's test photos when present, else generated ones."""
    names = sorted(n for n in os.listdir(DATA_IMAGES) if n.endswith(".png")) if os.path.isdir(DATA_IMAGES) else []
    if names:
        return [Image.open(os.path.join(DATA_IMAGES, n)).convert("RGB").resize((24, 16)) for n in names]
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 256, (16, 24, 3), dtype=np.uint8)) for _ in range(3)]


@pytest.fixture
def image_tree(tmp_path):
    images = _source_images()
    layout = {"cat": ["a.png", "b.JPG", "sub/c.bmp"], "dog": ["d.png"], "zebra": ["e.ppm", "f.webp"]}
    for i, (cls, files) in enumerate(sorted(layout.items())):
        for j, name in enumerate(files):
            path = tmp_path / cls / name
            path.parent.mkdir(parents=True, exist_ok=True)
            images[(i + j) % len(images)].save(path, format={"JPG": "JPEG"}.get(name.split(".")[-1], None))
    (tmp_path / "cat" / "notes.txt").write_text("not an image")
    (tmp_path / "readme.md").write_text("top-level files are not classes")
    return tmp_path


def test_image_folder_matches_torchvision(image_tree):
    ours, ref = fd.ImageFolder(str(image_tree)), tvd.ImageFolder(str(image_tree))
    assert ours.classes == ref.classes == ["cat", "dog", "zebra"]
    assert ours.class_to_idx == ref.class_to_idx
    assert ours.samples == ref.samples and ours.imgs == ours.samples and ours.targets == ref.targets
    assert IMG_EXTENSIONS == tvd.folder.IMG_EXTENSIONS
    for i in range(len(ours)):
        (img, target), (img_ref, target_ref) = ours[i], ref[i]
        assert target == target_ref and img.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(img), np.asarray(img_ref))


def test_image_folder_options_and_errors(image_tree, tmp_path_factory):
    only_png = fd.ImageFolder(str(image_tree), is_valid_file=lambda p: p.endswith(".png"),
                              transform=lambda im: im.size, target_transform=lambda t: t * 10, allow_empty=True)
    assert [os.path.basename(p) for p, _ in only_png.samples] == ["a.png", "d.png"]
    assert only_png[1] == ((24, 16), 10)
    texts = fd.DatasetFolder(str(image_tree), loader=lambda p: open(p).read(), extensions=(".txt",),
                             allow_empty=True)
    assert texts[0] == ("not an image", 0)
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes dog, zebra"):
        fd.DatasetFolder(str(image_tree), loader=open, extensions=".txt")
    with pytest.raises(ValueError, match="Both extensions and is_valid_file cannot be None"):
        make_dataset(str(image_tree), extensions=None, is_valid_file=None)
    empty = tmp_path_factory.mktemp("empty")
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        find_classes(str(empty))


def test_image_folder_through_dataloader(image_tree):
    import flowvision.transforms as T
    ds = fd.ImageFolder(str(image_tree), transform=T.Compose([T.Resize((8, 8)), T.ToTensor()]))
    batches = list(DataLoader(ds, batch_size=4))
    assert [tuple(b[0].shape) for b in batches] == [(4, 3, 8, 8), (2, 3, 8, 8)]
    assert batches[0][1].tolist() == [0, 0, 0, 1]


# ---------------------------------------------------------------- CIFAR

def _cifar_batch(seed, n, labels_key="labels"):
    rng = np.random.default_rng(seed)
    entry = {"batch_label": f"batch {seed}", labels_key: rng.integers(0, 10, n).tolist(),
             "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
             "filenames": [f"img_{seed}_{i}.png" for i in range(n)]}
    return pickle.dumps(entry, protocol=2)


def _tar_gz(folder, files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def tiny_cifar10(server, monkeypatch):
    """A real-format cifar-10-python.tar.gz with 2 training batches of 10 images, served locally."""
    files = {"data_batch_1": _cifar_batch(1, 10), "data_batch_2": _cifar_batch(2, 10), "test_batch": _cifar_batch(3, 10),
             "batches.meta": pickle.dumps({"label_names": [f"class{i}" for i in range(10)], "num_vis": 3072}, 2)}
    archive = _tar_gz("cifar-10-batches-py", files)
    server.files["cifar-10-python.tar.gz"] = archive
    for cls in (fd.CIFAR10, tvd.CIFAR10):
        monkeypatch.setattr(cls, "train_list", [["data_batch_1", _md5(files["data_batch_1"])],
                                                ["data_batch_2", _md5(files["data_batch_2"])]])
        monkeypatch.setattr(cls, "test_list", [["test_batch", _md5(files["test_batch"])]])
        monkeypatch.setattr(cls, "meta", {"filename": "batches.meta", "key": "label_names",
                                          "md5": _md5(files["batches.meta"])})
        monkeypatch.setattr(cls, "tgz_md5", _md5(archive))
    monkeypatch.setattr(fd.CIFAR10, "mirrors", [server.base_url])
    return files


def test_cifar10_download_and_load_matches_torchvision(tmp_path, server, tiny_cifar10):
    train = fd.CIFAR10(str(tmp_path), train=True, download=True)
    assert len(server.requests) == 1 and len(train) == 20
    ref = tvd.CIFAR10(str(tmp_path), train=True, download=False)
    np.testing.assert_array_equal(train.data, ref.data)
    assert train.targets == ref.targets and train.classes == ref.classes == [f"class{i}" for i in range(10)]
    img, target = train[13]
    assert img.size == (32, 32) and img.mode == "RGB" and target == ref.targets[13]
    np.testing.assert_array_equal(np.asarray(img), np.asarray(ref[13][0]))
    test = fd.CIFAR10(str(tmp_path), train=False, download=True)
    assert len(test) == 10 and len(server.requests) == 1  # verified files are not fetched again


def test_cifar100_fine_labels(tmp_path, server, monkeypatch):
    files = {"train": _cifar_batch(4, 6, "fine_labels"), "test": _cifar_batch(5, 4, "fine_labels"),
             "meta": pickle.dumps({"fine_label_names": [f"f{i}" for i in range(100)]}, 2)}
    archive = _tar_gz("cifar-100-python", files)
    server.files["cifar-100-python.tar.gz"] = archive
    monkeypatch.setattr(fd.CIFAR100, "train_list", [["train", _md5(files["train"])]])
    monkeypatch.setattr(fd.CIFAR100, "test_list", [["test", _md5(files["test"])]])
    monkeypatch.setattr(fd.CIFAR100, "meta", {"filename": "meta", "key": "fine_label_names", "md5": _md5(files["meta"])})
    monkeypatch.setattr(fd.CIFAR100, "tgz_md5", _md5(archive))
    monkeypatch.setenv(dutils.MIRROR_ENV, server.base_url)
    ds = fd.CIFAR100(str(tmp_path), train=False, download=True)
    assert len(ds) == 4 and ds.targets == pickle.loads(files["test"])["fine_labels"] and len(ds.classes) == 100


def test_cifar_corrupt_download_and_missing(tmp_path, server, tiny_cifar10):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.CIFAR10(str(tmp_path))
    server.fault = "wrong"
    with pytest.raises(RuntimeError, match="does not match the expected md5"):
        fd.CIFAR10(str(tmp_path), download=True)
    assert not os.path.exists(tmp_path / "cifar-10-python.tar.gz")
    assert [n for n in os.listdir(tmp_path)] == []  # nothing half-written left behind
    server.fault = None
    (tmp_path / "cifar-10-python.tar.gz").write_bytes(b"truncated garbage")
    assert len(fd.CIFAR10(str(tmp_path), download=True)) == 20  # the corrupt archive is fetched again
    assert len(server.requests) == 2


def test_cifar_unpickler_refuses_code(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps({"data": Evil(), "labels": [1]}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="forbidden"):
        cifar.load_batch(str(path))
    path.write_bytes(pickle.dumps({"data": np.array([object()], dtype=object)}, protocol=2))
    with pytest.raises(pickle.UnpicklingError):
        cifar.load_batch(str(path))
    assert not marker.exists()


def test_cifar_malicious_archive_does_not_run(tmp_path, server, tiny_cifar10, monkeypatch):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    bad = pickle.dumps({"data": Evil(), "labels": [0]}, protocol=2)
    files = dict(tiny_cifar10, data_batch_1=bad)
    archive = _tar_gz("cifar-10-batches-py", files)
    server.files["cifar-10-python.tar.gz"] = archive
    monkeypatch.setattr(fd.CIFAR10, "tgz_md5", _md5(archive))
    monkeypatch.setattr(fd.CIFAR10, "train_list", [["data_batch_1", _md5(bad)]])
    with pytest.raises(pickle.UnpicklingError):
        fd.CIFAR10(str(tmp_path / "root"), download=True)
    assert not marker.exists()


# ---------------------------------------------------------------- MNIST

def _idx(arr):
    codes = {np.uint8: 0x08, np.int32: 0x0C}
    header = bytes([0, 0, codes[arr.dtype.type], arr.ndim]) + np.array(arr.shape, ">i4").tobytes()
    return header + arr.astype(arr.dtype.newbyteorder(">")).tobytes()


@pytest.fixture(params=["MNIST", "FashionMNIST"])
def tiny_mnist(request, server, monkeypatch):
    """Gzipped IDX files (10 train, 5 test images) served locally; the class's md5s set to theirs."""
    rng = np.random.default_rng(len(request.param))
    raw = {"train-images-idx3-ubyte": _idx(rng.integers(0, 256, (10, 28, 28), dtype=np.uint8)),
           "train-labels-idx1-ubyte": _idx(rng.integers(0, 10, 10).astype(np.uint8)),
           "t10k-images-idx3-ubyte": _idx(rng.integers(0, 256, (5, 28, 28), dtype=np.uint8)),
           "t10k-labels-idx1-ubyte": _idx(rng.integers(0, 10, 5).astype(np.uint8))}
    gz = {name + ".gz": gzip.compress(data, mtime=0) for name, data in raw.items()}
    server.files.update(gz)
    cls = getattr(fd, request.param)
    monkeypatch.setattr(cls, "resources", [(name, _md5(data)) for name, data in gz.items()])
    monkeypatch.setattr(cls, "mirrors", [server.url("missing-mirror/"), server.base_url])
    return cls, getattr(tvd, request.param)


def test_mnist_download_and_load_matches_torchvision(tmp_path, server, tiny_mnist):
    cls, ref_cls = tiny_mnist
    ds = cls(str(tmp_path), train=True, download=True)
    assert sum(1 for path, _ in server.requests if "missing-mirror" in path) == 4  # first mirror 404s
    ref = ref_cls(str(tmp_path), train=True, download=False)
    np.testing.assert_array_equal(ds.data.numpy(), ref.data.numpy())
    np.testing.assert_array_equal(ds.targets.numpy(), ref.targets.numpy())
    assert str(ds.targets.dtype) == "engine.int64" and ds.classes == ref.classes
    img, target = ds[3]
    assert img.mode == "L" and target == int(ref.targets[3])
    np.testing.assert_array_equal(np.asarray(img), np.asarray(ref[3][0]))
    assert len(cls(str(tmp_path), train=False)) == 5


def test_mnist_errors(tmp_path, server, tiny_mnist):
    cls, _ = tiny_mnist
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
        cls(str(tmp_path))
    server.fault = "500"
    with pytest.raises(RuntimeError, match="(?s)Error downloading train-images-idx3-ubyte.gz.*HTTP Error 500"):
        cls(str(tmp_path), download=True)
    assert not any(n.endswith(".gz") for n in os.listdir(tmp_path / cls.__name__ / "raw"))


def _closed_port_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


def test_offline_error_names_url_and_destination(tmp_path, monkeypatch):
    url = _closed_port_url()
    monkeypatch.setattr(fd.MNIST, "mirrors", [url])
    with pytest.raises(RuntimeError, match="train-images-idx3-ubyte.gz") as info:
        fd.MNIST(str(tmp_path), download=True)
    message = str(info.value)
    assert url + "train-images-idx3-ubyte.gz" in message and "offline" in message
    assert os.path.join(str(tmp_path), "MNIST", "raw") in message
    with pytest.raises(RuntimeError, match=r"put it at .*x\.bin"):
        dutils.download_url(url + "x.bin", str(tmp_path))


# ---------------------------------------------------------------- download helpers, archives, FakeData

def test_download_url_checks_and_reuses(tmp_path, server):
    server.files["blob.bin"] = b"payload" * 100
    path = dutils.download_url(server.url("blob.bin"), str(tmp_path), md5=_md5(server.files["blob.bin"]),
                               progress=False)
    assert open(path, "rb").read() == server.files["blob.bin"]
    dutils.download_url(server.url("blob.bin"), str(tmp_path), md5=_md5(server.files["blob.bin"]), progress=False)
    assert len(server.requests) == 1
    sha = hashlib.sha256(server.files["blob.bin"]).hexdigest()
    assert dutils.check_integrity(path, sha256=sha) and not dutils.check_integrity(path, md5="0" * 32)
    server.fault = "404"
    with pytest.raises(RuntimeError, match="HTTP Error 404"):
        dutils.download_url(server.url("other.bin"), str(tmp_path), progress=False)
    assert sorted(os.listdir(tmp_path)) == ["blob.bin"]


def test_extract_archive_formats_and_traversal(tmp_path):
    (tmp_path / "a.txt").write_text("A")
    with zipfile.ZipFile(tmp_path / "x.zip", "w") as z:
        z.writestr("dir/b.txt", "B")
    with tarfile.open(tmp_path / "x.tar", "w") as t:
        t.add(tmp_path / "a.txt", arcname="t/a.txt")
    (tmp_path / "c.txt.gz").write_bytes(gzip.compress(b"C"))
    out = tmp_path / "out"
    dutils.extract_archive(str(tmp_path / "x.zip"), str(out))
    dutils.extract_archive(str(tmp_path / "x.tar"), str(out))
    assert dutils.extract_archive(str(tmp_path / "c.txt.gz"), str(out)) == str(out / "c.txt")
    assert (out / "dir" / "b.txt").read_text() == "B" and (out / "t" / "a.txt").read_text() == "A"
    assert (out / "c.txt").read_text() == "C"
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as z:
        z.writestr("../escaped.txt", "x")
    with pytest.raises(RuntimeError, match="outside"):
        dutils.extract_archive(str(tmp_path / "evil.zip"), str(out))
    with tarfile.open(tmp_path / "evil.tar", "w") as t:
        t.add(tmp_path / "a.txt", arcname="../escaped.txt")
    with pytest.raises(tarfile.TarError):
        dutils.extract_archive(str(tmp_path / "evil.tar"), str(out))
    assert not (tmp_path / "escaped.txt").exists()
    shutil.rmtree(out)


def test_fakedata():
    ds = fd.FakeData(size=6, image_size=(3, 12, 10), num_classes=4, transform=lambda im: np.asarray(im))
    assert len(ds) == 6
    img, target = ds[2]
    assert img.shape == (12, 10, 3) and img.dtype == np.uint8 and 0 <= target < 4
    np.testing.assert_array_equal(ds[2][0], img)
    assert fd.FakeData(size=6, image_size=(1, 5, 5), random_offset=3)[0][0].mode == "L"
    with pytest.raises(IndexError):
        ds[6]
    assert "Number of datapoints: 6" in repr(ds)


@pytest.mark.parametrize("kwargs", [{"size": 3}, {"size": 4, "image_size": (1, 17, 9), "num_classes": 3,
                                                   "random_offset": 7}])
def test_fakedata_items_equal_torchvision(kwargs):
    ours, ref = fd.FakeData(**kwargs), tvd.FakeData(**kwargs)
    for i in range(len(ours)):
        (image, target), (ref_image, ref_target) = ours[i], ref[i]
        assert target == ref_target and image.mode == ref_image.mode
        np.testing.assert_array_equal(np.asarray(image), np.asarray(ref_image))
