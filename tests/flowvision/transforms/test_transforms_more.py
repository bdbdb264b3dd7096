"""RandomPerspective, LinearTransformation, RandomInvert, RandomPosterize, RandomSolarize, RandomAdjustSharpness,
RandomAutocontrast, RandomEqualize, ElasticTransform (and F.elastic_transform) and AugMix against torchvision: the
same seed gives the same random draws (the generators end at the same place) and the same images."""
import os

import numpy as np
import pytest
import torch
import torchvision.transforms as TT
import torchvision.transforms.autoaugment as TA
import torchvision.transforms.functional as TF
import torchvision.transforms.transforms as TV_TRANSFORMS
from PIL import Image

import engine
import flowvision.transforms as T
import flowvision.transforms.autoaugment as A
import flowvision.transforms.functional as F
import flowvision.transforms.transforms as TRANSFORMS

_G = np.random.default_rng(0)
U8 = _G.integers(0, 256, (3, 29, 37), dtype=np.uint8)
F32 = _G.random((3, 29, 37), dtype=np.float32)
B8 = _G.integers(0, 256, (2, 3, 29, 37), dtype=np.uint8)
B32 = _G.random((2, 3, 29, 37), dtype=np.float32)
NOISE = Image.fromarray(U8.transpose(1, 2, 0))
DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images")
with Image.open(os.path.join(DATA, "coffee.png")) as _im:
    PHOTO = _im.convert("RGB").crop((200, 100, 241, 131))  # 41x31
INPUTS = {"u8": U8, "f32": F32, "batch_u8": B8, "batch_f32": B32, "pil": NOISE, "photo": PHOTO,
          "gray": PHOTO.convert("L")}


def _tv(value):
    """The torchvision twin of an argument (InterpolationMode translated)."""
    return getattr(TT.InterpolationMode, value.name) if isinstance(value, T.InterpolationMode) else value


def pair(name, *args, **kwargs):
    """The same transform from flowvision and from torchvision."""
    module = A if name == "AugMix" else TRANSFORMS
    ref_module = TA if name == "AugMix" else TV_TRANSFORMS
    return (getattr(module, name)(*args, **kwargs),
            getattr(ref_module, name)(*[_tv(a) for a in args], **{k: _tv(v) for k, v in kwargs.items()}))


def run_both(ours, ref, x, seed):
    """Both transforms on x after the same seed, as numpy arrays; the generators must end at the same place."""
    engine.manual_seed(seed)
    torch.manual_seed(seed)
    if isinstance(x, np.ndarray):
        a, b = ours(engine.from_numpy(x.copy())).numpy(), ref(torch.from_numpy(x.copy())).numpy()
    else:
        a, b = ours(x), ref(x)
        assert a.mode == b.mode and a.size == b.size
        a, b = np.asarray(a), np.asarray(b)
    assert engine.rand(1).item() == torch.rand(1).item(), "the transforms drew differently"
    assert a.shape == b.shape and a.dtype == b.dtype
    return a, b


def assert_close(a, b, off_by_one=0.0, atol=2e-5):
    """Integers equal, except that a fraction off_by_one of them may be 1 apart; floats within atol."""
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    if a.dtype.kind == "f":
        assert diff.max(initial=0) <= atol
    else:
        assert diff.max(initial=0) <= (1 if off_by_one else 0)
        assert (diff > 0).mean() <= off_by_one


# ---------------------------------------------------------------------------------------------- the p-random ops


PROB_OPS = [("RandomInvert", ()), ("RandomPosterize", (3,)), ("RandomSolarize", (100,)),
            ("RandomAdjustSharpness", (2.0,)), ("RandomAutocontrast", ()), ("RandomEqualize", ())]
UINT8_ONLY = {"RandomPosterize", "RandomEqualize"}


@pytest.mark.parametrize("name,args", PROB_OPS, ids=[n for n, _ in PROB_OPS])
def test_probability_ops_match_torchvision(name, args):
    seen = set()
    for key, x in INPUTS.items():
        if "f32" in key and name in UINT8_ONLY:
            continue
        threshold_args = (0.4,) if "f32" in key and name == "RandomSolarize" else args
        ours, ref = pair(name, *threshold_args, p=0.6)
        for seed in (0, 1, 2):  # torch.rand(1): 0.50, 0.76, 0.61
            a, b = run_both(ours, ref, x, seed)
            assert_close(a, b)
            seen.add(np.array_equal(a, np.asarray(x)))
    assert seen == {True, False}  # both branches ran


@pytest.mark.parametrize("name,args", PROB_OPS, ids=[n for n, _ in PROB_OPS])
def test_probability_ops_p0_p1(name, args):
    x = engine.from_numpy(U8.copy())
    assert getattr(T, name)(*args, p=0.0)(x) is x
    assert getattr(T, name)(*args, p=0)(PHOTO) is PHOTO
    fn = {"RandomInvert": F.invert, "RandomPosterize": F.posterize, "RandomSolarize": F.solarize,
          "RandomAdjustSharpness": F.adjust_sharpness, "RandomAutocontrast": F.autocontrast,
          "RandomEqualize": F.equalize}[name]
    np.testing.assert_array_equal(getattr(T, name)(*args, p=1.0)(x).numpy(), fn(x, *args).numpy())


def test_probability_ops_bad_inputs():
    with pytest.raises(TypeError, match="Only torch.uint8 image tensors are supported"):
        T.RandomPosterize(4, p=1.0)(engine.from_numpy(F32.copy()))
    with pytest.raises(TypeError, match="Threshold should be less than bound of img."):
        T.RandomSolarize(2, p=1.0)(engine.from_numpy(F32.copy()))
    with pytest.raises(TypeError, match="Only torch.uint8 image tensors are supported"):
        T.RandomEqualize(p=1.0)(engine.from_numpy(F32.copy()))


# ---------------------------------------------------------------------------------------------- RandomPerspective


def test_random_perspective_params_match_torchvision():
    for width, height, scale in ((37, 29, 0.5), (41, 31, 0.9), (8, 5, 0.3), (2, 2, 1.0)):
        for seed in range(3):
            engine.manual_seed(seed)
            torch.manual_seed(seed)
            assert T.RandomPerspective.get_params(width, height, scale) == \
                TT.RandomPerspective.get_params(width, height, scale)
            assert engine.rand(1).item() == torch.rand(1).item()


@pytest.mark.parametrize("kwargs", [{}, dict(distortion_scale=0.8, p=0.7, fill=(10, 20, 30)),
                                    dict(interpolation=T.InterpolationMode.NEAREST, fill=5)], ids=["default", "fill",
                                                                                                    "nearest"])
def test_random_perspective_matches_torchvision(kwargs):
    ours, ref = pair("RandomPerspective", **kwargs)
    nearest = kwargs.get("interpolation") == T.InterpolationMode.NEAREST
    for key, x in INPUTS.items():
        if key == "gray" and isinstance(kwargs.get("fill"), tuple):
            continue
        for seed in (0, 3, 5):
            a, b = run_both(ours, ref, x, seed)
            if isinstance(x, Image.Image):
                assert_close(a, b)  # Pillow's own warp: identical
            elif nearest:  # torch's grid bit for bit: the same source pixels
                np.testing.assert_array_equal(a, b)
            else:  # bilinear: torch's kernel fuses multiply-adds, so a uint8 may round 1 apart
                assert_close(a, b, off_by_one=0.002)


def test_random_perspective_p0_and_repr_and_errors():
    x = engine.from_numpy(U8.copy())
    assert T.RandomPerspective(p=0.0)(x) is x
    assert T.RandomPerspective(p=0.0)(PHOTO) is PHOTO
    for kwargs in ({}, dict(distortion_scale=0.2, p=0.3, interpolation=0, fill=[1, 2, 3])):
        ours, ref = pair("RandomPerspective", **kwargs)
        assert repr(ours) == repr(ref)
        assert ours.interpolation.name == ref.interpolation.name and ours.fill == ref.fill
    with pytest.raises(TypeError, match="Fill should be either a sequence or a number."):
        T.RandomPerspective(fill=object())
    assert T.RandomPerspective(fill=None).fill == TT.RandomPerspective(fill=None).fill == 0


# ---------------------------------------------------------------------------------------------- ElasticTransform


def test_elastic_transform_function_matches_torchvision():
    """With the same displacement field the sampling agrees (nearest, bilinear, bicubic; fills): exactly but for
    _grid_sample's bilinear rounding (torch fuses multiply-adds), which can move a uint8 value on a .5 boundary."""
    torch.manual_seed(0)
    disp = (torch.rand(1, 29, 37, 2) * 2 - 1) * 0.15
    ours_disp = engine.from_numpy(disp.numpy().copy())
    for key in ("u8", "f32", "batch_u8", "batch_f32", "pil"):
        x = INPUTS[key]
        for mode in ("NEAREST", "BILINEAR", "BICUBIC"):
            if mode == "BICUBIC" and key in ("u8", "batch_u8", "pil"):
                continue  # bicubic overshoots, and an integer image then wraps around
            for fill in (None, [3.0], [1.0, 2.0, 3.0]):
                if isinstance(x, np.ndarray):
                    a = F.elastic_transform(engine.from_numpy(x.copy()), ours_disp, getattr(T.InterpolationMode, mode),
                                            fill).numpy()
                    b = TF.elastic_transform(torch.from_numpy(x.copy()), disp, getattr(TT.InterpolationMode, mode),
                                             fill).numpy()
                else:
                    a = np.asarray(F.elastic_transform(x, ours_disp, getattr(T.InterpolationMode, mode), fill))
                    b = np.asarray(TF.elastic_transform(x, disp, getattr(TT.InterpolationMode, mode), fill))
                assert a.dtype == b.dtype and a.shape == b.shape
                assert_close(a, b, off_by_one=0.001 if mode == "BILINEAR" else 0.0)
    # float64 images are sampled in the grid's float32, as torchvision does
    x64 = F32.astype(np.float64)
    a = F.elastic_transform(engine.from_numpy(x64), ours_disp).numpy()
    b = TF.elastic_transform(torch.from_numpy(x64), disp).numpy()
    assert a.dtype == b.dtype == np.float64
    np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


def test_elastic_transform_function_errors():
    disp = engine.zeros(1, 29, 37, 2)
    x = engine.from_numpy(U8.copy())
    with pytest.raises(TypeError, match="Argument displacement should be a Tensor"):
        F.elastic_transform(x, np.zeros((1, 29, 37, 2)))
    with pytest.raises(ValueError, match=r"Argument displacement shape should be \(1, 29, 37, 2\)"):
        F.elastic_transform(x, engine.zeros(1, 37, 29, 2))
    with pytest.raises(TypeError, match="img should be PIL Image or Tensor"):
        F.elastic_transform(U8, disp)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.elastic_transform(x, disp, T.InterpolationMode.BOX)
    with pytest.warns(UserWarning, match="Argument interpolation should be of type InterpolationMode"):
        out = F.elastic_transform(x, disp, 0)
    np.testing.assert_array_equal(out.numpy(), U8)  # zero displacement: the identity


def test_elastic_transform_params_match_torchvision():
    for alpha, sigma, size in (([50.0, 50.0], [5.0, 5.0], [29, 37]), ([10.0, 30.0], [2.0, 3.5], [31, 41]),
                               ([5.0, 5.0], [0.0, 0.0], [7, 9])):
        engine.manual_seed(1)
        torch.manual_seed(1)
        a = T.ElasticTransform.get_params(alpha, sigma, size)
        b = TT.ElasticTransform.get_params(alpha, sigma, size)
        assert tuple(a.shape) == tuple(b.shape) == (1, size[0], size[1], 2) and a.dtype == engine.float32
        # the blur sums in another order than torch's conv2d: float32 rounding apart
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=2e-6, rtol=0)
        assert engine.rand(1).item() == torch.rand(1).item()


@pytest.mark.parametrize("kwargs", [{}, dict(alpha=(20.0, 60.0), sigma=(3.0, 4.0), fill=7,
                                             interpolation=T.InterpolationMode.NEAREST)], ids=["default", "custom"])
def test_elastic_transform_matches_torchvision(kwargs):
    ours, ref = pair("ElasticTransform", **kwargs)
    for key in ("u8", "f32", "batch_u8", "photo", "gray"):
        x = INPUTS[key]
        for seed in ((0, 4) if key == "u8" else (4,)):
            a, b = run_both(ours, ref, x, seed)
            # the displacement comes within float32 rounding of torchvision's (see above): a uint8 pixel on a .5
            # rounding boundary may end 1 apart
            assert_close(a, b, off_by_one=0.002)


def test_elastic_transform_repr_and_errors():
    for kwargs in ({}, dict(alpha=(1.0, 2.0), sigma=[3.0, 4.0], interpolation=2, fill=(1, 2, 3))):
        ours, ref = pair("ElasticTransform", **kwargs)
        assert repr(ours) == repr(ref)
        assert (ours.alpha, ours.sigma, ours.fill) == (ref.alpha, ref.sigma, ref.fill)
    bad = [dict(alpha=50), dict(alpha=(1.0, 2)), dict(sigma=5), dict(sigma=[1.0]), dict(alpha=[1.0, 2.0, 3.0]),
           dict(fill="white"), dict(fill=None)]
    for kwargs in bad:
        with pytest.raises((TypeError, ValueError)) as ref_error:
            TT.ElasticTransform(**kwargs)
        with pytest.raises(ref_error.type, match=str(ref_error.value).split(" Got")[0]):
            T.ElasticTransform(**kwargs)


# ---------------------------------------------------------------------------------------------- LinearTransformation


def test_linear_transformation_matches_torchvision():
    g = np.random.default_rng(1)
    d = 3 * 7 * 9
    matrix = g.standard_normal((d, d)).astype(np.float32) / 10
    mean = g.random(d, dtype=np.float32)
    ours = T.LinearTransformation(engine.from_numpy(matrix.copy()), engine.from_numpy(mean.copy()))
    ref = TT.LinearTransformation(torch.from_numpy(matrix.copy()), torch.from_numpy(mean.copy()))
    assert repr(ours) == repr(ref)
    for x in (g.random((3, 7, 9), dtype=np.float32), g.random((2, 3, 7, 9), dtype=np.float32),
              g.integers(0, 256, (3, 7, 9), dtype=np.uint8)):
        a, b = run_both(ours, ref, x, 0)
        np.testing.assert_allclose(a, b, atol=2e-4 if x.dtype == np.uint8 else 2e-5, rtol=1e-5)


def test_linear_transformation_errors():
    m = engine.zeros(6, 6)
    with pytest.raises(ValueError, match=r"transformation_matrix should be square. Got \(6, 5\) rectangular matrix."):
        T.LinearTransformation(engine.zeros(6, 5), engine.zeros(6))
    with pytest.raises(ValueError, match="mean_vector should have the same length 5 as any one of the dimensions"):
        T.LinearTransformation(m, engine.zeros(5))
    with pytest.raises(ValueError, match="Input tensors should have the same dtype."):
        T.LinearTransformation(m, engine.zeros(6, dtype=engine.float64))
    with pytest.raises(ValueError, match=r"incompatible shape.\[1 x 2 x 2\] != 6"):
        T.LinearTransformation(m, engine.zeros(6))(engine.zeros(1, 2, 2))
    out = T.LinearTransformation(engine.eye(6), engine.ones(6))(engine.ones(2, 1, 2, 3))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 1, 2, 3), np.float32))


# ---------------------------------------------------------------------------------------------- AugMix


def test_sample_dirichlet_matches_torch():
    for alpha in ([1.0, 1.0], [1.0] * 3, [0.3] * 4, [2.5, 0.7, 1.0], [0.05, 0.05]):
        for rows in (1, 2):
            for seed in range(4):
                engine.manual_seed(seed)
                torch.manual_seed(seed)
                a = A._sample_dirichlet(engine.tensor(alpha).expand(rows, -1)).numpy()
                b = torch._sample_dirichlet(torch.tensor(alpha).expand(rows, -1)).numpy()
                np.testing.assert_array_equal(a, b)
                # the normal cached by the last Box-Muller pair carries over as in torch
                assert engine.randn(1, dtype=engine.float64).item() == torch.randn(1, dtype=torch.float64).item()


def test_augmix_space_and_repr_match_torchvision():
    for all_ops in (True, False):
        ours, ref = pair("AugMix", all_ops=all_ops)
        space, ref_space = ours._augmentation_space(10, (29, 37)), ref._augmentation_space(10, (29, 37))
        assert list(space) == list(ref_space)
        for name, (magnitudes, signed) in ref_space.items():
            np.testing.assert_array_equal(np.asarray(space[name][0]), magnitudes.numpy())
            assert space[name][1] == signed
    for kwargs in ({}, dict(severity=5, mixture_width=2, chain_depth=3, alpha=0.5, all_ops=False,
                            interpolation=T.InterpolationMode.NEAREST, fill=[1, 2, 3])):
        ours, ref = pair("AugMix", **kwargs)
        assert repr(ours) == repr(ref)
    for severity in (0, 11):
        with pytest.raises(ValueError, match=rf"The severity must be between \[1, 10\]. Got {severity} instead."):
            T.AugMix(severity=severity)


AUGMIX = [{}, dict(severity=5, mixture_width=4, chain_depth=2, alpha=0.5, all_ops=False, fill=9)]


@pytest.mark.parametrize("kwargs", AUGMIX, ids=["default", "custom"])
def test_augmix_mixing_exact_with_torchvision_ops(kwargs, monkeypatch):
    """With torchvision's ops in the chains, AugMix's draws (Dirichlet, Beta, depths, ops, magnitudes, signs) and its
    float32 mixing give torchvision's image bit for bit."""
    def torchvision_op(img, op_name, magnitude, interpolation, fill):
        out = TA._apply_op(torch.from_numpy(img.numpy().copy()), op_name, magnitude, _tv(interpolation), fill)
        return engine.from_numpy(out.numpy().copy())

    monkeypatch.setattr(A, "_apply_op", torchvision_op)
    ours, ref = pair("AugMix", **kwargs)
    for key in ("u8", "batch_u8", "gray"):
        for seed in (0, 1):
            a, b = run_both(ours, ref, INPUTS[key], seed)
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kwargs", AUGMIX, ids=["default", "custom"])
def test_augmix_matches_torchvision(kwargs):
    ours, ref = pair("AugMix", **kwargs)
    for key, seed in (("u8", 0), ("u8", 3), ("batch_u8", 3), ("pil", 0), ("photo", 3), ("gray", 0)):
        a, b = run_both(ours, ref, INPUTS[key], seed)
        # the grids are torchvision's, but bilinear sampling (AugMix's default) rounds a little differently from
        # torch's fused multiply-adds, which can move a uint8 on a .5 boundary by 1
        assert_close(a, b, off_by_one=0.002)


# ---------------------------------------------------------------------------------------------- exports


def test_exports_follow_torchvision():
    assert TRANSFORMS.__all__ == TV_TRANSFORMS.__all__
    assert A.__all__ == TA.__all__
    for name in TV_TRANSFORMS.__all__ + TA.__all__:
        assert name in T.__all__ and hasattr(T, name)
    assert F.elastic_transform is T.functional.elastic_transform and "elastic_transform" in F.__all__
