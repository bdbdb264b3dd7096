"""timm parity of Swin Transformer V2, both of timm's ports (its ``swin_transformer_v2`` and
``swin_transformer_v2_cr`` modules): every registered variant's configuration (CR's untrained ones too), the layout
of one model of each port (and of three untrained CR models) against timm's on the meta device, seeded
initialisation and the non-persistent buffers (log-spaced offsets, position indices, zero key bias, shifted-window
masks); float32 eval outputs of small models at an odd image size (padded, shifted, partly shifted and clamped
windows, odd patch merging, pre-training windows, extra norms, window ratios); float64 train-mode outputs and every
gradient (logit scales past their clamp included); dropout and drop path; and the timm API (pre-logits features,
global pooling, reset_classifier, in_chans, the image size check, features_only, forward intermediates, pruning,
list_models)."""
import inspect

import numpy as np
import pytest
import timm
import timm.models.swin_transformer_v2 as timm_v2
import timm.models.swin_transformer_v2_cr as timm_cr
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import swin_transformer_v2 as v2
from flowvision.models.timm_families import swin_transformer_v2_cr as cr  # registers the CR names too
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_fixed_size_config, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, features_only_pair, image_batch, numpy_state,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread a side: tiny tensors
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

V2_NAMES = ["swinv2_base_window8_256", "swinv2_base_window12to16_192to256", "swinv2_base_window12to24_192to384",
            "swinv2_base_window16_256", "swinv2_large_window12to16_192to256", "swinv2_large_window12to24_192to384",
            "swinv2_small_window8_256", "swinv2_small_window16_256", "swinv2_tiny_window8_256",
            "swinv2_tiny_window16_256"]
# ImageNet-22k pre-training at 192 (timm's weights have 21841 classes)
V2_22K_NAMES = ["swinv2_base_window12_192", "swinv2_large_window12_192"]
CR_NAMES = ["swinv2_cr_small_224", "swinv2_cr_small_ns_224", "swinv2_cr_tiny_ns_224"]
# timm's CR models without published weights: configurations of the same code (huge and giant never built here)
CR_UNTRAINED_NAMES = ["swinv2_cr_base_224", "swinv2_cr_base_384", "swinv2_cr_base_ns_224", "swinv2_cr_giant_224",
                      "swinv2_cr_giant_384", "swinv2_cr_huge_224", "swinv2_cr_huge_384", "swinv2_cr_large_224",
                      "swinv2_cr_large_384", "swinv2_cr_small_384", "swinv2_cr_small_ns_256", "swinv2_cr_tiny_224",
                      "swinv2_cr_tiny_384"]
PORTS = {"v2": (timm_v2, timm_v2.SwinTransformerV2, v2, v2.SwinTransformerV2),
         "cr": (timm_cr, timm_cr.SwinTransformerV2Cr, cr, cr.SwinTransformerV2Cr)}
# (50, 26) images: a (12, 6) patch grid. V2's 4x4 windows: stage 1 pads, stage 2 (6, 3) shifts (4, 3) windows by
# (2, 0) only, stage 3 (3, 2) is one clamped window, stage 4 merges an odd map to (2, 1); its stages were "pre-trained"
# with other windows (0: its own). CR's windows are the grid / 3, (4, 2): stage 2 pads and shifts by (2, 1); every
# second block and the last stage end with an extra norm.
SIZE = (50, 26)
TINY = dict(img_size=SIZE, embed_dim=8, depths=(2, 2, 1, 1), num_heads=(2, 2, 4, 4), num_classes=7)
SMALL = {"v2": dict(TINY, window_size=4, pretrained_window_sizes=(3, 6, 0, 2), drop_path_rate=0.0),
         "cr": dict(TINY, window_ratio=3, extra_norm_period=2)}
# timm's no-op identity that ours leaves out: the CR position bias MLP's norm slot
PLACEHOLDERS = ("meta_mlp.norm",)
PRINTED = ("Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "ReLU", "Softmax", "Flatten")
DROPOUTS = dict(drop_rate=0.3, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.5)


def randomize(model, seed):
    """Random values for every parameter of a timm model (zero post-norms and biases, equal logit scales would hide
    bugs); logit scales in [1, 3] (larger ones make float32 rounding grow past 1e-5: timm's own float32 outputs are
    then 1e-4 from its float64 ones)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("logit_scale"):
                p.copy_(torch.rand(p.shape, generator=g) * 2 + 1)
            elif p.ndim == 1 and name.endswith("weight"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel()))
    return model


def small_pair(port, seed=0, **kwargs):
    """(timm's, ours) small ``port`` model with timm's randomised weights in both, in eval mode."""
    _, timm_cls, _, our_cls = PORTS[port]
    config = {**SMALL[port], **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_cls(**config), seed)
    ours = our_cls(**config, weight_init="skip")
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


# ---- configuration and layout -----------------------------------------------------------------------------------


def test_variant_configurations_match_timm(monkeypatch):
    """Each entrypoint hands timm's configuration to the model class (with the image size of timm's weights, which
    timm takes from the pretrained config), and timm's pretrained config's first conv and classifier are our
    default_cfg; the model classes take timm's arguments with timm's defaults. The ImageNet-22k models at 192 too
    (their weights' 21841 classes left to the caller), and CR's untrained models (at the image size of timm's
    configuration for them: 224, 256 or 384; huge and giant only compared here, never built)."""
    for port, names in (("v2", V2_NAMES), ("cr", CR_NAMES + CR_UNTRAINED_NAMES)):
        timm_module, timm_cls, ours_module, ours_cls = PORTS[port]
        ours_calls = capture_builder(monkeypatch, ours_module, "build_model")
        timm_calls = capture_builder(monkeypatch, timm_module, "build_model_with_cfg")
        for name in names:
            getattr(ours_module, name)()
            getattr(timm_module, name)()
        for name, ours_call, timm_call in zip(names, ours_calls, timm_calls):
            check_fixed_size_config(name, ours_call, timm_call)
            assert ours_call[0] is ours_cls
        monkeypatch.undo()
        timm_defaults = {k: p.default for k, p in inspect.signature(timm_cls).parameters.items()}
        for key, param in inspect.signature(ours_cls).parameters.items():
            if key != "weight_init" or port == "cr":
                assert param.default == timm_defaults[key], (port, key)
    ours_calls = capture_builder(monkeypatch, v2, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_v2, "build_model_with_cfg")
    for name in V2_22K_NAMES:
        getattr(v2, name)(drop_rate=0.1)
        getattr(timm_v2, name)(drop_rate=0.1)
    for name, (ours_cls, ours_kwargs), (_, timm_kwargs) in zip(V2_22K_NAMES, ours_calls, timm_calls):
        timm_cfg = timm.models.get_pretrained_cfg(name)
        assert timm_cfg.fixed_input_size and timm_cfg.num_classes == 21841 and timm_cfg.input_size == (3, 192, 192)
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
        assert ours_kwargs == dict(expected, img_size=192, progress=True), name
        assert ours_cls is v2.SwinTransformerV2


@pytest.mark.parametrize("name", ["swinv2_large_window12to24_192to384", "swinv2_base_window12_192",
                                  "swinv2_cr_small_ns_224", "swinv2_cr_tiny_384", "swinv2_cr_small_ns_256",
                                  "swinv2_cr_base_224"])
def test_layout_matches_timm(name):
    """state_dict keys in order, shapes and dtypes, module names (but for timm's placeholder), the printout of every
    layer, windows, shifts and resolutions, feature_info, num_features, head_hidden_size and default_cfg against
    timm's model on the meta device (two blocks a stage, no truncated normals: timm takes a second to draw them on
    the meta device), with the classes of timm's weights: V2-L at 384 with 24x24 windows clamped in the last stages
    and 12x12 pre-training windows, V2-B pre-trained at 192 with 12x12 windows (the last stage's clamped to 6x6),
    CR-S with extra stage norms; untrained CR models: T at 384 (12x12 windows, the last stage one window), S with
    stage norms at 256 (8x8 windows), B at 224 (width 128)."""
    kwargs = dict(depths=(2, 2, 2, 2), num_classes=timm.models.get_pretrained_cfg(name).num_classes)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timm_v2, "trunc_normal_", lambda tensor, std=0.02: tensor)
        with torch.device("meta"):
            reference = timm.create_model(name, **kwargs)
        skip_random_init(patch)
        patch.setattr(v2, "init_linear_layers", lambda model: None)
        ours = models.create_model(name, **kwargs)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)
    ref_modules = dict(reference.named_modules())
    for path, module in ours.named_modules():
        for attr in ("window_size", "shift_size", "input_resolution", "feat_size", "pretrained_window_size"):
            if hasattr(ref_modules[path], attr):
                assert getattr(module, attr) == tuple(getattr(ref_modules[path], attr)), (path, attr)


@pytest.mark.parametrize("port,kwargs", [("v2", {}), ("v2", dict(qkv_bias=False, always_partition=True)),
                                         ("cr", {}), ("cr", dict(weight_init="jax", init_values=None))])
def test_seeded_init_and_buffers_follow_timm(port, kwargs):
    """From the same seed, the same initial weights as timm, drawn in timm's order: V2's layer defaults, then
    truncated normals for every linear layer (within 2 float32 ulps: the engine's float32 erfinv rounds ~0.03% of
    values differently from torch's) and zero post-norms; CR's layer defaults with zero post-norm weights, or its
    optional Glorot scheme (bit for bit); both random streams end in step. The non-persistent buffers (log-spaced
    offsets, position indices, zero key biases, shifted-window masks) are timm's, bit for bit."""
    _, timm_cls, _, our_cls = PORTS[port]
    config = {**SMALL[port], **kwargs}

    def linear_weights(reference):
        if port == "cr":
            return set()
        return {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}

    reference, ours = check_seeded_init(lambda: timm_cls(**config), lambda: our_cls(**config), 3, linear_weights,
                                        f"{port} {kwargs}")
    ref_buffers = dict(reference.named_buffers())
    buffers = {k: v.numpy() for k, v in ours.named_buffers()}
    assert sorted(buffers) == sorted(ref_buffers)
    for key, value in ref_buffers.items():
        assert buffers[key].dtype == value.numpy().dtype and np.array_equal(buffers[key], value.numpy()), key
    assert any(v.ndim == 3 for k, v in buffers.items() if k.endswith("attn_mask"))


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("port,kwargs", [("v2", {}), ("v2", dict(qkv_bias=False, always_partition=True,
                                                                  mlp_ratio=2.5)), ("cr", {})])
def test_eval_outputs_match_timm(port, kwargs):
    """float32 logits of a batch of 2 at an odd image size, timm's weights loaded through numpy: V2 with
    pre-training windows, V2 without query/value biases and with always-partitioned windows, CR with windows from
    the grid and extra norms."""
    reference, ours = small_pair(port, seed=1, **kwargs)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 7) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, 1e-5)


def test_attention_with_separate_qkv_bias_matches_timm():
    """V2's window attention adding the query/value biases after the projection (``qkv_bias_separate``), with a
    mask: timm's outputs."""
    torch.manual_seed(4)
    reference = randomize(timm_v2.WindowAttention(8, (3, 2), 2, qkv_bias_separate=True,
                                                  pretrained_window_size=(4, 4)), 4).eval()
    ours = v2.WindowAttention(8, (3, 2), 2, qkv_bias_separate=True, pretrained_window_size=(4, 4)).eval()
    ours.load_state_dict(numpy_state(reference))
    x = np.random.default_rng(5).standard_normal((4, 6, 8)).astype(np.float32)
    mask = np.where(np.random.default_rng(6).random((2, 6, 6)) < 0.3, -100.0, 0.0).astype(np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x), torch.from_numpy(mask)).numpy()
    with engine.no_grad():
        out = ours(engine.from_numpy(x), engine.from_numpy(mask)).numpy()
    assert_close(out, expected, 1e-5)


@pytest.mark.parametrize("port", ["v2", "cr"])
def test_train_outputs_and_gradients_match_timm_float64(port):
    """float64, train mode: outputs, the input gradient and every parameter's gradient equal timm's (a logit scale
    of each layer past the clamp at ln(100), which gets no gradient; CR's position bias MLP drops units in training,
    the same after the same seed)."""
    reference, ours = small_pair(port, seed=7)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            if name.endswith("logit_scale"):
                p.view(-1)[0] = 5.0
    ours.load_state_dict(numpy_state(reference))
    reference, ours = reference.double().train(), ours.double().train()
    torch.manual_seed(8)
    engine.manual_seed(8)
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=9).astype(np.float64), rtol=1e-9, floor=1e-6)
    scales = np.concatenate([p.grad.numpy().ravel() for n, p in ours.named_parameters() if n.endswith("logit_scale")])
    assert (scales == 0).any() and (scales != 0).any()


@pytest.mark.parametrize("port", ["v2", "cr"])
def test_dropout_and_drop_path_follow_timm(port):
    """timm's per-block drop path rates (rising to drop_path_rate) and dropout rates; eval outputs timm's (nothing
    dropped); in train mode the same seed draws timm's masks (timm's outputs), another seed others (CR: its position
    bias MLP's dropout too)."""
    reference, ours = small_pair(port, seed=10, **DROPOUTS)
    assert check_drop_rates(reference, ours)[-1] == pytest.approx(0.5)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=11))


# ---- API --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("port,kwargs", [("v2", {}), ("cr", dict(window_size=(4, 3)))])
def test_pooling_reset_classifier_and_in_chans(port, kwargs):
    """num_classes=0 gives timm's pooled features (CR with given windows); reset_classifier changes the classes and
    pooling as timm's does ('' leaves the final map: channels-last for V2); in_chans=1 builds a one-channel patch
    projection; an image of another size than the model's is refused."""
    reference, ours = small_pair(port, seed=12, num_classes=0, in_chans=1, **kwargs)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.head_hidden_size == 64
    assert tuple(ours.patch_embed.proj.weight.shape) == (8, 1, 4, 4)
    x = image_batch(2, *SIZE, seed=13, c=1)
    with torch.no_grad():
        expected_map = reference.forward_features(torch.from_numpy(x))
    with engine.no_grad():
        feature_map = ours.forward_features(engine.from_numpy(x))
    for num_classes, pool in ((0, None), (5, "catavgmax"), (4, None), (0, "")):
        if pool is not None or num_classes:
            reference.reset_classifier(num_classes, pool)
            ours.reset_classifier(num_classes, pool)
        if num_classes:
            ours.get_classifier().load_state_dict(numpy_state(reference.get_classifier()))
        assert ours.head_hidden_size == reference.head_hidden_size and ours.num_classes == num_classes
        with torch.no_grad():
            expected = reference.forward_head(expected_map).numpy()
        with engine.no_grad():
            out = ours.forward_head(feature_map).numpy()
        assert out.shape == expected.shape
        assert_close(out, expected, 1e-5)
    assert out.shape == ((2, 2, 1, 64) if port == "v2" else (2, 64, 2, 1)) and ours.training is False
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.zeros(1, 1, 48, 26))


@pytest.mark.parametrize("name,out_indices", [("swinv2_tiny_window8_256", None),
                                              ("swinv2_cr_tiny_ns_224", (0, -2))])
def test_features_only_intermediates_and_pruning_match_timm(name, out_indices):
    """features_only: timm's stages (all, or out_indices) as timm gives them (V2 channels-last, CR (N, C, H, W)),
    timm's state_dict keys (stages flattened, what follows the last stage pruned) and feature_info;
    forward_intermediates gives timm's maps (V2's final norm on the last stage when asked) and final map, and stops
    early; prune_intermediate_layers keeps timm's modules."""
    port = "v2" if name in V2_NAMES else "cr"
    small = {k: v for k, v in SMALL[port].items() if k != "num_classes"}
    kwargs = dict(small, **({} if out_indices is None else dict(out_indices=out_indices)))
    reference, ours = features_only_pair(name, randomize, 14, **kwargs)
    # float32 rounding that the post-norms amplify, up to 2e-5 (the float64 train test holds both ports to 1e-10)
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=15), 4 if out_indices is None else 2, 5e-5)
    reference, ours = small_pair(port, seed=16)
    x = image_batch(2, *SIZE, seed=17)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True)):
        check_intermediates(reference, ours, x, 5e-5, **kwargs)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    assert ours.num_features == ours.head_hidden_size == reference.num_features == 16
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()
                                                    if not n.endswith(PLACEHOLDERS)]


def test_list_models():
    """Every variant is registered under timm's module names: V2's, each with timm's published weights, and CR's,
    exactly timm's list, the untrained variants (no published weights) registered too."""
    assert sorted(models.list_models(module="swin_transformer_v2")) == sorted(V2_NAMES + V2_22K_NAMES)
    cr_names = models.list_models(module="swin_transformer_v2_cr")
    assert cr_names == timm.list_models(module="swin_transformer_v2_cr") == sorted(CR_NAMES + CR_UNTRAINED_NAMES)
    assert not {tag.split(".")[0] for tag in timm.list_pretrained("swinv2_cr_*")} & set(CR_UNTRAINED_NAMES)
    assert set(models.list_models("swinv2_*")) >= set(V2_NAMES + V2_22K_NAMES + CR_NAMES + CR_UNTRAINED_NAMES)
    assert set(V2_22K_NAMES) <= {tag.split(".")[0] for tag in timm.list_pretrained("swinv2_*")}
