"""flowvision.transforms classes against torchvision.transforms: pixels, fixed params, seeding, ranges, reprs."""
import os
import random

import numpy as np
import pytest
import torch
import torchvision.transforms as TT
from PIL import Image

import engine
import flowvision.transforms as T
import flowvision.transforms.functional as F

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images")
with Image.open(os.path.join(DATA, "astronaut.png")) as _im:
    ASTRO = _im.convert("RGB")
with Image.open(os.path.join(DATA, "rocket.jpg")) as _im:
    ROCKET = _im.convert("RGB")
SMALL = ROCKET.crop((100, 200, 173, 259))  # 73x59


def pil_equal(ours, ref, tol=0):
    assert ours.mode == ref.mode and ours.size == ref.size
    diff = np.abs(np.asarray(ours, dtype=np.int64) - np.asarray(ref, dtype=np.int64))
    assert diff.max(initial=0) <= tol


def tensor_equal(ours, ref, atol=1e-6):
    a, b = ours.numpy(), ref.numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), atol=atol, rtol=0)


def pair(name, *args, **kwargs):
    """The same transform from flowvision and from torchvision (InterpolationMode translated)."""
    conv = {k: (getattr(TT.InterpolationMode, v.name) if isinstance(v, T.InterpolationMode) else v)
            for k, v in kwargs.items()}
    return getattr(T, name)(*args, **kwargs), getattr(TT, name)(*args, **conv)


@pytest.mark.parametrize("name,args,kwargs", [
    ("Resize", (200,), {}), ("Resize", ((120, 90),), {"interpolation": T.InterpolationMode.NEAREST}),
    ("Resize", (150,), {"interpolation": T.InterpolationMode.BICUBIC, "max_size": 180}),
    ("Resize", ([64],), {"interpolation": T.InterpolationMode.BILINEAR}),
    ("CenterCrop", (224,), {}), ("CenterCrop", ((600, 100),), {}), ("Pad", ((3, 8),), {"padding_mode": "reflect"}),
    ("Pad", (5,), {"fill": (10, 20, 30)}), ("Pad", ([1, 2, 3, 4],), {"padding_mode": "symmetric"}),
    ("Pad", (4,), {"padding_mode": "edge"}), ("Grayscale", (), {}), ("Grayscale", (3,), {}),
    ("FiveCrop", (100,), {}), ("TenCrop", ((100, 80),), {"vertical_flip": True}),
])
def test_deterministic_pil(name, args, kwargs):
    ours, ref = pair(name, *args, **kwargs)
    assert repr(ours) == repr(ref)
    a, b = ours(ASTRO), ref(ASTRO)
    for x, y in (zip(a, b) if isinstance(a, tuple) else [(a, b)]):
        pil_equal(x, y)


def test_compose_to_tensor_normalize():
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    ours = T.Compose([T.Resize(64), T.CenterCrop(56), T.ToTensor(), T.Normalize(mean, std)])
    ref = TT.Compose([TT.Resize(64), TT.CenterCrop(56), TT.ToTensor(), TT.Normalize(mean, std)])
    assert repr(ours) == repr(ref)
    tensor_equal(ours(ROCKET), ref(ROCKET), atol=1e-5)
    x = T.ToTensor()(SMALL)
    out = T.Normalize(mean, std, inplace=True)(x)
    assert out is x
    tensor_equal(out, TT.Normalize(mean, std)(TT.ToTensor()(SMALL)), atol=1e-6)


def test_conversion_classes():
    for mode in ("L", "RGB", "RGBA"):
        img = SMALL.convert(mode)
        tensor_equal(T.PILToTensor()(img), TT.PILToTensor()(img))
        pil_equal(T.ToPILImage()(T.ToTensor()(img)), TT.ToPILImage()(TT.ToTensor()(img)))
        pil_equal(T.ToPILImage()(T.PILToTensor()(img)), img)
    u8 = T.PILToTensor()(SMALL)
    tensor_equal(T.ConvertImageDtype(engine.float32)(u8), TT.ConvertImageDtype(torch.float32)(TT.PILToTensor()(SMALL)))
    for name in ("ToTensor", "PILToTensor", "ToPILImage"):
        assert repr(getattr(T, name)()) == repr(getattr(TT, name)())
    assert repr(T.ToPILImage("RGB")) == repr(TT.ToPILImage("RGB"))


def test_reprs():
    cases = [("RandomCrop", (5,), {}), ("RandomCrop", ((5, 6),), dict(padding=2, pad_if_needed=True, fill=1)),
             ("RandomResizedCrop", (8,), {}), ("RandomResizedCrop", ((8, 9),), dict(scale=(0.5, 1), ratio=(1, 2))),
             ("RandomHorizontalFlip", (), {}), ("RandomVerticalFlip", (0.3,), {}), ("RandomRotation", (10,), {}),
             ("RandomRotation", ((5, 20),), dict(expand=True, center=(1, 2), fill=3)),
             ("RandomAffine", (10,), {}), ("RandomAffine", ((1, 5),), dict(translate=(0.1, 0.2), scale=(0.5, 1.5),
                                                                          shear=10, fill=1, center=(2, 3))),
             ("RandomAffine", (0,), dict(shear=(1, 2, 3, 4))), ("ColorJitter", (), {}),
             ("ColorJitter", (0.1, 0.2, 0.3, 0.1), {}), ("ColorJitter", ((0.5, 1.5),), dict(hue=(-0.2, 0.1))),
             ("RandomGrayscale", (), {}), ("GaussianBlur", (3,), {}), ("GaussianBlur", ((3, 5),), dict(sigma=(1, 2))),
             ("RandomErasing", (), {}), ("RandomErasing", (), dict(p=1, scale=(0.1, 0.2), value=3, inplace=True))]
    for name, args, kwargs in cases:
        ours, ref = pair(name, *args, **kwargs)
        assert repr(ours) == repr(ref)
    assert repr(T.RandomApply([T.Grayscale()], p=0.3)) == repr(TT.RandomApply([TT.Grayscale()], p=0.3))
    assert repr(T.RandomChoice([T.Grayscale(), T.CenterCrop(3)])) == \
        repr(TT.RandomChoice([TT.Grayscale(), TT.CenterCrop(3)]))
    assert repr(T.RandomOrder([T.Grayscale()])) == repr(TT.RandomOrder([TT.Grayscale()]))
    assert repr(T.Lambda(abs)) == repr(TT.Lambda(abs))


def test_errors():
    with pytest.raises(ValueError, match="If size is a sequence, it should have 1 or 2 values"):
        T.Resize((1, 2, 3))
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple"):
        T.Pad((1, 2, 3))
    with pytest.raises(ValueError, match="Required crop size \\(100, 100\\) is larger than input image size"):
        T.RandomCrop(100)(SMALL)
    with pytest.raises(ValueError, match="brightness values should be between"):
        T.ColorJitter(brightness=(-1, 2))
    with pytest.raises(ValueError, match="Kernel size value should be an odd and positive number"):
        T.GaussianBlur(4)
    with pytest.raises(TypeError, match="Argument lambd should be callable"):
        T.Lambda(3)
    with pytest.raises(ValueError, match="If value is str, it should be 'random'"):
        T.RandomErasing(value="noise")


# ---------------------------------------------------------------------------------------------- random transforms


def seeded(transform, img, seed=7):
    engine.manual_seed(seed)
    random.seed(seed)  # RandomOrder and RandomChoice draw from Python's random, as torchvision's do
    return transform(img)


RANDOM = [T.RandomCrop(40, padding=4, padding_mode="reflect"), T.RandomResizedCrop(32),
          T.RandomHorizontalFlip(), T.RandomVerticalFlip(), T.RandomRotation(30, fill=(1, 2, 3)),
          T.RandomAffine(20, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=(-5, 5, -3, 3)),
          T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.5), T.GaussianBlur(5),
          T.RandomApply([T.ColorJitter(0.5)], p=0.5), T.RandomChoice([T.Grayscale(3), T.RandomHorizontalFlip(1)]),
          T.RandomOrder([T.RandomVerticalFlip(), T.ColorJitter(hue=0.2)])]


@pytest.mark.parametrize("transform", RANDOM, ids=lambda t: type(t).__name__)
def test_seeded_reproducible_pil(transform):
    outs = [np.asarray(seeded(transform, SMALL, seed)) for seed in (3, 3, 4, 5, 6)]
    np.testing.assert_array_equal(outs[0], outs[1])
    assert any(o.shape != outs[0].shape or not np.array_equal(o, outs[0]) for o in outs[2:])


@pytest.mark.parametrize("transform", RANDOM + [T.RandomErasing(p=1.0, value="random")], ids=lambda t: type(t).__name__)
def test_seeded_reproducible_tensor(transform):
    x = T.ToTensor()(SMALL)
    a, b = seeded(transform, x, 11), seeded(transform, x, 11)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_random_crop_params_and_fixed_equivalent():
    t = T.RandomCrop((30, 40), padding=(3, 5), pad_if_needed=True, fill=9)
    padded = F.pad(SMALL, (3, 5), fill=9)
    for _ in range(200):
        i, j, h, w = T.RandomCrop.get_params(padded, (30, 40))
        assert (h, w) == (30, 40) and 0 <= i <= padded.height - 30 and 0 <= j <= padded.width - 40
    engine.manual_seed(0)
    ours = t(SMALL)
    engine.manual_seed(0)
    i, j, h, w = T.RandomCrop.get_params(padded, (30, 40))
    pil_equal(ours, TT.functional.crop(TT.functional.pad(SMALL, (3, 5), fill=9), i, j, h, w))
    big = T.RandomCrop(80, pad_if_needed=True, padding_mode="edge")(SMALL)
    assert big.size == (80, 80)


def test_random_resized_crop_params():
    scale, ratio = (0.2, 0.9), (0.5, 2.0)
    area = ASTRO.width * ASTRO.height
    for _ in range(300):
        i, j, h, w = T.RandomResizedCrop.get_params(ASTRO, scale, ratio)
        assert 0 <= i <= ASTRO.height - h and 0 <= j <= ASTRO.width - w
        assert scale[0] * area * 0.9 <= h * w <= scale[1] * area * 1.1
        assert ratio[0] * 0.9 <= w / h <= ratio[1] * 1.1
    # impossible ratios fall back to the centre crop of the clamped ratio
    width, height = ROCKET.size
    assert T.RandomResizedCrop.get_params(ROCKET, (1.0, 1.0), (3.0, 4.0)) == (
        (height - round(width / 3.0)) // 2, 0, round(width / 3.0), width)
    t = T.RandomResizedCrop(48, scale=scale, ratio=ratio, interpolation=T.InterpolationMode.BICUBIC)
    engine.manual_seed(1)
    ours = t(ASTRO)
    engine.manual_seed(1)
    i, j, h, w = T.RandomResizedCrop.get_params(ASTRO, scale, ratio)
    pil_equal(ours, TT.functional.resized_crop(ASTRO, i, j, h, w, [48, 48], TT.InterpolationMode.BICUBIC))


def test_flips_probability():
    for cls, fn in ((T.RandomHorizontalFlip, TT.functional.hflip), (T.RandomVerticalFlip, TT.functional.vflip)):
        pil_equal(cls(p=1.0)(SMALL), fn(SMALL))
        pil_equal(cls(p=0.0)(SMALL), SMALL)
        engine.manual_seed(0)
        flipped = sum(np.array_equal(np.asarray(cls()(SMALL)), np.asarray(fn(SMALL))) for _ in range(200))
        assert 60 < flipped < 140
    assert T.RandomGrayscale(p=1.0)(SMALL).getbands() == ("R", "G", "B")
    pil_equal(T.RandomGrayscale(p=1.0)(SMALL), TT.Grayscale(3)(SMALL))
    pil_equal(T.RandomApply([T.Grayscale(3)], p=0.0)(SMALL), SMALL)
    pil_equal(T.RandomApply([T.Grayscale(3)], p=1.0)(SMALL), TT.Grayscale(3)(SMALL))
    x = T.ToTensor()(SMALL)
    assert T.RandomErasing(p=0.0)(x) is x


def test_rotation_affine_params_and_fixed_equivalent():
    for _ in range(200):
        assert 5.0 <= T.RandomRotation.get_params([5.0, 20.0]) <= 20.0
        angle, (tx, ty), scale, (sx, sy) = T.RandomAffine.get_params([-10.0, 10.0], (0.1, 0.2), (0.8, 1.2),
                                                                     [-5.0, 5.0, -3.0, 3.0], [73, 59])
        assert -10 <= angle <= 10 and abs(tx) <= 7 and abs(ty) <= 12 and 0.8 <= scale <= 1.2
        assert -5 <= sx <= 5 and -3 <= sy <= 3 and isinstance(tx, int)
    t = T.RandomRotation((5, 20), interpolation=T.InterpolationMode.BILINEAR, expand=True, fill=4)
    engine.manual_seed(2)
    ours = t(ASTRO)
    engine.manual_seed(2)
    angle = T.RandomRotation.get_params(t.degrees)
    pil_equal(ours, TT.functional.rotate(ASTRO, angle, TT.InterpolationMode.BILINEAR, expand=True, fill=4))
    t = T.RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=8, fill=7)
    engine.manual_seed(3)
    ours = t(ASTRO)
    engine.manual_seed(3)
    params = T.RandomAffine.get_params(t.degrees, t.translate, t.scale, t.shear, [512, 512])
    pil_equal(ours, TT.functional.affine(ASTRO, *params, fill=7))


def test_color_jitter_params_and_fixed_equivalent():
    t = T.ColorJitter(0.3, (0.5, 1.5), 0.2, 0.1)
    for _ in range(200):
        order, b, c, s, h = T.ColorJitter.get_params(t.brightness, t.contrast, t.saturation, t.hue)
        assert sorted(order.tolist()) == [0, 1, 2, 3]
        assert 0.7 <= b <= 1.3 and 0.5 <= c <= 1.5 and 0.8 <= s <= 1.2 and -0.1 <= h <= 0.1
    assert T.ColorJitter.get_params(None, None, None, None)[1:] == (None, None, None, None)
    engine.manual_seed(4)
    ours = t(SMALL)
    engine.manual_seed(4)
    order, b, c, s, h = T.ColorJitter.get_params(t.brightness, t.contrast, t.saturation, t.hue)
    ref = SMALL
    for k in order:
        fn, v = [(TT.functional.adjust_brightness, b), (TT.functional.adjust_contrast, c),
                 (TT.functional.adjust_saturation, s), (TT.functional.adjust_hue, h)][k]
        ref = fn(ref, v)
    pil_equal(ours, ref)


def test_gaussian_blur_and_erasing_params():
    for _ in range(200):
        assert 0.1 <= T.GaussianBlur.get_params(0.1, 2.0) <= 2.0
    engine.manual_seed(5)
    ours = T.GaussianBlur(5, sigma=(0.5, 1.5))(SMALL)
    engine.manual_seed(5)
    sigma = T.GaussianBlur.get_params(0.5, 1.5)
    pil_equal(ours, TT.functional.gaussian_blur(SMALL, [5, 5], [sigma, sigma]), tol=1)
    x = T.ToTensor()(SMALL)
    for _ in range(100):
        i, j, h, w, v = T.RandomErasing.get_params(x, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=[0.5])
        assert 0 <= i and i + h <= 59 and 0 <= j and j + w <= 73
        assert 0.02 * 59 * 73 * 0.8 <= h * w <= 0.33 * 59 * 73 * 1.2 or (h, w) == (59, 73)
    engine.manual_seed(6)
    ours = T.RandomErasing(p=1.0, value=(0.1, 0.2, 0.3))(x)
    engine.manual_seed(6)
    engine.rand(1)  # the p draw
    i, j, h, w, v = T.RandomErasing.get_params(x, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=[0.1, 0.2, 0.3])
    tensor_equal(ours, TT.functional.erase(torch.from_numpy(x.numpy().copy()), i, j, h, w,
                                           torch.tensor([0.1, 0.2, 0.3])[:, None, None]))
    with pytest.raises(ValueError, match="If value is a sequence, it should have either a single value or 3"):
        T.RandomErasing(p=1.0, value=(1, 2))(x)


def test_random_choice_weights():
    random.seed(0)
    t = T.RandomChoice([T.Lambda(lambda x: 0), T.Lambda(lambda x: 1)], p=[1, 3])
    picks = [t(None) for _ in range(400)]
    assert 250 < sum(picks) < 350
    random.seed(0)
    order = T.RandomOrder([T.Lambda(lambda x: x + "a"), T.Lambda(lambda x: x + "b")])
    assert {order("") for _ in range(50)} == {"ab", "ba"}


# ----------------------------------------------------------------- the same seed gives torchvision's draws and images


SEEDS = range(10)
U8 = T.PILToTensor()(SMALL)  # uint8 3x59x73


def both_seeded(ours, ref, seed):
    """ours() after engine.manual_seed(seed) and ref() after torch.manual_seed(seed), Python's random seeded alike
    on both sides; the generators must end where torchvision's does."""
    engine.manual_seed(seed)
    random.seed(seed)
    a = ours()
    engine_next, random_next = engine.rand(1).item(), random.random()
    torch.manual_seed(seed)
    random.seed(seed)
    b = ref()
    assert (engine_next, random_next) == (torch.rand(1).item(), random.random()), "the transforms drew differently"
    return a, b


def _plain(params):
    return [p.tolist() if hasattr(p, "tolist") else p for p in params]


def test_get_params_match_torchvision():
    padded = F.pad(SMALL, (3, 5), fill=9)
    x = T.ToTensor()(SMALL)
    xt = torch.from_numpy(x.numpy().copy())
    cases = [
        (lambda: T.RandomCrop.get_params(padded, (30, 40)), lambda: TT.RandomCrop.get_params(padded, (30, 40))),
        (lambda: T.RandomResizedCrop.get_params(ASTRO, (0.08, 1.0), (3 / 4, 4 / 3)),
         lambda: TT.RandomResizedCrop.get_params(ASTRO, (0.08, 1.0), (3 / 4, 4 / 3))),
        (lambda: T.RandomResizedCrop.get_params(SMALL, (0.5, 1.0), (0.2, 5.0)),  # often out of bounds: retries
         lambda: TT.RandomResizedCrop.get_params(SMALL, (0.5, 1.0), (0.2, 5.0))),
        (lambda: T.RandomResizedCrop.get_params(ROCKET, (1.0, 1.0), (3.0, 4.0)),  # the centre-crop fallback
         lambda: TT.RandomResizedCrop.get_params(ROCKET, (1.0, 1.0), (3.0, 4.0))),
        (lambda: T.ColorJitter.get_params((0.7, 1.3), None, (0.2, 1.9), (-0.1, 0.2)),
         lambda: TT.ColorJitter.get_params((0.7, 1.3), None, (0.2, 1.9), (-0.1, 0.2))),
        (lambda: T.RandomRotation.get_params([-33.0, 20.0]), lambda: TT.RandomRotation.get_params([-33.0, 20.0])),
        (lambda: T.RandomAffine.get_params([-10.0, 10.0], (0.1, 0.3), (0.8, 1.2), [-5.0, 5.0, -3.0, 3.0], [73, 59]),
         lambda: TT.RandomAffine.get_params([-10.0, 10.0], (0.1, 0.3), (0.8, 1.2), [-5.0, 5.0, -3.0, 3.0], [73, 59])),
        (lambda: T.RandomAffine.get_params([0.0, 90.0], None, None, [-7.0, 7.0], [73, 59]),
         lambda: TT.RandomAffine.get_params([0.0, 90.0], None, None, [-7.0, 7.0], [73, 59])),
        (lambda: T.GaussianBlur.get_params(0.1, 2.0), lambda: TT.GaussianBlur.get_params(0.1, 2.0)),
        (lambda: T.RandomErasing.get_params(x, (0.02, 0.33), (0.3, 3.3), value=[0.5]),
         lambda: TT.RandomErasing.get_params(xt, (0.02, 0.33), (0.3, 3.3), value=[0.5])),
        (lambda: T.RandomErasing.get_params(x, (0.02, 0.33), (0.3, 3.3), value=None),
         lambda: TT.RandomErasing.get_params(xt, (0.02, 0.33), (0.3, 3.3), value=None)),
        (lambda: T.AutoAugment.get_params(25), lambda: TT.AutoAugment.get_params(25)),
    ]
    for ours, ref in cases:
        for seed in SEEDS:
            a, b = both_seeded(ours, ref, seed)
            a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
            assert _plain(a) == _plain(b), (seed, a, b)


# (name, args, kwargs, PIL tolerance, uint8 tensor tolerance): the ops' own tolerances (bilinear resampling of
# uint8 tensors and the Gaussian blur's sums may round 1 apart; test_functional), the draws are always equal
RANDOM_PAIRS = [
    ("RandomCrop", (40,), {"padding": 4, "padding_mode": "reflect"}, 0, 0),
    ("RandomCrop", ((50, 70),), {"padding": (3, 5), "pad_if_needed": True, "fill": 9}, 0, 0),
    ("RandomResizedCrop", (32,), {"interpolation": T.InterpolationMode.NEAREST}, 0, 0),
    ("RandomResizedCrop", ((20, 30),), {"scale": (0.3, 1.0), "ratio": (0.5, 2.0)}, 0, 1),
    ("RandomHorizontalFlip", (), {}, 0, 0), ("RandomVerticalFlip", (0.7,), {}, 0, 0),
    ("RandomRotation", (30,), {"fill": (1, 2, 3)}, 0, 0),
    ("RandomRotation", ((-40, 10),), {"expand": True}, 0, 0),
    ("RandomAffine", (20,), {"translate": (0.1, 0.2), "scale": (0.8, 1.2), "shear": (-5, 5, -3, 3)}, 0, 0),
    ("RandomAffine", ((-30, 30),), {"shear": 10, "fill": 7}, 0, 0),
    ("ColorJitter", (0.4, 0.4, 0.4, 0.1), {}, 0, 0), ("ColorJitter", (0, (0.5, 1.5), 0.3), {}, 0, 0),
    ("RandomGrayscale", (0.7,), {}, 0, 0), ("GaussianBlur", (5,), {}, 1, 1),
    ("GaussianBlur", ((3, 7), (0.5, 3.0)), {}, 1, 1),
]


@pytest.mark.parametrize("name,args,kwargs,pil_tol,tol", RANDOM_PAIRS, ids=[c[0] for c in RANDOM_PAIRS])
def test_random_transforms_match_torchvision(name, args, kwargs, pil_tol, tol):
    ours, ref = pair(name, *args, **kwargs)
    for seed in SEEDS:
        a, b = both_seeded(lambda: ours(SMALL), lambda: ref(SMALL), seed)
        pil_equal(a, b, pil_tol)
        a, b = both_seeded(lambda: ours(U8), lambda: ref(torch.from_numpy(U8.numpy().copy())), seed)
        tensor_equal(a, b, atol=tol)


def test_random_containers_and_erasing_match_torchvision():
    def twins(make):
        return make(T), make(TT)
    makers = [lambda M: M.RandomApply([M.ColorJitter(0.5), M.RandomHorizontalFlip()], p=0.6),
              lambda M: M.RandomChoice([M.Grayscale(3), M.RandomHorizontalFlip(1), M.RandomCrop(30)], p=[1, 2, 3]),
              lambda M: M.RandomChoice([M.RandomVerticalFlip(), M.CenterCrop(40)]),
              lambda M: M.RandomOrder([M.RandomVerticalFlip(), M.ColorJitter(hue=0.2), M.RandomCrop(45)])]
    for make in makers:
        ours, ref = twins(make)
        for seed in SEEDS:
            a, b = both_seeded(lambda: ours(SMALL), lambda: ref(SMALL), seed)
            pil_equal(a, b)
    x = T.ToTensor()(SMALL)
    for kwargs in ({"p": 0.7, "value": "random"}, {"p": 0.9, "value": (0.1, 0.2, 0.3), "scale": (0.1, 0.5)},
                   {"p": 1.0, "value": 3, "ratio": (0.1, 10.0)}):
        ours, ref = T.RandomErasing(**kwargs), TT.RandomErasing(**kwargs)
        for seed in SEEDS:
            a, b = both_seeded(lambda: ours(x), lambda: ref(torch.from_numpy(x.numpy().copy())), seed)
            tensor_equal(a, b, atol=0)
            a, b = both_seeded(lambda: ours(U8), lambda: ref(torch.from_numpy(U8.numpy().copy())), seed)
            tensor_equal(a, b, atol=0)
