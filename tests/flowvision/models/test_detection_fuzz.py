"""Detection pieces and tiny detectors against torchvision on seeded random configurations: a sample of the
differential fuzzing (odd image sizes and aspect ratios, several min sizes, 16-bit boxes, ties in matching,
torch's random stream in the sampler and the training resize, images without boxes, float64 models)."""
import numpy as np
import pytest
import torch
from detection_parity import parity_pair, three_level_backbone, to_lib
from torchvision.models.detection import _utils as tv_utils
from torchvision.models.detection import anchor_utils as tv_anchors
from torchvision.models.detection import image_list as tv_image_list
from torchvision.models.detection import roi_heads as tv_roi_heads
from torchvision.models.detection import transform as tv_transform

import engine
from flowvision.models.detection import _keypoints, _masks
from flowvision.models.detection import _utils as our_utils
from flowvision.models.detection import anchor_utils as our_anchors
from flowvision.models.detection import image_list as our_image_list
from flowvision.models.detection import transform as our_transform
from op_check import assert_same_error

pytestmark = pytest.mark.slow

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
LIBS = ((engine, our_transform), (torch, tv_transform))


def _numpy(x):
    """A torch or engine tensor as numpy (16-bit floats widened to float32)."""
    if x.dtype in (torch.bfloat16, engine.bfloat16, torch.float16, engine.float16):
        x = x.float()
    return x.detach().numpy()


def _dtype_name(x):
    return str(x.dtype).split(".")[-1]


def assert_same(ours, ref, atol=1e-4, rtol=1e-5, what="output"):
    """Nested lists / dicts of tensors (or ints) with the same keys, dtypes, shapes and (integers: exactly) values."""
    if isinstance(ref, dict):
        assert list(ours) == list(ref), what
        for k in ref:
            assert_same(ours[k], ref[k], atol, rtol, f"{what}.{k}")
    elif isinstance(ref, (list, tuple)):
        assert len(ours) == len(ref), what
        for i, (a, b) in enumerate(zip(ours, ref)):
            assert_same(a, b, atol, rtol, f"{what}[{i}]")
    elif isinstance(ref, int):
        assert ours == ref, what
    else:
        assert _dtype_name(ours) == _dtype_name(ref), (what, ours.dtype, ref.dtype)
        a, b = _numpy(ours), _numpy(ref)
        assert a.shape == b.shape, (what, a.shape, b.shape)
        if a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b, err_msg=what)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


def random_targets(rng, shapes, box_dtype=np.float32):
    """Per image 0-2 boxes (inside the image), labels and keypoints with random visibility."""
    targets = []
    for _, h, w in shapes:
        n = int(rng.integers(0, 3))
        xy = rng.uniform(0, [w / 2, h / 2], (n, 2))
        boxes = np.concatenate([xy, xy + rng.uniform(1, [w / 2 + 1, h / 2 + 1], (n, 2))], 1).reshape(-1, 4)
        keypoints = np.concatenate([rng.uniform(0, [w, h], (n, 3, 2)), rng.integers(0, 2, (n, 3, 1))], 2)
        targets.append({"boxes": boxes.astype(box_dtype), "labels": rng.integers(1, 4, n),
                        "keypoints": keypoints.astype(box_dtype)})
    return targets


def run_transform(lib, module, seed, images, targets, box_dtype, min_size, max_size, training, **kwargs):
    """``module``'s GeneralizedRCNNTransform in ``lib`` after ``lib.manual_seed(seed)`` (the training resize draws
    its min size from the library's random stream, which engine's follows)."""
    transform = module.GeneralizedRCNNTransform(min_size, max_size, MEAN, STD, **kwargs).train(training)
    lib.manual_seed(seed)
    dtype = getattr(lib, box_dtype)
    targets = [{k: lib.from_numpy(v).to(dtype) if k != "labels" else lib.from_numpy(v) for k, v in t.items()}
               for t in targets]
    image_list, targets = transform([lib.from_numpy(i) for i in images], targets)
    return image_list.tensors, [list(s) for s in image_list.image_sizes], targets


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("box_dtype", ["float32", "float16", "bfloat16", "float64"])
def test_transform_matches_on_random_configurations(seed, box_dtype):
    """Odd sizes and aspect ratios, 1-3 min sizes, fixed sizes, several size_divisible, train and eval.
    16-bit boxes and keypoints are scaled in float32 and rounded once, as torch multiplies them."""
    rng = np.random.default_rng(seed)
    shapes = [(3, int(rng.integers(1, 60)), int(rng.integers(1, 60))) for _ in range(int(rng.integers(1, 4)))]
    images = [rng.random(s, dtype=np.float32) for s in shapes]
    targets = random_targets(rng, shapes)
    kwargs = dict(min_size=tuple(int(m) for m in rng.integers(8, 80, int(rng.integers(1, 4)))),
                  max_size=int(rng.integers(20, 120)), training=bool(seed % 2),
                  size_divisible=int(rng.choice([1, 8, 13, 32])),
                  fixed_size=None if seed % 3 else (int(rng.integers(5, 50)), int(rng.integers(5, 50))))
    ours, ref = (run_transform(lib, module, seed, images, targets, box_dtype, **kwargs) for lib, module in LIBS)
    assert_same(ours, ref, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_boxes_are_scaled_in_float32(dtype):
    """resize_boxes / resize_keypoints (and postprocess, which uses them) round once, after a float32 product."""
    rng = np.random.default_rng(1)
    boxes = rng.uniform(0, 200, (50, 4)).astype(np.float32)
    keypoints = rng.uniform(0, 200, (5, 7, 3)).astype(np.float32)
    for lib, module in LIBS:
        b = lib.from_numpy(boxes).to(getattr(lib, dtype))
        k = lib.from_numpy(keypoints).to(getattr(lib, dtype))
        got = [module.resize_boxes(b, (37, 61), (111, 173)), module.resize_keypoints(k, (59, 23), (100, 41))]
        if lib is engine:
            ours = got
        else:
            ref = got
    assert_same(ours, ref, atol=0, rtol=0)


def _anchor_inputs(lib, module, rng_state, dtype):
    rng = np.random.default_rng(rng_state)
    h, w = int(rng.integers(20, 130)), int(rng.integers(20, 130))
    grids = [(int(rng.integers(1, 20)), int(rng.integers(1, 20))) for _ in range(3)]
    images = module.ImageList(lib.zeros((2, 3, h, w), dtype=getattr(lib, dtype)), [(h, w)] * 2)
    return images, [lib.zeros((2, 4, gh, gw), dtype=getattr(lib, dtype)) for gh, gw in grids]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_anchor_and_default_box_generators(seed, dtype):
    """Odd feature sizes, several sizes and aspect ratios per level, SSD steps, scales and clipping."""
    sizes = ((8, 23), (32,), (50, 64, 100))
    ratios = ((0.25, 1.5), (0.5, 1.0, 2.0), (3.0,))
    ssd_ratios = [[2], [], [2, 3]]
    ssd_kwargs = [dict(), dict(steps=[4, 16, 30], clip=False), dict(scales=[0.1, 0.3, 0.7, 1.1], steps=[8, 8, 64])]
    out = []
    for lib, anchors, images in ((engine, our_anchors, our_image_list), (torch, tv_anchors, tv_image_list)):
        feats = _anchor_inputs(lib, images, seed, dtype)
        out.append([anchors.AnchorGenerator(sizes, ratios)(*feats),
                    anchors.DefaultBoxGenerator(ssd_ratios, **ssd_kwargs[seed])(*feats)])
    assert_same(*out, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_box_coder_and_matchers(seed):
    """BoxCoder with weights and a small clip (clamping), per-image lists with empty images; Matcher and
    SSDMatcher on quantised qualities (ties for the best match) with and without low-quality matches."""
    rng = np.random.default_rng(seed)
    weights = tuple(float(x) for x in rng.choice([0.5, 1.0, 5.0, 10.0], 4))
    counts = [int(rng.integers(0, 6)) for _ in range(3)]

    def boxes(n):
        xy = rng.uniform(0, 100, (n, 2))
        return np.concatenate([xy, xy + rng.uniform(0.5, 50, (n, 2))], 1).astype(np.float32)

    references, proposals = [boxes(n) for n in counts], [boxes(n) for n in counts]
    codes = (rng.standard_normal((sum(counts), 8)) * 4).astype(np.float32)
    quality = rng.choice([0.0, 0.2, 0.3, 0.5, 0.7, 0.9], (4, 25)).astype(np.float32)
    out = []
    for lib, utils in ((engine, our_utils), (torch, tv_utils)):
        coder = utils.BoxCoder(weights, bbox_xform_clip=1.0)
        out.append([coder.encode(to_lib(lib, references), to_lib(lib, proposals)),
                    coder.decode(lib.from_numpy(codes), to_lib(lib, proposals)),
                    utils.Matcher(0.5, 0.3, True)(lib.from_numpy(quality.copy())),
                    utils.Matcher(0.7, 0.3, False)(lib.from_numpy(quality.copy())),
                    utils.SSDMatcher(0.5)(lib.from_numpy(quality.copy()))])
    assert_same(*out, atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("batch_size, fraction", [(7, 0.25), (64, 0.5), (256, 1.0)])
def test_sampler_follows_torch_random_stream(batch_size, fraction):
    """With the same seed, engine's randperm draws torch's: the sampled masks are torch's exactly."""
    rng = np.random.default_rng(batch_size)
    labels = [rng.choice([-1, 0, 1, 2], int(rng.integers(0, 300))).astype(np.int64) for _ in range(3)]
    out = []
    for lib, utils in ((engine, our_utils), (torch, tv_utils)):
        lib.manual_seed(batch_size)
        out.append(utils.BalancedPositiveNegativeSampler(batch_size, fraction)(to_lib(lib, labels)))
    assert_same(*out)


@pytest.mark.parametrize("seed", range(3))
def test_paste_masks_and_heatmaps_to_keypoints(seed):
    """Masks pasted at odd image sizes (boxes crossing the right and bottom border, padding 0-2); keypoints decoded from
    heatmaps of boxes thinner than a pixel and larger ones."""
    rng = np.random.default_rng(seed)
    im_h, im_w = int(rng.integers(5, 90)), int(rng.integers(5, 90))
    xy = rng.uniform(0, [im_w - 1, im_h - 1], (4, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(0.3, 40, (4, 2))], 1).astype(np.float32)
    masks = rng.random((4, 1, 14, 14), dtype=np.float32)
    maps = rng.standard_normal((4, 3, 7, 7)).astype(np.float32)
    ours = [_masks.paste_masks_in_image(engine.from_numpy(masks), engine.from_numpy(boxes), (im_h, im_w), seed),
            _keypoints.heatmaps_to_keypoints(engine.from_numpy(maps), engine.from_numpy(boxes))]
    ref = [tv_roi_heads.paste_masks_in_image(torch.from_numpy(masks), torch.from_numpy(boxes), (im_h, im_w), seed),
           tv_roi_heads.heatmaps_to_keypoints(torch.from_numpy(maps), torch.from_numpy(boxes))]
    assert_same(ours, ref, atol=1e-4, rtol=1e-4)


def tiny_one_stage(kind):
    """A tiny FCOS or RetinaNet (three plain conv levels) with the same weights in both libraries."""
    def build(lib):
        if kind == "fcos":
            anchors = lib.det.anchor_utils.AnchorGenerator(((8,), (16,), (32,)), ((1.0,),) * 3)
            model = lib.det.fcos.FCOS(three_level_backbone(lib.lib), 4, min_size=(33, 40, 45), max_size=64,
                                      anchor_generator=anchors, score_thresh=0.05, topk_candidates=50)
        else:
            anchors = lib.det.anchor_utils.AnchorGenerator(((16, 24), (32, 48), (64, 96)), ((0.5, 1.0, 2.0),) * 3)
            model = lib.det.retinanet.RetinaNet(three_level_backbone(lib.lib), 4, min_size=(33, 40, 45),
                                                max_size=64, anchor_generator=anchors, topk_candidates=50,
                                                score_thresh=0.01,
                                                head=lib.det.retinanet.RetinaNetHead(32, 6, 4))
        return model

    def spread_scores(ref):
        for name, p in ref.named_parameters():
            if p.dim() == 4 and "head" in name:
                p.normal_(0.0, 0.02)

    return parity_pair(build, 0, spread_scores)


@pytest.mark.parametrize("kind", ["retinanet", "fcos"])
def test_one_stage_eval_and_train_on_odd_sizes(kind):
    """Eval detections of two odd-sized images, then training losses (one image without boxes, the resize's min
    size drawn from the seeded random stream) and gradients."""
    ours, ref = tiny_one_stage(kind)
    rng = np.random.default_rng(3)
    dtype = np.float32
    shapes = [(3, 37, 83), (3, 101, 45)]
    images = [rng.random(s).astype(dtype) for s in shapes]
    targets = random_targets(rng, shapes, dtype)
    targets[1] = {"boxes": np.zeros((0, 4), dtype), "labels": np.zeros(0, np.int64)}
    targets[0] = {"boxes": np.array([[3, 4, 30, 20], [40, 2, 80, 35]], dtype), "labels": np.array([1, 3])}
    with engine.no_grad():
        detections = ours.eval()(to_lib(engine, images))
    with torch.no_grad():
        tv_detections = ref.eval()(to_lib(torch, images))
    assert all(len(d["boxes"]) for d in tv_detections)
    assert_same(detections, tv_detections, atol=2e-3, rtol=1e-4)
    engine.manual_seed(5)
    losses = ours.train()(to_lib(engine, images), to_lib(engine, targets))
    torch.manual_seed(5)
    tv_losses = ref.train()(to_lib(torch, images), to_lib(torch, targets))
    assert_same(losses, tv_losses, atol=1e-6, rtol=1e-4)
    sum(losses.values()).backward()
    sum(tv_losses.values()).backward()
    for name in ("head.classification_head.cls_logits.weight", "head.regression_head.bbox_reg.weight",
                 "backbone.c1.bias"):
        grad, tv_grad = ours.get_parameter(name).grad, ref.get_parameter(name).grad
        np.testing.assert_allclose(grad.numpy(), tv_grad.numpy(), rtol=1e-3, atol=1e-5 * np.abs(tv_grad.numpy()).max())


def test_retinanet_target_shape_error_is_torchvisions():
    """RetinaNet's message for boxes not [N, 4] does not name the shape (torchvision's other detectors do)."""
    ours, ref = tiny_one_stage("retinanet")
    image = np.zeros((3, 40, 50), np.float32)
    targets = [{"boxes": np.zeros((2, 5), np.float32), "labels": np.ones(2, np.int64)}]
    assert_same_error(lambda: ours.train()(to_lib(engine, [image]), to_lib(engine, targets)),
                      lambda: ref.train()(to_lib(torch, [image]), to_lib(torch, targets)))



@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_box_scaling_on_the_cuda_backend(cuda, dtype):
    """resize_boxes / resize_keypoints on CUDA tensors: the same dtype and values as on the CPU, on the device."""
    rng = np.random.default_rng(2)
    boxes = engine.from_numpy(rng.uniform(0, 200, (9, 4)).astype(np.float32)).to(getattr(engine, dtype))
    keypoints = engine.from_numpy(rng.uniform(0, 200, (3, 4, 3)).astype(np.float32)).to(getattr(engine, dtype))
    expected = [our_transform.resize_boxes(boxes, (37, 61), (111, 173)),
                our_transform.resize_keypoints(keypoints, (59, 23), (100, 41))]
    got = [our_transform.resize_boxes(boxes.cuda(), (37, 61), (111, 173)),
           our_transform.resize_keypoints(keypoints.cuda(), (59, 23), (100, 41))]
    assert all(g.device.type == "cuda" for g in got)
    assert_same([g.cpu() for g in got], expected, atol=0, rtol=0)
