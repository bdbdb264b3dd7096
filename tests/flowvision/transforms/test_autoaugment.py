"""AutoAugment, RandAugment and TrivialAugmentWide: torchvision's tables, seeding, ops, draws and images vs
torchvision."""
import os

import numpy as np
import pytest
import torch
import torchvision.transforms as TT
import torchvision.transforms.autoaugment as TA
from PIL import Image

import engine
import flowvision.transforms as T
import flowvision.transforms.autoaugment as A

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images")
with Image.open(os.path.join(DATA, "coffee.png")) as _im:
    IMG = _im.convert("RGB").crop((200, 100, 281, 171))  # 81x71


def test_policies_and_reprs_match_torchvision():
    for policy in T.AutoAugmentPolicy:
        ours = T.AutoAugment(policy)
        ref = TT.AutoAugment(getattr(TT.AutoAugmentPolicy, policy.name))
        assert ours.policies == ref.policies
        assert repr(ours) == repr(ref)
    assert repr(T.RandAugment(3, 5, fill=[1, 2, 3])) == repr(TT.RandAugment(3, 5, fill=[1, 2, 3]))
    assert repr(T.TrivialAugmentWide(11)) == repr(TT.TrivialAugmentWide(11))


def _space_equal(ours, ref):
    assert list(ours) == list(ref)
    for k in ref:
        np.testing.assert_allclose(np.asarray(ours[k][0], dtype=np.float64), ref[k][0].numpy().astype(np.float64),
                                   rtol=1e-6, atol=1e-6)
        assert ours[k][1] == ref[k][1]


def test_magnitude_bins_match_torchvision():
    for bins in (10, 31, 7):
        assert sorted(T.AutoAugment()._augmentation_space(bins, (71, 81))) == \
            sorted(TT.AutoAugment()._augmentation_space(bins, (71, 81)))
        _space_equal(T.RandAugment()._augmentation_space(bins, (71, 81)),
                     TT.RandAugment()._augmentation_space(bins, (71, 81)))
        _space_equal(T.TrivialAugmentWide()._augmentation_space(bins), TT.TrivialAugmentWide()._augmentation_space(bins))


OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate", "Brightness", "Color", "Contrast",
       "Sharpness", "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"]


@pytest.mark.parametrize("op", OPS)
def test_apply_op_matches_torchvision(op):
    magnitude = {"Posterize": 5.0, "Solarize": 120.0, "TranslateX": -7.0, "TranslateY": 9.0, "Rotate": -25.0}.get(op, 0.3)
    for fill in (None, [10, 20, 30]):
        ours = A._apply_op(IMG, op, magnitude, T.InterpolationMode.NEAREST, fill)
        ref = TA._apply_op(IMG, op, magnitude, TT.InterpolationMode.NEAREST, fill)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref))
    x = T.PILToTensor()(IMG)
    for fill in (None, [10.0, 20.0, 30.0]):  # nearest on uint8 tensors: torch's grids, so torch's pixels
        ours = A._apply_op(x, op, magnitude, T.InterpolationMode.NEAREST, fill)
        ref = TA._apply_op(torch.from_numpy(x.numpy().copy()), op, magnitude, TT.InterpolationMode.NEAREST, fill)
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    ours = A._apply_op(x, op, magnitude, T.InterpolationMode.BILINEAR, [5.0, 6.0, 7.0])
    ref = TA._apply_op(torch.from_numpy(x.numpy().copy()), op, magnitude, TT.InterpolationMode.BILINEAR,
                       [5.0, 6.0, 7.0])
    diff = np.abs(ours.numpy().astype(int) - ref.numpy().astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.01


@pytest.mark.parametrize("make", [lambda: T.AutoAugment(T.AutoAugmentPolicy.IMAGENET),
                                  lambda: T.AutoAugment(T.AutoAugmentPolicy.CIFAR10, fill=3),
                                  lambda: T.AutoAugment(T.AutoAugmentPolicy.SVHN),
                                  lambda: T.RandAugment(num_ops=3, magnitude=12),
                                  lambda: T.TrivialAugmentWide(fill=[1, 2, 3])], ids=["imagenet", "cifar10", "svhn",
                                                                                       "randaug", "trivial"])
def test_seeded_reproducible(make):
    t = make()
    x = T.PILToTensor()(IMG)
    for seed in (0, 1, 2):
        engine.manual_seed(seed)
        a = np.asarray(t(IMG))
        engine.manual_seed(seed)
        b = np.asarray(t(IMG))
        np.testing.assert_array_equal(a, b)
        assert a.shape == (71, 81, 3)
        engine.manual_seed(seed)
        c = t(x).numpy()
        engine.manual_seed(seed)
        np.testing.assert_array_equal(c, t(x).numpy())
        assert c.shape == (3, 71, 81) and c.dtype == np.uint8
    engine.manual_seed(0)
    outs = {np.asarray(t(IMG)).tobytes() for _ in range(12)}
    assert len(outs) > 1


def test_autoaugment_get_params_ranges():
    engine.manual_seed(0)
    seen = set()
    for _ in range(500):
        idx, probs, signs = T.AutoAugment.get_params(25)
        assert 0 <= idx < 25 and ((0 <= probs) & (probs < 1)).all() and set(signs.tolist()) <= {0, 1}
        seen.add(idx)
    assert len(seen) == 25


def test_grayscale_input():
    gray = IMG.convert("L")
    engine.manual_seed(0)
    for t in (T.AutoAugment(), T.RandAugment(), T.TrivialAugmentWide()):
        for _ in range(5):
            assert t(gray).mode == "L"


TV_MAKERS = {"imagenet": lambda M: M.AutoAugment(M.AutoAugmentPolicy.IMAGENET),
             "cifar10": lambda M: M.AutoAugment(M.AutoAugmentPolicy.CIFAR10, fill=[3, 4, 5]),
             "svhn": lambda M: M.AutoAugment(M.AutoAugmentPolicy.SVHN),
             "randaug": lambda M: M.RandAugment(num_ops=3, magnitude=12),
             "trivial": lambda M: M.TrivialAugmentWide(fill=[1, 2, 3])}


def _both(ours, ref, x, y, seed):
    """ours(x) after engine.manual_seed(seed), ref(y) after torch.manual_seed(seed); the generators must end at the
    same place."""
    engine.manual_seed(seed)
    a = ours(x)
    following = engine.rand(1).item()
    torch.manual_seed(seed)
    b = ref(y)
    assert following == torch.rand(1).item(), "the transforms drew differently"
    return a, b


@pytest.mark.parametrize("name", list(TV_MAKERS))
def test_same_seed_gives_torchvisions_ops_and_images(name, monkeypatch):
    applied = {"ours": [], "ref": []}

    def recording(module, key):
        apply_op = module._apply_op

        def record(img, op_name, magnitude, interpolation, fill):
            applied[key].append((op_name, magnitude))
            return apply_op(img, op_name, magnitude, interpolation=interpolation, fill=fill)
        monkeypatch.setattr(module, "_apply_op", record)
    recording(A, "ours")
    recording(TA, "ref")
    ours, ref = TV_MAKERS[name](T), TV_MAKERS[name](TT)
    x = T.PILToTensor()(IMG)
    for seed in range(10):
        a, b = _both(ours, ref, IMG, IMG, seed)
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        a, b = _both(ours, ref, x, torch.from_numpy(x.numpy().copy()), seed)
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # nearest sampling on torch's grids
    assert applied["ours"] == applied["ref"] and applied["ours"]  # the same ops at the same magnitudes


def test_autoaugment_get_params_match_torchvision():
    for seed in range(10):
        engine.manual_seed(seed)
        torch.manual_seed(seed)
        idx, probs, signs = T.AutoAugment.get_params(25)
        ref_idx, ref_probs, ref_signs = TT.AutoAugment.get_params(25)
        assert idx == ref_idx and probs.tolist() == ref_probs.tolist() and signs.tolist() == ref_signs.tolist()
        assert engine.rand(1).item() == torch.rand(1).item()
