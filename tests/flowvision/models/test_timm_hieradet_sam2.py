"""timm parity of HieraDet, SAM 2's image encoder (sam2_hiera_tiny/small/base_plus/large; timm's untrained classifier
hieradet_small): every variant's configuration and layout, seeded initialisation (timm's ViT and JAX schemes), eval
outputs (float32) of small models at odd, non-square input sizes covering every option (windowed attention with and
without padding, global attention, query and shortcut pooling inside windows, the one-block window lag, a widening
block without pooling, layer scale, the resized global plus tiled window position embedding) and float64 train-mode
outputs and gradients, all with timm's weights loaded; stochastic depth and dropout; and the timm API (pre-logits,
pooling, reset_classifier, in_chans, features_only, forward_intermediates, prune_intermediate_layers, bad arguments,
list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import hieradet_sam2 as timm_hieradet

import engine
import flowvision.models as models
from flowvision.models.timm_families import hieradet_sam2
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_intermediates, check_layout, check_seeded_init, check_train_step, image_batch,
                          numpy_state, pre_logits, randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["sam2_hiera_tiny", "sam2_hiera_small", "sam2_hiera_base_plus", "sam2_hiera_large"]
# timm's untrained classifier (no published weights)
UNTRAINED = ["hieradet_small"]
TOL = 1e-4
PRINTED = ("MultiScaleBlock", "HieraPatchEmbed", "Conv2d", "LayerNorm", "Linear", "GELU", "MaxPool2d", "Dropout",
           "Identity")

# Small models, 8 wide, on 31 x 45 images (an 8 x 12 token grid). "windows": four stages of 1, 2, 2 and 1 blocks:
# 4 x 4 windows (the position table's tile), pooled to 2 x 2 in block 1; block 2 global; block 3 pools 2 x 2
# windows (the lag); block 4 pads its 2 x 3 map to 3 x 3 windows, block 5 pools after the same padding; timm's
# ViT init. "scaled": three stages of one block, only the first pooled (a widening block without pooling, padded
# to 3 x 3 windows next), layer scale, JAX init, two heads.
SMALL = {
    "windows": dict(embed_dim=8, num_heads=1, stages=(1, 2, 2, 1), window_spec=(4, 2, 3, 1), global_att_blocks=(2,),
                    global_pos_size=(3, 5), num_classes=10),
    "scaled": dict(embed_dim=8, num_heads=2, stages=(1, 1, 1), q_pool=1, window_spec=(2, 3, 3), global_att_blocks=(),
                   global_pos_size=(4, 4), init_values=1e-5, weight_init="jax", num_classes=10),
}
SIZE = (31, 45)


def randomize(model, seed):
    """Random values for every parameter of a timm HieraDet (its near-zero classifier, unit norms, 0.02 biases and
    small layer scales would hide bugs); the position tables N(0, 1)."""
    return randomize_parameters(model, seed, scales=("gamma",), tokens=("pos_embed", "pos_embed_window"))


def small_pair(kind="windows", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's randomised weights loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize(timm_hieradet.HieraDet(**SMALL[kind], **kwargs), seed).eval()
    ours = hieradet_sam2.HieraDet(**SMALL[kind], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def drawn_weights(model):
    """The keys timm draws from a truncated normal: position tables, convolution and linear weights."""
    return {"pos_embed", "pos_embed_window"} | {f"{n}.weight" for n, m in model.named_modules()
                                                if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))}


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands its class timm's configuration; rebuilt at full width with one block a stage (headless,
    as SAM 2's weights are), each has timm's layout: state_dict keys, order, shapes and dtypes, module tree, layer
    printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, hieradet_sam2, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_hieradet, "build_model_with_cfg")
    for name in NAMES + UNTRAINED:
        getattr(hieradet_sam2, name)(num_classes=0)
        getattr(timm_hieradet, name)(num_classes=0)
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES + UNTRAINED, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert ours_kwargs == expected | {"progress": True}, name
        # at full width with one block a stage (the blocks repeat; all of them would take seconds to allocate)
        config = {k: v for k, v in expected.items() if k not in ("variant", "pretrained")}
        config |= dict(stages=(1, 1, 1, 1), fix_init=False)
        with torch.device("meta"):
            reference = timm_hieradet.HieraDet(**config)
        reference.pretrained_cfg = timm.models.get_pretrained_cfg(name).to_dict()
        check_layout(hieradet_sam2.HieraDet(**config), reference, (), PRINTED)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_equals_timm(kind):
    """From the same seed, timm's initial weights drawn in timm's order (the layers' defaults, the position tables,
    then per layer the ViT or JAX scheme, the output layers rescaled by depth, the scaled zero classifier): the
    truncated normals within 2 float32 ulps, the rest bit for bit, both random streams in step; the stochastic depth
    rates are timm's."""
    config = dict(SMALL[kind], drop_path_rate=0.3)
    reference, ours = check_seeded_init(lambda: timm_hieradet.HieraDet(**config),
                                        lambda: hieradet_sam2.HieraDet(**config), 3, drawn_weights, kind)
    assert ours.feature_info == reference.feature_info
    assert check_drop_rates(reference, ours)[-1] == pytest.approx(0.3)


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_and_train_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd, non-square size in eval mode, then, in float64 and train mode,
    outputs, the input gradient and every parameter's gradient (the position tables' through the bicubic resize and
    the tiling) equal timm's."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=3).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (no module where the rate is 0) and the head's dropout draw timm's masks after the same seed
    in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=4, drop_rate=0.5, drop_path_rate=0.5)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=5))


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits features and logits for other poolings, a one-channel model built with ``num_classes=0``,
    reset_classifier to a new size and pooling and (``reset_other``) without the head's norm, as timm's; clear
    errors where timm fails (a pooling it lacks, too many pooled stages, a window per stage missing, the ViT-style
    patch embedding, normed intermediates)."""
    x = image_batch(2, *SIZE, seed=6)
    for global_pool in ("avgmax", ""):
        reference, ours = small_pair(seed=7, global_pool=global_pool)
        assert_close(*both_outputs(reference, ours, x), TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 1, 1, 64)
    assert_close(pre, pre_ref, TOL)
    reference, ours = small_pair(seed=8, in_chans=1)
    headless = hieradet_sam2.HieraDet(**SMALL["windows"] | dict(in_chans=1, num_classes=0))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc.")})
    x = image_batch(2, *SIZE, seed=9, c=1)
    pre, pre_ref = both_outputs(reference, headless.eval(), x, pre_logits)
    assert pre.shape == (2, 64) and headless.head_hidden_size == reference.head_hidden_size == 64
    assert_close(pre, pre_ref, TOL)
    assert_close(to_numpy(headless(engine.from_numpy(x))), pre_ref, TOL)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    for args in ((5, "max"), (3, None, True)):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
        assert not ours.get_classifier().training
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == (2, args[0])
        assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        hieradet_sam2.HieraDet(**SMALL["windows"] | dict(global_pool="token"))
    with pytest.raises(ValueError, match="q_pool"):
        hieradet_sam2.HieraDet(**SMALL["windows"] | dict(q_pool=4))
    with pytest.raises(ValueError, match="window_spec"):
        hieradet_sam2.HieraDet(**SMALL["windows"] | dict(window_spec=(4, 2, 3)))
    with pytest.raises(NotImplementedError, match="patch_size"):
        hieradet_sam2.HieraDet(**SMALL["windows"] | dict(patch_size=4))
    with pytest.raises(ValueError, match="normalisation"):
        ours.forward_intermediates(engine.from_numpy(x), norm=True)


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the entrypoints' builder (timm's default: all four stages; or ``out_indices``): timm's
    feature_info, state_dict (the head without its norm) and stage maps; forward_intermediates by stage and by block
    (NHWC, without stopping early); prune_intermediate_layers drops the later blocks and the head."""
    x = image_batch(2, *SIZE, seed=10)
    for kwargs in ({}, {"out_indices": (1, 3)}):
        torch.manual_seed(11)
        reference = timm_hieradet._create_hiera_det("sam2_hiera_tiny", features_only=True, **SMALL["windows"],
                                                    **kwargs)
        randomize(reference, 11).eval()
        ours = hieradet_sam2._create_hiera_det("sam2_hiera_tiny", False, True,
                                               dict(features_only=True, **SMALL["windows"], **kwargs))
        assert list(ours.state_dict()) == list(reference.state_dict())
        ours.load_state_dict(numpy_state(reference))
        for key in ("module", "num_chs", "reduction"):
            assert ours.feature_info.get(key) == reference.feature_info.get(key)
        outs, refs = both_outputs(reference, ours.eval(), x)
        assert [o.shape for o in outs] == [r.shape for r in refs]
        assert len(outs) == (4 if not kwargs else 2) and outs[-1].shape == (2, 64, 1, 1)
        for out, ref in zip(outs, refs):
            assert_close(out, ref, TOL)
    reference, ours = small_pair("scaled", seed=12)
    out = check_intermediates(reference, ours, x, TOL, indices=(0, 2), output_fmt="NHWC", stop_early=False)
    assert [o.shape for o in out[1]] == [(2, 8, 12, 8), (2, 4, 6, 32)]
    check_intermediates(reference, ours, x, TOL, indices=2, coarse=False, intermediates_only=True)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NLC")
    assert reference.prune_intermediate_layers(1, coarse=False) == ours.prune_intermediate_layers(1, coarse=False)
    assert reference.prune_intermediate_layers([1]) == ours.prune_intermediate_layers([1]) == [1]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    assert ours.num_features == ours.head_hidden_size == reference.num_features == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's HieraDets under their names and module: every SAM 2 variant and the untrained
    hieradet_small too."""
    names = models.list_models(module="hieradet_sam2")
    assert names == timm.list_models(module="hieradet_sam2")
    assert set(names) - set(UNTRAINED) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("sam2_hiera*")}
