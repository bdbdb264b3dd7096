"""timm's bring-your-own-attention networks (BoTNet, HaloNet, LambdaNet and their mixes; the untrained botnet50ts_256
and halonet_h1 too) against timm 1.0: every registered model's configuration, the layout of the models covering each
self-attention layer and of the untrained ones, seeded initial
weights, float32 eval outputs and float64 train-mode outputs, gradients and running statistics of two small
configurations covering the bottleneck attention, the halo attention (strided queries, average pooling, scaled
position logits) and the lambda layer (position convolution, relative position embeddings), strided and not; drop-path
and dropout, the head API, ``in_chans``, ``features_only``, an empty batch, the sizes the layers refuse and the
registry."""
import numpy as np
import pytest
import timm
import timm.models.byoanet as timm_byoanet
import timm.models.byobnet as timm_byobnet
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import byoanet, byobnet
from model_parity import (both_outputs, capture_builder, check_byob_config, check_dropout_only_in_training,
                          check_empty_batch, check_feature_maps, check_head_api, check_layout, check_train_step,
                          image_batch, numpy_state, randomize_byobnet, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); many small matrix products, so one BLAS thread a side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["botnet26t_256", "eca_botnext26ts_256", "eca_halonext26ts", "halo2botnet50ts_256", "halonet26t",
         "halonet50ts", "haloregnetz_b", "lambda_resnet26rpt_256", "lambda_resnet26t", "lambda_resnet50ts",
         "lamhalobotnet50ts_256", "sebotnet33ts_256", "sehalonet33ts"]
# timm's untrained variants: new configurations of the same layers
UNTRAINED_NAMES = ["botnet50ts_256", "halonet_h1"]
# timm's no-op identity for the SE's missing norm
PLACEHOLDERS = ("attn.bn", "attn_last.bn")
# layers whose printout shows every hyper-parameter
PRINTED = {"Conv2d", "Conv3d", "BatchNormAct2d", "BatchNorm2d", "AvgPool2d", "MaxPool2d", "ReLU", "SiLU", "Sigmoid",
           "Conv1d", "Linear"}


def _small_cfg(m, kind):
    """A small configuration of ``lamhalobotnet50ts_256`` in ``m`` (timm's byobnet module or ours), as keyword
    arguments laid over the registered config.

    'conv': the lambda layer with a 3x3 position convolution (strided, then not), halo attention (blocks of 4, halos
    of 1: strided queries, then plain), bottleneck attention (pooled), SE elsewhere, ReLU. 'rel': the lambda layer on
    relative position embeddings (query / key ratio, biased projection), halo attention with blocks of 3 (average
    pooling) and scaled position logits, two unstrided bottleneck attention layers with their own head width and
    scaled position logits, ECA elsewhere, grouped bottlenecks, SiLU."""
    if kind == "conv":
        lambda_kwargs = dict(r=3, num_heads=2, dim_head=4)
        halo_kwargs = dict(block_size=4, halo_size=1, num_heads=2, dim_head=4)
        bot_kwargs = dict(num_heads=2)
        extra = dict(attn_layer="se", act_layer="relu")
        group_size, bot_depth, bot_stride = 0, 1, 2
    else:
        lambda_kwargs = dict(r=None, num_heads=2, dim_head=None, qk_ratio=0.5, qkv_bias=True)
        halo_kwargs = dict(block_size=3, halo_size=1, num_heads=2, qk_ratio=0.5, scale_pos_embed=True, qkv_bias=True)
        bot_kwargs = dict(num_heads=2, dim_head=8, scale_pos_embed=True, qkv_bias=True)
        extra = dict(attn_layer="eca")
        group_size, bot_depth, bot_stride = 8, 2, 1
    blocks = (m.ByoBlockCfg(type="bottle", d=1, c=16, s=1, gs=group_size, br=0.5),
              m.interleave_blocks(("bottle", "self_attn"), d=3, every=[0, 2], c=32, s=2, gs=group_size, br=0.5,
                                  self_attn_layer="lambda", self_attn_kwargs=lambda_kwargs),
              m.ByoBlockCfg(type="self_attn", d=2, c=32, s=2, br=0.5, self_attn_layer="halo",
                            self_attn_kwargs=halo_kwargs),
              m.ByoBlockCfg(type="self_attn", d=bot_depth, c=48, s=bot_stride, br=0.5, self_attn_layer="bottleneck",
                            self_attn_kwargs=bot_kwargs))
    return dict(blocks=blocks, stem_chs=16, num_features=40, num_classes=10, **extra)


# each small model's img_size (its attention layers' map sizes follow) and an odd input size that gives the same maps
# (the stem's strided convolutions round up): 'conv' has 16x16 maps after the stem, then 8, 4 and 2 pixels, 'rel' 12,
# 6, 3 and 3
SIZES = {"conv": (64, 63), "rel": (48, 47)}


def small_pair(kind, seed=0, **overrides):
    """timm's small model (randomised, eval mode) and ours with its weights, built without random init."""
    overrides.setdefault("img_size", SIZES[kind][0])
    torch.manual_seed(seed)
    reference = timm.create_model("lamhalobotnet50ts_256", **_small_cfg(timm_byobnet, kind), **overrides)
    randomize_byobnet(reference, seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = byoanet.lamhalobotnet50ts_256(**_small_cfg(byobnet, kind), **overrides)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def small_input(kind, seed, dtype=np.float32, c=3):
    """A batch of 2 at the small model's odd input size."""
    size = SIZES[kind][1]
    return image_batch(2, size, size, seed=seed, c=c).astype(dtype)


def test_entrypoint_configs_match_timm(monkeypatch):
    """Every entrypoint builds ByobNet with timm's configuration (stages, per-stage self-attention layers and their
    arguments, stem, activation, attention, block arguments) and, for the fixed-size models (timm's entrypoint or
    pretrained config sets it), an ``img_size`` of 256; timm's fields we leave out keep their defaults there."""
    ours_calls = capture_builder(monkeypatch, byoanet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_byoanet, "build_model_with_cfg")
    for name in NAMES + UNTRAINED_NAMES:
        getattr(byoanet, name)()
        getattr(timm_byoanet, name)()
        (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) = ours_calls.pop(), timm_calls.pop()
        assert ours_cls is byobnet.ByobNet and timm_cls is timm_byobnet.ByobNet
        fixed = timm.models.get_pretrained_cfg(name).fixed_input_size
        assert ours_kwargs.pop("img_size", None) == (256 if fixed else None), name
        assert timm_kwargs.pop("img_size", 256) == 256, name
        assert set(ours_kwargs) == {"cfg", "progress"}
        assert set(timm_kwargs) == {"model_cfg", "feature_cfg"}
        check_byob_config(ours_kwargs["cfg"], timm_kwargs["model_cfg"], name)


# every self-attention layer (lambda with a 9x9 convolution, halo, bottleneck), and the relative-position lambda; the
# untrained variants (BoTNet-50-TS; HaloNet-H1's halo attention without bottleneck in every block, its 7x7 stem)
LAYOUT_NAMES = ["lamhalobotnet50ts_256", "lambda_resnet26rpt_256"] + UNTRAINED_NAMES


def test_layout_equals_timm(monkeypatch):
    """state_dict keys in order, shapes and dtypes (the relative embeddings sized by the 256-pixel input's maps),
    module names and printouts, feature_info, num_features, head_hidden_size, default_cfg, and the non-persistent
    relative position indices. timm's model is built on the meta device, ours without random init. HaloRegNetZ-B,
    the one model with a single-convolution stem, names that convolution timm's ``first_conv``."""
    monkeypatch.setattr(timm_byobnet, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name in LAYOUT_NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name, pretrained=False, num_classes=1000)
        ours = getattr(byoanet, name)(num_classes=1000)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)
        assert [n for n, _ in ours.named_buffers()] == [n for n, _ in reference.named_buffers()], name
    ours = byoanet.haloregnetz_b()
    assert ours.default_cfg["first_conv"] == timm.models.get_pretrained_cfg("haloregnetz_b").first_conv == "stem.conv"


def _drawn_by_trunc_normal(reference):
    """The self-attention weights timm draws from its truncated normal (the lambda convolution's bias and the
    lambda layer's norms aside)."""
    return {k for k in reference.state_dict()
            if ".self_attn." in k and ".norm_" not in k and not k.endswith("conv_lambda.bias")}


@pytest.mark.parametrize("kind", list(SIZES))
def test_seeded_init_equals_timm(kind):
    """After the same seed our weights are timm's (the projections' default init redrawn as N(0, 2 / fan-out),
    then truncated normal as the block resets the layer, the position embeddings' N(0, scale^2) at construction
    redrawn truncated, the lambda convolution's default bias kept) and both random streams end in step: bit for
    bit, but the truncated normal's values within 2 float32 ulps of their own size (the engine's float32 erfinv
    rounds a few values differently from torch's)."""
    img_size = SIZES[kind][0]
    torch.manual_seed(5)
    reference = timm.create_model("lamhalobotnet50ts_256", img_size=img_size, **_small_cfg(timm_byobnet, kind))
    after_reference = torch.rand(4).numpy()
    engine.manual_seed(5)
    ours = byoanet.lamhalobotnet50ts_256(img_size=img_size, **_small_cfg(byobnet, kind))
    assert np.array_equal(engine.rand(4).numpy(), after_reference)
    drawn = _drawn_by_trunc_normal(reference)
    state = {k: v.numpy() for k, v in ours.state_dict().items()}
    expected = numpy_state(reference)
    assert list(state) == list(expected)
    for key, value in expected.items():
        assert state[key].dtype == value.dtype, key
        if key in drawn:
            assert np.all(np.abs(state[key] - value) <= 2 * np.spacing(np.abs(value))), key
        else:
            assert np.array_equal(state[key], value), key


@pytest.mark.parametrize("kind", list(SIZES))
def test_eval_and_train_match_timm(kind):
    """float32 eval logits of a batch of 2 at an odd size; then in float64 train mode the outputs, the input
    gradient, every parameter's gradient and the running statistics (the lambda layer's query and value norms
    among them)."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, small_input(kind, seed=1))
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, small_input(kind, seed=2, dtype=np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout():
    """timm's per-block drop-path rates; in eval mode nothing is drawn or dropped (timm's outputs, the random stream
    untouched); in train mode both draw timm's random stream (the same outputs after the same seed, others after
    another)."""
    x = small_input("conv", seed=3)
    reference, ours = small_pair("conv", seed=3, drop_path_rate=0.5, drop_rate=0.5)
    rates = [getattr(b.drop_path, "p", 0.0) for stage in ours.stages for b in stage]
    expected = [getattr(b.drop_path, "drop_prob", 0.0) for stage in reference.stages for b in stage]
    assert rates == pytest.approx(expected) and expected[-1] == 0.5 and expected[0] == 0.0
    check_dropout_only_in_training(reference, ours, x)


def test_head_api_in_chans_and_features_match_timm():
    """``num_classes=0``, ``reset_classifier`` and ``global_pool=''`` as timm's; ``in_chans=1``; ``features_only``
    (the stem's map before its last reduction, each stage's before a reduction, the head convolution's) and
    ``out_indices``, under timm's flattened names."""
    x = small_input("rel", seed=4)
    reference, ours = small_pair("rel", seed=4)
    headless = byoanet.lamhalobotnet50ts_256(img_size=48, **dict(_small_cfg(byobnet, "rel"), num_classes=0)).eval()
    check_head_api(reference, ours, headless, x, 40, (2, 40, 3, 3))
    reference, ours = small_pair("rel", seed=5, in_chans=1)
    assert ours.stem.conv1.conv.weight.shape == (6, 1, 3, 3)
    out, ref = both_outputs(reference, ours, small_input("rel", seed=5, c=1))
    assert_close(out, ref, 1e-5)
    reference, ours = small_pair("conv", seed=6, features_only=True)
    check_feature_maps(reference, ours, small_input("conv", seed=6), 5, 1e-5)
    reference, ours = small_pair("conv", seed=6, features_only=True, out_indices=(1, 3))
    check_feature_maps(reference, ours, small_input("conv", seed=6), 2, 1e-5)


def test_empty_batch():
    """An empty batch runs through the three self-attention layers and ECA (timm's halo and ECA attention fail on one:
    reshapes of no values with -1): in eval mode no logits, in train mode an empty input gradient and zero parameter
    gradients."""
    _, ours = small_pair("conv")
    size = SIZES["conv"][1]
    check_empty_batch(ours, (3, size, size), 10)
    check_empty_batch(byoanet.eca_botnext26ts_256(num_classes=10), (3, 256, 256), 10)


def test_refuses_other_sizes_and_bad_arguments():
    """Fixed-size layers without a size, maps of another size than the model was built for (bottleneck attention,
    relative-position lambda), maps the halo blocks do not tile, an empty image, and impossible head splits or
    strides are refused."""
    with pytest.raises(ValueError, match="img_size"):
        byoanet.botnet26t_256(img_size=None)
    for kind in SIZES:
        with pytest.raises(ValueError, match="img_size"):
            byoanet.lamhalobotnet50ts_256(img_size=None, **_small_cfg(byobnet, kind))
    _, conv = small_pair("conv")
    for size, message in ((32, "multiples of 4"), (0, None)):
        with pytest.raises((RuntimeError, ValueError), match=message), engine.no_grad():
            conv(engine.zeros(1, 3, size, size))
    bottleneck = byoanet.BottleneckAttn(8, feat_size=4, num_heads=2)
    relative_lambda = byoanet.LambdaLayer(8, feat_size=(4, 3), num_heads=2, r=None)
    for layer, message in ((bottleneck, "bottleneck attention was built for 4x4"),
                           (relative_lambda, "lambda layer was built for 4x3")):
        with pytest.raises(ValueError, match=message), engine.no_grad():
            layer(engine.zeros(1, 8, 3, 4))
    for layer in (lambda: byoanet.HaloAttn(16, stride=3), lambda: byoanet.HaloAttn(12, num_heads=8),
                  lambda: byoanet.BottleneckAttn(12, feat_size=4, num_heads=8), lambda: byoanet.LambdaLayer(6)):
        with pytest.raises(ValueError):
            layer()


def test_list_models():
    """The ``byoanet`` module lists every model of timm's ``byoanet`` module: those with ImageNet-1k weights and the
    untrained variants too."""
    assert models.list_models(module="byoanet") == timm.list_models(module="byoanet")
    assert sorted(models.list_models(module="byoanet")) == sorted(NAMES + UNTRAINED_NAMES)
    assert not {n.split(".")[0] for n in timm.list_pretrained("*")} & set(UNTRAINED_NAMES)
    pretrained = {n.split(".")[0] for n in timm.list_pretrained()
                  if timm.models.get_pretrained_cfg(n).num_classes == 1000}
    assert pretrained & set(timm.list_models(module="byoanet")) == set(NAMES)
