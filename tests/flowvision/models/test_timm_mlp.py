"""timm parity of the MLP-Mixer, ResMLP, gMLP and ConvMixer families: every registered variant's configuration,
state_dict layout, module tree and seeded initialisation; eval outputs (float32) and train-mode outputs and
gradients (float64) of a small model of each family with timm's weights loaded; dropout and drop path; and the
timm API (pre-logits features, global pooling, reset_classifier, in_chans, features_only, list_models)."""
import math
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.convmixer as timm_convmixer
import timm.models.mlp_mixer as timm_mlp_mixer
import torch

import engine
import flowvision.models as models
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import convmixer, mlp_mixer
from model_parity import (both_outputs, capture_builder, check_intermediates, check_train_step, image_batch,
                          numpy_state, pre_logits, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

MIXER_NAMES = ["mixer_s32_224", "mixer_s16_224", "mixer_b32_224", "mixer_b16_224", "mixer_l32_224", "mixer_l16_224",
               "gmixer_12_224", "gmixer_24_224", "resmlp_12_224", "resmlp_24_224", "resmlp_36_224",
               "resmlp_big_24_224", "gmlp_ti16_224", "gmlp_s16_224", "gmlp_b16_224"]
CONVMIXER_NAMES = ["convmixer_768_32", "convmixer_1024_20_ks9_p14", "convmixer_1536_20"]
# untrained variants whose (two-block) rebuild is slow, with wide layers or 32-pixel patches: their entrypoints'
# arguments are compared with timm's, their blocks being those of the other variants at other widths
CONFIG_ONLY_NAMES = ["mixer_s32_224", "mixer_b32_224", "mixer_l32_224", "gmlp_b16_224"]
TOL = 1e-4

# Small models of each family, from either implementation's module and nn: (class name, its kwargs, image size).
# 45 = 5 patches of 8 and 5 pixels cut off; 37 = 5 patches of 7 and 2 pixels over.
SMALL = {
    "mixer": ("MlpMixer", lambda m, nn: dict(img_size=45, patch_size=8, num_blocks=2, embed_dim=32), 45),
    "gmixer": ("MlpMixer", lambda m, nn: dict(img_size=45, patch_size=8, num_blocks=2, embed_dim=32,
                                              mlp_ratio=(1.0, 4.0), mlp_layer=m.GluMlp, act_layer=nn.SiLU), 45),
    "resmlp": ("MlpMixer", lambda m, nn: dict(img_size=45, patch_size=8, num_blocks=2, embed_dim=32, mlp_ratio=4,
                                              block_layer=partial(m.ResBlock, init_values=0.1),
                                              norm_layer=m.Affine), 45),
    "gmlp": ("MlpMixer", lambda m, nn: dict(img_size=45, patch_size=8, num_blocks=2, embed_dim=32, mlp_ratio=6,
                                            block_layer=m.SpatialGatingBlock, mlp_layer=m.GatedMlp), 45),
    "convmixer": ("ConvMixer", lambda m, nn: dict(dim=32, depth=2, kernel_size=9, patch_size=7,
                                                  act_layer=nn.GELU), 37),
    "convmixer_relu": ("ConvMixer", lambda m, nn: dict(dim=24, depth=2, kernel_size=7, patch_size=7,
                                                       act_layer=nn.ReLU), 37),
}


def randomize(model, seed):
    """Random values for every parameter and BatchNorm statistic of a timm model: the defaults (unit norms and
    affines, zero head, 1e-4 layer scales, a near-identity spatial gate) would hide bugs."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("alpha", "ls1", "ls2")) or (p.ndim == 1 and name.endswith("weight")):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif name.endswith(("bias", "beta")):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p[0].numel()))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) * 1.5 + 0.5)
    return model


def small_config(family):
    """Our class and kwargs of the small ``family`` model."""
    cls_name, config, _ = SMALL[family]
    module = mlp_mixer if cls_name == "MlpMixer" else convmixer
    return getattr(module, cls_name), config(module, engine.nn)


def small_pair(family, seed=0, **kwargs):
    """(timm's, ours) small models of ``family`` with timm's randomised weights in both, in eval mode, and the
    image size to run them at."""
    cls_name, config, size = SMALL[family]
    timm_module = timm_mlp_mixer if cls_name == "MlpMixer" else timm_convmixer
    torch.manual_seed(seed)
    ref = randomize(getattr(timm_module, cls_name)(**config(timm_module, torch.nn), **kwargs), seed)
    ours_cls, ours_config = small_config(family)
    ours = ours_cls(**ours_config, **kwargs)
    ours.load_state_dict(numpy_state(ref))
    return ref.eval(), ours.eval(), size


@pytest.mark.parametrize("name", [n for n in MIXER_NAMES if n not in CONFIG_ONLY_NAMES] + CONVMIXER_NAMES)
def test_variant_config_layout_and_seeded_init_match_timm(name, monkeypatch):
    """Each entrypoint passes timm's configuration: the same depth, and, rebuilt with two blocks from the same
    seed, the same module tree (names, norm eps, conv geometry), state_dict keys, order, shapes and dtypes, and
    the same initial values bit for bit (layer scales included), except the LeCun-normal patch embedding, whose
    erfinv differs from torch's by an ulp; both random streams end in step."""
    is_mixer = name in MIXER_NAMES
    ours_module, timm_module = (mlp_mixer, timm_mlp_mixer) if is_mixer else (convmixer, timm_convmixer)
    depth_key = "num_blocks" if is_mixer else "depth"
    ours_calls = capture_builder(monkeypatch, ours_module, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_module, "build_model_with_cfg")
    getattr(ours_module, name)()
    getattr(timm_module, name)()
    (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) = ours_calls[0], timm_calls[0]
    assert ours_kwargs.pop(depth_key) == timm_kwargs.pop(depth_key)
    timm_kwargs = {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
    ours_kwargs.pop("progress")
    engine.manual_seed(3)
    ours = ours_cls(**ours_kwargs, **{depth_key: 2})
    torch.manual_seed(3)
    ref = timm_cls(**timm_kwargs, **{depth_key: 2})
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    timm_cfg = timm.models.get_pretrained_cfg(name)
    assert ours_cls.default_cfg == {"first_conv": timm_cfg.first_conv, "classifier": timm_cfg.classifier}
    ours_modules, ref_modules = dict(ours.named_modules()), dict(ref.named_modules())
    assert list(ours_modules) == list(ref_modules)
    for path, ref_module in ref_modules.items():
        for attr in ("eps", "kernel_size", "stride", "padding", "groups", "p", "in_features", "out_features"):
            assert getattr(ours_modules[path], attr, None) == getattr(ref_module, attr, None), (path, attr)
    state, expected = ours.state_dict(), numpy_state(ref)
    assert list(state) == list(expected)
    for key, value in expected.items():
        ours_value = state[key].numpy()
        assert ours_value.shape == value.shape and ours_value.dtype == value.dtype, key
        if key == "stem.proj.weight":
            assert_close(ours_value, value, 1e-6, what=key)
        else:
            assert np.array_equal(ours_value, value), key


def test_untrained_variant_configurations_match_timm(monkeypatch):
    """The slow-to-build untrained variants hand our class timm's arguments (its classes by name), and our class
    has timm's default_cfg."""
    ours_calls = capture_builder(monkeypatch, mlp_mixer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_mlp_mixer, "build_model_with_cfg")
    for name in CONFIG_ONLY_NAMES:
        getattr(mlp_mixer, name)()
        getattr(timm_mlp_mixer, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(CONFIG_ONLY_NAMES, ours_calls, timm_calls):
        assert ours_cls.__name__ == timm_cls.__name__
        timm_kwargs = {k: getattr(v, "__name__", v) for k, v in timm_kwargs.items()
                       if k not in ("pretrained_filter_fn", "feature_cfg")}
        ours_kwargs = {k: getattr(v, "__name__", v) for k, v in ours_kwargs.items()}
        assert ours_kwargs == dict(timm_kwargs, progress=True), name
        timm_cfg = timm.models.get_pretrained_cfg(name)
        assert ours_cls.default_cfg == {"first_conv": timm_cfg.first_conv, "classifier": timm_cfg.classifier}


@pytest.mark.parametrize("family", list(SMALL))
def test_eval_outputs_match_timm(family):
    """float32 logits of a batch of 2 at an odd image size, timm's weights loaded through numpy."""
    ref, ours, size = small_pair(family)
    out, expected = both_outputs(ref, ours, image_batch(2, size, size, seed=1))
    assert out.shape == (2, 1000)
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("family", list(SMALL))
def test_train_outputs_and_gradients_match_timm(family):
    """float64, train mode (batch statistics in ConvMixer): outputs, input gradient and every parameter's
    gradient equal timm's."""
    ref, ours, size = small_pair(family, seed=2, num_classes=7)
    ref, ours = ref.double().train(), ours.double().train()
    x = image_batch(2, size, size, seed=3).astype(np.float64)
    # The token-mixing MLP's output bias shifts every channel of a patch alike, which the following LayerNorms
    # remove: its true gradient is 0 and both sides give rounding noise (1e-17), hence the floor.
    check_train_step(ref, ours, x, rtol=1e-9, floor=1e-6)


@pytest.mark.parametrize("family", ["resmlp", "mixer", "gmlp", "convmixer"])
def test_dropout_and_drop_path_only_in_training(family):
    """With drop path, MLP dropout and head dropout on: a train-mode forward equals timm's from the same seed
    (the same masks drawn) and differs from eval mode, where the model equals its copy without them."""
    drops = dict(drop_rate=0.3) if "convmixer" in family else dict(drop_rate=0.3, proj_drop_rate=0.2,
                                                                  drop_path_rate=0.5)
    ref, ours, size = small_pair(family, seed=4, **drops)
    _, plain, _ = small_pair(family, seed=4)
    x = image_batch(2, size, size, seed=5)
    eval_out, _ = both_outputs(ref, ours, x)
    plain_out, _ = both_outputs(ref, plain, x)
    assert np.array_equal(eval_out, plain_out)
    ref.train(), ours.train()
    torch.manual_seed(6)
    engine.manual_seed(6)
    train_out, expected = both_outputs(ref, ours, x)
    assert_close(train_out, expected, TOL)
    assert not np.allclose(train_out, eval_out, atol=1e-3)


@pytest.mark.parametrize("family,global_pool", [("mixer", "avg"), ("mixer", ""), ("resmlp", "avg"),
                                                ("convmixer", "avg"), ("convmixer", "max"),
                                                ("convmixer", "avgmax"), ("convmixer", "catavgmax"),
                                                ("convmixer", "")])
def test_num_classes_0_gives_timm_pre_logits(family, global_pool):
    """``num_classes=0`` returns timm's forward_features + forward_head(pre_logits=True) for every pooling
    (none: the tokens or the map); with a head, the pooling feeds it (twice the width for catavgmax)."""
    ref, ours, size = small_pair(family, seed=7, global_pool=global_pool)
    x = image_batch(2, size, size, seed=8)
    out, expected = both_outputs(ref, ours, x, pre_logits)
    assert_close(out, expected, TOL)
    assert ours.head_hidden_size == ref.head_hidden_size
    if global_pool:
        logits, expected_logits = both_outputs(ref, ours, x)
        assert_close(logits, expected_logits, TOL)
    state = {k: v for k, v in numpy_state(ref).items() if not k.startswith("head.")}
    ours_cls, config = small_config(family)
    headless = ours_cls(**config, num_classes=0, global_pool=global_pool)
    headless.load_state_dict(state)
    with engine.no_grad():
        features = to_numpy(headless.eval()(engine.from_numpy(x)))
    assert_close(features, expected, TOL)


@pytest.mark.parametrize("family", ["resmlp", "convmixer"])
def test_reset_classifier(family):
    """reset_classifier gives a head of the new size, an identity for 0 classes, and new pooling when asked
    (ConvMixer's unpooled map, the Mixer's tokens); unknown pooling is refused."""
    _, ours, size = small_pair(family, seed=9)
    x = engine.from_numpy(image_batch(2, size, size, seed=10))
    ours.reset_classifier(5)
    assert ours.get_classifier().out_features == 5 and ours.num_classes == 5
    assert tuple(ours(x).shape) == (2, 5)
    ours.reset_classifier(0, global_pool="")
    assert isinstance(ours.get_classifier(), engine.nn.Identity)
    unpooled = (2, 32, 5, 5) if family == "convmixer" else (2, 25, 32)
    assert tuple(ours(x).shape) == unpooled
    with pytest.raises(ValueError):
        ours.reset_classifier(3, global_pool="median")


@pytest.mark.parametrize("family", ["resmlp", "convmixer"])
def test_in_chans_and_checkpoint_adaptation(family, tmp_path):
    """``in_chans=1`` matches timm's one-channel model, and a 3-channel checkpoint loaded through build_model's
    ``checkpoint_path`` has its first conv (``default_cfg['first_conv']``) summed over RGB, as timm adapts it."""
    ref, ours, size = small_pair(family, seed=11, in_chans=1)
    out, expected = both_outputs(ref, ours, image_batch(2, size, size, seed=12, c=1))
    assert_close(out, expected, TOL)
    rgb_ref, _, _ = small_pair(family, seed=13)
    path = str(tmp_path / "rgb.npz")
    np.savez(path, **numpy_state(rgb_ref))
    ours_cls, config = small_config(family)
    model = build_model(ours_cls, "test", in_chans=1, checkpoint_path=path, **config)
    first_conv = f"{ours_cls.default_cfg['first_conv']}.weight"
    weight = to_numpy(dict(model.named_parameters())[first_conv])
    assert weight.shape[1] == 1
    assert_close(weight, numpy_state(rgb_ref)[first_conv].sum(axis=1, keepdims=True), 1e-6)


def test_features_only():
    """ConvMixer's ``features_only`` (through the entrypoints' builder, on a 5-layer model) gives timm's feature
    stages (the last three layers by default, or ``out_indices`` with negative indices) with timm's values; so does
    the Mixer family's (through its builder, on a 4-block Mixer), whose blocks' token sequences come back as maps
    of the patch grid."""
    x = image_batch(2, 35, 35, seed=14)
    config = dict(dim=16, depth=5, kernel_size=7, patch_size=7)
    for out_indices in (None, (0, -1)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(15)
        ref = timm_convmixer._create_convmixer("convmixer_768_32", features_only=True, **config, **kwargs)
        ref = randomize(ref, 15).eval()
        ours = convmixer._create_convmixer("convmixer_768_32", False, True, features_only=True, **config, **kwargs)
        ours.load_state_dict(numpy_state(ref))  # timm's names, under its 'model.' prefix
        assert ours.feature_info.module_name() == ref.feature_info.module_name()
        assert ours.feature_info.channels() == ref.feature_info.channels()
        assert ours.feature_info.reduction() == ref.feature_info.reduction()
        with torch.no_grad():
            expected = ref(torch.from_numpy(x))
        with engine.no_grad():
            out = ours.eval()(engine.from_numpy(x))
        assert len(out) == len(expected)
        for o, e in zip(out, expected):
            assert_close(to_numpy(o), to_numpy(e), TOL)
    mixer_config = dict(num_blocks=4, embed_dim=16, img_size=35, patch_size=7)
    for out_indices in (None, (0, -1)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(16)
        ref = timm_mlp_mixer._create_mixer("mixer_s16_224", features_only=True, **mixer_config, **kwargs)
        ref = randomize(ref, 16).eval()
        ours = mlp_mixer._create_mixer("mixer_s16_224", False, True, features_only=True, **mixer_config, **kwargs)
        ours.eval()
        assert list(ours.state_dict()) == list(ref.state_dict())
        ours.load_state_dict(numpy_state(ref))
        assert ours.feature_info.module_name() == ref.feature_info.module_name()
        assert ours.feature_info.channels() == ref.feature_info.channels()
        assert ours.feature_info.reduction() == ref.feature_info.reduction()
        with torch.no_grad():
            expected = ref(torch.from_numpy(x))
        with engine.no_grad():
            out = ours(engine.from_numpy(x))
        assert [tuple(o.shape) for o in out] == [tuple(e.shape) for e in expected]
        for o, e in zip(out, expected):
            assert_close(to_numpy(o), to_numpy(e), TOL)


def forward_features(model, x):
    """``model``'s features (for ``both_outputs``)."""
    return model.forward_features(x)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's. The Mixer: every block's tokens as maps of the 5x5 patch grid, the last n
    each through the final norm, a list (negative from the end) stopping early as token sequences ('NLC'), the maps
    alone; an NHWC output format is refused. ConvMixer (no final norm): every layer's map, the last n, the first
    layer's alone stopping early. prune_intermediate_layers as timm's: the same indices, the later blocks dropped,
    the norm when asked and the head when asked (``num_features`` unchanged), the pruned features and logits
    timm's."""
    ref, ours, size = small_pair("mixer", seed=16)
    x = image_batch(2, size, size, seed=17)
    for kwargs in ({}, dict(indices=1, norm=True), dict(indices=[-2], stop_early=True, output_fmt="NLC"),
                   dict(indices=[0, 1], intermediates_only=True)):
        check_intermediates(ref, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([0], prune_norm=True) == ref.prune_intermediate_layers(
        [0], prune_norm=True) == [0]
    assert ours.num_features == ref.num_features == 32
    out, expected = both_outputs(ref, ours, x, forward_features)
    assert out.shape == (2, 25, 32)
    assert_close(out, expected, TOL)
    ref, ours, size = small_pair("convmixer_relu", seed=18)
    x = image_batch(2, size, size, seed=19)
    for kwargs in ({}, dict(indices=1, norm=True), dict(indices=[0], stop_early=True, intermediates_only=True)):
        check_intermediates(ref, ours, x, TOL, **kwargs)
    assert ours.prune_intermediate_layers([0], prune_head=False) == ref.prune_intermediate_layers(
        [0], prune_head=False) == [0]
    out, expected = both_outputs(ref, ours, x)
    assert out.shape == (2, 1000)
    assert_close(out, expected, TOL)
    assert ours.prune_intermediate_layers([-1]) == ref.prune_intermediate_layers([-1]) == [0]
    assert ours.num_features == ours.head_hidden_size == ref.head_hidden_size == 24
    out, expected = both_outputs(ref, ours, x)
    assert out.shape == (2, 24, 5, 5)
    assert_close(out, expected, TOL)


def test_mixer_refuses_other_image_sizes():
    """Token mixing is sized for ``img_size`` patches: other sizes are refused."""
    _, ours, _ = small_pair("mixer")
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 48, 48)))


def test_list_models():
    """The registry lists every variant under its timm name, module and wildcard, as timm does: the mlp_mixer
    module lists exactly timm's, the untrained variants (Mixer-S, -B/32, -L/32, GLU-Mixer-12, gMLP-Ti and -B)
    registered too."""
    assert models.list_models(module="mlp_mixer") == timm.list_models(module="mlp_mixer")
    assert set(models.list_models(module="mlp_mixer")) == set(MIXER_NAMES)
    assert set(models.list_models(module="convmixer")) == set(CONVMIXER_NAMES)
    for pattern in ("mixer_*", "gmixer_*", "resmlp_*", "gmlp_*", "convmixer_*"):
        assert set(models.list_models(pattern)) == set(timm.list_models(pattern)) & set(MIXER_NAMES + CONVMIXER_NAMES)
        assert models.list_models(pattern)
