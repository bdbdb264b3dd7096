"""timm parity of Hiera (hiera_tiny/small/base/base_plus/large/huge_224, hiera_small_abswin_256 and timm's untrained
hiera_base_abswin_256): every variant's configuration and layout, seeded initialisation (timm's ViT and JAX schemes),
eval outputs (float32) of small models at odd, non-square input sizes covering every option the variants use
(mask-unit and global attention with the one-block lag, query pooling with projected or max+avg-pooled shortcuts,
layer scale, the abswin position embedding resized with antialiased bicubic filtering, stages without pooling) and
float64 train-mode outputs and gradients, all with timm's weights loaded; the MAE masking path (given masks, patch
dropout over mask units); stochastic depth and dropout; and the timm API (pre-logits, pooling, reset_classifier,
in_chans, features_only, forward_intermediates, prune_intermediate_layers, bad arguments, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import hiera as timm_hiera

import engine
import flowvision.models as models
from flowvision.models.timm_families import hiera
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_fixed_size_config, check_intermediates, check_layout, check_seeded_init,
                          check_train_step, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["hiera_tiny_224", "hiera_small_224", "hiera_base_224", "hiera_base_plus_224", "hiera_large_224",
         "hiera_huge_224", "hiera_small_abswin_256"]
# timm's untrained variant (no published weights)
UNTRAINED = ["hiera_base_abswin_256"]
TOL = 1e-4
PRINTED = ("HieraBlock", "PatchEmbed", "Conv2d", "LayerNorm", "Linear", "GELU", "Dropout", "LayerScale", "Unroll",
           "Reroll", "Identity")

# Small models. "vit": the 224 variants' layout (four stages, three pooled, 2 x 3 mask units of 8 x 8 tokens), 8
# wide, timm's ViT init; run on 61 x 93 images (a 16 x 24 patch grid, as 64 x 96). "abswin": the abswin variant's
# options (layer scale, max+avg-pooled shortcuts, a 5 x 4 global position table resized to the 27 x 8 grid plus a
# tiled 9 x 4 mask-unit table, JAX init) with 3 x 2 query strides, three stages, the last one not pooled, 3 x 3
# patches; run on 80 x 23 images (as 81 x 24).
SMALL = {
    "vit": dict(img_size=(64, 96), embed_dim=8, num_heads=1, stages=(1, 2, 1, 1), num_classes=10),
    "abswin": dict(img_size=(81, 24), embed_dim=8, num_heads=2, stages=(1, 2, 1), q_pool=1, q_stride=(3, 2),
                   mask_unit_size=(9, 4), mask_unit_attn=(True, False, False), patch_kernel=(3, 3),
                   patch_stride=(3, 3), patch_padding=(1, 1), abs_win_pos_embed=True, global_pos_size=(5, 4),
                   init_values=1e-5, weight_init="jax", use_expand_proj=False, mlp_ratio=2.0, num_classes=10),
}
SIZES = {"vit": (61, 93), "abswin": (80, 23)}


def randomize(model, seed):
    """Random values for every parameter of a timm Hiera (its zero classifier, unit norms, 0.02 biases and 1e-5
    layer scales would hide bugs); the position tables N(0, 1)."""
    return randomize_parameters(model, seed, scales=("gamma",), tokens=("pos_embed", "pos_embed_win"))


def small_pair(kind="vit", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's randomised weights loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize(timm_hiera.Hiera(**SMALL[kind], **kwargs), seed).eval()
    ours = hiera.Hiera(**SMALL[kind], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def as_mask(model, keep):
    """The numpy mask ``keep`` as a tensor of ``model``'s library, on its device."""
    if isinstance(model, torch.nn.Module):
        return torch.from_numpy(keep)
    return engine.from_numpy(keep).to(next(model.parameters()).device)


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint passes timm's configuration (with the image size of timm's weights); rebuilt at full width
    with one block a stage, each has timm's layout: state_dict keys, order, shapes and dtypes, module tree, layer
    printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, hiera, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_hiera, "build_model_with_cfg")
    for name in NAMES + UNTRAINED:
        getattr(hiera, name)()
        getattr(timm_hiera, name)()
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name, ours_call, timm_call in zip(NAMES + UNTRAINED, ours_calls, timm_calls):
        # fix_init (tested below) would rescale hundreds of megabytes that the layout does not need
        config = dict(check_fixed_size_config(name, ours_call, timm_call), stages=(1, 1, 1, 1), fix_init=False)
        with torch.device("meta"):
            reference = timm_hiera.Hiera(**config)
        reference.pretrained_cfg = timm.models.get_pretrained_cfg(name).to_dict()
        check_layout(hiera.Hiera(**config), reference, (), PRINTED)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_equals_timm(kind):
    """From the same seed, timm's initial weights drawn in timm's order (the layers' defaults, the position tables,
    then per layer the ViT or JAX scheme, the output layers rescaled by depth, the scaled zero classifier) bit for
    bit (the JAX patch embedding's truncated normal within 2 float32 ulps), both random streams in step; the
    stochastic depth rates are timm's."""
    config = dict(SMALL[kind], drop_path_rate=0.3)
    reference, ours = check_seeded_init(lambda: timm_hiera.Hiera(**config), lambda: hiera.Hiera(**config), 3,
                                        lambda model: {"patch_embed.proj.weight"}, kind)
    assert ours.feature_info == reference.feature_info
    assert check_drop_rates(reference, ours)[-1] == pytest.approx(0.3)


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_and_train_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd, non-square size in eval mode, then, in float64 and train mode,
    outputs, the input gradient and every parameter's gradient (the abswin position tables' through the resize)
    equal timm's."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZES[kind], seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZES[kind], seed=3).astype(np.float64))


def test_mask_unit_masking_matches_timm():
    """The MAE path: a given mask of the mask units to keep gives timm's kept tokens (``forward``, no head) and
    kept-unit intermediates (``forward_features``, ``forward_intermediates`` in NHWC only); in training, patch
    dropout draws timm's random mask after the same seed (and a given mask is then refused)."""
    reference, ours = small_pair(seed=4)
    x = image_batch(2, *SIZES["vit"], seed=5)
    keep = np.array([[True, False, True, False, False, True], [False, True, True, True, False, False]])
    out, ref = both_outputs(reference, ours, x, lambda m, t: m(t, mask=as_mask(m, keep)))
    assert out.shape == (2, 3, 64)
    assert_close(out, ref, TOL)
    outs, refs = both_outputs(reference, ours, x, lambda m, t: m.forward_features(t, as_mask(m, keep), True)[1])
    assert [o.shape for o in outs] == [r.shape for r in refs] == [(2, 3, 8, 8, 8), (2, 3, 4, 4, 16),
                                                                  (2, 3, 2, 2, 32), (2, 3, 1, 1, 64)]
    outs.append(both_outputs(reference, ours, x, lambda m, t: m.forward_intermediates(
        t, as_mask(m, keep), indices=1, output_fmt="NHWC", intermediates_only=True))[0][0])
    for o, r in zip(outs, refs + refs[-1:]):
        assert_close(o, r, TOL)
    with pytest.raises(ValueError, match="NHWC"):
        ours.forward_intermediates(engine.from_numpy(x), as_mask(ours, keep))
    reference, ours = small_pair(seed=6, patch_drop_rate=0.5)
    reference.train()
    ours.train()
    for seed in (7, 8):
        torch.manual_seed(seed)
        engine.manual_seed(seed)
        out, ref = both_outputs(reference, ours, x)
        assert_close(out, ref, TOL)
    torch.manual_seed(9)
    engine.manual_seed(9)
    assert np.array_equal(to_numpy(ours.get_random_mask(engine.zeros(3), 0.5)),
                          to_numpy(reference.get_random_mask(torch.zeros(3), 0.5)))
    with pytest.raises(ValueError, match="patch_drop_rate"):
        ours(engine.from_numpy(x), mask=as_mask(ours, keep))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (no module where the rate is 0) and the head's dropout draw timm's masks after the same seed
    in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=10, drop_rate=0.5, drop_path_rate=0.5)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZES["vit"], seed=11))


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits features and logits for each pooling, ``num_classes=0``, reset_classifier to a new size and
    pooling and (``reset_other``) without the head's norm, as timm's; a one-channel model; clear errors where timm
    fails (a pooling it lacks, too many pooled stages, an unpooled shortcut that does not double, a wrong input size,
    normed intermediates)."""
    x = image_batch(2, *SIZES["vit"], seed=12)
    for global_pool in ("max", "avgmax", ""):
        reference, ours = small_pair(seed=13, global_pool=global_pool)
        out, ref = both_outputs(reference, ours, x)
        assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 6, 64)
    assert_close(pre, pre_ref, TOL)
    reference, ours = small_pair(seed=14, in_chans=1)
    headless = hiera.Hiera(**SMALL["vit"] | dict(in_chans=1, num_classes=0))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc.")})
    x = image_batch(2, *SIZES["vit"], seed=15, c=1)
    pre, pre_ref = both_outputs(reference, headless.eval(), x, pre_logits)
    assert pre.shape == (2, 64) and headless.head_hidden_size == reference.head_hidden_size == 64
    assert_close(pre, pre_ref, TOL)
    assert_close(to_numpy(headless(engine.from_numpy(x))), pre_ref, TOL)
    for args in ((5, "max"), (3, None, True)):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
        assert not ours.get_classifier().training
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == (2, args[0])
        assert_close(out, ref, TOL)
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
    with pytest.raises(ValueError, match="global_pool"):
        hiera.Hiera(**SMALL["vit"] | dict(global_pool="token"))
    with pytest.raises(ValueError, match="q_pool"):
        hiera.Hiera(**SMALL["vit"] | dict(q_pool=4))
    with pytest.raises(ValueError, match="double"):
        hiera.Hiera(**SMALL["vit"] | dict(use_expand_proj=False, dim_mul=3.0))
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.zeros(1, 1, 96, 64))
    with pytest.raises(ValueError, match="normalisation"):
        ours.forward_intermediates(engine.from_numpy(x), norm=True)


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the entrypoints' builder (timm's default: all four stages; or ``out_indices``): timm's
    feature_info, state_dict (the head without its norm) and rerolled stage maps; forward_intermediates by stage
    and by block (NHWC, without stopping early); prune_intermediate_layers drops the later blocks and the head."""
    for kwargs in ({}, {"out_indices": (1, 3)}):
        torch.manual_seed(16)
        reference = timm_hiera._create_hiera("hiera_tiny_224", features_only=True, **SMALL["vit"], **kwargs)
        randomize(reference, 16).eval()
        ours = hiera._create_hiera("hiera_tiny_224", False, True, features_only=True, **SMALL["vit"], **kwargs)
        assert list(ours.state_dict()) == list(reference.state_dict())
        ours.load_state_dict(numpy_state(reference))
        for key in ("module", "num_chs", "reduction"):
            assert ours.feature_info.get(key) == reference.feature_info.get(key)
        outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZES["vit"], seed=17))
        assert [o.shape for o in outs] == [r.shape for r in refs]
        assert len(outs) == (4 if not kwargs else 2) and outs[-1].shape == (2, 64, 2, 3)
        for out, ref in zip(outs, refs):
            assert_close(out, ref, TOL)
    reference, ours = small_pair("abswin", seed=18)
    x = image_batch(2, *SIZES["abswin"], seed=19)
    out = check_intermediates(reference, ours, x, TOL, indices=(0, 2), output_fmt="NHWC", stop_early=False)
    assert [o.shape for o in out[1]] == [(2, 27, 8, 8), (2, 9, 4, 32)]
    check_intermediates(reference, ours, x, TOL, indices=2, coarse=False, intermediates_only=True)
    assert reference.prune_intermediate_layers(1, coarse=False) == ours.prune_intermediate_layers(1, coarse=False)
    reference.prune_intermediate_layers([1])
    ours.prune_intermediate_layers([1])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    assert ours.num_features == ours.head_hidden_size == reference.num_features == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's Hieras under their names and module: every variant with 1k weights and the
    untrained hiera_base_abswin_256 too."""
    names = models.list_models(module="hiera")
    assert names == timm.list_models(module="hiera")
    assert set(names) - set(UNTRAINED) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("hiera*") if
                                                         timm.models.get_pretrained_cfg(n).num_classes == 1000}
