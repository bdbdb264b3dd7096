"""timm parity of EfficientViM (efficientvim_m1 to m4 and their distilled forms): every variant's configuration and
layout, seeded initialisation, eval outputs (float32) of small models (plain and distilled, another MLP ratio and
hidden-state expansion, two blocks a stage), float64 train-mode outputs, gradients (the mixer's A and D, the branch
gates and the heads' fusion weights included) and BatchNorm statistics, all with timm's weights loaded; stochastic
depth and the heads' dropout, the distilled pair of outputs, the BatchNorm and residual folds (``fuse`` through
``reparameterize_model``), and the timm API (pre-logits, num_classes=0, reset_classifier, in_chans, bad arguments,
features_only, forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import efficientvim as timm_efficientvim
from timm.models import reparameterize_model as timm_reparameterize_model

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import efficientvim
from flowvision.models.timm_families.fastvit import reparameterize_model
from model_parity import (both_outputs, capture_builder, check_distilled_training, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, features_only_pair, image_batch, linear_weights,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["efficientvim_m1", "efficientvim_m2", "efficientvim_m3", "efficientvim_m4", "efficientvim_m1_dist",
         "efficientvim_m2_dist", "efficientvim_m3_dist", "efficientvim_m4_dist"]
TOL = 1e-4
PRINTED = ("Conv1d", "Conv2d", "BatchNorm2d", "LayerNorm", "LayerNorm2d", "ReLU", "SiLU", "Sigmoid", "Linear",
           "Dropout")
# timm's empty norm slot of squeeze-and-excitation (an identity, which ours leaves out)
SE_NORM = "conv.2.bn"
# Small models: widths 16, 24 and 32 (a stem of 2, 4, 8 and 16 channels), one block a stage, hidden states of 5, 4
# and 3 tokens; the second with two blocks in its first stage, MLP ratio 2 and a hidden state 1.5 times wider.
SMALL = {
    "plain": dict(embed_dim=(16, 24, 32), depths=(1, 1, 1), state_dim=(5, 4, 3)),
    "expanded": dict(embed_dim=(16, 24, 32), depths=(2, 1, 1), state_dim=(6, 3, 2), mlp_ratio=2.0, ssd_expand=1.5),
}
# 69x63 pixels: maps of 5x4, 3x2 and 2x1 in the three stages (odd sizes, several pixels for the softmax everywhere)
SIZE = (69, 63)


def model_classes(distilled):
    """(timm's class, ours): the distilled ones or the plain ones."""
    if distilled:
        return timm_efficientvim.EfficientViMDistilled, efficientvim.EfficientViMDistilled
    return timm_efficientvim.EfficientViM, efficientvim.EfficientViM


def small_pair(kind="plain", seed=0, distilled=False, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights randomised (the zero-initialised BatchNorm scales,
    gates, A, D and fusion weights included) and loaded in ours, in eval mode."""
    reference_cls, ours_cls = model_classes(distilled)
    config = SMALL[kind] | kwargs
    torch.manual_seed(seed)
    reference = randomize_parameters(reference_cls(**config), seed, norms=True).eval()
    ours = ours_cls(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def check_same_modules(ours, reference):
    """The same state_dict keys in order, shapes and dtypes, and the same module tree with the same class names
    (timm's DropPath is our StochasticDepth), timm's empty squeeze-and-excitation norm slots left out."""
    state = {k: (tuple(v.shape), v.numpy().dtype) for k, v in ours.state_dict().items()}
    assert list(state.items()) == [(k, (tuple(v.shape), v.numpy().dtype)) for k, v in reference.state_dict().items()]
    renamed = {"DropPath": "StochasticDepth"}
    expected = [(n, renamed.get(type(m).__name__, type(m).__name__)) for n, m in reference.named_modules()
                if not n.endswith(SE_NORM)]
    assert [(n, type(m).__name__) for n, m in ours.named_modules()] == expected


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands timm's class its configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree and class names, layer printouts, feature_info, num_features, head_hidden_size and
    default_cfg (both sets of heads for the distilled models)."""
    ours_calls = capture_builder(monkeypatch, efficientvim, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_efficientvim, "build_model_with_cfg")
    for name in NAMES:
        getattr(efficientvim, name)()
        getattr(timm_efficientvim, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls.__name__ == timm_cls.__name__, name
        assert timm_kwargs.pop("feature_cfg") == dict(out_indices=(0, 1, 2), feature_cls="getter")
        assert timm_kwargs.pop("pretrained_filter_fn") is timm_efficientvim.checkpoint_filter_fn
        assert ours_kwargs == timm_kwargs | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # timm's draws and resets skipped too: on the meta device they cost most of its build
    monkeypatch.setattr(torch.nn.modules.conv._ConvNd, "reset_parameters", lambda self: None)
    monkeypatch.setattr(torch.nn.Linear, "reset_parameters", lambda self: None)
    monkeypatch.setattr(timm_efficientvim.HSMSSD, "reset_parameters", lambda self: None)
    monkeypatch.setattr(timm_efficientvim.EfficientViM, "init_weights", lambda self, needs_reset=True: None)
    monkeypatch.setattr(timm_efficientvim.EfficientViM, "_init_weights", lambda self, m, needs_reset=True: None)
    for name in NAMES:
        reference = timm.create_model(name, device="meta")
        ours = models.create_model(name)
        check_layout(ours, reference, (SE_NORM,), PRINTED, types=True)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (PyTorch's default convolution init, A's uniform draw, the heads'
    truncated normals, those of the distillation heads after the model's; every norm at the identity) and leaves
    both random streams in step; the fusion weights learn as timm's."""
    config = dict(SMALL["plain"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_efficientvim.EfficientViMDistilled(**config),
                                        lambda: efficientvim.EfficientViMDistilled(**config), 3, linear_weights)
    check_same_modules(ours, reference)
    assert ours.feature_info == reference.feature_info
    assert [p.requires_grad for p in ours.parameters()] == [p.requires_grad for p in reference.parameters()]


@pytest.mark.parametrize("kind, distilled", [("expanded", False), ("plain", True)])
def test_eval_outputs_match_timm(kind, distilled):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy (the plain small model's
    in the head API test)."""
    reference, ours = small_pair(kind, seed=1, distilled=distilled)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's."""
    reference, ours = small_pair("expanded", seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_drop_path_dropout_and_distilled_training():
    """Stochastic depth (timm's per-block linear rates, one module drawing for the four branches of a block) and
    the heads' dropout (drawn for each pooled feature) give timm's masks after the same seed in training and leave
    eval outputs alone; after ``set_distilled_training()`` train mode gives timm's pair of fused predictions. The
    distilled classifier is both sets of heads; reset_classifier renews both (timm's draws, in the model's mode)
    and switches both fusion weights' learning."""
    reference, ours = small_pair(seed=6, distilled=True, drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.25, 0.5])
    check_same_modules(ours, reference)
    x = image_batch(2, *SIZE, seed=7)
    check_dropout_only_in_training(reference, ours, x)
    check_distilled_training(reference, ours, x, TOL, 1000)
    heads, heads_dist = ours.get_classifier()
    assert heads is ours.heads and heads_dist is ours.heads_dist
    ours.train()
    torch.manual_seed(13)
    reference.reset_classifier(6)
    engine.manual_seed(13)
    ours.reset_classifier(6)
    assert ours.heads_dist[3].training
    for key, value in numpy_state(reference).items():
        if key.startswith("heads"):
            assert np.array_equal(ours.state_dict()[key].numpy(), value), key
    ours.reset_classifier(0)
    assert all(isinstance(head, engine.nn.Identity) for head in ours.heads_dist)
    assert not ours.weights.requires_grad and not ours.weights_dist.requires_grad


def test_head_api_in_chans_and_bad_arguments():
    """On a one-channel model: logits, pre-logits features (the four pooled features concatenated) and
    ``num_classes=0`` as timm's; reset_classifier draws timm's fresh heads (PyTorch's default init) and leaves
    the fusion weights learning only with classes; without pooling, the features as they are; unknown pooling,
    heads without pooling and per-stage settings of different lengths are refused."""
    reference, ours = small_pair(seed=9, in_chans=1)
    x = image_batch(2, *SIZE, seed=10, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 104) and ours.num_features == ours.head_hidden_size == 104
    assert_close(pre, pre_ref, TOL)
    headless = efficientvim.EfficientViM(**SMALL["plain"], in_chans=1, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("heads.")})
    assert all(isinstance(head, engine.nn.Identity) for head in headless.get_classifier())
    assert not headless.weights.requires_grad
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    torch.manual_seed(11)
    reference.reset_classifier(5)
    engine.manual_seed(11)
    ours.reset_classifier(5)
    for key, value in numpy_state(reference.heads).items():
        assert np.array_equal(ours.heads.state_dict()[key].numpy(), value), key
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5) and not ours.heads[0].training
    assert_close(out, ref, TOL)
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    assert not ours.weights.requires_grad and not reference.weights.requires_grad
    features, expected = both_outputs(reference, ours, x)
    assert [f.shape for f in features] == [(2, 16, 5), (2, 24, 4), (2, 32, 3), (2, 32, 2)]
    for feature, value in zip(features, expected):
        assert_close(feature, value, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        efficientvim.EfficientViM(**SMALL["plain"], global_pool="max")
    with pytest.raises(ValueError, match="num_classes=0"):
        efficientvim.EfficientViM(**SMALL["plain"], global_pool="")
    with pytest.raises(ValueError, match="num_classes=0"):
        ours.reset_classifier(3)
    with pytest.raises(ValueError, match="one entry per stage"):
        efficientvim.EfficientViM(embed_dim=(16, 24), depths=(1, 1), state_dim=(5, 4, 3))


def test_fuse_matches_timm():
    """``reparameterize_model`` (each module's ``fuse()``, here in place) folds the BatchNorms, the downsampling's
    residual depthwise convolutions and the blocks' gated ones as timm's does: the same layers and weights, and
    the unfused eval outputs; fusing needs eval mode."""
    reference, ours = small_pair(seed=20, distilled=True)
    x = image_batch(2, *SIZE, seed=21)
    unfused = both_outputs(reference, ours, x)[1]
    ours.train()
    with pytest.raises(RuntimeError, match="eval mode"):
        ours.stages[0].blocks[0].fuse()
    with pytest.raises(RuntimeError, match="eval mode"):
        ours.stages[0].downsample.fuse()
    assert not ours.stages[0].blocks[0].fused
    timm_reparameterize_model(reference, inplace=True)
    assert reparameterize_model(ours.eval(), inplace=True) is ours
    check_same_modules(ours, reference)
    assert repr(ours.stages[0].blocks[0].dwconv1) == repr(reference.stages[0].blocks[0].dwconv1)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert_close(state[key].numpy(), value, 1e-6, what=key)
    out, ref = both_outputs(reference, ours, x)
    assert_close(ref, unfused, TOL)
    assert_close(out, unfused, TOL)


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's stage maps (all three, or those of out_indices), feature_info,
    module tree and state dict (the heads and norms pruned, fewer stages and fusion weights when the last
    stage is not asked for); forward_intermediates with the stages' norms, stopping early and the intermediates
    alone; prune_intermediate_layers as timm's, refusing to keep the heads on fewer stages."""
    x = image_batch(2, *SIZE, seed=15)
    for name, out_indices, count in (("efficientvim_m1", None, 3), ("efficientvim_m1_dist", (0, 1), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair(name, randomize_parameters, 14, **SMALL["plain"], **kwargs)
        assert type(ours) is FeatureGetterNet
        check_same_modules(ours, reference)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16, distilled=True)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True),
                   dict(indices=[0], norm=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    with pytest.raises(ValueError, match="prune_head"):
        ours.prune_intermediate_layers([1], prune_head=False)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_same_modules(ours, reference)
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 64
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 64)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights (the distilled ones included) under its timm name and
    module."""
    names = models.list_models(module="efficientvim")
    assert names == [n for n in timm.list_models(module="efficientvim") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("efficientvim*")}
