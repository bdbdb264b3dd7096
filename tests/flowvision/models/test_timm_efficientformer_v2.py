"""timm parity of EfficientFormerV2 (efficientformerv2_s0/s1/s2/l): every variant's configuration and the layout,
seeded initialisation, eval outputs (float32) of a small model (MLP blocks with per-block ratios, strided attention
with talking heads and bilinear upsampling, downsampling attention with local-global queries, relative-position
biases cached in eval mode as timm caches them, through train/eval switches and stale weights) at an odd image
size, float64 train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded; stochastic
depth and dropout masks, distilled training, the head API (pre-logits, num_classes=0, reset_classifier, a single
head), in_chans=1, refused arguments and image sizes, features_only, forward_intermediates and list_models."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import efficientformer_v2 as timm_efficientformer_v2

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import efficientformer_v2
from model_parity import (both_outputs, capture_builder, check_distilled_training, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, cpu_only_from_here, features_only_pair, image_batch,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["efficientformerv2_s0", "efficientformerv2_s1", "efficientformerv2_s2", "efficientformerv2_l"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNormAct2d", "Linear", "GELU", "AvgPool2d", "Upsample", "Dropout")
# A small model: four stages of 1, 1, 2 and 2 blocks, 8 to 24 channels, per-stage and per-block MLP ratios; the
# last block of the third and fourth stages has attention (timm's 8 heads), the fourth stage downsamples with
# attention. 61x93 images give maps of 16x24, 8x12, 4x6 (attention on 2x3, upsampled) and 2x3.
SMALL = dict(depths=(1, 1, 2, 2), embed_dims=(8, 12, 16, 24), num_vit=1, mlp_ratios=(4, 3, (2, 3), 2),
             img_size=(61, 93), num_classes=7)
SIZE = (61, 93)
SCALES = ("gamma",)
TOKENS = ("attention_biases",)
ATTENTIONS = (efficientformer_v2.Attention2d, efficientformer_v2.Attention2dDownsample)


def randomize(model, seed):
    """timm's ``model`` with random parameters and BatchNorm statistics."""
    return randomize_parameters(model, seed, scales=SCALES, tokens=TOKENS, norms=True)


def small_pair(seed, **kwargs):
    """(timm's, ours) small models, timm's weights and BatchNorm statistics randomised and loaded in ours, in eval
    mode."""
    config = {**SMALL, **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_efficientformer_v2.EfficientFormerV2(**config), seed)
    ours = efficientformer_v2.EfficientFormerV2(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands its class timm's configuration; efficientformerv2_s0 has timm's layout (state_dict
    keys, order, shapes, dtypes, module tree and classes, layer printouts, feature_info, num_features and
    default_cfg)."""
    ours_calls = capture_builder(monkeypatch, efficientformer_v2, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_efficientformer_v2, "build_model_with_cfg")
    for name in NAMES:
        getattr(efficientformer_v2, name)()
        getattr(timm_efficientformer_v2, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is efficientformer_v2.EfficientFormerV2
        assert timm_cls is timm_efficientformer_v2.EfficientFormerV2
        assert ours_kwargs.pop("progress") is True
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "feature_cfg"}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model("efficientformerv2_s0")
    check_layout(models.create_model("efficientformerv2_s0"), reference, (), PRINTED, types=True)


def test_seeded_init_eval_outputs_and_bias_cache_match_timm():
    """The same seed gives timm's weights (truncated-normal heads within 2 ulps) and bias indices and leaves both
    random streams in step. With random weights and statistics, float32 logits and pre-logits of a batch of 2 equal
    timm's; eval mode caches each attention's gathered biases (timm's values); biases changed in eval mode after a
    forward go unseen by both until a mode switch, which clears every cache; train-mode outputs (batch statistics)
    then eval-mode ones equal timm's across the switches."""
    reference, ours = check_seeded_init(lambda: timm_efficientformer_v2.EfficientFormerV2(**SMALL),
                                        lambda: efficientformer_v2.EfficientFormerV2(**SMALL), 3,
                                        lambda reference: {"head.weight", "head_dist.weight"})
    ref_idxs = {n: b.numpy() for n, b in reference.named_buffers() if n.endswith("attention_bias_idxs")}
    ours_idxs = {n: b.numpy() for n, b in ours.named_buffers() if n.endswith("attention_bias_idxs")}
    assert list(ours_idxs) == list(ref_idxs) and len(ref_idxs) == 3
    for name, idxs in ref_idxs.items():
        assert np.array_equal(ours_idxs[name], idxs), name
    randomize(reference, 1)
    ours.load_state_dict(numpy_state(reference))
    reference.eval()
    ours.eval()
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 24)
    assert_close(pre, pre_ref, TOL)
    cpu_only_from_here("the attention bias cache")
    pairs = [(m, t) for m, t in zip(ours.modules(), reference.modules()) if isinstance(m, ATTENTIONS)]
    assert len(pairs) == 3
    for attn, timm_attn in pairs:
        (cached,) = attn.attention_bias_cache.values()
        np.testing.assert_array_equal(cached.numpy(), timm_attn.attention_bias_cache["cpu"].numpy())
        with torch.no_grad():
            timm_attn.attention_biases.mul_(-3.0)
        with engine.no_grad():
            attn.attention_biases.mul_(-3.0)
    stale, stale_ref = both_outputs(reference, ours, x)
    assert np.array_equal(stale_ref, ref)
    assert_close(stale, out, 1e-6)
    reference.train()
    ours.train()
    assert not any(attn.attention_bias_cache for attn, _ in pairs)
    train_out, train_ref = both_outputs(reference, ours, x)
    assert not np.allclose(train_ref, ref, atol=1e-2)
    assert_close(train_out, train_ref, TOL)
    fresh, fresh_ref = both_outputs(reference.eval(), ours.eval(), x)
    assert not np.allclose(fresh_ref, ref, atol=1e-2)
    assert_close(fresh, fresh_ref, TOL)
    ours.double()
    assert not any(attn.attention_bias_cache for attn, _ in pairs)


def test_train_mode_gradients_and_statistics_match_timm_float64():
    """float64, train mode: outputs, input gradient, every parameter's gradient (attention biases, talking heads
    and layer scales included) and the updated BatchNorm statistics equal timm's."""
    reference, ours = small_pair(4)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_drop_path_dropout_and_distilled_training():
    """timm's rates (stochastic depth rising linearly over the blocks, dropout in the MLPs and before the heads);
    eval outputs unaffected and drawing nothing; in train mode the same seed draws timm's masks; distilled
    training returns both heads' logits, as timm's."""
    reference, ours = small_pair(6, drop_rate=0.3, proj_drop_rate=0.2, drop_path_rate=0.25)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.05, 0.1, 0.15, 0.15, 0.2, 0.25, 0.25])
    x = image_batch(2, *SIZE, seed=7)
    check_dropout_only_in_training(reference, ours, x, TOL, TOL)
    check_distilled_training(reference, ours, x, TOL, 7)


def test_head_api_in_chans_and_bad_arguments():
    """A one-channel model with a single head (no distillation) gives timm's logits; num_classes=0 the pooled
    features; reset_classifier a new head (in the model's mode), '' pooling the map; both heads of the distilled
    model reset; another pooling, norm, image size and a non-downsampling stage that changes width are refused."""
    reference, ours = small_pair(9, in_chans=1, distillation=False)
    x = image_batch(2, *SIZE, seed=10, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert ours.get_classifier()[1] is None
    assert_close(out, ref, TOL)
    headless = efficientformer_v2.EfficientFormerV2(**{**SMALL, "num_classes": 0}, in_chans=1, distillation=False)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head")})
    pre, pre_ref = both_outputs(partial(pre_logits, reference), headless.eval(), x)
    assert pre.shape == (2, 24)
    assert_close(pre, pre_ref, TOL)
    reference.reset_classifier(5)
    ours.reset_classifier(5)
    assert not ours.head.training and ours.num_classes == 5 and ours.head_dist is None
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(x)).shape) == (2, 24, 2, 3)
    distilled = efficientformer_v2.EfficientFormerV2(**SMALL)
    distilled.reset_classifier(5)
    assert [tuple(h.weight.shape) for h in distilled.get_classifier()] == [(5, 24), (5, 24)]
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(5, "max")
    with pytest.raises(ValueError, match="global_pool"):
        efficientformer_v2.EfficientFormerV2(**SMALL, global_pool="max")
    with pytest.raises(ValueError, match="norm_layer"):
        efficientformer_v2.EfficientFormerV2(**SMALL, norm_layer="layernorm2d")
    with pytest.raises(ValueError, match="dim_out"):
        efficientformer_v2.EfficientFormerV2(**SMALL, downsamples=(False, False, True, True))
    with pytest.raises(ValueError, match="img_size"), engine.no_grad():
        ours(engine.from_numpy(image_batch(1, 93, 61, c=1)))


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_and_intermediates_match_timm(out_indices):
    """features_only through the entrypoint: timm's flattened layout (``stem_conv1``, ``stages_2``...; all four
    stages by default), state_dict keys (up to the last stage picked), feature_info and maps; forward_intermediates'
    maps and final map, normed or stopping early, and prune_intermediate_layers' model, as timm's."""
    kwargs = {**SMALL, "num_classes": 1000}
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    reference, ours = features_only_pair("efficientformerv2_s0", randomize, 11, **kwargs)
    assert type(ours) is FlatFeatureListNet
    assert [n for n, _ in ours.named_children()][:3] == ["stem_conv1", "stem_conv2", "stages_0"]
    x = image_batch(2, *SIZE, seed=12)
    maps = check_feature_maps(reference, ours, x, 4 if out_indices is None else 2, TOL)
    assert maps[-1].shape == (2, 24, 2, 3)
    if out_indices is None:
        return
    reference, ours = small_pair(13)
    for kwargs, count in ((dict(indices=[0, 3], norm=True), 2), (dict(indices=2, stop_early=True), 2)):
        _, outs = check_intermediates(reference, ours, x, TOL, **kwargs)
        assert len(outs) == count
    assert reference.prune_intermediate_layers([1]) == ours.prune_intermediate_layers([1]) == [1]
    assert ours.num_features == 12 and isinstance(ours.head, engine.nn.Identity)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 12, 8, 12)
    assert_close(out, ref, TOL)


def test_list_models():
    """Every EfficientFormerV2 with ImageNet-1k weights in timm is registered under its timm name and module."""
    assert models.list_models(module="efficientformer_v2") == sorted(NAMES)
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("efficientformerv2_*")}
