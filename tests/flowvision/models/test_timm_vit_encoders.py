"""timm parity of the pretrained ViT encoders in timm's vision_transformer module (DINOv2, SigLIP, CLIP, the
ImageNet-21k / I-JEPA / DINO ViTs, TIPSv2, InternViT-300M, C-RADIO, AIMv2): every entrypoint hands its builder
timm's arguments and image size; the models up to ViT-B build timm's layout at full size (the bigger ones at full
width with fewer blocks); each new code path (QuickGELU CLIP blocks, AIMv2's RMS-normed SwiGLU blocks without
biases, DINOv2's register tokens and layer scale at another image size, attention pooling with the tanh GELU,
DINOv2-g's packed SwiGLU, RADIO / InternViT without a final norm) on a small model: float32 eval outputs, a float64
train step with every gradient, seeded initialisation, drop masks, the head API, features_only, intermediates and
pruning, and list_models."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.layers
import timm.models.vision_transformer as timm_vit
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import vision_transformer
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_structure,
                          check_train_step, image_batch, linear_weights, numpy_state, randomize_parameters,
                          skip_random_init, without_default_head)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

DINOV2 = [f"vit_{size}_patch14{reg}_dinov2" for reg in ("", "_reg4") for size in ("small", "base", "large", "giant")]
SIGLIP = ([f"vit_base_patch16_siglip{gap}_{s}" for gap in ("", "_gap") for s in (224, 256, 384, 512)]
          + ["vit_base_patch32_siglip_256", "vit_base_patch32_siglip_gap_256"]
          + [f"vit_large_patch16_siglip{gap}_{s}" for gap in ("", "_gap") for s in (256, 384, 512)]
          + ["vit_so400m_patch14_siglip_224", "vit_so400m_patch14_siglip_384"]
          + [f"vit_so400m_patch14_siglip_gap_{s}" for s in (224, 384, 448, 896)]
          + [f"vit_so400m_patch16_siglip{gap}_{s}" for gap in ("", "_gap") for s in (256, 384, 512)]
          + [f"vit_giantopt_patch16_siglip{gap}_{s}" for gap in ("", "_gap") for s in (256, 384)])
CLIP = ["vit_base_patch16_clip_quickgelu_224", "vit_base_patch16_plus_clip_240", "vit_base_patch32_clip_256",
        "vit_base_patch32_clip_quickgelu_224", "vit_betwixt_patch32_clip_224", "vit_giant_patch14_clip_224",
        "vit_gigantic_patch14_clip_224", "vit_gigantic_patch14_clip_378", "vit_gigantic_patch14_clip_quickgelu_224",
        "vit_huge_patch14_clip_378", "vit_huge_patch14_clip_quickgelu_224", "vit_huge_patch14_clip_quickgelu_378",
        "vit_large_patch14_clip_quickgelu_224", "vit_large_patch14_clip_quickgelu_336", "vit_medium_patch16_clip_224",
        "vit_medium_patch32_clip_224", "vit_xsmall_patch16_clip_224"]
PLAIN = ["vit_small_patch8_224", "vit_large_patch32_224", "vit_huge_patch14_224", "vit_huge_patch14_gap_224",
         "vit_huge_patch16_gap_448", "vit_giant_patch16_gap_224", "vit_medium_patch16_gap_240"]
OTHERS = ["vit_base_patch14_reg1_tipsv2", "vit_large_patch14_reg1_tipsv2", "vit_giant_patch14_reg1_tipsv2",
          "vit_so400m_patch14_reg1_tipsv2", "vit_intern300m_patch14_448", "vit_base_patch16_radio_v3",
          "vit_large_patch16_radio_v3", "vit_huge_patch16_radio_v3", "vit_giant_patch16_radio_v3",
          "vit_huge_patch16_radio_v4", "vit_so400m_patch16_radio_v4"]
AIMV2 = [f"aimv2_{size}_patch14_{s}" for size in ("large", "huge", "1b", "3b") for s in (224, 336, 448)]
NAMES = DINOV2 + SIGLIP + CLIP + PLAIN + OTHERS + AIMV2
# full size (init skipped), one of each kind under 300M parameters; the headless ones as their weights are
FULL_SIZE = ["vit_small_patch14_reg4_dinov2", "vit_base_patch32_siglip_256", "vit_base_patch16_clip_quickgelu_224",
             "vit_base_patch16_radio_v3"]
# full width, fewer blocks: the bigger kinds with new layers
FULL_WIDTH = {"aimv2_large_patch14_224": 2, "vit_giant_patch14_dinov2": 1, "vit_intern300m_patch14_448": 2}
PRINTED = {"Linear", "Conv2d", "LayerNorm", "RmsNorm", "GELU", "GELUTanh", "QuickGELU", "SiLU", "Dropout"}
TOL = 1e-5
SIZE = (35, 33)
TINY = dict(img_size=SIZE, patch_size=8, embed_dim=24, depth=2, num_heads=3, num_classes=7)

# One small configuration per new code path; layers by name (``_layers`` resolves them for each side)
KINDS = {
    "clip_quickgelu": dict(pre_norm=True, norm="clip", act_layer="quick_gelu"),
    "aimv2_swiglu_rms": dict(class_token=False, fc_norm=False, global_pool="avg", qkv_bias=False, proj_bias=False,
                             act_layer="silu", norm="rms", embed_norm="rms", mlp="SwiGLU", mlp_ratio=2.75),
    "dinov2_reg_dynamic": dict(init_values=1e-5, reg_tokens=4, no_embed_class=True, dynamic_img_size=True,
                               img_size=(32, 24)),
    "siglip_map_gelu_tanh": dict(class_token=False, global_pool="map", act_layer="gelu_tanh"),
    "packed_swiglu_reg": dict(init_values=1.0, reg_tokens=1, no_embed_class=True, mlp="SwiGLUPacked",
                              act_layer="SiLU", mlp_ratio=2.66667 * 2),
    "radio_no_final_norm": dict(init_values=1e-5, reg_tokens=3, no_embed_class=True, final_norm=False),
}
DYNAMIC_SIZE = (40, 48)  # another grid than the 4 x 3 built one: the position embeddings are resampled


def _side_layers(side):
    """The norm, MLP and activation classes a small configuration names, on timm's side or ours."""
    if side is timm_vit:
        return dict(clip=partial(timm.layers.LayerNorm, eps=1e-5), rms=partial(timm.layers.RmsNorm, eps=1e-5),
                    SwiGLU=timm.layers.SwiGLU, SwiGLUPacked=timm.layers.SwiGLUPacked, SiLU=torch.nn.SiLU)
    return dict(clip=partial(engine.nn.LayerNorm, eps=1e-5), rms=partial(vision_transformer.RmsNorm, eps=1e-5),
                SwiGLU=vision_transformer.SwiGLU, SwiGLUPacked=vision_transformer.SwiGLUPacked, SiLU=engine.nn.SiLU)


def _config(kind, side, **extra):
    """TINY with the kind's arguments for timm's VisionTransformer (``side`` timm_vit) or ours."""
    kwargs = {**TINY, **KINDS[kind], **extra}
    layers = _side_layers(side)
    for name, key in (("norm", "norm_layer"), ("embed_norm", "embed_norm_layer"), ("mlp", "mlp_layer")):
        if name in kwargs:
            kwargs[key] = layers[kwargs.pop(name)]
    if kwargs.get("act_layer") == "SiLU":
        kwargs["act_layer"] = layers["SiLU"]
    return kwargs


def _randomize(model, seed):
    """Random parameters (layer scales, tokens, position embeddings and the pool's latent included)."""
    return randomize_parameters(model, seed, scales=("gamma",),
                                tokens=("cls_token", "reg_token", "pos_embed", "latent"))


def _pair(kind, seed, **extra):
    """timm's small model of ``kind`` with random weights and ours with them, both in eval mode."""
    reference = _randomize(timm_vit.VisionTransformer(**_config(kind, timm_vit, **extra), weight_init="skip"), seed)
    ours = vision_transformer.VisionTransformer(**_config(kind, vision_transformer, **extra), weight_init="skip")
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def _input_size(kind):
    """The image size a kind runs at: another than it was built for with a dynamic size."""
    return DYNAMIC_SIZE if KINDS[kind].get("dynamic_img_size") else SIZE


def _comparable(value):
    """A builder argument as both libraries' values compare: classes by name, partials by class name and keywords."""
    if isinstance(value, partial):
        return value.func.__name__, value.args, {k: _comparable(v) for k, v in value.keywords.items()}
    if isinstance(value, type):
        return value.__name__
    return value


def test_every_entrypoint_passes_timm_arguments(monkeypatch):
    """Each entrypoint hands the builder timm's arguments (layers by class name and keywords) and the image size of
    timm's weights (what timm's builder adds from them); none is built."""
    ours_calls = capture_builder(monkeypatch, vision_transformer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_vit, "build_model_with_cfg")
    for name in NAMES:
        getattr(vision_transformer, name)()
        getattr(timm_vit, name)()
    assert len(ours_calls) == len(timm_calls) == len(NAMES) == 87
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is vision_transformer.VisionTransformer and timm_cls is timm_vit.VisionTransformer
        expected = {k: _comparable(v) for k, v in timm_kwargs.items()
                    if k not in ("pretrained_filter_fn", "pretrained_strict", "feature_cfg")}
        expected["img_size"] = timm.layers.to_2tuple(timm_kwargs.get(
            "img_size", timm.models.get_pretrained_cfg(name).input_size[-1]))
        ours = {k: _comparable(v) for k, v in without_default_head(name, ours_kwargs).items()}
        assert ours.pop("progress") is True
        ours["img_size"] = vision_transformer.pair(ours.get("img_size", 224))
        assert ours == expected, name


@pytest.mark.parametrize("name", FULL_SIZE + list(FULL_WIDTH))
def test_layout_matches_timm(name, monkeypatch):
    """Full width (full depth for those up to ViT-B), init skipped, timm's on the meta device, both headless as
    the weights are: state_dict keys, order, shapes and dtypes, module names and classes, layer printouts,
    feature_info, num_features, head_hidden_size and default_cfg."""
    skip_random_init(monkeypatch)
    extra = {"depth": FULL_WIDTH[name]} if name in FULL_WIDTH else {}
    with torch.device("meta"):
        reference = timm.create_model(name, num_classes=0, weight_init="skip", **extra)
    ours = models.create_model(name, num_classes=0, weight_init="skip", **extra)
    check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", list(KINDS))
def test_small_models_match_timm(kind):
    """Each new kind (two blocks, 35x33 images, the dynamic one at 40x48): float32 eval logits within 1e-5 of
    timm's; float64 train-mode outputs, input gradient and every parameter's gradient within 1e-8 (the dynamic one
    at its built size: both resample position embeddings in float32 whatever the model's dtype, and torch's
    float32 bicubic rounds differently)."""
    reference, ours = _pair(kind, seed=1)
    x = image_batch(2, *_input_size(kind), seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    x = image_batch(2, *KINDS[kind].get("img_size", SIZE), seed=3)
    check_train_step(reference.double().train(), ours.double().train(), x.astype(np.float64))


def test_seeded_init_follows_timm():
    """Same seed, same initial weights as timm for each kind, drawn in timm's order (the SwiGLU gates' unit biases
    and N(0, 1e-12) weights, layer scales, register tokens bit for bit; truncated normals within 2 ulps); both
    random streams end in step."""
    for kind in KINDS:
        check_seeded_init(lambda: timm_vit.VisionTransformer(**_config(kind, timm_vit)),
                          lambda: vision_transformer.VisionTransformer(**_config(kind, vision_transformer)), 3,
                          lambda reference: {"pos_embed", "attn_pool.latent"} | linear_weights(reference), kind)


def test_drop_masks_follow_timm():
    """SwiGLU MLPs (split and packed) with dropout and stochastic depth: timm's rates module for module; train mode
    draws timm's masks after the same seed (others after another); eval mode drops nothing."""
    drops = dict(drop_path_rate=0.5, proj_drop_rate=0.2, pos_drop_rate=0.1, drop_rate=0.2)
    for kind in ("aimv2_swiglu_rms", "packed_swiglu_reg"):
        reference, ours = _pair(kind, seed=4, **drops)
        check_drop_rates(reference, ours)
        check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=5))


def test_head_api_matches_timm():
    """An AIMv2-like model: num_classes=0 gives timm's pooled features (the final norm before the average),
    reset_classifier to other classes and pooling; a model without final norm keeps no norm after pooling."""
    x = image_batch(2, *SIZE, seed=6)
    reference, ours = _pair("aimv2_swiglu_rms", seed=7, num_classes=0)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24) and isinstance(ours.get_classifier(), engine.nn.Identity)
    assert_close(out, ref, TOL)
    for model in (reference, ours):
        model.reset_classifier(5, "max")
    ours.head.load_state_dict(numpy_state(reference.head))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and ours.global_pool == "max"
    assert_close(out, ref, TOL)
    reference, ours = _pair("radio_no_final_norm", seed=8, global_pool="avg")
    assert isinstance(ours.norm, engine.nn.Identity) and isinstance(ours.fc_norm, engine.nn.Identity)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only of registered encoders shrunk (a DINOv2 with registers, an AIMv2): timm's keys, feature_info and
    maps without the prefix tokens; forward_intermediates of the dynamic-size model at another size (token
    sequences with their prefix tokens, the final norm); prune_intermediate_layers drops timm's blocks and head."""
    small = dict(img_size=SIZE, patch_size=8, embed_dim=24, num_heads=3, depth=3, features_only=True,
                 out_indices=(0, -1))
    x = image_batch(2, *SIZE, seed=9)
    for name in ("vit_small_patch14_reg4_dinov2", "aimv2_large_patch14_224"):
        torch.manual_seed(10)
        reference = _randomize(timm.create_model(name, **small), 10).eval()
        ours = models.create_model(name, **small)
        assert list(ours.state_dict()) == list(reference.state_dict())
        ours.load_state_dict(numpy_state(reference))
        maps = check_feature_maps(reference, ours, x, 2, TOL)
        assert all(m.shape == (2, 24, 4, 4) for m in maps)
    reference, ours = _pair("dinov2_reg_dynamic", seed=11)
    _, outs = check_intermediates(reference, ours, image_batch(2, *DYNAMIC_SIZE, seed=12), TOL, indices=[0],
                                  norm=True, return_prefix_tokens=True, output_fmt="NLC")
    assert [(out.shape, prefix.shape) for out, prefix in outs] == [((2, 30, 24), (2, 5, 24))]
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    check_structure(ours, reference, types=False)
    out, ref = both_outputs(reference, ours, image_batch(2, *DYNAMIC_SIZE, seed=13))
    assert out.shape == (2, 35, 24)
    assert_close(out, ref, TOL)


def test_list_models():
    """Every encoder is registered under timm's name in the vision_transformer module, as timm lists it there."""
    listed = set(models.list_models(module="vision_transformer"))
    assert set(NAMES) <= listed
    assert set(NAMES) <= set(timm.list_models(module="vision_transformer"))
    assert set(models.list_models("aimv2*")) == set(AIMV2)
    assert set(models.list_models("*dinov2")) == set(DINOV2)
