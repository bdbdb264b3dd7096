"""timm parity of the MetaFormer family (timm's ``metaformer`` module: PoolFormer, PoolFormerV2, ConvFormer,
CAFormer): every variant's configuration, the layout of one model of each kind against timm's on the meta device,
seeded initialisation; eval outputs (float32) of small models of every kind and train-mode outputs and gradients
(float64), with timm's weights loaded; stochastic depth and dropout; and the timm API (pre-logits features, global
pooling, reset_classifier, in_chans, features_only, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import metaformer as timm_metaformer

import engine
import flowvision.models as models
from flowvision.models.timm_families import metaformer
from model_parity import (both_outputs, check_dropout_only_in_training, check_feature_maps, check_intermediates,
                          check_layout, check_seeded_init, check_train_step, conv_and_linear_weights, image_batch,
                          is_timm_family, numpy_state, pre_logits, randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["poolformer_s12", "poolformer_s24", "poolformer_s36", "poolformer_m36", "poolformer_m48",
         "poolformerv2_s12", "poolformerv2_s24", "poolformerv2_s36", "poolformerv2_m36", "poolformerv2_m48",
         "convformer_s18", "convformer_s36", "convformer_m36", "convformer_b36",
         "caformer_s18", "caformer_s36", "caformer_m36", "caformer_b36"]
TOL = 1e-4
# timm's no-op identity that ours leaves out: the MLP's norm slot
PLACEHOLDERS = ("mlp.norm",)
PRINTED = ("Conv2d", "Linear", "GroupNorm1", "GroupNorm1NoBias", "LayerNorm", "LayerNorm2d", "LayerNormNoBias",
           "LayerNorm2dNoBias", "AvgPool2d", "ReLU", "GELU", "StarReLU", "SquaredReLU", "Scale", "Dropout", "Flatten")

# Small models of each kind (the entrypoints' configurations on one block per stage and narrow widths; heads of 8
# channels so that the attention stages have 3 and 4 heads): pooling with GroupNorm, GELU and layer scales (v1),
# pooling with bias-free GroupNorm, StarReLU and res scales (v2), separable convolutions with bias-free LayerNorm
# and the MLP head (ConvFormer), separable convolutions then attention on token sequences (CAFormer).
BASE = dict(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), num_classes=10)
SMALL = {
    "poolformer": ("poolformer_s12", {}),
    "poolformerv2": ("poolformerv2_s12", {}),
    "convformer": ("convformer_s18", {}),
    "caformer": ("caformer_s18", dict(head_dim=8)),
}
SIZE = (45, 39)  # stem 11x9, stages 11x9, 6x5, 3x3, 2x2


def entrypoint_kwargs(module, builder, name):
    """The keywords the entrypoint ``name`` of ``module`` (ours or timm's) hands to its model builder."""
    calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, builder, lambda cls, variant, pretrained, **kwargs: calls.append(kwargs))
        getattr(module, name)()
    return calls[0]


def comparable(value):
    """A configuration value comparable between timm's and ours: classes by name, lists as tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(comparable(v) for v in value)
    return value.__name__ if isinstance(value, type) else value


def small_config(kind, **kwargs):
    """The keywords of the small ``kind`` model: its entrypoint's configuration on ``BASE``."""
    name, extra = SMALL[kind]
    config = entrypoint_kwargs(metaformer, "build_model", name)
    config.pop("progress")
    return {**config, **BASE, **extra, **kwargs}


def timm_config(config):
    """``config`` (ours) with timm's classes in place of ours."""
    return {k: [getattr(timm_metaformer, c.__name__, c) for c in v] if isinstance(v, list) else
            getattr(timm_metaformer, v.__name__, getattr(torch.nn, v.__name__, v)) if isinstance(v, type) else v
            for k, v in config.items()}
# random values for every parameter of a timm model: the initial ones (unit norms, zero biases, 1e-5 layer scales,
# StarReLU's 1 and 0) would hide bugs
randomize = partial(randomize_parameters, scales=("scale",))


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = small_config(kind, **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_metaformer.MetaFormer(**timm_config(config)), seed)
    ours = metaformer.MetaFormer(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


# ---- configuration and layout -----------------------------------------------------------------------------------


def test_variant_configurations_match_timm():
    """Each entrypoint hands the model class timm's configuration (classes compared by name)."""
    for name in NAMES:
        ours = entrypoint_kwargs(metaformer, "build_model", name)
        theirs = entrypoint_kwargs(timm_metaformer, "build_model_with_cfg", name)
        assert ours.pop("progress") is True
        del theirs["pretrained_filter_fn"], theirs["feature_cfg"]
        assert {k: comparable(v) for k, v in ours.items()} == {k: comparable(v) for k, v in theirs.items()}, name


def test_layout_matches_timm():
    """state_dict keys in order, shapes and dtypes, module names (but for timm's placeholders), the printout of
    every layer, the class names of all modules, feature_info, num_features, head_hidden_size and default_cfg
    against timm's model on the meta device: one model of each kind."""
    for name in ("poolformer_s12", "poolformerv2_s12", "convformer_s18", "caformer_s18"):
        with torch.device("meta"):
            reference = timm.create_model(name)
        with pytest.MonkeyPatch.context() as patch:
            skip_random_init(patch)
            ours = models.create_model(name)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED, types=True)


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm, drawn in timm's order (the layers' default inits,
    then truncated normals for every convolution and linear layer): zeros, ones and scales bit for bit, the
    truncated normals within 2 float32 ulps (the engine's float32 erfinv rounds a few values differently from
    torch's); both generators end in step."""
    for seed, kind in enumerate(SMALL):
        config = small_config(kind)
        check_seeded_init(lambda: timm_metaformer.MetaFormer(**timm_config(config)),
                          lambda: metaformer.MetaFormer(**config), seed, conv_and_linear_weights, kind)


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd image size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("kind", ["poolformer", "caformer"])
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (GroupNorm, GELU,
    pooling and layer scales; separable convolutions, attention, StarReLU, res scales and the MLP head)."""
    reference, ours = small_pair(kind, seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, 37, 33, seed=4).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout_only_in_training():
    """drop_path_rate rises block by block as timm's (0 in the first block, the rate in the last); in eval mode
    nothing is dropped; in train mode both draw the same masks (stochastic depth, the blocks' and the head's
    dropout) after the same seed, other masks after another. The dropout of the MLPs after a LayerNorm2d (the
    separable-convolution stages) is switched off on both sides: torch's 1x1 convolutions keep the channels-last
    memory order of the norm's permuted output and torch draws dropout masks in memory order, ours in index
    order (the same distribution, other draws)."""
    reference, ours = small_pair("caformer", seed=5, drop_path_rate=0.5, drop_rate=0.3, proj_drop_rate=0.2)
    _, plain = small_pair("caformer", seed=5)
    for model in (reference, ours):
        for stage in model.stages[:2]:
            for block in stage.blocks:
                block.mlp.drop1.p = block.mlp.drop2.p = 0.0
    rates = [getattr(b.drop_path1, "p", 0.0) for s in ours.stages for b in s.blocks]
    expected = [getattr(b.drop_path1, "drop_prob", 0.0) for s in reference.stages for b in s.blocks]
    assert rates == pytest.approx(expected) and rates[0] == 0.0 and rates[-1] == pytest.approx(0.5)
    assert ours.head.drop.p == 0.3 and ours.stages[3].blocks[0].token_mixer.proj_drop.p == 0.2
    x = image_batch(2, *SIZE, seed=6)
    plain_out, _ = both_outputs(reference, plain, x)
    assert np.array_equal(check_dropout_only_in_training(reference, ours, x, TOL, TOL), plain_out)


# ---- API --------------------------------------------------------------------------------------------------------


def test_pre_logits_and_num_classes_0_match_timm():
    """forward_head(pre_logits=True) equals timm's for every pooling that keeps the width (none: the normalised
    map), and a model built with ``num_classes=0`` returns it; the linear and MLP heads' logits too. Pooling
    that widens the features is refused."""
    x = image_batch(2, *SIZE, seed=9)
    for kind, pool in (("poolformerv2", "max"), ("caformer", "avgmax"), ("convformer", "")):
        reference, ours = small_pair(kind, seed=10, global_pool=pool)
        out, expected = both_outputs(reference, ours, x, pre_logits)
        assert_close(out, expected, TOL)
        assert ours.head_hidden_size == reference.head_hidden_size == ours.num_features == 32
        if pool:
            logits, expected_logits = both_outputs(reference, ours, x)
            assert_close(logits, expected_logits, TOL)
        headless = metaformer.MetaFormer(**small_config(kind, num_classes=0, global_pool=pool))
        headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc")})
        with engine.no_grad():
            features = to_numpy(headless.eval()(engine.from_numpy(x)))
        assert_close(features, expected, TOL)
    with pytest.raises(ValueError, match="catavgmax"):
        metaformer.MetaFormer(**BASE, global_pool="catavgmax")
    with pytest.raises(TypeError, match="head_dims"):
        metaformer.MetaFormer(**BASE, head_dims=8)


@pytest.mark.parametrize("kind", ["poolformer", "caformer"])
def test_reset_classifier_matches_timm(kind):
    """reset_classifier as timm's: a new classifier (linear or MLP head) of the new size, new pooling, and
    ``reset_other`` removing the head's norm. After each, timm's new weights loaded into ours give timm's
    outputs."""
    reference, ours = small_pair(kind, seed=11)
    x = image_batch(2, *SIZE, seed=12)
    for args in ((5,), (0, ""), (3, "max", True), (4, "avg")):
        torch.manual_seed(13)
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert ours.num_classes == reference.num_classes
        assert [n for n, _ in ours.head.named_modules()] == [n for n, _ in reference.head.named_modules()]
        assert type(ours.get_classifier()).__name__ == type(reference.get_classifier()).__name__
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 4)


def test_in_chans():
    """``in_chans=1`` matches timm's one-channel model."""
    reference, ours = small_pair("convformer", seed=15, in_chans=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=16, c=1))
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("out_indices", [None, (0, -1)])
def test_features_only_matches_timm(out_indices):
    """``features_only`` (through the entrypoints' builder) gives timm's feature stages (all four by default, or
    ``out_indices``, negative ones counted from the end), with timm's channels, reductions and values."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    config = dict(depths=(1, 1, 1, 1), dims=(8, 16, 24, 32), head_dim=8)
    torch.manual_seed(17)
    timm_kinds = dict(token_mixers=[timm_metaformer.SepConv] * 2 + [timm_metaformer.Attention] * 2,
                      norm_layers=[timm_metaformer.LayerNorm2dNoBias] * 2 + [timm_metaformer.LayerNormNoBias] * 2)
    reference = timm_metaformer._create_metaformer("caformer_s18", features_only=True, **timm_kinds, **config,
                                                   **kwargs)
    reference = randomize(reference, 17).eval()
    ours = models.model_entrypoint("caformer_s18")(features_only=True, **config, **kwargs)
    ours.load_state_dict(numpy_state(reference))  # timm's flattened names ('stages_1')
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=18), 4 if out_indices is None else 2, TOL)


def forward_features(model, x):
    """``model``'s feature map (for ``both_outputs``)."""
    return model.forward_features(x)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's (no final norm outside the head: ``norm`` changes nothing): every stage, the
    last n, a list (negative from the end) stopping early, the maps alone. prune_intermediate_layers as timm's: the
    same indices; cut after stage 2, the features are its map and the head (MLP, norm, pooling) goes; with
    ``prune_head=False`` and every stage kept, the logits are timm's. An NHWC output format is refused."""
    reference, ours = small_pair("convformer", seed=19)
    x = image_batch(2, *SIZE, seed=20)
    for kwargs in ({}, dict(indices=2, norm=True), dict(indices=[0, -3], stop_early=True),
                   dict(indices=[3], intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([-2]) == reference.prune_intermediate_layers([-2]) == [2]
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 24
    assert [n for n, _ in ours.head.named_modules()] == [n for n, _ in reference.head.named_modules()]
    out, expected = both_outputs(reference, ours, x, forward_features)
    assert out.shape == (2, 24, 3, 3)
    assert_close(out, expected, TOL)
    reference, ours = small_pair("poolformer", seed=21)
    assert ours.prune_intermediate_layers(4, prune_head=False) == reference.prune_intermediate_layers(
        4, prune_head=False) == [0, 1, 2, 3]
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 10)
    assert_close(out, expected, TOL)


def test_too_small_inputs_are_refused():
    """An image too small for the stem's 7x7 convolution (padding 2) raises (3 pixels is the smallest)."""
    _, ours = small_pair("caformer")
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(image_batch(1, 3, 3))).shape) == (1, 10)
        with pytest.raises((RuntimeError, ValueError)):
            ours(engine.from_numpy(image_batch(1, 2, 40)))


def test_list_models():
    """timm's names form the ``metaformer`` module, each with timm's ImageNet-1k weights."""
    assert models.list_models(module="metaformer") == sorted(NAMES)
    assert all(is_timm_family(n) for n in NAMES)
    assert set(models.list_models("caformer_*")) == {n for n in NAMES if n.startswith("caformer_")}
    for name in NAMES:
        assert any(timm.models.get_pretrained_cfg(tag).num_classes == 1000 for tag in timm.list_pretrained(name + ".*"))
