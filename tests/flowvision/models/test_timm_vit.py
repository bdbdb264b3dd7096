"""timm's Vision Transformer and DeiT families against timm: the configuration of every registered model and the
layout of one of each kind, eval outputs of the small registered models at an odd image size (fused and unfused
attention), float64 train-mode outputs and every gradient, dropout / stochastic depth, the distilled heads, the
timm API (pooled features, reset_classifier, in_chans, features_only, list_models), seeded initialisation and
resample_abs_pos_embed. timm's later ViT variants (CLIP towers, register tokens, residual post-norm, parallel and
differential-attention blocks, attention pooling) on small configurations of each kind: float32 eval and float64
train-mode parity, seeded initialisation, drop masks, the head API and features_only. timm's untrained variants
(ViT-B+, ViT-L/14, ViT-g/G, BEiT-3 giant, the parallel '18x2' and 'xp' models, test_vit4, ...): the configuration
of each (none built), the layout of those up to ViT-B size, and their new paths (two parallel branches a block,
RMS norms by class or by name) on small models as above."""
import inspect
from functools import partial

import numpy as np
import pytest
import timm
import timm.layers
import timm.models.deit as timm_deit
import timm.models.vision_transformer as timm_vit
import torch

import engine
import flowvision.models as models
from engine.nn import init
from flowvision.models.timm_families import _layers, deit, vision_transformer
from flowvision.models.timm_families._layers import pair
from model_parity import (backward_both, both_outputs, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          image_batch, is_timm_family, numpy_state)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); the attention's many small matrix products pay for
# every thread handoff, so one BLAS thread on each side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

VITS = ["vit_tiny_patch16_224", "vit_tiny_patch16_384", "vit_small_patch16_224", "vit_small_patch16_384",
        "vit_small_patch32_224", "vit_small_patch32_384", "vit_base_patch8_224", "vit_base_patch16_224",
        "vit_base_patch16_384", "vit_base_patch32_224", "vit_base_patch32_384", "vit_large_patch16_224",
        "vit_large_patch16_384", "vit_large_patch32_384", "vit_base_patch16_224_miil"]
DEITS = ["deit_tiny_patch16_224", "deit_small_patch16_224", "deit_base_patch16_224", "deit_base_patch16_384",
         "deit_tiny_distilled_patch16_224", "deit_small_distilled_patch16_224", "deit_base_distilled_patch16_224",
         "deit_base_distilled_patch16_384", "deit3_small_patch16_224", "deit3_small_patch16_384",
         "deit3_medium_patch16_224", "deit3_base_patch16_224", "deit3_base_patch16_384", "deit3_large_patch16_224",
         "deit3_large_patch16_384", "deit3_huge_patch14_224"]
# timm's later models in its vision_transformer module with ImageNet-1k weights
NEW_VITS = ["vit_base_patch16_clip_224", "vit_base_patch16_clip_384", "vit_base_patch32_clip_224",
            "vit_base_patch32_clip_384", "vit_base_patch32_clip_448", "vit_large_patch14_clip_224",
            "vit_large_patch14_clip_336", "vit_huge_patch14_clip_224", "vit_huge_patch14_clip_336", "flexivit_small",
            "flexivit_base", "flexivit_large", "eva_large_patch14_196", "eva_large_patch14_336",
            "beit3_base_patch16_224", "beit3_large_patch16_224", "vit_base_patch16_rpn_224",
            "vit_medium_patch16_gap_256", "vit_medium_patch16_gap_384", "vit_wee_patch16_reg1_gap_256",
            "vit_pwee_patch16_reg1_gap_256", "vit_dwee_patch16_reg1_gap_256", "vit_dpwee_patch16_reg1_gap_256",
            "vit_little_patch16_reg1_gap_256", "vit_little_patch16_reg4_gap_256", "vit_dlittle_patch16_reg1_gap_256",
            "vit_medium_patch16_reg1_gap_256", "vit_medium_patch16_reg4_gap_256", "vit_mediumd_patch16_reg4_gap_256",
            "vit_mediumd_patch16_reg4_gap_384", "vit_betwixt_patch16_reg1_gap_256", "vit_betwixt_patch16_reg4_gap_256",
            "vit_betwixt_patch16_reg4_gap_384", "vit_so150m_patch16_reg4_gap_256", "vit_so150m_patch16_reg4_gap_384",
            "vit_so150m2_patch16_reg1_gap_256", "vit_so150m2_patch16_reg1_gap_384", "vit_so150m2_patch16_reg1_gap_448",
            "vit_so400m_patch14_siglip_378", "vit_so400m_patch14_siglip_gap_378"]
# timm's vision_transformer models without published weights (registered for training from scratch); the 'xp' and
# '18x2' ones with parallel blocks, test_vit4 with RMS norms named by a string
UNTRAINED = ["beit3_giant_patch14_224", "beit3_giant_patch14_336", "test_vit4", "vit_base_patch16_18x2_224",
             "vit_base_patch16_gap_224", "vit_base_patch16_plus_240", "vit_base_patch16_reg4_gap_256",
             "vit_base_patch16_xp_224", "vit_base_patch32_plus_256", "vit_betwixt_patch16_gap_256",
             "vit_giant_patch14_224", "vit_gigantic_patch14_224", "vit_huge_patch14_xp_224", "vit_large_patch14_224",
             "vit_large_patch14_xp_224", "vit_small_patch16_18x2_224", "vit_small_patch16_36x1_224",
             "vit_so150m_patch16_reg4_map_256"]
ODD = (50, 66)  # 3 x 4 patches of 16 with leftover pixels, not square
TINY = dict(img_size=(27, 19), patch_size=8, embed_dim=24, depth=2, num_heads=3, num_classes=7)


class _Built(Exception):
    """Stops a constructor once its arguments are recorded."""


def _constructor_args(cls, build, monkeypatch):
    """Every argument ``cls.__init__`` receives from ``build()`` (defaults filled in), without building."""
    seen = {}
    signature = inspect.signature(cls.__init__)

    def record(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        seen.update(bound.arguments)
        seen.update(seen.pop("kwargs", {}))
        raise _Built

    monkeypatch.setattr(cls, "__init__", record)
    with pytest.raises(_Built):
        build()
    monkeypatch.undo()
    del seen["self"]
    return seen


@pytest.mark.parametrize("name", VITS + NEW_VITS + UNTRAINED + DEITS)
def test_configuration_matches_timm(name, monkeypatch):
    """The arguments our entrypoint gives the model class equal those timm's gives its class (distilled or
    not), every argument we share (layer classes and norm partials by name and keywords); timm's others stay at
    the defaults our models are built as. Nothing is built (the untrained giants included)."""
    distilled = "distilled" in name
    timm_cls = timm_deit.VisionTransformerDistilled if distilled else timm_vit.VisionTransformer
    ours_cls = deit.VisionTransformerDistilled if distilled else vision_transformer.VisionTransformer
    theirs = _constructor_args(timm_cls, lambda: timm.create_model(name), monkeypatch)
    ours = _constructor_args(ours_cls, lambda: models.create_model(name), monkeypatch)
    if distilled:  # both pass everything through **kwargs to VisionTransformer
        theirs = {**_defaults(timm_vit.VisionTransformer), **theirs}
        ours = {**_defaults(vision_transformer.VisionTransformer), **ours}
    for key, value in ours.items():
        if key == "img_size":
            assert pair(value) == timm.layers.to_2tuple(theirs[key])
        else:
            assert _comparable(value) == _comparable(theirs[key]), key
    assert {k: v for k, v in theirs.items() if k not in ours} == _timm_only_arguments()


def _comparable(value):
    """An argument as both libraries' values can be compared: a class by its name, a partial by its class's name
    and keywords."""
    if isinstance(value, partial):
        return value.func.__name__, value.args, value.keywords
    if isinstance(value, type):
        return value.__name__
    return value


def _timm_only_arguments():
    """timm's arguments that we do not take, at the values our models are built as (timm's defaults)."""
    return dict(pos_embed="learn", dynamic_img_pad=False, patch_drop_rate=0.0, fix_init=False,
                embed_layer=timm.layers.PatchEmbed, device=None, dtype=None)


def _defaults(cls):
    """The defaults of ``cls.__init__``'s named arguments."""
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}


@pytest.fixture
def no_init(monkeypatch):
    """Our models built without drawing their initial weights (the checkpoint replaces them)."""
    for name in ("uniform_", "normal_", "trunc_normal_"):
        monkeypatch.setattr(init, name, lambda tensor, *args, **kwargs: tensor)
    for module in (_layers, vision_transformer, deit):  # _layers: init_linear_layers' draws
        monkeypatch.setattr(module, "trunc_normal_", lambda tensor, std=0.02: tensor)


@pytest.mark.parametrize("name", ["vit_base_patch16_224_miil", "deit_base_distilled_patch16_384",
                                  "deit3_huge_patch14_224"])
def test_layout_matches_timm(name, no_init):
    """state_dict keys in order, shapes, dtypes; module names and kinds (one model of each kind, at full size
    with stochastic depth: ViT without qkv biases and 11221 classes, distilled DeiT at 384, DeiT III with layer
    scale)."""
    with torch.device("meta"):
        reference = timm.create_model(name, drop_path_rate=0.1)
    ours = models.create_model(name, drop_path_rate=0.1)
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k in ref_sd:
        assert tuple(our_sd[k].shape) == tuple(ref_sd[k].shape), k
        assert str(our_sd[k].dtype).split(".")[-1] == str(ref_sd[k].dtype).split(".")[-1], k
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    kinds = {"DropPath": "StochasticDepth"}
    assert [type(m).__name__ for m in ours.modules()] == [
        kinds.get(type(m).__name__, type(m).__name__) for m in reference.modules()]
    assert ours.default_cfg["first_conv"] == reference.pretrained_cfg["first_conv"]
    assert ours.default_cfg["classifier"] == reference.pretrained_cfg["classifier"]


def randomize(model, seed):
    """Random weights everywhere: LayerNorm affines near 1, biases, layer scales, tokens and position
    embeddings (their initial zeros / ones / 1e-6 values would hide bugs), Linear weights at std 0.1."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gamma"):
                p.copy_(torch.rand(p.shape, generator=g) * 0.5 + 0.25)
            elif "norm" in name and name.endswith("weight"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.ndim == 1 or name.split(".")[-1] in ("cls_token", "dist_token", "pos_embed"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model


def _timm(name_or_cls, seed=0, **kwargs):
    """A timm model (registered name or class) without its init, randomised, in eval mode."""
    build = timm.create_model if isinstance(name_or_cls, str) else lambda cls, **kw: cls(**kw)
    return randomize(build(name_or_cls, weight_init="skip", **kwargs), seed).eval()


def _ours(name_or_cls, reference, **kwargs):
    """Our model (registered name or class) without its init, the reference's weights loaded, in eval mode."""
    build = models.create_model if isinstance(name_or_cls, str) else lambda cls, **kw: cls(**kw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(init, "uniform_", lambda tensor, *args, **kw: tensor)
        model = build(name_or_cls, weight_init="skip", **kwargs)
    model.load_state_dict(numpy_state(reference))
    return model.eval()


@pytest.mark.parametrize("name", ["vit_tiny_patch16_224", "deit_tiny_distilled_patch16_224",
                                  "deit3_small_patch16_224"])
def test_eval_outputs_match_timm(name):
    """Registered models built for a 50x66 image (4 blocks, to stay quick), timm's weights (randomised) loaded
    through numpy: logits within 1e-4 of timm's fused-attention and unfused-attention paths."""
    reference = _timm(name, img_size=ODD, depth=4)
    ours = _ours(name, reference, img_size=ODD, depth=4)
    x = image_batch(2, *ODD, seed=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, 1e-4)
    for m in reference.modules():
        if isinstance(m, timm.layers.Attention):
            m.fused_attn = False
    with torch.no_grad():
        ref = reference(torch.from_numpy(x)).numpy()
    assert_close(out, ref, 1e-4, what="output vs unfused attention")


SMALL_VARIANTS = {
    "token": dict(),
    "avg_fc_norm_no_class_token": dict(global_pool="avg", class_token=False, qkv_bias=False),
    "max_pre_norm_layer_scale": dict(global_pool="max", pre_norm=True, init_values=0.1, no_embed_class=True),
    "avgmax_qk_norm_sequence": dict(global_pool="avgmax", fc_norm=False, qk_norm=True, scale_attn_norm=True,
                                    scale_mlp_norm=True, mlp_ratio=2.5),
    "no_pool": dict(global_pool="", num_classes=0),
}


@pytest.mark.parametrize("variant", sorted(SMALL_VARIANTS))
def test_train_mode_gradients_match_timm_float64(variant):
    """A 2-block ViT per constructor option, float64, train mode (no dropout): outputs, the input gradient and
    every parameter's gradient equal timm's."""
    kwargs = {**TINY, **SMALL_VARIANTS[variant]}
    reference = _timm(timm_vit.VisionTransformer, seed=2, **kwargs).double().train()
    ours = _ours(vision_transformer.VisionTransformer, reference, **kwargs).double().train()
    ref_params, our_params = backward_both(reference, ours, image_batch(2, 27, 19, seed=3).astype(np.float64))
    assert list(our_params) == list(ref_params)
    for name, p in ref_params.items():
        assert_grad_close(our_params[name].grad.numpy(), p.grad.numpy(), name)


def assert_grad_close(ours, ref, name):
    """Gradients within 1e-9 (relative to the largest); those that are zero in exact arithmetic (a key-norm
    bias: softmax ignores what shifts all scores of a query alike) only need to be rounding noise on both sides."""
    if np.abs(ref).max() < 1e-12:
        assert np.abs(ours).max() < 1e-12, name
        return
    assert_close(ours, ref, 1e-9, what=f"{name} grad")


def test_distilled_heads_and_gradients_match_timm_float64():
    """Distilled DeiT (2 blocks, without and with layer scale), float64: the averaged heads in train mode with
    every gradient; with distilled training, train mode returns both heads' logits, eval mode their average."""
    for extra in ({}, {"init_values": 0.2}):
        kwargs = {**TINY, **extra}
        reference = _timm(timm_deit.VisionTransformerDistilled, seed=4, **kwargs).double().train()
        ours = _ours(deit.VisionTransformerDistilled, reference, **kwargs).double().train()
        x = image_batch(2, 27, 19, seed=5).astype(np.float64)
        ref_params, our_params = backward_both(reference, ours, x)
        for name, p in ref_params.items():
            assert_grad_close(our_params[name].grad.numpy(), p.grad.numpy(), name)
    reference.set_distilled_training()
    ours.set_distilled_training()
    ref = reference(torch.from_numpy(x))
    out = ours(engine.from_numpy(x))
    assert isinstance(out, tuple) and len(out) == 2
    for o, r in zip(out, ref):
        assert_close(o.detach().numpy(), r.detach().numpy(), 1e-10)
    assert not np.allclose(out[0].detach().numpy(), out[1].detach().numpy())
    out, ref = both_outputs(reference.eval(), ours.eval(), x)
    assert_close(out, ref, 1e-10)
    assert out.shape == (2, 7)
    head, head_dist = ours.get_classifier()
    assert head is ours.head and head_dist is ours.head_dist


DROPOUTS = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def test_dropout_and_drop_path_train_only():
    """The drop probabilities are timm's; each dropout and stochastic depth alone makes train-mode outputs
    random; with all of them on, eval-mode outputs are timm's."""
    kwargs = dict(TINY, depth=3, **DROPOUTS)
    reference = _timm(timm_vit.VisionTransformer, **kwargs)
    ours = _ours(vision_transformer.VisionTransformer, reference, **kwargs)
    check_drop_rates(reference, ours)
    x = image_batch(2, 27, 19, seed=6)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, 1e-5)
    for rate, p in DROPOUTS.items():
        model = vision_transformer.VisionTransformer(**dict(TINY, depth=3, **{rate: p})).train()
        first, second = (model(engine.from_numpy(x)).detach().numpy() for _ in range(2))
        assert not np.allclose(first, second), rate
        with engine.no_grad():
            model.eval()
            assert np.array_equal(model(engine.from_numpy(x)).numpy(), model(engine.from_numpy(x)).numpy())


def test_pooled_features_and_reset_classifier():
    """num_classes=0 gives timm's forward_features + forward_head(pre_logits=True); reset_classifier gives
    the classes asked for and changes the pooling like timm's."""
    kwargs = dict(img_size=ODD, depth=2)
    reference = _timm("deit_tiny_patch16_224", **kwargs)
    x = image_batch(2, *ODD, seed=7)
    with torch.no_grad():
        ref = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True).numpy()
    reference.reset_classifier(0)
    pooled = _ours("deit_tiny_patch16_224", reference, num_classes=0, **kwargs)
    assert isinstance(pooled.get_classifier(), engine.nn.Identity) and pooled.num_features == 192
    with engine.no_grad():
        assert_close(pooled(engine.from_numpy(x)).numpy(), ref, 1e-5)
    pooled.reset_classifier(5, "avg")
    assert pooled.get_classifier().out_features == 5 and pooled.num_classes == 5 and pooled.global_pool == "avg"
    pooled.reset_classifier(0)
    reference.reset_classifier(0, "avg")
    out, ref = both_outputs(reference, pooled, x)
    assert_close(out, ref, 1e-5)
    distilled = _ours("deit_tiny_distilled_patch16_224", _timm("deit_tiny_distilled_patch16_224", **kwargs), **kwargs)
    distilled.reset_classifier(3)
    assert [head.out_features for head in distilled.get_classifier()] == [3, 3]
    with pytest.raises(ValueError):
        distilled.reset_classifier(3, "avg")


def test_in_chans_one_and_image_size_check():
    """in_chans=1 builds a one-channel patch projection that gives timm's outputs; images of another size than
    the model was built for are refused."""
    reference = _timm("vit_tiny_patch16_224", img_size=ODD, in_chans=1, depth=2)
    ours = _ours("vit_tiny_patch16_224", reference, img_size=ODD, in_chans=1, depth=2)
    assert tuple(ours.patch_embed.proj.weight.shape) == (192, 1, 16, 16)
    out, ref = both_outputs(reference, ours, image_batch(2, *ODD, seed=8, c=1))
    assert_close(out, ref, 1e-4)
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 48, 48, c=1)))


def test_timm_checkpoint_file_loads(tmp_path):
    """A timm safetensors checkpoint loads through checkpoint_path (strict), also into a one-channel model
    (the patch projection adapted as timm adapts it), and gives timm's outputs."""
    from safetensors.torch import save_file

    name, kwargs = "deit_tiny_distilled_patch16_224", dict(img_size=ODD, depth=2)
    reference = _timm(name, seed=15, **kwargs)
    path = tmp_path / "model.safetensors"
    save_file(reference.state_dict(), str(path))
    x = image_batch(2, *ODD, seed=16)
    out, ref = both_outputs(reference, models.create_model(name, checkpoint_path=str(path), **kwargs).eval(), x)
    assert_close(out, ref, 1e-4)
    grey = _timm(name, in_chans=1, **kwargs)
    state = reference.state_dict()
    state["patch_embed.proj.weight"] = timm.models.adapt_input_conv(1, state["patch_embed.proj.weight"])
    grey.load_state_dict(state)
    ours = models.create_model(name, checkpoint_path=str(path), in_chans=1, **kwargs).eval()
    out, ref = both_outputs(grey, ours, x[:, :1].copy())
    assert_close(out, ref, 1e-4)


def test_features_only_matches_timm():
    """features_only (4-block models): timm's FeatureGetterNet stages (the last three blocks by default, or
    out_indices) as (N, C, H/16, W/16) maps, its state_dict keys (pruned blocks, norm and head) and feature_info."""
    for distilled, out_indices in ((False, None), (True, (0, -2))):
        name = "deit_tiny_distilled_patch16_224" if distilled else "deit_tiny_patch16_224"
        kwargs = dict(img_size=ODD, features_only=True, depth=4)
        if out_indices is not None:
            kwargs["out_indices"] = out_indices
        reference = _timm(name, seed=9, **kwargs)
        ours = _ours(name, reference, **kwargs)
        assert list(ours.state_dict()) == list(reference.state_dict())
        maps = check_feature_maps(reference, ours, image_batch(2, *ODD, seed=10), 3 if out_indices is None else 2,
                                  1e-4)
        assert all(m.shape == (2, 192, 3, 4) for m in maps)


def test_forward_intermediates_matches_timm():
    """forward_intermediates' options against timm's: picked blocks as token sequences with their prefix
    tokens and the final norm, stopping early, and the final normalised sequence."""
    reference = _timm(timm_deit.VisionTransformerDistilled, seed=13, **TINY)
    ours = _ours(deit.VisionTransformerDistilled, reference, **TINY)
    _, outs = check_intermediates(reference, ours, image_batch(2, 27, 19, seed=14), 1e-5, indices=[-2], norm=True,
                                  return_prefix_tokens=True, output_fmt="NLC", stop_early=True)
    assert [(out.shape, prefix.shape) for out, prefix in outs] == [((2, 6, 24), (2, 2, 24))]


def test_list_models():
    """Every name is registered, under timm's family modules, beside torchvision's ViTs: the vision_transformer
    module lists exactly timm's models of that module (the pretrained encoders of test_timm_vit_encoders and the
    untrained variants included) and torchvision's."""
    names = VITS + NEW_VITS + UNTRAINED
    listed = models.list_models(module="vision_transformer")
    timm_names = [n for n in listed if is_timm_family(n)]
    assert timm_names == timm.list_models(module="vision_transformer")
    assert set(listed) - set(timm_names) == {"vit_b_16", "vit_b_32", "vit_h_14", "vit_l_16", "vit_l_32"}
    assert set(names) <= set(timm_names)
    assert set(models.list_models("deit*")) == set(DEITS)
    assert set(models.list_models(module="deit")) == set(DEITS)
    others = {n for n in names if not n.startswith(("vit_", "test_"))}
    assert set(models.list_models(["flexivit*", "eva_large*", "beit3*"], module="vision_transformer")) == others


def test_seeded_init_follows_timm():
    """Same seed, same initial weights as timm, drawn in timm's order: default-initialised layers, zeros, ones,
    the class token's N(0, 1e-12) bit for bit; truncated normals within 2 float32 ulps (the engine's float32
    erfinv rounds differently from torch's); and both generators end in step."""
    for timm_cls, ours_cls in ((timm_vit.VisionTransformer, vision_transformer.VisionTransformer),
                               (timm_deit.VisionTransformerDistilled, deit.VisionTransformerDistilled)):
        kwargs = dict(TINY, init_values=1e-3)
        check_seeded_init(lambda: timm_cls(**kwargs), lambda: ours_cls(**kwargs), 11,
                          lambda reference: {"pos_embed", "dist_token"} | {
                              f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)},
                          ours_cls.__name__)


def test_resample_abs_pos_embed_matches_timm():
    """Bicubic resampling of the position-embedding grid (no antialiasing) equals timm's, prefix tokens kept,
    for square and non-square grids, Tensors and numpy arrays."""
    rng = np.random.default_rng(12)
    for prefix, old, new in ((1, (4, 4), (6, 3)), (2, (3, 5), (7, 7)), (0, (5, 5), (2, 3))):
        posemb = rng.standard_normal((1, prefix + old[0] * old[1], 8)).astype(np.float32)
        ref = timm.layers.resample_abs_pos_embed(torch.from_numpy(posemb), list(new), old_size=list(old),
                                                 num_prefix_tokens=prefix, antialias=False).numpy()
        old_size = None if old[0] == old[1] else old
        out = vision_transformer.resample_abs_pos_embed(engine.from_numpy(posemb), new, old_size, prefix)
        assert_close(out.numpy(), ref, 1e-6)
        assert_close(vision_transformer.resample_abs_pos_embed(posemb, new, old_size, prefix), ref, 1e-6)


# One small configuration (TINY) per kind of timm's later variants; block classes by name, eps for a LayerNorm eps of
# 1e-5 (CLIP, BEiT-3)
NEW_VARIANTS = {
    "clip_res_post_register_tokens": dict(pre_norm=True, eps=1e-5, block_fn="ResPostBlock", init_values=0.1,
                                          reg_tokens=2),
    "parallel_no_qkv_bias": dict(block_fn="ParallelScalingBlock", qkv_bias=False, init_values=0.1, mlp_ratio=2.5,
                                 class_token=False, reg_tokens=1, no_embed_class=True, global_pool="avg",
                                 fc_norm=False),
    "diff_parallel_qk_norm": dict(block_fn="DiffParallelScalingBlock", init_values=0.1, qk_norm=True, reg_tokens=1,
                                  no_embed_class=True),
    "diff_attention_map_pool": dict(attn_layer="diff", qk_norm=True, scale_attn_norm=True, class_token=False,
                                    reg_tokens=1, global_pool="map"),
    # the untrained variants' new paths: two parallel attention and MLP branches a block (18x2), with a norm inside
    # the MLP; 'xp' parallel blocks with RMS norms and query-key norms; a norm named by a string (test_vit4)
    "parallel_things_scale_mlp_norm": dict(block_fn="ParallelThingsBlock", init_values=0.1, mlp_ratio=2.5,
                                           scale_mlp_norm=True),
    "xp_rms_qk_norm": dict(block_fn="ParallelScalingBlock", norm="RmsNorm", pre_norm=True, no_embed_class=True,
                           qkv_bias=False, qk_norm=True),
    "rmsnorm_by_name": dict(norm_layer="rmsnorm", class_token=False, reg_tokens=1, global_pool="avg",
                            init_values=0.1),
}


def _variant(name, side, **extra):
    """TINY with the variant's arguments for timm's VisionTransformer (``side`` timm_vit) or ours."""
    kwargs = {**TINY, **NEW_VARIANTS[name], **extra}
    if "block_fn" in kwargs:
        kwargs["block_fn"] = getattr(side, kwargs["block_fn"])
    if "eps" in kwargs:
        norm = torch.nn.LayerNorm if side is timm_vit else engine.nn.LayerNorm
        kwargs["norm_layer"] = partial(norm, eps=kwargs.pop("eps"))
    if "norm" in kwargs:
        kwargs["norm_layer"] = getattr(timm.layers if side is timm_vit else vision_transformer, kwargs.pop("norm"))
    return kwargs


def _variant_pair(name, seed, **extra):
    """timm's variant (randomised, eval mode) and ours with its weights."""
    reference = _timm(timm_vit.VisionTransformer, seed=seed, **_variant(name, timm_vit, **extra))
    ours = _ours(vision_transformer.VisionTransformer, reference, **_variant(name, vision_transformer, **extra))
    return reference, ours


@pytest.mark.parametrize("name", sorted(NEW_VARIANTS))
def test_new_variants_match_timm(name):
    """Each later kind (two blocks, 27x19 images): float32 eval logits within 1e-5 of timm's; float64 train-mode
    outputs, input gradient and every parameter's gradient within 1e-8 (differential attention's lambda_q
    vectors zeroed there: timm computes lambda in float32 even in a float64 model, and torch's float32 exp rounds
    differently from numpy's but for exp(0))."""
    reference, ours = _variant_pair(name, seed=20)
    x = image_batch(2, 27, 19, seed=21)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7)
    assert_close(out, ref, 1e-5)
    for model, no_grad in ((reference, torch.no_grad), (ours, engine.no_grad)):
        with no_grad():
            for key, p in model.named_parameters():
                if key.endswith(("lambda_q1", "lambda_q2")):
                    p.zero_()
    check_train_step(reference.double().train(), ours.double().train(), x.astype(np.float64))


@pytest.mark.parametrize("name", ["vit_so400m_patch14_siglip_378", "vit_base_patch16_rpn_224",
                                  "vit_dpwee_patch16_reg1_gap_256", "vit_pwee_patch16_reg1_gap_256",
                                  "vit_dlittle_patch16_reg1_gap_256", "vit_huge_patch14_clip_336",
                                  "beit3_base_patch16_224", "vit_so150m2_patch16_reg1_gap_256"])
def test_new_layouts_match_timm(name, no_init):
    """A registered model of each later kind at full width (two blocks, with stochastic depth; timm's on the meta
    device): state_dict keys in order with shapes and dtypes, module names, classes and printouts, feature_info."""
    with torch.device("meta"):
        reference = timm.create_model(name, depth=2, drop_path_rate=0.1)
    ours = models.create_model(name, depth=2, drop_path_rate=0.1)
    check_layout(ours, reference, (), {"Linear", "Conv2d", "LayerNorm", "Dropout", "GELU"})
    kinds = {"DropPath": "StochasticDepth"}
    assert [type(m).__name__ for m in ours.modules()] == [
        kinds.get(type(m).__name__, type(m).__name__) for m in reference.modules()]


def test_new_variants_seeded_init_follows_timm():
    """Same seed, same initial weights as timm for each later kind: the lambdas of differential attention and
    the register tokens bit for bit, the attention pool's latent (timm's truncated normal in standard units,
    scaled) within 2 ulps; both generators end in step."""
    for name in NEW_VARIANTS:
        check_seeded_init(lambda: timm_vit.VisionTransformer(**_variant(name, timm_vit)),
                          lambda: vision_transformer.VisionTransformer(**_variant(name, vision_transformer)), 12,
                          lambda reference: {"pos_embed", "attn_pool.latent"} | {
                              f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)},
                          name)


def test_new_variants_drop_masks_follow_timm():
    """Parallel and residual post-norm blocks with stochastic depth and dropout: train mode draws timm's masks
    after the same seed (others after another); eval mode drops nothing."""
    drops = dict(drop_path_rate=0.5, proj_drop_rate=0.2, pos_drop_rate=0.1, drop_rate=0.2, depth=3)
    for name in ("parallel_no_qkv_bias", "clip_res_post_register_tokens", "parallel_things_scale_mlp_norm"):
        reference, ours = _variant_pair(name, seed=22, **drops)
        check_dropout_only_in_training(reference, ours, image_batch(2, 27, 19, seed=23))


def test_attention_pool_head_api_and_features_only():
    """The 'map' head like timm's: pooled features with num_classes=0, reset_classifier to another pooling
    drops the attention pool (which cannot be added back), in_chans=1; features_only of a register-token and an
    attention-pooled model: timm's keys (attention pool pruned), feature_info and maps without the prefix tokens."""
    x = image_batch(2, 27, 19, seed=24)
    reference, ours = _variant_pair("diff_attention_map_pool", seed=25, num_classes=0)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24)
    assert_close(out, ref, 1e-5)
    for model in (reference, ours):
        model.reset_classifier(5, "avg")
    assert ours.attn_pool is None and list(ours.state_dict()) == list(reference.state_dict())
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, 1e-5)
    with pytest.raises(ValueError, match="attention pooling"):
        ours.reset_classifier(5, "map")
    reference, ours = _variant_pair("diff_attention_map_pool", seed=26, in_chans=1)
    out, ref = both_outputs(reference, ours, x[:, :1].copy())
    assert_close(out, ref, 1e-5)
    small = dict(img_size=ODD, embed_dim=24, num_heads=3, depth=3, mlp_ratio=2.0, features_only=True,
                 out_indices=(0, -1))
    for name in ("vit_wee_patch16_reg1_gap_256", "vit_so400m_patch14_siglip_378"):
        reference = _timm(name, seed=27, patch_size=16, **small)
        ours = _ours(name, reference, patch_size=16, **small)
        assert list(ours.state_dict()) == list(reference.state_dict())
        maps = check_feature_maps(reference, ours, image_batch(2, *ODD, seed=28), 2, 1e-5)
        assert ours.feature_info.channels() == [24, 24] and all(m.shape == (2, 24, 3, 4) for m in maps)


# the untrained variants built to compare layouts: whole up to ViT-B size, the bigger ones (up to 170M parameters)
# with two blocks
UNTRAINED_LAYOUTS = {"test_vit4": {}, "vit_small_patch16_18x2_224": {}, "vit_small_patch16_36x1_224": {},
                     "vit_betwixt_patch16_gap_256": {}, "vit_base_patch16_gap_224": {},
                     "vit_base_patch16_reg4_gap_256": {}, "vit_base_patch16_xp_224": {},
                     "vit_base_patch16_18x2_224": dict(depth=2), "vit_base_patch16_plus_240": dict(depth=2),
                     "vit_base_patch32_plus_256": dict(depth=2), "vit_so150m_patch16_reg4_map_256": dict(depth=2)}


@pytest.mark.parametrize("name", list(UNTRAINED_LAYOUTS))
def test_untrained_layouts_match_timm(name, no_init):
    """The untrained variants up to ViT-B size whole, the bigger ones with two blocks (init skipped on both sides,
    timm's on the meta device; with stochastic depth): state_dict keys in order with shapes and dtypes, module
    names, classes and printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    kwargs = dict(UNTRAINED_LAYOUTS[name], num_classes=1000, weight_init="skip", drop_path_rate=0.1)
    with torch.device("meta"):
        reference = timm.create_model(name, **kwargs)
    ours = models.create_model(name, **kwargs)
    check_layout(ours, reference, (), {"Linear", "Conv2d", "LayerNorm", "RmsNorm", "Dropout", "GELU"})
    kinds = {"DropPath": "StochasticDepth"}
    assert [type(m).__name__ for m in ours.modules()] == [
        kinds.get(type(m).__name__, type(m).__name__) for m in reference.modules()]
