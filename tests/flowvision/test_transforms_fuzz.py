"""Cases a differential fuzz of flowvision.transforms (v1 and v2) against torchvision found, kept as a seeded sample.

Each test compares with torchvision on the same input and failed before its fix:
- scaling to or from float16 and bfloat16 (``to_dtype(scale=True)``, ``convert_image_dtype``): torch multiplies
  half precision in float32, so 1 / (2**31 - 1) does not flush to 0 and 65535.999 does not overflow to inf, and
  numpy's view of bfloat16 (kind 'V') must not pass for an integer type;
- v2 ``to_dtype`` between bool and an integer type refuses (bool has no value bits), rather than shifting;
- a tensor resize to an edge of 0 pixels (``max_size`` or a short edge rounding down) raises torch's error, rather
  than returning an empty image or a ZeroDivisionError;
- v1 ``resize`` of a PIL image takes NEAREST_EXACT (Pillow's NEAREST), as torchvision's does;
- a tensor's edge and reflect padding reads output pixel i from input pixel i - pad (clamped or mirrored), as
  torch's does, so a side cropped away can be padded from the other (numpy's pad of the crop refused), and raises
  torch's errors where torch refuses (a reflection as long as its edge, an empty edge-padded output);
- a TVTensor's ``type(dtype)`` returns a pure tensor, as its other methods but ``to``, ``clone``... do.
"""
import importlib.util

import numpy as np
import PIL.Image
import pytest
import torch
import torchvision.transforms.functional as TF1
import torchvision.transforms.v2.functional as TF2

import engine
import flowvision.transforms.functional as F1
import flowvision.transforms.v2.functional as F2
from flowvision import tv_tensors

# engine.bfloat16 tensors need ml_dtypes
HALVES = ("float16", "bfloat16") if importlib.util.find_spec("ml_dtypes") else ("float16",)

INTEGERS = ("uint8", "int8", "int16", "uint16", "int32", "bool")


def _floats(seed, dtype):
    """[2, 3, 5, 7] floats of ``dtype`` in [-0.2, 1.5), with the edges 0, 1 and 0.9999 (rounding to overflow)."""
    values = np.random.default_rng(seed).uniform(-0.2, 1.5, (2, 3, 5, 7)).astype(np.float32)
    values.reshape(-1)[:3] = (0.0, 1.0, 0.9999)
    return torch.from_numpy(values).to(getattr(torch, dtype)), engine.from_numpy(values).to(getattr(engine, dtype))


def _integers(seed, dtype):
    """[2, 3, 5, 7] values over the whole range of ``dtype``, its extremes included."""
    if dtype == "bool":
        values = np.random.default_rng(seed).random((2, 3, 5, 7)) < 0.5
    else:
        info = np.iinfo(dtype)
        values = np.random.default_rng(seed).integers(info.min, info.max, (2, 3, 5, 7), endpoint=True, dtype=dtype)
        values.reshape(-1)[:2] = (info.min, info.max)
    return torch.from_numpy(values), engine.from_numpy(values)


def _assert_equal(expected, actual):
    assert str(expected.dtype).split(".")[-1] == str(actual.dtype).split(".")[-1]
    assert np.array_equal(expected.float().numpy() if expected.dtype == torch.bfloat16 else expected.numpy(),
                          actual.float().numpy() if actual.dtype == engine.bfloat16 else actual.numpy(),
                          equal_nan=True)


@pytest.mark.parametrize("half", HALVES)
@pytest.mark.parametrize("integer", INTEGERS)
@pytest.mark.parametrize("seed", range(2))
def test_scaling_between_half_precision_and_integers_is_torchvisions(half, integer, seed):
    theirs, ours = _floats(seed, half)
    _assert_equal(TF2.to_dtype(theirs, getattr(torch, integer), scale=True),
                  F2.to_dtype(ours, getattr(engine, integer), scale=True))
    _assert_equal(TF1.convert_image_dtype(theirs, getattr(torch, integer)),
                  F1.convert_image_dtype(ours, getattr(engine, integer)))
    theirs, ours = _integers(seed, integer)
    _assert_equal(TF2.to_dtype(theirs, getattr(torch, half), scale=True),
                  F2.to_dtype(ours, getattr(engine, half), scale=True))
    _assert_equal(TF1.convert_image_dtype(theirs, getattr(torch, half)),
                  F1.convert_image_dtype(ours, getattr(engine, half)))


def test_half_precision_scaling_on_the_cuda_backend(cuda):
    """The same float32 products on CuPy arrays: float16 to uint16 and int32 to float16."""
    theirs, ours = _floats(0, "float16")
    _assert_equal(TF2.to_dtype(theirs, torch.uint16, scale=True),
                  F2.to_dtype(ours.to("cuda"), engine.uint16, scale=True).cpu())
    theirs, ours = _integers(0, "int32")
    _assert_equal(TF2.to_dtype(theirs, torch.float16, scale=True),
                  F2.to_dtype(ours.to("cuda"), engine.float16, scale=True).cpu())


@pytest.mark.parametrize("source, target", [("bool", "uint8"), ("int16", "bool"), ("bool", "int32")])
def test_v2_scaling_between_bool_and_integers_refuses(source, target):
    theirs, ours = _integers(0, source)
    with pytest.raises(TypeError, match="Number of value bits is only defined for integer dtypes"):
        TF2.to_dtype(theirs, getattr(torch, target), scale=True)
    with pytest.raises(TypeError, match="Number of value bits is only defined for integer dtypes, but got engine.bool"):
        F2.to_dtype(tv_tensors.Image(ours), getattr(engine, target), scale=True)


def test_v2_scaling_bool_to_float_still_works():
    theirs, ours = _integers(1, "bool")
    _assert_equal(TF2.to_dtype(theirs, torch.float32, scale=True), F2.to_dtype(ours, engine.float32, scale=True))


ZERO_EDGE = [([0, 5], None), ([3, 0], None), (None, 1), (2, 3)]  # the last two round the short edge to 0


def _torch_error(call):
    with pytest.raises(RuntimeError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("size, max_size", ZERO_EDGE)
@pytest.mark.parametrize("interpolation", ["NEAREST", "NEAREST_EXACT", "BILINEAR", "BICUBIC"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_v2_resize_to_an_empty_edge_raises_torchs_error(size, max_size, interpolation, dtype):
    image = np.random.default_rng(0).integers(0, 256, (2, 3, 1, 13)).astype(dtype)
    message = _torch_error(lambda: TF2.resize(torch.from_numpy(image), size, TF2.InterpolationMode[interpolation],
                                              max_size=max_size, antialias=False))
    with pytest.raises(RuntimeError, match=f"^{message.replace('(', '[(]').replace(')', '[)]')}$"):
        F2.resize(tv_tensors.Image(engine.from_numpy(image)), size, F2.InterpolationMode[interpolation],
                  max_size=max_size, antialias=False)


@pytest.mark.parametrize("size", [[0, 5], [3, 0]])
@pytest.mark.parametrize("antialias", [True, False])
def test_v1_resize_to_an_empty_edge_raises_torchs_error(size, antialias):
    image = np.random.default_rng(1).integers(0, 256, (3, 6, 13)).astype(np.uint8)
    message = _torch_error(lambda: TF1.resize(torch.from_numpy(image), size, antialias=antialias))
    with pytest.raises(RuntimeError) as info:
        F1.resize(engine.from_numpy(image), size, antialias=antialias)
    assert str(info.value) == message


@pytest.mark.parametrize("mode", ["RGB", "L", "RGBA", "P", "F"])
@pytest.mark.parametrize("size", [5, [11, 4], [23, 19]])
def test_v1_resize_of_pil_images_takes_nearest_exact(mode, size):
    rng = np.random.default_rng(len(mode))
    image = PIL.Image.fromarray(rng.integers(0, 256, (9, 14, 3)).astype(np.uint8)).convert(mode)
    expected = TF1.resize(image, size, TF1.InterpolationMode.NEAREST_EXACT)
    actual = F1.resize(image, size, F1.InterpolationMode.NEAREST_EXACT)
    assert (actual.mode, actual.size) == (expected.mode, expected.size)
    assert np.array_equal(np.asarray(actual), np.asarray(expected))


@pytest.mark.parametrize("kind", ["Image", "Mask", "BoundingBoxes"])
def test_tv_tensor_type_cast_returns_a_pure_tensor(kind):
    from torchvision import tv_tensors as theirs

    def make(module, lib):
        data = lib.ones(2, 4)
        return (module.BoundingBoxes(data, format="XYXY", canvas_size=(5, 5)) if kind == "BoundingBoxes"
                else getattr(module, kind)(data))

    expected, actual = make(theirs, torch).type(torch.float64), make(tv_tensors, engine).type(engine.float64)
    assert (type(expected), type(actual)) == (torch.Tensor, engine.Tensor)
    assert actual.dtype == engine.float64
    with theirs.set_return_type("TVTensor"), tv_tensors.set_return_type("TVTensor"):
        expected, actual = make(theirs, torch).type(torch.float64), make(tv_tensors, engine).type(engine.float64)
        assert type(expected).__name__ == type(actual).__name__ == kind


PADS = [[-2, -3, 0, 1], [1, -3, 1, 2], [0, -3, 0, 2], [-4, 1, 2, 0], [3, -1, -2, 1], [-1, 2, 3, -2], [2, 1, 2, 1]]


@pytest.mark.parametrize("padding", PADS)
@pytest.mark.parametrize("mode", ["edge", "reflect"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 5, 6)])
def test_tensor_padding_across_a_cropped_side_is_torchvisions(padding, mode, shape):
    image = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    expected = TF2.pad(torch.from_numpy(image), padding, padding_mode=mode)
    _assert_equal(expected, F2.pad(tv_tensors.Image(engine.from_numpy(image)), padding, padding_mode=mode))
    _assert_equal(TF1.pad(torch.from_numpy(image), padding, padding_mode=mode),
                  F1.pad(engine.from_numpy(image), padding, padding_mode=mode))


@pytest.mark.parametrize("padding, mode", [([4, 0], "reflect"), ([0, 0, 0, 3], "reflect"), ([-4, 0, 0, 0], "edge"),
                                           ([0, -2, 0, -1], "edge"), ([-4, -3, 0, 0], "reflect")])
def test_tensor_padding_refusals_are_torchs(padding, mode):
    image = np.zeros((2, 3, 4), np.float32)
    message = _torch_error(lambda: TF2.pad(torch.from_numpy(image), padding, padding_mode=mode))
    for pad in (F1.pad, F2.pad):
        with pytest.raises(RuntimeError) as info:
            pad(engine.from_numpy(image), padding, padding_mode=mode)
        assert str(info.value) == message


def test_index_padding_on_the_cuda_backend(cuda):
    image = np.random.default_rng(5).integers(0, 256, (2, 3, 4)).astype(np.uint8)
    for mode in ("edge", "reflect"):
        expected = TF2.pad(torch.from_numpy(image), [1, -3, 1, 2], padding_mode=mode)
        _assert_equal(expected, F2.pad(engine.from_numpy(image).to("cuda"), [1, -3, 1, 2], padding_mode=mode).cpu())
