"""CocoDetection / CocoCaptions and the COCO mask decoding, against torchvision's classes and pycocotools on the
same annotation files."""
import numpy as np
import pytest
import torchvision.datasets as tvd
from pycocotools import mask as coco_mask

import flowvision.datasets as fd
from flowvision.datasets import coco_masks


def test_coco_detection_matches_torchvision(coco_root, compare_datasets):
    ours = fd.CocoDetection(str(coco_root), str(coco_root / "instances.json"))
    ref = tvd.CocoDetection(str(coco_root), str(coco_root / "instances.json"))
    assert ours.ids == ref.ids == [2, 5, 7]
    compare_datasets(ours, ref)
    assert ours[1][1] == []  # image 5 has no annotation
    for query in ({}, {"imgIds": [7]}, {"catIds": [1, 2]}, {"imgIds": 2, "iscrowd": 0}, {"areaRng": [10, 40]}):
        assert ours.coco.getAnnIds(**query) == ref.coco.getAnnIds(**query), query
    for query in ({}, {"catIds": [1]}, {"imgIds": [2, 7], "catIds": [2]}):
        assert sorted(ours.coco.getImgIds(**query)) == sorted(ref.coco.getImgIds(**query)), query
    assert ours.coco.getImgIds() == ref.coco.getImgIds()
    for query in ({}, {"catNms": ["cat2"]}, {"supNms": "animal"}, {"catIds": [3, 4]}):
        assert ours.coco.getCatIds(**query) == ref.coco.getCatIds(**query), query
    assert ours.coco.loadCats([2, 3]) == ref.coco.loadCats([2, 3])


def test_coco_captions_and_transforms_match_torchvision(coco_root, compare_datasets):
    ann = str(coco_root / "captions.json")
    compare_datasets(fd.CocoCaptions(str(coco_root), ann), tvd.CocoCaptions(str(coco_root), ann))
    ours = fd.CocoCaptions(str(coco_root), ann, transform=lambda im: im.size, target_transform=len)
    ref = tvd.CocoCaptions(str(coco_root), ann, transform=lambda im: im.size, target_transform=len)
    assert [ours[i] for i in range(3)] == [ref[i] for i in range(3)] == [((11, 9), 2), ((8, 16), 0), ((17, 13), 3)]
    joint = fd.CocoCaptions(str(coco_root), ann, transforms=lambda im, t: (im.mode, t[:1]))
    assert joint[0] == ("RGB", ["caption 101 of 2"])


def test_coco_errors(coco_root):
    ds = fd.CocoDetection(str(coco_root), str(coco_root / "instances.json"))
    with pytest.raises(ValueError, match="Index must be of type integer, got <class 'numpy.int64'>"):
        ds[np.int64(0)]
    with pytest.raises(IndexError):
        ds[3]
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        fd.CocoDetection(str(coco_root), str(coco_root / "instances.json"), transform=len, transforms=len)
    with pytest.raises(FileNotFoundError):
        fd.CocoDetection(str(coco_root), str(coco_root / "missing.json"))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pycocotools' decode, under numpy 2
def test_segmentation_masks_match_pycocotools(random_polygon, compressed_rle):
    rng = np.random.default_rng(1)
    for trial in range(300):
        h, w = (int(v) for v in rng.integers(1, 30, 2))
        polygons = [random_polygon(rng, h, w, int(rng.integers(3, 8))) for _ in range(int(rng.integers(1, 3)))]
        if trial % 5 == 0:  # repeated vertices make zero-length edges
            polygons[0] = polygons[0][:4] + polygons[0][:4] + polygons[0][4:]
        expected = coco_mask.decode(coco_mask.merge(coco_mask.frPyObjects(polygons, h, w)))
        np.testing.assert_array_equal(coco_masks.segmentation_to_mask(polygons, h, w), expected)
        rle = compressed_rle(rng, h, w)
        expected = coco_mask.decode({"counts": rle["counts"].encode(), "size": rle["size"]})
        np.testing.assert_array_equal(coco_masks.segmentation_to_mask(rle, 1, 1), expected)


def test_segmentation_mask_errors():
    with pytest.raises(ValueError, match="run lengths add up to 5, not height.width = 2.3"):
        coco_masks.rle_to_mask([2, 3], 2, 3)
    with pytest.raises(ValueError, match="expected to be a dict or a list, got <class 'str'>"):
        coco_masks.segmentation_to_mask("0", 2, 2)
