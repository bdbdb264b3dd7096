"""SBD, the Semantic Boundaries Dataset: VOC-2011 images with per-class masks and boundaries in MATLAB files
(``cls/<name>.mat`` holding the struct ``GTcls``), read with flowvision's own .mat reader (no scipy)."""
import os
import shutil

import numpy as np
from PIL import Image

from .matlab import read_mat
from .utils import download_and_extract_archive, download_url
from .vision import PairedVisionDataset, verify_str_arg

__all__ = ["SBDataset"]


class SBDataset(PairedVisionDataset):
    """Items are (RGB PIL image, target): ``mode="segmentation"`` gives the class-index mask as a PIL 'L' image,
    ``mode="boundaries"`` a [20, H, W] array of the per-class boundary maps.

    Args:
        root: the folder holding ``img``, ``cls`` and the split lists.
        image_set: ``"train"``, ``"val"`` or ``"train_noval"`` (train without VOC-2012 val images).
        transforms: a joint ``(image, target)`` transform.
    """

    url = "https://www2.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/semantic_contours/benchmark.tgz"
    md5 = "82b4d87ceb2ed10f6038a1cba92111cb"
    filename = "benchmark.tgz"
    voc_train_url = "https://www.cs.cornell.edu/~bharathh/train_noval.txt"
    voc_split_filename = "train_noval.txt"
    voc_split_md5 = "79bff800c5f0b1ec6b21080a3c066722"
    _EXTRACTED = ("cls", "img", "inst", "train.txt", "val.txt")  # what the archive's benchmark_RELEASE/dataset holds

    def __init__(self, root, image_set="train", mode="boundaries", download=False, transforms=None):
        super().__init__(root, transforms)
        self.image_set = verify_str_arg(image_set, "image_set", ("train", "val", "train_noval"))
        self.mode = verify_str_arg(mode, "mode", ("segmentation", "boundaries"))
        self.num_classes = 20
        if download:
            self.download()
        if not os.path.isdir(self.root):
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        with open(os.path.join(self.root, image_set + ".txt")) as f:
            names = [line.strip() for line in f]
        self.images = [os.path.join(self.root, "img", name + ".jpg") for name in names]
        self.masks = [os.path.join(self.root, "cls", name + ".mat") for name in names]

    def download(self):
        """Fetch and unpack the benchmark archive (md5-checked) unless the files read are already in ``root``, and
        the train_noval list when that split is asked for."""
        if not all(os.path.exists(os.path.join(self.root, name)) for name in ("cls", "img", "train.txt", "val.txt")):
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.md5)
            extracted = os.path.join(self.root, "benchmark_RELEASE", "dataset")
            for name in self._EXTRACTED:
                shutil.move(os.path.join(extracted, name), self.root)
        if self.image_set == "train_noval":
            download_url(self.voc_train_url, self.root, self.voc_split_filename, self.voc_split_md5)

    def _target(self, path):
        record = read_mat(path)["GTcls"].flat[0]
        if self.mode == "segmentation":
            return Image.fromarray(record["Segmentation"])
        return np.stack([record["Boundaries"].flat[i] for i in range(self.num_classes)])

    def __getitem__(self, index):
        return self._apply_joint(Image.open(self.images[index]).convert("RGB"), self._target(self.masks[index]))

    def __len__(self):
        return len(self.images)

    def extra_repr(self):
        return f"Image set: {self.image_set}\nMode: {self.mode}"
