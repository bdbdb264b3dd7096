"""16-bit images through flowvision.transforms against torchvision 0.29.1, read from PNG and TIFF files that
Pillow writes here: PILToTensor keeps I;16 as uint16 (and refuses big-endian I;16B as torch does), ToTensor
gives torchvision's int16 (I;16) and scaled-byte (I;16B) answers, dtype conversion scales by 65535, and the
tensor transforms keep uint16 images uint16 with torchvision's truncation."""
import numpy as np
import pytest
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as TF
import torchvision.transforms.v2.functional as TF2
from PIL import Image

import engine
import flowvision.transforms as FT
import flowvision.transforms.functional as F

RNG = np.random.default_rng(1616)
PIXELS = RNG.integers(0, 2 ** 16, (23, 31), dtype=np.uint16)  # odd sizes, the whole 16-bit range


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """The same 16-bit pixels as Pillow reads them back from files: I;16 from a PNG, I;16B and I from TIFFs."""
    folder = tmp_path_factory.mktemp("sixteen")
    written = {
        "I;16": (Image.fromarray(PIXELS), "png"),
        "I;16B": (Image.frombuffer("I;16B", PIXELS.shape[::-1], PIXELS.astype(">u2").tobytes(), "raw", "I;16B", 0, 1),
                  "tiff"),
        "I": (Image.fromarray(PIXELS.astype(np.int32)), "tiff"),
    }
    read = {}
    for mode, (image, suffix) in written.items():
        path = folder / f"{mode.replace(';', '_')}.{suffix}"
        image.save(path)
        with Image.open(path) as loaded:
            loaded.load()
            assert loaded.mode == mode
            read[mode] = loaded.copy()
    return read


def same_tensor(ours, theirs, tolerance=0):
    """Same shape, dtype and values (integers within ``tolerance`` levels)."""
    a, b = ours.numpy(), theirs.numpy()
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if tolerance:
        assert np.abs(a.astype(np.int64) - b.astype(np.int64)).max(initial=0) <= tolerance
    else:
        np.testing.assert_array_equal(a, b)


def same_error(ours_call, theirs_call):
    with pytest.raises(Exception) as theirs:
        theirs_call()
    with pytest.raises(type(theirs.value)) as ours:
        ours_call()
    assert str(ours.value).replace("engine.", "torch.") == str(theirs.value)


@pytest.mark.parametrize("mode", ["I;16", "I"])
def test_pil_to_tensor_keeps_the_image_dtype(images, mode):
    image = images[mode]
    same_tensor(F.pil_to_tensor(image), TF.pil_to_tensor(image))
    same_tensor(FT.PILToTensor()(image), T.PILToTensor()(image))
    if mode == "I;16":
        assert F.pil_to_tensor(image).dtype is engine.uint16
        np.testing.assert_array_equal(F.pil_to_tensor(image).numpy()[0], PIXELS)


def test_pil_to_tensor_refuses_big_endian_as_torchvision(images):
    same_error(lambda: F.pil_to_tensor(images["I;16B"]), lambda: TF.pil_to_tensor(images["I;16B"]))
    same_error(lambda: FT.PILToTensor()(images["I;16B"]), lambda: T.PILToTensor()(images["I;16B"]))


@pytest.mark.parametrize("mode", ["I;16", "I;16B", "I"])
def test_to_tensor_gives_torchvisions_dtypes(images, mode):
    """I;16 comes out int16 (values past 32767 wrap, as torchvision's), I;16B as bytes scaled to [0, 1]."""
    image = images[mode]
    same_tensor(F.to_tensor(image), TF.to_tensor(image))
    same_tensor(FT.ToTensor()(image), T.ToTensor()(image))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64"])
def test_convert_image_dtype_from_uint16(images, dtype):
    ours, theirs = F.pil_to_tensor(images["I;16"]), TF.pil_to_tensor(images["I;16"])
    ours_dtype, theirs_dtype = getattr(engine, dtype), getattr(torch, dtype)
    same_tensor(F.convert_image_dtype(ours, ours_dtype), TF.convert_image_dtype(theirs, theirs_dtype))
    same_tensor(FT.ConvertImageDtype(ours_dtype)(ours), T.ConvertImageDtype(theirs_dtype)(theirs))


def test_convert_image_dtype_uint16_to_uint8_as_torchvision_v2():
    """torchvision's v1 function has no uint16 floor division kernel here; v2's to_dtype(scale=True) answers."""
    pixels = PIXELS[None]
    same_tensor(F.convert_image_dtype(engine.from_numpy(pixels), engine.uint8),
                TF2.to_dtype(torch.from_numpy(pixels), torch.uint8, scale=True))


@pytest.mark.parametrize("source", ["float32", "float64", "uint8"])
def test_convert_image_dtype_to_uint16(source):
    pixels = RNG.random((3, 5, 4)) if source != "uint8" else RNG.integers(0, 256, (3, 5, 4))
    pixels = pixels.astype(source)
    pixels.flat[:3] = [0, 1, 0.5] if source != "uint8" else [0, 255, 128]
    same_tensor(F.convert_image_dtype(engine.from_numpy(pixels), engine.uint16),
                TF.convert_image_dtype(torch.from_numpy(pixels), torch.uint16))


def test_the_usual_pipeline_on_a_16_bit_png(images):
    ours = FT.Compose([FT.PILToTensor(), FT.ConvertImageDtype(engine.float32), FT.Normalize([0.45], [0.22])])
    theirs = T.Compose([T.PILToTensor(), T.ConvertImageDtype(torch.float32), T.Normalize([0.45], [0.22])])
    same_tensor(ours(images["I;16"]), theirs(images["I;16"]))


def test_uint16_tensors_cannot_become_pil_images_or_be_normalized_as_in_torchvision(images):
    ours, theirs = F.pil_to_tensor(images["I;16"]), TF.pil_to_tensor(images["I;16"])
    same_error(lambda: F.to_pil_image(ours), lambda: TF.to_pil_image(theirs))
    same_error(lambda: F.normalize(ours, [0.5], [0.5]), lambda: TF.normalize(theirs, [0.5], [0.5]))


RGB = RNG.integers(0, 2 ** 16, (3, 13, 17), dtype=np.uint16)
# Transforms without float arithmetic in them, or whose float results torchvision rounds the same way
EXACT = {
    "hflip": lambda M, t: M.hflip(t),
    "vflip": lambda M, t: M.vflip(t),
    "center_crop": lambda M, t: M.center_crop(t, [5, 7]),
    "five_crop": lambda M, t: M.five_crop(t, [4, 6])[3],
    "pad": lambda M, t: M.pad(t, [1, 2, 3, 0]),
    "pad_reflect": lambda M, t: M.pad(t, [2, 1], padding_mode="reflect"),
    "resize_nearest": lambda M, t: M.resize(t, [7, 9], interpolation=M.InterpolationMode.NEAREST),
    "rotate_nearest": lambda M, t: M.rotate(t, 33.0),
    "affine_nearest": lambda M, t: M.affine(t, 10.0, [1, 2], 1.1, [3.0, 0.0]),
    "rgb_to_grayscale": lambda M, t: M.rgb_to_grayscale(t),
    "rgb_to_grayscale_3": lambda M, t: M.rgb_to_grayscale(t, 3),
    "adjust_brightness": lambda M, t: M.adjust_brightness(t, 1.3),
    "adjust_contrast": lambda M, t: M.adjust_contrast(t, 0.6),
    "adjust_saturation": lambda M, t: M.adjust_saturation(t, 1.4),
    "adjust_hue": lambda M, t: M.adjust_hue(t, -0.2),
}
# Interpolating transforms: torchvision truncates their float32 results for uint16 (it rounds only uint8
# and signed ints), so a last-bit difference in the interpolation can move a value by one level
INTERPOLATING = {
    "resize_bilinear": lambda M, t: M.resize(t, [7, 9]),
    "resize_bilinear_up": lambda M, t: M.resize(t, [19, 29]),
    "resize_bicubic": lambda M, t: M.resize(t, [19, 29], interpolation=M.InterpolationMode.BICUBIC),
    "resized_crop": lambda M, t: M.resized_crop(t, 2, 3, 8, 9, [5, 6]),
    "rotate_bilinear": lambda M, t: M.rotate(t, 33.0, interpolation=M.InterpolationMode.BILINEAR),
    "perspective": lambda M, t: M.perspective(t, [[0, 0], [16, 0], [16, 12], [0, 12]],
                                              [[2, 1], [15, 0], [16, 12], [1, 11]]),
    "gaussian_blur": lambda M, t: M.gaussian_blur(t, [3, 5], [0.8, 1.3]),
    "adjust_sharpness": lambda M, t: M.adjust_sharpness(t, 1.7),
}


def test_adjust_gamma_of_uint16_images():
    """float32 powers may differ in their last bit, and the conversion back to uint16 truncates."""
    same_tensor(F.adjust_gamma(engine.from_numpy(RGB), 0.7, 1.1), TF.adjust_gamma(torch.from_numpy(RGB), 0.7, 1.1),
                tolerance=1)


@pytest.mark.parametrize("name", list(EXACT))
def test_tensor_transforms_of_uint16_images(name):
    same_tensor(EXACT[name](F, engine.from_numpy(RGB)), EXACT[name](TF, torch.from_numpy(RGB)))


@pytest.mark.parametrize("name", list(INTERPOLATING))
def test_interpolating_transforms_of_uint16_images_truncate_as_torchvision(name):
    ours, theirs = INTERPOLATING[name](F, engine.from_numpy(RGB)), INTERPOLATING[name](TF, torch.from_numpy(RGB))
    same_tensor(ours, theirs, tolerance=1)
    rounded = np.round(INTERPOLATING[name](TF, torch.from_numpy(RGB.astype(np.float32))).numpy())
    assert (ours.numpy() != np.clip(rounded, 0, 65535)).any(), "uint16 results must be truncated, not rounded"
