"""timm parity of RepViT (repvit_m0_9/m1/m1_0/m1_1/m1_5/m2/m2_3/m3): every variant's configuration and full-size
layout on the meta device; seeded initialisation; float32 eval outputs of small models of both token mixers (the
re-parameterisable one with its BatchNorm and the legacy one), float64 train-mode outputs, gradients and BatchNorm
statistics, all with timm's randomised weights loaded; ``fuse()`` (the deploy form: same state_dict and outputs as
timm's fused model and as the unfused one); head dropout and the distilled heads; and the timm API (pre-logits,
num_classes=0, reset_classifier with and without distillation, pooling, in_chans, bad arguments, features_only,
forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import repvit as timm_repvit

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import repvit
from model_parity import (both_outputs, check_distilled_training, check_dropout_only_in_training, check_feature_maps,
                          check_intermediates, check_layout, check_seeded_init, check_train_step, image_batch,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["repvit_m0_9", "repvit_m1", "repvit_m1_0", "repvit_m1_1", "repvit_m1_5", "repvit_m2", "repvit_m2_3",
         "repvit_m3"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNorm1d", "Linear", "GELU", "ReLU", "Sigmoid", "Dropout")
# timm's identity slot that we leave out: the (absent) norm of squeeze-and-excitation
PLACEHOLDERS = (".se.bn",)

# Small models: four stages of 1, 2, 1 and 3 blocks (squeeze-and-excitation on alternate blocks, three
# downsampling blocks), narrow widths; the second has the legacy token mixer and per-stage expansion ratios. A
# 35x33 image gives 9x9 maps after the stem, then 5x5, 3x3 and 2x2 (odd sizes at every stride).
SMALL = {
    "plain": dict(embed_dim=(16, 24, 32, 40), depth=(1, 2, 1, 3), num_classes=7),
    "legacy": dict(embed_dim=(8, 16, 24, 32), depth=(2, 1, 1, 2), mlp_ratio=(2, 3, 2, 2), legacy=True,
                   num_classes=7),
}
SIZE = (35, 33)


def randomize(model, seed):
    """Random values for every parameter and every BatchNorm's statistics of a timm RepViT (its zero-initialised
    norm scales, zero biases and small heads would hide bugs)."""
    randomize_parameters(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.3)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


def check_tree(ours, reference):
    """The same state_dict keys (in order) and shapes, and the same module tree and class names, but for timm's
    Identity ``PLACEHOLDERS``, which we leave out."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    assert all(tuple(our_sd[k].shape) == tuple(v.shape) for k, v in ref_sd.items())
    expected = [(n, type(m).__name__) for n, m in reference.named_modules()
                if not (n.endswith(PLACEHOLDERS) and isinstance(m, torch.nn.Identity))]
    assert [(n, type(m).__name__) for n, m in ours.named_modules()] == expected


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's randomised weights loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize(timm_repvit.RepVit(**{**SMALL[kind], **kwargs}), seed).eval()
    ours = repvit.RepVit(**{**SMALL[kind], **kwargs})
    check_tree(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(repvit, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_repvit, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(repvit, name)()
        getattr(timm_repvit, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "feature_cfg"}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(repvit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights (PyTorch's default inits, constant norms, truncated-normal heads)
    and leaves both random streams in step."""
    check_seeded_init(lambda: timm_repvit.RepVit(**SMALL[kind]), lambda: repvit.RepVit(**SMALL[kind]), 3,
                      lambda reference: {"head.head.l.weight", "head.head_dist.l.weight"}, what=kind)


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits (the heads' average) and pre-logits of a batch of 2 at an odd size, timm's weights loaded
    through numpy."""
    reference, ours = small_pair(kind, seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, ours.num_features)
    assert_close(pre, pre_ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode (batch statistics in every BatchNorm, the heads' too): outputs, input gradient, every
    parameter's gradient and the updated running statistics equal timm's."""
    reference, ours = small_pair("plain", seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


@pytest.mark.parametrize("kind", list(SMALL))
def test_fuse_matches_timm(kind):
    """fuse() folds every ConvNorm, token mixer and the two heads as timm's does: the same module tree and
    state_dict (keys in order, values), the same outputs, and the outputs of the unfused model; train mode then
    gives them too (no BatchNorm is left)."""
    reference, ours = small_pair(kind, seed=6)
    x = image_batch(2, *SIZE, seed=7)
    before, _ = both_outputs(reference, ours, x)
    assert reference.fuse() is reference and ours.fuse() is ours
    check_tree(ours, reference)
    assert isinstance(ours.get_classifier(), engine.nn.Linear)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert_close(state[key].numpy(), value, 1e-6, what=key)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    assert_close(out, before, TOL)
    ours.train()
    assert_close(both_outputs(reference, ours, x)[0], before, TOL)


def test_headless_fuse_and_reset_classifier_like_timm():
    """A model without classes fuses its classifier into an identity (the pooled features), as timm's;
    reset_classifier drops the distillation head unless asked for it, and changes the pooling."""
    reference, ours = small_pair(seed=8, num_classes=0)
    x = image_batch(2, *SIZE, seed=9)
    reference.fuse()
    ours.fuse()
    check_tree(ours, reference)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 40)
    assert_close(out, ref, TOL)
    reference, ours = small_pair(seed=10)
    reference.reset_classifier(5)
    ours.reset_classifier(5)
    assert not ours.head.distillation and not hasattr(ours.head, "head_dist")
    reference.reset_classifier(4, "", distillation=True)
    ours.reset_classifier(4, "", distillation=True)
    check_tree(ours, reference)
    assert ours.num_classes == 4 and ours.global_pool == ""
    randomize(reference, 10)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x, lambda model, t: model.forward_features(t))
    assert out.shape == (2, 40, 2, 2)
    assert_close(out, ref, TOL)
    ours.reset_classifier(6, "avg", distillation=True)
    reference.reset_classifier(6, "avg", distillation=True)
    randomize(reference, 11)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 6)
    assert_close(out, ref, TOL)


def test_dropout_and_distilled_training():
    """The head's dropout leaves eval outputs alone and draws timm's masks after the same seed in training; after
    set_distilled_training() train mode returns both heads' logits, as timm's, and eval mode their average."""
    reference, ours = small_pair(seed=12, drop_rate=0.5)
    reference.double()
    ours.double()
    x = image_batch(2, *SIZE, seed=13).astype(np.float64)
    check_dropout_only_in_training(reference, ours, x, 1e-10, 1e-10)
    check_distilled_training(reference, ours, x, 1e-10, 7)


def test_in_chans_1_and_bad_arguments():
    """A one-channel model (a one-channel stem) gives timm's outputs; a 1x1 image runs, as in timm; pooling other
    than 'avg' or '' and a stage that would widen without downsampling are refused, where timm asserts."""
    reference, ours = small_pair("legacy", seed=14, in_chans=1)
    for shape in ((2, *SIZE), (1, 1, 1)):
        out, ref = both_outputs(reference, ours, image_batch(*shape, seed=15, c=1))
        assert_close(out, ref, TOL)
    with pytest.raises(AssertionError):
        timm_repvit.RepVit(**SMALL["plain"], global_pool="max")
    with pytest.raises(ValueError, match="global_pool"):
        repvit.RepVit(**SMALL["plain"], global_pool="max")
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(3, "catavgmax")
    with pytest.raises(AssertionError):
        timm_repvit.RepVitStage(8, 16, 1, 2, torch.nn.GELU, downsample=False)
    with pytest.raises(ValueError, match="keeps its width"):
        repvit.RepVitStage(8, 16, 1, 2, engine.nn.GELU, downsample=False)


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's taps (the four stages by default), its feature_info,
    its flattened module names (``stages_2``) and state dict, and its feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(16)
    reference = timm_repvit._create_repvit("repvit_m1", features_only=True, **SMALL["legacy"], **kwargs)
    randomize(reference, 16).eval()
    ours = repvit._create_repvit("repvit_m1", False, True, features_only=True, **SMALL["legacy"], **kwargs)
    assert type(ours) is FlatFeatureListNet
    assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
    ours.load_state_dict(numpy_state(reference))
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=17), 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates (all stages, picked ones, stopping early) gives timm's maps and final map;
    prune_intermediate_layers keeps timm's stages and drops the head and pooling, as timm's."""
    reference, ours = small_pair(seed=18)
    x = image_batch(2, *SIZE, seed=19)
    _, maps = check_intermediates(reference, ours, x, TOL)
    assert [m.shape[1:] for m in maps] == [(16, 9, 9), (24, 5, 5), (32, 3, 3), (40, 2, 2)]
    check_intermediates(reference, ours, x, TOL, indices=[0, 2], stop_early=True)
    check_intermediates(reference, ours, x, TOL, indices=2, intermediates_only=True)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_tree(ours, reference)
    assert ours.num_features == reference.num_features == 24
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24, 5, 5)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module."""
    names = models.list_models(module="repvit")
    assert names == [n for n in timm.list_models(module="repvit") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("repvit*")}
