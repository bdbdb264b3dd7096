"""Shared pieces of the detection tests: the test photos, torchvision/ours model pairs with the same weights
(moved through numpy), forward-hook capture, a pinned RoI sampler, and output / loss / gradient / detection
comparisons. Model pairs are returned as (ours, torchvision's)."""
import os
import warnings
from collections import OrderedDict
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torchvision.models.detection as tv_det
import torchvision.ops as tv_ops
from model_parity import numpy_state, randomize_norms, skip_random_init
from op_check import assert_close
from PIL import Image
from torchvision.models.detection import _utils as tv_utils

import engine
import flowvision.models.detection as det
from flowvision import ops
from flowvision.models.detection import _utils as det_utils

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images")
PHOTOS = ("chelsea.png", "rocket.jpg")
TORCH = SimpleNamespace(lib=torch, nn=torch.nn, det=tv_det, ops=tv_ops)
OURS = SimpleNamespace(lib=engine, nn=engine.nn, det=det, ops=ops)


def load_photo(name):
    """One photo of tests/data/images as a contiguous float32 CHW array in [0, 1]."""
    with Image.open(os.path.join(DATA, name)) as image:
        array = np.asarray(image.convert("RGB"), np.float32) / 255.0
    return np.ascontiguousarray(array.transpose(2, 0, 1))


def photos():
    """chelsea (451x300) and rocket (640x427): two sizes in one batch."""
    return [load_photo(name) for name in PHOTOS]


def to_lib(lib, data):
    """Numpy arrays (alone, or in lists / dicts) as ``lib``'s (torch or engine) tensors."""
    if isinstance(data, dict):
        return {k: to_lib(lib, v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [to_lib(lib, v) for v in data]
    return lib.from_numpy(np.asarray(data))


def scale_parameters(model, scales):
    """Multiply the named parameters in place ({name: factor}), e.g. to spread random scores apart."""
    with torch.no_grad():
        for name, factor in scales.items():
            model.get_parameter(name).mul_(factor)


def parity_pair(build, seed=0, prepare=None):
    """``build(TORCH)`` after ``torch.manual_seed(seed)``, changed by ``prepare(ref)`` if given, and
    ``build(OURS)`` with its weights (through numpy): (ours, ref)."""
    torch.manual_seed(seed)
    ref = build(TORCH)
    if prepare is not None:
        with torch.no_grad():
            prepare(ref)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        skip_random_init(patch)  # every weight of ours comes from the reference: drawing them first would be wasted
        warnings.simplefilter("ignore", RuntimeWarning)  # SSD's builders probe their backbone's output shapes
        ours = build(OURS)
    ours.load_state_dict(numpy_state(ref))
    return ours, ref


def builder_pair(name, scales=None, prepare=None, **kwargs):
    """The detection builder ``name`` without weights in both libraries, both in eval mode: torchvision's
    seeded, changed by ``prepare``, with random norm statistics and ``scales`` applied; ours with its weights."""
    def build(lib):
        return getattr(lib.det, name)(weights=None, weights_backbone=None, **kwargs)

    def randomize(ref):
        if prepare is not None:
            prepare(ref)
        randomize_norms(ref, 0)
        scale_parameters(ref, scales or {})

    ours, ref = parity_pair(build, prepare=randomize)
    return ours.eval(), ref.eval()


def one_level_backbone(lib):
    """A 16-channel stride-8 conv backbone and 3 sizes x 3 ratios of anchors on it, for tiny R-CNNs in ``lib``."""
    nn = lib.nn
    backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=4, padding=1), nn.ReLU(),
                             nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU())
    backbone.out_channels = 16
    return backbone, lib.det.anchor_utils.AnchorGenerator(((32, 64, 128),), ((0.5, 1.0, 2.0),))


def three_level_backbone(lib):
    """Three 32-channel levels at strides 4, 8, 16 from plain convolutions, built with ``lib`` (torch or engine)."""

    class Tiny(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = lib.nn.Conv2d(3, 32, 3, stride=4, padding=1)
            self.c2 = lib.nn.Conv2d(32, 32, 3, stride=2, padding=1)
            self.c3 = lib.nn.Conv2d(32, 32, 3, stride=2, padding=1)
            self.out_channels = 32

        def forward(self, x):
            a = lib.relu(self.c1(x))
            b = lib.relu(self.c2(a))
            c = lib.relu(self.c3(b))
            return OrderedDict([("0", a), ("1", b), ("2", c)])

    return Tiny()


# (boxes, labels) in the pixels of chelsea and rocket
PHOTO_TARGETS = (([[150.0, 30.0, 330.0, 230.0]], [1]),
                 ([[280.0, 20.0, 380.0, 400.0], [50.0, 300.0, 200.0, 420.0]], [2, 3]))


def make_targets(targets=PHOTO_TARGETS):
    """Target dicts (float32 boxes, int64 labels) as numpy from (boxes, labels) lists."""
    return [{"boxes": np.array(boxes, np.float32).reshape(-1, 4), "labels": np.array(labels, np.int64)}
            for boxes, labels in targets]


def redraw_head(std):
    """A ``prepare`` for parity_pair: the head's conv weights drawn anew with ``std`` (spreads scores apart)."""
    def prepare(ref):
        for p in ref.head.parameters():
            if p.dim() == 4:
                p.normal_(0.0, std)
    return None if std is None else prepare


def head_features(seed, sizes):
    """Random (2, 32, h, w) feature maps, one per level size."""
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((2, 32, h, w)).astype(np.float32) for h, w in sizes]


def run_both(ours, ref, inputs, targets=None):
    """Both models on the same numpy inputs: without targets under no_grad (eval outputs), with numpy
    targets (train losses). Returns (ours', torchvision's)."""
    if targets is None:
        with engine.no_grad():
            out = ours(to_lib(engine, inputs))
        with torch.no_grad():
            tv_out = ref(to_lib(torch, inputs))
        return out, tv_out
    return ours(to_lib(engine, inputs), to_lib(engine, targets)), ref(to_lib(torch, inputs), to_lib(torch, targets))


def record(model, names):
    """Forward hooks that keep the outputs of the named submodules, by name."""
    seen = {}
    for name in names:
        model.get_submodule(name).register_forward_hook(lambda m, i, o, name=name: seen.__setitem__(name, o))
    return seen


def flat(output):
    """A module output (tensor, tuple/list, dict) as a list of numpy arrays."""
    if isinstance(output, dict):
        return [a for v in output.values() for a in flat(v)]
    if isinstance(output, (list, tuple)):
        return [a for v in output for a in flat(v)]
    return [output.detach().numpy()]


def assert_outputs_close(out, ref, rtol=1e-4, what="output"):
    """Two module outputs (tensors, or lists / dicts of them) with the same keys, shapes and values."""
    if isinstance(ref, dict):
        assert list(out) == list(ref), what
    arrays, ref_arrays = flat(out), flat(ref)
    assert len(arrays) == len(ref_arrays), what
    for a, b in zip(arrays, ref_arrays):
        assert a.shape == b.shape, (what, a.shape, b.shape)
        assert_close(a, b, rtol, what)


def assert_proposals_match(seen, tv_seen, rtol=1e-4, max_shift=2):
    """The recorded "rpn" proposals and "roi_heads.box_predictor" outputs agree, in order, except that
    proposals whose objectness ties to rounding may swap places (by at most ``max_shift``): which of two
    near-equal scores sorts first depends on the last bits, and those differ between frameworks and CPUs.
    The box predictor's rows follow the proposals, so they are compared under the same pairing."""
    order, offset = [], 0
    for ours, ref in zip(seen["rpn"][0], tv_seen["rpn"][0]):
        a, b = ours.numpy(), ref.detach().numpy()
        assert a.shape == b.shape, ("rpn", a.shape, b.shape)
        pair = np.abs(a[:, None] - b[None]).max(-1).argmin(1)
        assert sorted(pair.tolist()) == list(range(len(b))), "rpn: proposals do not pair up one to one"
        assert np.abs(pair - np.arange(len(b))).max(initial=0) <= max_shift, "rpn: proposals out of order"
        assert_close(a, b[pair], rtol, "rpn")
        order.append(pair + offset)
        offset += len(b)
    order = np.concatenate(order)
    ours, ref = flat(seen["roi_heads.box_predictor"]), flat(tv_seen["roi_heads.box_predictor"])
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert_close(a, b[order], rtol, "roi_heads.box_predictor")


def assert_recorded_close(seen, tv_seen, names, rtol=1e-4):
    """The outputs ``record`` kept of the named submodules agree between the two models."""
    for name in names:
        assert_outputs_close(seen[name], tv_seen[name], rtol, name)


def pinned_choice(labels, batch_size_per_image, positive_fraction):
    """A deterministic stand-in for the random sampler: a fixed permutation of each label set."""
    positive = np.flatnonzero(labels >= 1)
    negative = np.flatnonzero(labels == 0)
    num_pos = min(positive.size, int(batch_size_per_image * positive_fraction))
    num_neg = min(negative.size, batch_size_per_image - num_pos)
    pos = np.zeros(labels.shape, np.uint8)
    neg = np.zeros(labels.shape, np.uint8)
    pos[np.random.default_rng(positive.size).permutation(positive)[:num_pos]] = 1
    neg[np.random.default_rng(negative.size).permutation(negative)[:num_neg]] = 1
    return pos, neg


def keep_all(labels, batch_size_per_image, positive_fraction):
    """Every positive and every negative (order-free, seed-free)."""
    return (labels >= 1).astype(np.uint8), (labels == 0).astype(np.uint8)


def pin_sampler(monkeypatch, choose):
    """Both libraries' BalancedPositiveNegativeSampler return ``choose(labels, batch_size, fraction)``'s masks."""
    for lib, wrap in ((det_utils, engine.from_numpy), (tv_utils, torch.from_numpy)):
        def call(self, matched_idxs, wrap=wrap):
            pairs = [choose(m.numpy(), self.batch_size_per_image, self.positive_fraction) for m in matched_idxs]
            return [wrap(p) for p, _ in pairs], [wrap(n) for _, n in pairs]
        monkeypatch.setattr(lib.BalancedPositiveNegativeSampler, "__call__", call)


@pytest.fixture
def pinned_sampler(monkeypatch):
    """Both libraries' samplers draw the same deterministic samples (``pinned_choice``)."""
    pin_sampler(monkeypatch, pinned_choice)


@pytest.fixture
def keep_all_sampler(monkeypatch):
    """Both libraries' samplers keep every positive and negative."""
    pin_sampler(monkeypatch, keep_all)


def assert_losses_match(out, ref, rtol=1e-4, keys=None):
    """Same loss names (``keys`` when given) and values within ``rtol``."""
    assert list(out) == list(ref)
    if keys is not None:
        assert list(out) == list(keys)
    for k in ref:
        assert_close(out[k].detach().numpy(), ref[k].detach().numpy(), rtol, k)


def backward_both(losses, tv_losses):
    """Backpropagate the summed losses of both models."""
    sum(losses.values()).backward()
    sum(tv_losses.values()).backward()


def assert_grads_match(ours, ref, names, rtol=1e-4):
    """Each named parameter of ours has a finite gradient equal to torchvision's within ``rtol``."""
    for name in names:
        grad = ours.get_parameter(name).grad
        assert grad is not None, name
        assert np.isfinite(grad.numpy()).all(), name
        assert_close(grad.numpy(), ref.get_parameter(name).grad.numpy(), rtol, f"grad of {name}")


def assert_same_rows(ours, ref, rtol=1e-4, what="proposals"):
    """The same set of boxes in any order (random weights tie scores of shifted copies of one box)."""
    assert ours.shape == ref.shape, f"{what}: {ours.shape} vs {ref.shape}"
    distance = np.abs(ours[:, None, :] - ref[None, :, :]).max(-1)
    assert distance.min(1).max() <= rtol * np.abs(ref).max(), what
    assert distance.min(0).max() <= rtol * np.abs(ref).max(), what


def _dtype_name(tensor):
    """'float32', 'int64', ... of a torch or engine tensor."""
    return str(tensor.dtype).split(".")[-1]


def assert_detections_match(out, ref, top=None, rtol=1e-4, score_rtol=None, ordered=True, mask_atol=2e-3):
    """Per image: the same keys and dtypes, non-empty results, and the best ``top`` (all: None) detections equal.

    ``ordered``: the same shapes (counts), and labels, boxes, scores, masks (to ``mask_atol``) and keypoints
    equal in order; otherwise the scores in order and the boxes as sets (shifted copies of a box tie).
    """
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert list(o) == list(r)
        assert o["boxes"].shape[0] > 0 and r["boxes"].shape[0] > 0
        assert [_dtype_name(o[k]) for k in r] == [_dtype_name(r[k]) for k in r]
        assert_close(o["scores"].numpy()[:top], r["scores"].numpy()[:top], score_rtol or rtol, "scores")
        if not ordered:
            assert_same_rows(o["boxes"].numpy()[:top], r["boxes"].numpy()[:top], rtol, "boxes")
            continue
        for key in r:
            assert tuple(o[key].shape) == tuple(r[key].shape), key
            a, b = o[key].numpy()[:top], r[key].numpy()[:top]
            if key == "labels":
                np.testing.assert_array_equal(a, b)
            elif key == "masks":
                np.testing.assert_allclose(a, b, atol=mask_atol)
            elif key != "scores":
                assert_close(a, b, rtol, key)


def sgd_history(model, images, targets, steps, lr=0.01, keys=None, check=None):
    """The loss at each of ``steps`` SGD steps (momentum 0.9) on one batch: the total, or a tuple of the
    ``keys`` losses. ``check(model)`` runs after each backward."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = engine.optim.SGD(params, lr=lr, momentum=0.9)
    history = []
    for _ in range(steps):
        losses = model(images, targets)
        loss = sum(losses.values())
        optimizer.zero_grad()
        loss.backward()
        if check is not None:
            check(model)
        optimizer.step()
        history.append(tuple(losses[k].item() for k in keys) if keys else loss.item())
    return history
