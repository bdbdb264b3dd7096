"""timm parity of Gemma 4's vision encoder (gemma4_vit_167m/570m classifiers, gemma4_vit_167m_enc/570m_enc VLM
encoders): every variant's configuration and layout, seeded initialisation, eval outputs (float32) of small models
at odd, non-square sizes with non-square patches (grouped key/value heads, finite clamping ranges, the soft-token
pool with standardisation, the classifier on soft tokens), NaFlex inputs (pre-cut patches flat or unflattened, a
dict, padding by sentinel coordinates or by ``patch_valid``), float64 train-mode outputs and gradients, all with
timm's weights loaded; stochastic depth, attention and output dropout; and the timm API (pre-logits, pooling,
reset_classifier, in_chans, features_only, forward_intermediates, prune_intermediate_layers, bad arguments,
list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import gemma4_vit as timm_gemma
from timm.models.naflexvit import batch_patchify

import engine
import flowvision.models as models
from flowvision.models.timm_families import gemma4_vit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_intermediates, check_layout, check_seeded_init, check_train_step, image_batch,
                          linear_weights, numpy_state, pre_logits, randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["gemma4_vit_167m", "gemma4_vit_167m_enc", "gemma4_vit_570m", "gemma4_vit_570m_enc"]
TOL = 1e-4
PRINTED = ("Linear", "RmsNorm", "GELU", "Dropout", "Identity", "Gemma4RotaryEmbedding2D", "Gemma4VisionPooler")

# Small models, 32 wide, two blocks of two 16-wide heads, 5 x 3 patches, a 16-row position table. "clipped": the
# 167M options (clamped projections, here with finite ranges) with one key/value head for both query heads, run on
# 35 x 33 images (a 7 x 11 grid). "soft": the 570M encoder's options (soft tokens in 3 x 3 cells, standardised),
# run on 45 x 27 images (a 9 x 9 grid, 9 soft tokens).
BASE = dict(patch_size=(5, 3), embed_dim=32, depth=2, num_heads=2, head_dim=16, intermediate_size=48,
            position_embedding_size=16)
CLIPPED = dict(BASE, num_kv_heads=1, use_clipped_linears=True, num_classes=10)
SOFT = dict(BASE, standardize=True, global_pool="soft")
SIZE = (35, 33)
SOFT_SIZE = (45, 27)


def randomize(model, seed):
    """Random values for every parameter of a timm Gemma 4 model (unit norm gains would hide bugs), the position
    table N(0, 1); clamping ranges that clip (inputs to +-U(0.5, 1.5), outputs to +-U(1, 2)) and a random
    standardisation, where the model has them."""
    randomize_parameters(model, seed, tokens=("position_embedding_table",))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            bound = torch.rand(buffer.shape, generator=g)
            if name.endswith(("input_min", "input_max")):
                buffer.copy_((0.5 + bound) * (-1 if name.endswith("min") else 1))
            elif name.endswith(("output_min", "output_max")):
                buffer.copy_((1.0 + bound) * (-1 if name.endswith("min") else 1))
            elif name.endswith("std_bias"):
                buffer.copy_(bound - 0.5)
            elif name.endswith("std_scale"):
                buffer.copy_(bound + 0.5)
    return model


def pair_of(reference_class, ours_class, config, seed):
    """(timm's, ours) built from ``config``, timm's randomised weights and buffers loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize(reference_class(**config), seed).eval()
    ours = ours_class(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def classifier_pair(seed=0, **kwargs):
    """(timm's, ours) small "clipped" classifiers."""
    return pair_of(timm_gemma.Gemma4VitClassifier, gemma4_vit.Gemma4VitClassifier, CLIPPED | kwargs, seed)


def encoder_pair(seed=0, **kwargs):
    """(timm's, ours) small "soft" encoders."""
    return pair_of(timm_gemma.Gemma4VitEncoder, gemma4_vit.Gemma4VitEncoder, SOFT | kwargs, seed)


def share_rotary_angles(reference, ours):
    """Have ``ours`` take its rotary cos / sin from timm's module: both compute them in float32, where torch's
    cos and sin round some angles one ulp away from the engine's (numpy's), which a float64 comparison would see."""
    rotary = reference.encoder.rotary_emb

    def forward(x, position_ids):
        cos, sin = rotary(torch.zeros((), dtype=torch.float64), torch.from_numpy(position_ids.cpu().numpy()))
        return engine.from_numpy(cos.numpy()).to(x.device), engine.from_numpy(sin.numpy()).to(x.device)

    ours.encoder.rotary_emb.forward = forward


def skip_init(monkeypatch):
    """No random initialisation in ours: ``skip_random_init``, and this family's TensorFlow-style truncated normal."""
    skip_random_init(monkeypatch)
    monkeypatch.setattr(gemma4_vit, "trunc_normal_tf_", lambda tensor, std=0.02: tensor)


def as_tensor(like, array):
    """The numpy ``array`` as a tensor of the library of ``like``, on its device."""
    return torch.from_numpy(array) if isinstance(like, torch.Tensor) else engine.from_numpy(array).to(like.device)


def naflex_patches(x, patch_size, padded):
    """Images cut as a NaFlex loader does: (N, L, ph * pw * C) patches flattened (row, column, channel), their
    (row, column) coordinates, the last ``padded`` patches of the second image turned to zero padding at (-1, -1)."""
    patches, (rows, cols) = batch_patchify(torch.from_numpy(x), patch_size)
    patches = patches.numpy().copy()
    grid = np.stack(np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"), -1).reshape(-1, 2)
    coords = np.repeat(grid[None], len(x), axis=0)
    patches[1, -padded:] = 0
    coords[1, -padded:] = -1
    return patches, coords


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands its class timm's configuration (the encoders dropping ``num_classes``); rebuilt at full
    width with one block, each has timm's layout: state_dict keys (the clamping and standardisation buffers too),
    order, shapes and dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and
    default_cfg."""
    ours_calls = capture_builder(monkeypatch, gemma4_vit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_gemma, "build_model_with_cfg")
    for name in NAMES:
        getattr(gemma4_vit, name)(num_classes=0)
        getattr(timm_gemma, name)(num_classes=0)
    monkeypatch.undo()
    skip_init(monkeypatch)
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls.__name__ == timm_cls.__name__, name
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        if expected.pop("kwargs_filter", ()) == ("num_classes",):
            expected.pop("num_classes")
        assert ours_kwargs == expected | {"progress": True}, name
        # the blocks repeat: one at full width shows their layout (all of them would take seconds to allocate)
        config = {k: v for k, v in expected.items() if k not in ("variant", "pretrained")} | {"depth": 1}
        with torch.device("meta"):
            reference = timm_cls(**config)
        reference.pretrained_cfg = timm.models.get_pretrained_cfg(name).to_dict()
        check_layout(ours_cls(**config), reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """From the same seed, timm's initial weights: the layers' defaults, then the position table and every linear
    weight but the classifier's drawn from timm's truncated normal (within 2 float32 ulps), the classifier's bias
    zeroed, infinite clamping ranges and an identity standardisation; both random streams in step; the rotary
    frequencies, feature_info and stochastic depth rates are timm's."""
    config = dict(CLIPPED, standardize=True, drop_path_rate=0.3)
    reference, ours = check_seeded_init(
        lambda: timm_gemma.Gemma4VitClassifier(**config), lambda: gemma4_vit.Gemma4VitClassifier(**config), 3,
        lambda model: linear_weights(model) - {"head.weight"} | {"encoder.patch_embed.position_embedding_table"})
    assert np.array_equal(to_numpy(ours.encoder.rotary_emb.inv_freq), reference.encoder.rotary_emb.inv_freq.numpy())
    assert ours.feature_info == reference.feature_info
    assert check_drop_rates(reference, ours) == pytest.approx([0.3])


def test_eval_outputs_match_timm():
    """float32 outputs of a batch of 2 at odd, non-square sizes: the clipped classifier's logits (clamping active),
    the standardised soft tokens of the encoder, its 'avg' and unpooled outputs, and a classifier on soft tokens;
    the rotary angles within a float32 ulp."""
    reference, ours = classifier_pair(seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    x = image_batch(2, *SOFT_SIZE, seed=3)
    for global_pool, shape in (("soft", (2, 9, 32)), ("avg", (2, 32)), ("", (2, 81, 32))):
        reference, ours = encoder_pair(seed=4, global_pool=global_pool)
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == shape
        assert_close(out, ref, TOL)
    angles = both_outputs(reference.rotary_emb, ours.rotary_emb, np.zeros(1, np.float32),
                          lambda m, t: m(t, t.new_tensor(np.indices((9, 9)).reshape(1, 2, -1).transpose(0, 2, 1))))
    np.testing.assert_allclose(angles[0], angles[1], rtol=0, atol=2 ** -23)
    reference, ours = pair_of(timm_gemma.Gemma4VitClassifier, gemma4_vit.Gemma4VitClassifier,
                              dict(SOFT, global_pool="avg", encoder_pool="soft", num_classes=5), 5)
    assert_close(*both_outputs(reference, ours, x), TOL)


def test_naflex_inputs_match_timm():
    """Pre-cut patches with coordinates, padding marked by (-1, -1) or by ``patch_valid``, flat or (N, L, ph, pw,
    C) or in a dict: the classifier's masked mean and the encoder's masked attention, mean and tokens equal timm's;
    the image path gives the same as its own patches."""
    reference, ours = classifier_pair(seed=6)
    x = image_batch(2, *SIZE, seed=7)
    patches, coords = naflex_patches(x, (5, 3), padded=10)
    valid = coords[..., 0] >= 0
    unflat = patches.reshape(2, -1, 5, 3, 3)
    calls = [lambda m, t, c: m(t, patch_coord=c), lambda m, t, c: m({"patches": t, "patch_coord": c}),
             lambda m, t, c: m(t.reshape(unflat.shape), c, as_tensor(t, valid))]
    for call in calls:
        out, ref = both_outputs(reference, ours, patches,
                                lambda m, t, call=call: call(m, t, as_tensor(t, coords)))
        assert out.shape == (2, 10)
        assert_close(out, ref, TOL)
    whole = both_outputs(reference, ours, x)[0]
    cut = both_outputs(reference, ours, naflex_patches(x, (5, 3), padded=1)[0][:1],
                       lambda m, t: m(t, patch_coord=as_tensor(t, coords[:1])))[0]
    assert_close(cut, whole[:1], 1e-5)
    for global_pool in ("avg", ""):
        reference, ours = encoder_pair(seed=8, global_pool=global_pool)
        out, ref = both_outputs(reference, ours, patches,
                                lambda m, t: m(t, patch_coord=as_tensor(t, coords)))
        assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode, the classifier with clamping and grouped key/value heads: outputs, the input gradient
    and every parameter's gradient equal timm's (the rotary angles shared, see ``share_rotary_angles``)."""
    reference, ours = classifier_pair(seed=9, num_classes=7)
    reference.double().train()
    ours.double().train()
    share_rotary_angles(reference, ours)
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=10).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth, attention dropout, output dropout and the head's dropout draw timm's masks after the same
    seed in training, and leave eval outputs alone."""
    reference, ours = classifier_pair(seed=11, drop_rate=0.5, drop_path_rate=0.5, attn_drop_rate=0.2,
                                      proj_drop_rate=0.1)
    assert check_drop_rates(reference, ours) == pytest.approx([0.5])
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=12))


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits features, a one-channel classifier built with ``num_classes=0``, the unpooled head and
    reset_classifier to new classes and pooling, as timm's; clear errors where timm fails (poolings either class
    lacks, a soft pool on images that do not cut into whole cells, a classifier asked of the encoder, pre-cut
    patches without coordinates)."""
    reference, ours = classifier_pair(seed=13, in_chans=1)
    x = image_batch(2, *SIZE, seed=14, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)
    headless = gemma4_vit.Gemma4VitClassifier(**CLIPPED | dict(in_chans=1, num_classes=0))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    for args in ((5, "none"), (3, "avg"), (0, None)):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
        assert not ours.get_classifier().training and ours.global_pool == reference.global_pool
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ((2, 77, 5) if args[1] == "none" else (2, args[0] or 32))
        assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        gemma4_vit.Gemma4VitClassifier(**CLIPPED | dict(global_pool="soft"))
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(3, "max")
    with pytest.raises(ValueError, match="encoder_pool"):
        gemma4_vit.Gemma4VitClassifier(**CLIPPED | dict(encoder_pool="avg"))
    with pytest.raises(ValueError, match="global_pool"):
        gemma4_vit.Gemma4VitEncoder(**SOFT | dict(global_pool="max"))
    encoder = gemma4_vit.Gemma4VitEncoder(**SOFT)
    with pytest.raises(ValueError, match="multiple"):
        encoder(engine.zeros(1, 3, *SIZE))
    with pytest.raises(NotImplementedError):
        encoder.forward_head(engine.zeros(1, 9, 32))
    with pytest.raises(ValueError, match="patch_coord"):
        encoder(engine.zeros(1, 81, 45))


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the entrypoints' builders (timm's default: the last three blocks; or ``out_indices``):
    timm's feature_info, state_dict and (N, C, rows, cols) maps; forward_intermediates as maps or tokens, stopping
    early, and as a dict; prune_intermediate_layers drops the later blocks (and the classifier) as timm's does."""
    x = image_batch(2, *SIZE, seed=15)
    config = dict(CLIPPED, depth=3)
    for builders, kwargs, count in (((timm_gemma._create_gemma4_vit_classifier, gemma4_vit._create_classifier), {},
                                     3),
                                    ((timm_gemma._create_gemma4_vit_encoder, gemma4_vit._create_encoder),
                                     dict(out_indices=(0, 2), global_pool=""), 2)):
        torch.manual_seed(16)
        reference = randomize(builders[0]("gemma4_vit_167m", features_only=True, **config, **kwargs), 16).eval()
        ours = builders[1]("gemma4_vit_167m", False, True, dict(features_only=True, **config, **kwargs))
        assert list(ours.state_dict()) == list(reference.state_dict())
        ours.load_state_dict(numpy_state(reference))
        for key in ("module", "num_chs", "reduction"):
            assert ours.feature_info.get(key) == reference.feature_info.get(key)
        outs, refs = both_outputs(reference, ours.eval(), x)
        assert len(outs) == count and [o.shape for o in outs] == [r.shape for r in refs] == [(2, 32, 7, 11)] * count
        for out, ref in zip(outs, refs):
            assert_close(out, ref, TOL)
    reference, ours = classifier_pair(seed=17, depth=3)
    check_intermediates(reference, ours, x, TOL, indices=2)
    check_intermediates(reference, ours, x, TOL, indices=[0], output_fmt="NLC", stop_early=True)
    with torch.no_grad():
        ref = reference.encoder.forward_intermediates(torch.from_numpy(x), indices=1, output_fmt="NLC",
                                                      output_dict=True)
    with engine.no_grad():
        out = ours.encoder.forward_intermediates(engine.from_numpy(x), indices=1, output_fmt="NLC",
                                                 output_dict=True)
    out, ref = ({k: to_numpy(v[0] if isinstance(v, list) else v) for k, v in d.items()} for d in (out, ref))
    assert sorted(out) == sorted(ref) == ["image_features", "image_intermediates", "patch_valid"]
    assert np.array_equal(out["patch_valid"], ref["patch_valid"]) and out["patch_valid"].all()
    assert_close(out["image_features"], ref["image_features"], TOL)
    assert_close(out["image_intermediates"], ref["image_intermediates"], TOL)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert reference.prune_intermediate_layers([1]) == ours.prune_intermediate_layers([1]) == [1]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 32)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant under its timm name and module."""
    names = models.list_models(module="gemma4_vit")
    assert names == [n for n in timm.list_models(module="gemma4_vit") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("gemma4_vit*")}
