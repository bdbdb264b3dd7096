"""timm parity of CoAtNet, MaxViT and MaxxViT (timm's ``maxxvit`` module, its untrained entrypoints and test models
too): every registered variant's configuration and image size, the large variants' and the untrained ones' with new
blocks layout against timm's on the meta device; layout, seeded initialisation, buffers and eval outputs (float32) of
small models covering every block (the paper's CoAtNet with mixed stages and the parallel MaxViT blocks among them),
norm, relative position bias, padding and head; train-mode outputs and gradients (float64); stochastic depth and
dropout; and the timm API (pre-logits features, global pooling, reset_classifier, in_chans, input size checks,
features_only, list_models)."""
import dataclasses
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.maxxvit as timm_mx
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import maxxvit as mx
from model_parity import (both_outputs, capture_builder, check_dropout_only_in_training, check_feature_maps,
                          check_head_api, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          features_only_pair, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["coatnet_0_rw_224", "coatnet_1_rw_224", "coatnet_2_rw_224", "coatnet_bn_0_rw_224", "coatnet_nano_rw_224",
         "coatnet_rmlp_1_rw2_224", "coatnet_rmlp_1_rw_224", "coatnet_rmlp_2_rw_224", "coatnet_rmlp_2_rw_384",
         "coatnet_rmlp_nano_rw_224", "coatnext_nano_rw_224", "maxvit_base_tf_224", "maxvit_base_tf_384",
         "maxvit_base_tf_512", "maxvit_large_tf_224", "maxvit_large_tf_384", "maxvit_large_tf_512",
         "maxvit_nano_rw_256", "maxvit_rmlp_base_rw_224", "maxvit_rmlp_base_rw_384", "maxvit_rmlp_nano_rw_256",
         "maxvit_rmlp_pico_rw_256", "maxvit_rmlp_small_rw_224", "maxvit_rmlp_tiny_rw_256", "maxvit_small_tf_224",
         "maxvit_small_tf_384", "maxvit_small_tf_512", "maxvit_tiny_rw_224", "maxvit_tiny_tf_224",
         "maxvit_tiny_tf_384", "maxvit_tiny_tf_512", "maxvit_xlarge_tf_384", "maxvit_xlarge_tf_512",
         "maxxvit_rmlp_nano_rw_256", "maxxvit_rmlp_small_rw_256", "maxxvitv2_nano_rw_256", "maxxvitv2_rmlp_base_rw_224",
         "maxxvitv2_rmlp_base_rw_384"]
# pre-trained on larger label sets: the classes of timm's weights (ImageNet-12k, ImageNet-21k)
PRETRAINING_CLASSES = {"coatnet_3_rw_224": 11821, "maxvit_xlarge_tf_224": 21843}
# timm's entrypoints without published weights (its test models among them); the new configurations of checked code
# (the others repeat checked ones at other widths, depths, image sizes or with other options) are checked by their
# configuration, those that need new code (mixed stages, parallel blocks) by their layout too; the largest (117M to
# 688M parameters) are never built
UNTRAINED = ["coatnet_0_224", "coatnet_1_224", "coatnet_2_224", "coatnet_3_224", "coatnet_4_224", "coatnet_5_224",
             "coatnet_nano_cc_224", "coatnet_pico_rw_224", "coatnet_rmlp_0_rw_224", "coatnet_rmlp_3_rw_224",
             "maxvit_pico_rw_256", "maxvit_rmlp_small_rw_256", "maxvit_tiny_pm_256", "maxvit_tiny_rw_256",
             "maxxvit_rmlp_tiny_rw_256", "maxxvitv2_rmlp_large_rw_224", "test_coatnet", "test_maxvit"]
UNTRAINED_LAYOUTS = ["coatnet_nano_cc_224", "maxvit_tiny_pm_256"]
TOL = 1e-5
# timm's no-op identities that ours leaves out: the MLPs' norm slot, squeeze-and-excitation's norm slot, the MLP
# position bias's activation slot
PLACEHOLDERS = ("mlp.norm", "se.bn", "se_early.bn", "rel_pos.bias_act")
PRINTED = ("Conv2d", "Conv2dSame", "Linear", "LayerNorm", "LayerNorm2d", "LayerNormAct2d", "BatchNorm2d",
           "BatchNormAct2d", "AvgPool2d", "AvgPool2dSame", "MaxPool2d", "LayerScale", "LayerScale2d", "Dropout",
           "GELU", "GELUTanh", "SiLU", "ReLU", "Tanh", "Sigmoid", "Flatten")
# timm's configuration fields that ours leaves out, with the value all registered models have: NCHW MaxViT attention
# (the ConvNeXt blocks' channels-last norm, for linear MLPs that MaxxVit never builds, is left out too)
LEFT_OUT = {"use_nchw_attn": False}

# Small models covering every block kind, as registered variants narrowed and shortened: TensorFlow's MaxViT (tanh
# GELU, "same" padding on odd maps, its position bias and qkv layout, the hidden-layer head), a CoAtNet with pooling
# MBConvs, max-pooled shortcuts, early SE, MLP position biases and layer scale, a one-channel (in_chans=1) CoAtNeXt
# (ConvNeXt blocks, LayerNorm stem, 'normal' init) with BatchNorm transformers, a MaxxViT-V2 (ConvNeXt MaxViT blocks,
# grid attention only) and timm's MaxViT with MLP positions and 1x1 striding. One block a stage (the layout and eval
# test adds a stride-1 block in the third stage). Two more for the untrained variants' new paths: the paper's CoAtNet
# (GELU MBConvs widening to their output, attention widening in its qkv projection, the hidden-layer head) with
# coatnet_nano_cc's stages opening with an MBConv before their transformer blocks, and timm's parallel MaxViT
# (two MBConvs, then block and grid attention side by side, each to half the channels).
BASE = dict(embed_dim=(8, 16, 32, 32), depths=(1, 1, 1, 1), stem_width=8, transformer_dim_head=8, num_classes=10)
EVEN = (64, 96)
SMALL = {
    "maxvit_tf": ("maxvit_tiny_tf_224", dict(img_size=(63, 95), transformer_window_size=(2, 3), head_hidden_size=12)),
    "coat_rmlp": ("coatnet_rmlp_1_rw_224", dict(img_size=EVEN, transformer_init_values=0.5,
                                                 transformer_rel_pos_dim=16)),
    "coatnext_bn": ("coatnext_nano_rw_224", dict(img_size=EVEN, transformer_norm_layer="batchnorm2d", in_chans=1)),
    "maxxvitv2": ("maxxvitv2_nano_rw_256", dict(img_size=EVEN)),
    "maxvit_rmlp": ("maxvit_rmlp_small_rw_224", dict(img_size=EVEN, transformer_rel_pos_dim=16,
                                                     conv_stride_mode="1x1")),
    "coatnet_cc": ("coatnet_0_224", dict(img_size=EVEN, block_type=("C", "C", ("C", "T"), ("C", "T")),
                                         head_hidden_size=12)),
    "maxvit_pm": ("maxvit_tiny_pm_256", dict(img_size=(64, 64))),
}
# random values for every parameter and BatchNorm statistic of a timm model: the initial ones (unit norms, zero
# biases, 1e-6 layer scales, small position biases) would hide bugs
randomize = partial(randomize_parameters, scales=("gamma",), tokens=("relative_position_bias_table",), norms=True)


def config(kind, **kwargs):
    """(the registered variant, its keyword arguments) of the small ``kind``."""
    name, settings = SMALL[kind]
    return name, {**BASE, **settings, **kwargs}


def small_pair(kind, seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models with timm's randomised weights in both, in eval mode."""
    name, settings = config(kind, **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm.create_model(name, **settings), seed)
    ours = models.create_model(name, **settings)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def batch(kind, seed, n=2):
    """A seeded input of the small ``kind``'s image size and channels."""
    settings = config(kind)[1]
    return image_batch(n, *settings["img_size"], seed=seed, c=settings.get("in_chans", 3))


def skip_init(patch):
    """Our models built without drawing their initial weights (for layout checks)."""
    skip_random_init(patch)
    patch.setattr(mx, "trunc_normal_", lambda tensor, std=0.02: tensor)


# ---- configuration and layout -----------------------------------------------------------------------------------


def check_same_fields(ours, theirs, where):
    """Our configuration dataclass has timm's values for all its fields; timm's others have their ``LEFT_OUT``
    values."""
    ours_fields = {f.name for f in dataclasses.fields(ours)}
    for f in dataclasses.fields(theirs):
        value = getattr(theirs, f.name)
        if f.name in ("conv_cfg", "transformer_cfg"):
            check_same_fields(getattr(ours, f.name), value, f"{where}.{f.name}")
        elif f.name in ours_fields:
            assert getattr(ours, f.name) == value, (where, f.name)
        elif f.name == "norm_layer_cl":
            assert ours.block_type == "convnext" or not value, where
        else:
            assert value == LEFT_OUT[f.name], (where, f.name)
    assert ours_fields <= {f.name for f in dataclasses.fields(theirs)}


def test_variant_configurations_match_timm(monkeypatch):
    """Each entrypoint builds timm's configuration (every field of timm's dataclasses, but the NCHW attention, unused
    by all) at the image size of timm's weights (its default weights: ImageNet-1k's, or the larger label sets' of
    the pre-training models; for the untrained models, that of timm's default configuration, 160 for its test
    models); keyword arguments override fields as in timm."""
    calls = capture_builder(monkeypatch, mx, "build_model")
    for name in NAMES + list(PRETRAINING_CLASSES) + UNTRAINED:
        getattr(mx, name)()
        cls, kwargs = calls.pop()
        timm_cfg = timm.models.get_pretrained_cfg(name)
        cfg_name = name if name in timm_mx.model_cfgs else name.rsplit("_", 1)[0]
        assert cls is mx.MaxxVit and kwargs["img_size"] == timm_cfg.input_size[-1] == timm_cfg.input_size[-2]
        assert timm_cfg.num_classes == PRETRAINING_CLASSES.get(name, 1000)
        check_same_fields(kwargs["cfg"], timm_mx.model_cfgs[cfg_name], name)
        assert cls.default_cfg == {"first_conv": timm_cfg.first_conv, "classifier": timm_cfg.classifier}
    monkeypatch.undo()
    overlaid = mx._overlay_kwargs(mx.model_cfgs["maxvit_tiny_tf"], depths=(1, 1, 1, 1), conv_padding="",
                                  transformer_window_size=5)
    expected = timm_mx._overlay_kwargs(timm_mx.model_cfgs["maxvit_tiny_tf"], depths=(1, 1, 1, 1), conv_padding="",
                                       transformer_window_size=5)
    check_same_fields(overlaid, expected, "overlay")
    assert overlaid.transformer_cfg.grid_size == (5, 5)


@pytest.mark.parametrize("name", ["maxvit_xlarge_tf_512", "maxxvitv2_rmlp_base_rw_384", "coatnet_3_rw_224"])
def test_large_layout_matches_timm(name, monkeypatch):
    """The large variants' layout (the small models cover each kind): state_dict keys in order, shapes and dtypes,
    module names (but for timm's placeholders), the printout of every layer, feature_info, num_features,
    head_hidden_size and default_cfg against timm's model on the meta device (built uninitialised, with one to two
    blocks a stage, timm takes seconds otherwise) with the classes of timm's weights: TensorFlow's MaxViT-XL,
    MaxxViT-V2-B with MLP positions and the ImageNet-12k CoAtNet-3 with layer scales."""
    kwargs = dict(depths=(1, 1, 2, 1), weight_init="", num_classes=timm.models.get_pretrained_cfg(name).num_classes)
    with torch.device("meta"):
        reference = timm.create_model(name, **kwargs)
    skip_init(monkeypatch)
    ours = models.create_model(name, **kwargs)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)
    assert ours.embed_dim == reference.embed_dim


def test_untrained_layout_matches_timm(monkeypatch):
    """The untrained entrypoints that need new code (coatnet_nano_cc's stages mixing MBConv and transformer blocks,
    the parallel MaxViT) have timm's layout (as in ``check_layout``) with 1000 classes, against timm's model on the
    meta device (built uninitialised, with one to two blocks a stage: the blocks repeat)."""
    skip_init(monkeypatch)
    for name in UNTRAINED_LAYOUTS:
        kwargs = dict(depths=(1, 1, 2, 1), weight_init="", num_classes=1000)
        with torch.device("meta"):
            reference = timm.create_model(name, **kwargs)
        check_layout(models.create_model(name, **kwargs), reference, PLACEHOLDERS, PRINTED)


# ---- initialisation and numerics --------------------------------------------------------------------------------


def position_tables(reference):
    """The keys of the tables drawn by timm's truncated normal."""
    return {k for k in reference.state_dict() if k.endswith("relative_position_bias_table")}


@pytest.mark.parametrize("kind", list(SMALL))
def test_layout_seeded_init_and_eval_outputs_match_timm(kind):
    """Against timm's model of the same variant and settings: the layout (as in ``check_layout``); from the same seed,
    timm's initial weights drawn in timm's order (the layers' defaults, then each stem and block's own init, children
    first, ViT's or 'normal'): bit for bit but the truncated-normal position tables (within 2 float32 ulps), both
    generators in step, the same non-persistent buffers (position indices, log offsets, one-hot lookups). With timm's
    randomised weights, float32 logits of a batch of 2 equal timm's (two blocks in the third stage: a stride-1
    block of each kind)."""
    name, settings = config(kind, depths=(1, 1, 2, 1))
    reference, ours = check_seeded_init(lambda: timm.create_model(name, **settings),
                                        lambda: models.create_model(name, **settings), 3, position_tables, kind)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)
    buffers = dict(ours.named_buffers())
    for key, buffer in reference.named_buffers():
        assert np.array_equal(buffers[key].numpy(), buffer.numpy()), key
    reference = randomize(reference, 1).eval()
    ours.load_state_dict(numpy_state(reference))
    out, expected = both_outputs(reference, ours.eval(), batch(kind, seed=2))
    assert out.shape == (2, 10) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)


@pytest.mark.parametrize("kind", ["maxvit_tf", "coat_rmlp", "coatnext_bn", "coatnet_cc", "maxvit_pm"])
def test_train_outputs_and_gradients_match_timm(kind):
    """float64, train mode: outputs, input gradient, every parameter's gradient and BatchNorm's running statistics
    equal timm's (the MLP position bias's dropout drawing timm's masks after the same seed)."""
    reference, ours = small_pair(kind, seed=4)
    reference, ours = reference.double().train(), ours.double().train()
    torch.manual_seed(5)
    engine.manual_seed(5)
    check_train_step(reference, ours, batch(kind, seed=6).astype(np.float64), floor=1e-6)


def test_drop_path_and_dropout_only_in_training():
    """drop_path_rate rises block by block as timm's (0 at the first, the rate at the last, a MaxViT block's parts
    sharing theirs); in eval mode nothing is dropped (timm's eval outputs); in train mode both draw the same masks
    after the same seed, other masks after another."""
    reference, ours = small_pair("maxxvitv2", seed=7, drop_path_rate=0.5, drop_rate=0.3)
    rates = [getattr(m, "p", 0.0) for n, m in ours.named_modules() if n.rsplit(".", 1)[-1].startswith("drop_path")]
    expected = [getattr(m, "drop_prob", 0.0) for n, m in reference.named_modules()
                if n.rsplit(".", 1)[-1].startswith("drop_path")]
    assert rates == pytest.approx(expected) and rates[0] == 0.0 and rates[-1] == pytest.approx(0.5)
    assert ours.head.drop.p == 0.3
    check_dropout_only_in_training(reference, ours, batch("maxxvitv2", seed=8), TOL, TOL)


# ---- API --------------------------------------------------------------------------------------------------------


def test_head_api_matches_timm():
    """The plain head: pooled features of a model built with ``num_classes=0``, reset_classifier to other poolings
    (timm's widths) and to none (the map). The hidden-layer head: pre-logits features (through the tanh layer),
    and reset_classifier as timm's (without pooling the hidden layer becomes a 1x1 convolution with its weights, and
    back with pooling; ``reset_other`` removes the norm and hidden layer), timm's new weights giving timm's
    outputs."""
    reference, ours = small_pair("coat_rmlp", seed=9)
    name, settings = config("coat_rmlp", num_classes=0)
    headless = models.create_model(name, **settings).eval()
    check_head_api(reference, ours, headless, batch("coat_rmlp", seed=10), 32, (2, 32, 2, 3))

    reference, ours = small_pair("maxvit_tf", seed=11)
    x = batch("maxvit_tf", seed=12)
    out, expected = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 12) and ours.head_hidden_size == 12 and ours.num_features == 32
    assert_close(out, expected, TOL)
    for args in ((0, ""), (4, "max"), (3, None, True)):
        torch.manual_seed(13)
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert ours.num_classes == reference.num_classes and ours.head_hidden_size == reference.head_hidden_size
        assert [n for n, _ in ours.head.named_modules()] == [n for n, _ in reference.head.named_modules()]
        assert type(ours.get_classifier()).__name__ == type(reference.get_classifier()).__name__
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert_close(out, expected, TOL)
    assert out.shape == (2, 3) and ours.global_pool == "max"


def test_features_only_matches_timm():
    """``features_only`` (through the entrypoints' builder) gives timm's feature maps, the stem's and every stage's,
    with timm's module names (the stages flattened: ``stages_0``...), channels, reductions and values;
    ``out_indices`` picks some of them (negative ones counted from the end)."""
    name, settings = config("maxvit_tf")
    reference, ours = features_only_pair(name, randomize, 16, **settings)
    x = batch("maxvit_tf", seed=17)
    maps = check_feature_maps(reference, ours, x, 5, TOL)
    picked = models.create_model(name, features_only=True, out_indices=(1, -1), **settings)
    picked.load_state_dict({k: v for k, v in ours.state_dict().items() if k in picked.state_dict()})
    assert picked.feature_info.reduction() == [4, 32]
    with engine.no_grad():
        out = [m.numpy() for m in picked.eval()(engine.from_numpy(x))]
    assert_close(out[0], maps[1], 1e-6)  # equal on the CPU; within rounding of maps made on a device
    assert_close(out[1], maps[4], 1e-6)


def forward_features(model, x):
    """``model``'s feature map (for ``both_outputs``)."""
    return model.forward_features(x)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates as timm's, the stem's map counted as level 0 before the four stages': every level, the
    last n with the final norm on the last stage's map, a list (negative from the end) stopping early, the stem's
    map alone. prune_intermediate_layers as timm's: the same indices; cut after stage 1 (level 2), the features are
    its map (no final norm) and the head goes; with ``prune_head=False`` and every stage kept, the hidden-layer head
    stays and the logits are timm's. An NHWC output format is refused."""
    reference, ours = small_pair("coat_rmlp", seed=18)
    x = batch("coat_rmlp", seed=19)
    for kwargs in ({}, dict(indices=2, norm=True), dict(indices=[0, -3], stop_early=True),
                   dict(indices=[0], stop_early=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([0, 2]) == reference.prune_intermediate_layers([0, 2]) == [0, 2]
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, expected = both_outputs(reference, ours, x, forward_features)
    assert out.shape == (2, 16, 8, 12)
    assert_close(out, expected, TOL)
    reference, ours = small_pair("maxvit_tf", seed=20)
    x = batch("maxvit_tf", seed=21)
    assert ours.prune_intermediate_layers(prune_head=False) == reference.prune_intermediate_layers(
        prune_head=False) == [4]
    assert ours.head_hidden_size == reference.head_hidden_size == 12
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 10)
    assert_close(out, expected, TOL)


def test_input_sizes_are_checked():
    """A MaxViT refuses maps that its windows and grids do not divide, a CoAtNet maps other than those its position
    bias was built for, a too small image (for the bisecting script: a ValueError or RuntimeError), and a model whose
    image size leaves empty windows."""
    maxvit = models.create_model(SMALL["maxvit_rmlp"][0], **config("maxvit_rmlp")[1]).eval()
    coat = models.create_model(SMALL["coat_rmlp"][0], **config("coat_rmlp")[1]).eval()
    with engine.no_grad():
        with pytest.raises(ValueError, match="does not divide"):
            maxvit(engine.from_numpy(image_batch(1, 64, 64)))
        with pytest.raises(ValueError, match="img_size"):
            coat(engine.from_numpy(image_batch(1, 96, 64)))
        for model in (maxvit, coat):
            with pytest.raises((ValueError, RuntimeError)):
                model(engine.from_numpy(image_batch(1, 1, 1)))
    with pytest.raises(ValueError, match="img_size"):
        mx.MaxxVit(mx.model_cfgs["maxvit_nano_rw"], img_size=16)


def test_list_models():
    """The ``maxxvit`` module lists exactly timm's names: those with timm's ImageNet-1k or pre-training weights (see
    the configuration test) and the untrained ones too, timm's test models among them; torchvision's MaxViT-T stays
    in ``maxvit``."""
    expected = sorted(NAMES + list(PRETRAINING_CLASSES) + UNTRAINED, key=models.registry._natural_key)
    assert models.list_models(module="maxxvit") == expected == timm.list_models(module="maxxvit")
    assert not {n.split(".")[0] for n in timm.list_pretrained("*")} & set(UNTRAINED)
    assert "maxvit_t" in models.list_models(module="maxvit")
