"""timm parity of PP-HGNet and PP-HGNetV2 (hgnet_tiny/small/base, hgnetv2_b0 to b6): every variant's configuration
and layout, seeded initialisation, eval outputs (float32) of small models of both kinds (V1's stem and ESE
aggregation; V2's stem, light convolutions, squeeze-excitation aggregation and learnable affine maps; residual
blocks; the head's hidden convolution with and without its affine map, and no hidden convolution), float64
train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded; stochastic depth and dropout,
and the timm API (pre-logits, pooling, reset_classifier with reset_other, in_chans, bad arguments, features_only,
forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import hgnet as timm_hgnet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import hgnet
from model_parity import (both_outputs, check_drop_rates, check_dropout_only_in_training, check_feature_maps,
                          check_intermediates, check_layout, check_seeded_init, check_structure, check_train_step,
                          image_batch, numpy_state, pre_logits, randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["hgnet_tiny", "hgnet_small", "hgnet_base", "hgnetv2_b0", "hgnetv2_b1", "hgnetv2_b2", "hgnetv2_b3",
         "hgnetv2_b4", "hgnetv2_b5", "hgnetv2_b6"]
TOL = 1e-4
PRINTED = ("ConvBNAct", "LightConvBNAct", "EseModule", "LearnableAffineBlock", "Conv2d", "BatchNorm2d", "ReLU",
           "Sigmoid", "MaxPool2d", "Flatten", "Dropout", "Linear")

# Small configurations (stage: in_chs, mid_chs, out_chs, blocks, downsample, light_block, kernel_size, layer_num):
# each has a stage of two blocks (a residual one) and a first stage without downsampling.
SMALL_CFGS = {
    "v1": {
        "stem_type": "v1",
        "stem_chs": [8, 8, 16],
        "stage1": [16, 8, 16, 1, False, False, 3, 2],
        "stage2": [16, 8, 24, 2, True, False, 3, 2],
        "stage3": [24, 8, 24, 1, True, False, 3, 1],
        "stage4": [24, 16, 32, 1, True, False, 3, 1],
    },
    "v2": {
        "stem_type": "v2",
        "stem_chs": [8, 16],
        "stage1": [16, 8, 16, 1, False, False, 3, 2],
        "stage2": [16, 8, 24, 1, True, False, 3, 2],
        "stage3": [24, 8, 32, 2, True, True, 5, 2],
        "stage4": [32, 16, 32, 1, True, True, 5, 1],
    },
}
# name: (configuration, model arguments); "v2_plain" is V2 without affine maps and without the hidden convolution
SMALL = {
    "v1": ("v1", dict(head_hidden_size=48)),
    "v2": ("v2", dict(head_hidden_size=48, use_lab=True)),
    "v2_plain": ("v2", dict(head_hidden_size=None)),
}
SIZE = (35, 33)


def randomize(model, seed):
    """Random parameters (the affine maps' unit scales and zero biases would hide bugs) and BatchNorm statistics."""
    return randomize_parameters(model, seed, scales=("scale",), norms=True)


def small_pair(kind="v1", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's randomised weights loaded in ours, in eval mode."""
    cfg_name, model_kwargs = SMALL[kind]
    kwargs = model_kwargs | kwargs
    torch.manual_seed(seed)
    reference = randomize(timm_hgnet.HighPerfGpuNet(SMALL_CFGS[cfg_name], **kwargs), seed).eval()
    ours = hgnet.HighPerfGpuNet(SMALL_CFGS[cfg_name], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (and ``use_lab`` for B0 to B3) and builds timm's layout:
    state_dict keys, order, shapes, dtypes, module tree, layer printouts, feature_info, num_features,
    head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(hgnet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_hgnet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(hgnet, name)()
        getattr(timm_hgnet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "model_cfg")}
        assert ours_kwargs == expected | {"cfg": timm_kwargs["model_cfg"]}, name
        assert timm_kwargs["feature_cfg"] == dict(flatten_sequential=True, out_indices=(0, 1, 2, 3)), name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # timm's random draws on the meta device cost more than building its models: skipped as ours are
    for init_name in ("kaiming_normal_", "kaiming_uniform_", "uniform_"):
        monkeypatch.setattr(torch.nn.init, init_name, lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", ["v1", "v2"])
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights bit for bit (He-normal convolutions, PyTorch's default ESE bias
    and classifier weight, unit affine maps) and leaves both random streams in step."""
    cfg_name, kwargs = SMALL[kind]
    cfg = SMALL_CFGS[cfg_name]
    reference, ours = check_seeded_init(lambda: timm_hgnet.HighPerfGpuNet(cfg, num_classes=10, **kwargs),
                                        lambda: hgnet.HighPerfGpuNet(cfg, num_classes=10, **kwargs),
                                        3, lambda model: set(), kind)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", ["v1", "v2"])
def test_train_mode_gradients_and_statistics_match_timm(kind):
    """float64, train mode: outputs, input gradient, every parameter's gradient (the affine maps' included) and
    the updated BatchNorm running statistics equal timm's."""
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 21, 19, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates, block by block, a module wherever the rate is not 0) and the head's
    dropout: nothing dropped in eval mode, timm's masks after the same seed in training."""
    reference, ours = small_pair("v2", seed=6, drop_rate=0.5, drop_path_rate=0.5)
    rates = check_drop_rates(reference, ours)
    assert len(rates) == 4 and rates[-1] == pytest.approx(0.5)
    _, plain = small_pair("v2", seed=6)
    x = image_batch(2, *SIZE, seed=7)
    out = check_dropout_only_in_training(reference, ours, x)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])


@pytest.mark.parametrize("kind", ["v1", "v2_plain"])
def test_head_api_like_timm(kind):
    """Pre-logits features (after the hidden convolution, or the pooled map without it), ``num_classes=0``,
    reset_classifier to new pooling, to no pooling (the hidden convolution then runs on every position, as in
    timm) and with ``reset_other`` (the hidden convolution dropped), widths as timm's."""
    reference, ours = small_pair(kind, seed=9)
    x = image_batch(2, *SIZE, seed=10)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, ours.head_hidden_size) and ours.head_hidden_size == reference.head_hidden_size
    assert_close(pre, pre_ref, TOL)
    cfg_name, kwargs = SMALL[kind]
    headless = hgnet.HighPerfGpuNet(SMALL_CFGS[cfg_name], num_classes=0, **kwargs)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    for num_classes, global_pool, reset_other in ((5, "max", False), (0, "", False), (3, "avg", True)):
        reference.reset_classifier(num_classes, global_pool, reset_other=reset_other)
        ours.reset_classifier(num_classes, global_pool, reset_other=reset_other)
        check_structure(ours, reference)
        assert ours.num_classes == num_classes and ours.head_hidden_size == reference.head_hidden_size
        assert not ours.get_classifier().training
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ref.shape
        assert_close(out, ref, TOL)


def test_in_chans_1_tiny_inputs_and_bad_arguments():
    """A one-channel model matches timm's, also on a 1x1 image (every layer pads, V2's stem pads its branches);
    pooling that widens the features, a classifier without pooling and an unknown stem are refused, as timm
    refuses them."""
    reference, ours = small_pair("v2", seed=11, in_chans=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=12, c=1))
    assert_close(out, ref, TOL)
    out, ref = both_outputs(reference, ours, image_batch(1, 1, 1, seed=13, c=1))
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="width"):
        hgnet.HighPerfGpuNet(SMALL_CFGS["v1"], global_pool="catavgmax")
    with pytest.raises(ValueError, match="pooling"):
        hgnet.HighPerfGpuNet(SMALL_CFGS["v1"], global_pool="")
    with pytest.raises(ValueError, match="pooling"):
        ours.reset_classifier(4, "")
    with pytest.raises(ValueError, match="stem_type"):
        hgnet.HighPerfGpuNet(SMALL_CFGS["v1"] | {"stem_type": "v3"})


@pytest.mark.parametrize("out_indices", [None, (1, -1)])
def test_features_only_matches_timm(monkeypatch, out_indices):
    """features_only through the entrypoints (their configuration made small): timm's four stage taps by default,
    its feature_info, its flattened module names (``stages_1``) and state dict, and its feature maps."""
    monkeypatch.setitem(timm_hgnet.model_cfgs, "hgnetv2_b0", SMALL_CFGS["v2"])
    monkeypatch.setitem(hgnet.model_cfgs, "hgnetv2_b0", SMALL_CFGS["v2"])
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(14)
    reference = randomize(timm.create_model("hgnetv2_b0", features_only=True, **kwargs), 14).eval()
    ours = models.create_model("hgnetv2_b0", features_only=True, **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=15), 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_like_timm():
    """forward_intermediates (all stages, the last two, stop_early) and prune_intermediate_layers (the stages after
    the last one taken dropped, the head reduced to average pooling over the last stage kept) as timm's."""
    reference, ours = small_pair("v1", seed=16)
    x = image_batch(2, *SIZE, seed=17)
    final, intermediates = check_intermediates(reference, ours, x, TOL)
    assert len(intermediates) == 4 and np.array_equal(final, intermediates[-1])
    check_intermediates(reference, ours, x, TOL, indices=2)
    check_intermediates(reference, ours, x, TOL, indices=[0, 2], stop_early=True, intermediates_only=True)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == reference.num_features and ours.head_hidden_size == reference.head_hidden_size
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant under its timm name and module: all of timm's, each with 1k weights."""
    names = models.list_models(module="hgnet")
    assert names == timm.list_models(module="hgnet") == sorted(NAMES)
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("hgnet*")}
