"""timm parity of InceptionNeXt (timm's ``inception_next`` module: inception_next_atto, tiny, small and base): every
variant's configuration, the layout of two variants against timm's on the meta device, seeded initialisation; eval
outputs (float32) of small models covering every block and option (atto's and the default Inception token mixers,
per-stage MLP ratios, layer scales or none, dilated stages with "same"-padded downsampling) and float64 train-mode
outputs, gradients and BatchNorm statistics, all with timm's weights loaded; stochastic depth and dropout with
timm's masks; and the timm API (the MLP head's pre-logits, pooling, reset_classifier with and without its MLP,
in_chans, features_only, forward_intermediates, prune_intermediate_layers, bad arguments, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.inception_next as timm_inception_next
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import inception_next
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_structure,
                          check_train_step, conv_and_linear_weights, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["inception_next_atto", "inception_next_base", "inception_next_small", "inception_next_tiny"]
TOL = 1e-4
PRINTED = ("Conv2d", "Conv2dSame", "BatchNorm2d", "Linear", "LayerNorm", "GELU", "Dropout", "Identity")

# Small models. "atto": atto's mixer (5-pixel bands here, a quarter of the channels a branch), timm's MLP ratios,
# layer scales. "dilated": the default mixer (11-pixel bands, an eighth of the channels a branch), other MLP ratios
# per stage, no layer scales, output stride 8 (a "same"-padded Conv2dSame and a dilated downsampling convolution).
BASE = dict(depths=(1, 1, 2, 1), dims=(16, 24, 32, 40), num_classes=10)
SMALL = {
    "atto": dict(BASE, ls_init_value=0.5),
    "dilated": dict(BASE, mlp_ratios=(2, 2, 3, 2), ls_init_value=None, output_stride=8),
}
SIZE = (45, 39)
# random values for every parameter of a timm model (and BatchNorm statistics): its unit norms, zero biases and
# 1e-6 layer scales would hide bugs
randomize = partial(randomize_parameters, scales=("gamma",), norms=True)


def mixer(module, kind):
    """The token mixer of a ``kind`` small model, from timm's or our ``module``."""
    if kind == "atto":
        return partial(module.InceptionDWConv2d, band_kernel_size=5, branch_ratio=0.25)
    return module.InceptionDWConv2d


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_inception_next.MetaNeXt(token_mixers=mixer(timm_inception_next, kind), **config), seed)
    ours = inception_next.MetaNeXt(token_mixers=mixer(inception_next, kind), **config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def mixer_spec(token_mixer):
    """A token mixer (class or partial) as (class name, keywords), to compare timm's with ours."""
    if isinstance(token_mixer, partial):
        return token_mixer.func.__name__, token_mixer.keywords
    return token_mixer.__name__, {}


def test_variant_configurations_and_layout_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration (the same token mixers), keyword arguments
    overriding it as in timm, and the class has timm's default_cfg; inception_next_atto, and inception_next_base with
    fewer blocks, have timm's layout on the meta device: state_dict keys in order, shapes and dtypes, module names
    and classes, the printout of every layer, feature_info, num_features and head_hidden_size."""
    ours_calls = capture_builder(monkeypatch, inception_next, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_inception_next, "build_model_with_cfg")
    for name in NAMES:
        for kwargs in ({}, dict(depths=(1, 1, 1, 1), drop_rate=0.1)):
            getattr(inception_next, name)(**kwargs)
            getattr(timm_inception_next, name)(**kwargs)
    assert len(ours_calls) == len(timm_calls) == 2 * len(NAMES)
    for i, ((ours_cls, config), (_, expected)) in enumerate(zip(ours_calls, timm_calls)):
        name = NAMES[i // 2]
        expected = {k: v for k, v in expected.items() if k != "feature_cfg"}
        assert mixer_spec(config.pop("token_mixers")) == mixer_spec(expected.pop("token_mixers")), name
        assert config.pop("progress") is True and config == expected, name
        cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name, kwargs in (("inception_next_atto", {}), ("inception_next_base", dict(depths=(1, 1, 2, 1)))):
        with torch.device("meta"):
            reference = timm.create_model(name, **kwargs)
        check_layout(models.create_model(name, **kwargs), reference, (), PRINTED, types=True)


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm, drawn in timm's order (the layers' default inits, then
    truncated normals for every convolution and linear layer): norms, layer scales and biases bit for bit, the
    truncated normals within 2 float32 ulps; both generators end in step; the same module tree."""
    for seed, kind in enumerate(SMALL):
        reference, ours = check_seeded_init(
            lambda: timm_inception_next.MetaNeXt(token_mixers=mixer(timm_inception_next, kind), **SMALL[kind]),
            lambda: inception_next.MetaNeXt(token_mixers=mixer(inception_next, kind), **SMALL[kind]), seed,
            conv_and_linear_weights, kind)
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


def test_train_outputs_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's (dilated stages, no layer scales; the mixers' biases, which the BatchNorm after them
    removes, have only rounding noise as gradients: see check_train_step)."""
    reference, ours = small_pair("dilated", seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, 37, 33, seed=4).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth rising block by block as timm's (none in the first block) and the head's dropout: in eval
    mode nothing is dropped; in train mode both draw timm's masks after the same seed, others after another."""
    reference, ours = small_pair("atto", seed=5, drop_path_rate=0.5, drop_rate=0.3)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.5 * i / 4 for i in range(1, 5)])
    assert isinstance(ours.stages[0].blocks[0].drop_path, engine.nn.Identity) and ours.head.drop.p == 0.3
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=6), TOL, TOL)


def test_mlp_head_api_and_bad_arguments():
    """The MLP head as timm's: pre-logits features (its MLP's output, with 'catavgmax' pooling), a model built with
    ``num_classes=0``, reset_classifier to a new size, to other pooling of the same width, with ``reset_other``
    (removing the MLP), then to wider pooling, each time with timm's new weights loaded (the model's
    ``global_pool`` following); no pooling, and wider pooling while the MLP stays, are refused, as timm refuses
    them."""
    x = image_batch(2, *SIZE, seed=7)
    reference, ours = small_pair("atto", seed=8, global_pool="catavgmax")
    out, expected = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 120) and ours.head_hidden_size == reference.head_hidden_size == 120
    assert_close(out, expected, TOL)
    headless = inception_next.MetaNeXt(token_mixers=mixer(inception_next, "atto"),
                                       **{**SMALL["atto"], "num_classes": 0, "global_pool": "catavgmax"})
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc2")})
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), expected, TOL)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    for args in ((5,), (4, "catavgmax"), (3, "avg", True), (6, "catavgmax")):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        check_structure(ours, reference)
        assert (ours.global_pool, ours.num_classes, ours.head_hidden_size) == \
            (reference.global_pool, reference.num_classes, reference.head_hidden_size)
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 6) and ours.head_hidden_size == 80 and ours.get_classifier().in_features == 80
    _, ours = small_pair("atto", seed=8)
    with pytest.raises(AssertionError):
        timm_inception_next.MetaNeXt(**BASE, global_pool="")
    with pytest.raises(ValueError, match="pooling"):
        inception_next.MetaNeXt(**BASE, global_pool="")
    with pytest.raises(ValueError, match="reset_other"):
        ours.reset_classifier(3, "catavgmax")
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")


def test_in_chans_1_matches_timm():
    """A one-channel model matches timm's."""
    reference, ours = small_pair("dilated", seed=9, in_chans=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=10, c=1))
    assert_close(out, expected, TOL)


def test_features_only_matches_timm():
    """features_only through the entrypoints: timm's taps (the four stages by default, or ``out_indices``), its
    flattened module names and state_dict keys (``stem_0``, ``stages_1``), its feature_info and feature maps."""
    x = image_batch(2, *SIZE, seed=11)
    config = dict(depths=(1, 1, 2, 1), dims=(16, 24, 32, 40))
    for out_indices in (None, (0, -1)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(12)
        reference = randomize(timm_inception_next.inception_next_atto(features_only=True, **config, **kwargs), 12)
        ours = models.create_model("inception_next_atto", features_only=True, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        ours.load_state_dict(numpy_state(reference))
        check_feature_maps(reference.eval(), ours, x, 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's: every stage, the last n (``norm`` changes nothing), a list, stopping early;
    prune_intermediate_layers leaves timm's stages, widths and head (average pooling, no MLP, no classifier): the
    second stage's pooled features."""
    reference, ours = small_pair("dilated", seed=13)
    x = image_batch(2, *SIZE, seed=14)
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, norm=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, 1], stop_early=True, intermediates_only=True)
    assert ours.prune_intermediate_layers([0, 1]) == reference.prune_intermediate_layers([0, 1]) == [0, 1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 24
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 24)
    assert_close(out, expected, TOL)


def test_list_models():
    """The registry lists exactly timm's InceptionNeXts with ImageNet-1k weights under the ``inception_next``
    module."""
    assert models.list_models(module="inception_next") == NAMES == timm.list_models(module="inception_next")
    pretrained_1k = {tag.split(".")[0] for tag in timm.list_pretrained("inception_next_*")
                     if timm.models.get_pretrained_cfg(tag).num_classes == 1000}
    assert set(NAMES) == pretrained_1k
