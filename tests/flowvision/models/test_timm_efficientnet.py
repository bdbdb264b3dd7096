"""timm's EfficientNet builder (tf_efficientnet_*, efficientnet_*, efficientnetv2_*, tf_efficientnetv2_*, MixNet,
MobileNetV1 / V2, MnasNet, TinyNet, EdgeTPU, CondConv, EfficientNet-X / -H, pruned EfficientNets, the GroupNorm,
grouped and blur-pool EfficientNets) against timm itself: the configuration of every variant, with or without weights,
and the layout of some, the pruned widths against timm's records, TensorFlow "same" padding, eval numerics of a whole
model, float64 train-mode outputs, gradients and BatchNorm statistics of small models with every block kind
(CondConv, global context, space-to-depth, grouped and forced-width fused blocks, grouped depthwise convolutions with
GroupNorm and blur pools too), pruning, stochastic depth and dropout, seeded initialisation, and the timm API
(pre-logits, reset_classifier, in_chans, features_only, list_models)."""
import copy
import inspect
import pkgutil
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.layers import GroupNormAct as TimmGroupNormAct
from timm.layers import create_conv2d as timm_create_conv2d
from timm.models import _efficientnet_builder as timm_builder
from timm.models import efficientnet as timm_efficientnet
from timm.models._prune import adapt_model_from_string

import engine
import flowvision.models as models
from flowvision.models._features import FeatureListNet
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import efficientnet
from flowvision.models.timm_families._attention import GlobalContext
from flowvision.models.timm_families._conv import create_conv2d
from flowvision.models.timm_families._efficientnet_blocks import SqueezeExcite
from flowvision.models.timm_families.efficientnet import EfficientNet, decode_arch_def
from model_parity import (both_outputs, check_dropout_only_in_training, check_intermediates, check_seeded_init,
                          check_structure, check_train_step, image_batch, is_timm_family, numpy_state, randomize_norms,
                          randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["tf_efficientnet_b0", "tf_efficientnet_b1", "tf_efficientnet_b2", "tf_efficientnet_b3",
         "tf_efficientnet_b4", "tf_efficientnet_b5", "tf_efficientnet_b6", "tf_efficientnet_b7",
         "efficientnetv2_rw_s", "efficientnetv2_rw_t", "tf_efficientnetv2_s", "tf_efficientnetv2_m",
         "tf_efficientnetv2_l", "tf_efficientnetv2_b0", "tf_efficientnetv2_b1", "tf_efficientnetv2_b2",
         "tf_efficientnetv2_b3", "mobilenetv2_100", "mobilenetv2_110d", "mobilenetv2_120d", "mobilenetv2_140",
         "mnasnet_100", "semnasnet_100", "spnasnet_100", "fbnetc_100", "mixnet_s", "mixnet_m", "mixnet_l",
         "mixnet_xl", "tf_mixnet_s", "tf_mixnet_m", "tf_mixnet_l",
         "efficientnet_b1_pruned", "efficientnet_b2_pruned", "efficientnet_b3_pruned", "efficientnet_el",
         "efficientnet_el_pruned", "efficientnet_em", "efficientnet_es", "efficientnet_es_pruned", "efficientnet_h_b5",
         "efficientnet_lite0", "efficientnet_x_b5", "efficientnetv2_rw_m", "gc_efficientnetv2_rw_t", "mnasnet_small",
         "mobilenet_edgetpu_v2_m", "mobilenetv1_100", "mobilenetv1_100h", "mobilenetv1_125", "mobilenetv2_050",
         "semnasnet_075", "tf_efficientnet_b8", "tf_efficientnet_cc_b0_4e", "tf_efficientnet_cc_b0_8e",
         "tf_efficientnet_cc_b1_8e", "tf_efficientnet_el", "tf_efficientnet_em", "tf_efficientnet_es",
         "tf_efficientnet_l2", "tf_efficientnet_lite0", "tf_efficientnet_lite1", "tf_efficientnet_lite2",
         "tf_efficientnet_lite3", "tf_efficientnet_lite4", "tf_efficientnetv2_xl", "tinynet_a", "tinynet_b",
         "tinynet_c", "tinynet_d", "tinynet_e"]
# timm's entrypoints without published weights
UNTRAINED = ["efficientnet_b0_g8_gn", "efficientnet_b0_g16_evos", "efficientnet_b0_gn", "efficientnet_b3_g8_gn",
             "efficientnet_b3_gn", "efficientnet_b8", "efficientnet_blur_b0", "efficientnet_cc_b0_4e",
             "efficientnet_cc_b0_8e", "efficientnet_cc_b1_8e", "efficientnet_l2", "efficientnet_lite1",
             "efficientnet_lite2", "efficientnet_lite3", "efficientnet_lite4", "efficientnet_x_b3", "efficientnetv2_l",
             "efficientnetv2_m", "efficientnetv2_s", "efficientnetv2_xl", "mixnet_xxl", "mnasnet_050", "mnasnet_075",
             "mnasnet_140", "mobilenet_edgetpu_100", "mobilenet_edgetpu_v2_l", "mobilenet_edgetpu_v2_s",
             "mobilenet_edgetpu_v2_xs", "mobilenetv2_035", "mobilenetv2_075", "semnasnet_050", "semnasnet_140"]
# timm's efficientnet_b0 .. b7 are served by torchvision's models of those names (their own layout)
TORCHVISION = [f"efficientnet_b{i}" for i in range(8)] + ["efficientnet_v2_l", "efficientnet_v2_m", "efficientnet_v2_s"]
PRUNED = ["efficientnet_b1_pruned", "efficientnet_b2_pruned", "efficientnet_b3_pruned"]
TOL = 1e-4
# every block kind, with and without squeeze-and-excitation and skip, strides 2 (dynamic "same" padding) and a
# stride turned into dilation by output_stride=8, kernels 3 and 5, an expansion that rounds up (e3 of 12 -> 40)
SMALL_ARCH = [
    ["cn_r1_k3_s1_e1_c16_skip"],
    ["er_r2_k3_s2_e4_c16", "ds_r1_k3_s1_e1_c16_se0.25"],
    ["ir_r2_k5_s2_e3_c24_se0.25"],
    ["ir_r1_k3_s2_e6_c24_se0.25_noskip", "dsa_r1_k5_s1_e1_c32"],
]

# MixNet's convolutions: mixed depthwise kernels (five groups, 3x3 .. 11x11, an uneven split of 72 channels, strided
# with TensorFlow's dynamic padding in each group; then two groups), grouped pointwise convolutions ('a1.1', 'p1.1')
MIX_ARCH = [
    ["ds_r1_k3_s1_e1_c16"],
    ["ir_r1_k3.5.7.9.11_a1.1_p1.1_s2_e4.5_c24_se0.5_nsw", "ir_r1_k3.5_a1.1_p1.1_s1_e3_c24_se0.5_nsw"],
]


def _small_pair(seed=0, tf_port=True, **kwargs):
    """A small EfficientNet (``SMALL_ARCH``, widths x0.75) from timm's class and ours, the same random weights
    (norms randomised), in eval mode."""
    pad = dict(pad_type="same", bn_eps=1e-3) if tf_port else {}
    torch.manual_seed(seed)
    reference = timm_efficientnet.EfficientNet(
        timm_builder.decode_arch_def(SMALL_ARCH), num_features=48, stem_size=16, output_stride=8,
        round_chs_fn=partial(timm_builder.round_channels, multiplier=0.75), act_layer=torch.nn.SiLU,
        norm_layer=partial(torch.nn.BatchNorm2d, eps=pad.get("bn_eps", 1e-5)), pad_type=pad.get("pad_type", ""),
        num_classes=10, **kwargs)
    randomize_norms(reference, seed).eval()
    ours = EfficientNet(decode_arch_def(SMALL_ARCH), num_features=48, stem_size=16, output_stride=8,
                        channel_multiplier=0.75, num_classes=10, **pad, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


# ---- structure and registration ------------------------------------------------------------------------------


# full layout for a model of each kind; the configuration only for the others (timm's Python build of the big ones
# costs seconds even on the meta device)
LAYOUT_NAMES = ["tf_efficientnet_b1", "efficientnetv2_rw_t", "tf_efficientnetv2_b2", "mobilenetv2_120d",
                "semnasnet_100", "tf_mixnet_l", "mobilenet_edgetpu_v2_m", "mobilenetv1_100", "efficientnet_b3_g8_gn",
                "efficientnet_blur_b0"]
BLOCK_KEYS = ("block_type", "out_chs", "stride", "dw_kernel_size", "exp_kernel_size", "pw_kernel_size", "kernel_size",
              "exp_ratio", "se_ratio", "noskip", "skip", "pw_act", "s2d", "num_experts", "force_in_chs", "group_size")


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_layout_matches_timm(name):
    """state_dict keys in order, shapes, dtypes, module names and classes (Conv2dSame where TensorFlow pads
    asymmetrically), BatchNorm eps, num_features and feature_info against timm's model built on the meta device."""
    with torch.device("meta"):
        reference = timm.create_model(name)
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = models.create_model(name)
    check_structure(ours, reference)
    ref_eps = [m.eps for m in reference.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert [m.eps for m in ours.modules() if isinstance(m, engine.nn.BatchNorm2d)] == ref_eps
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == reference.num_features
    assert type(ours).default_cfg["first_conv"] == reference.pretrained_cfg["first_conv"]
    assert type(ours).default_cfg["classifier"] == reference.pretrained_cfg["classifier"]


def test_configuration_matches_timm():
    """Every variant's configuration, as each entrypoint hands it to its model class (the huge ones, l2 and xl, are
    checked this way only): the decoded blocks (kind, channels, stride, kernels (MixNet's lists too), expansion, SE
    ratio, skip, space-to-depth, CondConv experts, forced input width, group size) stage by stage, the width multiplier
    and rounding (divisor too), stem and head widths, stem kernel, the norm (BatchNorm eps, GroupNorm groups),
    padding, activation, attention layer, anti-aliasing and pruning; the variants without weights too."""
    for name in NAMES + UNTRAINED:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(timm_efficientnet, "_create_effnet", lambda variant, pretrained, **kwargs: kwargs)
            ref = getattr(timm_efficientnet, name)()
            patch.setattr(efficientnet, "build_model", lambda cls, variant, pretrained, progress, **kwargs: kwargs)
            cfg = models.model_entrypoint(name)()
        # what an entrypoint leaves out is its class's default
        ref = {**{k: p.default for k, p in inspect.signature(timm_efficientnet.EfficientNet).parameters.items()}, **ref}
        cfg = {**{k: p.default for k, p in inspect.signature(EfficientNet).parameters.items()}, **cfg}
        flat = [b for stage in ref["block_args"] for b in stage]
        # timm's decoder writes space-to-depth and forced widths off (False, 0) where ours leaves them out
        ref_blocks = [[{k: b[k] for k in BLOCK_KEYS if k in b and (b[k] or k not in ("s2d", "force_in_chs"))}
                       for b in stage] for stage in ref["block_args"]]
        our_blocks = [[{k: b[k] for k in BLOCK_KEYS if k in b} for b in stage] for stage in cfg["block_args"]]
        assert our_blocks == ref_blocks, name
        # a block's own activation (MixNet's 'nsw'), else the model's
        ref_acts = [b["act_layer"].__name__ if b["act_layer"] else None for b in flat]
        assert [b["act_layer"].__name__ if "act_layer" in b else None for s in cfg["block_args"] for b in s] == ref_acts
        rounding = ref["round_chs_fn"].keywords
        assert cfg["channel_multiplier"] == rounding["multiplier"], name
        assert cfg["round_limit"] == rounding.get("round_limit", 0.9), name
        assert cfg["channel_divisor"] == rounding.get("divisor", 8), name
        assert cfg["num_features"] == ref["num_features"], name
        assert cfg["stem_size"] == ref["stem_size"] and cfg["fix_stem"] == ref["fix_stem"], name
        assert cfg["stem_kernel_size"] == ref["stem_kernel_size"], name
        assert cfg["bn_eps"] == ref["norm_layer"].keywords.get("eps", 1e-5), name
        if ref["norm_layer"].func is TimmGroupNormAct:
            assert cfg["norm_layer"].keywords == ref["norm_layer"].keywords, name
        else:
            assert cfg["norm_layer"] is None, name
        assert cfg["aa_layer"] == ref["aa_layer"], name
        assert cfg["pad_type"] == ref["pad_type"], name
        assert cfg["act_layer"].__name__ == (ref.get("act_layer") or torch.nn.ReLU).__name__, name
        assert cfg["se_layer"] is {None: SqueezeExcite, "gc": GlobalContext}[ref["se_layer"]], name
        assert (cfg["pruned_widths"] is not None) == ref.get("pruned", False) == (name in PRUNED), name


def test_list_models():
    """The ``efficientnet`` module lists exactly timm's names, the variants without weights registered too (timm's
    efficientnet_b0 .. b7 are torchvision's models of those names, beside torchvision's efficientnet_v2_*); timm's
    test models are tests/flowvision/models/test_timm_test_models.py's."""
    listed = models.list_models(module="efficientnet")
    assert set(listed) == set(timm.list_models(module="efficientnet")) | set(TORCHVISION)
    timm_names = [n for n in models.list_models(module="efficientnet", exclude_filters="test_*") if is_timm_family(n)]
    assert set(timm_names) == set(NAMES + UNTRAINED) and len(timm_names) == len(NAMES + UNTRAINED)
    assert not any(is_timm_family(n) for n in TORCHVISION)
    assert set(models.list_models("tf_efficientnet*")) == {n for n in NAMES if n.startswith("tf_efficientnet")}
    assert all(timm.list_pretrained(name + ".*") for name in NAMES)
    assert not any(timm.list_pretrained(name + ".*") for name in UNTRAINED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights bit for bit (default inits, timm's probe of its SE layer, then
    TensorFlow's init in module order), and leaves both generators in step."""
    engine.manual_seed(5)
    ours = models.create_model("tf_efficientnetv2_b0")
    torch.manual_seed(5)
    reference = timm.create_model("tf_efficientnetv2_b0")
    our_sd = ours.state_dict()
    for key, value in reference.state_dict().items():
        assert np.array_equal(our_sd[key].numpy(), value.numpy()), key
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel_size, stride, dilation", [(3, 2, 1), (5, 2, 1), (2, 1, 1), (3, 1, 2), (4, 1, 1)])
def test_same_padding_matches_timm(kernel_size, stride, dilation):
    """TensorFlow "same" padding of timm's create_conv2d, for odd and even sizes: the same module class (static
    symmetric padding where exact, Conv2dSame otherwise), padding and outputs."""
    torch.manual_seed(0)
    reference = timm_create_conv2d(3, 4, kernel_size, stride=stride, dilation=dilation, padding="same")
    ours = create_conv2d(3, 4, kernel_size, stride, dilation, pad_type="same")
    assert type(ours).__name__ == type(reference).__name__
    assert tuple(ours.padding) == tuple(reference.padding)
    ours.load_state_dict(numpy_state(reference))
    for size in ((9, 8), (8, 9)):
        out, ref = both_outputs(reference, ours, image_batch(1, *size, seed=1))
        assert out.shape == ref.shape
        assert_close(out, ref, 1e-5)


def test_eval_outputs_match_timm():
    """Logits of tf_efficientnet_b0 on a batch of 2 at an odd size, float32, timm's weights (random norms)
    loaded."""
    torch.manual_seed(0)
    reference = randomize_norms(timm.create_model("tf_efficientnet_b0"), 0).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = models.create_model("tf_efficientnet_b0")
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, 35, 33, seed=1))
    assert np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("tf_port", [True, False])
def test_small_model_train_mode_gradients_match_timm(tf_port):
    """A small model with every block kind, TensorFlow or PyTorch padding, in float64 and train mode: outputs,
    input and parameter gradients, BatchNorm running statistics."""
    reference, ours = _small_pair(tf_port=tf_port)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 23, 21, seed=3).astype(np.float64))


def test_drop_path_and_dropout_active_in_training_only():
    """Stochastic depth (timm's rule: block i of n gets rate * i / n) and the head's dropout change train-mode
    outputs from call to call; in eval both are off and the model matches timm's."""
    reference, ours = _small_pair(drop_path_rate=0.5, drop_rate=0.5)
    probs = [(n, m.p) for n, m in ours.named_modules() if type(m).__name__ == "StochasticDepth"]
    ref_probs = [(n, m.drop_prob) for n, m in reference.named_modules() if type(m).__name__ == "DropPath"]
    assert probs == ref_probs
    assert [p for _, p in probs] == [0.5 * i / 8 for i in range(1, 8)]
    x = image_batch(2, 23, 21, seed=4)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    training = copy.deepcopy(ours).train()
    first = to_numpy(training(engine.from_numpy(x)))
    second = to_numpy(training(engine.from_numpy(x)))
    assert not np.allclose(first, second)
    features = engine.from_numpy(image_batch(2, 2, 2, seed=5, c=48))
    assert (to_numpy(training.forward_head(features, pre_logits=True)) == 0).mean() > 0.3
    assert_close(to_numpy(ours.forward_head(features, pre_logits=True)), to_numpy(features).mean((2, 3)), 1e-6)


# ---- the timm API -----------------------------------------------------------------------------------------------


def test_num_classes_0_and_reset_classifier_like_timm():
    """num_classes=0 and reset_classifier(0) give timm's pre-logits features; reset_classifier(n, 'catavgmax') a
    layer over twice the features, whose outputs match timm's after the same reset (its new weights loaded)."""
    reference, ours = _small_pair()
    x = image_batch(2, 23, 21, seed=6)
    with torch.no_grad():
        pre_logits = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True)
    state = {k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")}
    headless = EfficientNet(decode_arch_def(SMALL_ARCH), num_features=48, stem_size=16, output_stride=8,
                            channel_multiplier=0.75, num_classes=0, pad_type="same", bn_eps=1e-3)
    headless.load_state_dict(state)
    with engine.no_grad():
        assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_logits.numpy(), TOL)
    ours.reset_classifier(0)
    assert type(ours.get_classifier()).__name__ == "Identity"
    with engine.no_grad():
        assert_close(to_numpy(ours(engine.from_numpy(x))), pre_logits.numpy(), TOL)
    reference.reset_classifier(12, "catavgmax")
    ours.reset_classifier(12, "catavgmax")
    check_structure(ours, reference, types=False)
    assert ours.num_classes == 12 and ours.get_classifier().in_features == 2 * ours.num_features
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)


def test_in_chans_1_runs():
    """A one-channel model has a one-channel stem (the layout test checks timm's) and classifies grey images."""
    model = EfficientNet(decode_arch_def(SMALL_ARCH), in_chans=1, num_classes=4, num_features=48, stem_size=16,
                         pad_type="same").eval()
    assert tuple(model.conv_stem.weight.shape) == (16, 1, 3, 3)
    with engine.no_grad():
        assert tuple(model(engine.from_numpy(image_batch(2, 19, 17, c=1))).shape) == (2, 4)


def test_features_only_matches_timm_intermediates():
    """features_only (FeatureListNet over conv_stem, bn1 and the stages) returns timm's stages: its feature_info and
    its forward_intermediates, for all stages and for a subset."""
    reference, _ = _small_pair()
    state = numpy_state(reference)
    x = image_batch(2, 23, 21, seed=8)
    for out_indices in (None, (1, 3)):
        ours = build_model(
            EfficientNet, "small", block_args=decode_arch_def(SMALL_ARCH), num_features=48, stem_size=16,
            output_stride=8, channel_multiplier=0.75, num_classes=10, pad_type="same", bn_eps=1e-3,
            features_only=True, out_indices=out_indices)
        assert type(ours) is FeatureListNet
        ours.load_state_dict({k: state[k] for k in ours.state_dict()})
        ours.eval()
        indices = list(range(len(reference.feature_info))) if out_indices is None else list(out_indices)
        assert ours.feature_info.get_dicts() == [reference.feature_info[i] for i in indices]
        with torch.no_grad():
            refs = reference.forward_intermediates(torch.from_numpy(x), indices=indices, intermediates_only=True)
        with engine.no_grad():
            outs = ours(engine.from_numpy(x))
        assert len(outs) == len(refs) == len(indices)
        for out, ref in zip(outs, refs):
            assert_close(to_numpy(out), ref.numpy(), TOL)


def test_decoder_reads_activation_and_skip_options():
    """A block string's activation ('n' + re / r6 / hs / sw) and skip options, as timm's decoder reads them."""
    (args,), = decode_arch_def([["ir_r1_k5_s2_e3_c24_nhs_noskip"]])
    ref_args, = timm_builder.decode_arch_def([["ir_r1_k5_s2_e3_c24_nhs_noskip"]])[0]
    assert args["act_layer"].__name__ == ref_args["act_layer"].__name__ == "Hardswish"
    assert args["noskip"] is ref_args["noskip"] is True
    arch_def = [["cn_r1_k3_s1_c8"], ["er_r3_k3_s2_e4_c8", "ir_r1_k3_s1_e4_c8"], ["ir_r2_k3_s1_e4_c8"]]
    depths = [len(stage) for stage in decode_arch_def(arch_def, 1.4, fix_first_last=True)]
    assert depths == [len(stage) for stage in timm_builder.decode_arch_def(arch_def, 1.4, fix_first_last=True)]
    assert depths == [1, 6, 2]


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="output_stride"):
        EfficientNet(decode_arch_def(SMALL_ARCH), output_stride=4)
    with pytest.raises(ValueError, match="unknown block type"):
        decode_arch_def([["xx_r1_k3_s1_c16"]])
    with pytest.raises(ValueError, match="2 depth multipliers for 1 stages"):
        decode_arch_def([["ir_r1_k3_s1_e4_c8"]], (1.0, 1.2))


def test_mixnet_small_model_matches_timm():
    """A small MixNet (``MIX_ARCH``, TensorFlow padding): timm's module tree and initial weights from the same seed
    (the mixed convolutions' groups in order), float32 eval logits at an odd size, and float64 train-mode outputs
    and gradients."""
    args = dict(num_features=32, stem_size=16, act_layer=torch.nn.ReLU, pad_type="same", num_classes=10)
    torch.manual_seed(3)
    reference = timm_efficientnet.EfficientNet(timm_builder.decode_arch_def(MIX_ARCH), **args)
    engine.manual_seed(3)
    ours = EfficientNet(decode_arch_def(MIX_ARCH), **{**args, "act_layer": engine.nn.ReLU})
    check_structure(ours, reference)
    assert [c.out_channels for c in ours.blocks[1][0].conv_dw.values()] == [16, 14, 14, 14, 14]
    our_sd = ours.state_dict()
    for key, value in reference.state_dict().items():
        assert np.array_equal(our_sd[key].numpy(), value.numpy()), key
    randomize_norms(reference, 3).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, 19, 17, seed=3))
    assert_close(out, ref, TOL)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=4).astype(np.float64))


# ---- the later additions: CondConv, global context, space-to-depth, fused-block options, pruning ----------------

# CondConv blocks (two experts doubled to four, strided with dynamic "same" padding, then 5x5 with skip), a fused
# block sized from a forced input width, the space-to-depth region started by a depthwise-separable block, continued
# by an inverted residual and ended by a strided fused block (ReLU), and a fused block with grouped expansion
COND_ARCH = [
    ["er_r1_k3_s1_e4_c8_fc16_noskip"],
    ["ds_r1_k3_s1_e1_c8_se0.25_d1", "ir_r1_k3_s1_e2_c8_se0.25"],
    ["er_r1_k3_s2_e4_c16_se0.25_nre", "er_r1_k3_s1_e4_gs8_c16"],
    ["ir_r1_k3_s2_e4_c16_se0.25_cc2", "ir_r1_k5_s1_e3_c16_se0.25_cc2"],
]
# global context attention in squeeze-and-excitation's slot, a 1x1 convolution block, a space-to-depth region
# started by an inverted residual and ended by a strided one, and no head convolution (MobileNetV1's head)
GC_ARCH = [
    ["cn_r1_k1_s1_c8"],
    ["ir_r1_k3_s1_e2_c8_se0.25_d1", "ir_r1_k3_s1_e2_c8_se0.25"],
    ["ir_r1_k3_s2_e4_c16_se0.25"],
]
PRUNE_ARCH = [["ds_r1_k3_s1_e1_c16_se0.25"], ["ir_r2_k3_s2_e6_c24_se0.25"]]
# output widths of PRUNE_ARCH's convolutions in module order: stem; dw, SE reduce / expand, pw; then per block
# pw, dw, SE reduce / expand, pwl; head (a residual block's input and output stay equal, as pruning keeps them)
PRUNE_WIDTHS = (12, 12, 3, 12, 12, 50, 50, 5, 50, 20, 70, 70, 4, 70, 20, 30)


def _new_blocks_pair(arch, gc=False, tf_port=True, seed=0, **kwargs):
    """timm's EfficientNet and ours from ``arch`` (CondConv experts doubled), built after the same seed, checked for
    the same module tree, feature_info and initial weights; then timm's random norms loaded into ours, eval mode."""
    eps = 1e-3 if tf_port else 1e-5
    pad_type = "same" if tf_port else ""
    args = dict(num_features=0 if gc else 24, stem_size=16, num_classes=10, pad_type=pad_type, **kwargs)
    torch.manual_seed(seed)
    reference = timm_efficientnet.EfficientNet(
        timm_builder.decode_arch_def(arch, experts_multiplier=2), act_layer=torch.nn.SiLU,
        norm_layer=partial(torch.nn.BatchNorm2d, eps=eps), se_layer="gc" if gc else None, **args)
    engine.manual_seed(seed)
    ours = EfficientNet(decode_arch_def(arch, experts_multiplier=2), bn_eps=eps,
                        se_layer=GlobalContext if gc else SqueezeExcite, **args)
    # stochastic depth's class is ours (StochasticDepth, timm's DropPath)
    check_structure(ours, reference, types="drop_path_rate" not in kwargs)
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == reference.num_features
    our_sd = ours.state_dict()
    for key, value in reference.state_dict().items():
        assert np.array_equal(our_sd[key].numpy(), value.numpy()), key
    randomize_norms(reference, seed).eval()
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


@pytest.mark.parametrize("arch, gc, tf_port", [(COND_ARCH, False, True), (GC_ARCH, True, False)])
def test_new_block_kinds_match_timm(arch, gc, tf_port):
    """CondConv (per-example expert kernels and their routing, TensorFlow's per-expert init), global context
    attention, space-to-depth (started by either block kind, its channels and strides, the feature levels it
    hides), forced-width and grouped fused blocks, no head convolution: timm's tree, seeded weights and
    feature_info, float32 eval logits at an odd size and float64 train-mode outputs and gradients."""
    reference, ours = _new_blocks_pair(arch, gc, tf_port)
    out, ref = both_outputs(reference, ours, image_batch(2, 23, 21, seed=1))
    assert np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 23, 21, seed=2).astype(np.float64))


def test_new_blocks_drop_path_and_features_only():
    """With CondConv and space-to-depth blocks: timm's drop-path and dropout masks after the same seed (eval
    unaffected), and features_only giving timm's forward_intermediates."""
    reference, ours = _new_blocks_pair(COND_ARCH, drop_path_rate=0.5, drop_rate=0.5)
    x = image_batch(2, 19, 17, seed=3)
    check_dropout_only_in_training(reference, ours, x, TOL)
    features = build_model(EfficientNet, "small", block_args=decode_arch_def(COND_ARCH, experts_multiplier=2),
                           num_features=24, stem_size=16, pad_type="same", bn_eps=1e-3, features_only=True)
    features.load_state_dict({k: v for k, v in numpy_state(reference).items() if k in features.state_dict()})
    reference.eval()
    features.eval()
    assert features.feature_info.get_dicts() == reference.feature_info
    with torch.no_grad():
        refs = reference.forward_intermediates(torch.from_numpy(x), intermediates_only=True)
    with engine.no_grad():
        outs = features(engine.from_numpy(x))
    assert len(outs) == len(refs) == len(reference.feature_info)
    for out, ref in zip(outs, refs):
        assert_close(to_numpy(out), ref.numpy(), TOL)


def test_pruning_matches_timm():
    """A small model narrowed to PRUNE_WIDTHS as timm's adapt_model_from_string narrows timm's to the same shapes:
    the module tree, the seeded weights (TensorFlow's init of the wide model, then every replaced layer's default
    init, in module order), num_features and feature_info; eval logits; reset_classifier; a one-channel stem."""
    args = dict(num_features=32, stem_size=16, num_classes=10, pad_type="same")
    engine.manual_seed(4)
    ours = EfficientNet(decode_arch_def(PRUNE_ARCH), bn_eps=1e-3, pruned_widths=PRUNE_WIDTHS, **args)
    shapes = "***".join(f"{k}:{list(v.shape)}" for k, v in ours.state_dict().items())
    torch.manual_seed(4)
    wide = timm_efficientnet.EfficientNet(timm_builder.decode_arch_def(PRUNE_ARCH), act_layer=torch.nn.SiLU,
                                          norm_layer=partial(torch.nn.BatchNorm2d, eps=1e-3), **args)
    reference = adapt_model_from_string(wide, shapes)
    check_structure(ours, reference)
    our_sd = ours.state_dict()
    for key, value in reference.state_dict().items():
        assert np.array_equal(our_sd[key].numpy(), value.numpy()), key
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    assert ours.num_features == reference.num_features == 30
    assert ours.feature_info == reference.feature_info
    assert [info["num_chs"] for info in ours.feature_info] == [12, 20]
    randomize_norms(reference, 4).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, 17, 19, seed=5))
    assert_close(out, ref, TOL)
    ours.reset_classifier(0)
    assert ours(engine.from_numpy(image_batch(2, 17, 19))).shape == (2, 30)
    grey = EfficientNet(decode_arch_def(PRUNE_ARCH), in_chans=1, pruned_widths=PRUNE_WIDTHS, **args)
    assert tuple(grey.conv_stem.weight.shape) == (12, 1, 3, 3)


def _timm_pruned_record(name):
    """The shapes timm records for a pruned variant's state_dict (the text it adapts its model from)."""
    text = pkgutil.get_data("timm.models._prune", f"_pruned/{name}.txt").decode("utf-8").strip()
    entries = [entry.split(":") for entry in text.split("***")]
    return {key: tuple(int(d) for d in shape[1:-1].split(",") if d.strip()) for key, shape in entries}


def test_pruned_variants_match_timm_records():
    """The pruned widths we ship are the output widths of the convolutions timm records for each pruned variant;
    efficientnet_b2_pruned built from them has every state_dict key, in order, with timm's recorded shape."""
    for name in PRUNED:
        record = _timm_pruned_record(name)
        convs = [shape[0] for key, shape in record.items() if key.endswith(".weight") and len(shape) == 4]
        assert efficientnet._PRUNED_WIDTHS[name] == tuple(convs), name
    record = _timm_pruned_record("efficientnet_b2_pruned")
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        model = models.create_model("efficientnet_b2_pruned")
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == record
    assert list(model.state_dict()) == list(record)
    assert model.num_features == model.head_hidden_size == 1408


# ---- the options of the variants without weights: grouped depthwise convolutions, GroupNorm, width divisor, blur --

# grouped depthwise convolutions (groups of 8 channels, given to every block by decode_arch_def's group_size),
# GroupNorm in groups of 8 for every norm, widths in multiples of 16, blur pools in the strided blocks (timm's
# efficientnet_b0_g8_gn, _b3_g8_gn, _b0_g16_evos and _blur_b0 options)
GROUP_ARCH = [
    ["ds_r1_k3_s1_e1_c16_se0.25"],
    ["ir_r1_k3_s2_e4_c24_se0.25", "ir_r1_k5_s1_e3_c24_se0.25"],
    ["ir_r1_k3_s2_e4_c40_se0.25"],
]


def test_grouped_groupnorm_blur_model_matches_timm():
    """A small model with those options: timm's tree, seeded weights and feature_info (widths 16, 32, 48), float32
    eval logits at an odd size and float64 train-mode outputs and every gradient, timm's random weights loaded."""
    args = dict(num_features=32, stem_size=16, num_classes=10, aa_layer="blurpc")
    reference, ours = check_seeded_init(
        lambda: timm_efficientnet.EfficientNet(
            timm_builder.decode_arch_def(GROUP_ARCH, group_size=8), act_layer=torch.nn.SiLU,
            norm_layer=partial(TimmGroupNormAct, group_size=8),
            round_chs_fn=partial(timm_builder.round_channels, divisor=16), **args),
        lambda: EfficientNet(decode_arch_def(GROUP_ARCH, group_size=8), channel_divisor=16,
                             norm_layer=partial(efficientnet._group_norm_act, group_size=8), **args),
        7, lambda model: set())
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info
    assert [info["num_chs"] for info in ours.feature_info] == [16, 32, 48]
    assert ours.blocks[1][0].conv_dw.groups == 64 // 8
    randomize_parameters(reference, 7).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, 35, 33, seed=8))
    assert np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=9).astype(np.float64))


# For the intermediates: a strided first stage (the stem is a level), a stage that ends no level (the next one keeps
# the resolution), separable, inverted residual and fused blocks, 8 to 24 channels.
TAP_ARCH = [
    ["ds_r1_k3_s2_e1_c8"],
    ["ir_r1_k3_s2_e2_c16_se0.25"],
    ["er_r1_k3_s1_e2_c16"],
    ["ir_r1_k5_s2_e2_c24"],
]


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates over timm's levels (the stem, each stage before a stride, the last stage; not the
    stage that ends none) and, with extra_blocks, over the stem and every stage: all, the last n, a list, maps only,
    stopping early (the head convolution then skipped); an unknown output format refused. prune_intermediate_layers
    returns timm's indices and leaves timm's blocks, head, widths and outputs (the head kept, and with extra_blocks
    too)."""
    args = dict(num_features=32, stem_size=8, num_classes=10)
    torch.manual_seed(11)
    reference = timm_efficientnet.EfficientNet(timm_builder.decode_arch_def(TAP_ARCH), act_layer=torch.nn.SiLU,
                                               **args)
    randomize_norms(reference, 11).eval()
    ours = EfficientNet(decode_arch_def(TAP_ARCH), **args)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    x = image_batch(2, 35, 33, seed=11)
    for kwargs in (dict(), dict(indices=2), dict(indices=[0, 2], stop_early=True),
                   dict(indices=[1], intermediates_only=True), dict(indices=3, extra_blocks=True),
                   dict(indices=[0, -2], extra_blocks=True, stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    for indices, kwargs, width in (([1], {}, 8), (None, dict(prune_head=False), 32),
                                   ([2], dict(extra_blocks=True), 16)):
        pruned_reference, pruned = copy.deepcopy(reference), copy.deepcopy(ours)
        taken = pruned.prune_intermediate_layers(indices, **kwargs)
        assert taken == pruned_reference.prune_intermediate_layers(indices, **kwargs)
        check_structure(pruned, pruned_reference, types=False)
        assert pruned.num_features == pruned.head_hidden_size == pruned_reference.head_hidden_size == width
        out, ref = both_outputs(pruned_reference, pruned, x)
        assert_close(out, ref, TOL)
