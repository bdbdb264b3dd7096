"""timm parity of CSPNeXt (cspnext_tiny/s/m/l/x): every variant's configuration and layout (one also at output
strides 16 and 8), seeded initialisation, eval outputs (float32) of small models (scaled widths and depths, several
blocks in the residual stages and in the last one, without channel attention, another expansion and activation,
dilated), float64 train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded; stochastic
depth and the head's dropout, and the timm API (pre-logits, pooling, reset_classifier, in_chans, argument checks,
features_only, forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import cspnext as timm_cspnext

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import cspnext
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_head_api, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, features_only_pair, image_batch, numpy_state,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["cspnext_l", "cspnext_m", "cspnext_s", "cspnext_tiny", "cspnext_x"]
TOL = 1e-4
# layers whose printout shows every hyper-parameter (kernel, stride, padding, dilation, groups, in-place...)
PRINTED = ("Conv2d", "BatchNormAct2d", "SiLU", "MaxPool2d", "Hardsigmoid", "Linear", "Dropout", "Identity")
# Small models: widths 8 to 32 (the first through widen_factor), 1 to 2 blocks a stage; the second with depths
# scaled and rounded by deepen_factor (two blocks in the last, identity-free stage), no channel attention, another
# expansion and activation, dilated from the third stage on.
SMALL = {
    "plain": dict(channels=(16, 32, 48, 64), widen_factor=0.5, depths=(1, 2, 1, 1)),
    "scaled_os8": dict(channels=(8, 16, 16, 32), depths=(3, 1, 2, 4), deepen_factor=0.5, expand_ratio=0.75,
                       channel_attention=False, act_layer="relu", output_stride=8),
}
SIZE = (35, 33)


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights and BatchNorm statistics (timm's, loaded in ours
    through numpy), in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_cspnext.CspNext(**config), seed, norms=True).eval()
    ours = cspnext.CspNext(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg
    (one variant also dilated, at output stride 8: the last two stages)."""
    ours_calls = capture_builder(monkeypatch, cspnext, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_cspnext, "build_model_with_cfg")
    for name in NAMES:
        getattr(cspnext, name)()
        getattr(timm_cspnext, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    cases = [(name, {}) for name in NAMES] + [("cspnext_s", dict(output_stride=8))]
    for name, kwargs in cases:
        with torch.device("meta"):
            reference = timm.create_model(name, **kwargs)
        ours = models.create_model(name, **kwargs)
        check_layout(ours, reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (PyTorch's default draws, in timm's module order) bit for bit and
    leaves both random streams in step."""
    config = dict(SMALL["plain"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_cspnext.CspNext(**config), lambda: cspnext.CspNext(**config),
                                        3, lambda model: set())
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", list(SMALL))
def test_train_mode_gradients_and_statistics_match_timm(kind):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's."""
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's rates, rising over the blocks before the last stage; no module where the rate is 0
    or the block has no residual) and the head's dropout draw timm's masks after the same seed in training, and
    leave eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([1 / 6, 1 / 3, 0.5])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model with max pooling: pre-logits features of a headless model, reset_classifier to
    'catavgmax' and to the unpooled map, as timm's; output strides other than 8, 16, 32 and stage settings of
    different lengths are refused."""
    reference, ours = small_pair(seed=9, in_chans=1, global_pool="max")
    headless = cspnext.CspNext(**SMALL["plain"], in_chans=1, num_classes=0, global_pool="max").eval()
    check_head_api(reference, ours, headless, image_batch(2, *SIZE, seed=10, c=1), 32, (2, 32, 2, 2))
    with pytest.raises(ValueError, match="output_stride"):
        cspnext.CspNext(**SMALL["plain"], output_stride=4)
    with pytest.raises(ValueError, match="depths"):
        cspnext.CspNext(channels=(8, 16), depths=(1, 1, 1))


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's five taps (the stem and the stages; or those of out_indices),
    feature_info, module tree and state dict (behind ``model.``), and feature maps; forward_intermediates with
    last-n and listed indices, stopping early; prune_intermediate_layers drops the later stages and the head as
    timm's does, down to the stem alone."""
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 5), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("cspnext_tiny", lambda m, s: randomize_parameters(m, s, norms=True), 14,
                                             **SMALL["plain"], deepen_factor=1.0, **kwargs)
        assert type(ours) is FeatureGetterNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, -2], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([2]) == reference.prune_intermediate_layers([2]) == [2]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 5, 5)
    assert_close(out, ref, TOL)
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    check_structure(ours, reference)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 4, 18, 17) and ours.head_hidden_size == 4
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with weights under its timm name and module."""
    names = models.list_models(module="cspnext")
    assert names == [n for n in timm.list_models(module="cspnext") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("cspnext*")}
