"""timm parity of FasterNet (fasternet_t0/t1/t2/s/m/l): every variant's configuration and layout, seeded
initialisation, eval outputs (float32) of small models (ReLU blocks; GELU with layer scale, another split of the
partial convolution and no stem norm; the inference-only slicing partial convolution), float64 train-mode outputs,
gradients and BatchNorm statistics, all with timm's weights loaded; stochastic depth and the head's functional
dropout, and the timm API (pre-logits, pooling, reset_classifier, in_chans, refused arguments, features_only,
forward_intermediates, prune_intermediate_layers, list_models)."""
import inspect

import numpy as np
import pytest
import timm
import torch
from timm.models import fasternet as timm_fasternet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import fasternet
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, conv_and_linear_weights, features_only_pair,
                          image_batch, numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["fasternet_t0", "fasternet_t1", "fasternet_t2", "fasternet_s", "fasternet_m", "fasternet_l"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "ReLU", "GELU", "Linear", "Flatten", "Identity")
# Small models: widths 8 to 64, 1 to 2 blocks a stage, a 16 to 32 channel head; the second with the tiny variants'
# GELU, a layer scale, half the channels in the partial convolution, another MLP ratio and no norm in the stem; the
# third with the inference-only partial convolution that writes into a copy of its input.
SMALL = {
    "plain": dict(embed_dim=8, depths=(1, 1, 1, 1), feature_dim=32, drop_path_rate=0.0),
    "gelu_scaled": dict(embed_dim=8, depths=(1, 2, 1, 1), feature_dim=24, drop_path_rate=0.0, mlp_ratio=3.0,
                        n_div=2, layer_scale_init_value=1e-2, patch_norm=False, act_layer=torch.nn.GELU),
    "slicing": dict(embed_dim=8, depths=(1, 1, 2, 1), feature_dim=16, drop_path_rate=0.0, pconv_fw_type="slicing"),
}
SIZE = (35, 33)
# Large enough for a 2x2 last stage: train-mode BatchNorm there normalises over 8 values, not 2 (statistics of two
# values amplify rounding), and the unpooled head keeps a map.
TRAIN_SIZE = (67, 71)


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights, layer scales and BatchNorm statistics (timm's,
    loaded in ours through numpy), in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_fasternet.FasterNet(**config), seed, scales=("layer_scale",), norms=True)
    ours = fasternet.FasterNet(**dict(config, act_layer=engine.nn.GELU) if "act_layer" in config else config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def comparable(kwargs):
    """Builder arguments with the layer classes by name (timm's are torch's, ours the engine's), a default
    ``partial`` by its class and arguments."""
    def name(layer):
        return (layer.func.__name__, layer.keywords) if hasattr(layer, "func") else layer.__name__
    return {k: name(v) if k in ("act_layer", "norm_layer") else v for k, v in kwargs.items()}


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Our FasterNet has timm's defaults; each entrypoint hands its class timm's configuration and builds timm's
    layout: state_dict keys, order, shapes, dtypes, module tree, layer printouts, feature_info, num_features,
    head_hidden_size and default_cfg."""
    timm_defaults = {k: p.default for k, p in inspect.signature(timm_fasternet.FasterNet).parameters.items()
                     if k not in ("device", "dtype")}
    our_defaults = {k: p.default for k, p in inspect.signature(fasternet.FasterNet).parameters.items()}
    assert comparable(our_defaults) == comparable(timm_defaults)
    ours_calls = capture_builder(monkeypatch, fasternet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_fasternet, "build_model_with_cfg")
    for name in NAMES:
        getattr(fasternet, name)()
        getattr(timm_fasternet, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert comparable(ours_kwargs) == comparable(expected) | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_fasternet, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps, BatchNorms and layer
    scales bit for bit) and leaves both random streams in step."""
    config = dict(SMALL["plain"], num_classes=10, layer_scale_init_value=0.5)
    reference, ours = check_seeded_init(lambda: timm_fasternet.FasterNet(**config),
                                        lambda: fasternet.FasterNet(**config), 3, conv_and_linear_weights)
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
    """float64, train mode, with a layer scale: outputs, input gradient, every parameter's gradient and the updated
    BatchNorm running statistics equal timm's."""
    reference, ours = small_pair(seed=4, num_classes=7, layer_scale_init_value=0.5)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *TRAIN_SIZE, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's rates rising over the blocks, no module where the rate is 0) and the head's
    functional dropout draw timm's masks after the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=6, depths=(1, 2, 1, 1), drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.125, 0.25, 0.375, 0.5])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *TRAIN_SIZE, seed=7))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model: pre-logits features (after the head's convolution), ``num_classes=0``,
    reset_classifier to new pooling and classes and to the unpooled map (the head's convolution on every position),
    as timm's; pooling that widens the features, unknown pooling and unknown partial convolutions are refused."""
    reference, ours = small_pair(seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)
    headless = fasternet.FasterNet(**SMALL["plain"], in_chans=1, num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(5, "avgmax")
    ours.reset_classifier(5, "avgmax")
    ours.classifier.load_state_dict(numpy_state(reference.classifier))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and not ours.classifier.training
    assert_close(out, ref, TOL)
    assert ours.num_classes == 5 and ours.head_hidden_size == reference.head_hidden_size == 32
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    out, ref = both_outputs(reference, ours, image_batch(2, *TRAIN_SIZE, seed=11, c=1))
    assert out.shape == (2, 32, 2, 2)
    assert_close(out, ref, TOL)
    with pytest.raises(AssertionError):
        reference.reset_classifier(7, "catavgmax")
    with pytest.raises(ValueError, match="catavgmax"):
        ours.reset_classifier(7, "catavgmax")
    with pytest.raises(ValueError, match="global_pool"):
        fasternet.FasterNet(**SMALL["plain"], global_pool="median")
    with pytest.raises(ValueError, match="pconv_fw_type"):
        fasternet.FasterNet(**SMALL["plain"], pconv_fw_type="gather")


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices), feature_info,
    flattened module names (``patch_embed``, ``stages_3``) and state dict, and feature maps; forward_intermediates
    (with and without stopping early); prune_intermediate_layers drops the later stages and the whole head (its
    convolution too) as timm's does."""
    config = dict(embed_dim=8, depths=(1, 1, 1, 1), feature_dim=16)
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 4), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("fasternet_t0", randomize_parameters, 14, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2), dict(indices=[0, 1], stop_early=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 4, 4)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module (all of timm's FasterNets
    have weights)."""
    names = models.list_models(module="fasternet")
    assert names == [n for n in timm.list_models(module="fasternet") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("fasternet*")}
