"""timm parity of EfficientFormer (efficientformer_l1/l3/l7): every variant's configuration and the layout,
seeded initialisation, eval outputs (float32) of small models (pooling blocks, the flattening before the
transformer blocks in the middle of the last stage and at its start, attention with relative-position biases cached
in eval mode as timm caches them, through train/eval switches and stale weights), float64 train-mode outputs,
gradients and BatchNorm statistics, all with timm's weights loaded; stochastic depth and dropout masks, distilled
training, the head API (pre-logits, num_classes=0, reset_classifier), in_chans=1, refused arguments and image
sizes, features_only, forward_intermediates and list_models."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import efficientformer as timm_efficientformer

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import efficientformer
from model_parity import (both_outputs, capture_builder, check_distilled_training, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, cpu_only_from_here, features_only_pair, image_batch,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["efficientformer_l1", "efficientformer_l3", "efficientformer_l7"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "LayerNorm", "Linear", "GELU", "ReLU", "AvgPool2d", "Dropout")
# Small models: four stages of 1, 1, 1 and 3 blocks, 8 to 24 channels. "mid" has one transformer block after two
# pooling blocks (the flattening inside the stage, as in l1 and l3), "all" three (flattened first, as in l7). The
# attention's grid is 7x7, so images are 193 to 224 pixels a side; 201x209 gives maps of 101x105, 51x53, 26x27,
# 13x14 and 7x7.
SMALL = {
    "mid": dict(depths=(1, 1, 1, 3), embed_dims=(8, 12, 16, 24), num_vit=1, num_classes=7),
    "all": dict(depths=(1, 1, 1, 3), embed_dims=(8, 12, 16, 24), num_vit=3, num_classes=7),
}
SIZE = (201, 209)
SCALES = ("gamma",)
TOKENS = ("attention_biases",)


def small_pair(kind, seed, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's weights and BatchNorm statistics randomised and loaded in ours,
    in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = timm_efficientformer.EfficientFormer(**config)
    randomize_parameters(reference, seed, scales=SCALES, tokens=TOKENS, norms=True)
    ours = efficientformer.EfficientFormer(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def attention_pairs(ours, reference):
    """(our attention, timm's) for every attention layer, in module order."""
    return [(m, t) for m, t in zip(ours.modules(), reference.modules()) if isinstance(m, efficientformer.Attention)]


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands its class timm's configuration; efficientformer_l1 has timm's layout (state_dict keys
    with the bias indices, order, shapes, dtypes, module tree, layer printouts, feature_info, num_features and
    default_cfg)."""
    ours_calls = capture_builder(monkeypatch, efficientformer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_efficientformer, "build_model_with_cfg")
    for name in NAMES:
        getattr(efficientformer, name)()
        getattr(timm_efficientformer, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is efficientformer.EfficientFormer and timm_cls is timm_efficientformer.EfficientFormer
        assert ours_kwargs.pop("progress") is True
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("pretrained_filter_fn", "feature_cfg")}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model("efficientformer_l1")
    check_layout(models.create_model("efficientformer_l1"), reference, (), PRINTED, types=True)


def test_seeded_init_eval_outputs_and_bias_cache_match_timm():
    """The same seed gives timm's weights (truncated-normal Linear layers within 2 ulps) and bias indices and leaves
    both random streams in step. With random weights and statistics, float32 logits and pre-logits of a batch of 2
    equal timm's; eval mode caches the gathered biases (timm's values); biases changed in eval mode after a forward
    go unseen by both until a mode switch, which clears both caches; train-mode outputs (batch statistics) then
    eval-mode ones equal timm's across the switches."""
    def truncated(reference):
        return {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}

    reference, ours = check_seeded_init(lambda: timm_efficientformer.EfficientFormer(**SMALL["mid"]),
                                        lambda: efficientformer.EfficientFormer(**SMALL["mid"]), 3, truncated)
    randomize_parameters(reference, 1, scales=SCALES, tokens=TOKENS, norms=True)
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
    (attn, timm_attn), = attention_pairs(ours, reference)
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
    assert not attn.attention_bias_cache
    train_out, train_ref = both_outputs(reference, ours, x)
    assert not np.allclose(train_ref, ref, atol=1e-2)
    assert_close(train_out, train_ref, TOL)
    fresh, fresh_ref = both_outputs(reference.eval(), ours.eval(), x)
    assert not np.allclose(fresh_ref, ref, atol=1e-2)
    assert_close(fresh, fresh_ref, TOL)
    ours.double()
    assert not attn.attention_bias_cache


def test_train_mode_gradients_and_statistics_match_timm_float64():
    """float64, train mode, every transformer block flattened first: outputs, input gradient, every parameter's
    gradient (attention biases and layer scales included) and the updated BatchNorm statistics equal timm's."""
    reference, ours = small_pair("all", 4)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_drop_path_dropout_and_distilled_training():
    """timm's rates (stochastic depth rising linearly over the blocks, dropout in the MLPs and before the heads);
    eval outputs unaffected and drawing nothing; in train mode the same seed draws timm's masks; distilled
    training returns both heads' logits, as timm's."""
    reference, ours = small_pair("mid", 6, drop_rate=0.3, proj_drop_rate=0.2, drop_path_rate=0.3)
    reference.double()
    ours.double()
    assert check_drop_rates(reference, ours) == pytest.approx([r for r in (0.06, 0.12, 0.18, 0.24, 0.3) for _ in 'ab'])
    x = image_batch(2, *SIZE, seed=7).astype(np.float64)
    check_dropout_only_in_training(reference, ours, x, 1e-10, 1e-10)
    check_distilled_training(reference, ours, x, 1e-10, 7)


def test_head_api_in_chans_and_bad_arguments():
    """A one-channel model gives timm's logits; num_classes=0 the pooled features (identity heads); ''
    pooling the tokens; reset_classifier new heads for both (in the model's mode) and to none; another pooling,
    another image size and a non-downsampling stage that changes width are refused."""
    reference, ours = small_pair("all", 9, in_chans=1)
    x = image_batch(2, *SIZE, seed=10, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    headless = efficientformer.EfficientFormer(**{**SMALL["all"], "num_classes": 0}, in_chans=1)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head")})
    assert all(isinstance(h, engine.nn.Identity) for h in headless.get_classifier())
    pre, pre_ref = both_outputs(partial(pre_logits, reference), headless.eval(), x)
    assert pre.shape == (2, 24)
    assert_close(pre, pre_ref, TOL)
    ours.reset_classifier(5)
    assert [tuple(h.weight.shape) for h in ours.get_classifier()] == [(5, 24), (5, 24)]
    assert not any(h.training for h in ours.get_classifier()) and ours.num_classes == 5
    ours.reset_classifier(0, "")
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(x)).shape) == (2, 49, 24)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(5, "max")
    with pytest.raises(ValueError, match="global_pool"):
        efficientformer.EfficientFormer(**SMALL["all"], global_pool="max")
    with pytest.raises(ValueError, match="dim_out"):
        efficientformer.EfficientFormer(**SMALL["all"], downsamples=(False, False, True, True))
    with pytest.raises(ValueError, match="7x7"), engine.no_grad():
        ours(engine.from_numpy(image_batch(1, 160, 224, c=1)))


def test_features_only_and_intermediates_match_timm():
    """features_only through the entrypoint: timm's wrapper (the stages' outputs from forward_intermediates, all
    four by default, the last stage's tokens laid on their grid), its state_dict keys (final norm and heads
    pruned), feature_info and maps; forward_intermediates' maps and final tokens, normed or stopping early, and
    prune_intermediate_layers' model, as timm's."""
    kwargs = {**SMALL["mid"], "num_classes": 1000}
    reference, ours = features_only_pair("efficientformer_l1", lambda m, s: randomize_parameters(
        m, s, scales=SCALES, tokens=TOKENS, norms=True), 11, **kwargs)
    assert type(ours) is FeatureGetterNet
    x = image_batch(2, 217, 210, seed=12)
    maps = check_feature_maps(reference, ours, x, 4, TOL)
    assert [m.shape for m in maps] == [(2, 8, 55, 53), (2, 12, 28, 27), (2, 16, 14, 14), (2, 24, 7, 7)]
    reference, ours = small_pair("all", 13)
    for kwargs, count in ((dict(indices=[0, 3], norm=True), 2), (dict(indices=[1], stop_early=True), 1)):
        _, outs = check_intermediates(reference, ours, x, TOL, **kwargs)
        assert len(outs) == count
    assert reference.prune_intermediate_layers(2) == ours.prune_intermediate_layers(2) == [2, 3]
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 49, 24)
    assert_close(out, ref, TOL)


def test_list_models():
    """Every EfficientFormer with ImageNet-1k weights in timm is registered under its timm name and module."""
    assert models.list_models(module="efficientformer") == NAMES
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("efficientformer_*")}
