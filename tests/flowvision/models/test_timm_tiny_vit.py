"""timm parity of TinyViT (tiny_vit_5m_224, tiny_vit_11m_224, tiny_vit_21m_224/384/512): every variant's
configuration, the layout, seeded initialisation, eval outputs (float32) of a small model (MBConv stage, patch
merging, window attention on maps padded to whole windows and on a map of exactly one window, relative-position
biases) at an odd image size with the attention biases cached as timm caches them, float64 train-mode outputs,
gradients and BatchNorm statistics, all with timm's weights loaded; stochastic depth and dropout masks,
ConvNorm.fuse, the head API (pre-logits, pooling, reset_classifier), in_chans=1, features_only,
forward_intermediates, refused arguments and list_models."""
import numpy as np
import pytest
import timm
import torch
from timm.models import tiny_vit as timm_tiny_vit

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import tiny_vit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_structure,
                          check_train_step, cpu_only_from_here, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["tiny_vit_5m_224", "tiny_vit_11m_224", "tiny_vit_21m_224", "tiny_vit_21m_384", "tiny_vit_21m_512"]
TOL = 1e-4
PRINTED = ("TinyVitStage", "TinyVitBlock", "Conv2d", "BatchNorm2d", "Linear", "LayerNorm", "LayerNorm2d", "GELU",
           "Dropout", "Flatten")
# 37x35 images: 10x9 after the stem, then 5x5 (windows of 4: padded to 8x8), 3x3 (windows of 2: padded to 4x4) and
# 2x2 (one window of exactly 2)
SMALL = dict(embed_dims=(16, 32, 48, 64), depths=(1, 1, 2, 1), num_heads=(1, 2, 3, 4), window_sizes=(7, 4, 2, 2))
SIZE = (37, 35)
TOKENS = ("attention_biases",)


def small_pair(seed, **kwargs):
    """(timm's, ours) small models, timm's weights and BatchNorm statistics randomised and loaded in ours, in eval
    mode."""
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_tiny_vit.TinyVit(**SMALL, **kwargs), seed, tokens=TOKENS, norms=True)
    ours = tiny_vit.TinyVit(**SMALL, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands its class timm's configuration; tiny_vit_5m_224 has timm's layout (state_dict keys,
    order, shapes, module tree, printouts of every layer, block and stage, feature_info, num_features and
    default_cfg); without weights, both have the 21841 classes of the first weights."""
    ours_calls = capture_builder(monkeypatch, tiny_vit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_tiny_vit, "build_model_with_cfg")
    for name in NAMES:
        getattr(tiny_vit, name)()
        getattr(timm_tiny_vit, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is tiny_vit.TinyVit and timm_cls is timm_tiny_vit.TinyVit
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert {k: v for k, v in ours_kwargs.items() if k != "progress"} == expected, name
        timm_cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": timm_cfg.first_conv, "classifier": timm_cfg.classifier}
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model("tiny_vit_5m_224")
    check_layout(models.create_model("tiny_vit_5m_224"), reference, (), PRINTED)


def test_seeded_init_eval_outputs_and_bias_cache_match_timm():
    """The same seed gives timm's weights (truncated-normal Linear layers within 2 ulps, zero attention biases, the
    MBConv's last BatchNorm scales at 0) and leaves both random streams in step. With random weights and statistics,
    float32 logits of a batch of 2 at an odd size equal timm's; eval mode caches each attention's gathered biases
    (timm's values), train() and dtype moves clear the cache."""
    def truncated(reference):
        return {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}

    reference, ours = check_seeded_init(lambda: timm_tiny_vit.TinyVit(**SMALL, num_classes=10),
                                         lambda: tiny_vit.TinyVit(**SMALL, num_classes=10), 3, truncated)
    assert ours.feature_info == reference.feature_info
    randomize_parameters(reference, 1, tokens=TOKENS, norms=True)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference.eval(), ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    cpu_only_from_here("the attention bias cache")
    attentions = [(m, t) for m, t in zip(ours.modules(), reference.modules()) if isinstance(m, tiny_vit.Attention)]
    assert len(attentions) == 4
    for attn, timm_attn in attentions:
        (cached,) = attn.attention_bias_cache.values()
        (timm_cached,) = timm_attn.attention_bias_cache.values()
        np.testing.assert_array_equal(cached.detach().numpy(), timm_cached.numpy())
    ours.train()
    assert not any(attn.attention_bias_cache for attn, _ in attentions)
    ours.eval()
    with engine.no_grad():
        ours(engine.from_numpy(image_batch(1, *SIZE)))
    ours.double()
    assert not any(attn.attention_bias_cache for attn, _ in attentions)


def test_train_mode_gradients_and_statistics_match_timm_float64():
    """float64, train mode (biases gathered anew): outputs, input gradient, every parameter's gradient (the
    attention biases included) and the updated BatchNorm statistics equal timm's."""
    reference, ours = small_pair(4, num_classes=7, drop_path_rate=0.0)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates; no module where the rate is 0), the MLPs' and the head's dropout
    draw timm's masks after the same seed in training and leave eval outputs alone."""
    reference, ours = small_pair(6, drop_rate=0.3, proj_drop_rate=0.2, drop_path_rate=0.5)
    rates = check_drop_rates(reference, ours)
    assert len(rates) == 2 * 4 and rates[-1] == pytest.approx(0.5)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_conv_norm_fuse_matches_timm():
    """ConvNorm.fuse gives timm's fused convolution (weights, bias, geometry) for a strided depthwise pair, and it
    computes the pair's eval output."""
    reference, ours = small_pair(8)
    timm_pair = reference.stages[1].downsample.conv2
    pair = ours.stages[1].downsample.conv2
    fused = pair.fuse()
    timm_fused = timm_pair.fuse()
    assert repr(fused) == repr(timm_fused)
    np.testing.assert_allclose(fused.weight.detach().numpy(), timm_fused.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(fused.bias.detach().numpy(), timm_fused.bias.detach().numpy(), rtol=1e-6, atol=1e-7)
    x = engine.from_numpy(image_batch(2, 9, 7, seed=9, c=32))
    with engine.no_grad():
        assert_close(fused(x).numpy(), pair(x).numpy(), 1e-5)


def test_head_api_in_chans_and_bad_arguments():
    """A one-channel model with max pooling gives timm's pre-logits and logits; reset_classifier to a new size, and
    to none with the head's norm removed, as timm's; heads that do not divide the width are refused."""
    reference, ours = small_pair(10, in_chans=1, global_pool="max", num_classes=5)
    x = image_batch(2, *SIZE, seed=11, c=1)
    for fn in (None, pre_logits):
        out, ref = both_outputs(reference, ours, x, fn)
        assert_close(out, ref, TOL)
    assert ours.head_hidden_size == reference.head_hidden_size == 64
    reference.reset_classifier(3, "avg")
    ours.reset_classifier(3, "avg")
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 3)
    assert_close(out, ref, TOL)
    reference.reset_classifier(0, "", reset_other=True)
    ours.reset_classifier(0, "", reset_other=True)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 64, 2, 2)
    assert_close(out, ref, TOL)
    assert isinstance(ours.get_classifier(), engine.nn.Identity)
    with pytest.raises(AssertionError):
        timm_tiny_vit.TinyVit(**dict(SMALL, num_heads=(1, 3, 3, 4)))
    with pytest.raises(ValueError, match="num_heads"):
        tiny_vit.TinyVit(**dict(SMALL, num_heads=(1, 3, 3, 4)))


def test_features_only_and_intermediates_match_timm():
    """features_only through the entrypoints' builder: timm's four stage taps, its feature_info, flattened module
    names (``stages_1``) and state dict, and its maps; forward_intermediates (picked stages, the last n, stopping
    early) as timm's."""
    torch.manual_seed(12)
    reference = timm_tiny_vit._create_tiny_vit("tiny_vit_5m_224", features_only=True, **SMALL)
    randomize_parameters(reference, 12, tokens=TOKENS, norms=True)
    ours = tiny_vit._create_tiny_vit("tiny_vit_5m_224", False, True, dict(features_only=True, **SMALL))
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(2, *SIZE, seed=13)
    check_feature_maps(reference.eval(), ours, x, 4, TOL)
    reference, ours = small_pair(14)
    check_intermediates(reference, ours, x, TOL, indices=(1, 3))
    check_intermediates(reference, ours, x, TOL, indices=2, stop_early=True, intermediates_only=True)


def test_list_models():
    """The registry lists every variant with ImageNet-1k weights under its timm name and module."""
    names = models.list_models(module="tiny_vit")
    assert names == [n for n in timm.list_models(module="tiny_vit") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("tiny_vit*")
                                        if n.endswith("in1k")}
