"""timm parity of TResNet (tresnet_m/l/xl, tresnet_v2_l): every variant's configuration and layout, seeded
initialisation, eval outputs (float32) of small models of both kinds (space-to-depth stem, basic blocks or v2's
bottlenecks in the first stages, anti-aliased strided convolutions, average-pooled projection shortcuts,
squeeze-and-excitation, leaky ReLUs), float64 train-mode outputs, gradients and BatchNorm statistics, all with
timm's weights loaded; stochastic depth and dropout, and the timm API (pre-logits, timm's "fast" and plain poolings,
reset_classifier, in_chans, bad arguments, features_only, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import tresnet as timm_tresnet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import tresnet
from model_parity import (both_outputs, check_drop_rates, check_dropout_only_in_training, check_feature_maps,
                          check_head_api, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          features_only_pair, image_batch, numpy_state, randomize_norms, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["tresnet_l", "tresnet_m", "tresnet_v2_l", "tresnet_xl"]
TOL = 1e-4
PRINTED = ("SpaceToDepth", "Conv2d", "BatchNormAct2d", "LeakyReLU", "ReLU", "Sigmoid", "AvgPool2d", "Linear",
           "Dropout")
# timm's squeeze-and-excitation keeps an Identity slot for a norm that ours leaves out
PLACEHOLDERS = ("se.bn",)

# Small models: v1 with basic blocks (a stage of two, one with a projection shortcut) and 8 base channels; v2 with
# bottlenecks throughout (a stage of two) and 8 base channels (12 rounded down to a multiple of 8).
SMALL = {
    "v1": dict(layers=[1, 2, 1, 1], width_factor=0.125),
    "v2": dict(layers=[1, 1, 2, 1], width_factor=0.1875, v2=True),
}
SIZE = (36, 44)


def small_pair(kind="v1", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights with random norms loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm_tresnet.TResNet(**SMALL[kind], **kwargs), seed).eval()
    ours = tresnet.TResNet(**SMALL[kind], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(tresnet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_tresnet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(tresnet, name)()
        getattr(timm_tresnet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert timm_kwargs["feature_cfg"] == dict(out_indices=(1, 2, 3, 4), flatten_sequential=True), name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # timm's random draws on the meta device cost more than building its models: skipped as ours are
    for init_name in ("kaiming_normal_", "kaiming_uniform_", "uniform_"):
        monkeypatch.setattr(torch.nn.init, init_name, lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_and_eval_outputs_match_timm(kind):
    """The same seed gives timm's initial weights bit for bit (He-normal convolutions with the leaky-ReLU gain,
    N(0, 0.01^2) classifier, zeroed last norm scale of every block) and leaves both random streams in step; with
    random norms loaded, float32 logits of a batch of 2 at a size that is no multiple of 32 are timm's."""
    reference, ours = check_seeded_init(lambda: timm_tresnet.TResNet(**SMALL[kind], num_classes=10),
                                        lambda: tresnet.TResNet(**SMALL[kind], num_classes=10),
                                        3, lambda model: set(), kind)
    assert ours.feature_info == reference.feature_info
    randomize_norms(reference, 1).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's (v2: every block kind but the basic one, which the eval test covers)."""
    reference, ours = small_pair("v2", seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 20, 28, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates, block by block, an identity where the rate is 0) and the head's
    dropout: nothing dropped in eval mode, timm's masks after the same seed in training."""
    reference, ours = small_pair("v1", seed=6, drop_rate=0.5, drop_path_rate=0.5)
    rates = check_drop_rates(reference, ours)
    assert len(rates) == 4 and rates[-1] == pytest.approx(0.5)
    x = image_batch(2, 20, 28, seed=7)
    out = check_dropout_only_in_training(reference, ours, x)
    _, plain = small_pair("v1", seed=6)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])


def test_head_api_poolings_in_chans_and_bad_arguments():
    """Pre-logits features with timm's default "fast" pooling, ``num_classes=0``, reset_classifier to wider and to no
    pooling and to timm's "fastmax", as timm's; a one-channel model is timm's; unknown pooling and an image size
    that space-to-depth cannot fold are refused, as timm refuses them."""
    reference, ours = small_pair("v2", seed=9, in_chans=1)
    x = image_batch(2, 20, 28, seed=10, c=1)
    headless = tresnet.TResNet(**SMALL["v2"], in_chans=1, num_classes=0)
    check_head_api(reference, ours, headless.eval(), x, 256, (2, 256, 1, 1))
    reference.reset_classifier(5, "fastmax")
    ours.reset_classifier(5, "fastmax")
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and ours.head_hidden_size == reference.head_hidden_size == 256
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        tresnet.TResNet(**SMALL["v1"], global_pool="fastmedian")
    with pytest.raises(ValueError, match="divisible by 4"):
        ours(engine.zeros(1, 1, 18, 20))


@pytest.mark.parametrize("out_indices", [None, (2, 4)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints: timm's four stage taps by default (not its stem entry, which names
    no module), its feature_info, its flattened module names (``body_layer2``) and state dict, and its maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    reference, ours = features_only_pair("tresnet_m", randomize_norms, 11, **SMALL["v1"], **kwargs)
    assert type(ours) is FlatFeatureListNet
    assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=12), 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_like_timm():
    """forward_intermediates (the stem convolution and the four stages; all, the last two, stop_early) and
    prune_intermediate_layers (the stages after the last one taken dropped, the head reduced to the identity on the
    last stage kept) as timm's."""
    reference, ours = small_pair("v1", seed=16)
    x = image_batch(2, 20, 28, seed=17)
    final, intermediates = check_intermediates(reference, ours, x, TOL)
    assert len(intermediates) == 5 and np.array_equal(final, intermediates[-1])
    check_intermediates(reference, ours, x, TOL, indices=2)
    check_intermediates(reference, ours, x, TOL, indices=[0, 2], stop_early=True, intermediates_only=True)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([2]) == reference.prune_intermediate_layers([2]) == [2]
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert [n for n, _ in ours.body.named_children()] == [n for n, _ in reference.body.named_children()]
    assert ours.num_features == reference.num_features and ours.head_hidden_size == reference.head_hidden_size
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 3, 4)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant under its timm name and module: all of timm's, each with 1k weights."""
    names = models.list_models(module="tresnet")
    assert names == timm.list_models(module="tresnet") == NAMES
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("tresnet*")}
