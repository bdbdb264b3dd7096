"""timm parity of SHViT (shvit_s1/s2/s3/s4): every variant's configuration and layout, seeded initialisation, eval
outputs (float32) of small models (a convolution-only first stage and single-head attention after; attention in the
first stage, another activation, which the blocks' feed-forward networks ignore as timm's do) at odd sizes, float64
train-mode outputs, gradients and BatchNorm statistics, all with timm's weights loaded; the head's dropout, the head
API (pre-logits, num_classes=0, reset_classifier, other pooling, in_chans, refused widening pooling),
features_only, forward_intermediates, prune_intermediate_layers, fuse() and list_models."""
import numpy as np
import pytest
import timm
import torch
from timm.models import shvit as timm_shvit

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import shvit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          features_only_pair, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["shvit_s1", "shvit_s2", "shvit_s3", "shvit_s4"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNorm1d", "GroupNorm1", "ReLU", "GELU", "Sigmoid", "Linear", "Flatten",
           "Identity", "AdaptiveAvgPool2d")
# timm's squeeze-and-excitation keeps an identity where it has no norm; ours has none
PLACEHOLDERS = ("se.bn",)
# Small models, 8 to 32 channels, 1 or 2 blocks a stage: the first with timm's layout (no attention in the first
# stage), the second with attention in the first and last stages only, wider queries and keys and GELU.
SMALL = {
    "plain": dict(embed_dim=(16, 24, 32), partial_dim=(8, 8, 12), qk_dim=(4, 4, 4), depth=(1, 1, 1),
                  types=("i", "s", "s")),
    "gelu_first_stage_attention": dict(embed_dim=(16, 24, 32), partial_dim=(4, 8, 16), qk_dim=(8, 4, 6),
                                       depth=(2, 1, 1), types=("s", "i", "s"), act_layer=torch.nn.GELU),
}
# a stride-64 network: 99x67 images give 7x5, 4x3 and 2x2 maps in the stages
SIZE = (99, 67)


def randomize(model, seed):
    """timm's ``model`` with random parameters and BatchNorm statistics (the head's BatchNorm1d's included)."""
    randomize_parameters(model, seed, norms=True)
    g = torch.Generator().manual_seed(seed + 100)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm1d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) * 1.5 + 0.5)
    return model


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's weights and BatchNorm statistics randomised and loaded in ours
    through numpy, in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_shvit.SHViT(**config), seed).eval()
    ours = shvit.SHViT(**dict(config, act_layer=engine.nn.GELU) if "act_layer" in config else config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree and classes (but timm's empty squeeze-and-excitation norm slot), layer printouts,
    feature_info, num_features, head_hidden_size and default_cfg. Init is skipped on both sides, timm's model lives
    on the meta device."""
    ours_calls = capture_builder(monkeypatch, shvit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_shvit, "build_model_with_cfg")
    for name in NAMES:
        getattr(shvit, name)()
        getattr(timm_shvit, name)()
    for name, (ours_cls, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is shvit.SHViT
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_shvit, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        check_layout(models.create_model(name), reference, PLACEHOLDERS, PRINTED, types=True)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (the head's truncated normal within 2 float32 ulps, the default
    convolution draws, zero-scaled BatchNorms and the rest bit for bit) and leaves both random streams in step."""
    config = dict(SMALL["plain"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_shvit.SHViT(**config), lambda: shvit.SHViT(**config), 3,
                                        lambda reference: {"head.l.weight"})
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == ours.head_hidden_size == 32


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient (GroupNorm's and the head's
    included) and the updated BatchNorm running statistics equal timm's."""
    reference, ours = small_pair("gelu_first_stage_attention", seed=4, num_classes=7)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, 67, 70, seed=5).astype(np.float64))


def test_head_dropout_only_in_training():
    """The head's functional dropout (no dropout or drop-path modules anywhere, as in timm) draws timm's mask after
    the same seed in training and leaves eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5)
    assert check_drop_rates(reference, ours) == []
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7), TOL, TOL)


def test_head_api_in_chans_and_bad_arguments():
    """On a one-channel model with max pooling: pre-logits features; ``num_classes=0`` gives them; reset_classifier
    a new head (in the model's mode) keeping or changing the pooling as timm's, '' with no classes the unpooled map;
    pooling that widens the features is refused."""
    reference, ours = small_pair(seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)
    headless = shvit.SHViT(**SMALL["plain"], in_chans=1, num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    ours.reset_classifier(5)
    assert ours.global_pool.pool_type == "max" and tuple(ours.get_classifier().weight.shape) == (5, 32)
    reference.reset_classifier(3, "avgmax")
    ours.reset_classifier(3, "avgmax")
    assert not ours.head.training and ours.global_pool.pool_type == "avgmax"
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 3)
    assert_close(out, ref, TOL)
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 32, 2, 2)
    assert np.array_equal(out, both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))[0])
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(5, "catavgmax")
    with pytest.raises(ValueError, match="global_pool"):
        shvit.SHViT(**SMALL["plain"], global_pool="median")


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's three stage taps (or those of out_indices), feature_info,
    flattened module names (``patch_embed_0``... ``stages_2``) and state dict, and feature maps;
    forward_intermediates of some stages and stopping early; prune_intermediate_layers drops the later stages and
    the head as timm's does."""
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 3), ((0, 2), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("shvit_s1", randomize, 14, **SMALL["plain"], **kwargs)
        assert type(ours) is FlatFeatureListNet
        assert [n for n, _ in ours.named_children()][0] == "patch_embed_0"
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 24
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24, 4, 3)
    assert_close(out, ref, TOL)


def test_fuse_matches_timm():
    """fuse() folds every Conv2dNorm (the residual depthwise ones with their skip) into a biased convolution and the
    head into one linear layer, as timm's: the same module tree and state_dict layout as timm's fused model, and
    the unfused eval outputs, timm's fused ones."""
    reference, ours = small_pair("gelu_first_stage_attention", seed=17)
    x = image_batch(2, *SIZE, seed=18)
    unfused = both_outputs(reference, ours, x)[0]
    assert ours.fuse() is ours
    reference.fuse()
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()
                                                    if not n.endswith(PLACEHOLDERS)]
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in reference.state_dict().items()}
    assert type(ours.stages[0].blocks[0].conv) is engine.nn.Conv2d and type(ours.head) is engine.nn.Linear
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    assert_close(out, unfused, TOL)


def test_list_models():
    """The registry lists every variant with weights under its timm name and module."""
    names = models.list_models(module="shvit")
    assert names == [n for n in timm.list_models(module="shvit") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("shvit*")}
