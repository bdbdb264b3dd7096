"""timm's ResNetV2 family (pre-activation ResNets and BiT) against timm 1.0: the layout of every registered model,
seeded initial weights, float32 eval outputs and float64 train-mode outputs, gradients and running statistics of
small configurations covering each block (bottleneck, basic), convolution (weight-standardised, plain), norm
(GroupNorm, BatchNorm, EvoNorm-S0, filter response norm with TLU), stem (7x7, BiT's fixed padding, deep, tiered)
and shortcut (strided 1x1, average pooling, "same" pooling in a dilated stage), drop-path and dropout, the head API
(1x1 convolution classifier), ``in_chans``, ``features_only`` and the registry, which lists timm's untrained
variants too (their configuration and layout checked)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.layers as timm_layers
import timm.layers.evo_norm as timm_evo_norm
import timm.layers.filter_response_norm as timm_frn
import timm.models.resnetv2 as timm_resnetv2
import torch
from timm.models._features import FeatureListNet as TimmFeatureListNet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import resnetv2
from flowvision.models.timm_families._layers import BatchNormAct2d
from model_parity import (both_outputs, capture_builder, check_intermediates, check_layout, check_pruned_to_stem_head,
                          check_train_step, image_batch, numpy_state, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); many small ops, so one BLAS thread on each side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["resnetv2_18", "resnetv2_18d", "resnetv2_34", "resnetv2_34d", "resnetv2_50", "resnetv2_50d_evos",
         "resnetv2_50d_gn", "resnetv2_50x1_bit", "resnetv2_50x3_bit", "resnetv2_101", "resnetv2_101x1_bit",
         "resnetv2_101x3_bit", "resnetv2_152x2_bit", "resnetv2_152x4_bit"]
# timm's variants without published weights (all under ~100M parameters): registered too, compared by configuration
# and layout
UNTRAINED = ["resnetv2_50d", "resnetv2_50d_frn", "resnetv2_50t", "resnetv2_101d", "resnetv2_152", "resnetv2_152d"]
# layers whose printout shows every hyper-parameter (kernel, stride, padding, groups, eps, ceil mode...)
PRINTED = {"Conv2d", "StdConv2d", "BatchNormAct2d", "GroupNormAct", "EvoNorm2dS0", "FilterResponseNormTlu2d",
           "AvgPool2d", "MaxPool2d",
           "ConstantPad2d", "ReLU", "Flatten", "Dropout", "AdaptiveAvgPool2d"}

# the same layer kinds on both sides, with 4 norm groups so that narrow layers fit
TIMM_LAYERS = {"std": partial(timm_layers.StdConv2d, eps=1e-8), "conv": timm_layers.create_conv2d,
               "gn": partial(timm_layers.GroupNormAct, num_groups=4), "bn": timm_layers.BatchNormAct2d,
               "evos": partial(timm_layers.EvoNorm2dS0, groups=4), "frn": timm_layers.FilterResponseNormTlu2d}
OUR_LAYERS = {"std": partial(resnetv2.StdConv2d, eps=1e-8), "conv": resnetv2.create_conv2d,
              "gn": partial(resnetv2.GroupNormAct, num_groups=4), "bn": partial(BatchNormAct2d, inplace=True),
              "evos": partial(resnetv2.EvoNorm2dS0, groups=4), "frn": resnetv2.FilterResponseNormTlu2d}
# Small configurations: (convolution, norm, other ResNetV2 arguments)
_TINY = dict(stem_chs=16, num_classes=10)
SMALL = {
    "bit": ("std", "gn", dict(_TINY, layers=(1, 2, 1, 1), channels=(8, 16, 16, 32), width_factor=2,
                              stem_type="fixed")),
    "basic_d_os16": ("conv", "bn", dict(_TINY, layers=(1, 2, 1, 1), channels=(16, 16, 24, 32), basic=True,
                                        bottle_ratio=1.0, stem_type="deep", avg_down=True, output_stride=16)),
    "bn_os8": ("conv", "bn", dict(_TINY, layers=(1, 1, 2, 1), channels=(32, 32, 64, 64))),
    "gn_tiered": ("conv", "gn", dict(_TINY, layers=(1, 1, 1, 1), channels=(32, 32, 64, 64), stem_chs=32,
                                     stem_type="tiered", avg_down=True)),
    "evos": ("conv", "evos", dict(_TINY, layers=(1, 1, 1, 2), channels=(32, 32, 64, 64), stem_type="deep",
                                  avg_down=True)),
    "frn": ("conv", "frn", dict(_TINY, layers=(1, 2, 1, 1), channels=(16, 16, 24, 32), stem_type="deep",
                                avg_down=True)),
}


def _group_std_float64(x, groups=32, eps=1e-5, flatten=False):
    """timm's EvoNorm group standard deviation without its cast to float32 (a float64 run stays float64)."""
    batch, channels, height, width = x.shape
    grouped = x.reshape(batch, groups, channels // groups, height, width)
    std = grouped.var(dim=(2, 3, 4), unbiased=False, keepdim=True).add(eps).sqrt()
    return std.expand(grouped.shape).reshape(batch, channels, height, width)


def _inv_instance_rms_float64(x, eps=1e-5):
    """timm's filter response norm scale (the inverse root mean square over each map) without its cast to float32."""
    return x.square().mean(dim=(2, 3), keepdim=True).add(eps).rsqrt().expand(x.shape)


def randomize(model, seed):
    """timm's ``model`` with random norm scales, shifts, EvoNorm gates, TLU thresholds and BatchNorm statistics (the
    defaults, ones and zeros, would hide a misplaced scale or shift)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and not name.startswith("head"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5 if name.endswith(("weight", ".v"))
                        else torch.randn(p.shape, generator=g) * 0.2)
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


def build_pair(config, seed=0, **overrides):
    """timm's and our small ``config`` models, built from the same seed (not randomised)."""
    conv, norm, kwargs = SMALL[config]
    kwargs = dict(kwargs, **overrides)
    torch.manual_seed(seed)
    reference = timm_resnetv2.ResNetV2(conv_layer=TIMM_LAYERS[conv], norm_layer=TIMM_LAYERS[norm], **kwargs)
    engine.manual_seed(seed)
    ours = resnetv2.ResNetV2(conv_layer=OUR_LAYERS[conv], norm_layer=OUR_LAYERS[norm], **kwargs)
    return reference, ours


def small_pair(config, seed=0, **overrides):
    """timm's small model (randomised, eval mode) and ours with its weights, in eval mode."""
    reference, ours = build_pair(config, seed, **overrides)
    randomize(reference, seed).eval()
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _hyper_parameters(model):
    """The settings a printout leaves out: each weight-standardised convolution's eps, each EvoNorm's groups and
    eps."""
    return [(type(m).__name__, m.eps, getattr(m, "groups", None)) for m in model.modules()
            if type(m).__name__ in ("StdConv2d", "EvoNorm2dS0")]


def test_every_variant_has_timm_layout(monkeypatch):
    """Each registered model has timm's layout: state_dict keys in order, shapes and dtypes, module names and the
    printout of every layer, the eps of the standardised convolutions (1e-8 in BiT) and EvoNorm's settings,
    feature_info, num_features, head_hidden_size and default_cfg. timm's model is built on the meta device (its
    weight initialisation skipped), ours without random init."""
    monkeypatch.setattr(timm_resnetv2, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = getattr(resnetv2, name)()
        check_layout(ours, reference, (), PRINTED)
        assert _hyper_parameters(ours) == _hyper_parameters(reference), name


def _comparable(value):
    """A builder argument in a form both sides compare in: sequences as tuples, our layers as timm's (our in-place
    BatchNormAct2d, a partial, as timm's class, in place by default)."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    in_place_bn = (BatchNormAct2d, (), {"inplace": True})
    if isinstance(value, partial) and (value.func, value.args, value.keywords) == in_place_bn:
        return timm_layers.BatchNormAct2d
    ours_to_timm = {resnetv2.create_conv2d: timm_layers.create_conv2d,
                    resnetv2.FilterResponseNormTlu2d: timm_layers.FilterResponseNormTlu2d}
    return ours_to_timm.get(value, value)


def test_untrained_variants_have_timm_configuration_and_layout(monkeypatch):
    """Each untrained variant's entrypoint hands its builder timm's configuration (our layer classes for timm's) and
    builds timm's layout (1000 classes on both sides), as ``test_every_variant_has_timm_layout`` checks it."""
    ours_calls = capture_builder(monkeypatch, resnetv2, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_resnetv2, "build_model_with_cfg")
    for name in UNTRAINED:
        getattr(resnetv2, name)()
        getattr(timm_resnetv2, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(UNTRAINED, ours_calls, timm_calls):
        assert ours_cls is resnetv2.ResNetV2 and timm_cls is timm_resnetv2.ResNetV2
        assert timm_kwargs.pop("feature_cfg") == dict(flatten_sequential=True), name
        assert {k: _comparable(v) for k, v in ours_kwargs.items()} == \
            {k: _comparable(v) for k, v in timm_kwargs.items()} | {"progress": True}, name
    monkeypatch.undo()
    monkeypatch.setattr(timm_resnetv2, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name in UNTRAINED:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        check_layout(getattr(resnetv2, name)(num_classes=1000), reference, (), PRINTED)


def test_dilated_layout_equals_timm(monkeypatch):
    """``output_stride`` 8: timm's dilations and "same" average pools in the shortcuts of the dilated stages."""
    monkeypatch.setattr(timm_resnetv2, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model("resnetv2_50d_gn", output_stride=8)
    check_layout(resnetv2.resnetv2_50d_gn(output_stride=8), reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """After the same seed, our weights are timm's bit for bit (He-normal convolutions over their fan-out, the 1x1
    classifier N(0, 0.01^2), unit norms) and both random streams end in step; zero_init_last zeroes the blocks'
    last convolutions as timm's does."""
    for config in SMALL:
        reference, ours = build_pair(config, seed=5, zero_init_last=config == "bit")
        expected = numpy_state(reference)
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        assert list(state) == list(expected)
        for key, value in expected.items():
            assert state[key].dtype == value.dtype and np.array_equal(state[key], value), (config, key)
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy()), config


def test_eval_outputs_match_timm():
    """float32 logits of a batch of 2 at an odd size (odd maps in the strided and pooled shortcuts)."""
    x = image_batch(2, 29, 27, seed=1)
    for config in SMALL:
        reference, ours = small_pair(config, seed=1)
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == (2, 10) and np.abs(ref).max() > 1e-3, config
        assert_close(out, ref, 1e-5)


@pytest.mark.parametrize("config", ["bit", "basic_d_os16", "evos", "frn"])
def test_train_gradients_match_timm(config, monkeypatch):
    """float64, train mode: outputs, the input gradient and every parameter's gradient, then BatchNorm's updated
    running statistics. timm's EvoNorm and filter response norm take their statistics in float32 whatever the input;
    for this comparison they keep float64."""
    monkeypatch.setattr(timm_evo_norm, "group_std", _group_std_float64)
    monkeypatch.setattr(timm_frn, "inv_instance_rms", _inv_instance_rms_float64)
    reference, ours = small_pair(config, seed=2)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 21, seed=2).astype(np.float64), rtol=1e-8, floor=1e-6)


def test_drop_path_and_dropout():
    """timm's per-block drop-path rates (0 at the first block, the rate at the last); in train mode both draw timm's
    random stream (the same outputs after the same seed, others after another); in eval mode nothing is dropped."""
    x = image_batch(2, 21, 21, seed=3)
    reference, ours = small_pair("bn_os8", seed=3, drop_path_rate=0.5, drop_rate=0.5)
    blocks = [b for stage in ours.stages for b in stage.blocks]
    expected = [getattr(b.drop_path, "drop_prob", 0.0) for stage in reference.stages for b in stage.blocks]
    assert [getattr(b.drop_path, "p", 0.0) for b in blocks] == pytest.approx(expected)
    assert expected[0] == 0.0 and expected[-1] == 0.5
    _, plain = small_pair("bn_os8", seed=3)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, 1e-5)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])
    reference.train()
    ours.train()
    outputs = []
    for seed in (0, 0, 1):
        torch.manual_seed(seed)
        engine.manual_seed(seed)
        out, ref = both_outputs(reference, ours, x)
        assert_close(out, ref, 1e-4)  # train-mode BatchNorm over 2 x 3 x 3 values amplifies float32 rounding
        outputs.append(out)
    assert np.array_equal(outputs[0], outputs[1]) and not np.allclose(outputs[0], outputs[2])


def test_head_api_matches_timm():
    """``num_classes=0`` gives timm's pooled features (``forward_head(pre_logits=True)``); ``reset_classifier`` to
    another class count and pooling (timm's widths); ``global_pool=''`` classifies every position of the map."""
    x = image_batch(2, 27, 27, seed=4)
    reference, ours = small_pair("bit", seed=4)
    headless = resnetv2.ResNetV2(conv_layer=OUR_LAYERS["std"], norm_layer=OUR_LAYERS["gn"],
                                 **dict(SMALL["bit"][2], num_classes=0)).eval()
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc")})
    with torch.no_grad():
        pooled = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True).numpy()
    with engine.no_grad():
        features = headless(engine.from_numpy(x)).numpy()
    assert features.shape == pooled.shape == (2, 64)
    assert_close(features, pooled, 1e-5)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    for num_classes, pool in ((7, "catavgmax"), (5, "")):
        ours.reset_classifier(num_classes, pool)
        reference.reset_classifier(num_classes, pool)
        assert ours.num_classes == num_classes and ours.head_hidden_size == reference.head_hidden_size
        assert ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
        assert not ours.get_classifier().training
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == ref.shape == (2, 5, 1, 1)
    assert_close(out, ref, 1e-5)


def test_in_chans_one_matches_timm():
    """``in_chans=1``: the stem takes one channel, and with timm's weights the outputs are timm's."""
    reference, ours = small_pair("gn_tiered", seed=6, in_chans=1)
    assert ours.stem.conv1.weight.shape == (12, 1, 3, 3)
    out, ref = both_outputs(reference, ours, image_batch(2, 25, 23, seed=6, c=1))
    assert_close(out, ref, 1e-5)


def test_features_only_matches_timm():
    """``features_only=True`` (through an entrypoint) gives timm's maps: the stem's last convolution (stride 2) and
    the four stages, with timm's channels, reductions, module names and values; ``out_indices`` picks some."""
    x = image_batch(2, 33, 31, seed=7)
    conv, norm, kwargs = SMALL["bit"]
    for out_indices in ((0, 1, 2, 3, 4), (0, 3)):
        reference, _ = small_pair("bit", seed=7)
        reference = TimmFeatureListNet(reference, out_indices, flatten_sequential=True)
        ours = resnetv2.resnetv2_50x1_bit(features_only=True, out_indices=out_indices, norm_layer=OUR_LAYERS[norm],
                                          **kwargs)
        assert isinstance(ours, FlatFeatureListNet)
        ours.load_state_dict(numpy_state(reference))
        ours.eval()
        assert ours.feature_info.channels() == reference.feature_info.channels()
        assert ours.feature_info.reduction() == reference.feature_info.reduction()
        assert ours.feature_info.module_name() == reference.feature_info.module_name()
        outs, refs = both_outputs(reference, ours, x)
        assert len(outs) == len(refs) == len(out_indices)
        for out, ref in zip(outs, refs):
            assert_close(out, ref, 1e-5)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates gives timm's taps (the deep stem's last convolution before its pool, then the stages,
    the last one dilated) for all, the last n and listed indices, alone and stopping early, the last stage's through
    the final norm with ``norm``; prune_intermediate_layers keeps every stage and the head (``prune_head=False``) but
    drops the final norm (``prune_norm``), then cuts the stem's pool and the stages for the stem's tap alone, the
    widths then the stem's and a new classifier sized for them, as timm's; a channels-last output format is
    refused."""
    reference, ours = small_pair("basic_d_os16", seed=8)
    x = image_batch(2, 35, 33, seed=8)
    for kwargs in (dict(), dict(indices=2, norm=True), dict(indices=[0, -1], intermediates_only=True, norm=True),
                   dict(indices=[1], stop_early=True), dict(indices=[-1], stop_early=True, norm=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    kept = [0, -1]
    assert ours.prune_intermediate_layers(kept, prune_norm=True, prune_head=False) == (
        reference.prune_intermediate_layers(kept, prune_norm=True, prune_head=False)) == [0, 4]
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert list(ours.stem.named_children())[-1][0] == "conv3" and len(ours.stages) == 0
    check_pruned_to_stem_head(reference, ours, x, 16, (2, 16, 18, 17))


def test_refuses_bad_configurations():
    """An empty image, an output stride other than 8, 16, 32, an unknown stem and EvoNorm groups that do not divide
    the channels are refused."""
    _, ours = small_pair("evos")
    with pytest.raises((RuntimeError, ValueError)):
        ours(engine.zeros(1, 3, 0, 0))
    conv, norm, kwargs = SMALL["bn_os8"]
    for bad in (dict(output_stride=4), dict(stem_type="same"), dict(layers=(1, 1, 1))):
        with pytest.raises(ValueError):
            resnetv2.ResNetV2(conv_layer=OUR_LAYERS[conv], norm_layer=OUR_LAYERS[norm], **dict(kwargs, **bad))
    with pytest.raises(ValueError):
        resnetv2.EvoNorm2dS0(24, groups=5)(engine.zeros(1, 24, 2, 2))


def test_list_models():
    """The ``resnetv2`` module lists exactly timm's ``resnetv2`` module, in timm's order: its models with ImageNet-1k
    weights and the untrained variants, registered too."""
    pretrained = {n.split(".")[0] for n in timm.list_pretrained("resnetv2*")
                  if timm.models.get_pretrained_cfg(n).num_classes == 1000}
    assert pretrained == set(NAMES)
    assert models.list_models(module="resnetv2") == timm.list_models(module="resnetv2")
    assert set(timm.list_models(module="resnetv2")) == set(NAMES) | set(UNTRAINED)
