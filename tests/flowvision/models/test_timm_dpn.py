"""timm parity of the Dual Path Networks (dpn68, dpn68b, dpn92, dpn98, dpn107, dpn131, and the untrained dpn48b):
every variant's configuration and layout, seeded initialisation, eval outputs (float32) of small models of both block
kinds and with SiLU (in the stem and the final norm only, as timm's), and float64 train-mode outputs, gradients and
BatchNorm statistics, all with timm's weights loaded; dropout and the timm API (pre-logits, pooling,
reset_classifier, in_chans, features_only, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import dpn as timm_dpn

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import dpn
from model_parity import (both_outputs, check_intermediates, check_layout, check_structure, check_train_step,
                          image_batch, numpy_state, pre_logits, randomize_norms, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

# the variants with weights, then timm's untrained dpn48b (SiLU activations), registered too
NAMES = ["dpn68", "dpn68b", "dpn92", "dpn98", "dpn107", "dpn131", "dpn48b"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNormAct2d", "MaxPool2d", "ReLU", "SiLU", "Flatten")

# Small models: the full stem (7x7) and widths with the joint expansion, and the small stem (3x3) and widths with
# the split ('b') expansion; stages of one and two blocks, so that every stage has a projection and some plain blocks.
SMALL = {
    "joint": dict(small=False, num_init_features=8, k_r=8, groups=2, k_sec=(1, 2, 1, 1), inc_sec=(4, 8, 4, 4)),
    "split": dict(small=True, num_init_features=8, k_r=16, groups=4, k_sec=(2, 1, 2, 1), inc_sec=(4, 4, 8, 4),
                  b=True),
    "split_silu": dict(small=True, num_init_features=8, k_r=16, groups=4, k_sec=(1, 1, 2, 1), inc_sec=(4, 4, 8, 4),
                       b=True, act_layer="silu"),
}
SIZE = (35, 33)  # stem 18x17, stages 9x9, 5x5, 3x3, 2x2


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights with random norms loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm_dpn.DPN(**SMALL[kind], **kwargs), seed).eval()
    ours = dpn.DPN(**SMALL[kind], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree and classes, layer printouts (BatchNorm eps 1e-3, the final norm's ReLU),
    feature_info."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(dpn, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_dpn, "build_model_with_cfg", lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(dpn, name)()
        getattr(timm_dpn, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "feature_cfg"}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        ours = models.create_model(name, num_classes=1000)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights (PyTorch's default inits) bit for bit and leaves both random
    streams in step."""
    engine.manual_seed(3)
    ours = dpn.DPN(**SMALL[kind], num_classes=10)
    torch.manual_seed(3)
    reference = timm_dpn.DPN(**SMALL[kind], num_classes=10)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert np.array_equal(state[key].numpy(), value), key
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    assert ours.feature_info == reference.feature_info and ours.num_features == reference.num_features


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", ["split", "split_silu"])
def test_train_mode_gradients_and_statistics_match_timm(kind):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's (ReLU, and SiLU named as dpn48b names it: the stem's and the final norm's activation)."""
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_dropout_only_in_training():
    """The head's dropout draws timm's masks after the same seed in training and leaves eval outputs alone."""
    reference, ours = small_pair("split", seed=6, drop_rate=0.5)
    _, plain = small_pair("split", seed=6)
    x = image_batch(2, *SIZE, seed=7)
    out, _ = both_outputs(reference, ours, x)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])
    reference.train()
    ours.train()
    torch.manual_seed(8)
    engine.manual_seed(8)
    train_out, train_ref = both_outputs(reference, ours, x)
    assert_close(train_out, train_ref, TOL)
    assert not np.allclose(train_out, out, atol=1e-3)


@pytest.mark.parametrize("global_pool", ["avg", "catavgmax", ""])
def test_pre_logits_pooling_and_reset_classifier_like_timm(global_pool):
    """Pre-logits features and logits for each pooling ('' keeps the map, and the 1x1 classifier gives a class
    map), ``num_classes=0``, and reset_classifier to a new size, to none and to new pooling, as timm's."""
    reference, ours = small_pair("split", seed=9, global_pool=global_pool)
    x = image_batch(2, *SIZE, seed=10)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    assert ours.head_hidden_size == reference.head_hidden_size
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == ref.shape
    assert_close(out, ref, TOL)
    headless = dpn.DPN(**SMALL["split"], num_classes=0, global_pool=global_pool)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")})
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


def test_in_chans_1_and_checkpoint_adaptation(tmp_path):
    """A one-channel model matches timm's; a 3-channel checkpoint loaded through ``checkpoint_path`` has its first
    conv (``default_cfg['first_conv']``) summed over RGB."""
    reference, ours = small_pair("split", seed=11, in_chans=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=12, c=1))
    assert_close(out, ref, TOL)
    rgb, _ = small_pair("split", seed=13)
    path = str(tmp_path / "rgb.npz")
    np.savez(path, **numpy_state(rgb))
    model = build_model(dpn.DPN, "test", in_chans=1, checkpoint_path=path, **SMALL["split"])
    key = f"{dpn.DPN.default_cfg['first_conv']}.weight"
    assert_close(to_numpy(model.state_dict()[key]), numpy_state(rgb)[key].sum(axis=1, keepdims=True), 1e-6)


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's taps (the stem's conv block and each stage's last
    block, all five by default), its feature_info and its feature maps, timm's features_only model's weights loaded
    (timm flattens ``features.`` into ``features_`` there; our keys stay the model's)."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(14)
    reference = timm_dpn._create_dpn("dpn68b", features_only=True, **SMALL["split"], **kwargs)
    randomize_norms(reference, 14).eval()
    ours = dpn._create_dpn("dpn68b", False, True, dict(features_only=True, **kwargs), **SMALL["split"])
    assert type(ours) is FlatFeatureListNet
    ours.load_state_dict(numpy_state(reference))
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == reference.feature_info.get(key)
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=15))
    assert len(outs) == len(refs) == (5 if out_indices is None else 2)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates gives timm's taps (the stem's conv block, each stage's last block) for all, the last n
    and listed indices, alone and stopping early, the last stage's through the final norm with ``norm`` (and the
    output normed after stopping early there); prune_intermediate_layers keeps every block and the head
    (``prune_head=False``) but drops the final norm (``prune_norm``), then cuts the blocks after the second stage,
    its width then the features' and the head gone, as timm's; a channels-last output format is refused."""
    reference, ours = small_pair("split", seed=18)
    x = image_batch(2, *SIZE, seed=18)
    for kwargs in (dict(), dict(indices=2, norm=True), dict(indices=[0, 2], intermediates_only=True),
                   dict(indices=[-1], stop_early=True, norm=True), dict(indices=[1], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    kept = [1, -1]
    assert ours.prune_intermediate_layers(kept, prune_norm=True, prune_head=False) == (
        reference.prune_intermediate_layers(kept, prune_norm=True, prune_head=False)) == [1, 4]
    check_structure(ours, reference)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 1000)
    assert_close(out, ref, TOL)
    assert ours.prune_intermediate_layers([2]) == reference.prune_intermediate_layers([2]) == [2]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == reference.num_features == 140
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 140, 5, 5)
    assert_close(out, ref, TOL)


def test_tiny_inputs_and_bad_arguments():
    """Every layer pads, so a 1x1 image runs (as in timm); another output stride and unknown blocks are refused."""
    reference, ours = small_pair("joint", seed=16)
    out, ref = both_outputs(reference, ours, image_batch(1, 1, 1, seed=17))
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="output stride"):
        dpn.DPN(**SMALL["split"], output_stride=16)
    with pytest.raises(ValueError, match="block_type"):
        dpn.DualPathBlock(8, 8, 8, 8, 4, 2, block_type="up")


def test_list_models():
    """The registry lists exactly timm's ``dpn`` module, in timm's order: the variants with weights and the untrained
    dpn48b, registered too."""
    assert models.list_models(module="dpn") == timm.list_models(module="dpn")
    assert set(models.list_models("dpn*")) - {n.split(".")[0] for n in timm.list_pretrained("dpn*")} == {"dpn48b"}
