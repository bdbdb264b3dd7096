"""timm parity of MobileNetV5 (mobilenetv5_300m, Gemma 3n's image encoder; the untrained mobilenetv5_base and
the headless encoder mobilenetv5_300m_enc): the entrypoints' configurations and the full-size layouts, seeded
initialisation, eval outputs (float32) of small models with each path of the multi-scale
fusion adapter (bilinear resize; average pooling with the stem among its inputs, TensorFlow padding and
anti-aliasing; no adapter but MobileNetV4's head, with BatchNorm), float64 train-mode outputs and gradients, all
with timm's weights loaded; stochastic depth and the head's dropout, and the timm API (pre-logits, pooling,
reset_classifier, in_chans, features_only, forward_intermediates with extra blocks, prune_intermediate_layers,
list_models); the encoder class on a small model (seeded init, eval and float64 train outputs, intermediates,
pruning, features_only, no head)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import _efficientnet_builder as timm_builder
from timm.models import mobilenetv5 as timm_mnv5

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import mobilenetv5
from flowvision.models.timm_families._efficientnet_blocks import decode_arch_def
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAME = "mobilenetv5_300m"
TOL = 1e-4
PRINTED = ("Conv2d", "Linear", "GELU", "RmsNorm2d", "RmsNormAct2d", "LayerScale2d", "Dropout", "Flatten")
# Every block kind of the 300M model, small: fused bottlenecks (one with squeeze-and-excitation), the ExtraDW and
# ConvNeXt-like universal bottlenecks, FFN ones, multi-query attention with and without downsampled keys/values.
SMALL_ARCH = [
    ["er_r1_k3_s2_e4_c8", "er_r1_k3_s1_e4_c8_se0.25"],
    ["uir_r1_a3_k5_s2_e4_c16", "uir_r1_a5_k0_s1_e4_c16"],
    ["uir_r1_a5_k5_s2_e4_c24", "uir_r1_a0_k0_s1_e1_c24", "mqa_r1_k3_h2_v2_s1_d8_c24", "uir_r1_a0_k0_s1_e2_c24"],
    ["uir_r1_a5_k5_s2_e4_c32", "mqa_r1_k3_h2_s1_d8_c32", "uir_r1_a0_k0_s1_e2_c32"],
]
SMALL = dict(stem_size=8, num_features=24, layer_scale_init_value=1e-5, msfa_output_resolution=2)
# kind: (extra configuration, input size); at 35x33 the adapter fuses 3x3 and 2x2 maps and interpolates to 2x2; at
# 64x32, with the stem among its inputs, it fuses 32x16 and 2x1 maps and average-pools 16x8 windows; 'conv_head' is
# the variant without the adapter
KINDS = {
    "msfa_bilinear": (dict(), (35, 33)),
    "msfa_pool_same_aa": (dict(pad_type="same", aa_layer="avg", msfa_indices=(0, -1)), (64, 32)),
    "conv_head_batchnorm": (dict(use_msfa=False, norm_layer="batchnorm"), (35, 33)),
}
SIZE = (35, 33)


def _configs(**kwargs):
    """timm's and our keyword arguments for a small model (``SMALL`` with 10 classes, then ``kwargs``); a
    ``norm_layer`` of 'batchnorm' becomes each side's BatchNorm2d."""
    config = dict(SMALL, **{"num_classes": 10, **kwargs})
    ref, ours = dict(config), dict(config)
    if config.get("norm_layer") == "batchnorm":
        ref["norm_layer"], ours["norm_layer"] = torch.nn.BatchNorm2d, engine.nn.BatchNorm2d
    return (dict(ref, block_args=timm_builder.decode_arch_def(SMALL_ARCH)),
            dict(ours, block_args=decode_arch_def(SMALL_ARCH)))


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small models with random weights (layer scales and norms included: timm's, loaded in ours
    through numpy), in eval mode."""
    ref_config, ours_config = _configs(**kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_mnv5.MobileNetV5(**ref_config), seed, scales=("gamma",), norms=True)
    ours = mobilenetv5.MobileNetV5(**ours_config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def _partial_summary(layer):
    """A partial (or class) as its function's name and bound keywords, the same on both sides."""
    return getattr(layer, "func", layer).__name__, getattr(layer, "keywords", {})


# timm's builder arguments that ours has no use for: its checkpoint filter, feature and loading options
TIMM_ONLY_KWARGS = {"pretrained_filter_fn", "feature_cfg", "kwargs_filter", "pretrained_strict"}


@pytest.mark.parametrize("name,layout", [(NAME, True), ("mobilenetv5_base", True), ("mobilenetv5_300m_enc", False)])
def test_configuration_and_full_size_layout_match_timm(name, layout, monkeypatch):
    """Each entrypoint hands its class timm's class and configuration (decoded blocks, stem, width rounding, norm,
    activation, layer scale, padding), and the 300M and base models build timm's layout: state_dict keys, order,
    shapes, dtypes, module tree and classes, layer printouts, feature_info, num_features, head_hidden_size and
    default_cfg (init skipped, timm's on the meta device); the encoder, the 300M trunk without a head, compares its
    configuration only."""
    ours_calls = capture_builder(monkeypatch, mobilenetv5, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_mnv5, "build_model_with_cfg")
    getattr(mobilenetv5, name)()
    getattr(timm_mnv5, name)()
    (ours_cls, ours), (timm_cls, ref) = ours_calls[0], timm_calls[0]
    assert ours_cls.__name__ == timm_cls.__name__
    assert set(ours) - {"progress"} == set(ref) - TIMM_ONLY_KWARGS
    ref_blocks = [[{k: v for k, v in b.items() if k not in ("act_layer", "force_in_chs")} for b in stage]
                  for stage in ref["block_args"]]
    assert ours["block_args"] == ref_blocks
    assert not any(b["act_layer"] or b.get("force_in_chs") for stage in ref["block_args"] for b in stage)
    for key in ("stem_size", "fix_stem", "layer_scale_init_value", "pad_type"):
        assert ours.get(key) == ref.get(key), key
    for key in ("round_chs_fn", "act_layer", "norm_layer"):
        assert _partial_summary(ours[key]) == _partial_summary(ref[key]), key
    if not layout:
        return
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for init_name in ("kaiming_uniform_", "uniform_", "normal_", "xavier_uniform_"):
        monkeypatch.setattr(torch.nn.init, init_name, lambda tensor, *args, **kwargs: tensor)
    with torch.device("meta"):
        reference = timm.create_model(name, num_classes=0)
    check_layout(models.create_model(name, num_classes=0), reference, (), PRINTED, types=True)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights bit for bit (TensorFlow-style normals, Xavier attention
    projections, the builder's probe module) and leaves both random streams in step; the module tree and classes
    and feature_info are timm's."""
    ref_config, ours_config = _configs()
    reference, ours = check_seeded_init(lambda: timm_mnv5.MobileNetV5(**ref_config),
                                        lambda: mobilenetv5.MobileNetV5(**ours_config), 3, lambda model: set())
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(KINDS))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size (even for the pooled adapter), timm's weights loaded."""
    config, size = KINDS[kind]
    reference, ours = small_pair(seed=1, **config)
    out, ref = both_outputs(reference, ours, image_batch(2, *size, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's."""
    reference, ours = small_pair(seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's per-block linear rates, no module where the rate is 0, applied where a block has a
    skip) and
    the head's dropout draw timm's masks after the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, drop_path_rate=0.5)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.5 * i / 11 for i in range(1, 11)])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model: pre-logits features, ``num_classes=0`` (the pooled adapter map), reset_classifier to
    new pooling and classes, to twice the width with 'catavgmax' and to the unpooled map, as timm's; with the head
    convolution, a pooling that changes its width is refused."""
    reference, ours = small_pair(seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 24)
    assert_close(pre, pre_ref, TOL)
    _, config = _configs(in_chans=1, num_classes=0, global_pool="max")
    headless = mobilenetv5.MobileNetV5(**config)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(5, "avgmax")
    ours.reset_classifier(5, "avgmax")
    ours.classifier.load_state_dict(numpy_state(reference.classifier))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and not ours.classifier.training
    assert_close(out, ref, TOL)
    reference.reset_classifier(7, "catavgmax")
    ours.reset_classifier(7, "catavgmax")
    assert ours.num_classes == 7 and ours.head_hidden_size == reference.head_hidden_size == 48
    assert ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
    ours.reset_classifier(0, "")
    out = both_outputs(reference, ours, x)[0]
    assert out.shape == (2, 24, 2, 2)
    assert np.array_equal(out, both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))[0])
    _, config = _configs(use_msfa=False)
    with_head = mobilenetv5.MobileNetV5(**config)
    assert with_head.num_features == 32 and with_head.head_hidden_size == 24
    with pytest.raises(ValueError, match="global_pool"):
        with_head.reset_classifier(3, "catavgmax")


def _features_pair(seed, **kwargs):
    """timm's and our small ``features_only`` models (through the registry) with timm's random weights."""
    ref_config, ours_config = _configs(**kwargs)
    torch.manual_seed(seed)
    reference = timm.create_model(NAME, features_only=True, **ref_config)
    randomize_parameters(reference, seed, scales=("gamma",))
    ours = models.create_model(NAME, features_only=True, **ours_config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's getter over the stem and the four stages (or those of
    out_indices), the adapter and head pruned away, its feature_info, state dict and maps; forward_intermediates
    with the adapter's output, stopping early and over every stage (``extra_blocks``); prune_intermediate_layers
    drops the later stages, the adapter and the classifier as timm's does."""
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 5), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = _features_pair(14, **kwargs)
        assert type(ours) is FeatureGetterNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=None), dict(indices=2, stop_early=True, intermediates_only=True),
                   dict(indices=[0, 2], extra_blocks=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    with pytest.raises(ValueError, match="intermediates_only"):
        ours.forward_intermediates(engine.from_numpy(x), stop_early=True)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 8
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 8, 9, 9)
    assert_close(out, ref, TOL)
    reference, ours = small_pair(seed=17)
    assert ours.prune_intermediate_layers(2, extra_blocks=True) == reference.prune_intermediate_layers(
        2, extra_blocks=True) == [3, 4]
    assert ours.num_features == reference.num_features == 32
    assert_close(*both_outputs(reference, ours, x), TOL)


def test_encoder_matches_timm():
    """The headless encoder (mobilenetv5_300m_enc's class), small: seeded init bit for bit and the module tree;
    with timm's random weights, the adapter's float32 map, forward_intermediates, and float64 train-mode outputs
    and gradients; no classifier and forward_head refused; features_only through the registry (timm's getter on
    the taps of out_indices: the later stages and the adapter pruned away)."""
    blocks = dict(ours=decode_arch_def(SMALL_ARCH), timm=timm_builder.decode_arch_def(SMALL_ARCH))
    config = dict(stem_size=8, pad_type="same", layer_scale_init_value=1e-5, msfa_output_resolution=2)
    reference, ours = check_seeded_init(lambda: timm_mnv5.MobileNetV5Encoder(blocks["timm"], **config),
                                        lambda: mobilenetv5.MobileNetV5Encoder(blocks["ours"], **config), 3,
                                        lambda model: set())
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info
    assert ours.num_classes == reference.num_classes == 0
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 2048
    randomize_parameters(reference, 20, scales=("gamma",), norms=True)
    ours.load_state_dict(numpy_state(reference))
    reference.eval(), ours.eval()
    x = image_batch(2, *SIZE, seed=21)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 2048, 2, 2) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    with pytest.raises(NotImplementedError):
        ours.forward_head(engine.from_numpy(out))
    check_intermediates(reference, ours, x, TOL, indices=2, stop_early=True, intermediates_only=True)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=24).astype(np.float64))
    kwargs = dict(stem_size=8, msfa_output_resolution=2, out_indices=(1, 3))
    torch.manual_seed(25)
    reference = timm.create_model("mobilenetv5_300m_enc", features_only=True,
                                  block_args=timm_builder.decode_arch_def(SMALL_ARCH), **kwargs)
    randomize_parameters(reference, 25, scales=("gamma",))
    ours = models.create_model("mobilenetv5_300m_enc", features_only=True, block_args=decode_arch_def(SMALL_ARCH),
                               **kwargs)
    ours.load_state_dict(numpy_state(reference))
    assert type(ours) is FeatureGetterNet and ours.model.msfa is None
    check_structure(ours, reference, types=False)
    check_feature_maps(reference.eval(), ours.eval(), x, 2, TOL)


def test_list_models():
    """The registry lists exactly timm's variants under their timm names and module: mobilenetv5_300m with timm's
    weights, the untrained mobilenetv5_base and the encoder-only mobilenetv5_300m_enc registered too."""
    assert models.list_models(module="mobilenetv5") == timm.list_models(module="mobilenetv5")
    assert set(models.list_models(module="mobilenetv5")) == {NAME, "mobilenetv5_base", "mobilenetv5_300m_enc"}
    assert {n.split(".")[0] for n in timm.list_pretrained("mobilenetv5*")} == {NAME}
