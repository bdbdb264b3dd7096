"""ImageNet 2012 (ILSVRC2012) classification from its official archives, placed in ``root`` by hand.

The first use unpacks them as torchvision does: the devkit's ``meta.mat`` (read with flowvision's .mat reader) and
validation ground truth become ``meta.bin`` (``(wnid -> class names, val wnids)``, in ``torch.save``'s format, so
torchvision and flowvision share a prepared root); the training tar of per-class tars becomes ``train/<wnid>/``,
the flat validation tar ``val/<wnid>/``. The dataset is then an ImageFolder over ``root/<split>``.
"""
import os
import shutil
import tempfile

import engine
from .folder import ImageFolder
from .matlab import read_mat
from .utils import check_integrity, extract_archive
from .vision import verify_str_arg

__all__ = ["ImageNet", "load_meta_file", "parse_devkit_archive", "parse_train_archive", "parse_val_archive"]

ARCHIVE_META = {"train": ("ILSVRC2012_img_train.tar", "1d675b47d978889d74fa0da5fadfb00e"),
                "val": ("ILSVRC2012_img_val.tar", "29b22e2961454d5413ddabcf34fc5622"),
                "devkit": ("ILSVRC2012_devkit_t12.tar.gz", "fa75699e90414af021442c21a62c3abf")}
META_FILE = "meta.bin"


class ImageNet(ImageFolder):
    """Items are (RGB PIL image, class index); ``classes`` holds each class's tuple of names, ``wnids`` the
    WordNet ids, and ``class_to_idx`` maps every name to its index.

    Args:
        root: the folder holding the archives (or their prepared folders and ``meta.bin``).
        split: ``"train"`` or ``"val"``.
        kwargs: ImageFolder's (``transform``, ``target_transform``, ``loader``).
    """

    def __init__(self, root, split="train", **kwargs):
        root = self.root = os.path.expanduser(root)
        self.split = verify_str_arg(split, "split", ("train", "val"))
        self.parse_archives()
        wnid_to_classes = load_meta_file(self.root)[0]
        super().__init__(self.split_folder, **kwargs)
        self.root = root
        self.wnids, self.wnid_to_idx = self.classes, self.class_to_idx
        self.classes = [wnid_to_classes[wnid] for wnid in self.wnids]
        self.class_to_idx = {name: idx for idx, names in enumerate(self.classes) for name in names}

    def parse_archives(self):
        if not check_integrity(os.path.join(self.root, META_FILE)):
            parse_devkit_archive(self.root)
        if not os.path.isdir(self.split_folder):
            (parse_train_archive if self.split == "train" else parse_val_archive)(self.root)

    @property
    def split_folder(self):
        return os.path.join(self.root, self.split)

    def extra_repr(self):
        return f"Split: {self.split}"


def load_meta_file(root, file=None):
    """``(wnid -> tuple of class names, list of the validation images' wnids)`` from ``root/meta.bin``."""
    path = os.path.join(root, file or META_FILE)
    if not check_integrity(path):
        raise RuntimeError(f"The meta file {path} is not present in the root directory or is corrupted. "
                           "This file is automatically created by the ImageNet dataset.")
    return engine.load(path, weights_only=True)


def _verify_archive(root, file, md5):
    if not check_integrity(os.path.join(root, file), md5):
        raise RuntimeError(f"The archive {file} is not present in the root directory or is corrupted. "
                           f"You need to download it externally and place it in {root}.")


def _scalar(value):
    return int(value.ravel()[0])


def parse_devkit_archive(root, file=None):
    """Write ``root/meta.bin`` from the devkit archive: the leaf synsets' names and the validation labels."""
    file = file or ARCHIVE_META["devkit"][0]
    _verify_archive(root, file, ARCHIVE_META["devkit"][1])
    with tempfile.TemporaryDirectory() as tmp:
        extract_archive(os.path.join(root, file), tmp)
        data = os.path.join(tmp, "ILSVRC2012_devkit_t12", "data")
        synsets = [s for s in read_mat(os.path.join(data, "meta.mat"))["synsets"].ravel()
                   if _scalar(s["num_children"]) == 0]  # the 1000 classes are the leaves
        idx_to_wnid = {_scalar(s["ILSVRC2012_ID"]): s["WNID"] for s in synsets}
        wnid_to_classes = {s["WNID"]: tuple(s["words"].split(", ")) for s in synsets}
        with open(os.path.join(data, "ILSVRC2012_validation_ground_truth.txt")) as f:
            val_wnids = [idx_to_wnid[int(line)] for line in f]
    engine.save((wnid_to_classes, val_wnids), os.path.join(root, META_FILE))


def parse_train_archive(root, file=None, folder="train"):
    """Unpack the training tar into ``root/<folder>`` and each class's inner tar into its ``<wnid>`` folder."""
    file = file or ARCHIVE_META["train"][0]
    _verify_archive(root, file, ARCHIVE_META["train"][1])
    train_root = os.path.join(root, folder)
    extract_archive(os.path.join(root, file), train_root)
    for name in os.listdir(train_root):
        archive = os.path.join(train_root, name)
        extract_archive(archive, os.path.splitext(archive)[0], remove_finished=True)


def parse_val_archive(root, file=None, wnids=None, folder="val"):
    """Unpack the validation tar into ``root/<folder>`` and move the images, in name order, into their
    ``<wnid>`` folders."""
    file = file or ARCHIVE_META["val"][0]
    wnids = wnids if wnids is not None else load_meta_file(root)[1]
    _verify_archive(root, file, ARCHIVE_META["val"][1])
    val_root = os.path.join(root, folder)
    extract_archive(os.path.join(root, file), val_root)
    images = sorted(os.path.join(val_root, name) for name in os.listdir(val_root))
    for wnid in set(wnids):
        os.mkdir(os.path.join(val_root, wnid))
    for wnid, image in zip(wnids, images):
        shutil.move(image, os.path.join(val_root, wnid, os.path.basename(image)))
