"""Every zoo family on an empty batch (but those whose layers another family's run covers), against torchvision
(or timm) on the same weights: classifiers and segmenters given (0, 3, H, W) in eval and in training mode (output
shapes, dtypes and keys, zero gradients, running statistics left alone, the batch counted), and every detector (but
SSD300, whose head SSDlite's run covers) given images in which it detects nothing (a score threshold of 1.0), so each
of its heads runs on no boxes (Mask R-CNN v2's BatchNorm mask head, keypoint R-CNN's heads). Each classifier's
head_hidden_size is the width of its pre-logits features (and timm's value)."""
import functools
import math
import warnings

import numpy as np
import pytest
import torch
import torchvision.models.segmentation as tv_seg
from detection_parity import builder_pair, photos, to_lib
from model_parity import (COVERED_FAMILIES, SMALL_MODELS, build_without_draws, family_sweep, is_timm_family, numpy_state,
                          randomize_norms, reference_classifier)

import engine
import flowvision.models as models
from flowvision.models.timm_families._layers import pair

# whole models, built twice each; ours with numpy's quicker initial draws (they load torchvision's weights)
# (timm's SimpleNorm warns that an empty batch's variance has no degrees of freedom)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fast_random"),
              pytest.mark.filterwarnings("ignore:var\\(\\):UserWarning")]

_SEGMENTATION_MODULES = {"fcn", "deeplabv3", "lraspp"}
_DETECTION_MODULES = {"faster_rcnn", "mask_rcnn", "keypoint_rcnn", "retinanet", "fcos", "ssd", "ssdlite"}
# RAFT is left out: torchvision's fails on an empty batch (it reshapes the sampled correlations with a -1 over no
# values), and ours too (engine's grid_sample refuses an empty batch, which torch's returns empty)
_OPTICAL_FLOW_MODULES = {"raft"}


def _num_params(name):
    """The parameter count of the model's default weights; infinite for a model without weights (they come last:
    timm's giant encoders among them)."""
    if name not in models.list_pretrained():
        return math.inf
    return models.get_model_weights(name).DEFAULT.meta["num_params"]


def _smallest(module):
    """The model of a family with the fewest parameters (aliases left out)."""
    return min((n for n in models.list_models(module=module) if not models.model_alias_of(n)), key=_num_params)


# quantizable models are left out: their float form is their float family's (int8 models do not train); so are
# families whose layers other families' runs cover (model_parity.COVERED_FAMILIES) and vgg11 (alexnet's layers and
# BatchNorm; 133M parameters, 9 s)
CLASSIFIERS = [min(names, key=_num_params) for family, names in family_sweep(
    _SEGMENTATION_MODULES | _DETECTION_MODULES | _OPTICAL_FLOW_MODULES | {"quantization"}).items()
    if family not in COVERED_FAMILIES | {"vgg"}]
# torchvision's MViT and timm's ResNeSt, XCiT, EVA, CrossViT, VOLO, MobileViT and the ECA attention nets fail on an
# empty batch (ours run one: tests/flowvision/models/test_mvit.py, test_timm_resnet_variants.py, test_timm_xcit.py,
# test_timm_eva.py, test_timm_crossvit.py, test_timm_volo.py, test_timm_mobilevit.py, test_timm_byoanet.py); timm's
# LeViT, Swin V2 and MaxxViT fail there too, and ours as theirs (their reshapes of no values with -1), as do timm's
# attention families CoaT, EdgeNeXt, EfficientFormer (v1, v2), EfficientViT (MIT, MSRA), GC ViT, Hiera, PVT v2,
# TinyViT and Twins (GC ViT's window count divides by the batch), NesT, Next-ViT, TNT, Visformer, EfficientViM, iFormer
# SwiftFormer, Sequencer, MViTv2, CSATv2, and the encoders of DeepSeek, DINOv3, Gemma 4, SAM2 (Hiera), MobileNetV5,
# Qwen3 and SAM
_REFERENCE_RESHAPE = "fails on an empty batch (a reshape of 0 elements with -1)"
_FAILS_IN_THE_REFERENCE = {"mvit_": "torchvision's MViT fails on an empty batch",
                           "resnest": f"timm's ResNeSt {_REFERENCE_RESHAPE}",
                           "xcit": "timm's XCiT fails on an empty batch (its position encoding's reshape)",
                           "eva": f"timm's EVA {_REFERENCE_RESHAPE}",
                           "crossvit": f"timm's CrossViT {_REFERENCE_RESHAPE}",
                           "volo": f"timm's VOLO {_REFERENCE_RESHAPE}",
                           "mobilevit": f"timm's MobileViT {_REFERENCE_RESHAPE}",
                           "eca_": f"timm's ECA attention {_REFERENCE_RESHAPE}",
                           "levit": f"timm's LeViT, and ours, {_REFERENCE_RESHAPE}",
                           "swinv2": f"timm's Swin V2, and ours, {_REFERENCE_RESHAPE}",
                           "maxvit_rmlp": f"timm's MaxxViT, and ours, {_REFERENCE_RESHAPE}",
                           "coat": f"timm's CoaT, and ours, {_REFERENCE_RESHAPE}",
                           "edgenext": f"timm's EdgeNeXt, and ours, {_REFERENCE_RESHAPE}",
                           "efficientformer": f"timm's EfficientFormer, and ours, {_REFERENCE_RESHAPE}",
                           "efficientvit_": f"timm's EfficientViT, and ours, {_REFERENCE_RESHAPE}",
                           "gcvit": "timm's GC ViT, and ours, fail on an empty batch (windows per image = 0 / 0)",
                           "hiera": f"timm's Hiera, and ours, {_REFERENCE_RESHAPE}",
                           "pvt_v2": f"timm's PVT v2, and ours, {_REFERENCE_RESHAPE}",
                           "tiny_vit": f"timm's TinyViT, and ours, {_REFERENCE_RESHAPE}",
                           "twins": f"timm's Twins, and ours, {_REFERENCE_RESHAPE}",
                           "nest_": f"timm's NesT, and ours, {_REFERENCE_RESHAPE}",
                           "nextvit": f"timm's Next-ViT, and ours, {_REFERENCE_RESHAPE}",
                           "tnt_": f"timm's TNT, and ours, {_REFERENCE_RESHAPE}",
                           "visformer": f"timm's Visformer, and ours, {_REFERENCE_RESHAPE}",
                           "efficientvim": f"timm's EfficientViM, and ours, {_REFERENCE_RESHAPE}",
                           "iformer": f"timm's iFormer, and ours, {_REFERENCE_RESHAPE}",
                           "swiftformer": f"timm's SwiftFormer, and ours, {_REFERENCE_RESHAPE}",
                           "sequencer": f"timm's Sequencer, and ours, {_REFERENCE_RESHAPE}",
                           "mvitv2": f"timm's MViTv2, and ours, {_REFERENCE_RESHAPE}",
                           "csatv2": f"timm's CSATv2, and ours, {_REFERENCE_RESHAPE}",
                           "deepseek_vit": f"timm's DeepSeek ViT, and ours, {_REFERENCE_RESHAPE}",
                           "vit_tiny_patch16_dinov3": f"timm's DINOv3, and ours, {_REFERENCE_RESHAPE}",
                           "gemma4_vit": f"timm's Gemma 4 ViT, and ours, {_REFERENCE_RESHAPE}",
                           "sam2_hiera": f"timm's SAM2 Hiera, and ours, {_REFERENCE_RESHAPE}",
                           "mobilenetv5": f"timm's MobileNetV5, and ours, {_REFERENCE_RESHAPE}",
                           "qwen3_vit": f"timm's Qwen3 ViT, and ours, {_REFERENCE_RESHAPE}",
                           "samvit": f"timm's SAM ViT, and ours, {_REFERENCE_RESHAPE}"}
CLASSIFIERS = [pytest.param(n, marks=pytest.mark.skip(reason=reason))
               if (reason := next((r for prefix, r in _FAILS_IN_THE_REFERENCE.items() if n.startswith(prefix)), None))
               else n for n in CLASSIFIERS]
SEGMENTERS = [_smallest(m) for m in sorted(_SEGMENTATION_MODULES)]
# ssd300_vgg16 is left out: SSDlite runs the same SSD head and postprocessing on no detections, and its VGG
# backbone, at the fixed 300 pixels, took 6 s
DETECTORS = [n for m in sorted(_DETECTION_MODULES - {"ssd"}) for n in models.list_models(module=m)]
# torchvision's GoogLeNet and Inception v3 warn without an explicit init_weights
_QUIET_INIT = {"googlenet": dict(init_weights=False), "inception_v3": dict(init_weights=False)}


def _input_size(name):
    """The smallest input the model takes, (T, H, W) for a video model; Inception v3 trains its auxiliary head
    from 299 pixels up."""
    if name == "inception_v3":
        return (299, 299)
    if name not in models.list_pretrained():
        return (64, 64)
    meta = models.get_model_weights(name).DEFAULT.meta
    if meta["categories"] == models.video.R3D_18_Weights.DEFAULT.meta["categories"]:
        return (meta.get("min_temporal_size", 4),) + tuple(max(n, 16) for n in meta["min_size"])
    return tuple(meta["min_size"])


def _outputs(result):
    """A model's outputs as {name: tensor}: a tensor, a dict, or a named tuple of tensors (aux heads)."""
    if isinstance(result, dict):
        return dict(result)
    if hasattr(result, "_fields"):
        return {k: v for k, v in zip(result._fields, result) if v is not None}
    return {"out": result}


def _same_outputs(ours, theirs):
    ours, theirs = _outputs(ours), _outputs(theirs)
    assert list(ours) == list(theirs)
    for key in theirs:
        assert tuple(ours[key].shape) == tuple(theirs[key].shape), key
        assert ours[key].dtype.name == str(theirs[key].dtype).split(".")[-1], key
        assert ours[key].numel() == 0, key


def _backward_of_nothing(ours, theirs, ours_out, theirs_out):
    """Backward through an empty batch: every parameter gets a gradient where torch gives one, all zero. Where
    torch gives none, ours may give zeros: torch's scaled_dot_product_attention returns an empty batch's output
    cut off from its attention mask, so a learnt position bias passed as the mask (timm's relative-position ViTs)
    gets no gradient there."""
    sum(v.sum() for v in _outputs(theirs_out).values()).backward()
    sum(v.sum() for v in _outputs(ours_out).values()).backward()
    ours_params = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is not None:
            assert ours_params[name].grad is not None, name
        if ours_params[name].grad is not None:
            assert not ours_params[name].grad.numpy().any(), name


def _same_buffers(ours, theirs):
    """Running statistics untouched by the empty batch, and the batch counted, as in torch."""
    ours_buffers = dict(ours.named_buffers())
    for name, b in theirs.named_buffers():
        np.testing.assert_array_equal(ours_buffers[name].numpy(), b.numpy(), err_msg=name)


def _check_empty_batch(ours, ref, size):
    x = np.zeros((0, 3) + size, np.float32)
    with torch.no_grad():
        theirs_out = ref.eval()(torch.from_numpy(x))
    with engine.no_grad():
        ours_out = ours.eval()(engine.from_numpy(x))
    _same_outputs(ours_out, theirs_out)
    theirs_out = ref.train()(torch.from_numpy(x))
    ours_out = ours.train()(engine.from_numpy(x))
    _same_outputs(ours_out, theirs_out)
    _backward_of_nothing(ours, ref, ours_out, theirs_out)
    _same_buffers(ours, ref)


def _check_head_hidden_size(ours, ref, size):
    """timm's ``head_hidden_size`` is the width of ``forward_head(pre_logits=True)``, and timm's own value where the
    reference is timm's (torchvision's classes have no such attribute)."""
    x = engine.zeros(0, 3, *size)
    with engine.no_grad():
        pre_logits = ours.eval().forward_head(ours.forward_features(x), pre_logits=True)
    assert tuple(pre_logits.shape) == (0, ours.head_hidden_size)
    if hasattr(ref, "head_hidden_size"):
        assert ours.head_hidden_size == ref.head_hidden_size


@pytest.fixture(autouse=True)
def no_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def _small_config(name):
    """The keyword arguments of ``name``'s small configuration where ``model_parity.SMALL_MODELS`` builds one through
    timm's entrypoint (NASNet-A Large and DaViT: 3 s and 2 s at full size), else none. An ``img_size`` there is the
    images' size."""
    builder = SMALL_MODELS.get(name)
    if isinstance(builder, functools.partial) and builder.func is models.create_model and is_timm_family(name):
        return builder.keywords
    return {}


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classifier_on_an_empty_batch(name):
    kwargs = {**_QUIET_INIT.get(name, {}), **_small_config(name)}
    size = pair(kwargs["img_size"]) if "img_size" in kwargs else _input_size(name)
    torch.manual_seed(0)
    # the layers keep their own initial weights: no values reach an empty batch's outputs or gradients (with He
    # weights drawn over them these tests took 76 s of CPU, 46 s so); the norms' random statistics show any update
    ref = randomize_norms(reference_classifier(name, **kwargs), 0)
    if is_timm_family(name):  # timm's default head is its default weights', which ours may not serve
        kwargs["num_classes"] = ref.num_classes
    # every weight of ours is loaded from the reference: no draws first (with fast_random's draws this file took
    # 46.0 s, 32.8 s so); numpy's warnings about the undrawn values during the build are not the empty batch's
    ours = build_without_draws(lambda: models.create_model(name, **kwargs))
    ours.load_state_dict(numpy_state(ref))
    _check_empty_batch(ours, ref, size)
    _check_head_hidden_size(ours, ref, size)


@pytest.mark.parametrize("name", SEGMENTERS)
def test_segmenter_on_an_empty_batch(name):
    kwargs = dict(weights_backbone=None, aux_loss=name != "lraspp_mobilenet_v3_large")
    torch.manual_seed(0)
    ref = randomize_norms(getattr(tv_seg, name)(**kwargs), 0)
    # every weight of ours is loaded from the reference: no draws first (see the classifiers)
    ours = build_without_draws(lambda: models.create_model(name, **kwargs))
    ours.load_state_dict(numpy_state(ref))
    _check_empty_batch(ours, ref, (48, 56))


def _nothing_detected_kwargs(name):
    """A score threshold no score passes, and (R-CNNs, RetinaNet, FCOS) small images for speed (64x96: every FPN
    level, P7 included, keeps a pixel; the detectors took 65 s of CPU at 160x240, 41 s so); R-CNNs keep 50
    proposals (not 1000: the box heads of the v2 models took 10 s for them)."""
    if name.startswith("ssd"):
        return dict(score_thresh=1.0)
    if "rcnn" in name:
        return dict(box_score_thresh=1.0, min_size=64, max_size=96, rpn_post_nms_top_n_test=50)
    return dict(score_thresh=1.0, min_size=64, max_size=96)


@pytest.mark.parametrize("name", DETECTORS)
def test_detector_on_images_without_detections(name):
    ours, ref = builder_pair(name, **_nothing_detected_kwargs(name))
    images = photos()
    with torch.no_grad():
        theirs = ref(to_lib(torch, images))
    with engine.no_grad():
        result = ours(to_lib(engine, images))
    assert len(result) == len(theirs) == len(images)
    for ours_image, theirs_image in zip(result, theirs):
        _same_outputs(ours_image, theirs_image)
