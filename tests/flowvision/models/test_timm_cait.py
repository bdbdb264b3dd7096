"""timm's CaiT family against timm: every registered variant's configuration, and its module tree, state_dict layout
and seeded initialisation rebuilt narrow and shallow; eval outputs of a small model at an odd image size (talking-heads
and class-attention blocks, both poolings); float64 train-mode outputs and every gradient; dropout and drop path; and
the timm API (pre-logits features, reset_classifier, in_chans, image size check, features_only, forward
intermediates, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.cait as timm_cait
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import cait
from model_parity import (backward_both, both_outputs, capture_builder, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_fixed_size_config,
                          check_intermediates, check_layout, features_only_pair, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]  # one BLAS thread a side: tiny tensors

CAITS = ["cait_xxs24_224", "cait_xxs24_384", "cait_xxs36_224", "cait_xxs36_384", "cait_xs24_384", "cait_s24_224",
         "cait_s24_384", "cait_s36_384", "cait_m36_384", "cait_m48_448"]
SIZE = (50, 38)  # a 6 x 4 grid of 8-pixel patches with pixels left over, not square
SMALL = dict(img_size=SIZE, patch_size=8, embed_dim=24, depth=2, num_heads=3, num_classes=7)
# random values for every parameter of a timm model (its zero biases, unit norms and 1e-4 layer scales hide bugs)
randomize = partial(randomize_parameters, scales=("gamma_1", "gamma_2"), tokens=("cls_token", "pos_embed"))


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small CaiT with timm's randomised weights in both, in eval mode."""
    config = {**SMALL, **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_cait.Cait(**config), seed)
    ours = cait.Cait(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


@pytest.mark.parametrize("name", CAITS)
def test_variant_config_layout_and_seeded_init_match_timm(name, monkeypatch):
    """Each entrypoint passes timm's configuration (with the image size of timm's weights); rebuilt narrow (two
    channels a head) with two self-attention blocks from the same seed, both models have the same module tree,
    state_dict keys, order, shapes and dtypes and the same initial values (truncated normals within 2 float32 ulps:
    the engine's erfinv rounds differently from torch's; layer scales bit for bit), and both random streams end in
    step."""
    ours_calls = capture_builder(monkeypatch, cait, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_cait, "build_model_with_cfg")
    getattr(cait, name)()
    getattr(timm_cait, name)()
    monkeypatch.undo()
    timm_kwargs = check_fixed_size_config(name, ours_calls[0], timm_calls[0])

    narrow = dict(timm_kwargs, embed_dim=2 * timm_kwargs["num_heads"], depth=2)
    engine.manual_seed(3)
    ours = cait.Cait(**narrow)
    torch.manual_seed(3)
    reference = timm_cait.Cait(**narrow)
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    ours_modules, ref_modules = dict(ours.named_modules()), dict(reference.named_modules())
    assert list(ours_modules) == list(ref_modules)
    for path, ref_module in ref_modules.items():
        assert type(ours_modules[path]).__name__ == type(ref_module).__name__, path
        for attr in ("eps", "p", "in_features", "out_features", "kernel_size", "stride", "scale"):
            if hasattr(ref_module, attr):
                assert getattr(ours_modules[path], attr) == getattr(ref_module, attr), (path, attr)
    assert ours.feature_info == reference.feature_info and ours.num_features == reference.num_features
    state, expected = ours.state_dict(), numpy_state(reference)
    assert list(state) == list(expected)
    for key, value in expected.items():
        ours_value = state[key].numpy()
        assert ours_value.shape == value.shape and ours_value.dtype == value.dtype, key
        if key.endswith(("gamma_1", "gamma_2")):
            assert np.array_equal(ours_value, value), key
        np.testing.assert_allclose(ours_value, value, rtol=0, atol=2 * np.spacing(np.float32(0.1)), err_msg=key)


def test_full_size_layout_matches_timm(monkeypatch):
    """CaiT-XXS24 as registered against timm's, built on the meta device: state_dict keys in order, shapes and
    dtypes, the module tree, the printout of every layer, feature_info, num_features and default_cfg."""
    with torch.device("meta"):
        reference = timm.create_model("cait_xxs24_224")
    skip_random_init(monkeypatch)
    monkeypatch.setattr(cait, "trunc_normal_", lambda tensor, std=0.02: tensor)
    ours = cait.cait_xxs24_224()
    check_layout(ours, reference, (), ("Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "Identity"))
    assert ours.head_hidden_size == 192

def test_eval_outputs_match_timm():
    """Float32 eval outputs (class token and average pooling) and pre-logits of a small model at an odd image size
    (batch 2)."""
    reference, ours = small_pair()
    x = image_batch(2, *SIZE, seed=1)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7)
    assert_close(out, ref, 1e-5)
    reference.reset_classifier(0, "avg")
    ours.reset_classifier(0, "avg")
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24) and isinstance(ours.get_classifier(), engine.nn.Identity)
    assert_close(out, ref, 1e-5)
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(out, ref, 1e-5)


def test_train_mode_gradients_match_timm_float64():
    """Float64 train mode, three class-attention blocks with their own MLP ratio: outputs, the input gradient and
    every parameter gradient (class token, position embeddings, layer scales, head mixing) equal timm's (the
    pre-softmax head mixing's bias has none: a constant per head)."""
    reference, ours = small_pair(seed=2, depth_token_only=3, mlp_ratio_token_only=2.0, qkv_bias=False)
    reference, ours = reference.double().train(), ours.double().train()
    x = image_batch(2, *SIZE, seed=3).astype(np.float64)
    ref_params, our_params = backward_both(reference, ours, x)
    assert list(ref_params) == list(our_params)
    for name, p in ref_params.items():
        grad, expected = our_params[name].grad.numpy(), p.grad.numpy()
        if name.endswith("proj_l.bias"):  # a constant per head, which the softmax ignores: zero but for rounding
            assert np.abs(grad).max() < 1e-12 and np.abs(expected).max() < 1e-12, name
        else:
            assert_close(grad, expected, 1e-9, what=f"{name} grad")


DROPOUTS = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def test_dropout_and_drop_path_follow_timm():
    """timm's drop path (the same rate in every self-attention block, none in the class-attention blocks) and dropout
    rates; eval outputs unaffected; in train mode the same seed draws timm's masks (timm's outputs), another seed
    others."""
    reference, ours = small_pair(seed=4, **DROPOUTS)
    assert check_drop_rates(reference, ours) == [0.3, 0.3]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=5))


def test_reset_classifier_in_chans_and_image_size_check():
    """reset_classifier gives the classes and pooling asked for ('' returns the whole sequence); in_chans=1 builds a
    one-channel patch projection that gives timm's outputs; an image of another size than the model's is refused."""
    reference, ours = small_pair(seed=6, in_chans=1)
    assert tuple(ours.patch_embed.proj.weight.shape) == (24, 1, 8, 8)
    x = image_batch(2, *SIZE, seed=7, c=1)
    reference.reset_classifier(5, "")
    ours.reset_classifier(5, "")
    ours.head.load_state_dict(numpy_state(reference.head))
    assert ours.get_classifier().out_features == 5 and ours.num_classes == 5 and ours.global_pool == ""
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 25, 5)
    assert_close(out, ref, 1e-5)
    with pytest.raises(ValueError):
        ours.reset_classifier(5, "max")
    model = models.create_model("cait_xxs24_224", img_size=SIZE, patch_size=8, depth=1, depth_token_only=1)
    with pytest.raises(ValueError, match="img_size"):
        model(engine.zeros(1, 3, 48, 38))


def test_features_only_and_intermediates_match_timm():
    """features_only (4 blocks): timm's FeatureGetterNet stages (the last three blocks by default, or out_indices)
    as (N, C, H/8, W/8) maps, its state_dict keys (class token, class-attention blocks, norm and head pruned) and
    feature_info; forward_intermediates' token sequences, normalised, stopping early, and the final sequence."""
    for out_indices in (None, (0, -2)):
        kwargs = dict(SMALL, num_classes=1000, depth=4)
        if out_indices is not None:
            kwargs["out_indices"] = out_indices
        reference, ours = features_only_pair("cait_xxs24_224", randomize, 8, **kwargs)
        maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=9), 3 if out_indices is None else 2,
                                  1e-5)
        assert all(m.shape == (2, 24, 6, 4) for m in maps)
    reference, ours = small_pair(seed=10, depth=3)
    x = image_batch(2, *SIZE, seed=11)
    for kwargs in (dict(indices=2, norm=True, output_fmt="NLC"), dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)


def test_list_models():
    """Every variant is registered, under timm's module name."""
    assert set(models.list_models("cait_*")) == set(CAITS)
    assert set(models.list_models(module="cait")) == set(CAITS)
