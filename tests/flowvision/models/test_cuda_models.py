"""Every zoo model on the CUDA backend against the same model on the CPU: eval outputs within 1e-4
relative, training losses and gradients, and a resnet18 training run on the digits.

On a GPU (marked ``cuda``) every segmentation, detection and optical flow model and the smallest classifier of
each family run (``CUDA_EVERY_MODEL=1``: every classifier up to 300M parameters); on the CPU emulation of CuPy one
model of each kind does (the emulated kernels run serially; ``EMULATE_EVERY_MODEL=1`` runs the GPU's list).
"""
import copy
import math
import os
import warnings

import numpy as np
import pytest
from model_parity import (COVERED_FAMILIES, SMALL_MODELS, InferenceGraph, family_sweep, randomize_engine_norms,
                          skip_random_init)
from op_check import assert_close

import engine
import flowvision.models as models
import flowvision.models.detection as det
import flowvision.models.segmentation as seg
from flowvision.datasets import load_digits

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

def _published(name, key, default):
    """A field of the model's DEFAULT weights' metadata (``default`` without published weights)."""
    if name not in models.list_pretrained():
        return default
    return models.get_model_weights(name).DEFAULT.meta.get(key, default)


_SEGMENTATION_MODULES = {"fcn", "deeplabv3", "lraspp"}
_DETECTION_MODULES = {"faster_rcnn", "mask_rcnn", "keypoint_rcnn", "retinanet", "fcos", "ssd", "ssdlite"}
_OPTICAL_FLOW_MODULES = {"raft"}
SEGMENTERS = [n for m in sorted(_SEGMENTATION_MODULES) for n in models.list_models(module=m) if not n.endswith("coco")]
DETECTORS = [n for m in sorted(_DETECTION_MODULES) for n in models.list_models(module=m)]
OPTICAL_FLOW = [n for m in sorted(_OPTICAL_FLOW_MODULES) for n in models.list_models(module=m)]
# Models above this many parameters are left out of the GPU run: each is built and run on the CPU too (the
# reference), regnet_y_128gf alone taking ~25 s and 3 GB there; their kernels and layers are their
# family's smaller models'.
_MAX_PARAMETERS = 300_000_000
# quantizable models are left out: int8 inference runs on the CPU only (as torch's), and their float form is
# their float family's
_FAMILIES = {family: names for family, names in family_sweep(
    _SEGMENTATION_MODULES | _DETECTION_MODULES | _OPTICAL_FLOW_MODULES | {"quantization"}).items()
    if family not in COVERED_FAMILIES}
# The GPU run takes the smallest model of each family (the others share its kernels and layers), or with
# CUDA_EVERY_MODEL=1 (scripts/gpu_check.py --every-model) every classifier up to _MAX_PARAMETERS (those without
# weights, whose size the manifest does not give, left out: they include 1B-parameter encoders, and their layers are
# their trained siblings').
if os.environ.get("CUDA_EVERY_MODEL"):
    CLASSIFIERS = [n for names in _FAMILIES.values() for n in names
                   if _published(n, "num_params", math.inf) <= _MAX_PARAMETERS]
else:
    CLASSIFIERS = [min(names, key=lambda n: _published(n, "num_params", math.inf)) for names in _FAMILIES.values()]
EMULATED = {"retinanet_resnet50_fpn", "resnet18", "resnext50_32x4d", "mobilenet_v3_small", "vgg11_bn", "lraspp_mobilenet_v3_large",
            "fcn_resnet50", "fasterrcnn_mobilenet_v3_large_320_fpn", "ssdlite320_mobilenet_v3_large", "raft_small"}


# Training steps emulated (the others, slow there, run on the GPU).
EMULATED_TRAINING = {"resnet18", "mobilenet_v3_small", "resnext50_32x4d", "fasterrcnn_mobilenet_v3_large_320_fpn",
                     "ssdlite320_mobilenet_v3_large"}


def _only_on_gpu_unless_emulated(cuda, name, emulated=EMULATED):
    if cuda == "emulated" and name not in emulated and not os.environ.get("EMULATE_EVERY_MODEL"):
        pytest.skip("the emulation runs one model per family; the GPU runs them all")


def cpu_and_gpu(build, seed=0, random_norms=True):
    """A seeded model (with random norms) on the CPU, and its copy on the GPU (loaded from the CPU's
    state_dict into a model moved there first, as users move checkpoints)."""
    engine.manual_seed(seed)
    cpu = build()
    if random_norms:
        randomize_engine_norms(cpu, seed)
    # the GPU model's own initial weights are never used (the CPU's state_dict replaces them): left undrawn
    # (a second full draw took about 0.01 s per million parameters, 1.3 s for vgg11_bn)
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        skip_random_init(patch)
        warnings.simplefilter("ignore", RuntimeWarning)  # _spread_scores scales the undrawn values
        gpu = build().cuda()
    gpu.load_state_dict(cpu.state_dict())
    assert all(p.device.type == "cuda" for p in gpu.parameters())
    return cpu, gpu


def _images(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _is_video(name):
    return models.model_entrypoint(name).__module__.startswith(models.video.__name__)


# Image sizes a classifier's test tries in order, each raised to the weights' min_size (MaxViT and ViT need their
# 224x224), then timm's default size for the name: the first its CPU model takes. Patch models without a min_size
# take multiples of 16 or 28 (14-pixel patches merged 2x2: deepseek_vit); HRNet and Hiera multiples of 32; models
# without weights built for one size (ViTamin, BoTNet-50, HaloNet-H1) only that.
_IMAGE_SIZES = [(64, 72), (64, 96), (56, 84)]


def _default_size(name):
    """timm's default input size (height, width) for ``name``; 224x224 for torchvision's names."""
    import timm

    cfg = timm.models.get_pretrained_cfg(name)
    return tuple(cfg.input_size[1:]) if cfg is not None else (224, 224)


def _reference_eval(model, name):
    """A batch of two images (clips for video models) of the first size in ``_IMAGE_SIZES`` or the default one that
    ``model`` (on the CPU, in eval mode) takes, and its output on them."""
    min_height, min_width = _published(name, "min_size", (1, 1))
    frames = (max(4, _published(name, "min_temporal_size", 1)),) if _is_video(name) else ()
    sizes = _IMAGE_SIZES + [_default_size(name)]
    for height, width in sizes:
        x = _images(0, 2, 3, *frames, max(height, min_height), max(width, min_width))
        try:
            with engine.no_grad():
                return x, model(engine.from_numpy(x))
        except (ValueError, RuntimeError) as error:
            refused = error
    raise AssertionError(f"{name} takes none of the sizes {sizes}: {refused}")


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_eval(cuda, name):
    _only_on_gpu_unless_emulated(cuda, name)
    cpu, gpu = cpu_and_gpu(lambda: models.create_model(name))
    x, ref = _reference_eval(cpu.eval(), name)
    with engine.no_grad():
        out = gpu.eval()(engine.from_numpy(x).cuda())
    assert out.device.type == "cuda"
    assert_close(out.cpu().numpy(), ref.numpy(), 1e-4, name)


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_graph_is_captured(cuda, name):
    """Each classifier in an eval nn.Graph on the GPU: its plan captured into a CUDA graph (no op refuses the
    capture: host copies, host reads, CuPy's cuBLAS calls) and replays equal to eager. A sweep run only with
    CUDA_EVERY_MODEL=1 on a GPU or EMULATE_EVERY_MODEL=1 on the emulation (test_graph_inference_on_gpu runs a few
    models in every run): there, on the emulation, it found the host-made constants test_device_placement keeps."""
    if not os.environ.get("CUDA_EVERY_MODEL" if cuda == "gpu" else "EMULATE_EVERY_MODEL"):
        pytest.skip("a sweep: CUDA_EVERY_MODEL=1 on a GPU, EMULATE_EVERY_MODEL=1 on the emulation")
    engine.manual_seed(0)
    model = models.create_model(name).eval()
    x, _ = _reference_eval(model, name)
    model.cuda()

    graph = InferenceGraph(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # nn.Graph warns where it cannot capture
        for shift in (0.0, 0.1, 0.2):
            images = engine.from_numpy(x + np.float32(shift)).cuda()
            with engine.no_grad():
                eager = model(images)
            assert_close(graph(images).cpu().numpy(), eager.cpu().numpy(), 1e-4, f"{name} replay")
    assert graph._last_plan.captured is not None


@pytest.mark.parametrize("name", SEGMENTERS)
def test_segmentation_eval(cuda, name):
    _only_on_gpu_unless_emulated(cuda, name)
    cpu, gpu = cpu_and_gpu(lambda: models.create_model(name, weights_backbone=None))
    x = _images(1, 2, 3, 70, 58)
    with engine.no_grad():
        ref = cpu.eval()(engine.from_numpy(x))
        out = gpu.eval()(engine.from_numpy(x).cuda())
    assert list(out) == list(ref)
    for key in ref:
        assert out[key].device.type == "cuda"
        assert_close(out[key].cpu().numpy(), ref[key].numpy(), 1e-4, f"{name} {key}")


@pytest.mark.parametrize("name", OPTICAL_FLOW)
def test_optical_flow_eval(cuda, name):
    """Every flow prediction of two updates on a pair of the smallest images RAFT takes (the correlation lookup's
    grid_sample, the convex upsampling's unfold and softmax on the GPU)."""
    _only_on_gpu_unless_emulated(cuda, name)
    cpu, gpu = cpu_and_gpu(lambda: models.create_model(name))
    pair = [_images(seed, 2, 3, 128, 136) for seed in (5, 6)]
    with engine.no_grad():
        ref = cpu.eval()(*[engine.from_numpy(x) for x in pair], num_flow_updates=2)
        out = gpu.eval()(*[engine.from_numpy(x).cuda() for x in pair], num_flow_updates=2)
    assert len(out) == len(ref) == 2
    for i, (flow, expected) in enumerate(zip(out, ref)):
        assert flow.device.type == "cuda"
        assert_close(flow.cpu().numpy(), expected.numpy(), 1e-4, f"{name} flow {i}")


# Small images, few classes, and classification heads scaled up so that random weights give spread-out
# scores: the same detections survive on both devices (tied scores could swap at a cut).
_MOBILENET_RCNN_HEADS = {"rpn.head.cls_logits.weight": 200.0, "rpn.head.bbox_pred.weight": 100.0,
                         "roi_heads.box_predictor.cls_score.weight": 150.0,
                         "roi_heads.box_predictor.bbox_pred.weight": 50.0}
_RESNET_RCNN_HEADS = {}
_ONE_STAGE_HEAD = {"head.classification_head.cls_logits.weight": 8.0}
_DETECTION = {"fasterrcnn_mobilenet": _MOBILENET_RCNN_HEADS, "fasterrcnn": _RESNET_RCNN_HEADS,
              "maskrcnn": _RESNET_RCNN_HEADS, "keypointrcnn": _RESNET_RCNN_HEADS, "retinanet": _ONE_STAGE_HEAD,
              "fcos": _ONE_STAGE_HEAD, "ssd": {}}


def _detector(name, **extra):
    kwargs = dict(weights_backbone=None, num_classes=2 if name.startswith("keypoint") else 5, **extra)
    if not name.startswith("ssd"):
        kwargs.update(min_size=160, max_size=200)
    if "rcnn" in name:
        kwargs.update(rpn_post_nms_top_n_test=100, box_detections_per_img=20)
    if name.startswith("keypoint"):
        kwargs.update(box_score_thresh=0.0)  # its one random class scores under the default 0.05 on one image
    return getattr(det, name)(**kwargs)


def _spread_scores(model, name):
    scales = next(v for k, v in _DETECTION.items() if name.startswith(k))
    with engine.no_grad():
        for parameter_name, factor in scales.items():
            model.get_parameter(parameter_name).mul_(factor)
    if name.startswith("ssd"):  # on noise images whole feature maps are zero, so their anchors' logits tie exactly
        model.head.classification_head.register_forward_hook(_untie_logits)
    return model


def _untie_logits(module, inputs, logits):
    """The (N, anchors, classes) logits plus anchor index times class number times a step, the same on both devices
    and far above their rounding (a softmax ignores what is added to all of an anchor's logits alike): no two
    scores tie, so which of tied candidates a top-k keeps (torch's CPU choice, replayed, against 1-ulp noise on
    the GPU) cannot decide the detections."""
    anchors, classes = logits.shape[1:]
    options = dict(dtype=logits.dtype, device=logits.device)
    ramp = engine.arange(anchors, **options).reshape(1, -1, 1) * engine.arange(1, classes + 1, **options)
    return logits + ramp * (1e-3 / logits[0].numel())


def _photo_batch(seed):
    """Two noise images of one size that the transform neither resizes nor pads (padding's constant
    features give exactly tied scores)."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(0, 1, (3, 160, 192)).astype(np.float32) for _ in range(2)]


@pytest.mark.parametrize("name", DETECTORS)
def test_detection_eval(cuda, name):
    """The backbone's features in float32 within 1e-4; the detections (boxes, scores, labels, masks,
    keypoints) in float64, where the rounding of the two devices cannot reorder near-tied random scores."""
    _only_on_gpu_unless_emulated(cuda, name)
    cpu, gpu = cpu_and_gpu(lambda: _spread_scores(_detector(name), name))
    images = _photo_batch(2)
    features = {}
    for model, device in ((cpu, "cpu"), (gpu, "cuda")):
        model.backbone.register_forward_hook(lambda m, i, out, d=device: features.__setitem__(d, out))
        with engine.no_grad():
            model.eval()([engine.from_numpy(x).to(device) for x in images])
    for level in features["cpu"]:
        assert features["cuda"][level].device.type == "cuda"
        assert_close(features["cuda"][level].cpu().numpy(), features["cpu"][level].numpy(), 1e-4, f"{name} {level}")
    cpu.double(), gpu.double()
    with engine.no_grad():
        ref = cpu([engine.from_numpy(x.astype(np.float64)) for x in images])
        out = gpu([engine.from_numpy(x.astype(np.float64)).cuda() for x in images])
    for o, r in zip(out, ref):
        assert sorted(o) == sorted(r)
        assert all(o[key].device.type == "cuda" and o[key].dtype == r[key].dtype for key in r)
        _assert_same_detections({k: v.cpu().numpy() for k, v in o.items()}, {k: v.numpy() for k, v in r.items()},
                                name)


def _assert_same_detections(out, ref, name, rtol=1e-6, tie=1e-10):
    """The same scores, by rank; every detection whose score stands apart from its neighbours' has the same
    box, label, mask and keypoints on both devices (exactly tied scores may be ordered differently)."""
    order, ref_order = (np.argsort(-d["scores"], kind="stable") for d in (out, ref))
    ref_scores = ref["scores"][ref_order]
    assert len(ref_scores) > 0, f"{name}: no detections to compare"
    assert_close(out["scores"][order], ref_scores, rtol, f"{name} scores")
    gaps = np.abs(np.diff(ref_scores)) > tie * np.abs(ref_scores).max()
    apart = np.concatenate([[True], gaps]) & np.concatenate([gaps, [True]])
    assert apart.sum() >= min(10, len(ref_scores)), f"{name}: nearly every score is tied"
    for key in ref:
        assert_close(out[key][order][apart], ref[key][ref_order][apart], rtol, f"{name} {key}")


def _assert_same_training_step(cpu, gpu, loss_of, rtol32=1e-4):
    """One training forward and backward on each device: the same float32 loss within ``rtol32``, then in
    float64 the same loss and every gradient within 1e-7 (in float32 a ReLU or a max-pool window whose
    input is within rounding of its kink routes a gradient differently on two devices, and BatchNorm
    spreads that over its channel; float64 leaves no such ties)."""
    cpu.train(), gpu.train()
    loss, gpu_loss = loss_of(cpu, "cpu", np.float32), loss_of(gpu, "cuda", np.float32)
    assert gpu_loss.device.type == "cuda"
    assert_close(gpu_loss.detach().cpu().numpy(), loss.detach().numpy(), rtol32, "float32 loss")
    cpu.double(), gpu.double()
    loss, gpu_loss = loss_of(cpu, "cpu", np.float64), loss_of(gpu, "cuda", np.float64)
    assert_close(gpu_loss.detach().cpu().numpy(), loss.detach().numpy(), 1e-7, "loss")
    loss.backward(), gpu_loss.backward()
    params, gpu_params = dict(cpu.named_parameters()), dict(gpu.named_parameters())
    grads = {n: p.grad.numpy() for n, p in params.items() if p.grad is not None}
    assert sorted(grads) == sorted(n for n, p in gpu_params.items() if p.grad is not None)
    largest = max(np.abs(g).max() for g in grads.values())
    for name, grad in grads.items():
        assert gpu_params[name].grad.device.type == "cuda", name
        error = np.abs(gpu_params[name].grad.cpu().numpy() - grad).max()
        # gradients that are zero but for rounding (a bias before BatchNorm) are measured against the largest
        assert error <= 1e-7 * max(np.abs(grad).max(), 1e-6 * largest), f"grad of {name}: {error:.3g}"


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "resnext50_32x4d", "vgg11_bn"])
def test_classifier_training_step(cuda, name):
    _only_on_gpu_unless_emulated(cuda, name, EMULATED_TRAINING)
    options = {} if name.startswith("res") else {"dropout": 0.0}  # dropout masks are drawn on each device
    cpu, gpu = cpu_and_gpu(lambda: models.create_model(name, num_classes=7, **options))
    x, y = _images(3, 4, 3, 48, 40), np.array([0, 3, 6, 2])
    loss_fn = engine.nn.CrossEntropyLoss()
    _assert_same_training_step(cpu, gpu, lambda m, d, dt: loss_fn(m(engine.from_numpy(x.astype(dt)).to(d)),
                                                                  engine.from_numpy(y).to(d)))


def test_segmentation_training_step(cuda):
    cpu, gpu = cpu_and_gpu(lambda: models.create_model("lraspp_mobilenet_v3_large", num_classes=5,
                                                       weights_backbone=None))
    x, y = _images(4, 2, 3, 64, 56), np.random.default_rng(4).integers(0, 5, (2, 64, 56))
    _assert_same_training_step(cpu, gpu, lambda m, d, dt: engine.nn.functional.cross_entropy(
        m(engine.from_numpy(x.astype(dt)).to(d))["out"], engine.from_numpy(y).to(d)))


@pytest.mark.parametrize("name", ["fasterrcnn_mobilenet_v3_large_320_fpn", "retinanet_resnet50_fpn",
                                  "maskrcnn_resnet50_fpn", "keypointrcnn_resnet50_fpn", "fcos_resnet50_fpn",
                                  "ssdlite320_mobilenet_v3_large"])
def test_detection_training_step(cuda, name):
    _only_on_gpu_unless_emulated(cuda, name, EMULATED_TRAINING)
    # R-CNNs train their box head on 128 sampled proposals an image, not 512: the same losses and gradients to
    # compare, and fasterrcnn_mobilenet_v3_large_320_fpn's step took 11.3 s emulated with 512, 4.1 s with 128
    cpu, gpu = cpu_and_gpu(lambda: _detector(name, **({"box_batch_size_per_image": 128} if "rcnn" in name else {})))
    images = _photo_batch(5)
    boxes = [np.array([[10, 20, 120, 140]], np.float32), np.array([[5, 5, 60, 90], [70, 40, 130, 160]], np.float32)]
    labels = [np.array([1]), np.array([1, 1])] if name.startswith("keypoint") else [np.array([3]), np.array([1, 4])]
    masks = [np.zeros((len(b),) + x.shape[1:], np.uint8) for b, x in zip(boxes, images)]
    keypoints = [np.concatenate([np.random.default_rng(i).uniform(10, 120, (len(b), 17, 2)),
                                 np.ones((len(b), 17, 1))], 2).astype(np.float32) for i, b in enumerate(boxes)]
    for m, b in zip(masks, boxes):
        for i, (x1, y1, x2, y2) in enumerate(b.astype(int)):
            m[i, y1:y2, x1:x2] = 1

    def loss_of(model, device, dtype):
        engine.manual_seed(7)  # the samplers of positive and negative proposals draw on the host
        # keypoints stay float32, as torchvision requires of them
        targets = [{"boxes": engine.from_numpy(b.astype(dtype)).to(device), "labels": engine.from_numpy(lb).to(device),
                    "masks": engine.from_numpy(m).to(device), "keypoints": engine.from_numpy(k).to(device)}
                   for b, lb, m, k in zip(boxes, labels, masks, keypoints)]
        losses = model([engine.from_numpy(x.astype(dtype)).to(device) for x in images], targets)
        return sum(losses.values())
    # float32 detection losses sum several heads' over sampled proposals: 5e-4
    _assert_same_training_step(cpu, gpu, loss_of, rtol32=5e-4)


def _digits_run(model, device, dtype, frozen_norms):
    """Six SGD-momentum steps of resnet18 on batches of 16 digits (upsampled to 16x16), with weight decay,
    gradient clipping and a step scheduler; returns the losses. (At 32x32 the emulated test took 5.6 s, 3.1 s at
    16x16; the float32 losses of the two devices differ by 1.0e-7 relative at either size, the tolerance being
    1e-4. Batches of 32 took 9.9 s of CPU, 6.9 s batches of 16.)"""
    (train_x, train_y), _ = load_digits()
    optimizer = engine.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    scheduler = engine.optim.lr_scheduler.StepLR(optimizer, 3, 0.5)
    model.train()
    if frozen_norms:
        for m in model.modules():
            if isinstance(m, engine.nn.BatchNorm2d):
                m.eval()
    losses = []
    for step in range(6):
        idx = np.arange(step * 16, (step + 1) * 16)
        x = engine.from_numpy(np.repeat(train_x[idx], 3, axis=1).astype(dtype)).to(device)
        x = engine.nn.functional.interpolate(x, size=(16, 16), mode="bilinear")
        loss = engine.nn.functional.cross_entropy(model(x), engine.from_numpy(train_y[idx]).to(device))
        optimizer.zero_grad()
        loss.backward()
        engine.nn.utils.clip_grad_norm_(model.parameters(), 50.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    assert all(s["momentum_buffer"].device.type == device for s in optimizer.state.values())
    return np.array(losses)


def test_resnet18_digits_losses(cuda):
    """resnet18 trained on the digits: in float32 with BatchNorm's statistics frozen (fine-tuning), the first
    6 losses agree within 1e-4; with BatchNorm training, in float64 within 1e-9 (on a GPU; on the emulation,
    test_classifier_training_step checks float64 training steps). (In float32, training BatchNorm makes the
    run chaotic: from step 4 on its losses move by 1e-3 to 1e-1 between any two float32 runs, the CPU's
    against float64 too, as ReLU and max-pool ties resolve differently.)"""
    cpu, gpu = cpu_and_gpu(lambda: models.resnet18(num_classes=10), random_norms=False)
    assert_close(_digits_run(gpu, "cuda", np.float32, True), _digits_run(cpu, "cpu", np.float32, True), 1e-4,
                 "float32 losses")
    if cuda == "emulated":
        return
    cpu, gpu = cpu_and_gpu(lambda: models.resnet18(num_classes=10).double(), random_norms=False)
    assert_close(_digits_run(gpu, "cuda", np.float64, False), _digits_run(cpu, "cpu", np.float64, False), 1e-9,
                 "float64 losses")


#: one model per kind of block: residual convolutions, squeeze-excitation with hardswish, depthwise
#: convolutions with LayerNorm and GELU, shifted-window attention, and a segmentation head that resizes.
#: ConvNeXt's and Swin's blocks run in small configurations of convnext_tiny's and swin_t's classes
#: (model_parity.SMALL_MODELS): full size took 3.5 and 4.8 s emulated.
_GRAPH_MODELS = {"resnet18": lambda: models.resnet18(num_classes=5),
                 "mobilenet_v3_small": lambda: models.mobilenet_v3_small(num_classes=5),
                 "convnext": lambda: SMALL_MODELS["convnext_tiny"](num_classes=5),
                 "swin": lambda: SMALL_MODELS["swin_t"](num_classes=5),
                 "lraspp_mobilenet_v3_large": lambda: seg.lraspp_mobilenet_v3_large(num_classes=3,
                                                                                    weights_backbone=None)}


@pytest.mark.parametrize("name", sorted(_GRAPH_MODELS))
def test_graph_inference_on_gpu(cuda, name):
    """nn.Graph on the GPU (fused convolutions, the plan captured into a CUDA graph and replayed) equals eager
    on each call, with no op refusing the capture."""
    _, gpu = cpu_and_gpu(_GRAPH_MODELS[name])
    gpu.eval()

    graph = InferenceGraph(gpu)
    for seed in (6, 7, 8):
        x = engine.from_numpy(_images(seed, 2, 3, 64, 72)).cuda()
        with engine.no_grad():
            eager = gpu(x)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            out = graph(x)
        if isinstance(out, dict):
            out, eager = out["out"], eager["out"]
        assert out.device.type == "cuda"
        assert_close(out.cpu().numpy(), eager.cpu().numpy(), 1e-5, f"graph call with seed {seed}")
    assert graph._last_plan.captured is not None


def test_deepcopy_and_state_dict_on_gpu(cuda):
    model = models.resnet18(num_classes=3).cuda()
    twin = copy.deepcopy(model)
    assert all(p.device.type == "cuda" for p in twin.parameters())
    state = twin.state_dict()
    assert all(v.device.type == "cuda" for v in state.values())


def test_graph_training_with_dropout_on_gpu(cuda, monkeypatch):
    """A training nn.Graph of a model with dropout and stochastic depth (efficientnet_b0) on the GPU: captured
    from its second call (no op refuses), and its losses and weights equal eager steps' after the same seed.
    Every GEMM goes through the cuBLAS binding a capture uses: CuPy's matmul sums in another order, which these
    few steps amplify to 3e-4 (measured on the emulation; with one GEMM for all, it measures 0)."""
    from engine.backends.cuda import cublas, gemm
    monkeypatch.setattr(gemm, "matmul", lambda a, b, out=None: cublas.matmul(a, b, out=out))
    _, gpu = cpu_and_gpu(lambda: models.efficientnet_b0(num_classes=5))
    start = {k: v.clone() for k, v in gpu.state_dict().items()}
    batches = [(engine.from_numpy(_images(seed, 4, 3, 40, 48)).cuda(),
                engine.tensor([seed % 5, 4, 1, 2], device="cuda")) for seed in range(4)]
    runs = []
    for use_graph in (True, False):
        gpu.load_state_dict(start)
        gpu.train()
        optimizer = engine.optim.SGD(gpu.parameters(), lr=0.001, momentum=0.9)

        class Train(engine.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = gpu
                self.add_optimizer(optimizer)

            def build(self, x, y):
                loss = engine.nn.functional.cross_entropy(self.model(x), y)
                loss.backward()
                return loss
        graph = Train()
        engine.manual_seed(11)
        losses = []
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            for x, y in batches:
                if use_graph:
                    losses.append(graph(x, y).item())
                    continue
                optimizer.zero_grad()
                loss = engine.nn.functional.cross_entropy(gpu(x), y)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        runs.append((losses, {k: v.cpu().numpy() for k, v in gpu.state_dict().items()}, graph))
    assert next(iter(runs[0][2]._steps.values())) is not False
    assert_close(np.array(runs[0][0]), np.array(runs[1][0]), 1e-5, "losses")
    for key, value in runs[1][1].items():
        assert_close(runs[0][1][key], value, 1e-5, key)
