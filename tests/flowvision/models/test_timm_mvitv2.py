"""timm parity of the image MViTv2 (mvitv2_tiny/small/base/large, the class-token mvitv2_base/large/huge_cls and
timm's untrained class-token mvitv2_small_cls): every variant's configuration and layout, seeded initialisation, eval
outputs (float32) of small models at odd, non-square sizes (pooled queries, keys and values with relative positions
at uneven grid ratios and residual pooling; the large model's widening in the MLP with two heads; a class token with
absolute positions and max pooling; a class token with relative positions, as the ``_cls`` models have it; average
pooling without relative positions or residual pooling), float64 train-mode outputs and gradients, all with timm's
weights loaded; stochastic depth and the head's dropout; and the timm API (pre-logits, token and average pooling,
reset_classifier, in_chans, refused options, features_only, forward_intermediates, prune_intermediate_layers,
list_models)."""
import dataclasses

import numpy as np
import pytest
import timm
import torch
from timm.models import mvitv2 as timm_mvitv2

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import mvitv2
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, features_only_pair, image_batch, linear_weights,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["mvitv2_tiny", "mvitv2_small", "mvitv2_base", "mvitv2_large"]
# the class-token models: ImageNet-21k (winter 2021) weights with 19168 classes
CLS_NAMES = ["mvitv2_base_cls", "mvitv2_large_cls", "mvitv2_huge_cls"]
# timm's untrained class-token model (no published weights; 1000 classes, timm's class default)
UNTRAINED = ["mvitv2_small_cls"]
TOL = 1e-4
PRINTED = ("MultiScaleBlock", "PatchEmbed", "Conv2d", "LayerNorm", "Linear", "MaxPool2d", "GELU", "Dropout",
           "Identity")
TABLES = ("rel_pos_h", "rel_pos_w", "cls_token", "pos_embed")
# Small models, 8 wide (doubling per stage), stages of 1, 2, 1 and 1 blocks, sized for 48 x 48 images: "plain", the
# tiny to base models' layout; "large", its widening in the last block's MLP, two heads; "cls", a class token and
# absolute positions, with max pooling of queries, keys and values; "cls_rel", a class token with relative positions
# alone (the _cls models); "avg", average pooling without relative positions or residual pooling.
BASE = dict(depths=(1, 2, 1, 1), embed_dim=8, num_heads=1)
SMALL = {
    "plain": {},
    "large": dict(expand_attn=False, num_heads=2, mlp_ratio=2.0),
    "cls": dict(use_cls_token=True, use_abs_pos=True, mode="max"),
    "cls_rel": dict(use_cls_token=True),
    "avg": dict(mode="avg", rel_pos_type="", residual_pooling=False),
}
IMG = 48
# Inputs smaller than the model's images (timm's relative position tables fit no larger grid): 12 x 11 patches,
# pooled to uneven ratios; the class-token model's absolute positions need its 12 x 12 grid.
SIZES = {"plain": (45, 43), "large": (45, 43), "cls": (47, 45), "cls_rel": (45, 43), "avg": (45, 43)}


def configs(kind):
    """timm's and our configuration of the small ``kind`` model."""
    fields = dict(BASE, **SMALL[kind])
    return timm_mvitv2.MultiScaleVitCfg(**fields), mvitv2.MultiScaleVitCfg(**fields)


def randomize(model, seed):
    """Random values for every parameter of a timm MViTv2 (its unit norms and zero biases would hide bugs); the
    position tables and tokens N(0, 1)."""
    return randomize_parameters(model, seed, tokens=TABLES)


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models for 48 x 48 images, timm's randomised weights loaded in ours, in eval
    mode."""
    timm_cfg, ours_cfg = configs(kind)
    torch.manual_seed(seed)
    reference = randomize(timm_mvitv2.MultiScaleVit(timm_cfg, img_size=IMG, **kwargs), seed).eval()
    ours = mvitv2.MultiScaleVit(ours_cfg, img_size=IMG, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (every field, the derived key/value strides too) and
    builds timm's layout: state_dict keys, order, shapes, dtypes, module tree, layer printouts, feature_info,
    num_features, head_hidden_size and default_cfg (random initialisation skipped, timm's model on the meta
    device; the untrained mvitv2_small_cls in full, with 1000 classes); the class-token models with weights with one
    or two blocks a stage (the huge one has 694M parameters) and the 19168 classes of timm's weights."""
    ours_calls = capture_builder(monkeypatch, mvitv2, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_mvitv2, "build_model_with_cfg")
    for name in NAMES + CLS_NAMES + UNTRAINED:
        getattr(mvitv2, name)()
        getattr(timm_mvitv2, name)()
    assert len(ours_calls) == len(timm_calls) == len(NAMES + CLS_NAMES + UNTRAINED)
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES + CLS_NAMES + UNTRAINED, ours_calls, timm_calls):
        assert set(ours_kwargs) == {"cfg", "progress"} and ours_kwargs["progress"], name
        assert set(timm_kwargs) == {"model_cfg", "pretrained_filter_fn", "feature_cfg"}, name
        assert timm_kwargs["feature_cfg"] == dict(out_indices=4, feature_cls="getter"), name
        assert dataclasses.asdict(ours_kwargs["cfg"]) == dataclasses.asdict(timm_kwargs["model_cfg"]), name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(mvitv2, "trunc_normal_tf_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(timm_mvitv2, "trunc_normal_tf_", lambda tensor, **kwargs: tensor)
    for name in NAMES + UNTRAINED:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        ours = models.create_model(name, num_classes=1000)
        check_layout(ours, reference, (), PRINTED)
    for name in CLS_NAMES:
        pretrained_cfg = timm.models.get_pretrained_cfg(name)
        timm_cfg = dataclasses.replace(timm_mvitv2.model_cfgs[name], depths=(1, 1, 2, 1))
        with torch.device("meta"):
            reference = timm_mvitv2.MultiScaleVit(timm_cfg, num_classes=pretrained_cfg.num_classes)
        reference.pretrained_cfg = pretrained_cfg.to_dict()
        ours_cfg = dataclasses.replace(mvitv2.model_cfgs[name], depths=(1, 1, 2, 1))
        check_layout(mvitv2.MultiScaleVit(ours_cfg, num_classes=pretrained_cfg.num_classes), reference, (), PRINTED)


@pytest.mark.parametrize("kind", ["plain", "cls"])
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's initial weights (truncated normals for the Linear weights, relative position
    tables, class token and absolute positions within 2 float32 ulps; convolutions' default draws, zero biases and
    the rest bit for bit) and leaves both random streams in step."""
    timm_cfg, ours_cfg = configs(kind)
    reference, ours = check_seeded_init(lambda: timm_mvitv2.MultiScaleVit(timm_cfg, img_size=IMG, num_classes=10),
                                        lambda: mvitv2.MultiScaleVit(ours_cfg, img_size=IMG, num_classes=10), 3,
                                        lambda m: linear_weights(m) | {k for k in m.state_dict()
                                                                       if k.endswith(TABLES)}, kind)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd, non-square size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZES[kind], seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", ["plain", "large", "cls", "cls_rel"])
def test_train_mode_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient (the relative position tables'
    looked-up rows summed back; the attention's or the MLP's shortcut projection; the class token and absolute
    positions) equal timm's."""
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZES[kind], seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's per-block linear rates, both branches of a block, no module where the rate is 0)
    and the head's dropout draw timm's masks after the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.125, 0.125, 0.25, 0.25, 0.375, 0.375, 0.5, 0.5])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZES["plain"], seed=7))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel class-token model: the class token's pre-logits features, ``num_classes=0``, reset to the
    average of the patch tokens and new classes, and to no pooling (the tokens), as timm's; unknown pooling, token
    pooling without a class token, timm's failing pool-first and unshared modes and spatial relative positions on
    a non-square grid are refused."""
    reference, ours = small_pair("cls", seed=9, in_chans=1)
    x = image_batch(2, *SIZES["cls"], seed=10, c=1)
    assert ours.global_pool == "token"
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 64)
    assert_close(pre, pre_ref, TOL)
    headless = mvitv2.MultiScaleVit(configs("cls")[1], img_size=IMG, in_chans=1, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(5, "avg")
    ours.reset_classifier(5, "avg")
    ours.head.load_state_dict(numpy_state(reference.head))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and not ours.head.training and ours.num_classes == 5
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    out = both_outputs(reference, ours, x)[0]
    assert out.shape == (2, 1 + 2 * 2, 64)
    assert np.array_equal(out, both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))[0])
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(3, "max")
    plain_cfg = configs("plain")[1]
    with pytest.raises(ValueError, match="class token"):
        mvitv2.MultiScaleVit(plain_cfg, img_size=IMG, global_pool="token")
    with pytest.raises(NotImplementedError, match="pool_first"):
        mvitv2.MultiScaleVit(dataclasses.replace(plain_cfg, pool_first=True), img_size=IMG)
    with pytest.raises(NotImplementedError, match="conv_unshared"):
        mvitv2.MultiScaleVit(dataclasses.replace(plain_cfg, mode="conv_unshared"), img_size=IMG)
    with pytest.raises(ValueError, match="square"):
        mvitv2.MultiScaleVit(plain_cfg, img_size=(48, 32))


def test_features_only_intermediates_and_pruning_match_timm(monkeypatch):
    """features_only through the registry (mvitv2_tiny's configuration made small on both sides): timm's four
    stage maps (or those of out_indices), feature_info (timm's ``block.<i>`` names) and state dict without the final
    norm; forward_intermediates as maps (the final norm on the last stage, stopping early) and as tokens with the
    class token; prune_intermediate_layers drops the later stages, the norm and the head as timm's does."""
    timm_cfg, ours_cfg = configs("plain")
    monkeypatch.setitem(timm_mvitv2.model_cfgs, "mvitv2_tiny", timm_cfg)
    monkeypatch.setitem(mvitv2.model_cfgs, "mvitv2_tiny", ours_cfg)
    x = image_batch(2, *SIZES["plain"], seed=15)
    for out_indices, count in ((None, 4), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("mvitv2_tiny", randomize, 14, img_size=IMG, **kwargs)
        assert type(ours) is FeatureGetterNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 6 * 6, 16)
    assert_close(out, ref, TOL)
    reference, ours = small_pair("cls", seed=17)
    tokens = check_intermediates(reference, ours, image_batch(2, *SIZES["cls"], seed=18), TOL, indices=[1, 3],
                                 output_fmt="NLC", intermediates_only=True)
    assert [t.shape for t in tokens] == [(2, 1 + 6 * 6, 16), (2, 1 + 2 * 2, 64)]


def test_list_models():
    """The registry lists exactly timm's MViTv2s under their names and module: those with published weights (the
    ImageNet-1k ones and the class-token ImageNet-21k ones) and the untrained mvitv2_small_cls too."""
    names = models.list_models(module="mvitv2")
    assert names == timm.list_models(module="mvitv2")
    assert set(names) - set(UNTRAINED) == set(NAMES + CLS_NAMES) == {n.split(".")[0]
                                                                     for n in timm.list_pretrained("mvitv2*")}
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("mvitv2*") if n.endswith(".fb_in1k")}
