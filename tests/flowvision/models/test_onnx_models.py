"""Zoo models exported with engine.onnx.export: each file passes onnx.checker. Classification and segmentation
files, exported at an odd input size with a dynamic batch and run in ONNX Runtime at two batch sizes, match our
eager output within 1e-4 relative; one resnet18 file matches torchvision's own eager output on the same weights.
RAFT's files (two flow updates, a fixed batch) give our eager flows within 1e-4.
Detection files (a list of one image of an odd size; a dynamic number of detections) give on several images the
same number of detections as our eager model, the same labels, boxes within 1e-3 px and scores within 1e-5 (and
masks within 1e-4, keypoints within 1e-3 px); Keypoint R-CNN's decoding op alone, an ONNX ``Loop``, matches our eager
decoding at several numbers of boxes, none included.

By default the cheapest model of each family or kind runs, the large or fixed-size ones as a small configuration of
the same class (``model_parity.SMALL_MODELS``); ``ONNX_EVERY_MODEL=1``: every model, at its full size.
"""
import functools
import math
import os

import numpy as np
import pytest
from model_parity import COVERED_FAMILIES, SMALL_MODELS, family_sweep, randomize_engine_norms
from onnx_check import check_export, eager_outputs, export_bytes, images, run_onnx, session

import engine
import engine.onnx
import flowvision.models as models
from flowvision.models.detection._keypoints import heatmaps_to_keypoints

# whole-model exports, outside the quick subset (-m "not slow"); random weights drawn the quicker numpy way
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fast_random")]

_SEGMENTATION_MODULES = ("fcn", "deeplabv3", "lraspp")
_DETECTION_MODULES = {"faster_rcnn", "mask_rcnn", "keypoint_rcnn", "retinanet", "fcos", "ssd", "ssdlite"}
EVERY = bool(os.environ.get("ONNX_EVERY_MODEL"))


def _published(name, key, default):
    if name not in models.list_pretrained():
        return default
    return models.get_model_weights(name).DEFAULT.meta.get(key, default)


def _modules_of(package):
    """The family modules whose models ``package`` defines."""
    return {m for m in models.list_modules()
            if models.model_entrypoint(models.list_models(module=m)[0]).__module__.startswith(package.__name__)}


_VIDEO_MODULES = _modules_of(models.video)
_OPTICAL_FLOW_MODULES = _modules_of(models.optical_flow)
# quantizable models are left out: int8 layers have no ONNX export here, and their float form is their float family's
_FAMILIES = family_sweep(set(_SEGMENTATION_MODULES) | _DETECTION_MODULES | _VIDEO_MODULES | _OPTICAL_FLOW_MODULES
                         | {"quantization"})
# Families whose layers other families' runs export: vgg11's are ssd300_vgg16's backbone (test_detector) and
# AlexNet's are vgg11's with an adaptive average pool (GoogLeNet's, ResNet's...), dropout and linear layers (the two
# took 26 s and 4.6 s); see model_parity.COVERED_FAMILIES for the others. VOLO's outlook attention (unfold, attend,
# fold) is exported on a small VOLO in test_timm_volo.py (volo_d1_224 took 11 s here).
COVERED = COVERED_FAMILIES | {"vgg", "alexnet", "volo (timm)"}


def _cheapest(names):
    """The model of a family with the fewest GFLOPs, then parameters (its layers are the family's); models without
    published GFLOPs (timm's encoders) come after, those without weights (timm's giant ones among them) last."""
    def cost(name):
        if name not in models.list_pretrained():
            return math.inf, math.inf
        gflops = _published(name, "gflops", 0)
        return (math.inf if gflops is None else gflops), _published(name, "num_params", 0)

    return min(names, key=cost)


_SEGMENTERS = {m: [n for n in models.list_models(module=m) if not n.endswith("coco")] for m in _SEGMENTATION_MODULES}
if EVERY:
    CLASSIFIERS = [n for names in _FAMILIES.values() for n in names]
    SEGMENTERS = [n for names in _SEGMENTERS.values() for n in names]
else:
    CLASSIFIERS = [_cheapest(names) for family, names in _FAMILIES.items() if family not in COVERED]
    SEGMENTERS = [_cheapest(names) for names in _SEGMENTERS.values()]


def _spread_head(model):
    """Scale the last linear layer up so the logits differ clearly between inputs (some heads start at zero)."""
    linears = [m for m in model.modules() if isinstance(m, engine.nn.Linear)]
    if not linears:
        return
    last = linears[-1]
    with engine.no_grad():
        last.weight.copy_(engine.from_numpy(np.random.default_rng(1).standard_normal(last.weight.shape)
                                            .astype(np.float32) * 0.05))


# HRNet's branches meet only where a side is 32k - 3 to 32k pixels (61..64, 93..96, ...); TResNet's stem takes
# sides divisible by 4; SAM2's Hiera windows need multiples of 32
_SIZES = {"hrnet_w18_small": (61, 93), "tresnet_m": (64, 72), "csatv2": (64, 72), "sam2_hiera_tiny": (64, 96)}


# Large or fixed-size families run as a small configuration of the same class (model_parity.SMALL_MODELS), on an
# input of this height and width (None for a video model: the test's clip). At full size these took (s): vit_b_32
# 4.7, maxvit_t 3.9, swin_t 3.2, vit_small_patch16_rope_224 2.7, swinv2_cr_tiny_ns_224 2.3, convnext_tiny 1.9,
# vit_srelpos_small_patch16_224 1.7, vit_small_patch32_224 1.7, mvit_v2_s 4.4, swin3d_t 1.8, hiera_tiny_224 3.0,
# twins_svt_small 2.4, focalnet_tiny_srf 2.1, coat_lite_tiny 1.5, nest_tiny_jx 12.4, tnt_s_legacy_patch16_224 7.0,
# nasnetalarge 5.6, davit_tiny 3.2, sequencer2d_s 8 (31 under load), mvitv2_tiny 3.2,
# naflexvit_base_patch16_parfac_gap 2.7, and the encoders deepseek_vit_412m, gemma4_vit_167m, mobilenetv5_300m,
# qwen3_vit_88m, samvit_base_patch16 (at 1024 pixels it ran out of memory) and vitamin_base_224 (15.6 s); so, under
# 0.5 s each.
# S3D's and Inception v3's classes have fixed widths and depths: they run at full size.
_SMALL_INPUTS = {"vit_b_32": (64, 64), "vit_small_patch32_224": (64, 64), "vit_small_patch16_rope_224": (64, 64),
                 "vit_srelpos_small_patch16_224": (64, 64), "maxvit_t": (64, 64), "swin_t": (63, 71),
                 "swinv2_cr_tiny_ns_224": (64, 64), "convnext_tiny": (63, 71), "mvit_v2_s": None, "swin3d_t": None,
                 "hiera_tiny_224": (64, 64), "twins_svt_small": (63, 71), "focalnet_tiny_srf": (63, 71),
                 "coat_lite_tiny": (64, 64), "nest_tiny_jx": (64, 64), "tnt_s_legacy_patch16_224": (64, 64),
                 "nasnetalarge": (63, 71), "davit_tiny": (63, 71), "sequencer2d_s": (63, 71),
                 "mvitv2_tiny": (64, 64), "naflexvit_base_patch16_parfac_gap": (64, 80), "deepseek_vit_412m": (84, 84),
                 "gemma4_vit_167m": (96, 96), "mobilenetv5_300m": (64, 64), "qwen3_vit_88m": (64, 64),
                 "samvit_base_patch16": (64, 64), "vitamin_base_224": (64, 64)}
assert set(_SMALL_INPUTS) == set(SMALL_MODELS)
SMALL = {} if EVERY else SMALL_MODELS


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier(name):
    engine.manual_seed(0)
    if name in SMALL:
        model = SMALL[name]()
        height, width = _SMALL_INPUTS[name]
    else:
        model = models.create_model(name)
        min_height, min_width = _published(name, "min_size", (1, 1))
        height, width = _SIZES.get(name, (max(63, min_height + 1) | 1, max(71, min_width) | 1))
        if min_height >= 224:  # a fixed size (224, 256...): that one
            height, width = min_height, min_width
    model = randomize_engine_norms(model).eval()
    _spread_head(model)
    check_export(model, lambda batch: (images(0, batch, 3, height, width),), batches=(2, 3), rtol=1e-4, what=name,
                 per_sample=True)


@pytest.mark.parametrize("name", sorted(_cheapest(models.list_models(module=m)) for m in _VIDEO_MODULES))
def test_video_classifier(name):
    """Clips (N, 3, T, H, W) of each video family's cheapest model at its smallest published clip size, or
    a small one."""
    engine.manual_seed(0)
    model = randomize_engine_norms(SMALL[name]() if name in SMALL else models.create_model(name)).eval()
    _spread_head(model)
    frames = _published(name, "min_temporal_size", 1)
    height, width = _published(name, "min_size", (1, 1))
    if name == "mvit_v2_s":  # its relative-position tables are resized to any clip: a small one (11 s at 16x224x224)
        frames, height, width = 4, 56, 40
    shape = (3, max(frames, 4), max(height, 24), max(width, 31))
    check_export(model, lambda batch: (images(0, batch, *shape),), batches=(1, 2), rtol=1e-4, what=name,
                 per_sample=True)


class _FewFlowUpdates(engine.nn.Module):
    """A RAFT model called with two flow updates (the exported graph unrolls them)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image1, image2):
        return self.model(image1, image2, num_flow_updates=2)


@pytest.mark.parametrize("name", sorted(_cheapest(models.list_models(module=m)) for m in _OPTICAL_FLOW_MODULES))
def test_optical_flow(name):
    """Both flow predictions of two updates on pairs of the smallest images RAFT takes (128 pixels a side), the
    batch dynamic (1 and 2: grid_sample's output is contiguous at every batch, as torch's, so RAFT's
    ``contiguous()`` calls trace the same ops)."""
    engine.manual_seed(0)
    model = _FewFlowUpdates(randomize_engine_norms(models.create_model(name)).eval())
    check_export(model, lambda batch: (images(0, batch, 3, 128, 136), images(1, batch, 3, 128, 136)), batches=(1, 2),
                 rtol=1e-4, what=name)


@pytest.mark.parametrize("name", SEGMENTERS)
def test_segmenter(name):
    engine.manual_seed(0)
    aux = {} if name.startswith("lraspp") else {"aux_loss": True}
    model = randomize_engine_norms(models.create_model(name, weights_backbone=None, **aux)).eval()
    check_export(model, lambda batch: (images(0, batch, 3, 61, 75),), batches=(2, 3), rtol=1e-4, what=name,
                 per_sample=True)


_DETECTORS = {m: models.list_models(module=m) for m in sorted(_DETECTION_MODULES)}
# the family's cheapest model; Faster R-CNN's is left to Mask R-CNN's and Keypoint R-CNN's runs, whose files hold
# its whole graph (backbone, RPN, box head, postprocessing) and whose boxes, labels and scores are compared (its own
# ResNet export took 4.5 s; its MobileNet ones, with random weights, give the same detections whatever the image),
# SSD300's to SSDlite's (the same heads, anchors and postprocessing; its VGG trunk's ceil-mode pools are GoogLeNet's
# in the classifier sweep, its L2 norm plain arithmetic; its run took 7.7 s)
DETECTORS = [n for names in _DETECTORS.values() for n in names] if EVERY else [
    _cheapest(names) for module, names in _DETECTORS.items() if module not in ("faster_rcnn", "ssd")]
# Random weights give near-equal scores and, through large box deltas, boxes that amplify float32 rounding:
# the box deltas are scaled down and the class logits (or weights, for SSD) set to spread the scores; the score
# threshold is then put in a clear gap between the scores (``_threshold``).
_BOX_DELTAS = {"rpn.head.bbox_pred.weight": 0.01, "roi_heads.box_predictor.bbox_pred.weight": 0.1,
               "head.regression_head.bbox_reg.weight": 0.1}
_CLASSES = {  # model prefix: (parameter, scale)
    "fasterrcnn": ("roi_heads.box_predictor.cls_score.weight", 3.0),
    "maskrcnn": ("roi_heads.box_predictor.cls_score.weight", 3.0),
    "keypointrcnn": ("roi_heads.box_predictor.cls_score.weight", 3.0),
    "retinanet": ("head.classification_head.cls_logits.weight", 16.0),
    "fcos": ("head.classification_head.cls_logits.weight", 4.0),
    "ssdlite": ("head.classification_head", 0.5),
    "ssd300": ("head.classification_head", 0.001),
}


def _detector(name):
    """A detector (5 classes, small images) with numpy-seeded weights of each parameter's scale, random BatchNorm
    statistics and spread scores."""
    parameter, scale = next(v for k, v in _CLASSES.items() if name.startswith(k))
    engine.manual_seed(0)
    kwargs = dict(weights_backbone=None, num_classes=5)
    if "rcnn" in name:
        kwargs.update(min_size=160, max_size=200, rpn_post_nms_top_n_test=100, box_detections_per_img=300)
    else:
        kwargs.update(detections_per_img=300)
        if not name.startswith("ssd"):
            kwargs.update(min_size=160, max_size=200)
    model = models.create_model(name, **kwargs)
    rng = np.random.default_rng(0)
    with engine.no_grad():
        for tensor in model.parameters():  # numpy's stream, so that the scores do not change with the engine's
            values = tensor.detach().numpy()
            if values.std() > 0:
                tensor.copy_(engine.from_numpy((rng.standard_normal(values.shape) * values.std() + values.mean())
                                               .astype(np.float32)))
        for module in model.modules():
            if getattr(module, "running_mean", None) is not None:
                c = module.running_mean.shape[0]
                module.running_mean.copy_(engine.from_numpy(rng.standard_normal(c).astype(np.float32) * 0.1))
                module.running_var.copy_(engine.from_numpy(rng.uniform(0.5, 2.0, c).astype(np.float32)))
        for key, tensor in model.state_dict().items():
            if key in _BOX_DELTAS:
                tensor.mul_(_BOX_DELTAS[key])
            elif key == parameter:
                tensor.mul_(scale)
            elif key.startswith(parameter) and key.endswith("weight"):  # SSD: one conv per feature map
                weights = rng.standard_normal(tuple(tensor.shape)).astype(np.float32) * scale
                tensor.copy_(engine.from_numpy(weights))
    return model.eval()


def _threshold(model, name, images):
    """Set the model's score threshold in the middle of a gap of at least 1e-4 (ten times the scores' tolerance)
    between its detections' scores on ``images``, leaving 2 to 200 detections on each (below the cap of 300), a
    number that differs between the images (but for SSDlite, whose random-weight scores hardly follow the
    image): no score sits near the threshold, where rounding could decide differently.

    Returns the model's eager detections on each image at that threshold: those it made at its lower one whose
    score passes (the postprocessing keeps a box on its own score and on higher-scoring boxes' only, and its
    top-k cuts keep every box that passes, at most 200), not a second run of each image (the detectors' tests
    took 72 s of CPU with it, 54 s so)."""
    heads = model.roi_heads if "rcnn" in name else model
    detections = []
    for image in images:
        with engine.no_grad():
            detections.append({k: v.numpy() for k, v in model([engine.from_numpy(image)])[0].items()})
    scores = [d["scores"] for d in detections]
    values = np.unique(np.concatenate(scores))
    gaps = sorted(zip(values[:-1], values[1:]), key=lambda pair: pair[0] - pair[1])
    for low, high in gaps:
        threshold = float(low + high) / 2
        counts = [int((s > threshold).sum()) for s in scores]
        if high - low >= 1e-4 and min(counts) >= 2 and max(counts) <= 200 and (
                len(set(counts)) > 1 or name.startswith("ssdlite")):
            heads.score_thresh = threshold
            return [{k: v[d["scores"] > threshold] for k, v in d.items()} for d in detections]
    raise AssertionError(f"{name}: no score threshold leaves a changing number of detections on the images")


def _assert_same_detections(got, expected, name, tie=2e-5):
    """The same scores by rank (within 1e-5); every detection whose score stands apart from its neighbours' by
    more than ``tie`` has the same label, box and keypoints (within 1e-3 px), mask (1e-4) and keypoint scores (1e-4
    of their largest): tied scores may come in either order from two implementations that round differently."""
    assert got["boxes"].shape == expected["boxes"].shape, f"{name}: {len(got['boxes'])} detections, not " \
                                                          f"{len(expected['boxes'])}"
    order, expected_order = (np.argsort(-d["scores"], kind="stable") for d in (got, expected))
    scores = expected["scores"][expected_order]
    np.testing.assert_allclose(got["scores"][order], scores, rtol=0, atol=1e-5, err_msg=f"{name} scores")
    gaps = np.abs(np.diff(scores)) > tie
    apart = np.concatenate([[True], gaps]) & np.concatenate([gaps, [True]])
    assert apart.sum() >= 2, f"{name}: nearly every score is tied"
    tolerances = {"boxes": 1e-3, "labels": 0, "masks": 1e-4, "keypoints": 1e-3}
    if "keypoints_scores" in expected:
        tolerances["keypoints_scores"] = 1e-4 * np.abs(expected["keypoints_scores"]).max(initial=1)
    for key in expected:
        if key != "scores":
            np.testing.assert_allclose(got[key][order][apart], expected[key][expected_order][apart], rtol=0,
                                       atol=tolerances[key], err_msg=f"{name} {key}")


def _photo(seed, height=149, width=179):
    """A crop of the shipped photo, scaled into [0, 1], at a seeded place (149x179 is resized to 160x192 by the
    R-CNN transform, without padding: padded borders give exactly tied scores)."""
    from PIL import Image
    from flowvision.cli.classify import ASSETS_DIR
    photo = np.asarray(Image.open(os.path.join(ASSETS_DIR, "chelsea.png")).convert("RGB"), np.float32) / 255
    rng = np.random.default_rng(seed)
    top, left = rng.integers(0, photo.shape[0] - height), rng.integers(0, photo.shape[1] - width)
    return np.ascontiguousarray(photo[top:top + height, left:left + width].transpose(2, 0, 1))


@functools.lru_cache(maxsize=None)
def exported_detector(name):
    """``_detector(name)`` with its score threshold set on three photos: the photos, its eager detections on each,
    and its ONNX file (exported on one photo). Made once for this file and the OpenVINO tests
    (test_openvino_models.py, which clears the cache), which run the same files in another runtime (Keypoint and
    Mask R-CNN's cost 5-7 s each)."""
    model = _detector(name)
    photos = [_photo(seed) for seed in (0, 1, 2)]
    expected = _threshold(model, name, photos)
    data = export_bytes(model, ([engine.from_numpy(photos[0])],), input_names=["image"])
    return photos, expected, data


@pytest.mark.parametrize("name", DETECTORS)
def test_detector(name):
    photos, expected, data = exported_detector(name)
    runner = session(data)
    for photo, reference in zip(photos, expected):
        _assert_same_detections(dict(zip(reference, runner.run(None, {"image": photo}))), reference, name)


class _KeypointDecoding(engine.nn.Module):
    def forward(self, maps, rois):
        return heatmaps_to_keypoints(maps, rois)


def _heatmaps_and_boxes(seed, count):
    """``count`` boxes' (count, 5, 13, 13) heatmaps and (count, 4) boxes from 0.2 to 120 px wide and high."""
    rng = np.random.default_rng(seed)
    maps = (rng.standard_normal((count, 5, 13, 13)) * 3).astype(np.float32)
    corners = rng.uniform(0, 300, (count, 2))
    sizes = rng.uniform(0.2, 120, (count, 2))
    return maps, np.concatenate([corners, corners + sizes], 1).astype(np.float32)


def test_keypoint_decoding_loop_matches_eager():
    maps, rois = _heatmaps_and_boxes(0, 3)
    data = export_bytes(_KeypointDecoding(), (engine.from_numpy(maps), engine.from_numpy(rois)),
                        input_names=["maps", "rois"], dynamic_axes={"maps": {0: "boxes"}, "rois": {0: "boxes"}})
    runner = session(data)
    for seed, count in enumerate((0, 1, 7, 40)):
        maps, rois = _heatmaps_and_boxes(seed + 1, count)
        expected = eager_outputs(_KeypointDecoding(), (maps, rois))
        points, scores = runner.run(None, {"maps": maps, "rois": rois})
        assert points.shape == (count, 5, 3) and scores.shape == (count, 5)
        np.testing.assert_array_equal(points, expected[0])
        np.testing.assert_allclose(scores, expected[1], rtol=0, atol=5e-5)  # heatmap values reach about 15


def test_resnet18_file_matches_torchvision():
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    reference = torchvision.models.resnet18().eval()
    model = models.resnet18().eval()
    model.load_state_dict({k: v.detach().numpy() for k, v in reference.state_dict().items()})
    x = images(0, 2, 3, 67, 73)
    data = export_bytes(model, engine.from_numpy(x[:1]), input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(run_onnx(data, {"x": x})[0], expected, rtol=1e-4, atol=1e-4)
