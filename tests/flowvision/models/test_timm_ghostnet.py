"""timm parity of GhostNet (ghostnet_100), GhostNetV2 (ghostnetv2_100/130/160) and GhostNetV3 (ghostnetv3_100):
every variant's configuration and layout, seeded initialisation, eval outputs (float32) of small models of each
version, float64 train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded; V3's
re-parameterisation for inference, dropout and the timm API (pre-logits, pooling, reset_classifier, in_chans,
features_only, list_models)."""
import copy

import numpy as np
import pytest
import timm
import torch
from timm.models import ghostnet as timm_ghostnet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import ghostnet
from model_parity import (both_outputs, check_intermediates, check_layout, check_train_step, image_batch,
                          numpy_state, pre_logits, randomize_norms, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["ghostnet_050", "ghostnet_100", "ghostnet_130", "ghostnetv2_100", "ghostnetv2_130", "ghostnetv2_160",
         "ghostnetv3_050", "ghostnetv3_100", "ghostnetv3_130", "ghostnetv3_160"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNormAct2d", "BatchNorm2d", "ReLU", "Sigmoid", "Hardsigmoid", "Linear", "Flatten")
# timm's Identity slots that we leave out: the inference-form layers of V3 (filled by reparameterize), the unused
# DFC branch and scale branch of V3, and the no-op anti-aliasing and stochastic depth of its ConvBnAct
PLACEHOLDERS = ("primary_conv", "cheap_operation", "conv_dw", "bn_dw", "dw_rpr_scale", "short_conv", ".aa",
                ".drop_path")

# A small block table: an identity-shortcut block, strided blocks with projections (kernels 3 and 5), squeeze-and-
# excitation, and from the third block on V2's / V3's DFC attention; three feature taps (strides 2, 4, 8).
CFGS = [
    [[3, 8, 8, 0, 1]],
    [[3, 12, 12, 0, 2]],
    [[5, 16, 12, 0.25, 1], [3, 20, 16, 0, 2]],
    [[3, 24, 16, 0.25, 1]],
]
SIZE = (35, 33)


def check_tree(ours, reference):
    """``check_structure`` but for timm's Identity ``PLACEHOLDERS``, which we leave out."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    assert all(tuple(our_sd[k].shape) == tuple(v.shape) for k, v in ref_sd.items())
    expected = [n for n, m in reference.named_modules()
                if not (n.endswith(PLACEHOLDERS) and isinstance(m, torch.nn.Identity))]
    assert [n for n, _ in ours.named_modules()] == expected


def small_pair(version, seed=0, **kwargs):
    """(timm's, ours) small models of ``version``, timm's seeded weights with random norms loaded in ours, in eval
    mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm_ghostnet.GhostNet(CFGS, version=version, **kwargs), seed).eval()
    ours = ghostnet.GhostNet(CFGS, version=version, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree (but for timm's unused Identity slots), layer printouts, feature_info,
    num_features and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(ghostnet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_ghostnet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(ghostnet, name)()
        getattr(timm_ghostnet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        excluded = ("feature_cfg", "pretrained_filter_fn")
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k not in excluded}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (PyTorch's default inits) bit for bit for every version and
    leaves both random streams in step."""
    for seed, version in enumerate(("v1", "v2", "v3")):
        engine.manual_seed(seed)
        ours = ghostnet.GhostNet(CFGS, num_classes=10, version=version)
        torch.manual_seed(seed)
        reference = timm_ghostnet.GhostNet(CFGS, num_classes=10, version=version)
        state = ours.state_dict()
        assert list(state) == list(reference.state_dict())
        for key, value in numpy_state(reference).items():
            assert np.array_equal(state[key].numpy(), value), key
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
        assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_eval_outputs_match_timm(version):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(version, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_train_mode_gradients_and_statistics_match_timm(version):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's (V2 covers both ghost modules and the V1/V2 bottleneck, V3 its branches)."""
    reference, ours = small_pair(version, seed=4, num_classes=7, drop_rate=0.0)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_v3_reparameterization_matches_timm():
    """convert_to_deploy folds V3's branches as timm's does: the same state_dict (keys in order, values), the same
    outputs, and the outputs of the training form in eval mode."""
    reference, ours = small_pair("v3", seed=6)
    x = image_batch(2, *SIZE, seed=7)
    before, _ = both_outputs(reference, ours, x)
    reference.convert_to_deploy()
    ours.convert_to_deploy()
    check_tree(ours, reference)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert_close(state[key].numpy(), value, 1e-6, what=key)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    assert_close(out, before, TOL)
    ours.convert_to_deploy()
    assert np.array_equal(both_outputs(reference, ours, x)[0], out)


def test_dropout_only_in_training():
    """The head's dropout draws timm's masks after the same seed in training and leaves eval outputs alone."""
    reference, ours = small_pair("v1", seed=8, drop_rate=0.5)
    _, plain = small_pair("v1", seed=8, drop_rate=0.0)
    x = image_batch(2, *SIZE, seed=9)
    out, _ = both_outputs(reference, ours, x)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])
    reference.train()
    ours.train()
    torch.manual_seed(10)
    engine.manual_seed(10)
    train_out, train_ref = both_outputs(reference, ours, x)
    assert_close(train_out, train_ref, TOL)
    assert not np.allclose(train_out, out, atol=1e-3)


def test_pre_logits_pooling_and_reset_classifier_like_timm():
    """Pre-logits features (after the 1x1 head convolution) and logits, ``num_classes=0``, reset_classifier to a
    new size, to none and to max pooling, as timm's; pooling that widens the features is refused."""
    reference, ours = small_pair("v1", seed=11)
    x = image_batch(2, *SIZE, seed=12)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, ours.head_hidden_size)
    assert_close(pre, pre_ref, TOL)
    headless = ghostnet.GhostNet(CFGS, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")})
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    reference.reset_classifier(5, "max")
    ours.reset_classifier(5, "max")
    check_tree(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
    with pytest.raises(ValueError, match="keeps the width"):
        ghostnet.GhostNet(CFGS, global_pool="catavgmax")
    with pytest.raises(ValueError, match="output_stride"):
        ghostnet.GhostNet(CFGS, output_stride=16)


def test_in_chans_1_and_tiny_inputs():
    """A one-channel model matches timm's; V1 pads everywhere, so a 1x1 image runs, while V2's attention halves
    its map and refuses one too small to halve, as timm's."""
    reference, ours = small_pair("v1", seed=13, in_chans=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=14, c=1))
    assert_close(out, ref, TOL)
    out, ref = both_outputs(reference, ours, image_batch(1, 1, 1, seed=15, c=1))
    assert_close(out, ref, TOL)
    reference, ours = small_pair("v2", seed=16)
    x = image_batch(1, 4, 4, seed=17)
    with pytest.raises(RuntimeError):
        both_outputs(reference, reference, x)
    with pytest.raises(RuntimeError):
        ours(engine.from_numpy(x))


@pytest.mark.parametrize("out_indices", [None, (0, 2)])
def test_features_only_matches_timm(out_indices):
    """features_only through the builder (the model's ``feature_wrapper``): timm's taps (the stem convolution and
    the end of each strided stage; all of them by default, as timm's (0, 1, 2, 3, 4) for the full table), its
    feature_info, its flattened module names (``blocks_1``) and state dict, and its maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(18)
    reference = timm_ghostnet.build_model_with_cfg(timm_ghostnet.GhostNet, "ghostnetv2_100", False, cfgs=CFGS,
                                                   version="v2", feature_cfg=dict(flatten_sequential=True),
                                                   features_only=True, out_indices=out_indices or (0, 1, 2))
    randomize_norms(reference, 18).eval()
    ours = build_model(ghostnet.GhostNet, "ghostnetv2_100", cfgs=CFGS, version="v2", features_only=True, **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_tree(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == reference.feature_info.get(key)
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=19))
    assert len(outs) == len(refs) == (3 if out_indices is None else 2)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates over timm's taps (the stem convolution before its norm, the strided stages' ends): all,
    the last n, a list, maps only, stopping early (not at the last tap, after which the final ConvBnAct still runs);
    an unknown output format refused. prune_intermediate_layers returns timm's indices and leaves timm's blocks,
    stem, head, widths and outputs (cut at a stage, at the stem, and kept whole with the head)."""
    reference, ours = small_pair("v1", seed=20)
    x = image_batch(2, *SIZE, seed=20)
    for kwargs in (dict(), dict(indices=2), dict(indices=[0, 1], stop_early=True),
                   dict(indices=[-1], stop_early=True), dict(indices=[0], intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    for indices, kwargs, widths in (([1], {}, (12, 12)), ([0], {}, (16, 16)), (None, dict(prune_head=False),
                                                                               (24, 1280))):
        pruned_reference, pruned = copy.deepcopy(reference), copy.deepcopy(ours)
        taken = pruned.prune_intermediate_layers(indices, **kwargs)
        assert taken == pruned_reference.prune_intermediate_layers(indices, **kwargs)
        check_tree(pruned, pruned_reference)
        assert (pruned.num_features, pruned.head_hidden_size) == widths
        assert (pruned_reference.num_features, pruned_reference.head_hidden_size) == widths
        out, ref = both_outputs(pruned_reference, pruned, x)
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's variants under their timm names and module: those with 1k weights and
    the untrained widths (GhostNet 0.5x, 1.3x, GhostNetV3 0.5x, 1.3x, 1.6x) registered too."""
    names = models.list_models(module="ghostnet")
    assert names == timm.list_models(module="ghostnet")
    assert set(names) == set(NAMES)
