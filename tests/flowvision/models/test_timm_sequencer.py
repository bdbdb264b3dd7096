"""timm parity of Sequencer2D (sequencer2d_s/m/l): every variant's configuration and layout, seeded initialisation
(LeCun-normal convolutions, Xavier-uniform linears, the LSTMs' redrawn uniforms, a zero or -log(classes) head), eval
outputs (float32) of small models with each way of joining the row and column readings (concatenated, summed
without the linear mix, one direction only, stacked one-way LSTMs, a normalised stem), float64 train-mode outputs
and gradients, all with timm's weights loaded; stochastic depth and dropout, and the timm API (pre-logits, pooling,
reset_classifier, in_chans, refused arguments, features_only, forward_intermediates in both layouts,
prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import sequencer as timm_sequencer

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import sequencer
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, conv_and_linear_weights, features_only_pair,
                          image_batch, numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["sequencer2d_s", "sequencer2d_m", "sequencer2d_l"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm", "LSTM", "Linear", "GELU", "Dropout", "Identity", "SelectAdaptivePool2d")
# Small models: a 4x4 patch embedding, widths 8 then 16 (one downsampling by 2), one block a stage.
TINY = dict(layers=[1, 1, 1, 1], patch_sizes=[4, 2, 1, 1], embed_dims=[8, 16, 16, 16], hidden_sizes=[4, 8, 8, 8],
            mlp_ratios=[3.0, 3.0, 2.0, 2.0])
# The readings joined in each of timm's ways: both concatenated and mixed (the registered models), summed with no
# linear mix (the LSTMs' two directions then span the width), the columns alone read by two stacked one-way LSTMs,
# the rows alone after a normalised stem.
SMALL = {
    "cat": TINY,
    "add_without_fc": dict(TINY, union="add", with_fc=False),
    "vertical_two_layers": dict(TINY, union="vertical", bidirectional=False, num_rnn_layers=2),
    "horizontal_stem_norm": dict(TINY, union="horizontal", stem_norm=True),
}
SIZE = (35, 33)


def small_pair(kind="cat", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights (timm's, loaded in ours through numpy), in eval
    mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_sequencer.Sequencer2d(**config), seed).eval()
    ours = sequencer.Sequencer2d(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def check_tree(ours, reference):
    """``check_structure`` and the same module classes throughout, but for the head's pooling of channels-last
    maps (timm's ``FastAdaptiveAvgPool`` and its kin, our one ``ChannelsLastPool``)."""
    check_structure(ours, reference, types=False)
    types = [(n, type(m).__name__) for n, m in ours.named_modules() if n != "head.global_pool.pool"]
    assert types == [(n, type(m).__name__) for n, m in reference.named_modules() if n != "head.global_pool.pool"]


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (the recurrent layer by class name) and builds timm's
    layout: state_dict keys, order, shapes, dtypes, module tree, layer printouts, feature_info, num_features,
    head_hidden_size and default_cfg (both initialisations skipped: the seeded-init test covers them)."""
    ours_calls = capture_builder(monkeypatch, sequencer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_sequencer, "build_model_with_cfg")
    for name in NAMES:
        getattr(sequencer, name)()
        getattr(timm_sequencer, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert ours_kwargs.pop("rnn_layer").__name__ == expected.pop("rnn_layer").__name__ == "LSTM2d"
        assert ours_kwargs == expected | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_sequencer.Sequencer2d, "init_weights", lambda self, nlhb=False: None)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


@pytest.mark.parametrize("kind, nlhb", [("cat", True), ("add_without_fc", False), ("vertical_two_layers", False)])
def test_seeded_init_equals_timm(kind, nlhb):
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps, the LSTMs' uniforms,
    Xavier's and the MLP biases' normals bit for bit; a zero head whose biases are -log(10) with ``nlhb``) and
    leaves both random streams in step."""
    config = dict(SMALL[kind], num_classes=10, nlhb=nlhb)
    reference, ours = check_seeded_init(lambda: timm_sequencer.Sequencer2d(**config),
                                        lambda: sequencer.Sequencer2d(**config), 3, conv_and_linear_weights)
    check_tree(ours, reference)
    assert ours.feature_info == reference.feature_info
    assert np.all(ours.head.fc.bias.detach().numpy() == np.float32(-np.log(10) if nlhb else 0.0))


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size (the embedding drops the pixels past the last patch, a
    non-square 8x8 map), timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode: outputs, input gradient and every parameter's gradient (the LSTMs' included) equal
    timm's."""
    reference, ours = small_pair(seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (one rate for every block, as in timm, each block's module serving both branches), the
    MLPs' and the head's dropout draw timm's masks after the same seed in training, and leave eval outputs
    alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, proj_drop_rate=0.25, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == [0.5] * 4
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model: pre-logits features, ``num_classes=0`` (the pooled features), get_classifier (the
    whole head, as timm's), reset_classifier to new pooling and classes, to twice the width with 'catavgmax' and
    to no pooling (a classifier at every position of the channels-last map), as timm's; unknown unions and
    poolings, a joined width that is not the block's without the linear mix, and intermediates in other layouts
    are refused."""
    reference, ours = small_pair(seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 16)
    assert_close(pre, pre_ref, TOL)
    headless = sequencer.Sequencer2d(**TINY, in_chans=1, num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc.")})
    assert isinstance(headless.get_classifier().fc, engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    assert type(ours.get_classifier()).__name__ == type(reference.get_classifier()).__name__ == "ClassifierHead"
    for classes, pool, shape in ((5, "avgmax", (2, 5)), (4, "", (2, 4, 4, 4))):
        reference.reset_classifier(classes, pool)
        ours.reset_classifier(classes, pool)
        ours.head.load_state_dict(numpy_state(reference.head))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == shape and not ours.head.training and ours.global_pool == reference.global_pool == pool
        assert_close(out, ref, TOL)
    reference.reset_classifier(7, "catavgmax")
    ours.reset_classifier(7, "catavgmax")
    assert ours.num_classes == 7 and ours.head_hidden_size == reference.head_hidden_size == 32
    assert ours.head.fc.weight.shape == reference.head.fc.weight.shape
    with pytest.raises(ValueError, match="union"):
        sequencer.Sequencer2d(**TINY, union="mul")
    with pytest.raises(ValueError, match="output channel"):
        sequencer.Sequencer2d(**TINY, with_fc=False)
    with pytest.raises(ValueError, match="global_pool"):
        sequencer.Sequencer2d(**TINY, global_pool="median")
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NLC")


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's first three stage taps (or those of out_indices) as
    channels-last maps, feature_info, flattened module names (``stem``, ``stages_2``) and state dict, and feature
    maps; forward_intermediates in both layouts, with the final norm on the last stage and stopping early;
    prune_intermediate_layers drops the later stages, the norm and the head as timm's does."""
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 3), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("sequencer2d_s", randomize_parameters, 14, **TINY, **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        maps = check_feature_maps(reference, ours, x, count, TOL)
        assert maps[-1].shape == (2, 4, 4, 16)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[-1], norm=True, output_fmt="NHWC"),
                   dict(indices=[0, 1], stop_early=True, output_fmt="NHWC")):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    check_tree(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 8
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 8, 8, 8)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with weights under its timm name and module."""
    names = models.list_models(module="sequencer")
    assert names == timm.list_models(module="sequencer") == sorted(NAMES)
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("sequencer*")}
