"""timm parity of Global Context ViT (timm's ``gcvit`` module: gcvit_xxtiny, xtiny, tiny, small and base): every
variant's configuration, the layout of two variants against timm's on the meta device, seeded initialisation (the
default one and timm's optional linear re-initialisations); eval outputs (float32) of small models covering every
block and option (local and global window attention, global token generators with and without pooling, windows
from ``window_ratio`` and from ``window_size``, oblong images and windows, layer scales) and float64 train-mode
outputs and gradients, all with timm's weights loaded; stochastic depth and the four dropouts with timm's masks; and
the timm API (pre-logits, pooling, reset_classifier, in_chans, features_only, forward_intermediates,
prune_intermediate_layers, bad arguments and inputs, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.gcvit as timm_gcvit
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import gcvit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_head_api, check_intermediates, check_layout, check_seeded_init,
                          check_train_step, image_batch, numpy_state, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["gcvit_base", "gcvit_small", "gcvit_tiny", "gcvit_xtiny", "gcvit_xxtiny"]
TOL = 1e-4
# timm's no-op identity that ours leaves out: the squeeze-and-excitation's norm slot
PLACEHOLDERS = ("se.bn",)
PRINTED = ("Conv2d", "Linear", "LayerNorm", "LayerNorm2d", "GELU", "MaxPool2d", "Sigmoid", "Dropout", "Identity",
           "LayerScale")

# Small models on oblong 96 x 64 images (stage maps 24 x 16 down to 3 x 2). "ratio": windows from timm's default
# window_ratio (3 x 2, 3 x 2, 6 x 4, 3 x 2: global tokens pooled three, two, zero and zero times). "sized": explicit
# windows (6 x 4 in the first three stages, 3 x 2 in the last), layer scales and a narrower MLP, as gcvit_small.
IMAGE = (96, 64)
BASE = dict(img_size=IMAGE, embed_dim=8, depths=(2, 2, 2, 2), num_heads=(1, 2, 2, 4), num_classes=10)
SMALL = {
    "ratio": dict(BASE),
    "sized": dict(BASE, window_size=((6, 4), (6, 4), (6, 4), (3, 2)), layer_scale=0.5, mlp_ratio=2),
}
# random values for every parameter of a timm model: its unit norms, zero biases and small layer scales and
# position biases would hide bugs
randomize = partial(randomize_parameters, scales=("gamma",), tokens=("relative_position_bias_table",))


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_gcvit.GlobalContextVit(**config), seed)
    ours = gcvit.GlobalContextVit(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_variant_configurations_and_layout_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration, other keyword arguments added as in timm (ours
    also lets them override the configuration, where timm's entrypoints raise), and the class has timm's
    default_cfg; gcvit_xxtiny, and gcvit_small with fewer blocks (through the builder: timm's entrypoints refuse
    other depths), have timm's layout on the meta device: state_dict keys in order, shapes and dtypes, module
    names, the printout of every layer, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, gcvit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_gcvit, "build_model_with_cfg")
    for name in NAMES:
        for kwargs in ({}, dict(img_size=192, drop_rate=0.1)):
            getattr(gcvit, name)(**kwargs)
            getattr(timm_gcvit, name)(**kwargs)
    assert len(ours_calls) == len(timm_calls) == 2 * len(NAMES)
    for i, ((ours_cls, config), (_, expected)) in enumerate(zip(ours_calls, timm_calls)):
        name = NAMES[i // 2]
        assert config.pop("progress") is True and config == {k: v for k, v in expected.items() if k != "feature_cfg"}
        cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model("gcvit_xxtiny")
    check_layout(models.create_model("gcvit_xxtiny"), reference, PLACEHOLDERS, PRINTED)
    small_like = dict(depths=(1, 2, 3, 2), num_heads=(3, 6, 12, 24), embed_dim=96, mlp_ratio=2, layer_scale=1e-5)
    with torch.device("meta"):
        reference = timm_gcvit._create_gcvit("gcvit_small", **small_like)
    check_layout(gcvit._create_gcvit("gcvit_small", False, True, **small_like), reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm: PyTorch's default inits bit for bit, the position bias
    tables' truncated normals within 2 float32 ulps, and with ``weight_init`` 'vit' (Xavier-uniform linear layers,
    the MLPs' biases N(0, 1e-12)) or another scheme (N(0, 0.02^2) linear layers) re-drawn in timm's order; both
    generators end in step."""
    tables = lambda model: {k for k in model.state_dict() if k.endswith("relative_position_bias_table")}
    for seed, (kind, weight_init) in enumerate((("sized", ""), ("ratio", "vit"), ("ratio", "normal"))):
        config = {**SMALL[kind], "weight_init": weight_init}
        reference, ours = check_seeded_init(lambda: timm_gcvit.GlobalContextVit(**config),
                                            lambda: gcvit.GlobalContextVit(**config), seed, tables, weight_init)
        assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 oblong images, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *IMAGE, seed=2))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


def test_train_outputs_and_gradients_match_timm():
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (layer scales,
    explicit windows)."""
    reference, ours = small_pair("sized", seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, *IMAGE, seed=4).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropouts_only_in_training():
    """Stochastic depth rising block by block as timm's (none in the first block), attention,
    projection and MLP dropout and dropout before the classifier: in eval mode nothing is dropped; in train mode both
    draw timm's masks after the same seed, others after another."""
    drops = dict(drop_path_rate=0.5, drop_rate=0.3, proj_drop_rate=0.2, attn_drop_rate=0.1)
    reference, ours = small_pair("ratio", seed=5, **drops)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.5 * i / 7 for i in range(1, 8) for _ in range(2)])
    check_dropout_only_in_training(reference, ours, image_batch(2, *IMAGE, seed=6), TOL, TOL)


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits features of a model built with ``num_classes=0``, reset_classifier to other pooling and size and to
    no pooling (the last map), as timm's, the model's ``global_pool`` following; a one-channel model matches timm's;
    an image of another size than the model's, windows larger than a stage's map and an unknown intermediates format
    are refused."""
    x = image_batch(2, *IMAGE, seed=7)
    reference, ours = small_pair("ratio", seed=8)
    headless = gcvit.GlobalContextVit(**{**SMALL["ratio"], "num_classes": 0}).eval()
    check_head_api(reference, ours, headless, x, 64, (2, 64, 3, 2))
    assert reference.global_pool == "catavgmax" and ours.global_pool == ""
    reference, ours = small_pair("sized", seed=9, in_chans=1)
    out, expected = both_outputs(reference, ours, x[:, :1])
    assert_close(out, expected, TOL)
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 64, 64, c=1)))
    with pytest.raises(ValueError, match="window size"):
        gcvit.GlobalContextVit(**{**SMALL["ratio"], "window_size": 7})
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x[:1, :1]), output_fmt="NHWC")


def test_features_only_matches_timm():
    """features_only through the entrypoints' builder (timm's entrypoints refuse other depths): timm's taps (the
    four stages by default, or ``out_indices``), its flattened module names and state_dict keys (``stem``,
    ``stages_1``), its feature_info and feature maps."""
    x = image_batch(2, *IMAGE, seed=10)
    config = {**SMALL["sized"], "num_classes": 1000}
    for out_indices in (None, (1, -1)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(11)
        reference = timm_gcvit._create_gcvit("gcvit_xxtiny", features_only=True, **config, **kwargs)
        reference = randomize(reference, 11).eval()
        ours = gcvit._create_gcvit("gcvit_xxtiny", False, True, features_only=True, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        assert list(ours.state_dict()) == list(reference.state_dict())
        assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
        ours.load_state_dict(numpy_state(reference))
        check_feature_maps(reference, ours, x, 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's: every stage, the last n (``norm`` changes nothing), a list, stopping early;
    prune_intermediate_layers leaves timm's stages, widths and classifier-free head: the second stage's map."""
    reference, ours = small_pair("sized", seed=12)
    x = image_batch(2, *IMAGE, seed=13)
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, norm=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, 1], stop_early=True, intermediates_only=True)
    assert ours.prune_intermediate_layers([0, 1]) == reference.prune_intermediate_layers([0, 1]) == [0, 1]
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 12, 8)
    assert_close(out, expected, TOL)


def test_list_models():
    """The registry lists exactly timm's GCViTs with ImageNet-1k weights under the ``gcvit`` module."""
    assert models.list_models(module="gcvit") == NAMES == timm.list_models(module="gcvit")
    pretrained_1k = {tag.split(".")[0] for tag in timm.list_pretrained("gcvit_*")
                     if timm.models.get_pretrained_cfg(tag).num_classes == 1000}
    assert set(NAMES) == pretrained_1k
