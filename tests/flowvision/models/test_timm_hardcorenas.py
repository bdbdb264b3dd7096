"""timm parity of HardCoRe-NAS (hardcorenas_a to hardcorenas_f, our MobileNetV3 built from timm's stage strings):
every variant's configuration as its entrypoint hands it over (decoded blocks, stem, head, activation, BatchNorm
epsilon, squeeze-and-excitation) and its layout; through both builders, a small architecture with the block kinds
the variants use (a depthwise-separable block, inverted residuals with 3x3 and 5x5 kernels, with and without
squeeze-and-excitation, ReLU or hard-swish, the final 1x1 convolution): seeded initialisation, float32 eval outputs,
float64 train-mode outputs, gradients and BatchNorm statistics, drop path and dropout only in training with timm's
masks, and the timm API (pre-logits, reset_classifier, in_chans, features_only, bad arguments, list_models)."""
import inspect

import numpy as np
import pytest
import timm
import torch
from timm.models import hardcorenas as timm_hardcorenas
from timm.models import mobilenetv3 as timm_mnv3

import engine
import flowvision.models as models
from flowvision.models._features import FeatureListNet
from flowvision.models.timm_families import hardcorenas
from flowvision.models.timm_families.mobilenetv3 import MobileNetV3
from model_parity import (both_outputs, check_drop_rates, check_dropout_only_in_training, check_layout,
                          check_seeded_init, check_structure, check_train_step, image_batch, numpy_state, pre_logits,
                          randomize_norms, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["hardcorenas_a", "hardcorenas_b", "hardcorenas_c", "hardcorenas_d", "hardcorenas_e", "hardcorenas_f"]
TOL = 1e-4
# the blocks' ReLUs print without timm's inplace=True (the shared MobileNetV3 blocks'), so they and the
# BatchNormAct2d holding them are compared by class only
PRINTED = ("Conv2d", "BatchNorm2d", "Hardswish", "Hardsigmoid", "Linear")
# the block kinds of the variants, narrower and fewer: the stem width and the 1280-channel head are the builders'
SMALL_ARCH = [
    ["ds_r1_k3_s1_e1_c16_nre"],
    ["ir_r1_k5_s2_e3_c24_nre", "ir_r1_k3_s1_e3_c24_nre_se0.25"],
    ["ir_r1_k5_s2_e4_c32_se0.25"],
    ["ir_r1_k5_s2_e6_c40_se0.25", "ir_r1_k3_s1_e6_c40"],
    ["ir_r1_k3_s2_e3_c48_se0.25"],
    ["cn_r1_k1_s1_c64"],
]
SIZE = (45, 39)


def timm_small(**kwargs):
    """timm's ``SMALL_ARCH`` model (10 classes unless ``kwargs`` say otherwise) through its HardCoRe-NAS builder."""
    return timm_hardcorenas._gen_hardcorenas(False, "hardcorenas_a", SMALL_ARCH, **{"num_classes": 10, **kwargs})


def ours_small(**kwargs):
    """Our ``SMALL_ARCH`` model (10 classes unless ``kwargs`` say otherwise) through our HardCoRe-NAS builder."""
    return hardcorenas._gen_hardcorenas("hardcorenas_a", False, True, SMALL_ARCH, {"num_classes": 10, **kwargs})


def small_models(seed=0, **kwargs):
    """(timm's, ours) ``SMALL_ARCH`` models, each built right after seeding its generator with ``seed``."""
    torch.manual_seed(seed)
    reference = timm_small(**kwargs)
    engine.manual_seed(seed)
    ours = ours_small(**kwargs)
    return reference, ours


def small_pair(seed=0, **kwargs):
    """``small_models`` with timm's BatchNorms randomised and its weights loaded into ours, both in eval mode."""
    reference, ours = small_models(seed, **kwargs)
    randomize_norms(reference, seed).eval()
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _se_summary(se_layer, act_layer):
    """What a squeeze-and-excitation factory builds where the width rounding matters: reduced widths, activation
    and gate classes."""
    layers = [se_layer(chs, rd_ratio=0.25, act_layer=act_layer) for chs in (72, 120, 1152)]
    return [(m.conv_reduce.out_channels, type(m.act1).__name__, type(m.gate).__name__) for m in layers]


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands MobileNetV3 timm's configuration: the decoded blocks (kinds, widths, strides, kernels,
    expansion, SE ratio, per-block activation), stem and head widths, hard-swish, BatchNorm epsilon, timm's defaults
    for the rest and its squeeze-and-excitation (ReLU, hard-sigmoid gate, widths rounded to 8); and builds timm's
    layout on the meta device (state_dict, module tree and classes, printouts, feature_info, widths,
    default_cfg)."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(hardcorenas, "build_model", lambda cls, variant, pretrained, progress, **kw:
                        ours_calls.append(kw))
    monkeypatch.setattr(timm_hardcorenas, "build_model_with_cfg", lambda cls, variant, pretrained, **kw:
                        timm_calls.append(kw))
    for name in NAMES:
        getattr(hardcorenas, name)()
        getattr(timm_hardcorenas, name)()
    timm_defaults = {k: p.default for k, p in inspect.signature(timm_mnv3.MobileNetV3).parameters.items()}
    our_defaults = {k: p.default for k, p in inspect.signature(MobileNetV3).parameters.items()}
    for name, cfg, ref in zip(NAMES, ours_calls, timm_calls):
        cfg, ref = {**our_defaults, **cfg}, {**timm_defaults, **ref}
        ref_blocks = [[dict(b, act_layer=b["act_layer"] and b["act_layer"].__name__) for b in stage]
                      for stage in ref["block_args"]]
        our_blocks = [[dict(b, act_layer=b.get("act_layer") and b["act_layer"].__name__) for b in stage]
                      for stage in cfg["block_args"]]
        assert our_blocks == [[{k: v for k, v in b.items() if k not in ("s2d", "force_in_chs")} for b in stage]
                              for stage in ref_blocks], name
        for key in ("num_classes", "num_features", "stem_size", "fix_stem", "head_bias", "head_norm", "pad_type",
                    "se_from_exp", "aa_layer", "layer_scale_init_value", "drop_rate", "drop_path_rate",
                    "global_pool"):
            assert cfg[key] == ref[key], (name, key)
        assert cfg["act_layer"].__name__ == ref["act_layer"].__name__ == "Hardswish", name
        assert cfg["bn_eps"] == ref["norm_layer"].keywords.get("eps", 1e-5), name
        assert ref["round_chs_fn"] is timm_mnv3.round_channels and cfg["channel_multiplier"] == 1.0, name
        assert _se_summary(cfg["se_layer"], engine.nn.SiLU) == _se_summary(ref["se_layer"], torch.nn.SiLU), name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for init in ("kaiming_uniform_", "uniform_", "normal_", "kaiming_normal_", "constant_", "ones_", "zeros_"):
        monkeypatch.setattr(torch.nn.init, init, lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        check_layout(models.create_model(name), reference, (), PRINTED, types=True)


def test_seeded_init_equals_timm():
    """The same seed gives timm's (TensorFlow-style) initial weights bit for bit and leaves both random streams in
    step."""
    reference, ours = check_seeded_init(timm_small, ours_small, 3, lambda r: set())
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


def test_eval_outputs_match_timm():
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's."""
    reference, ours = small_pair(seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's rates, block by block) and the head's dropout: nothing dropped in eval mode; in
    training timm's masks after the same seed, others after another seed."""
    reference, ours = small_pair(seed=6, drop_rate=0.3, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours)[-1] == pytest.approx(0.5 * 7 / 8)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_like_timm():
    """Pre-logits features (after the 1280-channel head convolution), num_classes=0, and reset_classifier to a new
    size and pooling, as timm's; a pooling that widens the features cannot feed the head convolution."""
    reference, ours = small_pair(seed=8)
    x = image_batch(2, *SIZE, seed=9)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 1280) and ours.head_hidden_size == reference.head_hidden_size == 1280
    assert_close(pre, pre_ref, TOL)
    state = {k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")}
    headless = ours_small(num_classes=0)
    headless.load_state_dict(state)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(5, "max")
    ours.reset_classifier(5, "max")
    check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(5, "catavgmax")


def test_in_chans_1_and_bad_arguments():
    """A one-channel model matches timm's, on 1x1 images too (every layer pads); an unknown pooling is refused."""
    reference, ours = small_pair(seed=10, in_chans=1)
    assert tuple(ours.conv_stem.weight.shape) == (32, 1, 3, 3)
    for h, w in (SIZE, (1, 1)):
        out, ref = both_outputs(reference, ours, image_batch(2, h, w, seed=11, c=1))
        assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours_small(global_pool="bogus")


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_matches_timm(out_indices):
    """features_only through both builders: our FeatureListNet against timm's MobileNetV3Features, with timm's
    taps (the first stage's output at stride 2, then strides 4 to 32; all five by default), feature_info and
    feature maps."""
    kwargs = {"features_only": True} if out_indices is None else {"features_only": True, "out_indices": out_indices}
    torch.manual_seed(12)
    reference = randomize_norms(timm_small(**kwargs), 12).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = ours_small(**kwargs)
    assert type(ours) is FeatureListNet
    state = numpy_state(reference)
    ours.load_state_dict({k: state[k] for k in ours.state_dict()})
    expected = [{k: f[k] for k in ("module", "num_chs", "reduction", "stage")}
                for f in reference.feature_info.get_dicts()]
    assert ours.feature_info.get_dicts() == expected
    assert ours.feature_info.reduction() == ([2, 4, 8, 16, 32] if out_indices is None else [4, 16])
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=13))
    assert len(outs) == len(refs) == len(expected)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant under its timm name and module, all of timm's ``hardcorenas`` models with
    ImageNet-1k weights."""
    assert models.list_models(module="hardcorenas") == timm.list_models(module="hardcorenas") == NAMES
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("hardcorenas*")}
