"""timm parity of the encoders in timm's ``eva`` module besides the ImageNet-1k classifiers (test_timm_eva.py's):
EVA-02 MIM encoders and EVA / EVA-02 CLIP image towers, DINOv3, the Perception Encoder, Sapiens2 and LingBot-Vision.
Every entrypoint's configuration against timm's (the image size of timm's weights where timm takes it from them);
the layout of one model of each kind at full width against timm's on the meta device; seeded initialisation and
the rotary buffers; eval outputs (float32) and train-mode outputs and gradients (float64) of small models covering
each new code path (DINOv3 RoPE at any image size with its training augmentation, rotation by halves, aligned
SwiGLU, grouped-query attention with normalised queries and keys, RMS norms, attention-only layer scale, attention
pooling, no final norm, residual post-norm blocks) with timm's weights loaded; stochastic depth, dropout and the
RoPE augmentation's draws; and the timm API (pre-logits, reset_classifier with attention pooling, features_only,
forward_intermediates, prune_intermediate_layers, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.layers
import timm.models.eva as timm_eva
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import eva
from flowvision.models.timm_families._layers import pair
from model_parity import (both_outputs, capture_builder, check_dropout_only_in_training, check_feature_maps,
                          check_intermediates, check_layout, check_train_step, comparable_config, features_only_pair,
                          image_batch, numpy_state, pre_logits, skip_random_init, without_default_head)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["eva02_tiny_patch14_224", "eva02_small_patch14_224", "eva02_base_patch14_224", "eva02_large_patch14_224",
         "eva02_base_patch16_clip_224", "eva02_large_patch14_clip_224", "eva02_large_patch14_clip_336",
         "eva02_enormous_patch14_clip_224", "eva_giant_patch14_clip_224",
         "vit_small_patch16_dinov3", "vit_small_patch16_dinov3_qkvb", "vit_small_plus_patch16_dinov3",
         "vit_small_plus_patch16_dinov3_qkvb", "vit_base_patch16_dinov3", "vit_base_patch16_dinov3_qkvb",
         "vit_large_patch16_dinov3", "vit_large_patch16_dinov3_qkvb", "vit_huge_plus_patch16_dinov3",
         "vit_huge_plus_patch16_dinov3_qkvb", "vit_7b_patch16_dinov3", "vit_tiny_patch16_dinov3_qkvb",
         "vit_pe_core_tiny_patch16_384", "vit_pe_core_small_patch16_384", "vit_pe_core_base_patch16_224",
         "vit_pe_core_large_patch14_336", "vit_pe_core_gigantic_patch14_448", "vit_pe_lang_large_patch14_448",
         "vit_pe_lang_gigantic_patch14_448", "vit_pe_spatial_tiny_patch16_512", "vit_pe_spatial_small_patch16_512",
         "vit_pe_spatial_base_patch16_512", "vit_pe_spatial_large_patch14_448",
         "vit_pe_spatial_gigantic_patch14_448",
         "vit_base_patch16_sapiens2", "vit_large_patch16_sapiens2", "vit_huge_patch16_sapiens2",
         "vit_giant_patch16_sapiens2", "vit_5b_patch16_sapiens2", "vit_small_patch16_lingbot",
         "vit_base_patch16_lingbot", "vit_large_patch16_lingbot", "vit_giant_patch16_lingbot"]
TOL = 1e-5
# timm's query / key norm slots of the blocks' attention, identities unless qk_norm, that ours leaves out
PLACEHOLDERS = ("attn.q_norm", "attn.k_norm")
PRINTED = ("Conv2d", "Linear", "LayerNorm", "Dropout", "GELU", "SiLU")
# the norms as each side names them: (timm's, ours)
NORMS = {"ln5": (partial(timm.layers.LayerNorm, eps=1e-5), eva._layer_norm_eps5),
         "rms": (partial(timm.layers.RmsNorm, eps=1e-6), eva._rms_norm)}

# Small models, 2 blocks of width 32: 37 x 45 pixels make a 4 x 5 grid of 8-pixel patches with pixels left over
# (fixed size); the DINOv3-style ones take any multiple of 8 (built for 32 x 40, run at 40 x 24 too).
SIZE = (37, 45)
DYNAMIC_SIZE = (32, 40)
OTHER_SIZE = (40, 24)
BASE = dict(patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=7)
_DINOV3_ROPE = dict(img_size=DYNAMIC_SIZE, dynamic_img_size=True, rope_type="dinov3", rope_temperature=100,
                    rope_rotate_half=True, use_rot_pos_emb=True, use_abs_pos_emb=False, use_fc_norm=False)
SMALL = {
    # DINOv3 S+ / LingBot-g: register tokens, layer scale, no qkv bias, SwiGLU rounded up to a multiple of 8 (85 -> 88)
    "dinov3": dict(qkv_bias=False, init_values=0.1, num_reg_tokens=2, swiglu_mlp=True, swiglu_align_to=8,
                   mlp_ratio=4 * 2 / 3, norm_layer="ln5", **_DINOV3_ROPE),
    # Sapiens2: separate biased q / k / v, RMS-normed queries and keys, 2 key / value heads for 4 query heads in the
    # second block, packed SwiGLU, layer scale on attention only, class-token pooling, training RoPE rescale
    "sapiens2": dict(num_heads=4, num_kv_heads=(4, 2), attn_type="rope", qkv_fused=False, qk_norm=True,
                     global_pool="token", swiglu_mlp=True, init_values=0.5, attn_only_layer_scale=True,
                     rope_rescale_coords=2.0, num_reg_tokens=3, norm_layer="rms", **_DINOV3_ROPE),
    # PE core: RoPE-ViT attention, norm before the blocks, axial RoPE ('xy', offset 1, rescaled), attention pooling
    "pe_core": dict(img_size=SIZE, attn_type="rope", use_pre_transformer_norm=True, use_rot_pos_emb=True,
                    ref_feat_shape=(3, 3), rope_grid_offset=1.0, rope_grid_indexing="xy", global_pool="map",
                    attn_pool_num_heads=4, attn_pool_mlp_ratio=2.0, norm_layer="ln5"),
    # PE lang / spatial G: no class token, layer scale, no final norm at all (and the axial RoPE by halves)
    "pe_lang": dict(img_size=SIZE, attn_type="rope", class_token=False, init_values=0.1, use_rot_pos_emb=True,
                    ref_feat_shape=(3, 3), rope_grid_indexing="xy", rope_rotate_half=True,
                    use_pre_transformer_norm=True, use_post_transformer_norm=False, use_fc_norm=False, norm_layer="ln5"),
    # EVA-02-CLIP-E: residual post-norm blocks, GELU MLP, class-token pooling
    "post_norm": dict(img_size=SIZE, use_post_norm=True, mlp_ratio=3.0, global_pool="token"),
}


def configs(kind, **kwargs):
    """(timm's, our) arguments of the small ``kind`` model: the same, but for each side's norm class."""
    config = {**BASE, **SMALL[kind], **kwargs}
    norm = config.pop("norm_layer", None)
    if norm is None:
        return config, config
    return dict(config, norm_layer=NORMS[norm][0]), dict(config, norm_layer=NORMS[norm][1])


def randomize(model, seed):
    """Random values for every parameter of a timm model (unit norms, zero biases and tokens, small layer scales and
    head would hide bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("gamma_1", "gamma_2")) or (p.ndim == 1 and name.endswith("weight")):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.ndim == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel()))
    return model


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    timm_config, our_config = configs(kind, **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_eva.Eva(**timm_config), seed)
    ours = eva.Eva(**our_config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def with_reference_rope(reference, ours):
    """Our model with timm's cached axial RoPE table (ours within float32 rounding of the sines and cosines), for
    float64 comparisons to 1e-10."""
    if isinstance(ours.rope, eva.RotaryEmbeddingCat):
        ours.rope.pos_embed.copy_(engine.from_numpy(reference.rope.pos_embed.numpy()))
    return ours


def check_tree(ours, reference):
    """Same state_dict keys in order with their shapes, and module names but for timm's placeholders."""
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in reference.state_dict().items()}
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert [n for n, _ in ours.named_modules()] == [
        n for n, m in reference.named_modules() if not (n.endswith(PLACEHOLDERS) and isinstance(m, torch.nn.Identity))]


# ---- configuration and layout -----------------------------------------------------------------------------------


def test_every_entrypoint_hands_the_class_timms_configuration(monkeypatch):
    """Each entrypoint (the 3 to 7 billion parameter ones included: nothing is built) hands its class timm's
    keyword arguments, plus the image size of timm's weights where timm's builder takes it from them, the norm
    layers as the same class name and arguments."""
    ours_calls = capture_builder(monkeypatch, eva, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_eva, "build_model_with_cfg")
    for name in NAMES:
        getattr(eva, name)()
        getattr(timm_eva, name)()
    assert len(ours_calls) == len(timm_calls) == len(NAMES) == 42
    for name, (ours_cls, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        cfg = timm.models.get_pretrained_cfg(name)
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        if cfg.fixed_input_size:
            expected.setdefault("img_size", cfg.input_size[-2:])
        ours_kwargs = without_default_head(name, ours_kwargs)
        assert ours_kwargs.pop("progress") is True and ours_cls is eva.Eva, name
        assert set(ours_kwargs) == set(expected), name
        for key, value in ours_kwargs.items():
            if key == "img_size":
                assert pair(value) == pair(expected[key]) == tuple(cfg.input_size[-2:]), name
            else:
                assert comparable_config(value) == comparable_config(expected[key]), (name, key)
        assert ours_cls.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}


@pytest.mark.parametrize("name, kwargs", [
    ("vit_small_plus_patch16_dinov3_qkvb", dict(depth=2)),
    ("vit_pe_core_tiny_patch16_384", dict(depth=2)),
    ("vit_base_patch16_sapiens2", dict(depth=2, num_kv_heads=(12, 6))),
])
def test_layout_matches_timm(name, kwargs, monkeypatch):
    """At full width and two blocks (the 42 at full depth would take this file's time budget many times over):
    state_dict keys in order, shapes and dtypes, module names (but for timm's identity query / key norm slots), the
    printout of every layer, feature_info, num_features and default_cfg against timm's model on the meta device, the
    same buffers (key bias, rotary frequencies and tables); weights' configuration (num_classes, 0 for encoders)."""
    num_classes = timm.models.get_pretrained_cfg(name).num_classes
    with torch.device("meta"):
        reference = timm.create_model(name, num_classes=num_classes, drop_path_rate=0.1, **kwargs)
    skip_random_init(monkeypatch)
    ours = models.create_model(name, num_classes=num_classes, drop_path_rate=0.1, **kwargs)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)
    assert [(n, tuple(b.shape)) for n, b in ours.named_buffers()] == [
        (n, tuple(b.shape)) for n, b in reference.named_buffers()]


def test_seeded_init_and_rope_buffers_follow_timm():
    """From the same seed, timm's initial weights drawn in timm's order (layer defaults, the attention pool's latent,
    truncated normals for every Linear layer and the tokens, output layers rescaled by depth, the head redrawn and
    scaled): both generators end in step; the truncated normals within 2 float32 ulps (the engine's erfinv rounds a
    few values differently from torch's), the RoPE tables and periods within 1 ulp, everything else bit for bit."""
    for seed, kind in enumerate(SMALL):
        timm_config, our_config = configs(kind, head_init_scale=0.3)
        torch.manual_seed(seed)
        reference = timm_eva.Eva(**timm_config)
        after_reference = torch.rand(4).numpy()
        engine.manual_seed(seed)
        ours = eva.Eva(**our_config)
        assert np.array_equal(engine.rand(4).numpy(), after_reference), kind
        drawn = {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}
        drawn |= {"pos_embed", "cls_token", "reg_token", "attn_pool.latent"}
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        buffers = {k: v.numpy() for k, v in ours.named_buffers()}
        expected = {**numpy_state(reference), **{k: v.numpy() for k, v in reference.named_buffers()}}
        assert set(buffers) == set(dict(reference.named_buffers())), kind
        for key, value in expected.items():
            ours_value = state[key] if key in state else buffers[key]
            assert ours_value.dtype == value.dtype, (kind, key)
            if key in drawn:
                np.testing.assert_allclose(ours_value, value, rtol=0, atol=2 * np.spacing(np.float32(0.1)),
                                           err_msg=f"{kind} {key}")
            elif key.startswith("rope."):
                np.testing.assert_allclose(ours_value, value, rtol=np.spacing(np.float32(1.0)),
                                           atol=np.spacing(np.float32(1.0)), err_msg=f"{kind} {key}")
            else:
                assert np.array_equal(ours_value, value), (kind, key)


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd image size (the any-size models at two sizes), timm's weights loaded
    through numpy."""
    reference, ours = small_pair(kind, seed=1)
    sizes = [DYNAMIC_SIZE, OTHER_SIZE] if ours.dynamic_img_size else [SIZE]
    for size in sizes:
        out, expected = both_outputs(reference, ours, image_batch(2, *size, seed=2))
        assert out.shape == (2, 7) and np.abs(expected).max() > 1e-1
        assert_close(out, expected, TOL)


@pytest.mark.parametrize("kind", ["dinov3", "sapiens2", "pe_core", "post_norm"])
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (DINOv3's RoPE
    tables in float64 from the periods; Sapiens2 without its RoPE augmentation, whose draws
    test_rope_augmentation_draws_timms_masks checks)."""
    reference, ours = small_pair(kind, seed=3, **({"rope_rescale_coords": None} if kind == "sapiens2" else {}))
    reference, ours = reference.double().train(), with_reference_rope(reference, ours.double().train())
    size = DYNAMIC_SIZE if ours.dynamic_img_size else SIZE
    check_train_step(reference, ours, image_batch(2, *size, seed=4).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth, position, projection and head dropout: timm's rates, nothing dropped in eval mode, timm's
    masks after the same seed in training (the DINOv3 RoPE tables built for the image's grid each time)."""
    rates = dict(drop_path_rate=0.5, drop_rate=0.3, pos_drop_rate=0.1, proj_drop_rate=0.2)
    reference, ours = small_pair("dinov3", seed=7, **rates)
    _, plain = small_pair("dinov3", seed=7)
    ours_rates = [getattr(b.drop_path1, "p", 0.0) for b in ours.blocks]
    assert ours_rates == pytest.approx([getattr(b.drop_path1, "drop_prob", 0.0) for b in reference.blocks])
    assert ours_rates[-1] == pytest.approx(0.5)
    x = image_batch(2, *OTHER_SIZE, seed=8)
    plain_out, _ = both_outputs(reference, plain, x)
    assert np.array_equal(check_dropout_only_in_training(reference, ours, x, TOL, TOL), plain_out)


def test_rope_augmentation_draws_timms_masks():
    """Sapiens2's training RoPE rescale (exp of U(-log 2, log 2), one draw per forward, before any dropout): eval
    mode draws nothing; training draws timm's numbers after the same seed and others after another."""
    reference, ours = small_pair("sapiens2", seed=9)
    check_dropout_only_in_training(reference, ours, image_batch(2, *DYNAMIC_SIZE, seed=10), TOL, 1e-4)


# ---- API --------------------------------------------------------------------------------------------------------


def test_attention_pool_head_api_matches_timm():
    """With attention pooling ('map', PE core): pre-logits features and a ``num_classes=0`` model equal timm's;
    reset_classifier to new classes keeps the pool, to 'avg' drops it (as timm's does: the final norm stays), and
    'map' cannot be brought back; pooling timm refuses is refused."""
    x = image_batch(2, *SIZE, seed=11)
    reference, ours = small_pair("pe_core", seed=12)
    out, expected = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 32)
    assert_close(out, expected, TOL)
    _, headless_config = configs("pe_core", num_classes=0)
    headless = eva.Eva(**headless_config)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert_close(both_outputs(reference, headless.eval(), x)[0], expected, TOL)
    for args in ((5,), (3, "avg")):
        torch.manual_seed(13)
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert ours.global_pool == reference.global_pool
        assert (ours.attn_pool is None) == (reference.attn_pool is None) == (len(args) == 2)
        check_tree(ours, reference)
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 3)
    with pytest.raises(ValueError, match="map"):
        ours.reset_classifier(2, "map")
    with pytest.raises(ValueError, match="global_pool"):
        eva.Eva(**configs("post_norm", global_pool="median")[1])


def test_features_only_intermediates_and_pruning_match_timm():
    """``features_only`` through the DINOv3 entrypoint (any image size): timm's last three blocks as (N, C, H/p,
    W/p) maps of the image's grid, its state_dict keys and feature_info; forward_intermediates with prefix tokens
    and the final norm at another size; prune_intermediate_layers drops later blocks, the attention pool and head
    as timm's does."""
    small = dict(img_size=DYNAMIC_SIZE, patch_size=8, embed_dim=32, depth=4, num_heads=2)
    reference, ours = features_only_pair("vit_small_patch16_dinov3", randomize, 14, **small)
    maps = check_feature_maps(reference, ours, image_batch(2, *OTHER_SIZE, seed=15), 3, TOL)
    assert all(m.shape == (2, 32, 5, 3) for m in maps)
    reference, ours = small_pair("sapiens2", seed=16)
    _, outs = check_intermediates(reference, ours, image_batch(2, *OTHER_SIZE, seed=17), TOL, indices=[0, 1],
                                  return_prefix_tokens=True, norm=True)
    assert [(tokens.shape, prefix.shape) for tokens, prefix in outs] == [((2, 32, 5, 3), (2, 4, 32))] * 2
    reference, ours = small_pair("pe_core", seed=18)
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    assert ours.attn_pool is None and reference.attn_pool is None
    check_tree(ours, reference)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=19))
    assert out.shape == (2, 21, 32)
    assert_close(out, expected, TOL)


def test_list_models():
    """The ``eva`` module lists every entrypoint here under its timm name, each with timm's published weights."""
    listed = set(models.list_models(module="eva"))
    assert set(NAMES) <= listed and set(NAMES) <= set(timm.list_models(module="eva"))
    assert all(timm.list_pretrained(name + ".*") for name in NAMES)
