"""timm parity of PP-LCNetV2 (lcnetv2_small/base/large): every variant's configuration and layout (training and
folded form), seeded initialisation, eval outputs (float32) of small models (with and without the head convolution,
another activation), float64 train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded;
the re-parameterisation of the multi-branch depthwise convolutions against timm's, the head's functional dropout,
and the timm API (pre-logits, pooling, reset_classifier, in_chans, bad arguments, features_only,
forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import lcnetv2 as timm_lcnetv2
from timm.models import reparameterize_model as timm_reparameterize_model

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import lcnetv2
from flowvision.models.timm_families.fastvit import reparameterize_model
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_train_step, features_only_pair, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["lcnetv2_small", "lcnetv2_base", "lcnetv2_large"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNormAct2d", "ReLU", "Sigmoid", "Linear", "Flatten")
# timm's Identity slot that we leave out: the squeeze-and-excitation's norm
PLACEHOLDERS = (".se.bn",)
# Small models: widths 8 to 128 (stages 16, 32, 64, 128), a narrow head convolution; two blocks in the last two
# stages, so that a stride-1 block with squeeze-and-excitation and one with the 1x1 branch and the shortcut run.
# The second has no head convolution, SiLU and other widths.
SMALL = {
    "plain": dict(scale=0.125, depths=(1, 1, 2, 2), head_hidden_size=32),
    "headless_silu": dict(scale=0.2, depths=(1, 1, 1, 2), head_hidden_size=None, act_layer=torch.nn.SiLU),
}
SIZE = (35, 33)


def engine_config(config):
    """``config`` with engine's activation in place of torch's."""
    if "act_layer" in config:
        return dict(config, act_layer=getattr(engine.nn, config["act_layer"].__name__))
    return config


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights and BatchNorm statistics (timm's, loaded in ours
    through numpy), in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_lcnetv2.LCNetV2(**config), seed, norms=True).eval()
    ours = lcnetv2.LCNetV2(**engine_config(config))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def check_tree(ours, reference):
    """Same state_dict keys in order with their shapes and dtypes, and the same module names but for timm's
    Identity ``PLACEHOLDERS``."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape), key
        assert str(our_sd[key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key
    expected = [n for n, m in reference.named_modules()
                if not (n.endswith(PLACEHOLDERS) and isinstance(m, torch.nn.Identity))]
    assert [n for n, _ in ours.named_modules()] == expected


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg; the
    folded form (``inference_mode``) too."""
    ours_calls = capture_builder(monkeypatch, lcnetv2, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_lcnetv2, "build_model_with_cfg")
    for name in NAMES:
        getattr(lcnetv2, name)()
        getattr(timm_lcnetv2, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "feature_cfg"} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name, kwargs in [(name, {}) for name in NAMES] + [("lcnetv2_small", {"inference_mode": True})]:
        with torch.device("meta"):
            reference = timm.create_model(name, **kwargs)
        ours = models.create_model(name, **kwargs)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights bit for bit (He-normal convolutions, default linear weights) and
    leaves both random streams in step."""
    config = dict(SMALL["plain"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_lcnetv2.LCNetV2(**config), lambda: lcnetv2.LCNetV2(**config),
                                        3, lambda model: set())
    check_tree(ours, reference)
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


def test_reparameterization_matches_timm():
    """``reparameterize_model`` folds the depthwise branches as timm's does (a copy; then in place): the same
    state_dict (the folded convolutions last in their blocks, values), timm's outputs and those of the training form;
    a model built in ``inference_mode`` loads the folded weights and gives the same outputs; folding twice changes
    nothing."""
    reference, ours = small_pair(seed=6)
    x = image_batch(2, *SIZE, seed=7)
    before, _ = both_outputs(reference, ours, x)
    folded_reference = timm_reparameterize_model(reference)
    folded = reparameterize_model(ours)
    assert ours.stages[2][0].dw_conv_list is not None
    check_tree(folded, folded_reference)
    state = folded.state_dict()
    for key, value in numpy_state(folded_reference).items():
        assert_close(state[key].numpy(), value, 1e-6, what=key)
    out, ref = both_outputs(folded_reference, folded, x)
    assert_close(out, ref, TOL)
    assert_close(out, before, TOL)
    assert reparameterize_model(folded, inplace=True) is folded
    assert np.array_equal(both_outputs(folded_reference, folded, x)[0], out)
    deployed = lcnetv2.LCNetV2(**SMALL["plain"], inference_mode=True)
    deployed.load_state_dict({k: v.numpy() for k, v in state.items()})
    assert_close(both_outputs(folded_reference, deployed.eval(), x)[0], out, 1e-5)


def test_dropout_only_in_training():
    """The head's functional dropout (the family has no stochastic depth and no Dropout module) draws timm's masks
    after the same seed in training and leaves eval outputs alone."""
    reference, ours = small_pair(seed=8, drop_rate=0.5)
    assert check_drop_rates(reference, ours) == []
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=9))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model with max pooling: pre-logits (after the head convolution), ``num_classes=0``,
    reset_classifier to new pooling and classes and to the unpooled map (the head convolution still applied), as
    timm's; without a head convolution the pre-logits are the pooled last stage; pooling that changes the width and
    unknown pooling are refused."""
    reference, ours = small_pair(seed=10, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=11, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)
    headless = lcnetv2.LCNetV2(**SMALL["plain"], in_chans=1, num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(5, "avg")
    ours.reset_classifier(5, "avg")
    assert ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
    ours.classifier.load_state_dict(numpy_state(reference.classifier))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and ours.num_classes == 5 and not ours.classifier.training
    assert_close(out, ref, TOL)
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 32, 2, 2)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="catavgmax"):
        ours.reset_classifier(3, "catavgmax")
    with pytest.raises(ValueError, match="global_pool"):
        lcnetv2.LCNetV2(**SMALL["plain"], global_pool="median")
    reference, ours = small_pair("headless_silu", seed=12)
    assert ours.head_hidden_size == ours.num_features == reference.head_hidden_size == 208
    pre, pre_ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=13), pre_logits)
    assert pre.shape == (2, 208)
    assert_close(pre, pre_ref, TOL)


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices), feature_info,
    flattened module names (``stem_0``, ``stages_3``) and state dict, and feature maps; forward_intermediates
    (stopping early, intermediates only); prune_intermediate_layers drops the later stages and the head (its
    convolution too) as timm's does, or only the head."""
    x = image_batch(2, *SIZE, seed=15)
    randomize = lambda model, seed: randomize_parameters(model, seed, norms=True)  # noqa: E731
    for out_indices, count in ((None, 4), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("lcnetv2_small", randomize, 14, **SMALL["plain"], **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_tree(ours, reference)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2), dict(indices=[0, 1], stop_early=True), dict(indices=[-1], intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_tree(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 32
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 32, 5, 5)
    assert_close(out, ref, TOL)
    reference, ours = small_pair(seed=17)
    assert ours.prune_intermediate_layers(1) == reference.prune_intermediate_layers(1) == [3]
    check_tree(ours, reference)
    assert ours.num_features == ours.head_hidden_size == 128
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 128, 2, 2)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with weights under its timm name and module."""
    names = models.list_models(module="lcnetv2")
    assert names == [n for n in timm.list_models(module="lcnetv2") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("lcnetv2*")}
