"""timm parity of CoaT (coat_tiny/mini/small, coat_lite_tiny/mini/small/medium/medium_384): every variant's
configuration and layout (module tree with its shared position encodings and MLPs, class names, layer printouts,
state_dict keys, shapes and dtypes, feature_info), seeded initialisation, eval outputs (float32) of small models at
odd image sizes (patches cut off at the edges, a 1x1 last scale; serial blocks with factorized attention, the
convolutional position encoding and the relative one with timm's default windows and with custom ones; parallel
blocks resizing scales 2 to 4 into each other; the class-token and the average heads, the aggregation of CoaT's
three scales), float64 train-mode outputs and every gradient, all with timm's weights loaded; dropout and stochastic
depth (timm's rates and masks); and the timm API (pre-logits, pooling, reset_classifier, in_chans,
return_interm_layers, bad arguments, features_only, forward_intermediates, prune_intermediate_layers,
list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import coat as timm_coat

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import coat
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          features_only_pair, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["coat_tiny", "coat_mini", "coat_small", "coat_lite_tiny", "coat_lite_mini", "coat_lite_small",
         "coat_lite_medium", "coat_lite_medium_384"]
TOL = 1e-4
PRINTED = ("Conv1d", "Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "Identity")
TOKENS = ("cls_token1", "cls_token2", "cls_token3", "cls_token4")

# Small models, 16 to 32 channels wide. "lite": serial blocks only, timm's default 8 heads and relative-position
# windows {3: 2, 5: 3, 7: 3} (2-3 channels a head), fractional MLP ratio; 37x45 images give grids 9x11, 4x5, 2x2 and
# 1x1. "coat": two parallel blocks over scales 2 to 4 (one width), 4 heads in windows {3: 1, 5: 2, 7: 1}; 35x67
# images give grids 8x16, 4x8, 2x4 and 1x2 (each halving exactly, as the resizing needs).
SMALL = {
    "lite": dict(img_size=(37, 45), patch_size=4, embed_dims=(16, 16, 24, 32), serial_depths=(1, 2, 1, 1),
                 mlp_ratios=(2, 2, 1.5, 2), num_classes=5),
    "coat": dict(img_size=(35, 67), patch_size=4, embed_dims=(16, 24, 24, 24), serial_depths=(1, 1, 1, 1),
                 parallel_depth=2, num_heads=4, crpe_window={3: 1, 5: 2, 7: 1}, mlp_ratios=(2, 2, 2, 2),
                 num_classes=5),
}
DROPOUTS = dict(drop_rate=0.3, proj_drop_rate=0.2, attn_drop_rate=0.1, drop_path_rate=0.3)


def randomize(model, seed):
    """timm's model with random parameters (class tokens N(0, 1))."""
    return randomize_parameters(model, seed, tokens=TOKENS)


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's random weights loaded in ours, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_coat.CoaT(**config), seed).eval()
    ours = coat.CoaT(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def image(kind, seed, c=3):
    """A batch of 2 images of the size of the small ``kind`` model."""
    return image_batch(2, *SMALL[kind]["img_size"], seed=seed, c=c)


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys (the shared
    encodings and MLPs under each of their names), order, shapes, dtypes, module tree and class names, layer
    printouts, feature_info, num_features and default_cfg (timm's built on the meta device, neither initialised)."""
    ours_calls = capture_builder(monkeypatch, coat, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_coat, "build_model_with_cfg")
    for name in NAMES:
        getattr(coat, name)()
        getattr(timm_coat, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs.pop("progress") is True
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(coat, "trunc_normal_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(timm_coat, "trunc_normal_", lambda tensor, std=1.0: tensor)
    monkeypatch.setattr(timm_coat.CoaT, "_init_weights", lambda self, m: None)
    for layer in (torch.nn.Linear, torch.nn.Conv2d, torch.nn.Conv1d):
        monkeypatch.setattr(layer, "reset_parameters", lambda self: None)
    for name in NAMES:
        reference = timm.create_model(name, device="meta")
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (linear weights and class tokens within 2 float32 ulps: the
    engine's erfinv rounds differently from torch's; convolutions, the aggregation, biases and norms bit for bit) and
    leaves both random streams in step."""
    def truncated(model):
        linear = {f"{n}.weight" for n, m in model.named_modules(remove_duplicate=False)
                  if isinstance(m, torch.nn.Linear)}
        return linear | set(TOKENS)

    reference, ours = check_seeded_init(lambda: timm_coat.CoaT(**SMALL["coat"]), lambda: coat.CoaT(**SMALL["coat"]),
                                        3, truncated)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits and pre-logits of a batch of 2 at an odd size, timm's weights loaded through numpy; the
    'avg' head too."""
    reference, ours = small_pair(kind, seed=1)
    x = image(kind, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    reference.global_pool = ours.global_pool = "avg"
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 32 if kind == "lite" else 24)
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode (no dropout), with parallel blocks: outputs, input gradient and every parameter's
    gradient (the shared encodings' and MLP's summed over their uses) equal timm's."""
    reference, ours = small_pair("coat", seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image("coat", seed=5).astype(np.float64))


def test_dropout_and_drop_path_follow_timm():
    """timm's rates (every block's stochastic depth drop_path_rate, the unused attention-dropout slots kept); eval
    outputs drop nothing; in train mode the same seed draws timm's masks in serial and parallel blocks, another seed
    others."""
    reference, ours = small_pair("coat", seed=6, **DROPOUTS)
    assert set(check_drop_rates(reference, ours)) == {0.3}
    check_dropout_only_in_training(reference, ours, image("coat", seed=7))


def test_head_api_in_chans_and_bad_arguments():
    """in_chans=1 and a single relative-position window match timm; reset_classifier changes the classes and
    pooling as timm's; return_interm_layers gives timm's dict of maps and no head; bad poolings, relative-position
    windows, unequal parallel widths and other image sizes are refused (timm asserts)."""
    reference, ours = small_pair("lite", seed=8, in_chans=1, crpe_window=5)
    x = image("lite", seed=9, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    assert ours.get_classifier() is ours.head and ours.head_hidden_size == ours.num_features == 32
    reference.reset_classifier(3, "avg")
    ours.reset_classifier(3, "avg")
    ours.head.load_state_dict(numpy_state(reference.head))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 3) and not ours.head.training and ours.global_pool == "avg"
    assert_close(out, ref, TOL)
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
    reference, ours = small_pair("coat", seed=10, return_interm_layers=True, out_features=["x1_nocls", "x3_nocls"])
    assert not hasattr(ours, "head") and ours.aggregate is None
    x = image("coat", seed=11)
    assert list(ours(engine.from_numpy(x))) == list(reference(torch.from_numpy(x))) == ["x1_nocls", "x3_nocls"]
    out, ref = both_outputs(reference, ours, x, lambda m, t: list(m(t).values()))
    assert [o.shape for o in out] == [(2, 16, 8, 16), (2, 24, 2, 4)]
    for o, r in zip(out, ref):
        assert_close(o, r, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        coat.CoaT(**SMALL["lite"], global_pool="max")
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(3, "max")
    with pytest.raises(ValueError, match="window"):
        coat.CoaT(**SMALL["lite"], crpe_window=[3, 5])
    with pytest.raises(ValueError, match="one width"):
        coat.CoaT(**SMALL["coat"] | dict(embed_dims=(16, 24, 24, 32)))
    with pytest.raises(ValueError, match="doesn't match"):
        ours(engine.zeros(1, 3, 36, 67))


@pytest.mark.parametrize("name, kind, out_indices", [("coat_lite_tiny", "lite", None), ("coat_tiny", "coat", (1, 3))])
def test_features_only_matches_timm(name, kind, out_indices):
    """features_only through the entrypoints' builder: timm's getter (all four scales by default) with the model
    under ``model.``, its final norms and head dropped, and timm's (N, C, H, W) maps and feature_info (scales 2 to 4
    of CoaT taken after the parallel blocks)."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    reference, ours = features_only_pair(name, randomize, 12, **SMALL[kind], **kwargs)
    assert type(ours) is FeatureGetterNet
    check_feature_maps(reference, ours, image(kind, seed=13), 4 if out_indices is None else 2, TOL)


def test_intermediates_and_pruning_match_timm():
    """forward_intermediates with and without the final norms, stopping early (CoaT-Lite stops after the last scale
    picked; CoaT's parallel blocks need all four scales), and the final features; prune_intermediate_layers drops the
    later scales, the parallel blocks (when only scale 1 is kept), the norms and the head, as timm's."""
    for kind in SMALL:
        reference, ours = small_pair(kind, seed=14)
        x = image(kind, seed=15)
        for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 2], stop_early=True)):
            check_intermediates(reference, ours, x, TOL, **kwargs)
        assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
        assert list(ours.state_dict()) == list(reference.state_dict())
        assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
        assert ours.num_features == reference.num_features
        out, ref = both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))
        for o, r in zip(out if kind == "coat" else [out], ref if kind == "coat" else [ref]):
            assert_close(o, r, TOL)
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    assert ours.parallel_blocks is None and ours.patch_embed2 is None and ours.num_features == 16
    assert list(ours.state_dict()) == list(reference.state_dict())
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module."""
    names = models.list_models(module="coat")
    assert sorted(names) == sorted(timm.list_models(module="coat")) == sorted(NAMES)
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("coat_*")}
