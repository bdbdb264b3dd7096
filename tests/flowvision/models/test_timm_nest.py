"""timm parity of NesT (timm's ``nest`` module: nest_tiny_jx, nest_small_jx, nest_base_jx and the untrained
nest_tiny, nest_small, nest_base): every variant's
configuration and layout (on the meta device), seeded initialisation (with and without timm's 'nlhb' head bias);
eval outputs (float32) of small models covering every option (three levels with PyTorch padding, two levels with
TensorFlow "same" padding, per-level and shared widths, no qkv bias), float64 train-mode outputs and gradients, all
with timm's weights loaded; stochastic depth and the three dropouts with timm's masks; and the timm API (pre-logits,
pooling, reset_classifier, in_chans, features_only, forward_intermediates, prune_intermediate_layers, bad arguments
and inputs, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.nest as timm_nest
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import nest
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_fixed_size_config, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, conv_and_linear_weights, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["nest_base", "nest_base_jx", "nest_small", "nest_small_jx", "nest_tiny", "nest_tiny_jx"]
# the variants timm publishes no weights for
UNTRAINED = {"nest_base", "nest_small", "nest_tiny"}
TOL = 1e-4
PRINTED = ("Conv2d", "Linear", "LayerNorm", "GELU", "MaxPool2d", "MaxPool2dSame", "Dropout", "Identity", "Flatten",
           "AdaptiveAvgPool2d")

# Small models on 2-pixel patches. "torch": three levels on 32 x 32 images (16 blocks of 4 x 4 tokens; maps 16, 8
# and 4 wide), padded as PyTorch. "jax": two levels of one shared width on 24 x 24 images (4 blocks of 6 x 6 tokens;
# maps 12 and 6 wide), padded as TensorFlow ("same": max pooling pads only the right and bottom), no qkv bias.
SMALL = {
    "torch": dict(img_size=32, patch_size=2, embed_dims=(8, 16, 16), num_heads=(1, 2, 2), depths=(1, 1, 2),
                  num_classes=10, drop_path_rate=0.0),
    "jax": dict(img_size=24, patch_size=2, num_levels=2, embed_dims=12, num_heads=(2, 3), depths=(1, 2), mlp_ratio=2,
                qkv_bias=False, pad_type="same", num_classes=10, drop_path_rate=0.0),
}
# random values for every parameter of a timm model: its unit norms, zero biases and small position embeddings would
# hide bugs
randomize = partial(randomize_parameters, tokens=("pos_embed",))


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_nest.Nest(**config), seed)
    ours = nest.Nest(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def images(kind, seed, n=2, c=3):
    """A seeded batch of ``n`` images of the size the ``kind`` model takes."""
    size = SMALL[kind]["img_size"]
    return image_batch(n, size, size, seed=seed, c=c)


def test_variant_configurations_and_layout_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration with timm's 224-pixel image size (TensorFlow
    padding for the JAX models, PyTorch padding for the untrained ones), and the class has timm's default_cfg; every
    variant has timm's layout on the meta device: state_dict keys in order, shapes and dtypes, module names, the
    printout of every layer, feature_info, num_features and head_hidden_size."""
    for name in NAMES:
        ours_calls = capture_builder(monkeypatch, nest, "build_model")
        timm_calls = capture_builder(monkeypatch, timm_nest, "build_model_with_cfg")
        getattr(nest, name)()
        getattr(timm_nest, name)()
        monkeypatch.undo()
        check_fixed_size_config(name, ours_calls[0], timm_calls[0])
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_nest, "trunc_normal_", lambda tensor, **kwargs: tensor)  # slow on the meta device
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        check_layout(models.create_model(name), reference, (), PRINTED)


def test_seeded_init_follows_timm():
    """From the same seed, timm's initial weights: the position embeddings', linear layers' and convolutions'
    truncated normals within 2 float32 ulps, zero biases (the classifier's -log(classes) with 'nlhb'), unit norms;
    both generators end in step."""
    drawn = lambda model: conv_and_linear_weights(model) | {k for k in model.state_dict() if k.endswith("pos_embed")}
    for seed, (kind, weight_init) in enumerate((("torch", ""), ("jax", "nlhb"))):
        config = {**SMALL[kind], "weight_init": weight_init}
        reference, ours = check_seeded_init(lambda: timm_nest.Nest(**config), lambda: nest.Nest(**config), seed,
                                            drawn, weight_init)
        assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, expected = both_outputs(reference, ours, images(kind, 2))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


def test_train_outputs_and_gradients_match_timm():
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (TensorFlow-padded
    pooling)."""
    reference, ours = small_pair("jax", seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, images("jax", 4).astype(np.float64))


def test_drop_path_and_dropouts_only_in_training():
    """Stochastic depth rising layer by layer as timm's (none in the first layer), attention, projection and MLP
    dropout and dropout before the classifier: in eval mode nothing is dropped; in train mode both draw timm's masks
    after the same seed, others after another."""
    drops = dict(drop_path_rate=0.5, drop_rate=0.3, proj_drop_rate=0.2, attn_drop_rate=0.1)
    reference, ours = small_pair("torch", seed=5, **drops)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.5 * i / 3 for i in range(1, 4) for _ in range(2)])
    check_dropout_only_in_training(reference, ours, images("torch", 6), TOL, TOL)


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits features, also from a model built with ``num_classes=0``; reset_classifier to other pooling and
    size and to no pooling (the final map), as timm's; a one-channel model matches timm's; an image of another size
    than the model's, non-square images, other weight inits, per-level values of the wrong length, a patch grid the
    blocks do not tile and an unknown intermediates format are refused."""
    reference, ours = small_pair("jax", seed=7, in_chans=1)
    x = images("jax", 8, c=1)
    pre, expected = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 12) and ours.head_hidden_size == 12
    assert_close(pre, expected, TOL)
    headless = nest.Nest(**{**SMALL["jax"], "in_chans": 1, "num_classes": 0})
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    with engine.no_grad():
        assert_close(headless.eval()(engine.from_numpy(x)).numpy(), expected, TOL)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    reference.reset_classifier(7, "catavgmax")
    ours.reset_classifier(7, "catavgmax")
    assert ours.head_hidden_size == reference.head_hidden_size == 24 and ours.num_classes == 7
    ours.load_state_dict(numpy_state(reference))
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 7)
    assert_close(out, expected, TOL)
    ours.reset_classifier(0, "")
    reference.reset_classifier(0, "")
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 12, 6, 6)
    assert_close(out, expected, TOL)
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 32, 32, c=1)))
    bad_arguments = [(dict(img_size=(24, 32)), "square"), (dict(weight_init="jax"), "weight_init"),
                     (dict(depths=(1, 2, 3)), "depths"), (dict(img_size=22), "split into 2 blocks"),
                     (dict(img_size=25), "patch_size")]
    for change, message in bad_arguments:
        with pytest.raises(ValueError, match=message):
            nest.Nest(**{**SMALL["jax"], **change})
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")


def test_features_only_matches_timm():
    """features_only through the entrypoints' builder: timm's taps (the three levels by default, or
    ``out_indices``), its flattened module names and state_dict keys (``patch_embed``, ``levels_1``), its
    feature_info and feature maps."""
    x = images("torch", 10)
    config = {**SMALL["torch"], "num_classes": 1000}
    for out_indices in (None, (1,)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(11)
        reference = timm_nest._create_nest("nest_tiny_jx", features_only=True, **config, **kwargs)
        reference = randomize(reference, 11).eval()
        ours = nest._nest("nest_tiny_jx", False, True, dict(config, features_only=True, **kwargs))
        assert type(ours) is FlatFeatureListNet
        assert list(ours.state_dict()) == list(reference.state_dict())
        assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
        ours.load_state_dict(numpy_state(reference))
        check_feature_maps(reference, ours, x, 3 if out_indices is None else 1, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's: every level, the last n with the final norm, a list, stopping early;
    prune_intermediate_layers leaves timm's levels, widths and classifier-free head: the second level's map."""
    reference, ours = small_pair("torch", seed=12)
    x = images("torch", 13)
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, norm=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, 1], stop_early=True, intermediates_only=True)
    assert ours.prune_intermediate_layers([0, 1]) == reference.prune_intermediate_layers([0, 1]) == [0, 1]
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 8, 8)
    assert_close(out, expected, TOL)


def test_list_models():
    """The registry lists exactly timm's NesTs under the ``nest`` module: those with ImageNet-1k weights (the JAX
    ones) and the untrained nest_base, nest_small and nest_tiny, registered too."""
    names = models.list_models(module="nest")
    assert names == NAMES == timm.list_models(module="nest")
    pretrained_1k = {tag.split(".")[0] for tag in timm.list_pretrained("nest_*")
                     if timm.models.get_pretrained_cfg(tag).num_classes == 1000}
    assert set(NAMES) - UNTRAINED == pretrained_1k
