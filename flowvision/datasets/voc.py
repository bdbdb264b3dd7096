"""Pascal VOC 2007-2012 detection and segmentation, from the VOCdevkit tree of the official tar files.

Detection targets are the annotation xml as nested dicts (parsed with the standard library): a tag with children
maps to a dict of its children, a repeated child to the list of its values, a leaf to its stripped text, and the
root's ``object`` entry is always a list, so one object and many read alike.
"""
import os
import xml.etree.ElementTree as ElementTree
from collections import defaultdict

from PIL import Image

from .utils import download_and_extract_archive
from .vision import PairedVisionDataset, verify_str_arg

__all__ = ["VOCDetection", "VOCSegmentation", "parse_voc_xml"]

_RELEASES = {
    "2012": ("https://thor.robots.ox.ac.uk/pascal/VOC/voc2012/VOCtrainval_11-May-2012.tar",
             "VOCtrainval_11-May-2012.tar", "6cd6e144f989b92b3379bac3b3de84fd", "VOCdevkit/VOC2012"),
    "2011": ("https://thor.robots.ox.ac.uk/pascal/VOC/voc2011/VOCtrainval_25-May-2011.tar",
             "VOCtrainval_25-May-2011.tar", "6c3384ef61512963050cb5d687e5bf1e", "TrainVal/VOCdevkit/VOC2011"),
    "2010": ("https://thor.robots.ox.ac.uk/pascal/VOC/voc2010/VOCtrainval_03-May-2010.tar",
             "VOCtrainval_03-May-2010.tar", "da459979d0c395079b5c75ee67908abb", "VOCdevkit/VOC2010"),
    "2009": ("https://thor.robots.ox.ac.uk/pascal/VOC/voc2009/VOCtrainval_11-May-2009.tar",
             "VOCtrainval_11-May-2009.tar", "a3e00b113cfcfebf17e343f59da3caa1", "VOCdevkit/VOC2009"),
    # torchvision saves the 2008 archive under the 2012 name; kept so that both find the same file
    "2008": ("https://thor.robots.ox.ac.uk/pascal/VOC/voc2008/VOCtrainval_14-Jul-2008.tar",
             "VOCtrainval_11-May-2012.tar", "2629fa636546599198acfcfbfcf1904a", "VOCdevkit/VOC2008"),
    "2007": ("https://thor.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtrainval_06-Nov-2007.tar",
             "VOCtrainval_06-Nov-2007.tar", "c52e279531787c972589f7e41ab4ae64", "VOCdevkit/VOC2007"),
    "2007-test": ("https://thor.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtest_06-Nov-2007.tar",
                  "VOCtest_06-Nov-2007.tar", "b6e924de25625d8de591ea690078ad9f", "VOCdevkit/VOC2007"),
}


def parse_voc_xml(node):
    """An xml element as VOC's nested dict (see the module docstring)."""
    children = list(node)
    if not children:
        return {node.tag: node.text.strip()} if node.text else {}
    grouped = defaultdict(list)
    for child in children:
        for tag, value in parse_voc_xml(child).items():
            grouped[tag].append(value)
    if node.tag == "annotation":
        grouped["object"] = [grouped["object"]]
    return {node.tag: {tag: values[0] if len(values) == 1 else values for tag, values in grouped.items()}}


class _VOCBase(PairedVisionDataset):
    """The split list ``ImageSets/<_splits_dir>/<image_set>.txt`` of one year, with its images and targets."""

    _splits_dir = _target_dir = _target_ext = None

    def __init__(self, root, year="2012", image_set="train", download=False, transform=None, target_transform=None,
                 transforms=None):
        super().__init__(root, transforms, transform, target_transform)
        self.year = verify_str_arg(year, "year", [str(y) for y in range(2007, 2013)])
        sets = ["train", "trainval", "val"] + (["test"] if year == "2007" else [])
        self.image_set = verify_str_arg(image_set, "image_set", sets)
        key = "2007-test" if year == "2007" and image_set == "test" else year
        self.url, self.filename, self.md5, base_dir = _RELEASES[key]
        voc_root = os.path.join(self.root, *base_dir.split("/"))
        split_file = os.path.join(voc_root, "ImageSets", self._splits_dir, image_set + ".txt")
        if download and not os.path.isfile(split_file):  # an extracted split needs no archive (nor network)
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.md5)
        if not os.path.isdir(voc_root):
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        with open(split_file) as f:
            names = [line.strip() for line in f]
        self.images = [os.path.join(voc_root, "JPEGImages", name + ".jpg") for name in names]
        self.targets = [os.path.join(voc_root, self._target_dir, name + self._target_ext) for name in names]

    def __len__(self):
        return len(self.images)


class VOCSegmentation(_VOCBase):
    """VOC segmentation: items are (RGB PIL image, the class-index PNG as a PIL 'P' image)."""

    _splits_dir, _target_dir, _target_ext = "Segmentation", "SegmentationClass", ".png"

    @property
    def masks(self):
        return self.targets

    def __getitem__(self, index):
        return self._apply_joint(Image.open(self.images[index]).convert("RGB"), Image.open(self.masks[index]))


class VOCDetection(_VOCBase):
    """VOC detection: items are (RGB PIL image, the annotation xml as a nested dict)."""

    _splits_dir, _target_dir, _target_ext = "Main", "Annotations", ".xml"

    @property
    def annotations(self):
        return self.targets

    parse_voc_xml = staticmethod(parse_voc_xml)

    def __getitem__(self, index):
        target = parse_voc_xml(ElementTree.parse(self.annotations[index]).getroot())
        return self._apply_joint(Image.open(self.images[index]).convert("RGB"), target)
