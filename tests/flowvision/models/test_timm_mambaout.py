"""timm parity of MambaOut (mambaout_femto/kobe/tiny/small/base and timm's mambaout_small_rw, mambaout_base_short_rw,
mambaout_base_tall_rw, mambaout_base_wide_rw, mambaout_base_plus_rw, test_mambaout): every variant's configuration
and layout, seeded initialisation (layer scale included), eval outputs (float32) of small models (the original
stem, downsampling and MLP head; timm's norm-first downsampling, layer scale and pool-norm-MLP head;
partial-channel depthwise convolutions, 8/3, 2.5 and 3 expansions, GELU and SiLU), float64 train-mode outputs and
gradients, all with timm's weights loaded; stochastic depth and dropout, and the timm API (pre-logits, pooling,
reset_classifier with reset_other, in_chans, refused arguments, features_only, forward_intermediates in both
layouts, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import mambaout as timm_mambaout

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import mambaout
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_structure,
                          check_train_step, conv_and_linear_weights, features_only_pair, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["mambaout_base", "mambaout_base_plus_rw", "mambaout_base_short_rw", "mambaout_base_tall_rw",
         "mambaout_base_wide_rw", "mambaout_femto", "mambaout_kobe", "mambaout_small", "mambaout_small_rw",
         "mambaout_tiny", "test_mambaout"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "SiLU", "LayerScale", "Identity")
_RW = dict(stem_mid_norm=False, downsample="conv_nf", ls_init_value=1e-6, head_fn="norm_mlp")
# Small models: widths 8 to 32 with 1 or 2 blocks a stage. "original": the paper's stem (with its middle norm),
# downsampling and MLP head, 8/3 expansion, GELU; "short_rw" and "wide_rw": timm's variants' norm-first
# downsampling, layer scale and head, with depthwise convolutions on 1.25 and 1.5 times the width.
SMALL = {
    "original": dict(depths=(1, 2, 1, 1), dims=(8, 16, 24, 32)),
    "short_rw": dict(depths=(1, 1, 2, 1), dims=(8, 16, 24, 32), expansion_ratio=2.5, conv_ratio=1.25, **_RW),
    "wide_rw": dict(depths=(1, 1, 2, 1), dims=(8, 16, 24, 32), expansion_ratio=3.0, conv_ratio=1.5,
                    act_layer="silu", **_RW),
}
SIZE = (35, 33)


def randomize(model, seed):
    """Random values for every parameter of a timm MambaOut (its unit norms, zero biases and tiny layer scales
    would hide bugs)."""
    return randomize_parameters(model, seed, scales=("ls",))


def small_pair(kind="original", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's random weights loaded in ours, in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_mambaout.MambaOut(**config), seed).eval()
    ours = mambaout.MambaOut(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, mambaout, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_mambaout, "build_model_with_cfg")
    for name in NAMES:
        getattr(mambaout, name)()
        getattr(timm_mambaout, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(mambaout, "trunc_normal_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(timm_mambaout, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


@pytest.mark.parametrize("kind", ["original", "wide_rw"])
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps, zero biases, unit
    norms and layer scales at LayerScale's 1e-5 whatever ``ls_init_value`` says, as in timm) and leaves both
    random streams in step."""
    config = dict(SMALL[kind], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_mambaout.MambaOut(**config),
                                        lambda: mambaout.MambaOut(**config), 3, conv_and_linear_weights)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info
    assert ours.head_hidden_size == reference.head_hidden_size


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", ["original", "wide_rw"])
def test_train_mode_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's."""
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


@pytest.mark.parametrize("kind", ["original", "short_rw"])
def test_drop_path_and_dropout_only_in_training(kind):
    """Stochastic depth (timm's per-block linear rates, no module where the rate is 0) and each head's dropout
    draw timm's masks after the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair(kind, seed=6, drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.125, 0.25, 0.375, 0.5])
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


@pytest.mark.parametrize("kind, pools", [("original", ("", "avg")), ("wide_rw", ("max", "avgmax", ""))])
def test_head_api_pooling_and_in_chans_like_timm(kind, pools):
    """On a one-channel model: pre-logits features, ``num_classes=0``, reset_classifier to each pooling the head
    takes ('' classifies every position of the channels-last map) and, with ``reset_other``, to the bare
    (pooled or not) map, as timm's; pooling the head does not take is refused."""
    reference, ours = small_pair(kind, seed=9, in_chans=1)
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 128) and ours.head_hidden_size == reference.head_hidden_size == 128
    assert_close(pre, pre_ref, TOL)
    headless = mambaout.MambaOut(**SMALL[kind], in_chans=1, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    for pool in pools:
        reference.reset_classifier(5, pool)
        ours.reset_classifier(5, pool)
        ours.get_classifier().load_state_dict(numpy_state(reference.get_classifier()))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ((2, 5) if pool else (2, 2, 2, 5)) and not ours.get_classifier().training
        assert_close(out, ref, TOL)
    reference.reset_classifier(0, "avg", reset_other=True)
    ours.reset_classifier(0, "avg", reset_other=True)
    check_structure(ours, reference)
    assert ours.head_hidden_size == reference.head_hidden_size == 32
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 32)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(3, "catavgmax")
    with pytest.raises(ValueError, match="global_pool"):
        mambaout.MambaOut(**SMALL[kind], global_pool="catavgmax")


def test_refused_arguments():
    """As timm refuses them: pooling other than 'avg' or '' for the original head, a stage without downsampling
    that changes the width, intermediates in a layout other than NCHW and NHWC."""
    with pytest.raises(ValueError, match="global_pool"):
        mambaout.MambaOut(**SMALL["original"], global_pool="max")
    with pytest.raises(ValueError, match="width"):
        mambaout.MambaOut(**SMALL["original"] | dict(downsample=""))
    with pytest.raises(ValueError, match="output_fmt"):
        mambaout.MambaOut(**SMALL["original"]).forward_intermediates(engine.zeros(1, 3, 32, 32), output_fmt="NLC")


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices) as channels-last maps,
    feature_info, flattened module names (``stages_3``) and state dict; forward_intermediates in (N, C, H, W) and
    channels-last layouts, stopping early; prune_intermediate_layers drops the later stages and the head's norm,
    MLP and classifier as timm's does."""
    config = dict(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32))
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 4), ((0, 2), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("mambaout_base_wide_rw", randomize, 14, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        maps = check_feature_maps(reference, ours, x, count, TOL)
        assert maps[-1].shape[-1] == ours.feature_info.channels()[-1]
    reference, ours = small_pair("short_rw", seed=16)
    for kwargs in (dict(indices=2), dict(indices=[0, 1], stop_early=True, output_fmt="NHWC")):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5, 5, 16)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's variants under their timm names and module: those with 1k weights and
    timm's untrained test_mambaout, registered too."""
    names = models.list_models(module="mambaout")
    assert names == timm.list_models(module="mambaout")
    assert set(names) == set(NAMES)
    assert set(NAMES) - {"test_mambaout"} == {n.split(".")[0] for n in timm.list_pretrained("mambaout*")}
