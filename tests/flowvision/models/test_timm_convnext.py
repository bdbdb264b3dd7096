"""timm parity of the ConvNeXt and ConvNeXt-V2 family (timm's ``convnext`` module): every registered variant's
configuration, the layout of one model of each kind against timm's on the meta device, seeded initialisation;
eval outputs (float32) and train-mode outputs and gradients (float64) of small models covering every block kind,
stem, norm and head with timm's weights loaded; stochastic depth and dropout; and the timm API (pre-logits
features, global pooling, reset_classifier, in_chans, features_only, list_models)."""
import inspect
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.convnext as timm_convnext
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import convnext
from model_parity import (both_outputs, check_dropout_only_in_training, check_feature_maps, check_intermediates,
                          check_layout, check_seeded_init, check_train_step, conv_and_linear_weights, image_batch,
                          is_timm_family, numpy_state, pre_logits, randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["convnext_zepto_rms", "convnext_zepto_rms_ols", "convnext_atto", "convnext_atto_ols", "convnext_atto_rms",
         "convnext_femto", "convnext_femto_ols", "convnext_pico", "convnext_pico_ols", "convnext_nano",
         "convnext_nano_ols", "convnext_tiny_hnf", "convnext_large_mlp", "convnext_xlarge", "convnext_xxlarge",
         "convnextv2_atto", "convnextv2_femto", "convnextv2_pico", "convnextv2_nano", "convnextv2_tiny",
         "convnextv2_small", "convnextv2_base", "convnextv2_large", "convnextv2_huge"]
# the variants timm publishes no weights for
UNTRAINED = {"convnext_atto_rms", "convnextv2_small"}
TOL = 1e-4
# timm's no-op identities that ours leaves out: the blocks' shortcut, the MLP's norm slot, the norm-first head's
# flatten
PLACEHOLDERS = ("shortcut", "mlp.norm", "head.flatten")
PRINTED = ("Conv2d", "Conv2dSame", "Linear", "LayerNorm", "LayerNorm2d", "SimpleNorm2d", "GlobalResponseNorm",
           "Dropout", "Flatten")

# Small models covering every block kind, stem, norm and head: 1x1-conv and linear MLPs, with and without GRN and
# layer scale; patch, overlapping, tiered and activated stems; LayerNorm, SimpleNorm and RmsNorm; the MLP head
# with a hidden layer, the norm-first head; dilated stages (output_stride 8, a 2-pixel patch stem: a Conv2dSame
# and a dilated downsampling convolution) with per-stage kernels; RmsNorm with 1x1-conv MLPs (convnext_atto_rms's).
BASE = dict(depths=(1, 1, 2, 1), dims=(8, 16, 24, 32), num_classes=10)
SMALL = {
    "conv_mlp": dict(conv_mlp=True, stem_type="overlap_tiered"),
    "linear_mlp": dict(head_hidden_size=20),
    "grn_conv": dict(conv_mlp=True, use_grn=True, ls_init_value=None, stem_type="overlap_act"),
    "grn_linear": dict(use_grn=True, ls_init_value=0.5),
    "simplenorm_hnf": dict(conv_mlp=True, norm_layer="simplenorm", head_norm_first=True, stem_type="overlap"),
    "dilated_rms": dict(norm_layer="rmsnorm", norm_eps=1e-5, output_stride=8, patch_size=2,
                        kernel_sizes=(7, 5, 5, 3)),
    "rms_conv_mlp": dict(conv_mlp=True, norm_layer="rmsnorm2d"),
}
SIZE = (45, 39)
# random values for every parameter of a timm model: the initial ones (unit norms, zero biases and GRN, 1e-6 layer
# scales) would hide bugs
randomize = partial(randomize_parameters, scales=("gamma",))


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = dict(BASE, **SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_convnext.ConvNeXt(**config), seed)
    ours = convnext.ConvNeXt(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def skip_init(patch):
    """Our models built without drawing their initial weights (for layout checks)."""
    skip_random_init(patch)
    patch.setattr(convnext, "trunc_normal_", lambda tensor, std=0.02: tensor)


# ---- configuration and layout -----------------------------------------------------------------------------------


def test_variant_configurations_match_timm():
    """Each entrypoint hands timm's configuration to the model class, with every argument of timm's ConvNeXt
    (the activation, a class for us, is GELU for all); keyword arguments override it as in timm."""
    timm_defaults = {k: p.default for k, p in inspect.signature(timm_convnext.ConvNeXt).parameters.items()
                     if k not in ("device", "dtype", "act_layer")}
    our_defaults = {k: p.default for k, p in inspect.signature(convnext.ConvNeXt).parameters.items()}
    assert set(timm_defaults) <= set(our_defaults) and our_defaults["act_layer"] is engine.nn.GELU
    for name in NAMES:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(timm_convnext, "_create_convnext", lambda variant, pretrained=False, **kwargs: kwargs)
            patch.setattr(convnext, "build_model", lambda cls, variant, pretrained, progress, **kwargs: kwargs)
            expected = {**timm_defaults, **getattr(timm_convnext, name)()}
            config = {**our_defaults, **models.model_entrypoint(name)()}
        for key, value in expected.items():
            value = tuple(value) if isinstance(value, list) else value
            assert config[key] == value, (name, key)
    assert models.model_entrypoint("convnext_atto")(depths=(1, 1, 1, 1), features_only=True).feature_info.channels() \
        == [40, 80, 160, 320]


@pytest.mark.parametrize("name,kwargs", [("convnext_zepto_rms_ols", {}), ("convnext_atto_ols", {}),
                                         ("convnext_tiny_hnf", {}), ("convnext_large_mlp", dict(depths=(1, 1, 3, 1))),
                                         ("convnextv2_nano", {}), ("convnextv2_tiny", {}), ("convnext_atto_rms", {})])
def test_layout_matches_timm(name, kwargs):
    """state_dict keys in order, shapes and dtypes, module names (but for timm's placeholders), the printout of
    every layer, feature_info, num_features, head_hidden_size and default_cfg against timm's model on the meta
    device: one model of each kind (SimpleNorm with the activated stem, the tiered stem, the norm-first head, the
    MLP head and linear MLPs (fewer blocks: timm takes a second to build 36), V2 with 1x1-conv and linear MLPs,
    the untrained RmsNorm atto; the untrained V2-S is V2-T's layout deeper, its configuration compared above)."""
    with torch.device("meta"):
        reference = timm.create_model(name, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        skip_init(patch)
        ours = models.create_model(name, **kwargs)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm, drawn in timm's order (the layers' default inits,
    then truncated normals for every convolution and linear layer, the head's scaled by head_init_scale): zeros,
    ones and layer scales bit for bit, the truncated normals within 2 float32 ulps (the engine's float32 erfinv
    rounds ~0.03% of values differently from torch's MKL one); both generators end in step."""
    for seed, kind in enumerate(SMALL):
        config = dict(BASE, **SMALL[kind], head_init_scale=0.3)
        check_seeded_init(lambda: timm_convnext.ConvNeXt(**config), lambda: convnext.ConvNeXt(**config), seed,
                          conv_and_linear_weights, kind)


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd image size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("kind", ["grn_linear", "simplenorm_hnf", "dilated_rms", "rms_conv_mlp"])
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (GRN and layer
    scale in channels-last blocks; SimpleNorm, 1x1-conv blocks and the norm-first head; RmsNorm, dilation and
    Conv2dSame; RmsNorm in 1x1-conv blocks)."""
    reference, ours = small_pair(kind, seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, 37, 33, seed=4).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout_only_in_training():
    """drop_path_rate rises stage by stage as timm's (0 in the first stage, the rate in the last); in eval mode
    nothing is dropped; in train mode both draw the same masks after the same seed, other masks after another."""
    reference, ours = small_pair("linear_mlp", seed=5, drop_path_rate=0.5, drop_rate=0.3)
    _, plain = small_pair("linear_mlp", seed=5)
    rates = [getattr(b.drop_path, "p", 0.0) for s in ours.stages for b in s.blocks]
    expected = [getattr(b.drop_path, "drop_prob", 0.0) for s in reference.stages for b in s.blocks]
    assert rates == pytest.approx(expected) and rates[0] == 0.0 and rates[-1] == pytest.approx(0.5)
    assert ours.head.drop.p == 0.3
    x = image_batch(2, *SIZE, seed=6)
    plain_out, _ = both_outputs(reference, plain, x)
    assert np.array_equal(check_dropout_only_in_training(reference, ours, x, TOL, TOL), plain_out)


# ---- API --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,pools", [("linear_mlp", ("max", "avgmax", "")), ("simplenorm_hnf", ("catavgmax", ""))])
def test_pre_logits_and_num_classes_0_match_timm(kind, pools):
    """forward_head(pre_logits=True) equals timm's for every pooling (none: the normalised map, through the
    hidden layer as a 1x1 convolution), and a model built with ``num_classes=0`` returns it; the logits too
    (maps of logits without pooling in the MLP head). The MLP head refuses pooling that widens the features."""
    x = image_batch(2, *SIZE, seed=9)
    for pool in pools:
        reference, ours = small_pair(kind, seed=10, global_pool=pool)
        out, expected = both_outputs(reference, ours, x, pre_logits)
        assert_close(out, expected, TOL)
        assert ours.head_hidden_size == reference.head_hidden_size and ours.num_features == 32
        if kind == "linear_mlp" or pool:
            logits, expected_logits = both_outputs(reference, ours, x)
            assert_close(logits, expected_logits, TOL)
        headless = convnext.ConvNeXt(**dict(BASE, **SMALL[kind], num_classes=0, global_pool=pool))
        headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc")})
        with engine.no_grad():
            features = to_numpy(headless.eval()(engine.from_numpy(x)))
        assert_close(features, expected, TOL)
    with pytest.raises(ValueError, match="catavgmax"):
        convnext.ConvNeXt(**BASE, global_pool="catavgmax")


def test_reset_classifier_matches_timm():
    """reset_classifier as timm's: a new classifier of the new size; without pooling the hidden layer becomes a
    1x1 convolution with its weights kept; ``reset_other`` removes the head's norm and hidden layer. After each,
    timm's new weights loaded into ours give timm's outputs."""
    reference, ours = small_pair("linear_mlp", seed=11)
    x = image_batch(2, *SIZE, seed=12)
    for args in ((5,), (0, ""), (3, None, True), (4, "max")):
        torch.manual_seed(13)
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert ours.num_classes == reference.num_classes
        assert ours.head_hidden_size == reference.head_hidden_size
        assert [n for n, _ in ours.head.named_modules()] == [n for n, _ in reference.head.named_modules()]
        assert type(ours.get_classifier()).__name__ == type(reference.get_classifier()).__name__
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 4)
    _, hnf = small_pair("simplenorm_hnf", seed=14)
    hnf.reset_classifier(6, global_pool="catavgmax")
    assert hnf.get_classifier().in_features == 64 and hnf.head_hidden_size == 64
    assert tuple(hnf(engine.from_numpy(x)).shape) == (2, 6)


def test_in_chans():
    """``in_chans=1`` matches timm's one-channel model."""
    reference, ours = small_pair("conv_mlp", seed=15, in_chans=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=16, c=1))
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("out_indices", [None, (0, -1)])
def test_features_only_matches_timm(out_indices):
    """``features_only`` (through the entrypoints' builder) gives timm's feature stages (all four by default, or
    ``out_indices``, negative ones counted from the end), with timm's channels, reductions and values."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    config = dict(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), stem_type="overlap_tiered")
    torch.manual_seed(17)
    reference = timm_convnext._create_convnext("convnext_atto_ols", features_only=True, **config, **kwargs)
    reference = randomize(reference, 17).eval()
    ours = convnext._create_convnext("convnext_atto_ols", False, True, features_only=True, **config, **kwargs)
    ours.load_state_dict(numpy_state(reference))  # timm's flattened names ('stem_0', 'stages_1')
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=18), 4 if out_indices is None else 2, TOL)


def forward_features(model, x):
    """``model``'s feature map (for ``both_outputs``)."""
    return model.forward_features(x)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's (the norm-first head's ``norm_pre`` as the final norm): every stage, the
    last n, a list (negative from the end) stopping early, the last stage's map normalised, the maps alone.
    prune_intermediate_layers as timm's: the same indices; cut after stage 1, the features are its map (no
    ``norm_pre``) and the head goes; with ``prune_head=False`` and the last stage kept, the MLP head's hidden layer
    stays and the logits are timm's. An NHWC output format is refused."""
    reference, ours = small_pair("simplenorm_hnf", seed=19)
    x = image_batch(2, *SIZE, seed=20)
    for kwargs in ({}, dict(indices=2, norm=True), dict(indices=[0, -3], stop_early=True),
                   dict(indices=[3], norm=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([0, 1]) == reference.prune_intermediate_layers([0, 1]) == [0, 1]
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, expected = both_outputs(reference, ours, x, forward_features)
    assert out.shape == (2, 16, 6, 5)
    assert_close(out, expected, TOL)
    reference, ours = small_pair("linear_mlp", seed=21)
    assert ours.prune_intermediate_layers(prune_head=False) == reference.prune_intermediate_layers(
        prune_head=False) == [3]
    assert ours.head_hidden_size == reference.head_hidden_size == 20
    out, expected = both_outputs(reference, ours, x)
    assert_close(out, expected, TOL)


def test_too_small_inputs_are_refused():
    """An image too small for the last downsampling convolution raises (32 pixels is the smallest)."""
    _, ours = small_pair("linear_mlp")
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(image_batch(1, 32, 32))).shape) == (1, 10)
        with pytest.raises((RuntimeError, ValueError)):
            ours(engine.from_numpy(image_batch(1, 31, 40)))


def test_list_models():
    """The ``convnext`` module lists exactly timm's: timm's names beside torchvision's
    convnext_tiny/small/base/large, each with timm's ImageNet-1k weights but the untrained convnext_atto_rms and
    convnextv2_small, registered too; the wildcard finds timm's names (its test models aside:
    tests/flowvision/models/test_timm_test_models.py)."""
    assert models.list_models(module="convnext") == timm.list_models(module="convnext")
    timm_names = [n for n in models.list_models(module="convnext", exclude_filters="test_*") if is_timm_family(n)]
    assert timm_names == sorted(NAMES)
    assert {"convnext_tiny", "convnext_small", "convnext_base", "convnext_large"} <= set(
        n for n in models.list_models(module="convnext") if not is_timm_family(n))
    assert set(models.list_models("convnextv2_*")) == {n for n in NAMES if n.startswith("convnextv2_")}
    for name in set(NAMES) - UNTRAINED:
        assert any(timm.models.get_pretrained_cfg(tag).num_classes == 1000 for tag in timm.list_pretrained(name + ".*"))
    assert not any(timm.list_pretrained(name + ".*") for name in UNTRAINED)
