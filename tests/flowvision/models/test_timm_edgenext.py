"""timm parity of EdgeNeXt (timm's ``edgenext`` module: edgenext_xx_small, x_small, small, base and small_rw): every
variant's configuration, the layout of two kinds against timm's on the meta device, seeded initialisation; the
Fourier positional encoding; eval outputs (float32) of small models covering every block and option (convolutional
encoders, SDTA encoders with even and uneven channel groups, one or two of them a stage, the positional encoding,
the patch and overlapping stems, strided first blocks without biases, both heads) and float64 train-mode outputs
and gradients, all with timm's weights loaded; stochastic depth and dropout with timm's masks; and the timm API
(pre-logits, pooling, reset_classifier, in_chans, features_only, forward_intermediates, prune_intermediate_layers,
bad arguments, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.edgenext as timm_edgenext
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import edgenext
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_head_api, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, conv_and_linear_weights, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["edgenext_base", "edgenext_small", "edgenext_small_rw", "edgenext_x_small", "edgenext_xx_small"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm2d", "LayerNorm", "Linear", "Dropout", "GELU", "Identity", "Flatten")

# Small models. "patch": the patch stem and downsampling layers, two SDTA encoders in the third stage, the
# positional encoding in the second and third, three uneven channel groups (10, 10, 8) in the third stage and four
# in the last, the pool-then-norm head. "rw": edgenext_small_rw's options (an overlapping 9x9 stem, strided and
# widening first blocks, no convolution biases) with uneven groups (11, 11, 10) and the norm-first head.
SMALL = {
    "patch": dict(dims=(8, 16, 28, 36), depths=(1, 2, 3, 2), global_block_counts=(0, 1, 2, 1), heads=(2, 2, 4, 4),
                  d2_scales=(2, 2, 3, 4), use_pos_emb=(False, True, True, False), num_classes=10),
    "rw": dict(dims=(8, 16, 32, 64), depths=(1, 2, 2, 2), heads=(2, 2, 2, 4), d2_scales=(2, 2, 3, 4),
               downsample_block=True, conv_bias=False, stem_type="overlap", head_norm_first=True, num_classes=10),
}
SIZE = (45, 39)
# random values for every parameter of a timm model: its unit norms and temperatures, zero biases and 1e-6 layer
# scales would hide bugs
randomize = partial(randomize_parameters, scales=("gamma", "gamma_xca", "temperature"))


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_edgenext.EdgeNeXt(**config), seed)
    ours = edgenext.EdgeNeXt(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_variant_configurations_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration, keyword arguments overriding it as in timm, and
    the class has timm's default_cfg."""
    ours_calls = capture_builder(monkeypatch, edgenext, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_edgenext, "build_model_with_cfg")
    for name in NAMES:
        for kwargs in ({}, dict(depths=(1, 1, 1, 1), drop_rate=0.1)):
            getattr(edgenext, name)(**kwargs)
            getattr(timm_edgenext, name)(**kwargs)
    assert len(ours_calls) == len(timm_calls) == 2 * len(NAMES)
    for i, ((ours_cls, config), (_, expected)) in enumerate(zip(ours_calls, timm_calls)):
        name = NAMES[i // 2]
        expected = {k: v for k, v in expected.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
        assert config.pop("progress") is True and config == expected, name
        cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}


@pytest.mark.parametrize("name", ["edgenext_xx_small", "edgenext_small_rw"])
def test_layout_matches_timm(name, monkeypatch):
    """A variant with fewer blocks (full widths, heads and channel groups; the depths are checked above) against
    timm's on the meta device: state_dict keys in order, shapes and dtypes, module names, the printout of every
    layer, feature_info, num_features, head_hidden_size and default_cfg."""
    with torch.device("meta"):
        reference = timm.create_model(name, depths=(1, 2, 2, 2))
    skip_random_init(monkeypatch)
    monkeypatch.setattr(edgenext, "trunc_normal_tf_", lambda tensor, std=0.02: tensor)
    check_layout(models.create_model(name, depths=(1, 2, 2, 2)), reference, (), PRINTED, types=True)


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm, drawn in timm's order (the layers' default inits, then
    TensorFlow-style truncated normals for every convolution and linear layer, the head's scaled by
    head_init_scale): norms, layer scales, temperatures and biases bit for bit, the truncated normals within 2
    float32 ulps; both generators end in step; the same module tree."""
    for seed, kind in enumerate(SMALL):
        config = {**SMALL[kind], "head_init_scale": 0.3, "ls_init_value": 0.5}
        reference, ours = check_seeded_init(lambda: timm_edgenext.EdgeNeXt(**config),
                                            lambda: edgenext.EdgeNeXt(**config), seed, conv_and_linear_weights, kind)
        check_structure(ours, reference)
        assert ours.feature_info == reference.feature_info


def test_positional_encoding_matches_timm():
    """The Fourier positional encoding (projected, float32) equals timm's EdgeNeXt one for square and oblong grids
    and a batch of 2, within float32 rounding."""
    reference, ours = small_pair("patch", seed=1)
    timm_encoding = reference.stages[1].blocks[1].pos_embd
    ours_encoding = ours.stages[1].blocks[1].pos_embd
    for height, width in ((6, 5), (1, 3), (8, 8)):
        with torch.no_grad():
            expected = timm_encoding((2, height, width)).numpy()
        with engine.no_grad():
            out = ours_encoding(2, height, width).numpy()
        assert out.shape == expected.shape == (2, 16, height, width)
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd image size (45 x 39: every stride floors, the last stage 1 x 1 or
    2 x 2), timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=2)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=3))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


def share_fourier_features(reference, ours):
    """Give each of our positional encodings the Fourier features its timm counterpart computed last (both compute
    them in float32, where the engine's sines and cosines may differ from torch's by an ulp)."""
    pairs = zip([m for m in reference.modules() if isinstance(m, timm_edgenext.PositionalEncodingFourier)],
                [m for m in ours.modules() if isinstance(m, edgenext.PositionalEncodingFourier)])
    for timm_encoding, ours_encoding in pairs:
        seen = []
        timm_encoding.token_projection.register_forward_pre_hook(lambda m, inputs, seen=seen: seen.append(inputs[0]))
        ours_encoding.fourier_features = (lambda height, width, device=None, seen=seen:
                                          engine.from_numpy(seen[-1][:1].numpy()).to(device or "cpu"))


@pytest.mark.parametrize("kind", list(SMALL))
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (with timm's
    Fourier features, see ``share_fourier_features``)."""
    reference, ours = small_pair(kind, seed=4)
    reference, ours = reference.double().train(), ours.double().train()
    share_fourier_features(reference, ours)
    check_train_step(reference, ours, image_batch(2, 37, 35, seed=5).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth rising stage by stage as timm's (0 in the first stage, the rate in the last; each SDTA
    encoder draws twice) and dropout before the classifier: in eval mode nothing is dropped; in train mode both
    draw timm's masks after the same seed, others after another."""
    reference, ours = small_pair("patch", seed=6, drop_path_rate=0.5, drop_rate=0.3)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.5 * i / 7 for i in range(1, 8)])
    assert isinstance(ours.stages[0].blocks[0].drop_path, engine.nn.Identity) and ours.head.drop.p == 0.3
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7), TOL, TOL)


def test_norm_first_head_api_matches_timm():
    """The norm-first head: pre-logits features of a model built with ``num_classes=0``, reset_classifier to other
    pooling and size, and no pooling (the normalised map), as timm's; the model's ``global_pool`` follows."""
    reference, ours = small_pair("rw", seed=8)
    headless = edgenext.EdgeNeXt(**{**SMALL["rw"], "num_classes": 0}).eval()
    check_head_api(reference, ours, headless, image_batch(2, *SIZE, seed=9), 64, (2, 64, 2, 2))
    assert reference.global_pool == "catavgmax" and ours.global_pool == ""


def test_pool_then_norm_head_and_reset_classifier_match_timm():
    """The pool-then-norm head: pre-logits features (with 'avgmax' pooling), then reset_classifier to a new size,
    with ``reset_other`` (dropping its norm) and to other pooling, each time with timm's new weights loaded, as
    timm's (the model's ``global_pool`` following). Pooling that widens the features is refused."""
    x = image_batch(2, *SIZE, seed=10)
    reference, ours = small_pair("patch", seed=11, global_pool="avgmax")
    out, expected = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 36) and ours.head_hidden_size == reference.head_hidden_size == 36
    assert_close(out, expected, TOL)
    for args in ((5,), (3, None, True), (4, "max")):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        check_structure(ours, reference)
        assert ours.global_pool == reference.global_pool and ours.num_classes == reference.num_classes
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 4) and ours.global_pool == "max"
    with pytest.raises(ValueError, match="catavgmax"):
        edgenext.EdgeNeXt(**SMALL["patch"], global_pool="catavgmax")


def test_in_chans_and_bad_arguments():
    """A one-channel model matches timm's; an unknown stem type and an unknown intermediates format are refused, as
    timm refuses them."""
    reference, ours = small_pair("rw", seed=12, in_chans=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=13, c=1))
    assert_close(out, expected, TOL)
    with pytest.raises(AssertionError):
        timm_edgenext.EdgeNeXt(stem_type="conv")
    with pytest.raises(ValueError, match="stem_type"):
        edgenext.EdgeNeXt(stem_type="conv")
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(image_batch(1, 32, 32, c=1)), output_fmt="NHWC")


@pytest.mark.parametrize("out_indices", [None, (0, -1)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's taps (the four stages by default, or ``out_indices``),
    its flattened module names and state_dict keys (``stem_0``, ``stages_1``), its feature_info and feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    config = {**SMALL["rw"], "num_classes": 1000}
    torch.manual_seed(14)
    reference = timm_edgenext.edgenext_small_rw(features_only=True, **config, **kwargs)
    reference = randomize(reference, 14).eval()
    ours = models.create_model("edgenext_small_rw", features_only=True, **config, **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=15), 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's: every stage, the last n with norm_pre on the last stage, a list, stopping
    early (no norm_pre then); prune_intermediate_layers leaves timm's stages and widths, no norm_pre and no head:
    the second stage's map."""
    reference, ours = small_pair("rw", seed=16)
    x = image_batch(2, *SIZE, seed=17)
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, norm=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, 1], stop_early=True)
    check_intermediates(reference, ours, x, TOL, indices=[2], intermediates_only=True)
    assert ours.prune_intermediate_layers([0, 1]) == reference.prune_intermediate_layers([0, 1]) == [0, 1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 6, 5)
    assert_close(out, expected, TOL)


def test_list_models():
    """The registry lists exactly timm's EdgeNeXts with ImageNet-1k weights under the ``edgenext`` module."""
    assert models.list_models(module="edgenext") == NAMES
    pretrained_1k = {tag.split(".")[0] for tag in timm.list_pretrained("edgenext_*")
                     if timm.models.get_pretrained_cfg(tag).num_classes == 1000}
    assert set(NAMES) == pretrained_1k
