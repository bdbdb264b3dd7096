"""timm's XCiT family against timm: every registered variant's configuration; the layout of the nano and the large
models against timm's on the meta device; seeded initialisation of narrow rebuilds; the Fourier positional encoding;
eval outputs of small models at an odd image size (both patch embeddings, both class-attention norms, both
poolings); float64 train-mode outputs, every gradient and BatchNorm's running statistics; dropout and drop path; and
the timm API (pre-logits features, reset_classifier, in_chans, features_only, forward intermediates, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.xcit as timm_xcit
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import xcit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_empty_batch, check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_train_step, features_only_pair, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]  # one BLAS thread a side: tiny tensors

NAMES = [f"xcit_{size}_p{patch}_{res}" for size in ("nano_12", "tiny_12", "tiny_24", "small_12", "small_24",
                                                    "medium_24", "large_24")
         for patch in (16, 8) for res in (224, 384)]
SIZE = (45, 37)  # a 3 x 3 grid of 16-pixel patches (6 x 5 of 8-pixel ones), every stride-2 convolution rounding up
SMALL = {
    "p16": dict(patch_size=16, embed_dim=32, depth=2, num_heads=4, num_classes=7, eta=0.5, tokens_norm=False),
    "p8": dict(patch_size=8, embed_dim=24, depth=2, num_heads=3, num_classes=7, eta=1e-5, tokens_norm=True,
               mlp_ratio=2.0, qkv_bias=False),
}
PRINTED = ("Conv2d", "BatchNorm2d", "LayerNorm", "Linear", "Dropout", "GELU", "Identity")
# random values for every parameter and BatchNorm statistic of a timm model (its zero biases, unit norms,
# temperatures and layer scales hide bugs)
randomize = partial(randomize_parameters, scales=("gamma1", "gamma2", "gamma3", "temperature"), tokens=("cls_token",),
                    norms=True)


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small XCiT of ``kind`` with timm's randomised weights in both, in eval mode. timm's class
    attention uses its unfused path, whose attention dropout draws from the generator as ours does."""
    config = {**SMALL[kind], **kwargs}
    reference = randomize(timm_xcit.Xcit(**config), seed)
    for module in reference.modules():
        if isinstance(module, timm.models.cait.ClassAttn):
            module.fused_attn = False
    ours = xcit.Xcit(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def timm_fourier_features(reference):
    """A list that collects the Fourier features timm's ``reference`` computes, as its positional encoding's
    projection receives them."""
    features = []
    reference.pos_embed.token_projection.register_forward_pre_hook(lambda m, inputs: features.append(inputs[0]))
    return features


def test_variant_configs_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration (keyword arguments overriding it as in timm), and
    the class has timm's default_cfg."""
    assert sorted(NAMES) == sorted(timm.list_models("xcit_*"))
    ours_calls = capture_builder(monkeypatch, xcit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_xcit, "build_model_with_cfg")
    for name in NAMES:
        getattr(xcit, name)(drop_rate=0.1)
        getattr(timm_xcit, name)(drop_rate=0.1)
    assert len(ours_calls) == len(timm_calls) == len(NAMES)
    for name, (ours_cls, config), (_, expected) in zip(NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in expected.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
        assert config.pop("progress") is True and config == expected, name
        cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}


def test_large_layout_matches_timm(monkeypatch):
    """XCiT-L24/8 against timm's on the meta device, with 2 of its 24 XCiT blocks (timm takes half a second to build
    24 there; the entrypoints' depths are checked above): state_dict keys in order, shapes and dtypes, the module
    tree, the printout of every layer, feature_info, num_features and default_cfg. The other variants differ from it
    only in the configuration checked above; the 16-pixel patch embedding's tree is checked below."""
    with torch.device("meta"):
        reference = timm.create_model("xcit_large_24_p8_384", depth=2)
    skip_random_init(monkeypatch)
    monkeypatch.setattr(xcit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    ours = models.create_model("xcit_large_24_p8_384", depth=2)
    check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_follows_timm(kind):
    """From the same seed, the same initial weights as timm, drawn in timm's order (the layers' default inits, then
    the class token's and every Linear weight's truncated normal): layer scales, temperatures, convolutions, norms
    and biases bit for bit, the truncated normals within 2 float32 ulps; both generators end in step. The module
    trees are the same, with the same printout of every layer."""
    config = SMALL[kind]

    def truncated(reference):
        linears = {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}
        return linears | {"cls_token"}

    reference, ours = check_seeded_init(lambda: timm_xcit.Xcit(**config), lambda: xcit.Xcit(**config), 5, truncated,
                                        kind)
    ours_modules, ref_modules = list(ours.named_modules()), list(reference.named_modules())
    assert [n for n, _ in ours_modules] == [n for n, _ in ref_modules]
    for (name, module), (_, ref_module) in zip(ours_modules, ref_modules):
        assert type(module).__name__ == type(ref_module).__name__, name
        if type(ref_module).__name__ in PRINTED:
            assert repr(module) == repr(ref_module), name


def test_fourier_features_match_timm():
    """The positional encoding's Fourier features (float32) within an ulp of timm's (the engine's float32 sine and
    cosine round differently from torch's), for square and oblong grids."""
    reference, ours = small_pair("p8")
    features = timm_fourier_features(reference)
    for height, width in ((6, 5), (1, 3), (14, 14)):
        with torch.no_grad():
            reference.pos_embed(1, height, width)
        out = ours.pos_embed.fourier_features(height, width).numpy()
        assert out.dtype == np.float32 and out.shape == (1, 64, height, width)
        np.testing.assert_allclose(out, features[-1].numpy(), rtol=0, atol=2e-7)


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """Float32 eval outputs of a small model at an odd image size (batch 2): the class token's logits, then the
    patch tokens' average as pre-logits."""
    reference, ours = small_pair(kind, seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7)
    assert_close(out, ref, 1e-5)
    reference.reset_classifier(0, "avg")
    ours.reset_classifier(0, "avg")
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, SMALL[kind]["embed_dim"]) and isinstance(ours.get_classifier(), engine.nn.Identity)
    assert_close(out, ref, 1e-5)


def test_train_step_matches_timm_float64():
    """Float64 train mode (BatchNorm on batch statistics): outputs, the input gradient, every parameter gradient and
    the running statistics after the step equal timm's. Both models get timm's Fourier features (computed in
    float32 by both, whose sines differ by an ulp)."""
    reference, ours = small_pair("p16", seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    features = timm_fourier_features(reference)
    ours.pos_embed.fourier_features = (lambda height, width, device=None:
                                       engine.from_numpy(features[-1].numpy()).to(device or "cpu"))
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=4).astype(np.float64))


DROPOUTS = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def test_dropout_and_drop_path_follow_timm():
    """timm's rates: drop path the same in every XCiT block and none in the class-attention blocks, dropout after
    the positional encoding, on attention weights, after projections and MLPs and before the head. Eval outputs are
    unaffected; in train mode the same seed draws timm's masks (timm's outputs), another seed others."""
    reference, ours = small_pair("p8", seed=6, **DROPOUTS)
    assert check_drop_rates(reference, ours) == [0.3] * 6
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_reset_classifier_in_chans_and_arguments():
    """reset_classifier gives the classes and pooling asked for ('' returns the whole sequence); in_chans=1 builds a
    one-channel first convolution that gives timm's outputs; num_classes=0 gives the pooled features; poolings and
    patch sizes XCiT has no use for are refused."""
    reference, ours = small_pair("p16", seed=8, in_chans=1)
    assert tuple(ours.patch_embed.proj[0][0].weight.shape) == (4, 1, 3, 3)
    reference.reset_classifier(5, "")
    ours.reset_classifier(5, "")
    ours.head.load_state_dict(numpy_state(reference.head))
    assert ours.get_classifier().out_features == 5 and ours.num_classes == 5 and ours.global_pool == ""
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=9, c=1))
    assert out.shape == (2, 10, 5)
    assert_close(out, ref, 1e-5)
    with pytest.raises(ValueError):
        ours.reset_classifier(5, "max")
    reference, ours = small_pair("p16", seed=14, num_classes=0, global_pool="avg")
    assert isinstance(ours.head, engine.nn.Identity) and ours.num_features == ours.head_hidden_size == 32
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=15))
    assert out.shape == (2, 32)
    assert_close(out, ref, 1e-5)
    with pytest.raises(ValueError):
        xcit.Xcit(patch_size=4)
    with pytest.raises(ValueError):
        xcit.Xcit(global_pool="max")


@pytest.mark.parametrize("out_indices", [None, (0, -2)])
def test_features_only_matches_timm(out_indices):
    """features_only (4 blocks): timm's FeatureGetterNet stages (the last three blocks by default, or out_indices) as
    (N, C, H/8, W/8) maps, its state_dict keys (class token, class-attention blocks, norm and head pruned) and
    feature_info."""
    kwargs = dict(SMALL["p8"], num_classes=1000, depth=4)
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    reference, ours = features_only_pair("xcit_nano_12_p8_224", randomize, 10, **kwargs)
    maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=11), 3 if out_indices is None else 2, 1e-5)
    assert all(m.shape == (2, 24, 6, 5) for m in maps)


def test_forward_intermediates_match_timm():
    """forward_intermediates' token sequences (normalised) and maps (stopping early), and the final sequence."""
    reference, ours = small_pair("p16", seed=12, depth=3)
    x = image_batch(2, *SIZE, seed=13)
    for kwargs in (dict(indices=2, norm=True, output_fmt="NLC"), dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)


def test_empty_batch():
    """An empty batch (which timm's model refuses: it reshapes the positional encoding with a -1 over no values) gives
    empty outputs in eval and train mode, zero gradients for every parameter and leaves BatchNorm's statistics as
    they were, counting the batch, as torch's BatchNorm does."""
    _, ours = small_pair("p16", seed=16)
    check_empty_batch(ours, (3, *SIZE), 7)


def test_list_models():
    """Every variant is registered, under timm's module name."""
    assert set(models.list_models("xcit_*")) == set(NAMES)
    assert set(models.list_models(module="xcit")) == set(NAMES)
