"""timm parity of LowFormer (lowformer_b0/b1/b15/b2/b3/e1/e2/e3): every variant's configuration and layout, seeded
initialisation, eval outputs (float32) of small models (fused blocks with two attention heads and stem blocks;
unfused blocks with grouped expansions, the separate output projection and an empty stage; attention without the
MLP branch; neither), float64 train-mode outputs, gradients and BatchNorm statistics, all with timm's weights
loaded; stochastic depth, the MLPs' dropout and the head's functional dropout, and the timm API (pre-logits,
pooling, the unpooled head, reset_classifier with reset_other, in_chans, features_only, forward_intermediates,
prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import lowformer as timm_lowformer

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import lowformer
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, features_only_pair, image_batch, linear_weights,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["lowformer_b0", "lowformer_b1", "lowformer_b15", "lowformer_b2", "lowformer_b3", "lowformer_e1",
         "lowformer_e2", "lowformer_e3"]
TOL = 1e-4
PRINTED = ("Conv2d", "ConvTranspose2d", "BatchNorm2d", "GroupNorm1", "LayerNorm", "Linear", "Hardswish", "GELU",
           "Dropout", "Flatten", "Identity")
# Small models: widths 8 to 32, one block a stage and head widths 48 and 64. "fused" has a stem block, timm's B1-B3
# downsampling expansion and 120-channel attention stages (two heads of 30 channels, timm's smallest head count
# being two); "unfused" MBConv blocks with 1x1 convolutions in two groups and an empty second stage; "no_mlp" (E3)
# and "no_attn" (E1, E2) drop branches.
_NARROW = dict(width_list=[8, 16, 16, 32, 32], depth_list=[0, 1, 1, 1, 1], head_widths=(48, 64))
SMALL = {
    "fused": dict(width_list=[8, 16, 24, 120, 120], depth_list=[1, 1, 1, 1, 1], head_widths=(48, 64),
                  downsample_expand_ratios=(6, 6, 6, 6)),
    "unfused": dict(_NARROW, depth_list=[0, 1, 0, 1, 1], fused_conv=False, expand_groups=2),
    "no_mlp": dict(_NARROW, attn_mlp=False),
    "no_attn": dict(_NARROW, attn=False, attn_mlp=False),
}
SIZE = (35, 33)


def small_pair(kind="fused", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights and BatchNorm statistics (timm's, loaded in ours
    through numpy), in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_lowformer.LowFormer(**config), seed, norms=True).eval()
    ours = lowformer.LowFormer(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, lowformer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_lowformer, "build_model_with_cfg")
    for name in NAMES:
        getattr(lowformer, name)()
        getattr(timm_lowformer, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_lowformer, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (the linear layers' truncated normals within 2 float32 ulps,
    convolutions, transposed convolutions and the rest bit for bit) and leaves both random streams in step."""
    config = dict(SMALL["fused"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_lowformer.LowFormer(**config),
                                        lambda: lowformer.LowFormer(**config), 3, linear_weights)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size (the strided attention's upsampled map cropped), timm's
    weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", ["fused", "unfused"])
def test_train_mode_gradients_and_statistics_match_timm(kind):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's."""
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates over all blocks, one module per branch, none where the rate is 0), the
    MLPs' dropout and the head's functional dropout draw timm's masks after the same seed in training, and leave
    eval outputs alone; with a single attention head too (the "unfused" model), whose output torch lays out
    channels-last, as ours is (its MLP dropout draws in that memory order)."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, proj_drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.125, 0.25] + [0.375] * 3 + [0.5] * 3)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))
    reference, ours = small_pair("unfused", seed=6, proj_drop_rate=0.5)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_pooling_in_chans_and_bad_arguments():
    """On a one-channel model: pre-logits features, ``num_classes=0`` (the pre-classifier features),
    reset_classifier to new pooling and classes, to the unpooled head (the linear layers at every position, a map
    back) and with ``reset_other`` (pooled features straight into the classifier), as timm's; pooling that changes
    the width, unknown pooling and a wrong count of downsampling ratios are refused."""
    reference, ours = small_pair("no_mlp", seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 64)
    assert_close(pre, pre_ref, TOL)
    headless = lowformer.LowFormer(**SMALL["no_mlp"], in_chans=1, num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    for num_classes, pool, shape in ((5, "avgmax", (2, 5)), (6, "", (2, 6, 2, 2))):
        reference.reset_classifier(num_classes, pool)
        ours.reset_classifier(num_classes, pool)
        ours.classifier.load_state_dict(numpy_state(reference.classifier))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == shape and not ours.classifier.training
        assert_close(out, ref, TOL)
    reference.reset_classifier(3, "avg", reset_other=True)
    ours.reset_classifier(3, "avg", reset_other=True)
    assert ours.head_hidden_size == reference.head_hidden_size == 32
    ours.classifier.load_state_dict(numpy_state(reference.classifier))
    check_structure(ours, reference, types=False)
    assert_close(*both_outputs(reference, ours, x), TOL)
    with pytest.raises(ValueError, match="width"):
        ours.reset_classifier(3, "catavgmax")
    with pytest.raises(ValueError, match="global_pool"):
        lowformer.LowFormer(**SMALL["no_mlp"], global_pool="median")
    with pytest.raises(ValueError, match="downsample_expand_ratios"):
        lowformer.LowFormer(**SMALL["no_mlp"], downsample_expand_ratios=(6, 6))


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices), feature_info,
    flattened module names (``stem_0``, ``stages_3``) and state dict, and feature maps; forward_intermediates
    (``norm`` a no-op) and stopping early; prune_intermediate_layers drops the later stages and the head's layers
    but pooling as timm's does, or only those when the last stage stays."""
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 4), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("lowformer_b0", lambda m, s: randomize_parameters(m, s, norms=True),
                                             14, **SMALL["no_attn"], **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair("no_mlp", seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    for indices, width in (([3], 32), ([1], 16)):
        assert ours.prune_intermediate_layers(indices) == reference.prune_intermediate_layers(indices) == indices
        check_structure(ours, reference, types=False)
        assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == width
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == (2, width)
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's variants under their timm names and module: those with 1k weights and
    the untrained lowformer_b2, registered too."""
    names = models.list_models(module="lowformer")
    assert names == timm.list_models(module="lowformer")
    assert set(names) == set(NAMES)
    assert set(NAMES) - {"lowformer_b2"} == {n.split(".")[0] for n in timm.list_pretrained("lowformer*")}
