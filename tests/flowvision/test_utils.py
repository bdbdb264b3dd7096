"""flowvision.utils against torchvision.utils: grids, saved images, drawn boxes/masks/keypoints, categories."""
import io
import warnings

import numpy as np
import pytest
import torch
import torchvision.utils as tvu
from PIL import Image
from torchvision.models import _meta

import engine
import flowvision.utils as fu


def _pair(arr):
    return engine.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


def _image(seed=0, shape=(3, 40, 52)):
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


@pytest.mark.parametrize("kwargs", [
    {}, {"nrow": 3, "padding": 1, "pad_value": 0.5}, {"normalize": True},
    {"normalize": True, "scale_each": True, "nrow": 2}, {"normalize": True, "value_range": (-0.5, 0.5)},
])
def test_make_grid_matches_torchvision(kwargs):
    arr = np.random.default_rng(1).standard_normal((7, 3, 5, 6)).astype(np.float32)
    ours, ref = _pair(arr)
    np.testing.assert_array_equal(fu.make_grid(ours, **kwargs).numpy(), tvu.make_grid(ref, **kwargs).numpy())


def test_make_grid_grey_list_and_single():
    arr = np.random.default_rng(2).random((3, 1, 4, 5)).astype(np.float32)
    ours = fu.make_grid([engine.from_numpy(a) for a in arr], nrow=2)
    ref = tvu.make_grid([torch.from_numpy(a) for a in arr], nrow=2)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    one, one_ref = _pair(arr[:1])
    np.testing.assert_array_equal(fu.make_grid(one).numpy(), tvu.make_grid(one_ref).numpy())
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        fu.make_grid(arr)


def test_save_image_matches_torchvision():
    arr = np.random.default_rng(3).random((4, 3, 6, 7)).astype(np.float32)
    ours, ref = _pair(arr)
    buf_ours, buf_ref = io.BytesIO(), io.BytesIO()
    fu.save_image(ours, buf_ours, format="png", nrow=2)
    tvu.save_image(ref, buf_ref, format="png", nrow=2)
    np.testing.assert_array_equal(np.asarray(Image.open(buf_ours)), np.asarray(Image.open(buf_ref)))


BOXES = np.array([[2, 3, 30, 25], [10, 12, 45, 38], [0, 0, 51, 39], [20, 5, 21, 6]], dtype=np.float32)


@pytest.mark.parametrize("kwargs", [
    {}, {"width": 3, "colors": "red"}, {"fill": True, "colors": ["blue", (0, 200, 10), "#FF00FF", "yellow"]},
])
def test_draw_bounding_boxes_pixel_equal(kwargs):
    img, img_ref = _pair(_image())
    boxes, boxes_ref = _pair(BOXES)
    ours = fu.draw_bounding_boxes(img, boxes, **kwargs)
    ref = tvu.draw_bounding_boxes(img_ref, boxes_ref, **kwargs)
    assert ours.dtype == engine.uint8
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


def test_draw_bounding_boxes_labels_grey_and_float():
    labels = ["cat", "dog", "a long label", "x"]
    img, img_ref = _pair(_image(1, (1, 40, 52)))
    boxes, boxes_ref = _pair(BOXES)
    ours = fu.draw_bounding_boxes(img, boxes, labels=labels, width=2)
    ref = tvu.draw_bounding_boxes(img_ref, boxes_ref, labels=labels, width=2)
    assert np.abs(ours.numpy().astype(int) - ref.numpy().astype(int)).max() <= 1
    fimg, fimg_ref = _pair(_image(2).astype(np.float32) / 255)
    ours = fu.draw_bounding_boxes(fimg, boxes, labels=labels, fill_labels=True)
    ref = tvu.draw_bounding_boxes(fimg_ref, boxes_ref, labels=labels, fill_labels=True)
    assert ours.dtype == engine.float32
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), atol=1 / 255 + 1e-6)


def test_draw_bounding_boxes_font_size_and_errors():
    img, _ = _pair(_image())
    boxes, _ = _pair(BOXES)
    small = fu.draw_bounding_boxes(img, boxes, labels=["a"] * 4, colors="white").numpy()
    with pytest.warns(UserWarning, match="'font_size' will be ignored"):  # torchvision 0.29 ignores it without font
        big = fu.draw_bounding_boxes(img, boxes, labels=["a"] * 4, colors="white", font_size=20).numpy()
    assert (small == big).all()
    with pytest.raises(ValueError, match="xmin, ymin, xmax, ymax"):
        fu.draw_bounding_boxes(img, engine.tensor([[5.0, 0, 1, 1]]))
    with pytest.raises(ValueError, match=r"Number of boxes \(4\) and labels \(1\) mismatch"):
        fu.draw_bounding_boxes(img, boxes, labels=["a"])
    with pytest.raises(ValueError, match="Pass individual images"):
        fu.draw_bounding_boxes(engine.zeros(1, 3, 4, 4, dtype=engine.uint8), boxes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fu.draw_bounding_boxes(img, engine.zeros(0, 4)) is img
    assert "No box was drawn" in str(caught[0].message)


@pytest.mark.parametrize("float_image", [False, True])
def test_draw_segmentation_masks(float_image):
    arr = _image(4)
    if float_image:
        arr = arr.astype(np.float32) / 255
    img, img_ref = _pair(arr)
    rng = np.random.default_rng(5)
    masks, masks_ref = _pair(rng.random((3, 40, 52)) > 0.6)
    for kwargs in ({}, {"alpha": 0.35, "colors": ["red", (10, 20, 30), "#00FF00"]}, {"colors": "blue"}):
        ours = fu.draw_segmentation_masks(img, masks, **kwargs)
        ref = tvu.draw_segmentation_masks(img_ref, masks_ref, **kwargs)
        assert ours.dtype == img.dtype
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), atol=1e-6 if float_image else 1)
    one = fu.draw_segmentation_masks(img, masks[0], alpha=0.5)
    np.testing.assert_allclose(one.numpy(), tvu.draw_segmentation_masks(img_ref, masks_ref[0], alpha=0.5).numpy(),
                               atol=1e-6 if float_image else 1)
    with pytest.raises(ValueError, match="must be of dtype bool"):
        fu.draw_segmentation_masks(img, engine.zeros(40, 52))
    with pytest.raises(ValueError, match="same height and width"):
        fu.draw_segmentation_masks(img, engine.zeros(2, 4, 4, dtype=engine.bool))


def test_draw_keypoints():
    img, img_ref = _pair(_image(6))
    kpts, kpts_ref = _pair(np.random.default_rng(7).uniform(0, 40, (2, 5, 2)).astype(np.float32))
    vis = np.array([[1, 1, 0, 1, 1], [1, 1, 1, 1, 0]], dtype=bool)
    vis_ours, vis_ref = _pair(vis)
    conn = [(0, 1), (1, 2), (3, 4)]
    for kwargs in ({}, {"connectivity": conn, "colors": "red", "radius": 3, "width": 2}):
        ours = fu.draw_keypoints(img, kpts, **kwargs)
        ref = tvu.draw_keypoints(img_ref, kpts_ref, **kwargs)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    ours = fu.draw_keypoints(img, kpts, connectivity=conn, visibility=vis_ours)
    ref = tvu.draw_keypoints(img_ref, kpts_ref, connectivity=conn, visibility=vis_ref)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    with pytest.raises(ValueError, match=r"keypoints must be of shape \(num_instances, K, 2\)"):
        fu.draw_keypoints(img, kpts[0])


def test_categories_match_torchvision():
    assert fu.IMAGENET_CATEGORIES == _meta._IMAGENET_CATEGORIES and len(fu.IMAGENET_CATEGORIES) == 1000
    assert fu.COCO_CATEGORIES == _meta._COCO_CATEGORIES and len(fu.COCO_CATEGORIES) == 91
    assert fu.VOC_CATEGORIES == _meta._VOC_CATEGORIES and len(fu.VOC_CATEGORIES) == 21
