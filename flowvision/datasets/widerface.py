"""WIDER FACE: ``widerface/WIDER_<split>/images/<event>/<file>.jpg`` with the faces of the train and val images in
``widerface/wider_face_split/wider_face_<split>_bbx_gt.txt`` (a file name, a face count, then one line per face:
x y w h blur expression illumination invalid occlusion pose)."""
import os

import numpy as np
from PIL import Image

import engine
from .utils import VisionDataset, check_integrity, download_and_extract_archive, extract_archive
from .vision import verify_str_arg

__all__ = ["WIDERFace"]

_FIELDS = ("blur", "expression", "illumination", "occlusion", "pose", "invalid")  # columns 4-9, in file order


class WIDERFace(VisionDataset):
    """Items are (PIL image, dict of int64 tensors: ``bbox`` [N, 4] XYWH and the per-face attributes), or
    (PIL image, None) for the test split.

    The image zips live on Google Drive, which flowvision does not download from: put ``WIDER_<split>.zip``
    (or its extracted folder) into ``root/widerface`` by hand; ``download=True`` fetches the annotations.
    """

    BASE_FOLDER = "widerface"
    FILE_LIST = [("15hGDLhsx8bLgLcIRD5DhYt5iBxnjNF1M", "3fedf70df600953d25982bcd13d91ba2", "WIDER_train.zip"),
                 ("1GUCogbp16PMGa39thoMMeWxp7Rp5oM8Q", "dfa7d7e790efa35df3788964cf0bbaea", "WIDER_val.zip"),
                 ("1HIfDbVEWKmsYKJZm4lchTBDLW5N7dY5T", "e5d8f4248ed24c334bbd12f49c29dd40", "WIDER_test.zip")]
    ANNOTATIONS_FILE = ("http://shuoyang1213.me/WIDERFACE/support/bbx_annotation/wider_face_split.zip",
                        "0e3767bcf0e326556d407bf5bff5d27c", "wider_face_split.zip")

    def __init__(self, root, split="train", transform=None, target_transform=None, download=False):
        super().__init__(os.path.join(root, self.BASE_FOLDER), transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", ("train", "val", "test"))
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download and prepare it")
        if split == "test":
            self.parse_test_annotations_file()
        else:
            self.parse_train_val_annotations_file()

    def _image_path(self, name):
        return os.path.abspath(os.path.join(self.root, f"WIDER_{self.split}", "images", name))

    def parse_train_val_annotations_file(self):
        """Set ``img_info``: each image's path and its faces' boxes and attributes, from the split's list."""
        path = os.path.join(self.root, "wider_face_split", f"wider_face_{self.split}_bbx_gt.txt")
        with open(path) as f:
            lines = [line.rstrip() for line in f]
        info, pos = [], 0
        while pos < len(lines):
            name, count = lines[pos], lines[pos + 1] if pos + 1 < len(lines) else ""
            if not count.isdigit():
                raise RuntimeError(f"Error parsing annotation file {path}")
            # an image without faces still has one line of zeros
            rows = lines[pos + 2:pos + 2 + max(int(count), 1)]
            values = engine.from_numpy(np.array([[int(v) for v in row.split(" ")] for row in rows], dtype=np.int64))
            target = {"bbox": values[:, 0:4].clone()}
            target.update({field: values[:, 4 + i].clone() for i, field in enumerate(_FIELDS)})
            info.append({"img_path": self._image_path(name), "annotations": target})
            pos += 2 + len(rows)
        self.img_info = info

    def parse_test_annotations_file(self):
        """Set ``img_info``: the path of each test image (the test split has no annotations)."""
        with open(os.path.join(self.root, "wider_face_split", "wider_face_test_filelist.txt")) as f:
            self.img_info = [{"img_path": self._image_path(line.rstrip())} for line in f]

    def __getitem__(self, index):
        target = None if self.split == "test" else self.img_info[index]["annotations"]
        return self._apply(Image.open(self.img_info[index]["img_path"]), target)

    def __len__(self):
        return len(self.img_info)

    def extra_repr(self):
        return f"Split: {self.split}"

    def _check_integrity(self):
        names = [name for _, _, name in self.FILE_LIST] + [self.ANNOTATIONS_FILE[2]]
        return all(os.path.exists(os.path.join(self.root, os.path.splitext(name)[0])) for name in names)

    def download(self):
        """Unpack the image zips put in place by hand (md5-checked), and fetch the annotations."""
        if self._check_integrity():
            return
        for file_id, md5, name in self.FILE_LIST:
            if os.path.exists(os.path.join(self.root, os.path.splitext(name)[0])):
                continue
            archive = os.path.join(self.root, name)
            if not check_integrity(archive, md5):
                raise RuntimeError(f"{name} is on Google Drive (file id {file_id}), which flowvision does not "
                                   f"download from: fetch it by hand into {self.root} (md5 {md5})")
            extract_archive(archive)
        url, md5, name = self.ANNOTATIONS_FILE
        download_and_extract_archive(url, self.root, filename=name, md5=md5)
