"""timm parity of iFormer (iformer_t/s/m/l/l2/h and the distilled iformer_m/l/l2): every variant's configuration and
full-size layout on the meta device; seeded initialisation; float32 eval outputs of small models (attention groups
with and without leading convolutional blocks, layer scale, a distillation head), float64 train-mode outputs,
gradients and BatchNorm statistics, all with timm's randomised weights loaded; ``fuse()`` (the same module tree,
state_dict and outputs as timm's fused model); stochastic depth, head dropout and the distilled heads; and the timm
API (pre-logits, num_classes=0, reset_classifier with and without distillation, pooling, in_chans, bad arguments,
features_only, forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import iformer as timm_iformer

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import iformer
from model_parity import (both_outputs, capture_builder, check_distilled_training, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_intermediates, check_layout,
                          check_seeded_init, check_structure, check_train_step, conv_and_linear_weights,
                          features_only_pair, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["iformer_t", "iformer_s", "iformer_m", "iformer_l", "iformer_l2", "iformer_h", "iformer_m_distilled",
         "iformer_l_distilled", "iformer_l2_distilled"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNorm1d", "Linear", "GELU", "Sigmoid", "Dropout", "Identity")
# Small models, 8 to 32 channels. "plain": a stage of one attention group after three convolutional blocks (two
# leading, one closing) and one of a lone group; "distilled": a stage that keeps its width (so no downsampling)
# of a group then one closing block, another of two groups and no convolutional block, full-width queries, wider
# values, layer scale and a distillation head. A 35x33 image gives 9x9 maps after the stem, then 5x5, 3x3 and 2x2
# (5x5, 5x5 and 3x3 in "distilled").
SMALL = {
    "plain": dict(dims=(8, 16, 24, 32), depths=(1, 1, 6, 3), attn_groups=(0, 0, 1, 1),
                  attn_head_dim_reduction=(0, 0, 2, 4), num_classes=7),
    "distilled": dict(dims=(8, 16, 16, 24), depths=(1, 2, 4, 6), attn_groups=(0, 0, 1, 2),
                      attn_head_dim_reduction=(0, 0, 1, 2), conv_ratio=2, ffn_ratio=3, attn_ratio=2,
                      layer_scale_init_value=1e-6, distillation=True, num_classes=7),
}
SIZE = (35, 33)


def randomize(model, seed):
    """Random values for every parameter (layer scales around 1) and every BatchNorm's statistics, the heads' too,
    of a timm iFormer (its unit norms, zero biases and tiny layer scales would hide bugs)."""
    randomize_parameters(model, seed, scales=("gamma",))
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.3)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's randomised weights loaded in ours, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_iformer.IFormer(**config), seed).eval()
    ours = iformer.IFormer(**config)
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, iformer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_iformer, "build_model_with_cfg")
    for name in NAMES:
        getattr(iformer, name)()
        getattr(timm_iformer, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_iformer, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps, constant norms and
    layer scales bit for bit; every block kind, both downsampling forms and both heads) and leaves both random
    streams in step."""
    config = SMALL["distilled"]
    reference, ours = check_seeded_init(lambda: timm_iformer.IFormer(**config), lambda: iformer.IFormer(**config),
                                        3, conv_and_linear_weights)
    check_structure(ours, reference, types=False)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_and_fuse_match_timm(kind):
    """float32 logits (the heads' average where distilled) and pre-logits of a batch of 2 at an odd size, timm's
    weights loaded through numpy; then fuse() folds every ConvNorm, positional encoding and the classifier as
    timm's does: the same module tree and state_dict, the same outputs, and those of the unfused model; train mode
    then gives them too."""
    reference, ours = small_pair(kind, seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, ours.num_features)
    assert_close(pre, pre_ref, TOL)
    assert reference.fuse() is reference and ours.fuse() is ours
    check_structure(ours, reference)
    assert isinstance(ours.get_classifier(), engine.nn.Linear)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert_close(state[key].numpy(), value, 1e-6, what=key)
    fused, fused_ref = both_outputs(reference, ours, x)
    assert_close(fused, fused_ref, TOL)
    assert_close(fused, out, TOL)
    ours.train()
    assert_close(both_outputs(reference, ours, x)[0], out, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode (batch statistics in every BatchNorm, the heads' too): outputs, input gradient, every
    parameter's gradient (layer scales included) and the updated running statistics equal timm's."""
    reference, ours = small_pair("distilled", seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_dropout_and_distilled_training():
    """Stochastic depth (timm's per-block linear rates; none on the positional encodings) and the head's dropout
    leave eval outputs alone and draw timm's masks after the same seed in training; after set_distilled_training()
    train mode returns both heads' logits, as timm's, and eval mode their average."""
    reference, ours = small_pair("distilled", seed=8, drop_rate=0.5, drop_path_rate=0.5)
    rates = check_drop_rates(reference, ours)
    assert len(rates) == 9 and rates[0] == pytest.approx(0.5 / 12) and rates[-1] == pytest.approx(0.5)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    reference.double()
    ours.double()
    x = image_batch(2, 19, 17, seed=9).astype(np.float64)
    check_dropout_only_in_training(reference, ours, x, 1e-10, 1e-10)
    check_distilled_training(reference, ours, x, 1e-10, 7)


def test_head_api_in_chans_and_bad_arguments():
    """On a one-channel model: ``num_classes=0`` gives the pooled features (and fuses to an identity), as timm's;
    reset_classifier drops the distillation head unless asked for it, and with no classes and no pooling leaves the
    last map, as timm's; pooling other than 'avg' or '', stage lists of different lengths and too few blocks for
    the attention groups are refused, where timm asserts."""
    reference, ours = small_pair("distilled", seed=10, in_chans=1)
    x = image_batch(2, 19, 17, seed=11, c=1)
    _, pooled = both_outputs(reference, ours, x, pre_logits)
    headless = iformer.IFormer(**{**SMALL["distilled"], "num_classes": 0}, in_chans=1)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier().head, engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval().fuse(), x)[0], pooled, TOL)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    reference.reset_classifier(5)
    ours.reset_classifier(5)
    check_structure(ours, reference)
    assert not ours.distillation and not ours.head.training
    reference.reset_classifier(4, distillation=True)
    ours.reset_classifier(4, distillation=True)
    check_structure(ours, reference)
    randomize(reference, 12)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 4) and ours.distillation
    assert_close(out, ref, TOL)
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24, 2, 2)
    assert_close(out, ref, TOL)
    with pytest.raises(AssertionError):
        timm_iformer.IFormer(**SMALL["plain"], global_pool="max")
    with pytest.raises(ValueError, match="global_pool"):
        iformer.IFormer(**SMALL["plain"], global_pool="max")
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(3, "catavgmax")
    with pytest.raises(ValueError, match="one entry per stage"):
        iformer.IFormer(**{**SMALL["plain"], "depths": (1, 1, 6)})
    with pytest.raises(AssertionError):
        timm_iformer.IFormer(**{**SMALL["plain"], "depths": (1, 1, 2, 3)})
    with pytest.raises(ValueError, match="attention groups"):
        iformer.IFormer(**{**SMALL["plain"], "depths": (1, 1, 2, 3)})


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_matches_timm(out_indices):
    """features_only through the registry: timm's taps (the four stages by default), its feature_info, its
    flattened module names (``stem``, ``stages_2``) and state dict, and its feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    reference, ours = features_only_pair("iformer_t", randomize, 13, **SMALL["plain"], **kwargs)
    assert type(ours) is FlatFeatureListNet
    assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=14), 4 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates (all stages, picked ones, stopping early) gives timm's maps and final map;
    prune_intermediate_layers keeps timm's stages and feature_info and drops the head, as timm's."""
    reference, ours = small_pair(seed=15)
    x = image_batch(2, *SIZE, seed=16)
    _, maps = check_intermediates(reference, ours, x, TOL)
    assert [m.shape[1:] for m in maps] == [(8, 9, 9), (16, 5, 5), (24, 3, 3), (32, 2, 2)]
    check_intermediates(reference, ours, x, TOL, indices=[0, 2], stop_early=True)
    check_intermediates(reference, ours, x, TOL, indices=2, intermediates_only=True)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info and ours.num_stages == reference.num_stages == 2
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 5, 5)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's variants under their timm names and module: those with 1k weights and
    the untrained iformer_l2, registered too."""
    names = models.list_models(module="iformer")
    assert names == timm.list_models(module="iformer")
    assert set(names) == set(NAMES)
    assert set(NAMES) - {"iformer_l2"} == {n.split(".")[0] for n in timm.list_pretrained("iformer*")}
