"""flowvision.datasets against torchvision.datasets, cases found by a differential fuzzer (fourth round): the
VisionDataset base (torchvision's signature, the ``transforms`` attribute, the repr with its StandardTransform),
FakeData's negative indices and tensor labels, MNIST's legacy attributes, class attributes torchvision has,
datasets.utils helpers and option errors, pycocotools' ``annToMask``/``info``, and ``download=True`` staying
offline when the files are already there. Fixtures are tiny trees written to a temp dir; nothing is downloaded."""
import contextlib
import io
import json
import pickle
import socket
import warnings

import numpy as np
import pytest
import scipy.io
import torch
import torchvision.datasets as tvd
import torchvision.datasets.utils as tv_utils
from PIL import Image

import engine
import flowvision.datasets as fd
from flowvision.datasets import utils as fd_utils


class Tag:
    """A transform with a fixed repr (so both libraries print the same) that tags what it is given."""

    def __init__(self, name):
        self.name = name

    def __call__(self, x):
        return self.name, x

    def __repr__(self):
        return f"Tag(\n  {self.name}\n)"  # two lines: checks how later lines are indented


class JointTag:
    def __call__(self, image, target):
        return ("joint", image), ("joint", target)

    def __repr__(self):
        return "JointTag()"


_TRANSFORMS = [{}, {"transform": Tag("t")}, {"target_transform": Tag("tt")},
               {"transform": Tag("t"), "target_transform": Tag("tt")}]
_IDS = ["none", "transform", "target_transform", "both"]


def _same(ours, ref):
    """Items equal: PIL images by mode, size and pixels, tensors by dtype and values, the rest by type and value."""
    if isinstance(ref, Image.Image):
        assert (ours.mode, ours.size) == (ref.mode, ref.size)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
    elif isinstance(ref, torch.Tensor):
        assert isinstance(ours, engine.Tensor) and str(ours.dtype)[-5:] == str(ref.dtype)[-5:]
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    elif isinstance(ref, (tuple, list)):
        assert type(ours) is type(ref) and len(ours) == len(ref)
        for a, b in zip(ours, ref):
            _same(a, b)
    else:
        assert type(ours) is type(ref) and ours == ref


def _idx(array):
    header = bytes([0, 0, {np.uint8: 0x08, np.int32: 0x0C}[array.dtype.type], array.ndim])
    return header + np.array(array.shape, ">i4").tobytes() + array.astype(array.dtype.newbyteorder(">")).tobytes()


@pytest.fixture(scope="module")
def mnist_root(tmp_path_factory):
    """MNIST, FashionMNIST and KMNIST raw folders (3 train, 2 test images of 5x7), EMNIST letters, QMNIST test."""
    root = tmp_path_factory.mktemp("mnist")
    rng = np.random.default_rng(0)
    for name in ("MNIST", "FashionMNIST", "KMNIST"):
        raw = root / name / "raw"
        raw.mkdir(parents=True)
        for prefix, n in (("train", 3), ("t10k", 2)):
            (raw / f"{prefix}-images-idx3-ubyte").write_bytes(_idx(rng.integers(0, 256, (n, 5, 7), dtype=np.uint8)))
            (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(_idx(rng.integers(0, 10, n).astype(np.uint8)))
    raw = root / "EMNIST" / "raw"
    raw.mkdir(parents=True)
    for part in ("train", "test"):
        (raw / f"emnist-letters-{part}-images-idx3-ubyte").write_bytes(_idx(rng.integers(0, 256, (2, 5, 7),
                                                                                        dtype=np.uint8)))
        (raw / f"emnist-letters-{part}-labels-idx1-ubyte").write_bytes(_idx(np.array([1, 26], np.uint8)))
    raw = root / "QMNIST" / "raw"
    raw.mkdir(parents=True)
    (raw / "qmnist-test-images-idx3-ubyte").write_bytes(_idx(rng.integers(0, 256, (2, 5, 7), dtype=np.uint8)))
    (raw / "qmnist-test-labels-idx2-int").write_bytes(_idx(rng.integers(0, 10, (2, 8)).astype(np.int32)))
    return root


# ---------------------------------------------------------------- the VisionDataset base

def _toy(base):
    class Toy(base):
        """A two-item dataset that goes through ``transforms``, as torchvision's detection sets do."""

        def __getitem__(self, index):
            image, target = f"image{index}", index
            return self.transforms(image, target) if self.transforms is not None else (image, target)

        def __len__(self):
            return 2

    return Toy


@pytest.mark.parametrize("kwargs", _TRANSFORMS + [{"transforms": JointTag()}], ids=_IDS + ["joint"])
@pytest.mark.parametrize("positional", [False, True])
def test_vision_dataset_takes_torchvisions_arguments(tmp_path, kwargs, positional):
    ours_cls, ref_cls = _toy(fd.VisionDataset), _toy(tvd.VisionDataset)
    names = ("transforms", "transform", "target_transform")
    if positional:  # VisionDataset(root, transforms, transform, target_transform), as subclasses call it
        args = [str(tmp_path)] + [kwargs.get(name) for name in names]
        ours, ref = ours_cls(*args), ref_cls(*args)
    else:
        ours, ref = ours_cls(root=str(tmp_path), **kwargs), ref_cls(root=str(tmp_path), **kwargs)
    for name in names:
        assert repr(getattr(ours, name)) == repr(getattr(ref, name)), name
    assert type(ours.transforms).__name__ == type(ref.transforms).__name__
    assert repr(ours) == repr(ref)
    for i in range(2):
        _same(ours[i], ref[i])


def test_vision_dataset_refuses_both_kinds_of_transform():
    for cls in (fd.VisionDataset, tvd.VisionDataset):
        with pytest.raises(ValueError, match="^Only transforms or transform/target_transform can be passed"):
            cls("root", JointTag(), Tag("t"))
    assert repr(fd.VisionDataset.__init__.__defaults__) == repr((None, None, None, None))


@pytest.mark.parametrize("kwargs", _TRANSFORMS, ids=_IDS)
@pytest.mark.parametrize("name", ["MNIST", "FashionMNIST", "KMNIST"])
def test_mnist_repr_transforms_and_items_match_torchvision(mnist_root, name, kwargs):
    for train in (True, False):
        ours = getattr(fd, name)(str(mnist_root), train=train, **kwargs)
        ref = getattr(tvd, name)(str(mnist_root), train=train, **kwargs)
        assert repr(ours) == repr(ref)
        assert repr(ours.transforms) == repr(ref.transforms)
        for i in range(-len(ref), len(ref)):
            _same(ours[i], ref[i])


def test_joint_transforms_repr_and_items_match_torchvision(tmp_path):
    """A dataset built on the joint transforms prints it as torchvision does (VOC segmentation, one image)."""
    voc = tmp_path / "VOCdevkit" / "VOC2012"
    (voc / "ImageSets" / "Segmentation").mkdir(parents=True)
    (voc / "ImageSets" / "Segmentation" / "train.txt").write_text("a\n")
    (voc / "JPEGImages").mkdir()
    Image.new("RGB", (7, 5), (9, 8, 7)).save(voc / "JPEGImages" / "a.jpg")
    (voc / "SegmentationClass").mkdir()
    Image.new("P", (7, 5), 3).save(voc / "SegmentationClass" / "a.png")
    for kwargs in _TRANSFORMS + [{"transforms": JointTag()}]:
        ours, ref = fd.VOCSegmentation(str(tmp_path), **kwargs), tvd.VOCSegmentation(str(tmp_path), **kwargs)
        assert repr(ours) == repr(ref)
        _same(ours[0], ref[0])


@pytest.mark.parametrize("name", ["CIFAR10", "CIFAR100"])
def test_cifar_items_attributes_and_repr_match_torchvision(tmp_path, monkeypatch, name):
    ours_cls, ref_cls = getattr(fd, name), getattr(tvd, name)
    rng = np.random.default_rng(len(name))
    folder = tmp_path / ours_cls.base_folder
    folder.mkdir()
    lists = {}
    for key in ("train_list", "test_list"):
        lists[key] = []
        for file, _ in getattr(ours_cls, key):
            n = int(rng.integers(1, 3))
            batch = {"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                     ours_cls.labels_key: rng.integers(0, 10, n).tolist()}
            (folder / file).write_bytes(pickle.dumps(batch, protocol=2))
            lists[key].append([file, None])  # no md5: torchvision then checks that the file exists
    (folder / ours_cls.meta["filename"]).write_bytes(pickle.dumps({ours_cls.meta["key"]: list("abcdefghij")}))
    for cls in (ours_cls, ref_cls):
        monkeypatch.setattr(cls, "train_list", lists["train_list"])
        monkeypatch.setattr(cls, "test_list", lists["test_list"])
        monkeypatch.setattr(cls, "meta", dict(cls.meta, md5=None))
    for train, kwargs in zip((True, False), _TRANSFORMS[1:3]):
        ours, ref = ours_cls(str(tmp_path), train=train, **kwargs), ref_cls(str(tmp_path), train=train, **kwargs)
        assert repr(ours) == repr(ref)
        assert (ours.classes, ours.class_to_idx, ours.targets) == (ref.classes, ref.class_to_idx, ref.targets)
        np.testing.assert_array_equal(ours.data, ref.data)
        for i in range(len(ref)):
            _same(ours[i], ref[i])


@pytest.mark.parametrize("seed", range(3))
def test_dataset_folder_matches_torchvision(tmp_path, seed):
    """Class folders with mixed-case and hidden names, nested and hidden files, extensions in any case."""
    rng = np.random.default_rng(seed)
    for cls in rng.choice(["cat", "Dog", ".hidden", "b", "B"], 3, replace=False):
        for j in range(int(rng.integers(1, 4))):
            folder = tmp_path / cls / str(rng.choice(["", "sub", ".hid"]))
            folder.mkdir(parents=True, exist_ok=True)
            name = f"{rng.choice(['x', 'Y', '.h', '10', '2'])}{j}{rng.choice(['.txt', '.TXT', '.npy', ''])}"
            (folder / name).write_text(name)
    for kwargs in ({"extensions": ".txt"}, {"extensions": (".txt", ".npy")}, {"is_valid_file": lambda p: "1" in p},
                   {"extensions": ".txt", "allow_empty": True, "transform": Tag("t")}):
        try:
            ref = tvd.DatasetFolder(str(tmp_path), lambda path: path[-6:], **kwargs)
        except FileNotFoundError as e:
            with pytest.raises(FileNotFoundError) as info:
                fd.DatasetFolder(str(tmp_path), lambda path: path[-6:], **kwargs)
            assert str(info.value) == str(e)
            continue
        ours = fd.DatasetFolder(str(tmp_path), lambda path: path[-6:], **kwargs)
        assert (ours.classes, ours.class_to_idx, ours.samples, ours.targets) == \
            (ref.classes, ref.class_to_idx, ref.samples, ref.targets)
        assert repr(ours) == repr(ref)
        for i in range(-len(ref), len(ref)):
            _same(ours[i], ref[i])


# ---------------------------------------------------------------- FakeData

@pytest.mark.parametrize("seed", range(4))
def test_fakedata_negative_indices_and_tensor_labels_match_torchvision(seed):
    rng = np.random.default_rng(seed)
    kwargs = dict(size=int(rng.integers(1, 4)), image_size=(int(rng.choice([1, 3])), int(rng.integers(1, 6)),
                                                            int(rng.integers(1, 6))),
                  num_classes=int(rng.integers(1, 5)), random_offset=int(rng.integers(0, 50)))
    seen = []

    def target_transform(label):  # torchvision hands the label over as a 0-d int64 tensor
        seen.append((type(label).__name__, tuple(label.shape), str(label.dtype)[-5:]))
        return label * 3 + 1

    ours = fd.FakeData(**kwargs, target_transform=target_transform)
    ref = tvd.FakeData(**kwargs, target_transform=target_transform)
    for i in range(-kwargs["size"] - 2, kwargs["size"]):  # a negative index is a seed of its own, not wrapped
        _same(ours[i], ref[i])
    assert seen[0::2] == [("Tensor", (), "int64")] * (len(seen) // 2) == seen[1::2]
    for dataset in (ours, ref):
        with pytest.raises(IndexError, match="^FakeData index out of range$"):
            dataset[kwargs["size"]]


# ---------------------------------------------------------------- attributes torchvision has

def test_mnist_legacy_attributes_match_torchvision(mnist_root):
    pairs = [(fd.MNIST(str(mnist_root)), tvd.MNIST(str(mnist_root))),
             (fd.EMNIST(str(mnist_root), "letters", train=False), tvd.EMNIST(str(mnist_root), "letters", train=False)),
             (fd.QMNIST(str(mnist_root), "test"), tvd.QMNIST(str(mnist_root), "test"))]
    for ours, ref in pairs:
        for name in ("training_file", "test_file", "processed_folder", "raw_folder"):
            assert getattr(ours, name) == getattr(ref, name), name
        for old, new in (("train_labels", "targets"), ("test_labels", "targets"), ("train_data", "data"),
                         ("test_data", "data")):
            with pytest.warns(UserWarning, match=f"^{old} has been renamed {new}$"):
                value = getattr(ours, old)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _same(value, getattr(ref, old))
    assert pairs[2][0].data_file == pairs[2][1].data_file == "test.pt"


def test_legacy_processed_files_load_as_in_torchvision(tmp_path):
    """Roots prepared by older torchvision versions hold ``processed/<file>.pt``: (data, targets) saved tensors."""
    rng = np.random.default_rng(1)
    layout = {"MNIST": ["training.pt", "test.pt"], "EMNIST": ["training_digits.pt", "test_digits.pt"],
              "QMNIST": ["test50k.pt"]}
    for name, files in layout.items():
        (tmp_path / name / "processed").mkdir(parents=True)
        for i, file in enumerate(files):
            images = torch.from_numpy(rng.integers(0, 256, (2 + i, 5, 7), dtype=np.uint8))
            labels = torch.from_numpy(rng.integers(0, 10, (2 + i, 8) if name == "QMNIST" else 2 + i))
            torch.save((images, labels), tmp_path / name / "processed" / file)
    for train in (True, False):
        pairs = [(fd.MNIST(str(tmp_path), train=train), tvd.MNIST(str(tmp_path), train=train)),
                 (fd.EMNIST(str(tmp_path), "digits", train=train), tvd.EMNIST(str(tmp_path), "digits", train=train)),
                 (fd.QMNIST(str(tmp_path), "test50k", compat=train),
                  tvd.QMNIST(str(tmp_path), "test50k", compat=train))]
        for ours, ref in pairs:
            _same((ours.data, ours.targets), (ref.data, ref.targets))
            for i in range(len(ref)):
                _same(ours[i], ref[i])


def test_classes_have_the_public_attributes_of_torchvisions():
    """Every public class attribute and method of a torchvision dataset (``download``, legacy names, ...)."""
    missing = {}
    for name in fd.__all__:
        ours, ref = getattr(fd, name), getattr(tvd, name, None)
        if isinstance(ours, type) and isinstance(ref, type):
            lacking = [attr for attr in dir(ref) if not attr.startswith("_") and not hasattr(ours, attr)]
            if lacking:
                missing[name] = lacking
    assert missing == {}


# ---------------------------------------------------------------- datasets.utils and option errors

_STR_ARGS = [("a", None, None, None), (1, None, None, None), (1, "split", ["a"], None), ("b", "split", ["a"], None),
             ("b", "split", ["a"], "custom message"), ("b", "calibration", ("a", "both", None), None),
             ("", "split", [], None), ("b", "split", {"a": 1}, None), (b"a", "split", None, None)]


@pytest.mark.parametrize("value, arg, valid, custom", _STR_ARGS)
def test_verify_str_arg_matches_torchvision(value, arg, valid, custom):
    try:
        expected = tv_utils.verify_str_arg(value, arg, valid, custom)
    except ValueError as e:
        with pytest.raises(ValueError) as info:
            fd_utils.verify_str_arg(value, arg, valid, custom)
        assert str(info.value) == str(e)
    else:
        assert fd_utils.verify_str_arg(value, arg, valid, custom) == expected


@pytest.mark.parametrize("items", [["a", "b"], [], [None, 1], "ab"])
def test_iterable_to_str_matches_torchvision(items):
    assert fd_utils.iterable_to_str(items) == tv_utils.iterable_to_str(items)


def test_file_helpers_match_torchvision(tmp_path):
    for name in ("a", "B", ".hidden"):
        (tmp_path / name).mkdir()
    for i, name in enumerate(("c.png", "d.PNG", "e.jpg", "f")):
        (tmp_path / name).write_bytes(bytes(range(i * 40)))
    for root in (str(tmp_path), tmp_path):
        for prefix in (False, True):
            assert fd_utils.list_dir(root, prefix) == tv_utils.list_dir(root, prefix)
            for suffix in (".png", (".png", ".jpg"), ""):
                assert fd_utils.list_files(root, suffix, prefix) == tv_utils.list_files(root, suffix, prefix)
    path = tmp_path / "e.jpg"
    md5 = tv_utils.calculate_md5(path)
    assert fd_utils.calculate_md5(path, chunk_size=7) == md5
    assert fd_utils.check_md5(path, md5) and not fd_utils.check_md5(path, "0" * 32)


@pytest.mark.parametrize("name, kwargs", [("Cityscapes", {"target_type": "depth"}),
                                          ("Cityscapes", {"target_type": ["semantic", "x"]}),
                                          ("Middlebury2014Stereo", {"calibration": "x"})])
def test_option_errors_list_the_valid_values_as_torchvision(tmp_path, name, kwargs):
    with pytest.raises(ValueError) as expected:
        getattr(tvd, name)(str(tmp_path), **kwargs)
    with pytest.raises(ValueError) as info:
        getattr(fd, name)(str(tmp_path), **kwargs)
    assert str(info.value) == str(expected.value)


def test_wrapper_target_keys_error_matches_torchvision(mnist_root):
    with pytest.raises(ValueError) as expected:
        tvd.wrap_dataset_for_transforms_v2(tvd.MNIST(str(mnist_root)), target_keys="all")
    with pytest.raises(ValueError) as info:
        fd.wrap_dataset_for_transforms_v2(fd.MNIST(str(mnist_root)), target_keys="all")
    assert str(info.value) == str(expected.value)


# ---------------------------------------------------------------- COCO index

@pytest.mark.filterwarnings("ignore:__array__ implementation:DeprecationWarning")  # inside pycocotools
def test_coco_index_masks_and_info_match_pycocotools(tmp_path):
    from pycocotools import mask as coco_mask
    from pycocotools.coco import COCO

    rng = np.random.default_rng(0)
    rle = coco_mask.encode(np.asfortranarray(rng.integers(0, 2, (5, 7), dtype=np.uint8)))
    segmentations = [[[0.5, 0.2, 6.1, 1.0, 3.3, 4.8]], [[0, 0, 3, 0, 3, 3], [4, 1, 6.5, 1, 6, 4.2, 4.4, 3.9]],
                     {"counts": rle["counts"].decode("ascii"), "size": [5, 7]}, {"counts": [30, 5], "size": [5, 7]}]
    annotation = {"info": {"year": 2017, "description": "tiny"}, "images": [{"id": 3, "height": 5, "width": 7}],
                  "categories": [{"id": 1, "name": "c", "supercategory": "s"}],
                  "annotations": [{"id": i, "image_id": 3, "category_id": 1, "iscrowd": int(i >= 2), "area": 1.0,
                                   "bbox": [0, 0, 1, 1], "segmentation": seg} for i, seg in enumerate(segmentations)]}
    (tmp_path / "ann.json").write_text(json.dumps(annotation))
    ours = fd.coco.CocoIndex(str(tmp_path / "ann.json"))
    printed, ref_printed = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(ref_printed):
        ref = COCO(str(tmp_path / "ann.json"))
        ref_printed.seek(0), ref_printed.truncate()
        ref.info()
    with contextlib.redirect_stdout(printed):
        ours.info()
    assert printed.getvalue() == ref_printed.getvalue()
    for ann in annotation["annotations"]:
        mask, ref_mask = ours.annToMask(ann), ref.annToMask(ann)
        assert (mask.dtype, mask.shape) == (ref_mask.dtype, ref_mask.shape)
        np.testing.assert_array_equal(mask, ref_mask)


# ---------------------------------------------------------------- download=True with the files there

@pytest.fixture
def offline(monkeypatch):
    """Every connection attempt is recorded and refused."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args[:2])
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def test_download_with_an_extracted_tree_stays_offline(tmp_path, offline):
    voc = tmp_path / "VOCdevkit" / "VOC2012"
    for folder in ("ImageSets/Main", "JPEGImages", "Annotations"):
        (voc / folder).mkdir(parents=True)
    (voc / "ImageSets" / "Main" / "train.txt").write_text("a\n")
    Image.new("RGB", (7, 5)).save(voc / "JPEGImages" / "a.jpg")
    (voc / "Annotations" / "a.xml").write_text("<annotation><object><name>dog</name></object></annotation>")
    _same(fd.VOCDetection(str(tmp_path), download=True)[0][0], tvd.VOCDetection(str(tmp_path))[0][0])
    (tmp_path / "cls").mkdir()
    (tmp_path / "img").mkdir()
    (tmp_path / "train.txt").write_text("b\n")
    (tmp_path / "val.txt").write_text("")
    Image.new("RGB", (4, 3)).save(tmp_path / "img" / "b.jpg")
    scipy.io.savemat(tmp_path / "cls" / "b.mat", {"GTcls": {"Segmentation": np.eye(3, 4, dtype=np.uint8)}})
    ours, ref = fd.SBDataset(str(tmp_path), mode="segmentation", download=True), tvd.SBDataset(str(tmp_path),
                                                                                               mode="segmentation")
    _same(ours[0], ref[0])
    assert offline == []
