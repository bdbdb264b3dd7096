"""timm parity of FocalNet (timm's ``focalnet`` module: focalnet_tiny/small/base, _srf and _lrf, and the
ImageNet-22k focalnet_large/xlarge/huge, _fl3 and _fl4): every variant's configuration, the layouts of a small and a
large model and of the post-norm large and huge ones against timm's on the meta device, seeded initialisation; eval
outputs (float32) of small models covering every option (per-stage focal levels and windows, pre- and post-norm
blocks, the norm inside the modulation, the normalised modulator, layer scales, overlapping downsampling, both
heads) and float64 train-mode outputs and gradients, all with timm's weights loaded; stochastic depth and dropout;
and the timm API (pre-logits, pooling, reset_classifier, in_chans, features_only, forward_intermediates,
prune_intermediate_layers, bad arguments, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.focalnet as timm_focalnet
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import focalnet
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_head_api, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, conv_and_linear_weights, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["focalnet_base_lrf", "focalnet_base_srf", "focalnet_small_lrf", "focalnet_small_srf", "focalnet_tiny_lrf",
         "focalnet_tiny_srf"]
# the paper's ImageNet-22k models (timm's weights have 21842 classes)
FL_NAMES = ["focalnet_huge_fl3", "focalnet_huge_fl4", "focalnet_large_fl3", "focalnet_large_fl4", "focalnet_xlarge_fl3",
            "focalnet_xlarge_fl4"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm2d", "Linear", "Dropout", "GELU", "Tanh", "Identity", "LayerScale2d", "Flatten")

# Small models: 8 channels at the stem, stages of 1, 2, 1, 1 blocks with per-stage focal levels (1 to 3) and
# windows; "post_norm" has timm's large-model options (overlapping downsampling, post-norms in the blocks and the
# modulation, the normalised modulator, layer scales) and the hidden-layer head.
BASE = dict(embed_dim=8, depths=(1, 2, 1, 1), focal_levels=(2, 3, 1, 2), focal_windows=(3, 5, 3, 1), num_classes=10,
            drop_path_rate=0.0)
SMALL = {
    "pre_norm": dict(),
    "post_norm": dict(use_overlap_down=True, use_post_norm=True, use_post_norm_in_modulation=True,
                      normalize_modulator=True, layerscale_value=0.5, head_hidden_size=12),
}
SIZE = (45, 39)
# random values for every parameter of a timm model: its unit norms, zero biases and layer scales would hide bugs
randomize = partial(randomize_parameters, scales=("gamma",))


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = {**BASE, **SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_focalnet.FocalNet(**config), seed)
    ours = focalnet.FocalNet(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_variant_configurations_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration (with keyword arguments passed on as in timm), and
    the class has timm's default_cfg."""
    ours_calls = capture_builder(monkeypatch, focalnet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_focalnet, "build_model_with_cfg")
    for name in NAMES + FL_NAMES:
        getattr(focalnet, name)(drop_rate=0.1)
        getattr(timm_focalnet, name)(drop_rate=0.1)
    assert len(ours_calls) == len(timm_calls) == len(NAMES + FL_NAMES)
    for name, (ours_cls, config), (_, expected) in zip(NAMES + FL_NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in expected.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
        assert config.pop("progress") is True and config == expected, name
        cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}
    with pytest.raises(TypeError):
        focalnet.focalnet_tiny_srf(depths=(1, 1, 1, 1))
    with pytest.raises(TypeError):
        focalnet.focalnet_huge_fl3(use_post_norm=False)


@pytest.mark.parametrize("name", ["focalnet_tiny_srf", "focalnet_base_lrf", "focalnet_large_fl3", "focalnet_huge_fl4"])
def test_layout_matches_timm(name, monkeypatch):
    """A variant's configuration with one block a stage (full widths and focal levels; the depths are checked above) and
    the classes of its weights against timm's on the meta device: state_dict keys in order, shapes and dtypes, module
    names, the printout of every layer, feature_info, num_features, head_hidden_size and default_cfg."""
    timm_calls = capture_builder(monkeypatch, timm_focalnet, "build_model_with_cfg")
    getattr(timm_focalnet, name)()
    config = {k: v for k, v in timm_calls[0][1].items() if k not in ("pretrained_filter_fn", "feature_cfg")}
    config["depths"] = (1, 1, 1, 1)
    config["num_classes"] = timm.models.get_pretrained_cfg(name).num_classes
    with torch.device("meta"):
        reference = timm_focalnet.FocalNet(**config)
    reference.pretrained_cfg = timm.models.get_pretrained_cfg(name).to_dict()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(focalnet, "trunc_normal_", lambda tensor, std=0.02: tensor)
    check_layout(focalnet.FocalNet(**config), reference, (), PRINTED)


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm, drawn in timm's order (the layers' default inits, then
    truncated normals for every convolution and linear layer, the classifier scaled by head_init_scale): norms,
    layer scales and biases bit for bit, the truncated normals within 2 float32 ulps; both generators end in step;
    the same module tree."""
    for seed, kind in enumerate(SMALL):
        config = {**BASE, **SMALL[kind], "head_init_scale": 0.3}
        reference, ours = check_seeded_init(lambda: timm_focalnet.FocalNet(**config),
                                            lambda: focalnet.FocalNet(**config), seed, conv_and_linear_weights, kind)
        check_structure(ours, reference)
        assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd image size (45 x 39: every stride floors), timm's weights loaded
    through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("kind", list(SMALL))
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's."""
    reference, ours = small_pair(kind, seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, 37, 35, seed=4).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth rising block by block as timm's (0 at the first block, the rate at the last) and dropout
    before the classifier: in eval mode nothing is dropped; in train mode both draw timm's masks after the same
    seed, others after another. The projections' and MLPs' dropout has timm's rates and draws timm's masks too, in
    pre-norm and post-norm blocks: their maps are channels-last in torch's memory (the convolutions and residual
    sums keep a channels-last operand's layout), and so in ours."""
    reference, ours = small_pair("pre_norm", seed=5, drop_path_rate=0.5, drop_rate=0.3)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.125, 0.125, 0.25, 0.25, 0.375, 0.375, 0.5, 0.5])
    assert isinstance(ours.layers[0].blocks[0].drop_path1, engine.nn.Identity)
    x = image_batch(2, *SIZE, seed=6)
    check_dropout_only_in_training(reference, ours, x, TOL, TOL)
    for kind in ("pre_norm", "post_norm"):
        reference, ours = small_pair(kind, seed=5, proj_drop_rate=0.2)
        assert check_drop_rates(reference, ours) == []
        assert [m.p for m in ours.modules() if isinstance(m, engine.nn.Dropout)].count(0.2) == 3 * 5
        check_dropout_only_in_training(reference, ours, x, TOL, TOL)


def test_head_api_matches_timm():
    """Pre-logits features of a model built with ``num_classes=0``, reset_classifier to other pooling and size, and
    no pooling (the normalised map), as timm's."""
    reference, ours = small_pair("pre_norm", seed=7)
    headless = focalnet.FocalNet(**{**BASE, "num_classes": 0}).eval()
    check_head_api(reference, ours, headless, image_batch(2, *SIZE, seed=8), 64, (2, 64, 1, 1))


def test_hidden_layer_head_and_reset_classifier_match_timm():
    """The hidden-layer head (pool, norm, linear + tanh): pre-logits features, then reset_classifier to a new size,
    with ``reset_other`` (dropping its norm and hidden layer) and to other pooling, each time with timm's new
    weights loaded, as timm's."""
    reference, ours = small_pair("post_norm", seed=9)
    x = image_batch(2, *SIZE, seed=10)
    out, expected = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 12) and ours.head_hidden_size == 12
    assert_close(out, expected, TOL)
    for args in ((5,), (3, None, True), (4, "max")):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        check_structure(ours, reference)
        assert ours.head_hidden_size == reference.head_hidden_size and ours.num_classes == reference.num_classes
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 4) and ours.head_hidden_size == 64


def test_in_chans_and_bad_arguments():
    """A one-channel model matches timm's; an unknown pooling and an unknown intermediates format are refused, as
    timm refuses them."""
    reference, ours = small_pair("pre_norm", seed=11, in_chans=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=12, c=1))
    assert_close(out, expected, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        focalnet.FocalNet(**BASE, global_pool="bogus")
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(image_batch(1, 32, 32, c=1)), output_fmt="NHWC")


@pytest.mark.parametrize("out_indices", [None, (1, -1)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's taps (every stage by default, or ``out_indices``),
    its flattened module names and state_dict keys, its feature_info and its feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(13)
    reference = timm_focalnet._create_focalnet("focalnet_tiny_srf", features_only=True, **BASE, **kwargs)
    reference = randomize(reference, 13).eval()
    ours = focalnet._create_focalnet("focalnet_tiny_srf", False, True, features_only=True, **BASE, **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=14), 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's: every stage, the last n, a list with the final norm on the last stage, and
    stopping early (no final norm then); prune_intermediate_layers leaves timm's stages and widths, no final norm and
    no head: the third stage's map."""
    reference, ours = small_pair("pre_norm", seed=15)
    x = image_batch(2, *SIZE, seed=16)
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, norm=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, 2], stop_early=True)
    check_intermediates(reference, ours, x, TOL, indices=[1], intermediates_only=True)
    assert ours.prune_intermediate_layers([0, 2]) == reference.prune_intermediate_layers([0, 2]) == [0, 2]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 32
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 32, 2, 2)
    assert_close(out, expected, TOL)


def test_list_models():
    """The registry lists exactly timm's FocalNets under the ``focalnet`` module, each with published weights: the
    ImageNet-1k classifiers and the large to huge ImageNet-22k models."""
    assert models.list_models(module="focalnet") == sorted(NAMES + FL_NAMES)
    pretrained = {tag.split(".")[0]: timm.models.get_pretrained_cfg(tag).num_classes
                  for tag in timm.list_pretrained("focalnet_*")}
    assert set(pretrained) == set(NAMES + FL_NAMES)
    assert {name for name, num_classes in pretrained.items() if num_classes == 1000} == set(NAMES)
