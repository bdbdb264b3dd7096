"""flowvision.transforms.v2 colour functionals and transforms against torchvision v2.

uint8 results are bit-equal. Float results are compared with atol 1e-6 (a few ulps): torchvision's float
``adjust_gamma`` uses Sleef's ``powf``, its ``adjust_sharpness`` a conv2d and its ``adjust_contrast`` a float32
mean, whose rounding (summation order, 1-ulp ``pow``) numpy does not reproduce.
"""
import warnings

import numpy as np
import PIL.Image
import pytest
import torch
import torchvision.transforms.v2 as TV
import torchvision.transforms.v2.functional as TF
from v2_helpers import KINDS, assert_same, image_array, make_input, run_both, seeds_for, to_torch

import engine
import flowvision.transforms.v2 as T
import flowvision.transforms.v2.functional as F

FLOAT_ATOL = 1e-6
def atol_for(kind):
    return FLOAT_ATOL if kind == "image_float" else 0


FUNCTIONAL_CASES = [
    ("adjust_brightness", dict(brightness_factor=1.3)), ("adjust_brightness", dict(brightness_factor=0.6)),
    ("adjust_contrast", dict(contrast_factor=1.7)), ("adjust_contrast", dict(contrast_factor=0.4)),
    ("adjust_saturation", dict(saturation_factor=1.6)), ("adjust_saturation", dict(saturation_factor=0.3)),
    ("adjust_hue", dict(hue_factor=0.23)), ("adjust_hue", dict(hue_factor=-0.4)),
    ("adjust_gamma", dict(gamma=0.7)), ("adjust_gamma", dict(gamma=2.3, gain=1.2)),
    ("adjust_sharpness", dict(sharpness_factor=1.8)), ("adjust_sharpness", dict(sharpness_factor=0.2)),
    ("autocontrast", {}), ("equalize", {}), ("invert", {}), ("posterize", dict(bits=3)),
    ("rgb_to_grayscale", {}), ("rgb_to_grayscale", dict(num_output_channels=3)), ("to_grayscale", {}),
    ("permute_channels", dict(permutation=[2, 0, 1])),
]


def _both(name, array, **kwargs):
    return (getattr(TF, name)(torch.from_numpy(array.copy()), **kwargs),
            getattr(F, name)(engine.from_numpy(array.copy()), **kwargs))


@pytest.mark.parametrize("name, kwargs", FUNCTIONAL_CASES)
def test_functional_tensor_matches_torchvision(name, kwargs):
    for dtype, shape in ((np.uint8, (3, 29, 37)), (np.uint8, (2, 1, 3, 17, 21)), (np.float32, (2, 3, 29, 37))):
        assert_same(*_both(name, image_array(1, shape, dtype), **kwargs),
                    atol=FLOAT_ATOL if dtype == np.float32 else 0)


@pytest.mark.parametrize("threshold, dtype", [(128, np.uint8), (170.000005, np.uint8), (0.5, np.float32)])
def test_solarize_matches_torchvision(threshold, dtype):
    """Includes a threshold just above an integer, which torch compares in float32."""
    assert_same(*_both("solarize", image_array(2, (3, 29, 37), dtype), threshold=threshold))


def test_single_channel_and_gray_to_rgb():
    gray = image_array(3, (1, 29, 37))
    for name in ("adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_sharpness", "autocontrast"):
        kwargs = {"adjust_brightness": dict(brightness_factor=1.5), "adjust_contrast": dict(contrast_factor=0.5),
                  "adjust_saturation": dict(saturation_factor=0.5),
                  "adjust_sharpness": dict(sharpness_factor=2.0)}.get(name, {})
        assert_same(*_both(name, gray, **kwargs))
    assert_same(*_both("grayscale_to_rgb", gray))
    assert_same(*_both("rgb_to_grayscale", gray, num_output_channels=3))
    assert_same(*_both("grayscale_to_rgb", image_array(3, (3, 29, 37))))


@pytest.mark.parametrize("dtype", [np.int16, np.float64])
def test_other_dtypes(dtype):
    """int16 is exact; float64 within 1e-15: torch fuses its float64 multiply-adds, we round twice."""
    a = (image_array(4, (3, 29, 37)).astype(dtype) * (128 if dtype == np.int16 else 1 / 255)).astype(dtype)
    for name, kwargs in (("invert", {}), ("posterize", dict(bits=3)), ("equalize", {}), ("adjust_hue", dict(
            hue_factor=0.1)), ("adjust_saturation", dict(saturation_factor=0.4)), ("autocontrast", {})):
        assert_same(*_both(name, a, **kwargs), atol=1e-15 if dtype == np.float64 else 0)


@pytest.mark.parametrize("name, kwargs", FUNCTIONAL_CASES)
def test_functional_types_and_pil(name, kwargs):
    """Image and Video keep their type; PIL images go through torchvision's PIL code. The grayscale
    functionals have no video kernel, in torchvision either."""
    for kind in ("image", "video"):
        inpt = make_input(kind)
        if kind == "video" and name in ("rgb_to_grayscale", "to_grayscale"):
            for functional, video in ((TF, to_torch(inpt)), (F, inpt)):
                with pytest.raises(TypeError):
                    getattr(functional, name)(video, **kwargs)
            continue
        out = getattr(F, name)(inpt, **kwargs)
        assert type(out) is type(inpt)
        assert_same(getattr(TF, name)(to_torch(inpt), **kwargs), out, atol=atol_for(kind))
    pil = make_input("pil")
    assert_same(getattr(TF, name)(pil.copy(), **kwargs), getattr(F, name)(pil, **kwargs))


def test_video_kernels_are_image_kernels_with_leading_dims():
    video = make_input("video").as_subclass(engine.Tensor)
    assert_same(TF.adjust_hue_video(to_torch(video), 0.2), F.adjust_hue_video(video, 0.2))
    assert_same(TF.equalize_video(to_torch(video)), F.equalize_video(video))


@pytest.mark.parametrize("call, exc", [
    (lambda f, x: f.adjust_brightness(x, -1.0), ValueError),
    (lambda f, x: f.adjust_contrast(x, -0.5), ValueError),
    (lambda f, x: f.adjust_saturation(x, -0.5), ValueError),
    (lambda f, x: f.adjust_sharpness(x, -0.5), ValueError),
    (lambda f, x: f.adjust_hue(x, 0.6), ValueError),
    (lambda f, x: f.adjust_gamma(x, -1.0), ValueError),
    (lambda f, x: f.adjust_brightness(x[..., :2, :, :], 1.5), TypeError),
    (lambda f, x: f.adjust_sharpness(x[..., :2, :, :], 1.5), TypeError),
    (lambda f, x: f.autocontrast(x[..., :2, :, :]), TypeError),
    (lambda f, x: f.posterize(x, 9), TypeError),
    (lambda f, x: f.solarize(x, 256), TypeError),
    (lambda f, x: f.rgb_to_grayscale(x, 2), ValueError),
    (lambda f, x: f.permute_channels(x, [1, 0]), ValueError),
    (lambda f, x: f.adjust_brightness("not an image", 1.0), TypeError),
])
def test_functional_errors(call, exc):
    a = image_array(5, (3, 9, 11))
    with pytest.raises(exc) as theirs:
        call(TF, torch.from_numpy(a))
    with pytest.raises(exc) as ours:
        call(F, engine.from_numpy(a))
    if exc is ValueError:
        assert str(ours.value).replace("flowvision", "torchvision") == str(theirs.value)


TRANSFORM_CASES = [
    ("Grayscale", (), {}), ("Grayscale", (3,), {}), ("RandomGrayscale", (0.5,), {}), ("RGB", (), {}),
    ("ColorJitter", (0.4, 0.4, 0.4, 0.2), {}), ("ColorJitter", ((0.5, 1.5), None, (0.2, 1.8), (-0.3, 0.3)), {}),
    ("RandomChannelPermutation", (), {}), ("RandomPhotometricDistort", (), {}),
    ("RandomPhotometricDistort", (), dict(p=0.9)), ("RandomEqualize", (), {}), ("RandomInvert", (), {}),
    ("RandomPosterize", (3,), {}), ("RandomSolarize", (100,), {}), ("RandomAutocontrast", (), {}),
    ("RandomAdjustSharpness", (1.7,), {}),
]


@pytest.mark.slow  # seeded sweeps against torchvision: outside the quick subset (-m "not slow")
@pytest.mark.parametrize("name, args, kwargs", TRANSFORM_CASES)
def test_transform_matches_torchvision(name, args, kwargs):
    """Same draws, same output, for several seeds on each kind of input; boxes, masks and labels pass through."""
    for kind in KINDS:
        call_args = (0.4,) if name == "RandomSolarize" and kind == "image_float" else args
        for seed in seeds_for(kind):
            sample = make_input(kind, seed)
            expected, actual = run_both(getattr(TV, name)(*call_args, **kwargs),
                                        getattr(T, name)(*call_args, **kwargs), sample, seed)
            assert_same(expected, actual, atol=atol_for(kind))
            if kind == "sample":
                for key in ("boxes", "mask", "labels"):
                    assert actual[key] is sample[key]


def test_color_jitter_arguments():
    jitter = T.ColorJitter(brightness=0.5, contrast=(0.2, 0.2), hue=0.0)
    assert jitter.brightness == (0.5, 1.5) and jitter.contrast == (0.2, 0.2) and jitter.hue is None
    assert T.ColorJitter(brightness=1.0).brightness == (0.0, 2.0)
    for kwargs, exc in ((dict(brightness=-1), ValueError), (dict(hue=0.6), ValueError),
                        (dict(contrast=(1.5, 0.5)), ValueError), (dict(saturation=(1, 2, 3)), TypeError)):
        with pytest.raises(exc):
            TV.ColorJitter(**kwargs)
        with pytest.raises(exc):
            T.ColorJitter(**kwargs)


def test_random_apply_probability_checked():
    with pytest.raises(ValueError):
        T.RandomInvert(p=1.5)


def test_grayscale_of_pil_modes():
    gray = PIL.Image.fromarray(image_array(6, (29, 37)), "L")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same(TV.RGB()(gray.copy()), T.RGB()(gray))
        assert_same(TV.Grayscale(3)(gray.copy()), T.Grayscale(3)(gray))
