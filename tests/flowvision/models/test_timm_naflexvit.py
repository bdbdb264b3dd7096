"""timm parity of NaFlexViT (naflexvit_base_patch16_gap / par_gap / parfac_gap, the SigLIP 2 encoders naflexvit_base /
so400m_patch16_siglip and the C-RADIO backbones naflexvit_*_patch16_radio_v3 / v4): every variant's configuration, the
layouts (the encoders' with one block, the giant's configuration only), seeded initialisation, float32 eval outputs of
small models on images (learned, aspect-preserving and factorised position embeddings resampled up and down, the
convolutional embedding with a class token, attention pooling; SigLIP 2's tanh GELU with bilinear resampling and
attention pooling; C-RADIO's class token, registers, no final norm and bilinear, corner-aligned or not, unantialiased
aspect-preserving resampling) and on NaFlex batches of mixed grids with padding (dict and argument forms, masked
attention and pooling), float64 train-mode outputs and every gradient on both (the encoders' too), dropout / stochastic
depth / patch dropout masks, and the timm API (pre-logits, reset_classifier, bad arguments, features_only,
forward_intermediates on images and NaFlex batches, prune_intermediate_layers, list_models). timm's untrained
variants (naflexvit_base_patch16_map, naflexvit_so150m2_patch16_reg1_gap / _map) are configurations of the same
kinds: their configuration and the base one's layout."""
import dataclasses

import numpy as np
import pytest
import timm
import torch
from timm.models import naflexvit as timm_naflexvit

import engine
import flowvision.models as models
from flowvision.models.timm_families import naflexvit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, features_only_pair, image_batch, linear_weights,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["naflexvit_base_patch16_gap", "naflexvit_base_patch16_par_gap", "naflexvit_base_patch16_parfac_gap"]
# image encoders without a classifier (timm's weights have num_classes=0): SigLIP 2's and NVIDIA's C-RADIO
SIGLIP_NAMES = ["naflexvit_base_patch16_siglip", "naflexvit_so400m_patch16_siglip"]
RADIO_NAMES = ["naflexvit_base_patch16_radio_v3", "naflexvit_large_patch16_radio_v3", "naflexvit_huge_patch16_radio_v3",
               "naflexvit_giant_patch16_radio_v3", "naflexvit_so400m_patch16_radio_v4",
               "naflexvit_huge_patch16_radio_v4"]
ENCODER_NAMES = SIGLIP_NAMES + RADIO_NAMES
# timm's variants without published weights (registered too): attention pooling with a register, SO150M v2
UNTRAINED = ["naflexvit_base_patch16_map", "naflexvit_so150m2_patch16_reg1_gap", "naflexvit_so150m2_patch16_reg1_map"]
TOL = 1e-4
PRINTED = ("Linear", "Conv2d", "LayerNorm", "GELU", "GELUTanh", "Dropout", "Identity")
TOKENS = ("pos_embed", "pos_embed_x", "pos_embed_y", "reg_token", "cls_token", "latent")
# Small models: width 16, 2 heads, 2 blocks, 4-pixel patches, a 4x4 position grid (5x5 for the downsampling one);
# timm's three registered layouts, then the convolutional embedding with a class token, a norm before the blocks
# and query-key norms (images floored to whole patches), then attention pooling; SigLIP 2's encoder; C-RADIO's
# backbone, v3 (a 6x6 grid resampled up, corners aligned) and v4 (a 12x12 grid resampled down, unaligned).
BASE = dict(patch_size=4, embed_dim=16, depth=2, num_heads=2, init_values=1e-5, global_pool="avg", reg_tokens=2,
            fc_norm=True, pos_embed_grid_size=(4, 4), dynamic_img_pad=True)
SMALL = {
    "gap": BASE,
    "par_gap": dict(BASE, pos_embed_ar_preserving=True),
    "parfac_gap": dict(BASE, pos_embed_ar_preserving=True, pos_embed="factorized"),
    "down_gap": dict(BASE, pos_embed_grid_size=(12, 11)),
    "conv_token": dict(BASE, embed_proj_type="conv", class_token=True, reg_tokens=0, global_pool="token",
                       fc_norm=None, pre_norm=True, qk_norm=True, dynamic_img_pad=False),
    "map": dict(BASE, global_pool="map", reg_tokens=1, fc_norm=None, init_values=None),
    "siglip": dict(BASE, act_layer="gelu_tanh", global_pool="map", pos_embed_interp_mode="bilinear", reg_tokens=0,
                   fc_norm=None, init_values=None),
    "radio_v3": dict(BASE, class_token=True, reg_tokens=3, global_pool="token", fc_norm=None, final_norm=False,
                     pos_embed_grid_size=(6, 6), pos_embed_interp_mode="bilinear", pos_embed_ar_preserving=True,
                     pos_embed_antialias=False, pos_embed_align_corners=True),
    "radio_v4": dict(BASE, class_token=True, reg_tokens=3, global_pool="token", fc_norm=None, final_norm=False,
                     pos_embed_grid_size=(12, 12), pos_embed_interp_mode="bilinear", pos_embed_ar_preserving=True,
                     pos_embed_antialias=False, init_values=None),
}
SIZE = (35, 25)  # 9 x 7 patches of 4 with partial ones padded (8 x 6 floored by the convolution)


def small_pair(kind="gap", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights (timm's, loaded in ours through numpy), in eval
    mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_naflexvit.NaFlexVit(**config), seed, tokens=TOKENS).eval()
    ours = naflexvit.NaFlexVit(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def naflex_batch(grids, length, seed, patch=4, channels=3, dtype=np.float32):
    """A NaFlex batch (numpy): per image of grid (rows, cols) its rows * cols patches in row-major order with their
    (row, column) coordinates, then padding up to ``length`` (random values, coordinates 0, invalid)."""
    rng = np.random.default_rng(seed)
    patches = rng.standard_normal((len(grids), length, patch * patch * channels)).astype(dtype)
    coord = np.zeros((len(grids), length, 2), dtype=np.int64)
    valid = np.zeros((len(grids), length), dtype=bool)
    for i, (rows, cols) in enumerate(grids):
        coord[i, :rows * cols] = np.stack(np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"), -1).reshape(
            -1, 2)
        valid[i, :rows * cols] = True
    return {"patches": patches, "patch_coord": coord, "patch_valid": valid}


def naflex_outputs(reference, ours, batch, fn=None):
    """Both models' outputs (or ``fn(model, inputs)``) on the NaFlex ``batch`` (as a dict of tensors) or on an
    image batch, without gradients, as numpy: (ours, reference's); dict outputs as dicts of numpy arrays."""
    fn = fn or (lambda model, inputs: model(inputs))
    with torch.no_grad():
        ref = fn(reference, _tensors(batch, torch.from_numpy))
    with engine.no_grad():
        out = fn(ours, _tensors(batch, engine.from_numpy))
    return _numpy(out), _numpy(ref)


def _tensors(batch, from_numpy):
    """A numpy array, or a dict of them, as tensors of ``from_numpy``."""
    if isinstance(batch, dict):
        return {k: from_numpy(v) for k, v in batch.items()}
    return from_numpy(batch)


def _numpy(value):
    """Tensors as numpy arrays, inside dicts, lists and tuples too."""
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_numpy(v) for v in value)
    return value.detach().numpy()


def assert_nested_close(out, ref, rtol):
    """The same nesting (dict keys, list lengths) and every array within ``rtol``."""
    if isinstance(ref, dict):
        assert list(out) == list(ref)
        for key in ref:
            assert_nested_close(out[key], ref[key], rtol)
    elif isinstance(ref, (list, tuple)):
        assert len(out) == len(ref)
        for o, r in zip(out, ref):
            assert_nested_close(o, r, rtol)
    elif ref.dtype == bool:
        assert np.array_equal(out, ref)
    else:
        assert out.shape == ref.shape
        assert_close(out, ref, rtol)


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands the class timm's configuration (every field we have equal, timm's others at their
    defaults) and builds timm's layout: state_dict keys, order, shapes, dtypes, module tree, layer printouts,
    feature_info, num_features, head_hidden_size and default_cfg; the encoders with one block and no classifier,
    as their weights have it (the giant C-RADIO, 1.1B parameters, is not built). The untrained variants too: their
    configuration, and the layout of naflexvit_base_patch16_map (the SO150M v2 ones, 150M parameters, are not
    built)."""
    ours_calls = capture_builder(monkeypatch, naflexvit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_naflexvit, "build_model_with_cfg")
    for name in NAMES + ENCODER_NAMES + UNTRAINED:
        getattr(naflexvit, name)()
        getattr(timm_naflexvit, name)()
    assert len(ours_calls) == len(timm_calls) == len(NAMES + ENCODER_NAMES + UNTRAINED)
    defaults = dataclasses.asdict(timm_naflexvit.NaFlexVitCfg())
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES + ENCODER_NAMES + UNTRAINED, ours_calls, timm_calls):
        assert set(timm_kwargs) == {"cfg", "feature_cfg", "pretrained_filter_fn"}, name
        assert timm_kwargs["feature_cfg"] == dict(out_indices=3, feature_cls="getter"), name
        assert set(ours_kwargs) == {"cfg", "progress"} and ours_kwargs["progress"] is True, name
        ours_cfg, timm_cfg = dataclasses.asdict(ours_kwargs["cfg"]), dataclasses.asdict(timm_kwargs["cfg"])
        assert ours_cfg == {k: timm_cfg[k] for k in ours_cfg}, name
        assert {k: v for k, v in timm_cfg.items() if k not in ours_cfg} == {
            k: v for k, v in defaults.items() if k not in ours_cfg}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(naflexvit.NaFlexVit, "_fix_init_weight", lambda self: None)
    monkeypatch.setattr(timm_naflexvit.NaFlexVit, "init_weights", lambda self, *args, **kwargs: None)
    for name in NAMES + UNTRAINED[:1]:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        ours = models.create_model(name, num_classes=1000)
        check_layout(ours, reference, (), PRINTED, types=True)
    for name in ENCODER_NAMES:
        if name != "naflexvit_giant_patch16_radio_v3":
            with torch.device("meta"):
                reference = timm.create_model(name, depth=1, num_classes=0)
            ours = models.create_model(name, depth=1, num_classes=0)
            check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", ["map", "parfac_gap", "radio_v3"])
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights (the linear weights, truncated normals scaled down by depth, and
    the attention pool's latent within 2 float32 ulps; tokens, position tables, norms, layer scales and biases bit
    for bit) and leaves both random streams in step."""
    config = dict(SMALL[kind], class_token=True, num_classes=10)

    def truncated(model):
        return linear_weights(model) | ({"attn_pool.latent"} if kind == "map" else set())

    reference, ours = check_seeded_init(lambda: timm_naflexvit.NaFlexVit(**config),
                                        lambda: naflexvit.NaFlexVit(**config), 3, truncated, kind)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd, non-square size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", ["par_gap", "parfac_gap", "map", "siglip", "radio_v3", "radio_v4"])
def test_naflex_batches_match_timm(kind):
    """A NaFlex batch of three images with their own grids (one the position grid's, one resampled, one wider than
    it) and padding: the dict input, the same as arguments, and forward_features' dict; the padding's values do
    not reach the valid outputs."""
    reference, ours = small_pair(kind, seed=3, pool_include_prefix=kind == "map")
    batch = naflex_batch([(4, 4), (3, 5), (2, 6)], 18, seed=4)
    out, ref = naflex_outputs(reference, ours, batch)
    assert out.shape == (3, 1000)
    assert_close(out, ref, TOL)
    args, _ = naflex_outputs(reference, ours, batch, lambda m, b: m(b["patches"], b["patch_coord"], b["patch_valid"]))
    assert np.array_equal(args, out)
    features, expected = naflex_outputs(reference, ours, batch, lambda m, b: m.forward_features(**b))
    assert_nested_close(features, expected, TOL)
    repadded = dict(batch, patches=np.where(batch["patch_valid"][..., None], batch["patches"], 7.0))
    assert_close(naflex_outputs(reference, ours, repadded)[0], out, 1e-5)


@pytest.mark.parametrize("pool", ["avgmax", "max"])
def test_naflex_masked_pooling_matches_timm(pool):
    """Masked max and average-max pooling over the valid patch tokens (the prefix included or not), with timm's
    key-only attention mask."""
    for include in (False, True):
        reference, ours = small_pair("gap", seed=5, global_pool=pool, pool_include_prefix=include,
                                     use_key_only_attn_mask=True)
        out, ref = naflex_outputs(reference, ours, naflex_batch([(4, 3), (2, 2)], 13, seed=6))
        assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode, images on the position grid and a padded NaFlex batch (the float32 resampling of
    position embeddings rounds differently, so grids that need none): outputs, input gradient and every
    parameter's gradient equal timm's."""
    reference, ours = small_pair("gap", seed=7, num_classes=7, pos_embed_grid_size=(5, 4))
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 20, 13, seed=8).astype(np.float64))
    reference, ours = small_pair("map", seed=9, num_classes=7, pos_embed_grid_size=(3, 2))
    reference.double().train()
    ours.double().train()
    batch = naflex_batch([(3, 2), (3, 2)], 8, seed=10, dtype=np.float64)
    torch_batch = {k: torch.from_numpy(v) for k, v in batch.items()}
    engine_batch = {k: engine.from_numpy(v) for k, v in batch.items()}
    ref, out = reference(torch_batch), ours(engine_batch)
    assert_close(out.detach().numpy(), ref.detach().numpy(), 1e-10)
    (ref ** 2).sum().backward()
    (out ** 2).sum().backward()
    grads = {name: p.grad.numpy() for name, p in ours.named_parameters()}
    for name, p in reference.named_parameters():
        assert_close(grads[name], p.grad.numpy(), 1e-8, what=name)


@pytest.mark.parametrize("kind", ["siglip", "radio_v3", "radio_v4"])
def test_encoder_train_mode_gradients_match_timm(kind):
    """float64, train mode, padded images: outputs, input gradient and every parameter's gradient equal timm's.
    Both resample position tables in float32, whose rounding would show: SigLIP's images have its table's grid,
    C-RADIO's one as tall as its table (the table resampled to its own size, then cropped)."""
    reference, ours = small_pair(kind, seed=21, num_classes=7)
    reference.double().train()
    ours.double().train()
    size = {"siglip": (16, 13), "radio_v3": (24, 14), "radio_v4": (48, 30)}[kind]
    check_train_step(reference, ours, image_batch(2, *size, seed=22).astype(np.float64))


def test_drop_path_dropout_and_patch_dropout_only_in_training():
    """Stochastic depth (timm's linear rates), position, attention, projection and head dropout and patch dropout
    draw timm's masks after the same seed in training and leave eval outputs alone; on a NaFlex batch the kept
    patches' validity follows the dropped tokens."""
    rates = dict(drop_rate=0.3, pos_drop_rate=0.1, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.5,
                 patch_drop_rate=0.25)
    reference, ours = small_pair("gap", seed=11, **rates)
    assert check_drop_rates(reference, ours) == pytest.approx([0.5, 0.5])  # the second block's two branches
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=12))
    batch = naflex_batch([(4, 4), (2, 3)], 16, seed=13)
    torch.manual_seed(14)
    engine.manual_seed(14)
    features, expected = naflex_outputs(reference, ours, batch, lambda m, b: m.forward_features(**b))
    assert features["patches"].shape == (2, 2 + 12, 16)
    assert_nested_close(features, expected, TOL)


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model: pre-logits features, ``num_classes=0``, reset_classifier to other poolings and
    classes and to the whole sequence, as timm's; attention pooling cannot be added, unknown pooling, token pooling
    without a class token, unknown position embeddings and other weight inits are refused."""
    reference, ours = small_pair("gap", seed=15, in_chans=1)
    x = image_batch(2, *SIZE, seed=16, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 16)
    assert_close(pre, pre_ref, TOL)
    headless = naflexvit.NaFlexVit(**SMALL["gap"], in_chans=1, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    for pool in ("max", "avgmax"):
        reference.reset_classifier(5, pool)
        ours.reset_classifier(5, pool)
        ours.head.load_state_dict(numpy_state(reference.head))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == (2, 5) and not ours.head.training
        assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    out, ref = both_outputs(reference.eval(), ours, x, lambda m, t: m.forward_head(m.forward_features(t)))
    assert out.shape == (2, 2 + 9 * 7, 16)
    with pytest.raises(ValueError, match="attention pooling"):
        ours.reset_classifier(3, "map")
    with pytest.raises(ValueError, match="global_pool"):
        naflexvit.NaFlexVit(**dict(SMALL["gap"], global_pool="median"))
    with pytest.raises(ValueError, match="class token"):
        naflexvit.NaFlexVit(**dict(SMALL["gap"], global_pool="token"))
    with pytest.raises(ValueError, match="pos_embed"):
        naflexvit.NaFlexVit(**dict(SMALL["gap"], pos_embed="sincos"))
    with pytest.raises(ValueError, match="weight_init"):
        naflexvit.NaFlexVit(**dict(SMALL["gap"], weight_init="jax"))
    with pytest.raises(TypeError):
        naflexvit.NaFlexVit(**dict(SMALL["gap"], rope_type="axial"))


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry (timm's last three blocks, or out_indices), its feature_info and state
    dict; forward_intermediates on images (NCHW maps, NLC with prefix tokens, the final norm, stopping early, the
    dict output) and on a NaFlex batch (NLC only, the dict with patch_valid); prune_intermediate_layers drops the
    later blocks, the norm and the head as timm's does."""
    config = dict(SMALL["map"], depth=3, pos_embed_grid_size=(3, 3))
    x = image_batch(2, *SIZE, seed=17)
    for out_indices, count in ((None, 3), ((0, 2), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair(NAMES[0], lambda m, s: randomize_parameters(m, s, tokens=TOKENS), 18,
                                             **config, **kwargs)
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair("map", seed=19, depth=3)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True, output_fmt="NLC"),
                   dict(indices=1, return_prefix_tokens=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    out, ref = naflex_outputs(reference, ours, x, lambda m, t: m.forward_intermediates(
        t, output_dict=True, return_prefix_tokens=True))
    assert_nested_close(out, ref, TOL)
    batch = naflex_batch([(4, 4), (3, 5)], 16, seed=20)
    for kwargs in (dict(output_fmt="NLC", indices=2), dict(output_fmt="NLC", output_dict=True)):
        out, ref = naflex_outputs(reference, ours, batch, lambda m, b: m.forward_intermediates(b, **kwargs))
        assert_nested_close(out, ref, TOL)
    with pytest.raises(ValueError, match="NLC"):
        ours.forward_intermediates({k: engine.from_numpy(v) for k, v in batch.items()})
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 1 + 9 * 7, 16)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's variants under their timm names and module: the ImageNet-1k classifiers,
    the SigLIP 2 / C-RADIO encoders without a classifier, and timm's untrained variants."""
    names = models.list_models(module="naflexvit")
    assert names == timm.list_models(module="naflexvit")
    assert set(names) == set(NAMES + ENCODER_NAMES + UNTRAINED)
    names = [n for n in names if n not in UNTRAINED]
    pretrained = {n.split(".")[0]: timm.models.get_pretrained_cfg(n).num_classes
                  for n in timm.list_pretrained("naflexvit*") if not n.endswith(".untrained")}
    assert set(names) == set(NAMES + ENCODER_NAMES) == set(pretrained)
    assert {n for n, num_classes in pretrained.items() if num_classes == 1000} == set(NAMES)
