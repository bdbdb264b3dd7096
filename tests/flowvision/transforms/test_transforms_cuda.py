"""Tensor transforms on CUDA tensors: every tensor op of flowvision.transforms.functional and every transform class
that takes tensors gives on the CUDA backend what it gives on the CPU (integers exactly but see FLOAT_SUMS, floats
within 1e-6), its result on the CUDA device, with the same seed for the random ones; on a GPU (marked ``cuda``) and,
without one, on the CPU emulation of CuPy, where the call must also read no device data on the host."""
import contextlib
import random

import numpy as np
import pytest

import engine
import flowvision.transforms as T
import flowvision.transforms.functional as F
from flowvision.transforms import AutoAugmentPolicy, InterpolationMode as I

pytestmark = pytest.mark.slow  # runs on the emulated GPU: outside the quick subset (-m "not slow")

F32, U8, F32X2, U8X2 = "float32", "uint8", "float32 batch", "uint8 batch"
ALL, FLOATS, UINT8 = (F32, U8, F32X2, U8X2), (F32, F32X2), (U8, U8X2)


def _image(kind):
    rng = np.random.default_rng(len(kind))
    shape = (2, 3, 29, 37) if kind.endswith("batch") else (3, 29, 37)
    if kind.startswith("uint8"):
        return rng.integers(0, 256, shape, dtype=np.uint8)
    return rng.random(shape, dtype=np.float32)


def _erase_value(img):
    """A per-channel value tensor made where the image is."""
    return engine.tensor([0.25, 0.5, 0.75], device=img.device)[:, None, None].to(img.dtype)


_PERSPECTIVE = ([[0, 0], [36, 0], [36, 28], [0, 28]], [[2, 3], [33, 1], [35, 27], [1, 25]])
_CJ = T.ColorJitter(0.4, 0.4, 0.4, 0.2)

# (name, call on an image tensor, image kinds)
CASES = [
    ("convert_image_dtype", lambda x: [F.convert_image_dtype(x, d) for d in (engine.float32, engine.float64,
                                                                           engine.uint8, engine.int16)], (F32, U8)),
    ("normalize", lambda x: F.normalize(x, [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), FLOATS),
    ("normalize-tensor-args", lambda x: F.normalize(x, engine.tensor([0.5, 0.4, 0.3]), engine.tensor([0.2, 0.3, 0.4])),
     FLOATS),
    ("normalize-inplace", lambda x: F.normalize(x.clone(), [0.5], [0.25], inplace=True), FLOATS),
    ("resize-bilinear-aa", lambda x: F.resize(x, [17, 23]), ALL),
    ("resize-bilinear", lambda x: F.resize(x, [17, 50], antialias=False), ALL),
    ("resize-bicubic-aa", lambda x: F.resize(x, 20, I.BICUBIC), ALL),
    ("resize-bicubic", lambda x: F.resize(x, [41, 23], I.BICUBIC, antialias=False), ALL),
    ("resize-nearest", lambda x: F.resize(x, [17, 53], I.NEAREST), ALL),
    ("resize-nearest-exact", lambda x: F.resize(x, [40, 30], I.NEAREST_EXACT), ALL),
    ("resize-max-size", lambda x: F.resize(x, 24, max_size=28), ALL),
    ("pad-constant", lambda x: F.pad(x, [1, 2, 3, 4], fill=7), ALL),
    ("pad-negative", lambda x: F.pad(x, [-2, 3, 1, -4]), ALL),
    ("pad-modes", lambda x: [F.pad(x, [3, 2], padding_mode=m) for m in ("edge", "reflect", "symmetric")], ALL),
    ("crop", lambda x: [F.crop(x, 3, 5, 11, 13), F.crop(x, -3, 30, 20, 12)], ALL),
    ("center_crop", lambda x: [F.center_crop(x, [11, 14]), F.center_crop(x, [33, 40])], ALL),
    ("resized_crop", lambda x: F.resized_crop(x, 2, 3, 20, 25, [13, 17]), ALL),
    ("flips", lambda x: [F.hflip(x), F.vflip(x)], ALL),
    ("five_crop", lambda x: F.five_crop(x, [11, 13]), ALL),
    ("ten_crop", lambda x: [F.ten_crop(x, 9), F.ten_crop(x, [9, 7], vertical_flip=True)], ALL),
    ("rgb_to_grayscale", lambda x: [F.rgb_to_grayscale(x), F.rgb_to_grayscale(x, 3), F.to_grayscale(x, 3)], ALL),
    ("grayscale-one-channel", lambda x: F.rgb_to_grayscale(x[..., :1, :, :], 3), ALL),
    ("adjust_brightness", lambda x: [F.adjust_brightness(x, f) for f in (0.0, 0.6, 1.7)], ALL),
    ("adjust_contrast", lambda x: [F.adjust_contrast(x, f) for f in (0.0, 0.6, 1.7)], ALL),
    ("adjust_saturation", lambda x: [F.adjust_saturation(x, f) for f in (0.0, 0.6, 1.7)], ALL),
    ("adjust_hue", lambda x: [F.adjust_hue(x, f) for f in (-0.4, 0.0, 0.25)], ALL),
    ("adjust_gamma", lambda x: [F.adjust_gamma(x, g, gain) for g, gain in ((0.5, 1), (2.2, 0.8))], ALL),
    ("adjust_sharpness", lambda x: [F.adjust_sharpness(x, f) for f in (0.0, 0.5, 2.0)], ALL),
    ("autocontrast", lambda x: [F.autocontrast(x), F.autocontrast(F.adjust_brightness(x, 0.0))], ALL),
    ("equalize", lambda x: [F.equalize(x), F.equalize(x // 64 + 100), F.equalize(x * 0 + 9)], UINT8),
    ("posterize", lambda x: [F.posterize(x, b) for b in (1, 4, 8)], UINT8),
    ("invert", F.invert, ALL),
    ("solarize", lambda x: F.solarize(x, 100 if x.dtype == engine.uint8 else 0.4), ALL),
    ("gaussian_blur", lambda x: [F.gaussian_blur(x, 5), F.gaussian_blur(x, [3, 7], [0.8, 1.9])], ALL),
    ("erase", lambda x: [F.erase(x, 2, 3, 10, 11, 0.5), F.erase(x, 4, 1, 7, 9, _erase_value(x))], ALL),
    ("rotate", lambda x: [F.rotate(x, 33.0), F.rotate(x, -20, I.BILINEAR, center=[5, 9]),
                          F.rotate(x, 40, expand=True, fill=[0.5, 0.2, 0.1])], ALL),
    ("affine", lambda x: [F.affine(x, 15.0, [3, -2], 0.9, [10.0, 5.0]),
                          F.affine(x, -30, [1, 4], 1.2, 8.0, I.BILINEAR, fill=[0.3])], ALL),
    ("perspective", lambda x: [F.perspective(x, *_PERSPECTIVE), F.perspective(x, *_PERSPECTIVE, I.NEAREST, [0.7])],
     ALL),
    # transform classes
    ("ConvertImageDtype", T.ConvertImageDtype(engine.float64), (F32, U8)),
    ("Normalize", T.Normalize([0.4, 0.5, 0.6], [0.2, 0.25, 0.3]), FLOATS),
    ("Resize", T.Resize(19), ALL),
    ("CenterCrop", T.CenterCrop(15), ALL),
    ("Pad", T.Pad([2, 5], padding_mode="reflect"), ALL),
    ("RandomCrop", T.RandomCrop(31, padding=3, pad_if_needed=True), ALL),
    ("RandomFlips", T.Compose([T.RandomHorizontalFlip(1.0), T.RandomVerticalFlip(1.0)]), ALL),
    ("RandomResizedCrop", T.RandomResizedCrop([17, 19]), ALL),
    ("FiveCrop", T.FiveCrop(9), ALL),
    ("TenCrop", T.TenCrop(9), ALL),
    ("ColorJitter", lambda x: [_CJ(x) for _ in range(3)], ALL),
    ("RandomRotation", T.RandomRotation(40, fill=0.5), ALL),
    ("RandomAffine", T.RandomAffine(25, (0.1, 0.2), (0.8, 1.1), (-5, 5, -3, 3), I.BILINEAR), ALL),
    ("Grayscale", T.Grayscale(3), ALL),
    ("RandomGrayscale", T.RandomGrayscale(1.0), ALL),
    ("GaussianBlur", T.GaussianBlur(5, (0.5, 2.0)), ALL),
    ("RandomErasing", lambda x: [T.RandomErasing(1.0, value=v)(x) for v in (0.5, (0.1, 0.2, 0.3), "random")], ALL),
    ("RandomApply-Order-Choice", T.Compose([T.RandomApply([T.RandomRotation(20)], p=1.0),
                                            T.RandomOrder([T.RandomHorizontalFlip(1.0), T.CenterCrop(25)]),
                                            T.RandomChoice([T.Pad(2), T.Resize(17)])]), ALL),
    ("AutoAugment", lambda x: [T.AutoAugment(p)(x) for p in AutoAugmentPolicy for _ in range(4)], UINT8),
    ("RandAugment", lambda x: [T.RandAugment()(x) for _ in range(8)], UINT8),
    ("TrivialAugmentWide", lambda x: [T.TrivialAugmentWide()(x) for _ in range(12)], UINT8),
]


# Cases whose integer results round sums of float products (matrix products, Gaussian kernels, interpolation kernels)
# or powf: a GPU sums in another order than the CPU's BLAS and numpy, so a value within a float32 step of a rounding
# boundary may land one level away there (on a GPU: at most 1 level). The emulation computes the matrix products
# with numpy, and engine's interpolation and depthwise convolution kernels agree with the CPU on these images:
# exactly equal there. (Sharpness, in the augmentations too, sums multiples of 1/13 of integers: never near a
# rounding boundary.)
FLOAT_SUMS = {"resize-bilinear-aa", "resize-bicubic-aa", "resize-bicubic", "resize-max-size", "resized_crop",
              "adjust_gamma", "gaussian_blur", "Resize", "RandomResizedCrop", "GaussianBlur",
              "RandomApply-Order-Choice"}


def _flatten(out):
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flatten(o)]
    return [out]


def _assert_same(got, expected, where, int_atol=0):
    got, expected = _flatten(got), _flatten(expected)
    assert len(got) == len(expected), where
    for k, (g, e) in enumerate(zip(got, expected)):
        at = f"{where}, result {k}"
        assert g.device.type == "cuda" and e.device.type == "cpu", at
        assert g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape), (at, g.dtype, e.dtype, g.shape, e.shape)
        g, e = g.cpu().numpy(), e.numpy()
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6, err_msg=at)
        elif int_atol:
            np.testing.assert_allclose(g.astype(np.int64), e.astype(np.int64), rtol=0, atol=int_atol, err_msg=at)
        else:
            np.testing.assert_array_equal(g, e, err_msg=at)


@contextlib.contextmanager
def _no_host_reads(cuda):
    """On the emulation: fail where the call reads device data on the host (a copy back, bool(), item()...) or
    synchronises; copies to the device (kernels, weights, grids) are fine."""
    with pytest.MonkeyPatch.context() as patch:
        if cuda == "emulated":
            import cuda_emulator

            def refuse(what):
                if what != "a host-to-device copy":
                    raise AssertionError(f"a tensor transform on the device read device data on the host: {what}")
            patch.setattr(cuda_emulator, "_refuse_in_capture", refuse)
        yield


@pytest.mark.parametrize("name, call, kinds", CASES, ids=[c[0] for c in CASES])
def test_cuda_matches_cpu(cuda, name, call, kinds):
    for kind in kinds:
        host = engine.from_numpy(_image(kind))
        device = host.cuda()
        engine.manual_seed(7)
        random.seed(7)  # RandomOrder and RandomChoice draw from Python's random, as torchvision's do
        expected = call(host)
        engine.manual_seed(7)
        random.seed(7)
        with _no_host_reads(cuda):
            got = call(device)
        _assert_same(got, expected, f"{name} on {kind}", int(cuda == "gpu" and name in FLOAT_SUMS))
        np.testing.assert_array_equal(device.cpu().numpy(), host.numpy(), err_msg=f"{name} changed its input")


def test_normalize_by_a_mean_and_std_on_the_device(cuda):
    """Like torchvision, which checks std for zeros: read on the host, as a few numbers."""
    host = engine.from_numpy(_image(F32X2))
    mean, std = engine.tensor([0.5, 0.4, 0.3]), engine.tensor([0.2, 0.3, 0.4])
    _assert_same(F.normalize(host.cuda(), mean.cuda(), std.cuda()), F.normalize(host, mean, std), "normalize")


def test_to_pil_image_of_a_cuda_tensor(cuda):
    for kind in (F32, U8):
        host = engine.from_numpy(_image(kind))
        ours, ref = F.to_pil_image(host.cuda()), F.to_pil_image(host)
        assert ours.mode == ref.mode and ours.size == ref.size
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
