"""timm parity of the EVA, EVA-02 and RoPE-ViT family (timm's ``eva`` module): every registered variant's
configuration, the layout of one model of each kind against timm's on the meta device, seeded initialisation and
the rotary tables; eval outputs (float32) and train-mode outputs and gradients (float64) of small models covering
every block kind (EVA's and RoPE-ViT's attention, fused and separate q/k/v, GELU, packed and split SwiGLU MLPs,
axial and mixed RoPE, class and register tokens, absolute position embeddings on all or only the patch tokens, layer
scale, every pooling) with timm's weights loaded; stochastic depth and dropout; and the timm API (pre-logits
features, reset_classifier, in_chans, features_only, forward_intermediates, list_models)."""
import inspect

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
from model_parity import (both_outputs, check_dropout_only_in_training, check_empty_batch, check_feature_maps,
                          check_intermediates, check_layout, check_train_step, image_batch, is_timm_family, numpy_state,
                          pre_logits, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["eva02_base_patch14_448", "eva02_large_patch14_448", "eva02_small_patch14_336", "eva02_tiny_patch14_336",
         "eva_giant_patch14_224", "eva_giant_patch14_336", "eva_giant_patch14_560",
         "vit_base_patch16_rope_224", "vit_base_patch16_rope_ape_224", "vit_base_patch16_rope_mixed_224",
         "vit_base_patch16_rope_mixed_ape_224", "vit_base_patch16_rope_reg1_gap_256",
         "vit_betwixt_patch16_rope_reg4_gap_256", "vit_large_patch16_rope_224", "vit_large_patch16_rope_ape_224",
         "vit_large_patch16_rope_mixed_224", "vit_large_patch16_rope_mixed_ape_224",
         "vit_medium_patch16_rope_reg1_gap_256", "vit_mediumd_patch16_rope_reg1_gap_256",
         "vit_small_patch16_rope_224", "vit_small_patch16_rope_ape_224", "vit_small_patch16_rope_mixed_224",
         "vit_small_patch16_rope_mixed_ape_224"]
TOL = 1e-5
# timm's query / key norm slots, identities in every model here, that ours leaves out
PLACEHOLDERS = ("q_norm", "k_norm")
PRINTED = ("Conv2d", "Linear", "LayerNorm", "Dropout", "GELU", "SiLU")

# Small models of each kind: 37 x 45 pixels make a 4 x 5 grid of 8-pixel patches with pixels left over; 2 heads of
# 16 channels. ref_feat_shape (3, 3) rescales the axial RoPE positions, as EVA-02 at a fine-tuning size.
SIZE = (37, 45)
BASE = dict(img_size=SIZE, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=7)
SMALL = {
    # EVA-g: EVA's attention with q / v biases, GELU MLP, class token, absolute position embeddings, fc_norm
    "eva": dict(),
    # EVA-02 Ti/S: packed SwiGLU, axial RoPE (rescaled) and absolute position embeddings, max pooling
    "eva02_packed": dict(mlp_ratio=4 * 2 / 3, swiglu_mlp=True, use_rot_pos_emb=True, ref_feat_shape=(3, 3),
                         global_pool="max"),
    # EVA-02 B/L: separate q / k / v projections, SwiGLU with its sub-layer norm (and the attention's, as EVA-02-CLIP)
    "eva02_split": dict(mlp_ratio=4 * 2 / 3, swiglu_mlp=True, scale_mlp=True, qkv_fused=False, use_rot_pos_emb=True,
                        ref_feat_shape=(3, 3), scale_attn_inner=True),
    # timm's SBB ViTs: register tokens and no class token, no qkv bias, layer scale, RoPE only, average pooling
    "sbb": dict(qkv_bias=False, init_values=0.1, class_token=False, num_reg_tokens=2, use_rot_pos_emb=True,
                use_abs_pos_emb=False),
    # RoPE-Axial ViT: RoPE-ViT's attention, 'xy' grid, class-token pooling, final norm
    "axial": dict(attn_type="rope", init_values=0.1, global_pool="token", use_rot_pos_emb=True,
                  use_abs_pos_emb=False, rope_grid_indexing="xy", rope_temperature=100.0),
    # RoPE-Mixed + APE: learnt per-block frequencies, position embeddings on the patch tokens only
    "mixed_ape": dict(attn_type="rope", init_values=0.1, global_pool="token", use_rot_pos_emb=True,
                      no_embed_class=True, rope_grid_indexing="xy", rope_temperature=10.0, rope_type="mixed"),
}


def randomize(model, seed):
    """Random values for every parameter of a timm model: the initial ones (unit norms, zero biases and tokens,
    small layer scales and head) would hide bugs."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("gamma_1", "gamma_2")) or (p.ndim == 1 and name.endswith("weight")):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.ndim == 1 or name == "rope.freqs":
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel()))
    return model


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = dict(BASE, **SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_eva.Eva(**config), seed)
    ours = eva.Eva(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def with_reference_rope(reference, ours):
    """Our model with timm's axial RoPE table (equal to ours within float32 rounding of the sines and cosines, see
    test_seeded_init_and_rope_tables_follow_timm), for float64 comparisons to 1e-10."""
    if isinstance(ours.rope, eva.RotaryEmbeddingCat):
        ours.rope.pos_embed.copy_(engine.from_numpy(reference.rope.pos_embed.numpy()))
    return ours


# ---- configuration and layout -----------------------------------------------------------------------------------


def _defaults(cls):
    """The defaults of ``cls.__init__``'s named arguments."""
    return {k: p.default for k, p in inspect.signature(cls.__init__).parameters.items()
            if p.default is not inspect.Parameter.empty}


class _Built(Exception):
    """Stops timm's constructor once its arguments are recorded."""


def _timm_arguments(name, patch, **kwargs):
    """Every argument timm's Eva receives from ``timm.create_model(name, **kwargs)`` (defaults filled in; the image
    size comes from the pretrained configuration where the entrypoint leaves it out), without building."""
    seen = {}
    signature = inspect.signature(timm_eva.Eva.__init__)

    def record(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        seen.update(bound.arguments)
        raise _Built

    patch.setattr(timm_eva.Eva, "__init__", record)
    with pytest.raises(_Built):
        timm.create_model(name, **kwargs)
    del seen["self"]
    return seen


def test_variant_configurations_match_timm():
    """Each entrypoint hands our model class the arguments timm's class receives: every argument we share equals
    timm's (keyword arguments override it as in timm), and every argument of timm's Eva that ours lacks is at its
    default in every variant; the norm is timm's LayerNorm (eps 1e-6)."""
    timm_defaults = _defaults(timm_eva.Eva)
    our_defaults = _defaults(eva.Eva)
    timm_only = {k: v for k, v in timm_defaults.items() if k not in our_defaults}
    assert set(our_defaults) <= set(timm_defaults)
    for name in NAMES:
        with pytest.MonkeyPatch.context() as patch:
            expected = _timm_arguments(name, patch, drop_path_rate=0.1)
            patch.setattr(eva, "build_model", lambda cls, variant, pretrained, progress, **kwargs: kwargs)
            config = {**our_defaults, **models.model_entrypoint(name)(drop_path_rate=0.1)}
        for key in our_defaults:
            if key == "img_size":
                assert pair(config[key]) == timm.layers.to_2tuple(expected[key]), name
            elif key != "norm_layer":
                assert config[key] == expected[key], (name, key)
        assert {k: expected[k] for k in timm_only} == timm_only, name
    assert eva._layer_norm(8).eps == timm.layers.LayerNorm(8).eps == 1e-6


@pytest.mark.parametrize("name", ["eva_giant_patch14_336", "eva02_tiny_patch14_336", "eva02_large_patch14_448",
                                  "vit_mediumd_patch16_rope_reg1_gap_256", "vit_base_patch16_rope_ape_224",
                                  "vit_large_patch16_rope_mixed_224"])
def test_layout_matches_timm(name):
    """state_dict keys in order, shapes and dtypes, module names (but for timm's placeholders), the printout of
    every layer, feature_info, num_features and default_cfg against timm's model on the meta device: one model of
    each kind at full width, two blocks (with stochastic depth), and the same buffers (rotary tables, key bias)."""
    kwargs = dict(depth=2, drop_path_rate=0.1)
    with torch.device("meta"):
        reference = timm.create_model(name, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        patch.setattr(eva, "trunc_normal_", lambda tensor, std=0.02: tensor)
        ours = models.create_model(name, **kwargs)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)
    assert [(n, tuple(b.shape)) for n, b in ours.named_buffers()] == [
        (n, tuple(b.shape)) for n, b in reference.named_buffers()]


def test_seeded_init_and_rope_tables_follow_timm():
    """From the same seed, timm's initial weights drawn in timm's order (the layers' defaults, truncated normals for
    every Linear layer and the tokens, the output layers rescaled by depth, the head redrawn and scaled by
    head_init_scale): both generators end in step; the truncated normals within 2 float32 ulps (the engine's erfinv
    rounds a few values differently from torch's), the mixed RoPE frequencies (cosines and sines of the random
    directions) within 1 ulp, everything else bit for bit. The non-persistent buffers too: the frequencies and grid
    coordinates bit for bit, the axial RoPE's sines and cosines within 1 ulp."""
    for seed, kind in enumerate(SMALL):
        config = dict(BASE, **SMALL[kind], head_init_scale=0.3)
        torch.manual_seed(seed)
        reference = timm_eva.Eva(**config)
        after_reference = torch.rand(4).numpy()
        engine.manual_seed(seed)
        ours = eva.Eva(**config)
        assert np.array_equal(engine.rand(4).numpy(), after_reference), kind
        drawn = {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}
        drawn |= {"pos_embed", "cls_token", "reg_token"}
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        buffers = {k: v.numpy() for k, v in ours.named_buffers()}
        expected = {**numpy_state(reference), **{k: v.numpy() for k, v in reference.named_buffers()}}
        for key, value in expected.items():
            ours_value = state[key] if key in state else buffers[key]
            assert ours_value.dtype == value.dtype, (kind, key)
            if key in drawn:
                np.testing.assert_allclose(ours_value, value, rtol=0, atol=2 * np.spacing(np.float32(0.1)),
                                           err_msg=f"{kind} {key}")
            elif key in ("rope.freqs", "rope.pos_embed"):
                np.testing.assert_allclose(ours_value, value, rtol=0, atol=np.spacing(np.float32(1.0)),
                                           err_msg=f"{kind} {key}")
            else:
                assert np.array_equal(ours_value, value), (kind, key)
        assert set(buffers) == set(dict(reference.named_buffers()))


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd image size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 7) and np.abs(expected).max() > 1e-1
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("kind", ["eva02_packed", "eva02_split", "sbb", "axial"])
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (EVA's fused and
    separate projections with both SwiGLUs and axial RoPE; register tokens, layer scale, no biases; RoPE-ViT's
    attention on the 'xy' grid)."""
    reference, ours = small_pair(kind, seed=3)
    reference, ours = reference.double().train(), with_reference_rope(reference, ours.double().train())
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=4).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_mixed_rope_train_gradients_match_timm():
    """RoPE-Mixed in float64, train mode: timm computes the rotary tables in float32 from the learnt frequencies
    (so do we), whose sines and cosines round differently in the last bit: outputs, the input gradient and every
    parameter's gradient (the frequencies' included) equal timm's to float32 precision."""
    reference, ours = small_pair("mixed_ape", seed=5)
    reference, ours = reference.double().train(), ours.double().train()
    x = image_batch(2, *SIZE, seed=6).astype(np.float64)
    xt, xo = torch.from_numpy(x).requires_grad_(), engine.from_numpy(x).requires_grad_()
    ref, out = reference(xt), ours(xo)
    assert_close(out.detach().numpy(), ref.detach().numpy(), 1e-6)
    (ref ** 2).sum().backward()
    (out ** 2).sum().backward()
    assert_close(xo.grad.numpy(), xt.grad.numpy(), 1e-6, what="input grad")
    ours_params = dict(ours.named_parameters())
    assert list(ours_params) == [n for n, _ in reference.named_parameters()]
    for name, p in reference.named_parameters():
        assert_close(ours_params[name].grad.numpy(), p.grad.numpy(), 1e-5, what=name)


def test_drop_path_and_dropout_only_in_training():
    """drop_path_rate rises block by block as timm's (0 at the first, the rate at the last); in eval mode nothing
    is dropped; in train mode both draw the same masks (stochastic depth, position, projection and head dropout)
    after the same seed, other masks after another."""
    rates = dict(drop_path_rate=0.5, drop_rate=0.3, pos_drop_rate=0.1, proj_drop_rate=0.2)
    reference, ours = small_pair("eva02_split", seed=7, depth=3, **rates)
    _, plain = small_pair("eva02_split", seed=7, depth=3)
    ours_rates = [getattr(b.drop_path1, "p", 0.0) for b in ours.blocks]
    assert ours_rates == pytest.approx([getattr(b.drop_path1, "drop_prob", 0.0) for b in reference.blocks])
    assert ours_rates[0] == 0.0 and ours_rates[-1] == pytest.approx(0.5)
    x = image_batch(2, *SIZE, seed=8)
    plain_out, _ = both_outputs(reference, plain, x)
    assert np.array_equal(check_dropout_only_in_training(reference, ours, x, TOL, TOL), plain_out)


# ---- API --------------------------------------------------------------------------------------------------------


def test_pre_logits_num_classes_0_and_reset_classifier_match_timm():
    """forward_head(pre_logits=True) equals timm's, and a model built with ``num_classes=0`` returns it;
    reset_classifier as timm's (a new head of the new size, other pooling: the norms stay), timm's new head loaded
    into ours giving timm's outputs; pooling timm refuses is refused."""
    x = image_batch(2, *SIZE, seed=9)
    reference, ours = small_pair("sbb", seed=10)
    out, expected = both_outputs(reference, ours, x, pre_logits)
    assert_close(out, expected, TOL)
    headless = eva.Eva(**dict(BASE, **SMALL["sbb"], num_classes=0))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert_close(both_outputs(reference, headless.eval(), x)[0], expected, TOL)
    for args in ((5,), (0, ""), (3, "avgmax")):
        torch.manual_seed(11)
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert ours.num_classes == reference.num_classes and ours.global_pool == reference.global_pool
        assert type(ours.get_classifier()).__name__ == type(reference.get_classifier()).__name__
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 3)
    with pytest.raises(ValueError, match="class token"):
        ours.reset_classifier(2, "token")
    with pytest.raises(ValueError, match="global_pool"):
        eva.Eva(**BASE, global_pool="median")


def test_in_chans_and_wrong_sizes():
    """``in_chans=1`` matches timm's one-channel model; an image of another size than the model's is refused."""
    reference, ours = small_pair("eva", seed=12, in_chans=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=13, c=1))
    assert_close(out, expected, TOL)
    with engine.no_grad(), pytest.raises((RuntimeError, ValueError)):
        ours(engine.from_numpy(image_batch(1, SIZE[0] - 1, SIZE[1], c=1)))


def test_features_only_and_forward_intermediates_match_timm():
    """``features_only`` (through the entrypoints' builder) gives timm's feature model: the last three blocks, or
    ``out_indices``, as (N, C, H/p, W/p) maps, with timm's state_dict keys and feature_info; forward_intermediates'
    token sequences with their prefix tokens and the final norm equal timm's."""
    config = dict(img_size=SIZE, patch_size=8, embed_dim=32, depth=3, num_heads=2)
    for out_indices in (None, (0, -1)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(14)
        reference = randomize(timm_eva._create_eva("vit_small_patch16_rope_mixed_ape_224", features_only=True,
                                                   **config, **kwargs), 14).eval()
        ours = eva._eva("vit_small_patch16_rope_mixed_ape_224", False, True, dict(features_only=True, **config,
                                                                                   **kwargs))
        ours.load_state_dict(numpy_state(reference))
        maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=15), 3 if out_indices is None else 2,
                                  TOL)
        assert all(o.shape == (2, 32, 4, 5) for o in maps)
    reference, ours = small_pair("sbb", seed=16, depth=3)
    _, outs = check_intermediates(reference, ours, image_batch(2, *SIZE, seed=17), TOL, indices=[0, 2],
                                  return_prefix_tokens=True, norm=True, output_fmt="NLC")
    assert [(tokens.shape, prefix.shape) for tokens, prefix in outs] == [((2, 20, 32), (2, 2, 32))] * 2


def test_empty_batch():
    """An empty batch (which timm's model refuses: it reshapes the heads' output with a -1 over no values) gives
    empty outputs and intermediates in eval and train mode, and zero gradients for every parameter."""
    _, ours = small_pair("sbb", seed=17)
    x = engine.zeros(0, 3, *SIZE)
    with engine.no_grad():
        assert [tuple(y.shape) for y in ours.forward_intermediates(x, indices=1, intermediates_only=True)] == \
            [(0, 32, 4, 5)]
    check_empty_batch(ours, (3, *SIZE), 7)


def test_list_models():
    """The ``eva`` module holds timm's names; these, each with timm's ImageNet-1k weights (the encoders without them
    are test_timm_eva_encoders.py's)."""
    assert [n for n in models.list_models(module="eva") if is_timm_family(n) and n in NAMES] == sorted(NAMES)
    for name in NAMES:
        assert any(timm.models.get_pretrained_cfg(tag).num_classes == 1000 for tag in timm.list_pretrained(name + ".*"))
