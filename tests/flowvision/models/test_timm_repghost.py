"""timm parity of RepGhostNet (repghostnet_050/058/080/100/111/130/150/200): every variant's configuration and
full-size layout on the meta device; seeded initialisation; float32 eval outputs of small models with and without
the re-parameterisable BatchNorm branch, float64 train-mode outputs, gradients and BatchNorm statistics, all with
timm's weights loaded; convert_to_deploy / switch_to_deploy / repghost_model_convert (timm's folded state_dict and
outputs); dropout; and the timm API (pre-logits, pooling, reset_classifier, in_chans, bad arguments, features_only,
forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import repghost as timm_repghost

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import repghost
from model_parity import (both_outputs, check_feature_maps, check_intermediates, check_layout, check_structure,
                          check_train_step, image_batch, numpy_state, pre_logits, randomize_norms, skip_random_init,
                          to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["repghostnet_050", "repghostnet_058", "repghostnet_080", "repghostnet_100", "repghostnet_111",
         "repghostnet_130", "repghostnet_150", "repghostnet_200"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNormAct2d", "ReLU", "Hardsigmoid", "Linear", "Flatten", "Identity")

# A small block table: an identity-shortcut block, strided blocks with projections (kernels 3 and 5), squeeze-and-
# excitation; four feature taps (strides 2, 4, 8 and 16), the last stage strided too.
CFGS = [
    [[3, 8, 8, 0, 1]],
    [[3, 12, 12, 0, 2]],
    [[5, 16, 12, 0.25, 1], [3, 20, 16, 0, 2]],
    [[3, 24, 16, 0.25, 1], [5, 32, 20, 0.25, 2]],
]
SIZE = (35, 33)


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small models, timm's seeded weights with random norms loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm_repghost.RepGhostNet(CFGS, **kwargs), seed).eval()
    ours = repghost.RepGhostNet(CFGS, **kwargs)
    check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (the block table, the width) and builds timm's layout:
    state_dict keys, order, shapes, dtypes, module tree, layer printouts, feature_info, num_features,
    head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(repghost, "build_model",
                        lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_repghost, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(repghost, name)()
        getattr(timm_repghost, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "feature_cfg"}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)
        assert ours.stage_ends == reference.stage_ends


@pytest.mark.parametrize("reparam", [True, False])
def test_seeded_init_equals_timm(reparam):
    """The same seed gives timm's initial weights (PyTorch's default inits) bit for bit, with and without the
    BatchNorm branch, and leaves both random streams in step."""
    engine.manual_seed(3)
    ours = repghost.RepGhostNet(CFGS, num_classes=10, reparam=reparam)
    torch.manual_seed(3)
    reference = timm_repghost.RepGhostNet(CFGS, num_classes=10, reparam=reparam)
    check_structure(ours, reference)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert np.array_equal(state[key].numpy(), value), key
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("reparam", [True, False])
def test_eval_outputs_match_timm(reparam):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(seed=1, reparam=reparam)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics (the re-parameterisable branch's too) equal timm's."""
    reference, ours = small_pair(seed=4, num_classes=7, drop_rate=0.0)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_reparameterization_matches_timm():
    """convert_to_deploy folds every BatchNorm branch as timm's does (get_equivalent_kernel_bias as timm's): the
    same module tree and state_dict (keys in order, values), the same outputs, and the training form's outputs in
    eval mode; a second call changes nothing. repghost_model_convert converts a copy and leaves the model alone;
    without the branch there is nothing to fold."""
    reference, ours = small_pair(seed=6)
    x = image_batch(2, *SIZE, seed=7)
    before, _ = both_outputs(reference, ours, x)
    with torch.no_grad():
        expected = reference.blocks[2][1].ghost2.get_equivalent_kernel_bias()
    for value, ref in zip(ours.blocks[2][1].ghost2.get_equivalent_kernel_bias(), expected):
        assert_close(value.detach().numpy(), ref.numpy(), 1e-6)
    converted = repghost.repghost_model_convert(ours)
    assert isinstance(ours.blocks[0][0].ghost1.cheap_operation, engine.nn.Sequential)
    reference.convert_to_deploy()
    ours.convert_to_deploy()
    check_structure(ours, reference)
    check_structure(converted, reference)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert_close(state[key].numpy(), value, 1e-6, what=key)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    assert_close(out, before, TOL)
    assert np.array_equal(both_outputs(reference, converted, x)[0], out)
    ours.convert_to_deploy()
    ours.blocks[0][0].ghost1.reparameterize()
    assert np.array_equal(both_outputs(reference, ours, x)[0], out)
    reference, ours = small_pair(seed=8, reparam=False)
    reference.convert_to_deploy()
    ours.convert_to_deploy()
    check_structure(ours, reference)


def test_dropout_only_in_training():
    """The head's dropout draws timm's masks after the same seed in training and leaves eval outputs alone."""
    reference, ours = small_pair(seed=9, drop_rate=0.5)
    _, plain = small_pair(seed=9, drop_rate=0.0)
    x = image_batch(2, *SIZE, seed=10)
    out, _ = both_outputs(reference, ours, x)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])
    reference.train()
    ours.train()
    torch.manual_seed(11)
    engine.manual_seed(11)
    train_out, train_ref = both_outputs(reference, ours, x)
    assert_close(train_out, train_ref, TOL)
    assert not np.allclose(train_out, out, atol=1e-3)


def test_pre_logits_pooling_and_reset_classifier_like_timm():
    """Pre-logits features (after the 1x1 head convolution) and logits, ``num_classes=0``, reset_classifier to a
    new size, to none and to max pooling, as timm's; pooling that widens the features is refused."""
    reference, ours = small_pair(seed=12)
    x = image_batch(2, *SIZE, seed=13)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, ours.head_hidden_size)
    assert_close(pre, pre_ref, TOL)
    headless = repghost.RepGhostNet(CFGS, num_classes=0)
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
    with pytest.raises(AssertionError):
        timm_repghost.RepGhostNet(CFGS, global_pool="catavgmax")
    with pytest.raises(ValueError, match="keeps the width"):
        repghost.RepGhostNet(CFGS, global_pool="catavgmax")
    with pytest.raises(AssertionError):
        timm_repghost.RepGhostNet(CFGS, output_stride=16)
    with pytest.raises(ValueError, match="output_stride"):
        repghost.RepGhostNet(CFGS, output_stride=16)


def test_in_chans_1_and_tiny_inputs():
    """A one-channel model matches timm's; every layer pads, so a 1x1 image runs, as in timm."""
    reference, ours = small_pair(seed=14, in_chans=1)
    for shape in ((2, *SIZE), (1, 1, 1)):
        out, ref = both_outputs(reference, ours, image_batch(*shape, seed=15, c=1))
        assert_close(out, ref, TOL)


@pytest.mark.parametrize("out_indices", [None, (0, 2)])
def test_features_only_matches_timm(out_indices):
    """features_only through the builder (the model's ``feature_wrapper``): timm's taps (the stem convolution and
    the end of each strided stage; all of them by default), its feature_info, its flattened module names
    (``blocks_1``) and state dict, and its maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(16)
    reference = timm_repghost.build_model_with_cfg(timm_repghost.RepGhostNet, "repghostnet_100", False, cfgs=CFGS,
                                                   feature_cfg=dict(flatten_sequential=True), features_only=True,
                                                   out_indices=out_indices or (0, 1, 2, 3))
    randomize_norms(reference, 16).eval()
    ours = build_model(repghost.RepGhostNet, "repghostnet_100", cfgs=CFGS, features_only=True, **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=17), 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates (every tap, picked ones, stopping early, the stem's tap alone) gives timm's maps and
    final map; prune_intermediate_layers drops timm's stages, stem norm and head, with timm's outputs after."""
    reference, ours = small_pair(seed=18)
    x = image_batch(2, *SIZE, seed=19)
    _, maps = check_intermediates(reference, ours, x, TOL)
    assert [m.shape[1] for m in maps] == [16, 12, 16, 20]
    check_intermediates(reference, ours, x, TOL, indices=[1, 2], stop_early=True)
    check_intermediates(reference, ours, x, TOL, indices=[0], stop_early=True, intermediates_only=True)
    check_intermediates(reference, ours, x, TOL, indices=1, stop_early=True)
    assert ours.prune_intermediate_layers([0, 2]) == reference.prune_intermediate_layers([0, 2]) == [0, 2]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.num_features == 16
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    reference, ours = small_pair(seed=20)
    assert ours.prune_intermediate_layers(4) == reference.prune_intermediate_layers(4) == [0, 1, 2, 3]
    check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    ours.prune_intermediate_layers([0])
    reference.prune_intermediate_layers([0])
    check_structure(ours, reference)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 18, 17)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module."""
    names = models.list_models(module="repghost")
    assert names == [n for n in timm.list_models(module="repghost") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("repghostnet*")}
