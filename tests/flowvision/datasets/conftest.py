"""Shared fixtures of the dataset tests: random images written in real formats, and a deep comparison of our
items with torchvision's (PIL images as arrays, numpy arrays, tensors and tv_tensors by type, metadata and values)."""
import json

import numpy as np
import pytest
import torch
from PIL import Image
from pycocotools import mask as coco_mask

import engine


def _tensor_meta(t):
    """(type name, metadata) of a tv_tensor or plain tensor, from ours or torchvision's."""
    meta = {}
    for name in ("format", "canvas_size", "clamping_mode"):
        if hasattr(t, name):
            value = getattr(t, name)
            meta[name] = value.name if hasattr(value, "name") else (tuple(value) if name == "canvas_size" else value)
    return type(t).__name__, meta


def assert_same(ours, ref, where="item"):
    """``ours`` equals torchvision's ``ref`` in structure, types and values."""
    if isinstance(ref, Image.Image):
        assert isinstance(ours, Image.Image), f"{where}: {type(ours)} is not a PIL image"
        assert (ours.mode, ours.size) == (ref.mode, ref.size), f"{where}: {ours} vs {ref}"
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref), err_msg=where)
        if ref.mode == "P":
            assert ours.getpalette() == ref.getpalette(), f"{where}: palettes differ"
    elif isinstance(ref, torch.Tensor):
        assert isinstance(ours, engine.Tensor), f"{where}: {type(ours)} is not a tensor"
        assert _tensor_meta(ours) == _tensor_meta(ref), f"{where}: {_tensor_meta(ours)} vs {_tensor_meta(ref)}"
        assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], f"{where}: {ours.dtype} vs {ref.dtype}"
        np.testing.assert_array_equal(ours.numpy(), ref.numpy(), err_msg=where)
    elif isinstance(ref, np.ndarray):  # flow and disparity maps, as torchvision returns them
        assert isinstance(ours, np.ndarray), f"{where}: {type(ours)} is not an array"
        assert (ours.dtype, ours.shape) == (ref.dtype, ref.shape), f"{where}: {ours.dtype}{ours.shape} vs " \
                                                                   f"{ref.dtype}{ref.shape}"
        np.testing.assert_array_equal(ours, ref, err_msg=where)
    elif isinstance(ref, dict):
        assert isinstance(ours, dict) and sorted(ours) == sorted(ref), f"{where}: keys {sorted(ours)} vs {sorted(ref)}"
        for key in ref:
            assert_same(ours[key], ref[key], f"{where}[{key!r}]")
    elif isinstance(ref, (list, tuple)):
        assert type(ours) is type(ref) and len(ours) == len(ref), f"{where}: {ours!r} vs {ref!r}"
        for i, (a, b) in enumerate(zip(ours, ref)):
            assert_same(a, b, f"{where}[{i}]")
    else:
        assert type(ours) is type(ref) and ours == ref, f"{where}: {ours!r} vs {ref!r}"


@pytest.fixture
def same():
    """The deep comparison, as a fixture (conftest modules are not importable by name)."""
    return assert_same


@pytest.fixture
def compare_datasets():
    """Asserts equal len and equal items of our dataset and torchvision's."""
    def check(ours, ref):
        assert len(ours) == len(ref)
        for i in range(len(ref)):
            assert_same(ours[i], ref[i], f"item {i}")
    return check


@pytest.fixture
def write_image():
    """Writes a seeded random (height, width) image of ``mode`` to ``path`` (format from its suffix)."""
    def write(path, height, width, seed, mode="RGB"):
        rng = np.random.default_rng(seed)
        shape = (height, width, 3) if mode == "RGB" else (height, width)
        image = Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8)).convert(mode)
        path.parent.mkdir(parents=True, exist_ok=True)
        image.save(path)
        return image
    return write


# ---------------------------------------------------------------- COCO and VOC trees

def _random_polygon(rng, height, width, points):
    return rng.uniform(-2, max(height, width) + 2, 2 * points).round(1).tolist()


def _compressed_rle(rng, height, width):
    rle = coco_mask.encode(np.asfortranarray(rng.integers(0, 2, (height, width), dtype=np.uint8)))
    return {"counts": rle["counts"].decode("ascii"), "size": rle["size"]}


@pytest.fixture
def coco_root(tmp_path, write_image):
    """Images with ids out of order (one without annotations, one missing from the annotations' images), polygon,
    multi-polygon, compressed and uncompressed RLE segmentations, crowd flags and captions."""
    rng = np.random.default_rng(0)
    sizes = {7: (13, 17), 2: (9, 11), 5: (16, 8)}
    images = []
    for image_id, (h, w) in sizes.items():
        write_image(tmp_path / "images" / f"{image_id:012d}.jpg", h, w, image_id)
        images.append({"id": image_id, "file_name": f"images/{image_id:012d}.jpg", "height": h, "width": w})
    anns, captions = [], []
    for ann_id, image_id in enumerate([7, 2, 7, 2, 7, 9], start=100):
        h, w = sizes.get(image_id, (4, 4))
        kind = ann_id % 4
        segmentations = [[_random_polygon(rng, h, w, 5)],
                         [_random_polygon(rng, h, w, 4), _random_polygon(rng, h, w, 6)],
                         _compressed_rle(rng, h, w),
                         {"counts": [h * w - 3, 3], "size": [h, w]}]
        seg = segmentations[kind]
        anns.append({"id": ann_id, "image_id": image_id, "category_id": int(rng.integers(1, 5)),
                     "bbox": rng.uniform(0, 8, 4).round(2).tolist(), "area": float(rng.uniform(1, 50)),
                     "iscrowd": int(kind >= 2), "segmentation": seg})
        captions.append({"id": ann_id, "image_id": image_id, "caption": f"caption {ann_id} of {image_id}"})
    categories = [{"id": i, "name": f"cat{i}", "supercategory": "animal" if i % 2 else "thing"} for i in range(1, 5)]
    (tmp_path / "instances.json").write_text(json.dumps({"images": images, "annotations": anns,
                                                         "categories": categories}))
    (tmp_path / "captions.json").write_text(json.dumps({"images": images, "annotations": captions}))
    return tmp_path


_NAMES = ["dog", "person", "car", "tvmonitor"]


def _annotation_xml(name, height, width, objects):
    parts = [f"<annotation>\n  <folder>VOC2012</folder>\n  <filename>{name}.jpg</filename>",
             f"  <size><width>{width}</width><height>{height}</height><depth>3</depth></size>",
             "  <segmented>1</segmented>\n  <note>  </note>\n  <empty/>"]
    for label, (x0, y0, x1, y1) in objects:
        parts.append(f"  <object><name>{label}</name><pose>Left</pose><truncated>0</truncated>"
                     f"<part><name>head</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax>"
                     f"</bndbox></part><part><name>hand</name></part>"
                     f"<bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin><xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>")
    return "\n".join(parts) + "\n</annotation>\n"


def _make_voc_tree(root, write_image, base=("VOCdevkit", "VOC2012"), count=3):
    """``count`` images with 1..3 objects each, in the train split of detection and segmentation."""
    rng = np.random.default_rng(3)
    voc_root = root.joinpath(*base)
    names = [f"2012_{i:06d}" for i in range(count)]
    for i, name in enumerate(names):
        h, w = int(rng.integers(8, 20)), int(rng.integers(8, 20))
        write_image(voc_root / "JPEGImages" / f"{name}.jpg", h, w, i)
        objects = [(_NAMES[int(rng.integers(len(_NAMES)))], (int(rng.integers(0, 4)), int(rng.integers(0, 4)),
                                                              int(rng.integers(4, w)), int(rng.integers(4, h))))
                   for _ in range(i % 3 + 1)]
        (voc_root / "Annotations").mkdir(parents=True, exist_ok=True)
        (voc_root / "Annotations" / f"{name}.xml").write_text(_annotation_xml(name, h, w, objects))
        mask = Image.fromarray(rng.choice([0, 1, 12, 255], (h, w)).astype(np.uint8), mode="P")
        mask.putpalette(rng.integers(0, 256, 768, dtype=np.uint8).tolist())
        (voc_root / "SegmentationClass").mkdir(parents=True, exist_ok=True)
        mask.save(voc_root / "SegmentationClass" / f"{name}.png")
    for task in ("Main", "Segmentation"):
        (voc_root / "ImageSets" / task).mkdir(parents=True, exist_ok=True)
        (voc_root / "ImageSets" / task / "train.txt").write_text("".join(n + "\n" for n in names))
        (voc_root / "ImageSets" / task / "val.txt").write_text(names[0] + "\n")
    return names


@pytest.fixture
def voc_root(tmp_path, write_image):
    _make_voc_tree(tmp_path, write_image)
    return tmp_path


@pytest.fixture
def make_voc_tree(write_image):
    """The VOC tree builder, for trees elsewhere than ``voc_root`` (``make_voc_tree(root, base=..., count=...)``)."""
    return lambda root, **kwargs: _make_voc_tree(root, write_image, **kwargs)


@pytest.fixture
def random_polygon():
    return _random_polygon


@pytest.fixture
def compressed_rle():
    return _compressed_rle
