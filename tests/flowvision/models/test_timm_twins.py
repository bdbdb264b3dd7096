"""timm parity of Twins (twins_pcpvt_small/base/large, twins_svt_small/base/large): every variant's configuration and
layout (module tree, class names, layer printouts, state_dict keys, shapes and dtypes, feature_info), seeded
initialisation, eval outputs (float32) of small models at an odd image size (patches cut off at the edges; global
sub-sampled attention with per-stage ratios, heads and MLP widths, unreduced in the last stage; locally-grouped
attention in windows that pad the map at the bottom and right, a 1x1 map padded to a 2x2 window included; the
positional encoding generator), float64 train-mode outputs and every gradient, all with timm's weights loaded;
dropout and stochastic depth (timm's rates and masks); and the timm API (pre-logits, the 'avg' and '' pooling,
reset_classifier, in_chans, bad arguments, features_only, forward_intermediates, prune_intermediate_layers,
list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import twins as timm_twins

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import twins
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          features_only_pair, image_batch, numpy_state, pre_logits, randomize_parameters,
                          linear_weights, seeded_pair, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["twins_pcpvt_small", "twins_pcpvt_base", "twins_pcpvt_large", "twins_svt_small", "twins_svt_base",
         "twins_svt_large"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "Identity", "Sequential")

# Small models, 8 to 32 channels wide. "pcpvt": global sub-sampled attention only, keys and values reduced by 4, 2,
# 2 and not at all, a head count and an MLP ratio per stage (one fractional); "svt": locally-grouped attention in
# 4x4, 3x3, 2x2 and 2x2 windows at the even blocks, global sub-sampled attention at the odd ones.
SMALL = {
    "pcpvt": dict(depths=(1, 2, 1, 1), embed_dims=(8, 16, 24, 32), num_heads=(1, 2, 3, 4), mlp_ratios=(2, 3, 2, 1.5),
                  sr_ratios=(4, 2, 2, 1), num_classes=5),
    "svt": dict(depths=(2, 2, 1, 2), embed_dims=(8, 16, 24, 32), num_heads=(2, 2, 3, 4), mlp_ratios=(2, 2, 2, 2),
                sr_ratios=(4, 2, 2, 1), wss=(4, 3, 2, 2), num_classes=5),
}
# (61, 45) images: patch grids 15x11, 7x5, 3x2 and 1x1 (the odd pixels cut off); reductions to 3x2, 3x2 and 1x1;
# windows pad the grids to 16x12, 9x6, 4x2 and 2x2
SIZE = (61, 45)
DROPOUTS = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def small_pair(kind="svt", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's random weights loaded in ours, in eval mode."""
    return seeded_pair(timm_twins.Twins, twins.Twins, {**SMALL[kind], **kwargs}, seed)


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree and class names, layer printouts, feature_info, num_features and default_cfg
    (timm's built on the meta device without its initialisation, ours on untouched storage)."""
    ours_calls = capture_builder(monkeypatch, twins, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_twins, "build_model_with_cfg")
    for name in NAMES:
        getattr(twins, name)()
        getattr(timm_twins, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs.pop("progress") is True
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "feature_cfg"}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(twins, "trunc_normal_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(timm_twins.Twins, "_init_weights", lambda self, m: None)
    for layer in (torch.nn.Linear, torch.nn.Conv2d):
        monkeypatch.setattr(layer, "reset_parameters", lambda self: None)
    for name in NAMES:
        reference = timm.create_model(name, device="meta")
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights (linear weights within 2 float32 ulps: the engine's erfinv rounds
    differently from torch's; convolutions, biases and norms bit for bit) and leaves both random streams in step."""
    reference, ours = check_seeded_init(lambda: timm_twins.Twins(**SMALL[kind]), lambda: twins.Twins(**SMALL[kind]),
                                        3, linear_weights, kind)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits and pre-logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 32)
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode (no dropout), padded windows: outputs, input gradient and every
    parameter's gradient equal timm's."""
    reference, ours = small_pair("svt", seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 45, 37, seed=5).astype(np.float64))


def test_dropout_and_drop_path_follow_timm():
    """timm's per-block stochastic depth rates (rising to drop_path_rate) and dropout rates; eval outputs drop
    nothing; in train mode the same seed draws timm's masks (attention weights included), another seed others."""
    reference, ours = small_pair("svt", seed=6, **DROPOUTS)
    rates = check_drop_rates(reference, ours)
    assert rates[0] == pytest.approx(0.3 / 6) and rates[-1] == pytest.approx(0.3)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_in_chans_and_bad_arguments():
    """Pooling '' leaves the tokens, reset_classifier changes the classes and pooling as timm's; in_chans=1 matches
    timm; a pooling other than 'avg' or '', windows of 1, heads that do not divide the width and an img_size that is
    no whole number of patches are refused (timm asserts)."""
    reference, ours = small_pair("pcpvt", seed=8, in_chans=1)
    x = image_batch(2, *SIZE, seed=9, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    assert ours.get_classifier() is ours.head and ours.head_hidden_size == ours.num_features == 32
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
    out, ref = both_outputs(reference, ours, image_batch(2, 70, 65, seed=9, c=1))
    assert out.shape == (2, 4, 32)
    assert_close(out, ref, TOL)
    reference.reset_classifier(3, "avg")
    ours.reset_classifier(3, "avg")
    ours.head.load_state_dict(numpy_state(reference.head))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 3) and not ours.head.training
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="avg pooling"):
        twins.Twins(**SMALL["pcpvt"], global_pool="max")
    with pytest.raises(ValueError, match="avg pooling"):
        ours.reset_classifier(3, "max")
    with pytest.raises(ValueError, match="ws=1"):
        twins.LocallyGroupedAttn(8, 2, ws=1)
    with pytest.raises(ValueError, match="num_heads"):
        twins.LocallyGroupedAttn(10, 3, ws=2)
    with pytest.raises(ValueError, match="patch_size"):
        twins.Twins(**SMALL["pcpvt"], img_size=(30, 32))


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's getter (all four stages by default) with the model
    under ``model.``, pruned after the last stage asked for, and timm's (N, C, H, W) maps and feature_info."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    reference, ours = features_only_pair("twins_svt_small", randomize_parameters, 10, **SMALL["svt"], **kwargs)
    assert type(ours) is FeatureGetterNet
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=11), 4 if out_indices is None else 2, TOL)


def test_intermediates_and_pruning_match_timm():
    """forward_intermediates: the picked stages' maps (the last one normalised with ``norm``) and the final tokens,
    stopping early; prune_intermediate_layers drops the later stages, the final norm and the classifier, as
    timm's."""
    reference, ours = small_pair("svt", seed=12)
    x = image_batch(2, *SIZE, seed=13)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 2], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    assert ours.num_features == ours.head_hidden_size == 16 and isinstance(ours.norm, engine.nn.Identity)
    assert list(ours.state_dict()) == list(reference.state_dict())
    out, ref = both_outputs(reference, ours, x, lambda m, t: m.forward_intermediates(t, 1, intermediates_only=True))
    assert [o.shape for o in out] == [(2, 16, 7, 5)]
    assert_close(out[0], ref[0], TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module."""
    names = models.list_models(module="twins")
    assert sorted(names) == sorted(timm.list_models(module="twins")) == sorted(NAMES)
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("twins*")}
