"""timm parity of Deep Layer Aggregation (dla34 ... dla169, dla60_res2net, dla60_res2next): every variant's
configuration and layout, seeded initialisation, eval outputs (float32) of small models with each block kind, and
float64 train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded; dropout, the timm API
(pre-logits, pooling, reset_classifier, in_chans, features_only, list_models) and too-small inputs."""
import numpy as np
import pytest
import timm
import torch
from timm.models import dla as timm_dla

import engine
import flowvision.models as models
from flowvision.models._features import FeatureListNet
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import dla
from model_parity import (both_outputs, check_intermediates, check_layout, check_structure, check_train_step,
                          image_batch, numpy_state, pre_logits, randomize_norms, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["dla34", "dla46_c", "dla46x_c", "dla60", "dla60_res2net", "dla60_res2next", "dla60x", "dla60x_c", "dla102",
         "dla102x", "dla102x2", "dla169"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "MaxPool2d", "AvgPool2d", "ReLU", "Flatten", "Dropout")

# Small models with every block kind: projected and plain shortcuts, trees 1 to 3 deep, residual aggregation nodes,
# grouped convolutions, and the Res2Net block's strided and plain forms.
SMALL = {
    "basic": dict(levels=(1, 1, 1, 2, 1, 1), channels=(4, 8, 8, 16, 16, 24), block="DlaBasic"),
    "bottleneck": dict(levels=(1, 2, 1, 3, 1, 1), channels=(4, 8, 16, 16, 32, 32), block="DlaBottleneck",
                       cardinality=2, base_width=32, shortcut_root=True),
    "res2net": dict(levels=(1, 1, 2, 1, 2, 1), channels=(4, 8, 16, 32, 32, 48), block="DlaBottle2neck",
                    cardinality=2, base_width=16),
}
SIZE = (31, 63)  # level by level: 31x63, 16x32, 8x16, 4x8, 2x4, 1x2 (a strided conv and a 2x2 max pool agree)


def small_config(kind, module, **kwargs):
    """The small ``kind`` model's arguments for ``module`` (timm's or ours), the block as its class there."""
    config = dict(SMALL[kind], **kwargs)
    config["block"] = getattr(module, config["block"])
    return config


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights with random norms loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm_dla.DLA(**small_config(kind, timm_dla, **kwargs)), seed).eval()
    ours = dla.DLA(**small_config(kind, dla, **kwargs))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (levels, widths, block, groups, residual roots) and
    builds timm's layout: state_dict keys, order, shapes, dtypes, module tree and classes, layer printouts,
    feature_info."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(dla, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_dla, "build_model_with_cfg", lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(dla, name)()
        getattr(timm_dla, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        timm_kwargs = {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_strict", "feature_cfg")}
        assert ours_kwargs.pop("block").__name__ == timm_kwargs.pop("block").__name__, name
        assert {k: tuple(v) if isinstance(v, list) else v for k, v in ours_kwargs.items()} == \
               {k: tuple(v) if isinstance(v, list) else v for k, v in timm_kwargs.items()}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # values are not looked at: timm's He-normal init would cost seconds on the meta device
    monkeypatch.setattr(torch.Tensor, "normal_", lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights bit for bit (default inits, then He-normal convolutions in
    module order) and leaves both random streams in step."""
    engine.manual_seed(3)
    ours = dla.DLA(**small_config(kind, dla))
    torch.manual_seed(3)
    reference = timm_dla.DLA(**small_config(kind, timm_dla))
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


@pytest.mark.parametrize("kind", ["bottleneck", "res2net"])
def test_train_mode_gradients_and_statistics_match_timm(kind):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's."""
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_dropout_only_in_training():
    """The head's dropout draws timm's masks after the same seed in training and leaves eval outputs alone."""
    reference, ours = small_pair("basic", seed=6, drop_rate=0.5)
    _, plain = small_pair("basic", seed=6)
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
    reference, ours = small_pair("basic", seed=9, global_pool=global_pool)
    x = image_batch(2, *SIZE, seed=10)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    assert ours.head_hidden_size == reference.head_hidden_size
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == ref.shape
    assert_close(out, ref, TOL)
    headless = dla.DLA(**small_config("basic", dla), num_classes=0, global_pool=global_pool)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("fc.")})
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
    assert tuple(ours(engine.from_numpy(x)).shape) == (2, 24)


def test_in_chans_1_and_checkpoint_adaptation(tmp_path):
    """A one-channel model matches timm's; a 3-channel checkpoint loaded through ``checkpoint_path`` has its first
    conv (``default_cfg['first_conv']``) summed over RGB."""
    reference, ours = small_pair("res2net", seed=11, in_chans=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=12, c=1))
    assert_close(out, ref, TOL)
    rgb, _ = small_pair("res2net", seed=13)
    path = str(tmp_path / "rgb.npz")
    np.savez(path, **numpy_state(rgb))
    model = build_model(dla.DLA, "test", in_chans=1, checkpoint_path=path, **small_config("res2net", dla))
    key = f"{dla.DLA.default_cfg['first_conv']}.weight"
    assert_close(to_numpy(model.state_dict()[key]), numpy_state(rgb)[key].sum(axis=1, keepdims=True), 1e-6)


@pytest.mark.parametrize("out_indices", [None, (0, 2, 5)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's levels (1-5 by default, level 0 on request), its
    feature_info and its feature maps, timm's features_only model's weights loaded."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(14)
    reference = timm_dla._create_dla("dla34", features_only=True, **small_config("bottleneck", timm_dla), **kwargs)
    randomize_norms(reference, 14).eval()
    ours = dla._create_dla("dla34", False, True, dict(features_only=True, **kwargs),
                           **small_config("bottleneck", dla))
    assert type(ours) is FeatureListNet
    ours.load_state_dict(numpy_state(reference))
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == reference.feature_info.get(key)
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=15))
    assert len(outs) == len(refs) == (5 if out_indices is None else 3)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates gives timm's taps (level0 to level5, strides 1 to 32) for all, the last n and listed
    indices, alone and stopping early; prune_intermediate_layers keeps every level and the head
    (``prune_head=False``) for the last tap, then replaces the levels after level3 by identities, its width then the
    features' and the head gone, as timm's; a channels-last output format is refused."""
    reference, ours = small_pair("basic", seed=18)
    x = image_batch(2, *SIZE, seed=18)
    for kwargs in (dict(), dict(indices=3), dict(indices=[0, 2, -1], intermediates_only=True),
                   dict(indices=[1], stop_early=True, norm=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    kept = [2, -1]
    assert ours.prune_intermediate_layers(kept, prune_head=False) == reference.prune_intermediate_layers(
        kept, prune_head=False) == [2, 5]
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 1000)
    assert_close(out, ref, TOL)
    assert ours.prune_intermediate_layers([3]) == reference.prune_intermediate_layers([3]) == [3]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == reference.num_features == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 4, 8)
    assert_close(out, ref, TOL)


def test_too_small_inputs_and_bad_arguments_raise():
    """An image too small for the four 2x2 max pools is refused (31x31 leaves level 5 a 1x1 map; 30x30 runs out);
    DLA has no dilated mode, so another output stride is refused."""
    _, ours = small_pair("basic")
    assert tuple(ours(engine.from_numpy(image_batch(1, 31, 31))).shape) == (1, 1000)
    with pytest.raises((RuntimeError, ValueError)):
        ours(engine.from_numpy(image_batch(1, 30, 30)))
    with pytest.raises(ValueError, match="output stride"):
        dla.DLA(**small_config("basic", dla), output_stride=16)


def test_list_models():
    """The registry lists every variant under its timm name and module, as timm does."""
    assert models.list_models(module="dla") == timm.list_models(module="dla")
    assert set(models.list_models("dla*")) == set(timm.list_models("dla*")) == set(NAMES)
    assert all(timm.list_pretrained(name + ".*") for name in NAMES)
