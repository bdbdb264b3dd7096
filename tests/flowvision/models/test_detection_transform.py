"""GeneralizedRCNNTransform against torchvision's on real photos: normalise, resize, batch, postprocess."""
import numpy as np
import pytest
import torch
import detection_parity
from torchvision.models.detection import transform as tv_transform

import engine
from flowvision.models.detection import transform as our_transform
from flowvision.models.detection.image_list import ImageList
from op_check import assert_close

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture(scope="module")
def photos():
    return detection_parity.photos()


def make_targets(photos, seed=0):
    """Random valid boxes, binary masks and keypoints per photo."""
    rng = np.random.default_rng(seed)
    targets = []
    for img in photos:
        h, w = img.shape[1:]
        xy = rng.uniform(0, [w / 2, h / 2], size=(3, 2))
        wh = rng.uniform(5, [w / 2, h / 2], size=(3, 2))
        boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
        masks = (rng.random((3, h, w)) > 0.5).astype(np.uint8)
        kps = np.concatenate([rng.uniform(0, [w, h], (3, 5, 2)), np.ones((3, 5, 1))], 2).astype(np.float32)
        targets.append({"boxes": boxes, "labels": np.array([1, 2, 3]), "masks": masks, "keypoints": kps})
    return targets


def both(min_size=320, max_size=512, **kwargs):
    """Our transform and torchvision's with the same arguments."""
    return (our_transform.GeneralizedRCNNTransform(min_size, max_size, MEAN, STD, **kwargs),
            tv_transform.GeneralizedRCNNTransform(min_size, max_size, MEAN, STD, **kwargs))


def run_both(ours, ref, photos, targets=None):
    """Apply both transforms to the same numpy images/targets; return (our result, torch result)."""
    e_t = None if targets is None else [{k: engine.from_numpy(v) for k, v in t.items()} for t in targets]
    t_t = None if targets is None else [{k: torch.from_numpy(v) for k, v in t.items()} for t in targets]
    out = ours([engine.from_numpy(p) for p in photos], e_t)
    with torch.no_grad():
        exp = ref([torch.from_numpy(p) for p in photos], t_t)
    return out, exp


def compare(out, exp):
    """Batched images, image sizes and every target field agree."""
    (il, tgts), (tl, ttgts) = out, exp
    assert isinstance(il, ImageList)
    assert tuple(il.tensors.shape) == tuple(tl.tensors.shape)
    assert_close(il.tensors.numpy(), tl.tensors.numpy(), 1e-5, "images")
    assert il.image_sizes == [tuple(int(v) for v in s) for s in tl.image_sizes]
    if ttgts is None:
        assert tgts is None
        return
    for t, r in zip(tgts, ttgts):
        assert set(t) == set(r)
        for k in r:
            assert str(t[k].dtype).split(".")[-1] == str(r[k].dtype).split(".")[-1], k
            np.testing.assert_allclose(t[k].numpy(), r[k].numpy(), rtol=1e-6, err_msg=k)


def test_eval_matches_torchvision(photos):
    ours, ref = both()
    ours.eval(), ref.eval()
    compare(*run_both(ours, ref, photos))
    compare(*run_both(ours, ref, photos, make_targets(photos)))


def test_size_divisible_and_max_size_bound(photos):
    ours, ref = both(min_size=200, max_size=250, size_divisible=7)
    ours.eval(), ref.eval()
    out, exp = run_both(ours, ref, photos[::-1], make_targets(photos[::-1], 1))
    compare(out, exp)
    assert out[0].tensors.shape[-1] % 7 == 0 and out[0].tensors.shape[-2] % 7 == 0


def test_train_min_size_choice(photos, monkeypatch):
    ours, ref = both(min_size=(256, 288, 320))
    ours.train(), ref.train()
    monkeypatch.setattr(our_transform.GeneralizedRCNNTransform, "torch_choice", lambda self, k: k[1])
    monkeypatch.setattr(tv_transform.GeneralizedRCNNTransform, "torch_choice", lambda self, k: k[1])
    compare(*run_both(ours, ref, photos, make_targets(photos)))


def test_torch_choice_draws_every_size_and_is_seeded():
    ours, _ = both(min_size=(256, 288, 320))
    engine.manual_seed(0)
    first = [ours.torch_choice(ours.min_size) for _ in range(30)]
    engine.manual_seed(0)
    again = [ours.torch_choice(ours.min_size) for _ in range(30)]
    assert first == again and set(first) == {256, 288, 320}


def test_fixed_size_and_skip_resize(photos):
    ours, ref = both(fixed_size=(160, 120))
    ours.eval(), ref.eval()
    out, exp = run_both(ours, ref, photos, make_targets(photos))
    compare(out, exp)
    assert out[0].image_sizes == [(120, 160), (120, 160)]
    ours, ref = both(_skip_resize=True)
    ours.train(), ref.train()
    compare(*run_both(ours, ref, [p[:, :64, :80] for p in photos]))


def test_float64_images_and_gradient(photos):
    ours, ref = both(min_size=96, max_size=128)
    ours.eval(), ref.eval()
    imgs = [p[:, :50, :70].astype(np.float64) for p in photos]
    e = [engine.from_numpy(p).requires_grad_() for p in imgs]
    t = [torch.from_numpy(p).requires_grad_() for p in imgs]
    out, exp = ours(e)[0].tensors, ref(t)[0].tensors
    assert out.dtype == engine.float64
    assert_close(out.detach().numpy(), exp.detach().numpy(), 1e-10)
    g = np.random.default_rng(0).standard_normal(tuple(exp.shape))
    out.backward(engine.from_numpy(g))
    exp.backward(torch.from_numpy(g))
    for a, b in zip(e, t):
        assert_close(a.grad.numpy(), b.grad.numpy(), 1e-10, "image grad")


def test_postprocess_boxes_and_keypoints():
    ours, ref = both()
    ours.eval(), ref.eval()
    rng = np.random.default_rng(3)
    preds = [{"boxes": rng.uniform(0, 300, (4, 4)).astype(np.float32),
              "keypoints": rng.uniform(0, 300, (4, 17, 3)).astype(np.float32)} for _ in range(2)]
    shapes, originals = [(320, 481), (320, 479)], [(300, 451), (427, 640)]
    out = ours.postprocess([{k: engine.from_numpy(v) for k, v in p.items()} for p in preds], shapes, originals)
    exp = ref.postprocess([{k: torch.from_numpy(v) for k, v in p.items()} for p in preds], shapes, originals)
    for o, r in zip(out, exp):
        for k in r:
            np.testing.assert_allclose(o[k].numpy(), r[k].numpy(), rtol=1e-6, err_msg=k)
    ours.train()
    assert ours.postprocess(preds, shapes, originals) is preds


def test_postprocess_masks():
    masks_mod = pytest.importorskip("flowvision.models.detection._masks")
    if not hasattr(masks_mod, "paste_masks_in_image"):
        pytest.skip("paste_masks_in_image not written yet")
    ours, ref = both()
    ours.eval(), ref.eval()
    rng = np.random.default_rng(4)
    boxes = np.array([[10, 20, 100, 90], [0, 0, 60, 200]], np.float32)
    masks = rng.random((2, 1, 28, 28)).astype(np.float32)
    out = ours.postprocess([{"boxes": engine.from_numpy(boxes), "masks": engine.from_numpy(masks)}],
                           [(320, 481)], [(300, 451)])
    exp = ref.postprocess([{"boxes": torch.from_numpy(boxes), "masks": torch.from_numpy(masks)}],
                          [(320, 481)], [(300, 451)])
    assert_close(out[0]["masks"].numpy(), exp[0]["masks"].numpy(), 1e-5, "masks")


def test_bad_inputs(photos):
    ours, _ = both()
    with pytest.raises(ValueError, match=r"list of 3d tensors of shape \[C, H, W\]"):
        ours([engine.from_numpy(photos[0][None])])
    with pytest.raises(TypeError, match="Expected input images to be of floating type"):
        ours([engine.from_numpy((photos[0] * 255).astype(np.uint8))])


def test_repr():
    ours, ref = both(min_size=(300, 320))
    assert repr(ours) == repr(ref)


def test_empty_targets(photos):
    ours, ref = both()
    ours.train(), ref.train()
    h, w = photos[0].shape[1:]
    empty = [{"boxes": np.zeros((0, 4), np.float32), "labels": np.zeros((0,), np.int64),
              "masks": np.zeros((0, h, w), np.uint8), "keypoints": np.zeros((0, 17, 3), np.float32)}]
    compare(*run_both(ours, ref, photos[:1], empty))
