"""Cases a differential fuzz of flowvision.utils against torchvision.utils 0.29.1 found, kept as a seeded sample.

Each test compares pixels (exactly) or errors with torchvision on the same input and failed before its fix:
- ``make_grid`` and ``save_image`` compute in the input's dtype with torch's steps: a bfloat16 grid stays bfloat16,
  float16 normalizes and scales to 0..255 as torch rounds it, an integer image that cannot be normalized (or scaled
  in place for saving) raises torch's error instead of being rescaled in float64, and the grid stays on the input's
  device;
- ``make_grid`` refuses a list holding something other than tensors with torch's message;
- ``draw_bounding_boxes`` draws (N, 8) oriented boxes as torchvision does (first edge dashed, inside filled over the
  edges) instead of as plain polygons, ignores ``font_size`` without a ``font`` (with torchvision's warning), and
  says "Tensor expected" for a non-tensor image;
- float16 images are drawn on (boxes, keypoints, masks) with the uint8 conversion and blend rounded as torch's;
  float images take the default mask palette scaled in float32, as torchvision's int64 palette tensor divides;
- ``draw_keypoints`` reads the first two coordinates of (N, K, 3) keypoints (it raised) and prints shapes in its
  error as torch.Size does.
"""
import io
import warnings

import numpy as np
import pytest
import torch
import torchvision.utils as tvu
from PIL import Image

import engine
import flowvision.utils as fu


def _pair(array, dtype=None):
    """The same values as an engine tensor and a torch tensor, cast to ``dtype`` (a name) when given."""
    ours, theirs = engine.from_numpy(array.copy()), torch.from_numpy(array.copy())
    if dtype is not None:
        ours, theirs = ours.to(getattr(engine, dtype)), theirs.to(getattr(torch, dtype))
    return ours, theirs


def _assert_same(ours, theirs):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    if theirs.dtype == torch.bfloat16:  # numpy has no bfloat16: compare its values as float32
        ours, theirs = ours.float(), theirs.float()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _image(seed, shape, dtype):
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        return _pair(rng.integers(0, 256, shape, dtype=np.uint8))
    return _pair(rng.random(shape).astype(np.float32), dtype)


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return type(info.value).__name__, str(info.value).split("\n")[0]


@pytest.mark.parametrize("seed,dtype,kwargs", [
    (0, "float16", {"normalize": True}),
    (1, "float16", {"normalize": True, "scale_each": True, "nrow": 3, "padding": 1}),
    (2, "bfloat16", {"normalize": True, "value_range": (-0.7, 1.3)}),
    (3, "bfloat16", {"pad_value": 0.25, "nrow": 2}),
    (4, "float64", {"normalize": True, "pad_value": 1}),
])
def test_make_grid_keeps_dtype_and_rounds_as_torch(seed, dtype, kwargs):
    arr = (np.random.default_rng(seed).standard_normal((5, 1 + seed % 3, 4, 7)) * 2).astype(np.float32)
    ours, theirs = _pair(arr, dtype)
    _assert_same(fu.make_grid(ours, **kwargs), tvu.make_grid(theirs, **kwargs))
    _assert_same(fu.make_grid(list(ours), **kwargs), tvu.make_grid(list(theirs), **kwargs))


def test_make_grid_errors_are_torchs():
    ours, theirs = _pair(np.arange(24, dtype=np.uint8).reshape(2, 1, 3, 4))
    expected = _error(tvu.make_grid, theirs, normalize=True, value_range=(0.0, 10.0))
    assert _error(fu.make_grid, ours, normalize=True, value_range=(0.0, 10.0))[0] == expected[0] == "RuntimeError"
    assert _error(fu.make_grid, [ours[0], np.zeros((1, 3, 4))]) == ("TypeError", "tensor or list of tensors expected, "
                                                                     "got a list containing <class 'numpy.ndarray'>")


@pytest.mark.parametrize("dtype,ext", [("float16", "png"), ("float16", "bmp"), ("float32", "ppm")])
def test_save_image_pixels_and_format(dtype, ext, tmp_path):
    arr = (np.random.default_rng(5).random((3, 3, 6, 5)) * 1.4 - 0.2).astype(np.float32)
    ours, theirs = _pair(arr, dtype)
    fu.save_image(ours, tmp_path / f"ours.{ext}", nrow=2, normalize=True)
    tvu.save_image(theirs, tmp_path / f"theirs.{ext}", nrow=2, normalize=True)
    with Image.open(tmp_path / f"ours.{ext}") as a, Image.open(tmp_path / f"theirs.{ext}") as b:
        assert (a.format, a.mode) == (b.format, b.mode)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_save_image_of_integers_raises_torchs_error():
    ours, theirs = _pair(np.zeros((2, 3, 4, 4), np.uint8))
    expected = _error(tvu.save_image, theirs, io.BytesIO(), format="png")
    assert _error(fu.save_image, ours, io.BytesIO(), format="png") == expected


def _oriented_boxes(seed, n, h, w):
    return (np.random.default_rng(seed).random((n, 8)) * np.tile([w, h], 4)).astype(np.float32)


@pytest.mark.parametrize("seed,dtype,kwargs", [
    (0, "uint8", {}),
    (1, "uint8", {"fill": True, "width": 3, "colors": ["red", (0, 200, 10), "#123456"]}),
    (2, "float32", {"labels": ["a", "cat", ""], "width": 2}),
    (3, "float16", {"fill": True}),
])
def test_draw_oriented_boxes(seed, dtype, kwargs):
    img, img_t = _image(seed, (3, 23, 31), dtype)
    boxes, boxes_t = _pair(_oriented_boxes(seed, 3, 23, 31))
    _assert_same(fu.draw_bounding_boxes(img, boxes, **kwargs), tvu.draw_bounding_boxes(img_t, boxes_t, **kwargs))


@pytest.mark.parametrize("seed,dtype,channels", [(0, "float16", 3), (1, "float16", 1), (2, "float64", 3)])
def test_draw_bounding_boxes_on_floats(seed, dtype, channels):
    img, img_t = _image(seed, (channels, 17, 21), dtype)
    boxes, boxes_t = _pair(np.array([[1, 2, 15, 9], [4, 0, 20, 16]], np.float32))
    kwargs = {"labels": ["x", "yz"], "fill_labels": True, "width": 2}
    _assert_same(fu.draw_bounding_boxes(img, boxes, **kwargs), tvu.draw_bounding_boxes(img_t, boxes_t, **kwargs))


def test_draw_bounding_boxes_ignores_font_size_without_font():
    img, img_t = _image(0, (3, 30, 40), "uint8")
    boxes, boxes_t = _pair(np.array([[1, 2, 35, 25]], np.float32))
    with pytest.warns(UserWarning, match="'font_size' will be ignored"):
        ours = fu.draw_bounding_boxes(img, boxes, labels=["abc"], font_size=25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = tvu.draw_bounding_boxes(img_t, boxes_t, labels=["abc"], font_size=25)
    _assert_same(ours, theirs)
    assert _error(fu.draw_bounding_boxes, np.zeros((3, 4, 4)), boxes) == \
        _error(tvu.draw_bounding_boxes, np.zeros((3, 4, 4)), boxes_t)


@pytest.mark.parametrize("seed,dtype,kwargs", [
    (0, "float16", {}),
    (1, "float16", {"alpha": 0.3, "colors": ["blue", (255, 255, 255), "#FF00FF"]}),
    (2, "float64", {"alpha": 0.123}),
    (3, "float32", {"colors": None}),
])
def test_draw_segmentation_masks_blends_as_torch(seed, dtype, kwargs):
    img, img_t = _image(seed, (3, 7, 9), dtype)
    masks, masks_t = _pair(np.random.default_rng(seed).random((3, 7, 9)) < 0.4)
    _assert_same(fu.draw_segmentation_masks(img, masks, **kwargs),
                 tvu.draw_segmentation_masks(img_t, masks_t, **kwargs))


@pytest.mark.parametrize("seed,dtype,coords", [(0, "uint8", 3), (1, "float16", 2), (2, "float16", 3)])
def test_draw_keypoints(seed, dtype, coords):
    img, img_t = _image(seed, (3, 25, 27), dtype)
    points = (np.random.default_rng(seed).random((2, 4, coords)) * 24).astype(np.float32)
    kpts, kpts_t = _pair(points)
    kwargs = {"connectivity": [(0, 1), (2, 3)], "colors": "red", "radius": 2, "width": 2}
    _assert_same(fu.draw_keypoints(img, kpts, **kwargs), tvu.draw_keypoints(img_t, kpts_t, **kwargs))


def test_draw_keypoints_visibility_error_message():
    img, img_t = _image(0, (3, 8, 8), "uint8")
    kpts, kpts_t = _pair(np.ones((2, 3, 2), np.float32))
    vis, vis_t = _pair(np.ones((2, 2), bool))
    name, message = _error(fu.draw_keypoints, img, kpts, visibility=vis)
    assert (name, message.replace("engine.", "torch.")) == _error(tvu.draw_keypoints, img_t, kpts_t,
                                                                   visibility=vis_t)


def test_results_stay_on_the_device(cuda):
    arr = np.random.default_rng(0).random((3, 3, 5, 6)).astype(np.float32)
    batch = engine.from_numpy(arr).to("cuda")
    grid = fu.make_grid(batch, nrow=2, normalize=True)
    assert grid.device.type == "cuda"
    np.testing.assert_array_equal(grid.cpu().numpy(), tvu.make_grid(torch.from_numpy(arr), nrow=2,
                                                                     normalize=True).numpy())
    masks = np.random.default_rng(1).random((2, 5, 6)) < 0.5
    drawn = fu.draw_segmentation_masks(batch[0], engine.from_numpy(masks).to("cuda"), alpha=0.4)
    assert drawn.device.type == "cuda"
    np.testing.assert_array_equal(drawn.cpu().numpy(), tvu.draw_segmentation_masks(
        torch.from_numpy(arr[0]), torch.from_numpy(masks), alpha=0.4).numpy())
