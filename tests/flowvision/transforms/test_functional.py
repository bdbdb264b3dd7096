"""flowvision.transforms.functional against torchvision.transforms.functional on real photos."""
import os

import numpy as np
import pytest
import torch
import torchvision.transforms.functional as TF
from PIL import Image
from torchvision.transforms import InterpolationMode as TI

import engine
import flowvision.transforms.functional as F
from flowvision.transforms import InterpolationMode as I

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images")
NAMES = ["chelsea.png", "coffee.png", "astronaut.png", "rocket.jpg"]


def _load(name):
    with Image.open(os.path.join(DATA, name)) as im:
        return im.convert("RGB")


PHOTOS = {n: _load(n) for n in NAMES}
CAT = PHOTOS["chelsea.png"]
SMALL = CAT.crop((150, 60, 229, 121))  # 79x61 RGB, odd sizes
SMALL_NP = np.asarray(SMALL).transpose(2, 0, 1).copy()  # uint8 CHW


def pil_equal(ours, ref, tol=0):
    """Same mode, size and pixels (within tol levels)."""
    assert ours.mode == ref.mode and ours.size == ref.size
    diff = np.abs(np.asarray(ours, dtype=np.int64) - np.asarray(ref, dtype=np.int64))
    assert diff.max(initial=0) <= tol, f"max diff {diff.max()}"


def tensor_equal(ours, ref, atol=1e-6):
    """Same shape, dtype and values (integers within atol levels)."""
    a, b = ours.numpy(), ref.numpy()
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), atol=atol, rtol=0)


def both(a):
    """(engine tensor, torch tensor) holding copies of a."""
    return engine.from_numpy(a.copy()), torch.from_numpy(a.copy())


def small_float():
    return (SMALL_NP / np.float32(255)).astype(np.float32)


# ---------------------------------------------------------------------------------------------- conversions


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "F", "I", "1", "LA"])
def test_to_tensor_pil_to_tensor(mode):
    img = SMALL.convert(mode)
    tensor_equal(F.to_tensor(img), TF.to_tensor(img))
    tensor_equal(F.pil_to_tensor(img), TF.pil_to_tensor(img))


def test_to_tensor_ndarray_and_errors():
    a = np.array(SMALL)
    tensor_equal(F.to_tensor(a), TF.to_tensor(a))
    tensor_equal(F.to_tensor(a[..., 0]), TF.to_tensor(a[..., 0]))
    f = a.astype(np.float64)
    tensor_equal(F.to_tensor(f), TF.to_tensor(f))
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        F.to_tensor([1, 2])
    with pytest.raises(ValueError, match="2/3 dimensional"):
        F.to_tensor(np.zeros((1, 2, 3, 4)))


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "LA"])
def test_to_pil_image_round_trip(mode):
    img = SMALL.convert(mode)
    for conv in ("to_tensor", "pil_to_tensor"):
        ours = F.to_pil_image(getattr(F, conv)(img))
        pil_equal(ours, TF.to_pil_image(getattr(TF, conv)(img)))
        pil_equal(ours, img)


def test_to_pil_image_dtypes_and_modes():
    rng = np.random.default_rng(0)
    for a in [rng.random((1, 5, 7), dtype=np.float32), (rng.random((5, 7)) * 1000).astype(np.int32),
              (rng.random((5, 7)) * 1000).astype(np.int16), rng.integers(0, 256, (3, 5, 7), dtype=np.uint8)]:
        e, t = both(a)
        pil_equal(F.to_pil_image(e), TF.to_pil_image(t))
    f = rng.random((1, 5, 7), dtype=np.float32)
    pil_equal(F.to_pil_image(engine.from_numpy(f), mode="F"), TF.to_pil_image(torch.from_numpy(f), mode="F"))
    hwc = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    pil_equal(F.to_pil_image(hwc, mode="HSV"), TF.to_pil_image(hwc, mode="HSV"))
    with pytest.raises(ValueError, match="Only modes"):
        F.to_pil_image(hwc, mode="RGBA")
    with pytest.raises(ValueError, match="should not have > 4 channels"):
        F.to_pil_image(np.zeros((2, 2, 5), np.uint8))


@pytest.mark.parametrize("src,dst", [("uint8", "float32"), ("uint8", "float64"), ("float32", "uint8"),
                                     ("float64", "uint8"), ("uint8", "int32"), ("int32", "uint8"),
                                     ("int16", "int64"), ("float32", "float64"), ("float64", "int32")])
def test_convert_image_dtype(src, dst):
    a = SMALL_NP.astype(src) if src != "float32" and src != "float64" else (SMALL_NP / 255).astype(src)
    if src == "int32":
        a = a * 1000000
    e, t = both(a)
    tensor_equal(F.convert_image_dtype(e, getattr(engine, dst)), TF.convert_image_dtype(t, getattr(torch, dst)))


def test_convert_image_dtype_unsafe():
    with pytest.raises(RuntimeError, match="cannot be performed safely"):
        F.convert_image_dtype(engine.zeros(1, 2, 2), engine.int32)


def test_normalize_inplace():
    x = small_float()
    e, t = both(x)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    tensor_equal(F.normalize(e, mean, std), TF.normalize(t, mean, std))
    np.testing.assert_array_equal(e.numpy(), x)
    out = F.normalize(e, mean, std, inplace=True)
    TF.normalize(t, mean, std, inplace=True)
    assert out is e
    tensor_equal(e, t)
    with pytest.raises(TypeError, match="float tensor"):
        F.normalize(engine.from_numpy(SMALL_NP), mean, std)
    with pytest.raises(ValueError, match="std evaluated to zero"):
        F.normalize(engine.from_numpy(x), mean, [0.1, 0.0, 0.1])


def test_dimensions():
    e = engine.from_numpy(SMALL_NP)
    assert F.get_dimensions(SMALL) == TF.get_dimensions(SMALL) == F.get_dimensions(e) == [3, 61, 79]
    assert F.get_image_size(SMALL) == F.get_image_size(e) == TF.get_image_size(SMALL) == [79, 61]
    assert F.get_image_num_channels(SMALL.convert("L")) == 1


# ---------------------------------------------------------------------------------------------- geometry (PIL)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("size,max_size", [(224, None), ([100, 150], None), ([77], None), (160, 200)])
@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR", "BICUBIC"])
def test_resize_pil(name, size, max_size, interp):
    img = PHOTOS[name]
    pil_equal(F.resize(img, size, getattr(I, interp), max_size=max_size),
              TF.resize(img, size, getattr(TI, interp), max_size=max_size))


def test_resize_pil_other_modes_and_errors():
    for interp in ("BOX", "HAMMING", "LANCZOS"):
        pil_equal(F.resize(CAT, 100, getattr(I, interp)), TF.resize(CAT, 100, getattr(TI, interp)))
    pil_equal(F.resize(CAT, 100, Image.BICUBIC), TF.resize(CAT, 100, Image.BICUBIC))
    assert F.resize(CAT, 300) is CAT
    with pytest.raises(ValueError, match="max_size should only be passed"):
        F.resize(CAT, [10, 20], max_size=30)
    with pytest.raises(ValueError, match="must be strictly greater"):
        F.resize(CAT, 100, max_size=100)
    with pytest.raises(TypeError, match="InterpolationMode"):
        F.resize(CAT, 100, "bilinear")


@pytest.mark.parametrize("name", NAMES)
def test_crops_pil(name):
    img = PHOTOS[name]
    pil_equal(F.crop(img, 10, 20, 100, 50), TF.crop(img, 10, 20, 100, 50))
    pil_equal(F.crop(img, -10, -5, 60, 40), TF.crop(img, -10, -5, 60, 40))
    for size in (224, (100, 151), [99], (700, 300), (301, 1000)):
        pil_equal(F.center_crop(img, size), TF.center_crop(img, size))
    for ours, ref in zip(F.five_crop(img, (100, 77)), TF.five_crop(img, (100, 77))):
        pil_equal(ours, ref)
    for vflip in (False, True):
        for ours, ref in zip(F.ten_crop(img, 90, vflip), TF.ten_crop(img, 90, vflip)):
            pil_equal(ours, ref)
    pil_equal(F.resized_crop(img, 30, 40, 120, 90, [64, 48]), TF.resized_crop(img, 30, 40, 120, 90, [64, 48]))
    pil_equal(F.hflip(img), TF.hflip(img))
    pil_equal(F.vflip(img), TF.vflip(img))
    with pytest.raises(ValueError, match="bigger than input size"):
        F.five_crop(img, 5000)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
@pytest.mark.parametrize("padding", [3, (2, 5), [1, 2, 3, 4], (4, -2, 0, 3)])
def test_pad_pil(mode, padding):
    for img in (SMALL, SMALL.convert("L"), SMALL.convert("P")):
        pil_equal(F.pad(img, padding, fill=7, padding_mode=mode), TF.pad(img, padding, fill=7, padding_mode=mode))
    pil_equal(F.pad(SMALL, padding, fill=(1, 2, 3), padding_mode=mode),
              TF.pad(SMALL, padding, fill=(1, 2, 3), padding_mode=mode))


def test_pad_errors():
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple"):
        F.pad(SMALL, (1, 2, 3))
    with pytest.raises(ValueError, match="Padding mode should be either"):
        F.pad(SMALL, 1, padding_mode="wrap")
    with pytest.raises(ValueError, match="does not match the number of channels"):
        F.pad(SMALL, 1, fill=(1, 2))


@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR", "BICUBIC"])
def test_rotate_affine_perspective_pil(interp):
    mode, tmode = getattr(I, interp), getattr(TI, interp)
    img = PHOTOS["coffee.png"]
    for kw in (dict(angle=30), dict(angle=-45.5, expand=True), dict(angle=17, center=(10, 200), fill=(255, 0, 9)),
               dict(angle=90, expand=True, fill=3)):
        pil_equal(F.rotate(img, interpolation=mode, **kw), TF.rotate(img, interpolation=tmode, **kw))
    for kw in (dict(angle=12.5, translate=(10, -7), scale=1.2, shear=(5.0, -3.0)),
               dict(angle=-30, translate=[0, 0], scale=0.7, shear=10, fill=128, center=[40, 50])):
        pil_equal(F.affine(img, interpolation=mode, **kw), TF.affine(img, interpolation=tmode, **kw))
    start = [[0, 0], [599, 0], [599, 399], [0, 399]]
    end = [[30, 10], [560, 40], [590, 380], [5, 350]]
    pil_equal(F.perspective(img, start, end, mode, fill=5), TF.perspective(img, start, end, tmode, fill=5))


# ---------------------------------------------------------------------------------------------- colour (PIL)


@pytest.mark.parametrize("name", NAMES)
def test_color_ops_pil(name):
    img = PHOTOS[name]
    for fn, args in [("adjust_brightness", (0.0,)), ("adjust_brightness", (1.7,)), ("adjust_contrast", (0.4,)),
                     ("adjust_contrast", (1.8,)), ("adjust_saturation", (0.0,)), ("adjust_saturation", (1.6,)),
                     ("adjust_hue", (-0.3,)), ("adjust_hue", (0.25,)), ("adjust_gamma", (0.6,)),
                     ("adjust_gamma", (2.2, 0.9)), ("adjust_sharpness", (0.3,)), ("adjust_sharpness", (2.0,)),
                     ("autocontrast", ()), ("equalize", ()), ("posterize", (3,)), ("solarize", (100,)),
                     ("invert", ())]:
        pil_equal(getattr(F, fn)(img, *args), getattr(TF, fn)(img, *args))


def test_grayscale_pil():
    for n in (1, 3):
        pil_equal(F.to_grayscale(CAT, n), TF.to_grayscale(CAT, n))
        pil_equal(F.rgb_to_grayscale(CAT, n), TF.rgb_to_grayscale(CAT, n))
    gray = CAT.convert("L")
    for fn, args in [("adjust_hue", (0.2,)), ("adjust_contrast", (0.5,)), ("adjust_gamma", (1.5,)), ("invert", ())]:
        pil_equal(getattr(F, fn)(gray, *args), getattr(TF, fn)(gray, *args))


def test_gaussian_blur_pil():
    for ks, sigma in [(5, 1.5), ([3, 7], [0.8, 2.0]), (9, None)]:
        pil_equal(F.gaussian_blur(SMALL, ks, sigma), TF.gaussian_blur(SMALL, ks, sigma), tol=1)
    with pytest.raises(ValueError, match="odd and positive"):
        F.gaussian_blur(SMALL, 4)
    with pytest.raises(ValueError, match="sigma should have positive values"):
        F.gaussian_blur(SMALL, 3, 0.0)


def test_color_errors():
    with pytest.raises(ValueError, match=r"hue_factor \(0.7\) is not in \[-0.5, 0.5\]"):
        F.adjust_hue(CAT, 0.7)
    with pytest.raises(ValueError, match="brightness_factor .* is not non-negative"):
        F.adjust_brightness(CAT, -1)
    with pytest.raises(TypeError, match="PIL Image or Tensor"):
        F.hflip(np.zeros((3, 3)))


# ---------------------------------------------------------------------------------------------- tensors


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64"])
@pytest.mark.parametrize("batch", [False, True])
def test_tensor_geometry(dtype, batch):
    a = SMALL_NP.astype(dtype) if dtype == "uint8" else (SMALL_NP / 255).astype(dtype)
    if batch:
        a = np.stack([a, a[:, ::-1]])
    e, t = both(a)
    tensor_equal(F.hflip(e), TF.hflip(t))
    tensor_equal(F.vflip(e), TF.vflip(t))
    tensor_equal(F.crop(e, 5, 7, 20, 33), TF.crop(t, 5, 7, 20, 33))
    tensor_equal(F.crop(e, -4, 60, 30, 40), TF.crop(t, -4, 60, 30, 40))
    for size in (31, (20, 79), (70, 90)):
        tensor_equal(F.center_crop(e, size), TF.center_crop(t, size))
    for ours, ref in zip(F.ten_crop(e, (20, 30)), TF.ten_crop(t, (20, 30))):
        tensor_equal(ours, ref)
    for mode in ("constant", "edge", "reflect", "symmetric"):
        for padding in (3, [2, 5], [1, 2, 3, 4], [4, -2, 0, 3]):
            tensor_equal(F.pad(e, padding, 2, mode), TF.pad(t, padding, 2, mode))


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR", "BICUBIC"])
def test_tensor_resize(dtype, interp):
    a = SMALL_NP.astype(dtype) if dtype == "uint8" else (SMALL_NP / 255).astype(dtype)
    e, t = both(np.stack([a, a[:, ::-1]]))
    for size, max_size in [(40, None), ([50, 33], None), ([90, 120], None), (30, 35)]:
        for aa in (False, True):
            # uint8 bilinear without antialiasing rounds exactly as torch (torch's fused multiply-adds)
            atol = 1e-5 if dtype != "uint8" else 0 if (interp, aa) == ("BILINEAR", False) else 1
            ours = F.resize(e, size, getattr(I, interp), max_size=max_size, antialias=aa)
            tensor_equal(ours, TF.resize(t, size, getattr(TI, interp), max_size=max_size, antialias=aa), atol=atol)


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_tensor_color(dtype):
    a = SMALL_NP.astype(dtype) if dtype == "uint8" else (SMALL_NP / 255).astype(dtype)
    e, t = both(a)
    atol = 1 if dtype == "uint8" else 1e-5
    ops = [("adjust_brightness", (1.4,)), ("adjust_contrast", (0.6,)), ("adjust_saturation", (1.7,)),
           ("adjust_hue", (0.2,)), ("adjust_hue", (-0.45,)), ("adjust_gamma", (0.7, 1.1)), ("adjust_sharpness", (0.2,)),
           ("adjust_sharpness", (2.5,)), ("autocontrast", ()), ("invert", ()), ("solarize", (0.5 if dtype != "uint8"
                                                                                           else 128,)),
           ("rgb_to_grayscale", (1,)), ("rgb_to_grayscale", (3,)), ("gaussian_blur", ([5, 3], [1.2, 0.7]))]
    if dtype == "uint8":
        ops += [("equalize", ()), ("posterize", (2,))]
    for fn, args in ops:
        tensor_equal(getattr(F, fn)(e, *args), getattr(TF, fn)(t, *args), atol=atol)


def test_tensor_equalize_batch_and_errors():
    e, t = both(np.stack([SMALL_NP, SMALL_NP // 2]))
    tensor_equal(F.equalize(e), TF.equalize(t))
    with pytest.raises(TypeError, match="Only torch.uint8 image tensors are supported"):
        F.posterize(engine.zeros(3, 4, 4), 2)


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("interp", ["NEAREST", "BILINEAR"])
def test_tensor_rotate_affine(dtype, interp):
    a = SMALL_NP.astype(dtype) if dtype == "uint8" else (SMALL_NP / 255).astype(dtype)
    e, t = both(a)
    mode, tmode = getattr(I, interp), getattr(TI, interp)
    # nearest sampling on torch's grids (bit for bit) picks torch's pixels; bilinear may round 1 level apart on
    # uint8 (torch's kernel fuses multiply-adds)
    atol = 0 if interp == "NEAREST" else 1 if dtype == "uint8" else 1e-4
    for kw in (dict(angle=33), dict(angle=-20, expand=True, fill=[1.0, 0.5, 0.0]), dict(angle=10, center=[5, 9])):
        tensor_equal(F.rotate(e, interpolation=mode, **kw), TF.rotate(t, interpolation=tmode, **kw), atol)
    for kw in (dict(angle=12.5, translate=[4, -3], scale=1.1, shear=[5.0, -3.0]),
               dict(angle=0.0, translate=[0, 0], scale=1.0, shear=[20.0, 0.0], center=[0, 0], fill=[0.2])):
        tensor_equal(F.affine(e, interpolation=mode, **kw), TF.affine(t, interpolation=tmode, **kw), atol)
    start = [[0, 0], [78, 0], [78, 60], [0, 60]]
    end = [[3, 2], [70, 5], [76, 58], [1, 50]]
    tensor_equal(F.perspective(e, start, end, mode), TF.perspective(t, start, end, tmode), atol)


def test_affine_and_perspective_grids_equal_torchvisions():
    """The float32 sampling grids are torchvision's bit for bit (a nearest tap on a .5 boundary then picks torch's
    pixel), over seeded parameters and odd sizes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same grids; torch's thread pool makes each small bmm here cost ~15 ms
    try:
        _check_grids_against_torchvision()
    finally:
        torch.set_num_threads(threads)


def _check_grids_against_torchvision():
    from torchvision.transforms import _functional_tensor as TFT
    rng = np.random.default_rng(0)
    f32 = np.dtype(np.float32)
    for i in range(40):
        w, h = (int(v) * 2 + 1 for v in rng.integers(1, 30, 2))
        ow, oh = (w, h) if i % 2 else (w + 2 * int(rng.integers(0, 4)), h + 2 * int(rng.integers(0, 4)) + 1)
        if i % 4 == 0:  # the ops that land on .5 boundaries: right angles, whole translations, plain shears
            angle, translate, scale = float(rng.choice([90, -90, 180, 45, 0])), [float(rng.integers(-5, 6)), 3.0], 1.0
            shear = [float(rng.choice([0, 15, -20])), 0.0]
        else:
            angle, translate = float(rng.uniform(-180, 180)), rng.uniform(-6, 6, 2).tolist()
            scale, shear = float(rng.uniform(0.5, 1.8)), rng.uniform(-30, 30, 2).tolist()
        center = [0.0, 0.0] if i % 3 else rng.uniform(-3, 3, 2).tolist()
        matrix = F._get_inverse_affine_matrix(center, angle, translate, scale, shear)
        assert matrix == TF._get_inverse_affine_matrix(center, angle, translate, scale, shear)
        ref = TFT._gen_affine_grid(torch.tensor(matrix, dtype=torch.float32).reshape(1, 2, 3), w, h, ow, oh)[0]
        gx, gy = F._affine_grid(matrix, w, h, ow, oh, f32)
        assert gx.dtype == gy.dtype == np.float32
        np.testing.assert_array_equal(np.stack([gx, gy], -1), ref.numpy(), err_msg=f"affine case {i}")
        corners = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        moved = (np.asarray(corners) + rng.integers(-(w // 3), w // 3 + 1, (4, 2))).tolist()
        coeffs = F._get_perspective_coeffs(corners, moved)
        ref = TFT._perspective_grid(coeffs, w, h, torch.float32, torch.device("cpu"))[0]
        gx, gy = F._perspective_grid(coeffs, w, h, f32)
        assert gx.dtype == gy.dtype == np.float32
        np.testing.assert_array_equal(np.stack([gx, gy], -1), ref.numpy(), err_msg=f"perspective case {i}")


def test_erase():
    x = small_float()
    e, t = both(x)
    v = np.full((3, 5, 6), 0.25, np.float32)
    tensor_equal(F.erase(e, 3, 4, 5, 6, engine.from_numpy(v)), TF.erase(t, 3, 4, 5, 6, torch.from_numpy(v)))
    np.testing.assert_array_equal(e.numpy(), x)
    out = F.erase(e, 0, 0, 2, 2, 0.0, inplace=True)
    assert out is e and e.numpy()[:, :2, :2].sum() == 0
