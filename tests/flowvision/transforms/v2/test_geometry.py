"""v2 geometry transforms and functionals against torchvision's: same random draws after the same seed, same
outputs on images (uint8, float32, batches, PIL), videos, masks, boxes in each format, key points and whole
detection samples, and the same errors for bad arguments.

Everything is compared exactly (uint8 images resized bilinearly or bicubically too: torch's integer kernel is
reproduced), except float images resized bilinearly or bicubically: within 1e-5.
"""
import warnings

import numpy as np
import PIL.Image
import pytest
import torch
from torchvision import tv_tensors as tv
from torchvision.transforms import v2 as tv2
from torchvision.transforms.v2 import functional as TF
from v2_helpers import assert_same, boxes_array, image_array, run_both, to_torch

import engine
from flowvision import tv_tensors as ours
from flowvision.transforms import v2
from flowvision.transforms.v2 import functional as F

CANVAS = (29, 37)
SEEDS = range(5)


def _tensor(array):
    return engine.from_numpy(np.ascontiguousarray(array))


def _boxes(seed, format, dtype=np.float32, canvas=CANVAS):
    xyxy = ours.BoundingBoxes(_tensor(boxes_array(seed, canvas)), format="XYXY", canvas_size=canvas)
    return F.convert_bounding_box_format(xyxy, new_format=format).to(getattr(engine, np.dtype(dtype).name))


def _keypoints(seed, canvas=CANVAS):
    rng = np.random.default_rng(seed)
    points = rng.uniform(0, 1, (4, 3, 2)) * np.array([canvas[1] - 1, canvas[0] - 1])
    return ours.KeyPoints(_tensor(points.astype(np.float32)), canvas_size=canvas)


def detection_sample(seed=0):
    """(Image, target dict) with boxes in the three formats, masks, key points and labels."""
    return (ours.Image(_tensor(image_array(seed))),
            {"boxes": _boxes(seed, "XYXY"), "boxes_xywh": _boxes(seed + 1, "XYWH"),
             "boxes_cxcywh": _boxes(seed + 2, "CXCYWH"),
             "masks": ours.Mask(_tensor(image_array(seed + 3, (5, *CANVAS)) % 3)),
             "keypoints": _keypoints(seed), "labels": engine.tensor([1, 2, 3, 4, 5])})


def float_sample(seed=0):
    """A float32 Image with a [H, W] mask and integer CXCYWH boxes."""
    return {"image": ours.Image(_tensor(image_array(seed, dtype=np.float32))),
            "mask": ours.Mask(_tensor(image_array(seed, CANVAS) % 2)),
            "boxes": _boxes(seed, "CXCYWH", np.int64)}


def batch_sample(seed=0):
    """A pure uint8 tensor with two leading batch dims (the image) and key points."""
    return [_tensor(image_array(seed, (2, 3, *CANVAS))), _keypoints(seed)]


def pil_sample(seed=0):
    """A PIL RGB image with XYWH boxes."""
    hwc = image_array(seed).transpose(1, 2, 0)
    return PIL.Image.fromarray(np.ascontiguousarray(hwc)), _boxes(seed, "XYWH")


def video_sample(seed=0):
    return ours.Video(_tensor(image_array(seed, (2, 3, *CANVAS))))


SAMPLES = {"detection": detection_sample, "float": float_sample, "batch": batch_sample, "pil": pil_sample,
           "video": video_sample}
IMAGE_ONLY = ("batch", "video")  # FiveCrop and TenCrop refuse boxes and masks; key points pass through


def both(name, *args, **kwargs):
    """torchvision's transform ``name`` and ours, built with the same arguments."""
    return getattr(tv2, name)(*args, **kwargs), getattr(v2, name)(*args, **kwargs)


RANDOM_TRANSFORMS = {
    "hflip": lambda: both("RandomHorizontalFlip"),
    "vflip": lambda: both("RandomVerticalFlip", p=0.7),
    "resized_crop": lambda: both("RandomResizedCrop", 16),
    "resized_crop_nearest": lambda: both("RandomResizedCrop", (20, 12), scale=(0.5, 1.0), interpolation="nearest"),
    "zoom_out": lambda: both("RandomZoomOut", fill=5, side_range=(1.0, 2.0)),
    "crop": lambda: both("RandomCrop", 20, padding=2),
    "crop_pad_if_needed": lambda: both("RandomCrop", (33, 25), pad_if_needed=True, fill=3),
    "scale_jitter": lambda: both("ScaleJitter", (24, 32), scale_range=(0.5, 1.5)),
    "shortest_size": lambda: both("RandomShortestSize", [15, 20, 31], max_size=40),
    "random_resize": lambda: both("RandomResize", 15, 30, interpolation="nearest"),
}
DETERMINISTIC_TRANSFORMS = {
    "resize_short_edge": lambda: both("Resize", 17),
    "resize_pair": lambda: both("Resize", (15, 41), interpolation=PIL.Image.NEAREST),
    "resize_max_size": lambda: both("Resize", None, max_size=25),
    "resize_capped": lambda: both("Resize", [20], max_size=24, antialias=False),
    "center_crop": lambda: both("CenterCrop", 15),
    "center_crop_padded": lambda: both("CenterCrop", (33, 41)),
    "pad": lambda: both("Pad", [1, 2, 3, 4], fill=7),
    "pad_two": lambda: both("Pad", (3, 1)),
}


def _image_atol(key, sample_name):
    """1e-5 for float images resized bilinearly, else exact."""
    resizes = key.startswith(("resize_short", "resize_max", "resize_capped", "resized_crop", "scale_jitter",
                              "shortest_size"))
    return 1e-5 if resizes and key != "resized_crop_nearest" and sample_name == "float" else 0


def _assert_sample(expected, actual, atol):
    """Whole samples equal; where images may differ by ``atol``, the rest (boxes, masks, key points) still
    exactly."""
    assert_same(expected, actual, atol=atol)
    if atol:
        flat_e, flat_a = _spatial_non_images(expected), _spatial_non_images(actual)
        assert len(flat_e) == len(flat_a)
        for e, a in zip(flat_e, flat_a):
            assert_same(e, a)


def _spatial_non_images(sample):
    """The boxes, key points and masks of a sample (what must stay exact when pixels may not)."""
    if isinstance(sample, dict):
        return [leaf for value in sample.values() for leaf in _spatial_non_images(value)]
    if isinstance(sample, (list, tuple)):
        return [leaf for value in sample for leaf in _spatial_non_images(value)]
    return [sample] if type(sample).__name__ in ("BoundingBoxes", "KeyPoints", "Mask") else []


@pytest.mark.parametrize("sample_name", sorted(SAMPLES))
@pytest.mark.parametrize("key", sorted(RANDOM_TRANSFORMS))
def test_random_transform_matches_torchvision(key, sample_name):
    theirs, mine = RANDOM_TRANSFORMS[key]()
    for seed in SEEDS:
        expected, actual = run_both(theirs, mine, SAMPLES[sample_name](seed), seed)
        _assert_sample(expected, actual, _image_atol(key, sample_name))


@pytest.mark.filterwarnings("ignore:Anti-alias option is always applied")
@pytest.mark.parametrize("sample_name", sorted(SAMPLES))
@pytest.mark.parametrize("key", sorted(DETERMINISTIC_TRANSFORMS))
def test_transform_matches_torchvision(key, sample_name):
    theirs, mine = DETERMINISTIC_TRANSFORMS[key]()
    for seed in range(2):
        expected, actual = run_both(theirs, mine, SAMPLES[sample_name](seed), seed)
        _assert_sample(expected, actual, _image_atol(key, sample_name))


def test_random_iou_crop_matches_torchvision():
    """Boxes whose centre falls outside the window become zeros but stay, with their labels."""
    theirs, mine = both("RandomIoUCrop")
    zeroed = 0
    for seed in range(12):
        sample = detection_sample(seed)
        expected, actual = run_both(theirs, mine, sample, seed)
        assert_same(expected, actual)
        assert actual[1]["labels"] is sample[1]["labels"]
        zeroed += int((actual[1]["boxes"].numpy() == 0).all(axis=1).sum())
    assert zeroed > 0


def test_random_iou_crop_on_pil_and_integer_boxes():
    theirs, mine = both("RandomIoUCrop", sampler_options=[0.3, 0.5], trials=10)
    for seed in SEEDS:
        image, _ = pil_sample(seed)
        sample = {"image": image, "boxes": _boxes(seed, "XYWH", np.int64), "labels": engine.tensor([0] * 5)}
        assert_same(*run_both(theirs, mine, sample, seed))


def test_random_iou_crop_needs_boxes_and_image():
    with pytest.raises(TypeError, match="requires input sample to contain tensor or PIL images and bounding boxes"):
        v2.RandomIoUCrop()(ours.Image(_tensor(image_array(0))))
    with pytest.raises(TypeError, match="requires input sample"):
        v2.RandomIoUCrop()(video_sample(), _boxes(0, "XYXY"))


def test_zoom_out_fill_per_type():
    theirs = tv2.RandomZoomOut(fill={tv.Image: (10, 20, 30), tv.Mask: 255, "others": 1}, p=1.0)
    mine = v2.RandomZoomOut(fill={ours.Image: (10, 20, 30), ours.Mask: 255, "others": 1}, p=1.0)
    for seed in SEEDS:
        expected, actual = run_both(theirs, mine, detection_sample(seed), seed)
        assert_same(expected, actual)
    image, target = actual
    assert tuple(image.shape[-2:]) == target["boxes"].canvas_size == target["keypoints"].canvas_size


def test_pad_fill_per_type_and_modes():
    for mode in ("constant", "edge", "reflect", "symmetric"):
        sample = (ours.Image(_tensor(image_array(1))), ours.Mask(_tensor(image_array(2, (1, *CANVAS)))))
        expected, actual = run_both(tv2.Pad([2, 3, 1, 4], fill={tv.Image: 9, tv.Mask: 4}, padding_mode=mode),
                                    v2.Pad([2, 3, 1, 4], fill={ours.Image: 9, ours.Mask: 4}, padding_mode=mode),
                                    sample)
        assert_same(expected, actual)


@pytest.mark.filterwarnings("ignore:.*is currently passing through inputs of type")
@pytest.mark.parametrize("name", ["FiveCrop", "TenCrop"])
def test_five_and_ten_crop(name):
    extra = {"vertical_flip": True} if name == "TenCrop" else {}
    theirs, mine = both(name, (11, 17), **extra)
    for sample_name in IMAGE_ONLY:
        assert_same(*run_both(theirs, mine, SAMPLES[sample_name](0)))
    for image in (ours.Image(_tensor(image_array(0, dtype=np.float32))), pil_sample(0)[0]):
        assert_same(*run_both(theirs, mine, image))
    with pytest.raises(TypeError, match="BoundingBoxes'es and Mask's are not supported"):
        mine(detection_sample())


def test_random_resized_crop_get_params_matches_torchvision():
    image = ours.Image(_tensor(image_array(0)))
    for seed in SEEDS:
        torch.manual_seed(seed)
        expected = tv2.RandomResizedCrop.get_params(to_torch(image), [0.08, 1.0], [3 / 4, 4 / 3])
        engine.manual_seed(seed)
        assert tuple(v2.RandomResizedCrop.get_params(image, [0.08, 1.0], [3 / 4, 4 / 3])) == tuple(expected)


def test_five_crop_warns_on_passed_through_key_points():
    with pytest.warns(UserWarning, match="passing through inputs of type tv_tensors.KeyPoints"):
        v2.FiveCrop(10)(batch_sample())


# ---- functionals ------------------------------------------------------------------------------------------------
def _all_types(seed=0):
    """One input of each type the geometry functionals take."""
    return [ours.Image(_tensor(image_array(seed))), _tensor(image_array(seed, (2, 3, *CANVAS), np.float32)),
            pil_sample(seed)[0], video_sample(seed), ours.Mask(_tensor(image_array(seed, CANVAS))),
            _boxes(seed, "XYXY"), _boxes(seed, "XYWH", np.int64), _boxes(seed, "CXCYWH"), _keypoints(seed)]


FUNCTIONAL_CALLS = {  # test id: (functional, args, kwargs)
    "horizontal_flip": ("horizontal_flip", (), {}),
    "vflip": ("vflip", (), {}),
    "resize_nearest": ("resize", ([13, 50],), {"interpolation": "nearest"}),
    "resize_nearest_exact": ("resize", ([31],), {"interpolation": "nearest-exact"}),
    "pad": ("pad", ([1, -2, 3, 4],), {"fill": 6}),
    "crop": ("crop", (-3, 5, 30, 20), {}),
    "center_crop": ("center_crop", ([31, 22],), {}),
    "resized_crop": ("resized_crop", (2, 3, 20, 25, [11, 9]), {"interpolation": "nearest"}),
}


@pytest.mark.parametrize("key", sorted(FUNCTIONAL_CALLS))
def test_functional_on_each_type(key):
    name, args, kwargs = FUNCTIONAL_CALLS[key]
    for inpt in _all_types():
        expected = getattr(TF, name)(to_torch(inpt), *args, **kwargs)
        assert_same(expected, getattr(F, name)(inpt, *args, **kwargs))


@pytest.mark.parametrize("interpolation", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_functional_on_each_type(interpolation, antialias):
    """Exact, float images within 1e-5 (torch's native uint8 kernel is reproduced)."""
    for size in ([17], [40, 23], [29, 50]):
        for inpt in _all_types(1):
            atol = 1e-5 if isinstance(inpt, engine.Tensor) and inpt.dtype == engine.float32 \
                and not isinstance(inpt, (ours.BoundingBoxes, ours.KeyPoints)) else 0
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # PIL: antialias=False is ignored
                expected = TF.resize(to_torch(inpt), size, interpolation=TF.InterpolationMode(interpolation),
                                     antialias=antialias)
                actual = F.resize(inpt, size, interpolation=interpolation, antialias=antialias)
            assert_same(expected, actual, atol=atol)


def test_uint8_resize_reproduces_torch_integer_kernel():
    """Random sizes, one-pixel edges and unchanged edges included, both modes, with and without antialias."""
    rng = np.random.default_rng(7)
    for case in range(32):
        height, width, new_height, new_width = (int(v) for v in rng.integers(1, 48, 4))
        new_width = width if case % 5 == 0 else new_width
        mode, antialias = ("bilinear", "bicubic")[case % 2], bool(case % 4 < 2)
        image = rng.integers(0, 256, (3, height, width)).astype(np.uint8)
        expected = TF.resize(torch.from_numpy(image), [new_height, new_width],
                             interpolation=TF.InterpolationMode(mode), antialias=antialias)
        actual = F.resize(_tensor(image), [new_height, new_width], interpolation=mode, antialias=antialias)
        assert_same(expected, actual)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [True, False])
def test_uint8_resize_of_photo_sizes_in_blocks(mode, antialias):
    """Sizes spanning many blocks of the banded product, both its float32 and float64 paths (a strong reduction),
    an enlargement, and a batch: still torch's kernel exactly."""
    rng = np.random.default_rng(8)
    image = rng.integers(0, 256, (2, 3, 480, 640)).astype(np.uint8)
    for size in ([256, 341], [224, 224], [7, 9], [500, 661]):
        expected = TF.resize(torch.from_numpy(image), size, interpolation=TF.InterpolationMode(mode),
                             antialias=antialias)
        assert_same(expected, F.resize(_tensor(image), size, interpolation=mode, antialias=antialias))


def test_resize_float_bicubic_and_video():
    video = ours.Video(_tensor(image_array(3, (2, 3, *CANVAS), np.float32)))
    for inpt in (_tensor(image_array(2, (3, *CANVAS), np.float32)), video):
        expected = TF.resize(to_torch(inpt), [20, 31], interpolation=TF.InterpolationMode.BICUBIC)
        assert_same(expected, F.resize(inpt, [20, 31], interpolation="bicubic"), atol=1e-5)


def test_pad_vector_fill_and_masks():
    image = ours.Image(_tensor(image_array(4)))
    assert_same(TF.pad(to_torch(image), [2, 1], fill=[10.7, 20, 300]), F.pad(image, [2, 1], fill=[10.7, 20, 300]))
    for mode in ("reflect", "edge", "symmetric"):
        assert_same(TF.pad(to_torch(image), [3, 1, 0, 2], padding_mode=mode),
                    F.pad(image, [3, 1, 0, 2], padding_mode=mode))
    mask = ours.Mask(_tensor(image_array(4, CANVAS)))
    assert_same(TF.pad(to_torch(mask), 2, fill=None), F.pad(mask, 2, fill=None))


@pytest.mark.parametrize("name", ["five_crop", "ten_crop"])
def test_five_ten_crop_functionals(name):
    for inpt in _all_types()[:4]:
        assert_same(getattr(TF, name)(to_torch(inpt), [10, 13]), getattr(F, name)(inpt, [10, 13]))


def test_box_kernels_on_pure_tensors():
    boxes = _boxes(0, "XYWH").as_subclass(engine.Tensor)
    t_boxes = torch.from_numpy(boxes.numpy().copy())
    expected = TF.crop_bounding_boxes(t_boxes, tv.BoundingBoxFormat.XYWH, 3, 4, 20, 15)
    actual = F.crop_bounding_boxes(boxes, ours.BoundingBoxFormat.XYWH, 3, 4, 20, 15)
    assert_same(expected[0], actual[0])
    assert tuple(expected[1]) == tuple(actual[1])
    expected = TF.resize_bounding_boxes(t_boxes, CANVAS, [12], format=tv.BoundingBoxFormat.XYWH)
    actual = F.resize_bounding_boxes(boxes, CANVAS, [12], format=ours.BoundingBoxFormat.XYWH)
    assert_same(expected[0], actual[0])
    assert tuple(expected[1]) == tuple(actual[1])
    assert_same(TF.horizontal_flip_bounding_boxes(t_boxes, tv.BoundingBoxFormat.XYWH, CANVAS),
                F.horizontal_flip_bounding_boxes(boxes, "XYWH", CANVAS))


# ---- errors -----------------------------------------------------------------------------------------------------
def _same_error(theirs, mine):
    """Both calls raise the same exception type with the same message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as actual:
        mine()
    assert str(actual.value) == str(expected.value)


@pytest.mark.parametrize("name, args, kwargs", [
    ("Resize", ([1, 2, 3],), {}),
    ("Resize", (None,), {}),
    ("RandomResizedCrop", (10,), {"scale": (0.5,)}),
    ("RandomResizedCrop", (10,), {"ratio": 3}),
    ("CenterCrop", ([1, 2, 3],), {}),
    ("Pad", ([1, 2, 3],), {}),
    ("Pad", (2,), {"padding_mode": "wrap"}),
    ("Pad", (2,), {"fill": "red"}),
    ("RandomCrop", (10,), {"padding": 1.5}),
    ("RandomZoomOut", (), {"side_range": (0.5, 2.0)}),
    ("RandomZoomOut", (), {"side_range": (1.0,)}),
    ("RandomHorizontalFlip", (), {"p": 1.5}),
])
def test_constructor_errors(name, args, kwargs):
    _same_error(lambda: getattr(tv2, name)(*args, **kwargs), lambda: getattr(v2, name)(*args, **kwargs))


def test_call_errors():
    image = ours.Image(_tensor(image_array(0)))
    t_image = to_torch(image)
    _same_error(lambda: tv2.RandomCrop(40)(t_image), lambda: v2.RandomCrop(40)(image))
    _same_error(lambda: tv2.RandomCrop(40, padding=1)(t_image), lambda: v2.RandomCrop(40, padding=1)(image))
    _same_error(lambda: TF.resize(t_image, [10], interpolation="cubic"),
                lambda: F.resize(image, [10], interpolation="cubic"))
    _same_error(lambda: TF.resize(t_image, [10, 12], max_size=20), lambda: F.resize(image, [10, 12], max_size=20))
    _same_error(lambda: TF.resize(t_image, [10], max_size=8), lambda: F.resize(image, [10], max_size=8))
    _same_error(lambda: TF.pad(t_image, [1, 2, 3]), lambda: F.pad(image, [1, 2, 3]))
    _same_error(lambda: TF.pad(t_image, 1, fill=[1, 2, 3], padding_mode="edge"),
                lambda: F.pad(image, 1, fill=[1, 2, 3], padding_mode="edge"))
    _same_error(lambda: TF.five_crop(t_image, 30), lambda: F.five_crop(image, 30))
    boxes = _boxes(0, "XYXY")
    _same_error(lambda: TF.pad(to_torch(boxes), 1, padding_mode="reflect"),
                lambda: F.pad(boxes, 1, padding_mode="reflect"))
    mask = ours.Mask(_tensor(image_array(0, CANVAS)))
    _same_error(lambda: TF.pad(to_torch(mask), 1, fill=[1, 2]), lambda: F.pad(mask, 1, fill=[1, 2]))


def test_unsupported_type_error_names_the_functional():
    with pytest.raises(TypeError, match="F.horizontal_flip supports inputs of type"):
        F.horizontal_flip(np.zeros((3, 4)))


def test_pil_resize_warns_without_antialias():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.resize(pil_sample()[0], [10], antialias=False)
    assert any("Anti-alias option is always applied" in str(w.message) for w in caught)
