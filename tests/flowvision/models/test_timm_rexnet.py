"""timm parity of ReXNet (rexnet_100/130/150/200/300, rexnetr_200/300 and the untrained rexnetr_100/130/150):
every variant's configuration and layout, seeded initialisation, eval outputs (float32) of small models (expansions,
squeeze-and-excitation with BatchNorm, partial shortcuts, rounded widths as in every rexnetr, dilation), float64
train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded; stochastic depth and dropout,
and the timm API (pre-logits, pooling, reset_classifier, in_chans, features_only, list_models)."""
import copy

import numpy as np
import pytest
import timm
import torch
from timm.models import rexnet as timm_rexnet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import rexnet
from model_parity import (both_outputs, check_intermediates, check_layout, check_structure, check_train_step,
                          image_batch, numpy_state, pre_logits, randomize_norms, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["rexnet_100", "rexnet_130", "rexnet_150", "rexnet_200", "rexnet_300", "rexnetr_200", "rexnetr_300",
         "rexnetr_100", "rexnetr_130", "rexnetr_150"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNormAct2d", "BatchNorm2d", "ReLU", "ReLU6", "SiLU", "Sigmoid", "Linear", "Dropout")

# Small models: 9 blocks (stages of 1, 1, 1, 2, 2, 2), narrow widths; the second rounds widths to multiples of 8 and
# dilates the last stages (output stride 16).
SMALL = {
    "plain": dict(width_mult=0.5, depth_mult=0.34, final_chs=40),
    "rounded": dict(width_mult=0.75, depth_mult=0.34, final_chs=48, ch_div=8, output_stride=16),
}
SIZE = (35, 33)


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights with random norms loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm_rexnet.RexNet(**SMALL[kind], **kwargs), seed).eval()
    ours = rexnet.RexNet(**SMALL[kind], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(rexnet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_rexnet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(rexnet, name)()
        getattr(timm_rexnet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "feature_cfg"}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's (TensorFlow-style) initial weights bit for bit and leaves both random streams in
    step."""
    engine.manual_seed(3)
    ours = rexnet.RexNet(**SMALL["rounded"], num_classes=10)
    torch.manual_seed(3)
    reference = timm_rexnet.RexNet(**SMALL["rounded"], num_classes=10)
    check_structure(ours, reference)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert np.array_equal(state[key].numpy(), value), key
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
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
    reference, ours = small_pair("rounded", seed=4, num_classes=7, drop_rate=0.0)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates, no module where the rate is 0) and the head's dropout draw timm's
    masks after the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, drop_path_rate=0.5)
    _, plain = small_pair(seed=6)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    x = image_batch(2, *SIZE, seed=7)
    out, _ = both_outputs(reference, ours, x)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])
    reference.train()
    ours.train()
    outputs = []
    for seed in (8, 8, 9):
        torch.manual_seed(seed)
        engine.manual_seed(seed)
        train_out, train_ref = both_outputs(reference, ours, x)
        assert_close(train_out, train_ref, TOL)
        outputs.append(train_out)
    assert np.array_equal(outputs[0], outputs[1]) and not np.allclose(outputs[0], outputs[2], atol=1e-3)


@pytest.mark.parametrize("global_pool", ["avg", "catavgmax"])
def test_pre_logits_pooling_and_reset_classifier_like_timm(global_pool):
    """Pre-logits features and logits for each pooling, ``num_classes=0``, and reset_classifier to a new size, to
    none and to new pooling, as timm's."""
    reference, ours = small_pair(seed=9, global_pool=global_pool)
    x = image_batch(2, *SIZE, seed=10)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    assert ours.head_hidden_size == reference.head_hidden_size
    headless = rexnet.RexNet(**SMALL["plain"], num_classes=0, global_pool=global_pool)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc.")})
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    reference.reset_classifier(5, "max")
    ours.reset_classifier(5, "max")
    check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
    assert tuple(ours(engine.from_numpy(x)).shape) == (2, ours.num_features)


def test_in_chans_1_tiny_inputs_and_bad_arguments():
    """A one-channel model matches timm's; every layer pads, so a 1x1 image runs (as in timm); output strides
    other than 32, 16 and 8 are refused."""
    reference, ours = small_pair(seed=11, in_chans=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=12, c=1))
    assert_close(out, ref, TOL)
    out, ref = both_outputs(reference, ours, image_batch(1, 1, 1, seed=13, c=1))
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="output_stride"):
        rexnet.RexNet(**SMALL["plain"] | dict(output_stride=4))


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's taps (the stem, the block before each downsampling,
    the last block; all five by default), its feature_info, its flattened module names (``features_3``) and state
    dict, and its feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(14)
    reference = timm_rexnet._create_rexnet("rexnet_100", False, features_only=True, **SMALL["plain"], **kwargs)
    randomize_norms(reference, 14).eval()
    ours = rexnet._create_rexnet("rexnet_100", False, True, features_only=True, **SMALL["plain"], **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == reference.feature_info.get(key)
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=15))
    assert len(outs) == len(refs) == (5 if out_indices is None else 2)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates over timm's taps (the block before each downsampling, the last block): all, the last
    n, a list, maps only, stopping early (not at the last tap, after which the final convolution still runs); an
    unknown output format refused. prune_intermediate_layers returns timm's indices and leaves timm's blocks, head,
    widths and outputs (cut at a tap, and kept whole with the head)."""
    reference, ours = small_pair(seed=21)
    x = image_batch(2, *SIZE, seed=21)
    for kwargs in (dict(), dict(indices=2), dict(indices=[0, 2], stop_early=True),
                   dict(indices=[-1], stop_early=True), dict(indices=[1], intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    for indices, kwargs, widths in (([1, 3], {}, (29, 29)), (None, dict(prune_head=False), (640, 640))):
        pruned_reference, pruned = copy.deepcopy(reference), copy.deepcopy(ours)
        taken = pruned.prune_intermediate_layers(indices, **kwargs)
        assert taken == pruned_reference.prune_intermediate_layers(indices, **kwargs)
        check_structure(pruned, pruned_reference, types=False)
        assert (pruned.num_features, pruned.head_hidden_size) == widths
        assert (pruned_reference.num_features, pruned_reference.head_hidden_size) == widths
        out, ref = both_outputs(pruned_reference, pruned, x)
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's ``rexnet`` models under their timm names and module: those with 1k
    weights and the untrained rexnetr_100/130/150, registered too."""
    names = models.list_models(module="rexnet")
    assert names == timm.list_models(module="rexnet")
    assert set(names) == set(NAMES)
