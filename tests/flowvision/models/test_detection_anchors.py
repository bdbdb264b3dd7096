"""AnchorGenerator and DefaultBoxGenerator against torchvision's on several feature-map geometries."""
import numpy as np
import pytest
import torch
from torchvision.models.detection import anchor_utils as tv_anchor
from torchvision.models.detection.image_list import ImageList as TvImageList

import engine
from flowvision.models.detection import anchor_utils
from flowvision.models.detection.image_list import ImageList

FPN_SIZES = ((32,), (64,), (128,), (256,), (512,))
RATIOS = ((0.5, 1.0, 2.0),) * 5
RETINA_SIZES = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])


def inputs(batch_hw, image_sizes, grids, dtype=np.float32):
    """Equal ImageLists and feature maps for both libraries."""
    images = np.zeros((len(image_sizes), 3) + batch_hw, dtype)
    feats = [np.zeros((len(image_sizes), 2) + g, dtype) for g in grids]
    ours = (ImageList(engine.from_numpy(images), image_sizes), [engine.from_numpy(f) for f in feats])
    ref = (TvImageList(torch.from_numpy(images), image_sizes), [torch.from_numpy(f) for f in feats])
    return ours, ref


def assert_same(out, exp):
    """Same number of per-image tensors, equal dtypes and values (exactly)."""
    assert len(out) == len(exp)
    for o, e in zip(out, exp):
        assert str(o.dtype).split(".")[-1] == str(e.dtype).split(".")[-1]
        np.testing.assert_array_equal(o.numpy(), e.numpy())


@pytest.mark.parametrize("sizes,ratios", [(FPN_SIZES, RATIOS), (RETINA_SIZES, ((0.5, 1.0, 2.0),) * 5)])
@pytest.mark.parametrize("batch_hw", [(320, 480), (224, 288), (97, 131)])
def test_anchor_generator_fpn(sizes, ratios, batch_hw):
    ours, ref = anchor_utils.AnchorGenerator(sizes, ratios), tv_anchor.AnchorGenerator(sizes, ratios)
    h, w = batch_hw
    grids = [(-(-h // s), -(-w // s)) for s in (4, 8, 16, 32, 64)]
    (oi, of), (ti, tf) = inputs(batch_hw, [(h - 3, w), (h, w - 5)], grids)
    assert_same(ours(oi, of), ref(ti, tf))
    assert ours.num_anchors_per_location() == ref.num_anchors_per_location()
    for a, b in zip(ours.cell_anchors, ref.cell_anchors):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_anchor_generator_single_map_flat_args_and_float64():
    sizes, ratios = (32, 64), (0.25, 1.0, 3.0)
    ours, ref = anchor_utils.AnchorGenerator(sizes, ratios), tv_anchor.AnchorGenerator(sizes, ratios)
    assert ours.sizes == ref.sizes and ours.aspect_ratios == ref.aspect_ratios
    (oi, of), (ti, tf) = inputs((64, 96), [(64, 90)], [(16, 24), (8, 12)], np.float64)
    assert_same(ours(oi, of), ref(ti, tf))
    ours, ref = anchor_utils.AnchorGenerator(), tv_anchor.AnchorGenerator()
    (oi, of), (ti, tf) = inputs((50, 70), [(50, 70), (40, 70), (50, 33)], [(13, 18)])
    assert_same(ours(oi, of), ref(ti, tf))


def test_anchor_generator_mismatched_maps():
    ours = anchor_utils.AnchorGenerator(FPN_SIZES, RATIOS)
    (oi, of), _ = inputs((64, 64), [(64, 64)], [(16, 16), (8, 8)])
    with pytest.raises(ValueError, match="number of sizes / aspect ratios"):
        ours(oi, of)


SSD_RATIOS = [[2], [2, 3], [2, 3], [2, 3], [2], [2]]


@pytest.mark.parametrize("kwargs,grids,hw", [
    (dict(aspect_ratios=SSD_RATIOS, scales=[0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05], steps=[8, 16, 32, 64, 100, 300]),
     [(38, 38), (19, 19), (10, 10), (5, 5), (3, 3), (1, 1)], (300, 300)),
    (dict(aspect_ratios=[[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95),
     [(20, 20), (10, 10), (5, 5), (3, 3), (2, 2), (1, 1)], (320, 320)),
    (dict(aspect_ratios=[[2]], clip=False), [(7, 9)], (56, 72)),
])
def test_default_box_generator(kwargs, grids, hw):
    ours, ref = anchor_utils.DefaultBoxGenerator(**kwargs), tv_anchor.DefaultBoxGenerator(**kwargs)
    assert ours.scales == ref.scales and repr(ours) == repr(ref)
    assert ours.num_anchors_per_location() == ref.num_anchors_per_location()
    (oi, of), (ti, tf) = inputs(hw, [hw, hw], grids)
    out, exp = ours(oi, of), ref(ti, tf)
    assert len(out) == 2
    for o, e in zip(out, exp):
        np.testing.assert_allclose(o.numpy(), e.numpy(), rtol=1e-6, atol=1e-5)
        assert o.dtype == engine.float32


def test_default_box_generator_float64_and_bad_steps():
    kw = dict(aspect_ratios=[[2], [2, 3]], steps=[8, 16])
    ours, ref = anchor_utils.DefaultBoxGenerator(**kw), tv_anchor.DefaultBoxGenerator(**kw)
    (oi, of), (ti, tf) = inputs((64, 64), [(64, 64)], [(8, 8), (4, 4)], np.float64)
    out, exp = ours(oi, of), ref(ti, tf)
    assert out[0].dtype == engine.float64
    np.testing.assert_allclose(out[0].numpy(), exp[0].numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="aspect_ratios and steps should have the same length"):
        anchor_utils.DefaultBoxGenerator([[2]], steps=[8, 16])
