"""v2 rotate / affine / perspective / elastic against torchvision: the random transforms on whole samples (same
seeds, same draws, same outputs) and the functionals on each input type, with their argument errors.

Tolerances: nearest-sampled images, masks, boxes and key points are compared exactly. Bilinear float images get
1e-5 (our grid_sample weights round differently in the last float32 bit), bilinear uint8 images 1. Elastic's
displacement field goes through our Gaussian blur, whose float32 kernel rounds differently from torchvision's, so
its boxes and key points get 1e-5 and its nearest images may differ where a pixel sits on a sampling boundary.
"""
import numpy as np
import PIL.Image
import pytest
import torch
import torchvision.transforms.v2 as TV
import torchvision.transforms.v2.functional as TF
from torchvision import tv_tensors as tv

import engine
import flowvision.transforms.v2 as T
import flowvision.transforms.v2.functional as F
from flowvision import tv_tensors as ours
from flowvision.transforms.v2.functional._meta import convert_bounding_box_format

from v2_helpers import assert_same, boxes_array, image_array, run_both, to_torch

pytestmark = pytest.mark.slow  # seeded sweeps against torchvision: outside the quick subset (-m "not slow")

SIZE = (29, 37)
FORMATS = ("XYXY", "XYWH", "CXCYWH")


def _image(seed, dtype=np.uint8, shape=(3, *SIZE)):
    return ours.Image(engine.from_numpy(image_array(seed, shape, dtype)))


def _boxes(seed, fmt="XYXY", dtype=np.float32):
    boxes = ours.BoundingBoxes(engine.from_numpy(boxes_array(seed, SIZE).astype(dtype)), format="XYXY",
                               canvas_size=SIZE)
    return convert_bounding_box_format(boxes, new_format=fmt)


def _mask(seed):
    return ours.Mask(engine.from_numpy((image_array(seed + 1, SIZE) % 4).astype(np.uint8)))


def _keypoints(seed, shape=(6, 2)):
    points = np.random.default_rng(seed).uniform(-2, 40, shape).astype(np.float32)
    return ours.KeyPoints(engine.from_numpy(points), canvas_size=SIZE)


def _detection_sample(seed, dtype, fmt):
    """(image, {"boxes", "masks", "keypoints", "labels"}): a detection sample in ``fmt`` boxes."""
    target = {"boxes": _boxes(seed, fmt), "masks": _mask(seed), "keypoints": _keypoints(seed),
              "labels": engine.tensor([1, 2, 3, 4, 5])}
    return (_image(seed, dtype), target)


def _fill_by_type(module):
    """A fill dict for ``module``'s transforms: 2 for masks, one value per channel for the rest."""
    return {(tv.Mask if module is TV else ours.Mask): 2, "others": (5, 6, 7)}


# name: (the transform from torchvision's module or ours, how its images compare, atol of the rest)
CASES = {
    "rotate": (lambda m: m.RandomRotation(40), 0, 0),
    "rotate_expand_fill": (lambda m: m.RandomRotation((-70, 70), expand=True, fill=7), 0, 0),
    "rotate_bilinear_center": (lambda m: m.RandomRotation(40, interpolation="bilinear", center=(3, 5)), "bilinear", 0),
    "affine": (lambda m: m.RandomAffine(30, (0.2, 0.1), (0.7, 1.3), (-10, 10, -5, 5)), 0, 0),
    "affine_shear_fill_dict": (lambda m: m.RandomAffine(0, shear=15, fill=_fill_by_type(m)), 0, 0),
    "perspective": (lambda m: m.RandomPerspective(0.6, p=1.0), "bilinear", 0),
    "perspective_nearest": (lambda m: m.RandomPerspective(0.6, p=0.7, interpolation="nearest", fill=3), 0, 0),
    "elastic": (lambda m: m.ElasticTransform(alpha=20.0, sigma=3.0), "bilinear", 1e-5),
    "elastic_nearest": (lambda m: m.ElasticTransform(alpha=(10.0, 30.0), sigma=(2.0, 4.0),
                                                     interpolation="nearest"), "elastic", 1e-5),
}


def _image_atol(kind, dtype):
    if kind == 0:
        return 0
    if kind == "elastic":  # nearest pixels can flip with the field's last bit
        return 255 if dtype == np.uint8 else 1.0
    return 1 if dtype == np.uint8 else 1e-5


def _assert_image_close(expected, actual, atol):
    """Equal images, or, for ``atol`` 255 / 1.0 (elastic nearest), at most 1% of pixels differing."""
    if atol in (255, 1.0):
        differ = np.abs(expected.numpy().astype(float) - actual.numpy().astype(float)) > 1e-5
        assert differ.mean() <= 0.01
        assert_same(expected, actual, atol=atol)
    else:
        assert_same(expected, actual, atol=atol)


@pytest.mark.parametrize("name", CASES)
def test_transform_matches_torchvision_on_detection_samples(name):
    make, image_kind, rest_atol = CASES[name]
    for seed in range(3):
        fmt, dtype = FORMATS[seed], (np.uint8, np.float32)[seed % 2]
        expected, actual = run_both(make(TV), make(T), _detection_sample(seed, dtype, fmt), seed)
        _assert_image_close(expected[0], actual[0], _image_atol(image_kind, dtype))
        assert_same(expected[1], actual[1], atol=rest_atol)


@pytest.mark.parametrize("name", ["rotate", "affine", "perspective_nearest", "elastic_nearest"])
def test_transform_matches_torchvision_on_single_inputs(name):
    """A pure tensor (the image), a PIL image, a video, and boxes or key points on their own."""
    make, image_kind, rest_atol = CASES[name]
    pil = PIL.Image.fromarray(image_array(4, (*SIZE, 3)))
    samples = [engine.from_numpy(image_array(3, (2, 3, *SIZE))), pil,
               ours.Video(engine.from_numpy(image_array(5, (2, 3, *SIZE)))), _boxes(6, "XYWH"), _keypoints(7)]
    for seed, sample in enumerate(samples):
        expected, actual = run_both(make(TV), make(T), sample, seed + 10)
        if isinstance(sample, PIL.Image.Image) and image_kind == "elastic":
            assert_same(expected, actual, atol=255)
        elif isinstance(sample, (ours.BoundingBoxes, ours.KeyPoints)):
            assert_same(expected, actual, atol=rest_atol)
        else:
            _assert_image_close(expected, actual, _image_atol(image_kind, np.uint8))


def test_perspective_coin_skips_the_sample():
    sample = _detection_sample(0, np.uint8, "XYXY")
    expected, actual = run_both(TV.RandomPerspective(p=0.0), T.RandomPerspective(p=0.0), sample, 0)
    assert actual is sample
    assert_same(expected, actual)


def test_get_params_is_v1s():
    engine.manual_seed(3)
    torch.manual_seed(3)
    assert T.RandomAffine.get_params((-10, 10), None, None, None, [37, 29]) == \
        TV.RandomAffine.get_params((-10, 10), None, None, None, [37, 29])


# ---- functionals ----------------------------------------------------------------------------------------------
def _all_types(seed=0):
    """One of each input type of the functionals, ours."""
    return [_image(seed), _image(seed, np.float32), engine.from_numpy(image_array(seed, (3, *SIZE))),
            ours.Video(engine.from_numpy(image_array(seed, (2, 3, *SIZE)))), _mask(seed),
            ours.Mask(engine.from_numpy((image_array(seed, (2, *SIZE)) % 3).astype(np.uint8))),
            _boxes(seed, "XYWH"), _boxes(seed, "CXCYWH", np.int64), _keypoints(seed), _keypoints(seed, (2, 3, 2)),
            PIL.Image.fromarray(image_array(seed, (*SIZE, 3)))]


def _check_functional(name, args, kwargs, bilinear=False):
    """Our functional ``name`` equals torchvision's on every input type (bilinear images: within 1 for uint8 and
    PIL, 1e-5 for float)."""
    for inpt in _all_types():
        expected = getattr(TF, name)(to_torch(inpt), *args, **kwargs)
        actual = getattr(F, name)(inpt, *args, **kwargs)
        floating = isinstance(inpt, engine.Tensor) and inpt.is_floating_point()
        assert_same(expected, actual, atol=(1e-5 if floating else 1) if bilinear else 0)


@pytest.mark.parametrize("kwargs", [dict(angle=33.0), dict(angle=-120.0, expand=True, fill=9),
                                    dict(angle=25.0, center=[4.0, 20.0], expand=True),
                                    dict(angle=90.0, expand=True), dict(angle=180.0), dict(angle=270.0),
                                    dict(angle=360.0), dict(angle=15.0, interpolation="bilinear", fill=4.0)])
def test_rotate_functional(kwargs):
    _check_functional("rotate", (), kwargs, bilinear=kwargs.get("interpolation") == "bilinear")


@pytest.mark.parametrize("kwargs", [dict(angle=20, translate=[3, -2], scale=1.2, shear=[10.0, -5.0]),
                                    dict(angle=-45.5, translate=(0, 4), scale=0.8, shear=7, center=[10, 5], fill=3),
                                    dict(angle=5, translate=[1, 1], scale=1.0, shear=[12.0])])
def test_affine_functional(kwargs):
    _check_functional("affine", (), kwargs)


def test_perspective_functional_with_points_and_coefficients():
    startpoints = [[0, 0], [36, 0], [36, 28], [0, 28]]
    endpoints = [[3, 2], [33, 1], [35, 25], [2, 27]]
    _check_functional("perspective", (startpoints, endpoints), dict(interpolation="nearest", fill=5))
    coefficients = [1.1, 0.05, -2.0, 0.02, 0.95, 1.5, 0.001, -0.0005]
    _check_functional("perspective", (None, None), dict(coefficients=coefficients, interpolation="nearest"))


def test_elastic_functional():
    field = np.random.default_rng(0).uniform(-0.1, 0.1, (1, *SIZE, 2)).astype(np.float32)
    for inpt in _all_types():
        expected = TF.elastic(to_torch(inpt), torch.from_numpy(field), interpolation="nearest", fill=2)
        actual = F.elastic_transform(inpt, engine.from_numpy(field), interpolation="nearest", fill=2)
        assert_same(expected, actual)


def test_kernels_on_plain_tensors():
    """The box and key point kernels take pure tensors with explicit metadata and return the canvas size."""
    boxes = engine.from_numpy(boxes_array(1, SIZE))
    out, canvas = F.rotate_bounding_boxes(boxes, "XYXY", SIZE, 30.0, expand=True)
    expected, expected_canvas = TF.rotate_bounding_boxes(torch.from_numpy(boxes.numpy()), tv.BoundingBoxFormat.XYXY,
                                                         SIZE, 30.0, expand=True)
    assert canvas == expected_canvas
    assert_same(expected, out)
    points = engine.from_numpy(np.array([[1.0, 2.0], [30.0, 20.0]], dtype=np.float32))
    out, canvas = F.affine_keypoints(points, SIZE, 10.0, [1.0, 2.0], 1.1, [0.0, 0.0])
    expected, expected_canvas = TF.affine_keypoints(torch.from_numpy(points.numpy()), SIZE, 10.0, [1.0, 2.0], 1.1,
                                                    [0.0, 0.0])
    assert canvas == expected_canvas
    assert_same(expected, out)
    assert F.rotate_mask(engine.zeros(0, *SIZE, dtype=engine.uint8), 30.0).shape == (0, *SIZE)


# ---- errors ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, error, match", [
    (lambda img: F.affine(img, 0.0, [1.0], 1.0, [0.0]), ValueError, "translate should be a sequence of length 2"),
    (lambda img: F.affine(img, 0.0, [0, 0], 0.0, [0.0]), ValueError, "scale should be positive"),
    (lambda img: F.affine(img, "1", [0, 0], 1.0, [0.0]), TypeError, "angle should be int or float"),
    (lambda img: F.affine(img, 0.0, [0, 0], 1.0, [1.0, 2.0, 3.0]), ValueError, "Shear should be a sequence"),
    (lambda img: F.rotate(img, 30.0, interpolation="cubic"), ValueError, "Invalid interpolation mode"),
    (lambda img: F.rotate(img, 30.0, interpolation="bicubic"), ValueError, "unsupported with Tensor input"),
    (lambda img: F.rotate(img, 30.0, fill=[1, 2]), ValueError, "cannot broadcast"),
    (lambda img: F.perspective(img, [[0, 0]] * 4, [[1, 1]] * 4, coefficients=[0.0] * 8), ValueError,
     "shouldn't be defined concurrently"),
    (lambda img: F.perspective(img, None, None), ValueError, "Either the startpoints/endpoints"),
    (lambda img: F.perspective(img, None, None, coefficients=[1.0] * 7), ValueError, "8 float values"),
    (lambda img: F.elastic(img, engine.zeros(1, 3, 3, 2)), ValueError, "displacement shape should be"),
    (lambda img: F.elastic(img, np.zeros((1, *SIZE, 2))), TypeError, "displacement should be a Tensor"),
    (lambda img: F.rotate("image", 30.0), TypeError, "supports inputs of type"),
])
def test_functional_errors_match_torchvision(call, error, match):
    with pytest.raises(error, match=match):
        call(_image(0))


@pytest.mark.parametrize("make, error, match", [
    (lambda: T.RandomRotation(-5), ValueError, "it must be positive"),
    (lambda: T.RandomRotation(10, center=[1]), ValueError, "center should be a sequence of length"),
    (lambda: T.RandomAffine(10, translate=(0.5, 1.5)), ValueError, "translation values should be between 0 and 1"),
    (lambda: T.RandomAffine(10, scale=(0.0, 1.0)), ValueError, "scale values should be positive"),
    (lambda: T.RandomAffine(10, shear=(1, 2, 3)), ValueError, "shear should be a sequence of length"),
    (lambda: T.RandomPerspective(distortion_scale=1.5), ValueError, "distortion_scale value should be between"),
    (lambda: T.RandomPerspective(p=2.0), ValueError, "`p` should be a floating point value"),
    (lambda: T.ElasticTransform(alpha=[1.0, 2.0, 3.0]), ValueError, "its length should be 1 or 2"),
    (lambda: T.ElasticTransform(fill="white"), TypeError, "Got inappropriate fill arg"),
])
def test_transform_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_sizes_must_agree():
    sample = (_image(0), ours.Mask(engine.zeros(5, 5, dtype=engine.uint8)))
    with pytest.raises(ValueError, match="multiple HxW"):
        T.RandomAffine(10)(sample)
