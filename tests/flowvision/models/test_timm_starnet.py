"""timm parity of StarNet (starnet_s1/s2/s3/s4 and the untrained starnet_s050/s100/s150): every variant's
configuration and layout, seeded initialisation, eval outputs (float32) of small models (the star blocks with ReLU6,
another MLP ratio, another activation), float64 train-mode outputs, gradients and BatchNorm statistics, all with
timm's weights loaded; stochastic depth and the head's functional dropout, and the timm API (pre-logits, pooling,
reset_classifier, in_chans, output_stride check, features_only, forward_intermediates, prune_intermediate_layers,
list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import starnet as timm_starnet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import starnet
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, conv_and_linear_weights, features_only_pair,
                          image_batch, numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["starnet_s1", "starnet_s2", "starnet_s3", "starnet_s4", "starnet_s050", "starnet_s100", "starnet_s150"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "ReLU6", "Linear", "Flatten", "Identity")
# Small models: base width 8 (8 to 64 channels), 1 to 2 blocks a stage; the second with timm's smallest models'
# MLP ratio and another activation.
SMALL = {
    "plain": dict(base_dim=8, depths=[1, 2, 1, 1]),
    "ratio3_gelu": dict(base_dim=6, depths=[1, 1, 2, 1], mlp_ratio=3, act_layer=torch.nn.GELU),
}
SIZE = (35, 33)


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights and BatchNorm statistics (timm's, loaded in ours
    through numpy), in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_starnet.StarNet(**config), seed, norms=True).eval()
    ours = starnet.StarNet(**dict(config, act_layer=engine.nn.GELU) if "act_layer" in config else config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, starnet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_starnet, "build_model_with_cfg")
    for name in NAMES:
        getattr(starnet, name)()
        getattr(timm_starnet, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(starnet, "trunc_normal_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(timm_starnet, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps, convolution biases
    and the rest bit for bit) and leaves both random streams in step."""
    config = dict(SMALL["plain"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_starnet.StarNet(**config), lambda: starnet.StarNet(**config),
                                        3, conv_and_linear_weights)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's."""
    reference, ours = small_pair(seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's per-block linear rates, no module where the rate is 0) and the head's functional
    dropout draw timm's masks after the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.125, 0.25, 0.375, 0.5])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model: pre-logits features, ``num_classes=0`` (the pooled features), reset_classifier to
    new pooling and classes, to twice the width with 'catavgmax' and to the unpooled map, as timm's; output strides
    other than 32 and unknown pooling are refused."""
    reference, ours = small_pair(seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 64)
    assert_close(pre, pre_ref, TOL)
    headless = starnet.StarNet(**SMALL["plain"], in_chans=1, num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(5, "avgmax")
    ours.reset_classifier(5, "avgmax")
    ours.head.load_state_dict(numpy_state(reference.head))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and not ours.head.training
    assert_close(out, ref, TOL)
    reference.reset_classifier(7, "catavgmax")
    ours.reset_classifier(7, "catavgmax")
    assert ours.num_classes == 7 and ours.head_hidden_size == reference.head_hidden_size == 128
    assert ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
    ours.reset_classifier(0, "")
    out = both_outputs(reference, ours, x)[0]
    assert out.shape == (2, 64, 2, 2)
    assert np.array_equal(out, both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))[0])
    with pytest.raises(ValueError, match="output_stride"):
        starnet.StarNet(**SMALL["plain"], output_stride=16)
    with pytest.raises(ValueError, match="global_pool"):
        starnet.StarNet(**SMALL["plain"], global_pool="median")


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices), feature_info,
    flattened module names (``stem_0``, ``stages_3``) and state dict, and feature maps; forward_intermediates with
    the final norm on the last stage and stopping early; prune_intermediate_layers drops the later stages, the norm
    and the head as timm's does."""
    config = dict(base_dim=8, depths=[1, 1, 1, 1])
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 4), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("starnet_s1", randomize_parameters, 14, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 5, 5)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's ``starnet`` models under their timm names and module: those with 1k
    weights and the untrained starnet_s050/s100/s150, registered too."""
    names = models.list_models(module="starnet")
    assert names == timm.list_models(module="starnet")
    assert set(names) == set(NAMES)
