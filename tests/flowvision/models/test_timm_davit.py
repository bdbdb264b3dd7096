"""timm parity of DaViT (timm's ``davit`` module: davit_tiny, davit_small and davit_base, and Florence-2's towers
davit_base_fl and davit_huge_fl; timm's untrained davit_large, davit_huge and davit_giant): every variant's
configuration, the layouts (on the meta device) of the base-sized ones, seeded initialisation; eval outputs (float32)
of small models covering every block and option (window attention with padded windows, oblong windows, channel
attention and Florence-2's v2, named blocks, 2x2 and 3x3 downsamplings, GELU position encodings, blocks without
MLPs, both heads) on odd-sized images, float64 train-mode outputs and gradients (the variants' and Florence-2's
blocks), all with timm's weights loaded; stochastic depth and dropout with timm's masks; and the timm API
(pre-logits, pooling, reset_classifier with and without the head's norm, in_chans, features_only,
forward_intermediates, prune_intermediate_layers, bad arguments, list_models)."""
import numpy as np
import pytest
import timm
import timm.models.davit as timm_davit
import torch

import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import davit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_head_api, check_intermediates, check_layout, check_seeded_init,
                          check_train_step, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init, without_default_head)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["davit_base", "davit_small", "davit_tiny"]
# Florence-2's image towers: encoders without a classifier (timm's weights have num_classes=0)
FL_NAMES = ["davit_base_fl", "davit_huge_fl"]
# timm's untrained models (196M to 1.4G parameters): their configuration only, never built
UNTRAINED = ["davit_giant", "davit_huge", "davit_large"]
TOL = 1e-4
PRINTED = ("Conv2d", "Linear", "LayerNorm", "LayerNorm2d", "GELU", "Softmax", "Dropout", "Identity", "Flatten",
           "AdaptiveAvgPool2d")

# Small models of three stages on odd, oblong 45 x 37 images (stage maps 12 x 10, 6 x 5, 3 x 3: windows and
# downsamplings pad). "plain": the variants' blocks and head with 3 x 3 windows. "florence": Florence-2's options (v2
# channel attention, named blocks, 3x3 downsamplings) with 2 x 3 windows, GELU position encodings and the norm-first
# head.
# "no_ffn": channel blocks alone, without MLPs or qkv biases (timm's spatial blocks cannot run without their MLPs).
SIZE = (45, 37)
BASE = dict(depths=(1, 1, 1), embed_dims=(8, 16, 32), num_heads=(1, 2, 4), num_classes=10)
SMALL = {
    "plain": dict(BASE, window_size=3),
    "florence": dict(BASE, window_size=(2, 3), channel_attn_v2=True, named_blocks=True, down_kernel_size=3,
                     cpe_act=True, head_norm_first=True, mlp_ratio=2),
    "no_ffn": dict(BASE, attn_types=("channel",), ffn=False, qkv_bias=False),
}


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_davit.DaVit(**config), seed)
    ours = davit.DaVit(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_variant_configurations_and_layout_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration (other keyword arguments added as in timm) and the
    class has timm's default_cfg; every variant has timm's layout on the meta device (the base tower's with one dual
    block a stage; not built: the huge tower and timm's untrained large, huge and giant models, 196M to 1.4G
    parameters), with the classifier of its weights (none for the towers): state_dict keys in order, shapes and
    dtypes, module names, the printout of every layer, feature_info, num_features and head_hidden_size."""
    ours_calls = capture_builder(monkeypatch, davit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_davit, "build_model_with_cfg")
    for name in NAMES + FL_NAMES + UNTRAINED:
        getattr(davit, name)(drop_path_rate=0.1)
        getattr(timm_davit, name)(drop_path_rate=0.1)
    assert len(ours_calls) == len(timm_calls) == len(NAMES + FL_NAMES + UNTRAINED)
    for name, (ours_cls, config), (_, expected) in zip(NAMES + FL_NAMES + UNTRAINED, ours_calls, timm_calls):
        config = without_default_head(name, config)
        assert config.pop("progress") is True
        assert config == {k: v for k, v in expected.items() if k not in ("feature_cfg", "pretrained_filter_fn",
                                                                          "pretrained_strict")}, name
        cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_davit, "trunc_normal_", lambda tensor, **kwargs: tensor)  # slow on the meta device
    for name, kwargs in [(name, {}) for name in NAMES] + [("davit_base_fl", dict(depths=(1, 1, 1, 1)))]:
        kwargs["num_classes"] = timm.models.get_pretrained_cfg(name).num_classes
        with torch.device("meta"):
            reference = timm.create_model(name, **kwargs)
        check_layout(models.create_model(name, **kwargs), reference, (), PRINTED)


def test_seeded_init_follows_timm():
    """From the same seed, timm's initial weights: the convolutions' PyTorch defaults bit for bit, the linear layers'
    truncated normals within 2 float32 ulps; both generators end in step."""
    linear_weights = lambda model: {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    reference, ours = check_seeded_init(lambda: timm_davit.DaVit(**SMALL["florence"]),
                                        lambda: davit.DaVit(**SMALL["florence"]), 0, linear_weights)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 odd-sized oblong images, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("kind", ["plain", "florence"])
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's."""
    reference, ours = small_pair(kind, seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, 21, 19, seed=4).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth rising block by block as timm's (the same in both halves of a dual block, none in the first)
    and dropout before the classifier: in eval mode nothing is dropped; in train mode both draw timm's masks after
    the same seed, others after another."""
    reference, ours = small_pair("plain", seed=5, drop_path_rate=0.4, drop_rate=0.3)
    rates = check_drop_rates(reference, ours)
    assert rates == pytest.approx([0.2] * 4 + [0.4] * 4)
    check_dropout_only_in_training(reference, ours, image_batch(2, 21, 19, seed=6), TOL, TOL)


def test_head_api_in_chans_and_bad_arguments():
    """The norm-first head: pre-logits features of a model built with ``num_classes=0``, reset_classifier to other
    pooling and size and to no pooling; the pool-then-norm head: pre-logits, reset_classifier to 'max' pooling and a
    new size, and ``reset_other`` dropping its norm, as timm's (one channel in); pooling that widens the features,
    unknown attention types and stem strides other than 4 are refused."""
    x = image_batch(2, 21, 19, seed=7)
    reference, ours = small_pair("florence", seed=8)
    headless = davit.DaVit(**{**SMALL["florence"], "num_classes": 0}).eval()
    check_head_api(reference, ours, headless, x, 32, (2, 32, 2, 2))
    reference, ours = small_pair("plain", seed=9, in_chans=1)
    x = x[:, :1]
    pre, expected = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32) and ours.head_hidden_size == reference.head_hidden_size == 32
    assert_close(pre, expected, TOL)
    for num_classes, pool, reset_other in ((5, "max", False), (3, None, True)):
        reference.reset_classifier(num_classes, pool, reset_other=reset_other)
        ours.reset_classifier(num_classes, pool, reset_other=reset_other)
        assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert out.shape == (2, num_classes)
        assert_close(out, expected, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        davit.DaVit(**SMALL["plain"], global_pool="catavgmax")
    with pytest.raises(ValueError, match="attention type"):
        davit.DaVit(**SMALL["plain"], attn_types=("spatial", "global"))
    with pytest.raises(ValueError, match="stride 4"):
        davit.Stem(3, 8, stride=2)


def test_features_only_matches_timm():
    """features_only through the entrypoints' builder: timm's taps (every stage by default, or ``out_indices``),
    its flattened module names and state_dict keys (``stem``, ``stages_1``), its feature_info and feature maps."""
    x = image_batch(2, *SIZE, seed=10)
    config = {**SMALL["plain"], "num_classes": 1000}
    for out_indices in (None, (1, -1)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(11)
        reference = timm_davit._create_davit("davit_tiny", features_only=True, **config, **kwargs)
        reference = randomize_parameters(reference, 11).eval()
        ours = davit._create_davit("davit_tiny", False, True, features_only=True, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        assert list(ours.state_dict()) == list(reference.state_dict())
        assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
        ours.load_state_dict(numpy_state(reference))
        check_feature_maps(reference, ours, x, 3 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's: every stage, the last n through the norm-first head's norm, a list, stopping
    early; prune_intermediate_layers leaves timm's stages, widths and classifier-free head: the second stage's
    map."""
    reference, ours = small_pair("florence", seed=12)
    x = image_batch(2, *SIZE, seed=13)
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, norm=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, 1], stop_early=True, intermediates_only=True)
    reference, ours = small_pair("plain", seed=14)
    assert ours.prune_intermediate_layers([0, 1]) == reference.prune_intermediate_layers([0, 1]) == [0, 1]
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 6, 5)
    assert_close(out, expected, TOL)


def test_list_models():
    """The registry lists exactly timm's DaViTs under the ``davit`` module: those with published weights (the
    ImageNet-1k classifiers and Florence-2's towers) and the untrained large, huge and giant models too."""
    names = models.list_models(module="davit")
    assert names == timm.list_models(module="davit") == sorted(NAMES + FL_NAMES + UNTRAINED)
    pretrained = {tag.split(".")[0]: timm.models.get_pretrained_cfg(tag).num_classes
                  for tag in timm.list_pretrained("davit_*")}
    assert set(names) - set(pretrained) == set(UNTRAINED)
    assert {name for name, num_classes in pretrained.items() if num_classes == 1000} == set(NAMES)
