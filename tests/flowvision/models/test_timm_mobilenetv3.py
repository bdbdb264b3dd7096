"""timm's ``mobilenetv3`` module (MobileNetV3, FBNetV3, LCNet, MobileNetV4) against timm itself: every variant's
configuration as its entrypoint hands it over (those without weights too), the layout and seeded initialisation
of whole models and of a small model with every block kind (depthwise-separable, inverted residual, conv, fused,
the four universal inverted bottlenecks, multi-query attention with and without key/value downsampling); float32
eval outputs with both anti-aliasing layers and TensorFlow padding; float64 train-mode outputs, gradients and
BatchNorm statistics; drop path and dropout; the timm API (pre-logits, reset_classifier, in_chans, features_only,
list_models); forward_intermediates and prune_intermediate_layers."""
import copy
import inspect
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import _efficientnet_builder as timm_builder
from timm.models import mobilenetv3 as timm_mnv3

import engine
import flowvision.models as models
from flowvision.models._features import FeatureListNet
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import mobilenetv3
from flowvision.models.timm_families._efficientnet_blocks import SqueezeExcite, decode_arch_def, round_channels
from flowvision.models.timm_families.mobilenetv3 import MobileNetV3
from model_parity import (both_outputs, check_intermediates, check_structure, check_train_step, image_batch,
                          is_timm_family, numpy_state, randomize_norms, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["fbnetv3_b", "fbnetv3_d", "fbnetv3_g", "lcnet_050", "lcnet_075", "lcnet_100", "mobilenetv3_large_100",
         "mobilenetv3_large_150d", "mobilenetv3_rw", "mobilenetv3_small_050", "mobilenetv3_small_075",
         "mobilenetv3_small_100", "mobilenetv4_conv_aa_large", "mobilenetv4_conv_blur_medium", "mobilenetv4_conv_large",
         "mobilenetv4_conv_medium", "mobilenetv4_conv_small", "mobilenetv4_conv_small_050", "mobilenetv4_hybrid_large",
         "mobilenetv4_hybrid_medium", "tf_mobilenetv3_large_075", "tf_mobilenetv3_large_100",
         "tf_mobilenetv3_large_minimal_100", "tf_mobilenetv3_small_075", "tf_mobilenetv3_small_100",
         "tf_mobilenetv3_small_minimal_100"]
# timm's entrypoints without published weights
UNTRAINED = ["lcnet_035", "lcnet_150", "mobilenetv3_large_075", "mobilenetv4_conv_aa_medium",
             "mobilenetv4_conv_small_035", "mobilenetv4_hybrid_large_075", "mobilenetv4_hybrid_medium_075"]
TOL = 1e-4
# every block kind: a strided first block (the stem becomes a feature level), squeeze-and-excitation, a skip conv,
# a fused block, the universal inverted bottleneck's forms (ExtraDW, IR, ConvNeXt-like, FFN, one with a depthwise
# end), multi-query attention with and without downsampled keys and values, a per-block activation ('nre')
SMALL_ARCH = [
    ["ds_r1_k3_s2_e1_c8_se0.25_nre"],
    ["ir_r1_k5_s2_e3_c16_se0.25", "cn_r1_k1_s1_c16_skip", "dsa_r1_k3_s1_c16"],
    ["er_r1_k3_s2_e2_c24", "uir_r1_a3_k5_s1_e2_c24", "uir_r1_a0_k3_s1_e2_c24", "uir_r1_a3_k0_s1_e2_p3_c24"],
    ["uir_r1_a3_k5_s2_e4_c32", "uir_r1_a0_k0_s1_e2_c32", "mqa_r1_k3_h2_s1_v2_d8_c32", "mqa_r1_k3_h2_s1_d8_c32"],
    ["cn_r1_k1_s1_c40"],
]
SIZE = (45, 39)


def _small_models(seed=0, aa_layer=None, tf_port=False, **kwargs):
    """A small MobileNetV4-like model (``SMALL_ARCH``, widths x0.75, hard-swish, MobileNetV3's SE, a BatchNorm
    head, layer scales) from timm's class and ours, each built after seeding its generator with ``seed``."""
    pad = dict(pad_type="same", bn_eps=1e-3) if tf_port else dict(pad_type="", bn_eps=1e-5)
    common = dict(stem_size=8, num_features=48, head_bias=False, head_norm=True, layer_scale_init_value=1e-5,
                  aa_layer=aa_layer, pad_type=pad["pad_type"], **{"num_classes": 10, **kwargs})
    torch.manual_seed(seed)
    reference = timm_mnv3.MobileNetV3(
        timm_builder.decode_arch_def(SMALL_ARCH), act_layer=torch.nn.Hardswish,
        norm_layer=partial(torch.nn.BatchNorm2d, eps=pad["bn_eps"]),
        round_chs_fn=partial(timm_builder.round_channels, multiplier=0.75),
        se_layer=partial(timm_mnv3.SqueezeExcite, gate_layer="hard_sigmoid", force_act_layer=torch.nn.ReLU,
                         rd_round_fn=timm_builder.round_channels), **common)
    engine.manual_seed(seed)
    ours = MobileNetV3(decode_arch_def(SMALL_ARCH), act_layer=engine.nn.Hardswish, bn_eps=pad["bn_eps"],
                       channel_multiplier=0.75, se_layer=mobilenetv3._SE_MNV3, **common)
    return reference, ours


def _small_pair(seed=0, **kwargs):
    """``_small_models`` with timm's norms and layer scales randomised (the defaults would hide bugs); returns
    timm's model in eval mode, ours, and timm's weights as numpy arrays."""
    reference, ours = _small_models(seed, **kwargs)
    randomize_norms(reference, seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            if name.endswith("gamma"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
    return reference.eval(), ours, numpy_state(reference)


def _loaded_pair(seed=0, **kwargs):
    """``_small_pair`` with timm's weights loaded into ours."""
    reference, ours, state = _small_pair(seed, **kwargs)
    ours.load_state_dict(state)
    return reference, ours.eval()


# ---- configuration, layout, initialisation ----------------------------------------------------------------------


def _se_summary(se_layer, act_layer):
    """What a squeeze-and-excitation factory builds, for widths where the rounding rules differ: the reduced
    widths and the activation and gate classes."""
    layers = [se_layer(chs, rd_ratio=ratio, act_layer=act_layer) for chs, ratio in ((72, 0.25), (120, 0.25 / 5))]
    return [(m.conv_reduce.out_channels, type(m.act1).__name__, type(m.gate).__name__) for m in layers]


def test_configuration_matches_timm():
    """Every variant's configuration as its entrypoint hands it to the model class: the decoded blocks stage by
    stage (kinds, channels, strides, kernels, expansion, SE ratio, skip, attention heads and dims, per-block
    activation), width rounding, stem and head, BatchNorm eps, padding, activation, the squeeze-and-excitation layer
    (widths, activation, gate) and where its ratio counts from, anti-aliasing and layer scale; the variants without
    weights too."""
    for name in NAMES + UNTRAINED:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(timm_mnv3, "_create_mnv3", lambda variant, pretrained, **kwargs: kwargs)
            ref = getattr(timm_mnv3, name)()
            patch.setattr(mobilenetv3, "build_model", lambda cls, variant, pretrained, progress, **kwargs: kwargs)
            cfg = models.model_entrypoint(name)()
        ref = {**{k: p.default for k, p in inspect.signature(timm_mnv3.MobileNetV3).parameters.items()}, **ref}
        cfg = {**{k: p.default for k, p in inspect.signature(MobileNetV3).parameters.items()}, **cfg}
        # timm's space-to-depth and forced input widths are unused here
        assert not any(b.get("s2d") or b.get("force_in_chs") for s in ref["block_args"] for b in s)
        ref_blocks = [[{k: v for k, v in b.items() if k not in ("act_layer", "s2d", "force_in_chs")} for b in stage]
                      for stage in ref["block_args"]]
        our_blocks = [[{k: v for k, v in b.items() if k != "act_layer"} for b in stage] for stage in cfg["block_args"]]
        assert our_blocks == ref_blocks, name
        ref_acts = [b["act_layer"].__name__ if b["act_layer"] else None for s in ref["block_args"] for b in s]
        assert [b["act_layer"].__name__ if "act_layer" in b else None for s in cfg["block_args"] for b in s] == ref_acts
        rounding = ref["round_chs_fn"].keywords
        assert cfg["channel_multiplier"] == rounding["multiplier"], name
        assert cfg["round_limit"] == rounding.get("round_limit", 0.9), name
        for key in ("num_features", "stem_size", "fix_stem", "head_bias", "head_norm", "pad_type", "se_from_exp",
                    "layer_scale_init_value", "aa_layer"):
            assert cfg[key] == ref[key], (name, key)
        assert cfg["bn_eps"] == ref["norm_layer"].keywords.get("eps", 1e-5), name
        assert cfg["act_layer"].__name__ == ref["act_layer"].__name__, name
        ref_se = _se_summary(ref["se_layer"] or timm_mnv3.SqueezeExcite, torch.nn.SiLU)
        assert _se_summary(cfg["se_layer"], engine.nn.SiLU) == ref_se, name


@pytest.mark.parametrize("name", ["mobilenetv3_small_050", "mobilenetv4_conv_blur_medium",
                                  "mobilenetv4_hybrid_medium", "lcnet_035", "mobilenetv4_conv_small_035"])
def test_layout_matches_timm(name):
    """state_dict keys in order, shapes, dtypes, module names and classes (hard-swish, hard-sigmoid gates, blur
    pools, attention), BatchNorm eps, num_features, head_hidden_size, feature_info and default_cfg against timm's
    model built on the meta device."""
    with torch.device("meta"):
        reference = timm.create_model(name)
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = models.create_model(name)
    check_structure(ours, reference)
    ref_eps = [m.eps for m in reference.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert [m.eps for m in ours.modules() if isinstance(m, engine.nn.BatchNorm2d)] == ref_eps
    assert ours.feature_info == reference.feature_info
    assert (ours.num_features, ours.head_hidden_size) == (reference.num_features, reference.head_hidden_size)
    assert ours.default_cfg == {k: reference.pretrained_cfg[k] for k in ("first_conv", "classifier")}


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights bit for bit (a whole MobileNetV3-Small, and the small model with
    attention: TensorFlow's init, then the attention's Xavier projections again) and leaves both generators in
    step."""
    engine.manual_seed(5)
    ours = models.create_model("mobilenetv3_small_050")
    torch.manual_seed(5)
    reference = timm.create_model("mobilenetv3_small_050")
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    pairs = [(ours, reference), _small_models(seed=3, aa_layer="blurpc")[::-1]]
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    for ours, reference in pairs:
        check_structure(ours, reference)
        our_sd = ours.state_dict()
        for key, value in reference.state_dict().items():
            assert np.array_equal(our_sd[key].numpy(), value.numpy()), key


def test_list_models():
    """The ``mobilenetv3`` module lists exactly timm's names, the variants without weights registered too, beside
    torchvision's mobilenet_v3_large / _small."""
    listed = models.list_models(module="mobilenetv3")
    assert set(listed) == set(timm.list_models(module="mobilenetv3")) | {"mobilenet_v3_large", "mobilenet_v3_small"}
    timm_names = [n for n in listed if is_timm_family(n)]
    assert set(timm_names) == set(NAMES + UNTRAINED) and len(timm_names) == len(NAMES + UNTRAINED)
    assert set(models.list_models("lcnet_*")) == {"lcnet_035", "lcnet_050", "lcnet_075", "lcnet_100", "lcnet_150"}
    assert all(timm.list_pretrained(name + ".*") for name in NAMES)
    assert not any(timm.list_pretrained(name + ".*") for name in UNTRAINED)


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("aa_layer, tf_port", [(None, False), ("blurpc", True), ("avg", False)])
def test_eval_outputs_match_timm(aa_layer, tf_port):
    """float32 logits of the small model on a batch of 2 at an odd size: PyTorch or TensorFlow padding, no
    anti-aliasing, blur pools or average pools in the strided blocks."""
    reference, ours = _loaded_pair(seed=1, aa_layer=aa_layer, tf_port=tf_port)
    check_structure(ours, reference)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=1))
    assert np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """The small model in float64 and train mode: outputs, input and parameter gradients (layer scales and
    attention projections included), BatchNorm running statistics."""
    reference, ours = _loaded_pair(seed=2)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=3).astype(np.float64))


def test_drop_path_and_dropout_like_timm():
    """Stochastic depth (block i of n at rate * i / n) and the head's dropout: in train mode the same seed draws
    timm's masks (the same outputs), another seed others; in eval mode nothing is dropped."""
    reference, ours = _loaded_pair(seed=4, drop_path_rate=0.5, drop_rate=0.5)
    probs = [(n, m.p) for n, m in ours.named_modules() if type(m).__name__ == "StochasticDepth"]
    ref_probs = [(n, m.drop_prob) for n, m in reference.named_modules() if type(m).__name__ == "DropPath"]
    assert probs == pytest.approx(ref_probs) and len(probs) == 12
    x = image_batch(2, *SIZE, seed=4)
    eval_out, ref = both_outputs(reference, ours, x)
    assert_close(eval_out, ref, TOL)
    reference.train()
    ours.train()
    outputs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        engine.manual_seed(seed)
        out, ref = both_outputs(reference, ours, x)
        assert_close(out, ref, TOL)
        outputs.append(out)
    assert not np.allclose(outputs[0], outputs[1])


# ---- the timm API -----------------------------------------------------------------------------------------------


def test_num_classes_0_and_reset_classifier_like_timm():
    """num_classes=0 and reset_classifier(0) give timm's pre-logits features (after the head convolution);
    reset_classifier(n, 'max') matches timm's after the same reset; a pooling that widens the features cannot feed
    the head convolution."""
    reference, ours = _loaded_pair(seed=6)
    x = image_batch(2, *SIZE, seed=6)
    with torch.no_grad():
        pre_logits = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True)
    state = numpy_state(reference)
    headless = MobileNetV3(decode_arch_def(SMALL_ARCH), act_layer=engine.nn.Hardswish, channel_multiplier=0.75,
                           se_layer=mobilenetv3._SE_MNV3, stem_size=8, num_features=48, head_bias=False,
                           head_norm=True, layer_scale_init_value=1e-5, num_classes=0)
    headless.load_state_dict({k: v for k, v in state.items() if not k.startswith("classifier.")})
    with engine.no_grad():
        assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_logits.numpy(), TOL)
    ours.reset_classifier(0)
    assert type(ours.get_classifier()).__name__ == "Identity" and ours.num_classes == 0
    with engine.no_grad():
        assert_close(to_numpy(ours(engine.from_numpy(x))), pre_logits.numpy(), TOL)
    reference.reset_classifier(12, "max")
    ours.reset_classifier(12, "max")
    check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(5, "catavgmax")


def test_in_chans_1_and_tiny_inputs_run():
    """A one-channel model has a one-channel stem and classifies grey images, down to 1x1 pixels (as timm's)."""
    model = MobileNetV3(decode_arch_def(SMALL_ARCH), in_chans=1, num_classes=4, stem_size=8, num_features=48).eval()
    assert tuple(model.conv_stem.weight.shape) == (8, 1, 3, 3)
    with engine.no_grad():
        assert tuple(model(engine.from_numpy(image_batch(2, 19, 17, c=1))).shape) == (2, 4)
        assert tuple(model(engine.from_numpy(image_batch(1, 1, 1, c=1))).shape) == (1, 4)


def test_features_only_matches_timm():
    """features_only (FeatureListNet over conv_stem, bn1 and the stages) returns the maps of timm's
    MobileNetV3Features: the stem (the first block strides) and the stages, for all of them and for a subset."""
    _, _, state = _small_pair(seed=8)
    x = image_batch(2, *SIZE, seed=8)
    for out_indices in (None, (1, 4)):
        torch.manual_seed(0)
        reference = timm_mnv3.MobileNetV3Features(
            timm_builder.decode_arch_def(SMALL_ARCH), out_indices=out_indices or (0, 1, 2, 3, 4), stem_size=8,
            act_layer=torch.nn.Hardswish, round_chs_fn=partial(timm_builder.round_channels, multiplier=0.75),
            se_layer=partial(timm_mnv3.SqueezeExcite, gate_layer="hard_sigmoid", force_act_layer=torch.nn.ReLU,
                             rd_round_fn=timm_builder.round_channels), layer_scale_init_value=1e-5)
        reference.load_state_dict({k: torch.from_numpy(v) for k, v in state.items() if k in reference.state_dict()})
        ours = build_model(
            MobileNetV3, "small", block_args=decode_arch_def(SMALL_ARCH), stem_size=8, num_features=48,
            act_layer=engine.nn.Hardswish, channel_multiplier=0.75, se_layer=mobilenetv3._SE_MNV3,
            head_bias=False, head_norm=True, layer_scale_init_value=1e-5, features_only=True, out_indices=out_indices)
        assert type(ours) is FeatureListNet
        ours.load_state_dict({k: state[k] for k in ours.state_dict()})
        ours.eval()
        reference.eval()
        expected = [{k: f[k] for k in ("module", "num_chs", "reduction", "stage")}
                    for f in reference.feature_info.get_dicts()]
        assert ours.feature_info.get_dicts() == expected
        assert ours.feature_info.reduction() == ([2, 4, 8, 16, 32] if out_indices is None else [4, 32])
        outs, refs = both_outputs(reference, ours, x)
        assert len(outs) == len(refs)
        for out, ref in zip(outs, refs):
            assert_close(out, ref, TOL)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="unknown block type"):
        decode_arch_def([["xx_r1_k3_s1_c16"]])
    with pytest.raises(ValueError, match="aa_layer"):
        MobileNetV3(decode_arch_def(SMALL_ARCH), aa_layer="bogus")
    assert round_channels(72 * 0.25) == 24 and SqueezeExcite(72, 0.25).conv_reduce.out_channels == 18


# For the intermediates: a strided first stage (the stem is a level), a universal inverted bottleneck's stage that
# ends no level (the next one keeps the resolution), separable, inverted residual, fused and conv blocks, 8 to 24
# channels.
TAP_ARCH = [
    ["ds_r1_k3_s2_e1_c8"],
    ["ir_r1_k3_s2_e2_c16"],
    ["uir_r1_a3_k5_s1_e2_c16"],
    ["er_r1_k3_s2_e2_c24", "cn_r1_k1_s1_c24"],
]


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates over timm's levels (the stem, each stage before a stride, the last stage; not the
    stage that ends none) and, with extra_blocks, over the stem and every stage: all, the last n, a list, maps only,
    stopping early (maps only, as timm asks); an unknown output format refused. prune_intermediate_layers returns
    timm's indices and leaves timm's blocks, efficient head, widths and outputs (the head kept, and with
    extra_blocks too)."""
    args = dict(num_features=32, stem_size=8, num_classes=10)
    torch.manual_seed(12)
    reference = randomize_norms(timm_mnv3.MobileNetV3(timm_builder.decode_arch_def(TAP_ARCH), **args), 12).eval()
    ours = MobileNetV3(decode_arch_def(TAP_ARCH), **args)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    x = image_batch(2, 35, 33, seed=12)
    for kwargs in (dict(), dict(indices=2), dict(indices=[0, 2], stop_early=True, intermediates_only=True),
                   dict(indices=3, extra_blocks=True),
                   dict(indices=[0, -2], extra_blocks=True, stop_early=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    with pytest.raises(ValueError, match="intermediates_only"):
        ours.forward_intermediates(engine.from_numpy(x), stop_early=True)
    for indices, kwargs, widths in (([2], {}, (16, 16)), (None, dict(prune_head=False), (24, 32)),
                                    ([3], dict(extra_blocks=True), (16, 16))):
        pruned_reference, pruned = copy.deepcopy(reference), copy.deepcopy(ours)
        taken = pruned.prune_intermediate_layers(indices, **kwargs)
        assert taken == pruned_reference.prune_intermediate_layers(indices, **kwargs)
        check_structure(pruned, pruned_reference, types=False)
        assert (pruned.num_features, pruned.head_hidden_size) == widths
        assert (pruned_reference.num_features, pruned_reference.head_hidden_size) == widths
        out, ref = both_outputs(pruned_reference, pruned, x)
        assert_close(out, ref, TOL)
