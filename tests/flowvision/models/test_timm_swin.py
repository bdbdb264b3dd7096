"""timm's Swin Transformer family against timm: every registered variant's configuration, and its module tree,
state_dict layout, non-persistent buffers (relative position indices, shifted-window masks) and seeded initialisation
rebuilt narrow; eval outputs of a small model at an odd image size (padded, shifted, partly shifted and clamped
windows, odd patch merging); float64 train-mode outputs and every gradient; dropout and drop path; and the timm API
(pre-logits features, global pooling, reset_classifier, in_chans, image size check, features_only, forward
intermediates, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.swin_transformer as timm_swin
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import swin_transformer as swin
from model_parity import (backward_both, both_outputs, capture_builder, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_fixed_size_config,
                          check_intermediates, check_layout, features_only_pair, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]  # one BLAS thread a side: tiny tensors

SWINS = ["swin_tiny_patch4_window7_224", "swin_small_patch4_window7_224", "swin_base_patch4_window7_224",
         "swin_base_patch4_window12_384", "swin_large_patch4_window7_224", "swin_large_patch4_window12_384",
         "swin_s3_tiny_224", "swin_s3_small_224", "swin_s3_base_224"]
# (50, 26) images: a (12, 6) patch grid, so stage 1 pads its 4x4 windows, stage 2 (6, 3) shifts its (4, 3) windows
# by (2, 0) only, stage 3 (3, 2) is one clamped window and stage 4 merges an odd map to (2, 1)
SIZE = (50, 26)
SMALL = dict(img_size=SIZE, patch_size=4, embed_dim=8, depths=(2, 2, 1, 1), num_heads=(2, 2, 4, 4), window_size=4,
             num_classes=7, drop_path_rate=0.0)
# random values for every parameter of a timm model (its zero biases, unit norms and small bias tables hide bugs)
randomize = partial(randomize_parameters, tokens=("relative_position_bias_table",))


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small Swin with timm's randomised weights in both, in eval mode."""
    config = {**SMALL, **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_swin.SwinTransformer(**config), seed)
    ours = swin.SwinTransformer(**config, weight_init="skip")
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


@pytest.mark.parametrize("name", SWINS)
def test_variant_config_layout_and_seeded_init_match_timm(name, monkeypatch):
    """Each entrypoint passes timm's configuration (with the image size of timm's weights); rebuilt narrow (two
    channels a head) and shallow (two blocks a stage) from the same seed, both models have the same module tree,
    windows and shifts, state_dict keys, order, shapes and dtypes, the same buffers (relative position indices,
    shifted-window masks) and the same initial values (truncated normals within 2 float32 ulps: the engine's erfinv
    rounds differently from torch's), and both random streams end in step."""
    ours_calls = capture_builder(monkeypatch, swin, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_swin, "build_model_with_cfg")
    getattr(swin, name)()
    getattr(timm_swin, name)()
    monkeypatch.undo()

    def same(key, value, expected):
        """Window sizes as each stage takes them, the other values as they are."""
        if key == "window_size":
            return swin.stage_window_sizes(value, 4) == timm_swin.resolve_stage_window_sizes(expected, 4)
        return value == expected

    timm_kwargs = check_fixed_size_config(name, ours_calls[0], timm_calls[0], same)

    narrow = dict(timm_kwargs, embed_dim=2 * timm_kwargs["num_heads"][0], depths=(2, 2, 2, 2))
    engine.manual_seed(3)
    ours = swin.SwinTransformer(**narrow)
    torch.manual_seed(3)
    reference = timm_swin.SwinTransformer(**narrow)
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    ours_modules, ref_modules = dict(ours.named_modules()), dict(reference.named_modules())
    assert list(ours_modules) == list(ref_modules)
    for path, ref_module in ref_modules.items():
        for attr in ("eps", "p", "drop_prob", "in_features", "out_features", "window_size", "shift_size",
                     "input_resolution", "kernel_size", "stride"):
            if hasattr(ref_module, attr):
                value = getattr(ours_modules[path], "p" if attr == "drop_prob" else attr)
                assert value == pytest.approx(getattr(ref_module, attr)), (path, attr)
    assert ours.feature_info == reference.feature_info and ours.num_features == reference.num_features
    state, expected = ours.state_dict(), numpy_state(reference)
    assert list(state) == list(expected)
    for key, value in expected.items():
        ours_value = state[key].numpy()
        assert ours_value.shape == value.shape and ours_value.dtype == value.dtype, key
        np.testing.assert_allclose(ours_value, value, rtol=0, atol=2 * np.spacing(np.float32(0.1)), err_msg=key)
    buffers = {k: v.numpy() for k, v in ours.named_buffers()}
    ref_buffers = {k: v.numpy() for k, v in reference.named_buffers()}
    assert sorted(buffers) == sorted(ref_buffers)
    for key, value in ref_buffers.items():
        assert buffers[key].dtype == value.dtype and np.array_equal(buffers[key], value), key


def test_full_size_layout_matches_timm(monkeypatch):
    """Swin-T as registered against timm's, built on the meta device: state_dict keys in order, shapes and dtypes,
    the module tree, the printout of every layer, feature_info, num_features and default_cfg."""
    with torch.device("meta"):
        reference = timm.create_model("swin_tiny_patch4_window7_224")
    skip_random_init(monkeypatch)
    monkeypatch.setattr(swin, "trunc_normal_", lambda tensor, std=0.02: tensor)
    ours = swin.swin_tiny_patch4_window7_224()
    check_layout(ours, reference, (), ("Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "Softmax", "Identity",
                                       "SelectAdaptivePool2d"))
    assert ours.head_hidden_size == 768

def test_eval_outputs_match_timm():
    """Float32 eval outputs, features and pre-logits of a small model at an odd image size (batch 2)."""
    reference, ours = small_pair()
    x = image_batch(2, *SIZE, seed=1)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7)
    assert_close(out, ref, 1e-5)
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 64)
    assert_close(out, ref, 1e-5)


def test_train_mode_gradients_match_timm_float64():
    """Float64 train mode, windows always partitioned and shifted, 3-channel heads, an MLP ratio per stage: outputs,
    the input gradient and every parameter gradient equal timm's."""
    config = dict(always_partition=True, head_dim=3, mlp_ratio=(2.0, 3.0, 1.5, 2.0))
    reference, ours = small_pair(seed=2, **config)
    assert ours.layers[3].blocks[0].window_size == (4, 4)
    reference, ours = reference.double().train(), ours.double().train()
    x = image_batch(2, *SIZE, seed=3).astype(np.float64)
    ref_params, our_params = backward_both(reference, ours, x)
    assert list(ref_params) == list(our_params)
    for name, p in ref_params.items():
        assert_close(our_params[name].grad.numpy(), p.grad.numpy(), 1e-9, what=f"{name} grad")


DROPOUTS = dict(drop_rate=0.3, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.5)


def test_dropout_and_drop_path_follow_timm():
    """timm's per-block drop path rates (rising to drop_path_rate) and dropout rates; eval outputs unaffected; in
    train mode the same seed draws timm's masks (timm's outputs), another seed others."""
    reference, ours = small_pair(seed=4, **DROPOUTS)
    assert check_drop_rates(reference, ours)[-1] == pytest.approx(0.5)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=5))


def test_pooling_reset_classifier_and_in_chans():
    """num_classes=0 gives the pooled features; reset_classifier changes the classes and pooling as timm's does
    ('' classifies every position of the channels-last map); in_chans=1 builds a one-channel patch projection; an
    image of another size than the model's is refused."""
    reference, ours = small_pair(seed=6, num_classes=0, in_chans=1)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.head_hidden_size == 64
    assert tuple(ours.patch_embed.proj.weight.shape) == (8, 1, 4, 4)
    x = image_batch(2, *SIZE, seed=7, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 64)
    assert_close(out, ref, 1e-5)
    for num_classes, pool in ((5, "catavgmax"), (3, ""), (4, "avgmax"), (0, "max")):
        reference.reset_classifier(num_classes, pool)
        ours.reset_classifier(num_classes, pool)
        if num_classes:
            ours.get_classifier().load_state_dict(numpy_state(reference.get_classifier()))
        assert ours.head_hidden_size == reference.head_hidden_size and ours.global_pool == pool
        assert ours.num_classes == num_classes
        out, ref = both_outputs(reference, ours, x)
        assert_close(out, ref, 1e-5)
    assert out.shape == (2, 64) and ours.training is False
    model = models.create_model("swin_tiny_patch4_window7_224", img_size=SIZE, embed_dim=8, depths=(1, 1, 1, 1))
    with pytest.raises(ValueError, match="img_size"):
        model(engine.zeros(1, 3, 48, 26))


def test_features_only_and_intermediates_match_timm():
    """features_only: timm's stages (all by default, or out_indices) as channels-last maps, timm's state_dict keys
    (layers flattened to ``layers_<i>``, what follows the last stage pruned) and feature_info; forward_intermediates
    gives (N, C, H, W) maps, the final norm on the last stage and the final map, and stops early."""
    for out_indices, count in ((None, 4), ((0, -2), 2)):
        kwargs = dict(SMALL, num_classes=1000)
        if out_indices is not None:
            kwargs["out_indices"] = out_indices
        reference, ours = features_only_pair("swin_tiny_patch4_window7_224", randomize, 8, **kwargs)
        maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=9), count, 1e-5)
        assert maps[-1].shape[-1] == ours.feature_info.channels()[-1]
    reference, ours = small_pair(seed=10)
    x = image_batch(2, *SIZE, seed=11)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    assert len(ours.layers) == 2 and ours.num_features == ours.head_hidden_size == 16
    assert isinstance(ours.norm, engine.nn.Identity)
    assert list(ours.state_dict()) == list(reference.state_dict())


def test_list_models():
    """Every variant is registered under timm's module name, beside torchvision's Swin models."""
    assert set(models.list_models("swin_*")) >= set(SWINS)
    assert set(SWINS) <= set(models.list_models(module="swin_transformer"))
    assert set(models.list_models(module="swin_transformer")) - set(SWINS) == {
        "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b"}
