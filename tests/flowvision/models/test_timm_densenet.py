"""timm parity of timm's DenseNet (densenetblur121d, and the untrained densenet264d): the variants' configuration and
layout, seeded initialisation, eval outputs (float32) of small models (the deep stem with the blurred pooling, the 7x7
stem with plain pooling, the tiered stems, one with blurred transitions, with other activations), float64 train-mode
outputs, gradients and BatchNorm statistics (with and without the memory-efficient bottleneck), all with timm's
weights loaded; the dense layers' and the head's dropout, and the timm API (pre-logits, pooling, reset_classifier,
in_chans, bad arguments, features_only, forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.layers import BlurPool2d as TimmBlurPool2d
from timm.models import densenet as timm_densenet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import densenet
from model_parity import (both_outputs, capture_builder, check_dropout_only_in_training, check_feature_maps,
                          check_intermediates, check_layout, check_seeded_init, check_structure, check_train_step,
                          features_only_pair, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

# timm's variants: densenetblur121d has weights, densenet264d (about 73M parameters) is untrained and registered too
NAMES = ["densenetblur121d", "densenet264d"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNormAct2d", "MaxPool2d", "AvgPool2d", "BlurPool2d", "ReLU", "Flatten", "Dropout",
           "Linear")
# Small models: growth rate 8 (16-channel stems, 16-32 channel blocks), one or two layers a block. timm's and our
# anti-aliasing class go in as "aa_layer" where a configuration names "blur".
SMALL = {
    "deep_blur": dict(growth_rate=8, block_config=(1, 2, 1, 1), stem_type="deep", aa_layer="blur"),
    "plain": dict(growth_rate=8, block_config=(2, 1, 1, 1), bn_size=2),
    "tiered_blur_transitions_silu": dict(growth_rate=8, block_config=(1, 1, 2, 1), stem_type="deep_tiered",
                                         aa_layer="blur", aa_stem_only=False, act_layer="silu"),
    "tiered_narrow_gelu": dict(growth_rate=8, block_config=(1, 1, 1, 1), stem_type="deep_tiered_narrow",
                               act_layer="gelu"),
}
SIZE = (35, 33)


def config(kind, timm_side, **kwargs):
    """The ``kind`` small configuration with ``kwargs``, its anti-aliasing class timm's or ours."""
    cfg = dict(SMALL[kind], **kwargs)
    if cfg.get("aa_layer") == "blur":
        cfg["aa_layer"] = TimmBlurPool2d if timm_side else densenet.BlurPool2d
    return cfg


def small_pair(kind="deep_blur", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with random weights and BatchNorm statistics (timm's, loaded in ours
    through numpy), in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_densenet.DenseNet(**config(kind, True, **kwargs)), seed, norms=True).eval()
    ours = densenet.DenseNet(**config(kind, False, **kwargs))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """The entrypoint hands its class timm's configuration (our blur-pool class for timm's) and builds timm's
    layout: state_dict keys, order, shapes, dtypes, module tree and class names, layer printouts, feature_info,
    num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, densenet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_densenet, "build_model_with_cfg")
    for name in NAMES:
        getattr(densenet, name)()
        getattr(timm_densenet, name)()
    for name, (ours_cls, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is densenet.DenseNet
        if name == "densenetblur121d":
            assert ours_kwargs.pop("aa_layer") is densenet.BlurPool2d
            assert timm_kwargs.pop("aa_layer") is TimmBlurPool2d
        assert timm_kwargs.pop("feature_cfg") == dict(flatten_sequential=True), name
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k != "pretrained_filter_fn"} | {
            "progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # timm's random draws on the meta device cost more than building its model: skipped as ours are
    for init_name in ("kaiming_normal_", "kaiming_uniform_", "uniform_"):
        monkeypatch.setattr(torch.nn.init, init_name, lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        ours = getattr(densenet, name)(num_classes=1000)
        check_layout(ours, reference, (), PRINTED, types=True)
        assert ours.feature_ends == reference.feature_ends


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_and_eval_outputs_match_timm(kind):
    """The same seed gives timm's initial weights bit for bit (He-normal convolutions, PyTorch's default classifier
    weight, zero bias) and leaves both random streams in step; with random weights and norms loaded, float32 logits
    of a batch of 2 at an odd size are timm's."""
    reference, ours = check_seeded_init(lambda: timm_densenet.DenseNet(**config(kind, True, num_classes=10)),
                                        lambda: densenet.DenseNet(**config(kind, False, num_classes=10)), 3,
                                        lambda model: set(), kind)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info and ours.feature_ends == reference.feature_ends
    randomize_parameters(reference, 1, norms=True).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("memory_efficient", [False, True])
def test_train_mode_gradients_and_statistics_match_timm(memory_efficient):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's; also (on the plain configuration) with every bottleneck recomputed in the backward
    pass, whose second run updates the statistics again, as torch's checkpoint does. set_grad_checkpointing
    switches the recomputation of every dense layer."""
    reference, ours = small_pair("plain" if memory_efficient else "deep_blur", seed=4, num_classes=7,
                                 memory_efficient=memory_efficient)
    layers = [m for m in ours.modules() if isinstance(m, densenet.DenseLayer)]
    assert [layer.grad_checkpointing for layer in layers] == [memory_efficient] * 5
    ours.set_grad_checkpointing(not memory_efficient)
    assert [layer.grad_checkpointing for layer in layers] == [not memory_efficient] * 5
    ours.set_grad_checkpointing(memory_efficient)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_dropout_only_in_training():
    """The dense layers' functional dropout (``proj_drop_rate``) and the head's: nothing dropped in eval mode
    (timm's outputs, no random draw), timm's masks after the same seed in training."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, proj_drop_rate=0.25)
    assert ours.head_drop.p == reference.head_drop.p == 0.5
    rates = [m.drop_rate for m in ours.modules() if isinstance(m, densenet.DenseLayer)]
    assert rates == [m.drop_rate for m in reference.modules() if isinstance(m, timm_densenet.DenseLayer)] == [0.25] * 5
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_in_chans_and_bad_arguments():
    """On a one-channel model pooled by 'max' (timm's outputs, a 2x2 final map): pre-logits features, ``num_classes=0``,
    reset_classifier to another size and pooling (wider features), keeping the pooling, and to no pooling, as
    timm's; an unknown pooling, norm or activation is refused."""
    reference, ours = small_pair("plain", seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, 67, 63, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 18)
    assert_close(pre, pre_ref, TOL)
    headless = densenet.DenseNet(**SMALL["plain"], in_chans=1, num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("classifier.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    for num_classes, global_pool in ((5, "catavgmax"), (3, None), (0, "")):
        reference.reset_classifier(num_classes, global_pool)
        ours.reset_classifier(num_classes, global_pool)
        check_structure(ours, reference, types=False)
        assert ours.num_classes == num_classes and ours.head_hidden_size == reference.head_hidden_size
        assert not ours.get_classifier().training
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ref.shape
        assert_close(out, ref, TOL)
    assert ours.head_hidden_size == 18 and out.shape == (2, 18, 2, 2)
    with pytest.raises(ValueError, match="global_pool"):
        densenet.DenseNet(**SMALL["plain"], global_pool="median")
    with pytest.raises(ValueError, match="norm_layer"):
        densenet.DenseNet(**SMALL["plain"], norm_layer="groupnorm")
    with pytest.raises(ValueError, match="act_layer"):
        densenet.DenseNet(**SMALL["plain"], act_layer="tanhexp")


@pytest.mark.parametrize("out_indices", [None, (0, 2)])
def test_features_only_matches_timm(out_indices):
    """features_only through the registry: timm's five taps (the deep stem's last norm, the first three blocks,
    the final norm) or those of out_indices, feature_info, flattened module names (``features_norm2``,
    ``features_pool0``) and state dict, and feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    reference, ours = features_only_pair("densenetblur121d", lambda m, s: randomize_parameters(m, s, norms=True), 14,
                                         growth_rate=8, block_config=(1, 1, 1, 1), **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=15), 5 if out_indices is None else 2, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates (all taps, the last two, stopping early after the first block) and
    prune_intermediate_layers (the layers after the first block dropped, the classifier and pooling too) as
    timm's."""
    reference, ours = small_pair(seed=16)
    x = image_batch(2, *SIZE, seed=17)
    final, intermediates = check_intermediates(reference, ours, x, TOL)
    assert len(intermediates) == 5 and np.array_equal(final, intermediates[-1])
    check_intermediates(reference, ours, x, TOL, indices=2, norm=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, 1], stop_early=True)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference, types=False)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 24
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == ref.shape == (2, 24, 9, 9)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's ``densenet`` module: timm's densenetblur121d and the untrained densenet264d
    beside torchvision's DenseNets (which serve timm's other DenseNet weights)."""
    names = models.list_models(module="densenet")
    assert names == timm.list_models(module="densenet")
    assert [n for n in names if ".timm_families." in models.model_entrypoint(n).__module__] == sorted(NAMES)
    assert set(names) - {n.split(".")[0] for n in timm.list_pretrained("densenet*")} == {"densenet264d"}
