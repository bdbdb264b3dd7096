"""timm's bring-your-own-blocks networks (GENet, RepVGG, MobileOne, RegNetZ, the ResNe(X)t "ts" / "q" models with
SE, ECA, GC and BAT attention, CLIP's modified ResNets with attention pooling or average pooling) against timm 1.0:
every registered model's configuration, the layout of one model of each kind, seeded initial weights, float32 eval
outputs and float64 train-mode outputs, gradients and running statistics of small configurations covering each block
kind (basic, bottleneck, dark, edge, RepVGG, MobileOne, self-attention), attention layer, stem, shortcut and norm
(BatchNorm, EvoNorm-S0a), dilated stages, RepVGG's and MobileOne's ``reparameterize``, drop-path and dropout, the
head API, ``in_chans``, ``features_only`` and the registry; for the CLIP ResNets the anti-aliased strides, the
average-pooled stem and the attention-pool head (position embeddings resampled for other sizes, its own head
API); timm's untrained regnetz_b16_evos and resnet50_mlp (configuration, layout) and the latter's pool, norm and MLP
head (seeded init, outputs, gradients, dropout, head API)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.layers.evo_norm as timm_evo_norm
import timm.models.byobnet as timm_byobnet
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import byobnet
from model_parity import (both_outputs, capture_builder, check_byob_config, check_dropout_only_in_training,
                          check_feature_maps, check_head_api, check_intermediates, check_layout, check_pruned,
                          check_seeded_init, check_train_step, comparable_config, image_batch, numpy_state, pre_logits,
                          randomize_byobnet, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); small models, whose many small ops pay for every thread
# handoff, so one BLAS thread on each side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["bat_resnext26ts", "eca_resnet33ts", "eca_resnext26ts", "gcresnet33ts", "gcresnet50t", "gcresnext26ts",
         "gcresnext50ts", "gernet_l", "gernet_m", "gernet_s", "mobileone_s0", "mobileone_s1", "mobileone_s2",
         "mobileone_s3", "mobileone_s4", "regnetz_b16", "regnetz_c16", "regnetz_c16_evos", "regnetz_d32",
         "regnetz_d8", "regnetz_d8_evos", "regnetz_e8", "repvgg_a0", "repvgg_a1", "repvgg_a2", "repvgg_b0",
         "repvgg_b1", "repvgg_b1g4", "repvgg_b2", "repvgg_b2g4", "repvgg_b3", "repvgg_b3g4", "repvgg_d2se",
         "resnet32ts", "resnet33ts", "resnet51q", "resnet61q", "resnext26ts", "seresnet33ts", "seresnext26ts"]
# CLIP's ResNets (timm publishes CLIP image-tower weights: embeddings, or none with average pooling); the x64 pair
# (over 300M parameters) is only compared by configuration
CLIP_NAMES = ["resnet101_clip", "resnet101_clip_gap", "resnet50_clip", "resnet50_clip_gap", "resnet50x16_clip",
              "resnet50x16_clip_gap", "resnet50x4_clip", "resnet50x4_clip_gap", "resnet50x64_clip",
              "resnet50x64_clip_gap"]
# timm's untrained variants: a new RegNetZ configuration, and CLIP's ResNet-50 body with an MLP head
UNTRAINED_NAMES = ["regnetz_b16_evos", "resnet50_mlp"]
# timm's no-op identity for the SE's missing norm
PLACEHOLDERS = ("attn.bn", "attn_last.bn")
# layers whose printout shows every hyper-parameter (kernel, stride, padding, groups, eps, ceil mode, inplace...)
PRINTED = {"Conv2d", "Conv1d", "BatchNormAct2d", "BatchNorm2d", "LayerNorm2d", "EvoNorm2dS0a", "AvgPool2d",
           "MaxPool2d", "ReLU", "SiLU", "Sigmoid", "Dropout", "Dropout2d", "Linear", "AdaptiveAvgPool2d", "Flatten"}


def _blocks(module, *stages):
    """Stages of ``module``'s ByoBlockCfg (timm's or ours), one per (type, depth, width, stride, group size, ratio,
    optional extra fields) tuple."""
    def block(kind, d, c, s, gs, br, extra=None):
        return module.ByoBlockCfg(type=kind, d=d, c=c, s=s, gs=gs, br=br, **(extra or {}))

    return tuple(block(*stage) for stage in stages)


def _evos(module):
    """``module``'s EvoNorm-S0a (timm's, or ours) in groups of 4 channels, so that narrow layers fit."""
    return partial(module.EvoNorm2dS0a, group_size=4)


def _alternate(chs, idx):
    """Every second block in two groups (RepVGG's g-models' rule)."""
    return chs // 2 if (idx + 1) % 2 == 0 else 0


# Small configurations: a registered model (its config) with fields overridden through the model's keyword
# arguments, as timm lays them over its config; each a function of the module whose block configs it uses.
SMALL = {
    # quad stem (four 3x3, stride-2 last), an edge block with its own (empty) block arguments, bottlenecks with a
    # second kxk (``extra_conv``), a depthwise last stage, 1x1 projections, a 1x1 head convolution, SiLU
    "quad_edge": ("resnet61q", lambda m: dict(
        blocks=_blocks(m, ("edge", 1, 16, 1, 0, 1.0, dict(block_kwargs={})), ("bottle", 2, 24, 2, 8, 0.5),
                       ("bottle", 1, 32, 2, 8, 0.5), ("bottle", 1, 32, 2, 1, 1.0)), stem_chs=16, num_features=40,
        num_classes=10)),
    # every plain block kind with SE (before or after the last convolution), average-pool shortcuts, output stride
    # 8 (two dilated stages, "same" pooling in the second one's shortcut)
    "kinds_se_avg": ("seresnext26ts", lambda m: dict(
        blocks=_blocks(m, ("edge", 1, 16, 2, 0, 0.5), ("dark", 1, 24, 2, 0, 0.5), ("basic", 1, 32, 2, 8, 0.25),
                       ("bottle", 2, 32, 2, 8, 0.5)), stem_chs=16, stem_pool="", stem_type="3x3", downsample="avg",
        act_layer="relu", attn_kwargs=dict(rd_ratio=0.25), num_classes=10, output_stride=8)),
    # tiered stem with max pooling, ECA, BAT (2x2 cells) and GC (scaling) set per stage, the model's GCA (additive)
    "attn": ("gcresnext26ts", lambda m: dict(
        blocks=_blocks(m, ("bottle", 1, 16, 1, 8, 0.5, dict(attn_layer="eca")),
                       ("bottle", 1, 32, 2, 8, 0.5, dict(attn_layer="bat", attn_kwargs=dict(block_size=2))),
                       ("bottle", 1, 32, 2, 8, 0.5, dict(attn_layer="gc")),
                       ("bottle", 2, 48, 2, 8, 0.5)), stem_chs=16, num_classes=10)),
    # RegNetZ: deep stem, inverted bottlenecks with SE, linear outputs, no residual where the shape changes, EvoNorm
    "regnetz_evos": ("regnetz_d8_evos", lambda m: dict(
        blocks=_blocks(m, ("bottle", 1, 16, 1, 8, 2), ("bottle", 2, 24, 2, 8, 2), ("bottle", 1, 32, 2, 8, 2)),
        stem_chs=16, num_features=48, norm_layer=_evos(m), num_classes=10)),
    # RepVGG: rep stem, three-branch blocks (identity where the shape is kept), every second one grouped, SE, a
    # dilated last stage
    "repvgg_se": ("repvgg_d2se", lambda m: dict(
        blocks=_blocks(m, ("rep", 2, 16, 2, _alternate, 1.0), ("rep", 3, 32, 2, _alternate, 1.0),
                       ("rep", 2, 32, 2, _alternate, 1.0)), stem_chs=16, num_classes=10, output_stride=8)),
    # MobileOne: one stem, depthwise / pointwise pairs with three kxk branches, SE on the last pair
    "mobileone": ("mobileone_s4", lambda m: dict(
        blocks=[[m.ByoBlockCfg(type="one", d=1, c=c, gs=gs, block_kwargs=dict(num_conv_branches=3, **kw),
                               attn_layer="se" if i >= 2 else None)
                 for i, (c, gs, kw) in enumerate([(c_in, 1, {}), (c_out, 0, dict(kernel_size=1)), (c_out, 1, {}),
                                                  (c_out, 0, dict(kernel_size=1))])]
                for c_in, c_out in ((16, 24), (24, 32))],
        stem_chs=16, num_classes=10)),
    # GENet: 3x3 stem, basic blocks, depthwise inverted bottlenecks, a stage without stride, a head convolution
    "gernet": ("gernet_s", lambda m: dict(
        blocks=_blocks(m, ("basic", 1, 16, 2, 0, 1.0), ("bottle", 2, 24, 2, 0, 0.25), ("bottle", 1, 32, 2, 1, 3.0),
                       ("bottle", 1, 32, 1, 1, 3.0)), stem_chs=13, num_features=40, num_classes=10)),
}


def small_pair(config, seed=0, **overrides):
    """timm's small model (randomised, eval mode) and ours with its weights, built without random init."""
    name, kwargs = SMALL[config]
    torch.manual_seed(seed)
    reference = timm.create_model(name, pretrained=False, **kwargs(timm_byobnet), **overrides)
    randomize_byobnet(reference, seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = getattr(byobnet, name)(**kwargs(byobnet), **overrides)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _module_names(reference):
    """timm's module names but for its SE norm placeholders."""
    return [n for n, m in reference.named_modules()
            if not (n.endswith(PLACEHOLDERS) and isinstance(m, torch.nn.Identity))]


def check_tree(ours, reference):
    """``check_layout`` without ``default_cfg`` (timm's names the registered model's first convolution, whatever
    stem the model is rebuilt with): state_dict, module names and printouts, feature_info, num_features."""
    state, expected = ours.state_dict(), reference.state_dict()
    assert list(state) == list(expected)
    assert all(tuple(state[k].shape) == tuple(v.shape) for k, v in expected.items())
    modules = dict(ours.named_modules())
    assert list(modules) == _module_names(reference)
    for name, theirs in reference.named_modules():
        if type(theirs).__name__ in PRINTED:
            assert repr(modules[name]) == repr(theirs), name
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == reference.num_features


def test_entrypoint_configs_match_timm(monkeypatch):
    """Every entrypoint builds ByobNet with timm's configuration: each stage's block configs (types, depths, widths,
    strides, group sizes or RepVGG's alternating rule, ratios, per-block attention and block arguments), the stem,
    widths, activation, norm (EvoNorm-S0a in groups of 16) and attention; timm's fields we leave out keep their
    defaults there (no anti-aliasing, a plain classifier head)."""
    ours_calls = capture_builder(monkeypatch, byobnet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_byobnet, "build_model_with_cfg")
    for name in NAMES:
        getattr(byobnet, name)()
        getattr(timm_byobnet, name)()
        (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) = ours_calls.pop(), timm_calls.pop()
        assert ours_cls is byobnet.ByobNet and timm_cls is timm_byobnet.ByobNet
        assert set(ours_kwargs) == {"cfg", "progress"}
        assert set(timm_kwargs) == {"model_cfg", "pretrained_filter_fn", "feature_cfg"}
        check_byob_config(ours_kwargs["cfg"], timm_kwargs["model_cfg"], name)


# one registered model of each kind: GENet, RepVGG (grouped, SE), MobileOne (four branches), RegNetZ (EvoNorm),
# ResNet-Q (both quad stems), BAT, GC
LAYOUT_NAMES = ["gernet_s", "repvgg_b1g4", "repvgg_d2se", "mobileone_s0", "regnetz_d8_evos", "resnet51q", "resnet61q",
                "bat_resnext26ts", "gcresnet50t", "eca_resnet33ts"]


def test_layout_equals_timm(monkeypatch):
    """state_dict keys in order, shapes and dtypes; module names (timm's SE norm placeholder aside) and the printout
    of every layer; feature_info, num_features, head_hidden_size and default_cfg (two first convolutions for the
    RepVGG and MobileOne stems). timm's model is built on the meta device, ours without random init (timm's init
    skipped too: on the meta device it only costs time)."""
    monkeypatch.setattr(timm_byobnet, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name in LAYOUT_NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name, pretrained=False)
        ours = getattr(byobnet, name)()
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_equals_timm():
    """After the same seed, our weights are timm's bit for bit (N(0, 2 / fan-out) convolutions, N(0, 0.01^2)
    classifier, unit norms, zeroed last norms where there is a shortcut, RepVGG's N(0.1, 0.1^2) norms, GC's He-normal
    attention drawn at construction and again at init, the ECA and LayerNorm defaults) and both random streams end
    in step."""
    for config in ("attn", "repvgg_se", "kinds_se_avg"):
        name, kwargs = SMALL[config]
        torch.manual_seed(5)
        reference = timm.create_model(name, pretrained=False, **kwargs(timm_byobnet))
        engine.manual_seed(5)
        ours = getattr(byobnet, name)(**kwargs(byobnet))
        expected = numpy_state(reference)
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        assert list(state) == list(expected)
        for key, value in expected.items():
            assert state[key].dtype == value.dtype and np.array_equal(state[key], value), (config, key)
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy()), config


@pytest.mark.parametrize("config", list(SMALL))
def test_eval_outputs_match_timm(config):
    """float32 logits of a batch of 2 at an odd size (odd maps in the strided and pooled shortcuts; BAT's 2x2 cells
    need even maps, so its model runs at 48: cells of 3 x 3 pixels)."""
    reference, ours = small_pair(config, seed=1)
    size = (48, 48) if config == "attn" else (37, 35)
    out, ref = both_outputs(reference, ours, image_batch(2, *size, seed=1))
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)


def _group_std_float64(x, groups=32, eps=1e-5, flatten=False):
    """timm's EvoNorm group standard deviation without its cast to float32 (a float64 run stays float64)."""
    batch, channels, height, width = x.shape
    grouped = x.reshape(batch, groups, channels // groups, height, width)
    std = grouped.var(dim=(2, 3, 4), unbiased=False, keepdim=True).add(eps).sqrt()
    return std.expand(grouped.shape).reshape(batch, channels, height, width)


@pytest.mark.parametrize("config", ["kinds_se_avg", "attn", "regnetz_evos", "repvgg_se", "mobileone"])
def test_train_gradients_match_timm(config, monkeypatch):
    """float64, train mode: outputs, the input gradient and every parameter's gradient, then the updated running
    statistics (BAT's channel dropout draws the same masks on both sides). A block without residual feeds train-mode
    norms, which remove any per-channel shift: a bias before one has a true gradient of 0, both sides give rounding
    noise, so errors are measured against the model's largest gradient where a parameter's own are that small."""
    monkeypatch.setattr(timm_evo_norm, "group_std", _group_std_float64)
    reference, ours = small_pair(config, seed=2)
    reference.double().train()
    ours.double().train()
    torch.manual_seed(3)
    engine.manual_seed(3)
    size = (32, 32) if config == "attn" else (23, 25)
    check_train_step(reference, ours, image_batch(2, *size, seed=2).astype(np.float64), rtol=1e-9, floor=1e-6)


# the attention of the deployed block the reparameterisation test builds: RepVGG-D2se's SE, none in MobileOne's
# pointwise block
DEPLOY_ATTN = {"repvgg_se": partial(byobnet.SEModule, rd_ratio=0.0625, rd_divisor=1), "mobileone": None}


@pytest.mark.parametrize("config", list(DEPLOY_ATTN))
def test_reparameterize_matches_timm(config):
    """``reparameterize`` on every block folds the branches as timm's does: the same state_dict (keys in order,
    values), the same outputs, and the outputs of the training form in eval mode; a second call changes nothing; a
    block built in ``inference_mode`` holds the folded weights."""
    reference, ours = small_pair(config, seed=6)
    x = image_batch(2, 35, 33, seed=7)
    before, _ = both_outputs(reference, ours, x)
    for model in (reference, ours):
        for module in list(model.modules()):
            if hasattr(module, "reparameterize"):
                module.reparameterize()
    assert [n for n, _ in ours.named_modules()] == _module_names(reference)
    state = ours.state_dict()
    expected = numpy_state(reference)
    assert list(state) == list(expected)
    for key, value in expected.items():
        assert_close(state[key].numpy(), value, 1e-6, what=key)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, 1e-5)
    assert_close(out, before, 1e-5)
    ours.stem.reparameterize()
    assert np.array_equal(both_outputs(reference, ours, x)[0], out)
    block = ours.stages[0][1]
    conv = block.reparam_conv
    deployed = type(block)(conv.in_channels, conv.out_channels, kernel_size=conv.kernel_size[0],
                           group_size=conv.in_channels // conv.groups, inference_mode=True,
                           layers=byobnet.LayerFn(attn=DEPLOY_ATTN[config])).eval()
    deployed.load_state_dict(block.state_dict())
    x = engine.from_numpy(image_batch(2, 9, 9, c=conv.in_channels, seed=8))
    with engine.no_grad():
        assert np.array_equal(deployed(x).numpy(), block(x).numpy())


def test_drop_path_and_dropout():
    """timm's per-block drop-path rates (0 at the first block, the rate at the last; none on RepVGG blocks that
    change the shape); in train mode both draw timm's random stream (the same outputs after the same seed, others
    after another); in eval mode nothing is drawn or dropped."""
    x = image_batch(2, 21, 21, seed=3)
    reference, ours = small_pair("repvgg_se", seed=3, drop_path_rate=0.5, drop_rate=0.5)
    rates = [getattr(b.drop_path, "p", 0.0) for stage in ours.stages for b in stage]
    expected = [getattr(b.drop_path, "drop_prob", 0.0) for stage in reference.stages for b in stage]
    assert rates == expected and expected[-1] == 0.5 and expected[0] == 0.0
    check_dropout_only_in_training(reference, ours, x, train_rtol=1e-5)


def test_head_api_matches_timm():
    """``num_classes=0``, ``reset_classifier`` and ``global_pool=''`` as timm's (``model_parity.check_head_api``)."""
    x = image_batch(2, 27, 27, seed=4)
    reference, ours = small_pair("gernet", seed=4)
    headless = byobnet.gernet_s(**dict(SMALL["gernet"][1](byobnet), num_classes=0)).eval()
    check_head_api(reference, ours, headless, x, 40, (2, 40, 2, 2))


def test_in_chans_one_matches_timm():
    """``in_chans=1``: the stem takes one channel, and with timm's weights the outputs are timm's."""
    reference, ours = small_pair("quad_edge", seed=6, in_chans=1)
    assert ours.stem.conv1.conv.weight.shape == (2, 1, 3, 3)
    out, ref = both_outputs(reference, ours, image_batch(2, 33, 33, seed=6, c=1))
    assert_close(out, ref, 1e-5)


def test_checkpoint_adapts_every_first_conv(tmp_path):
    """RepVGG's stem has two first convolutions (``default_cfg['first_conv']`` names both): a 3-channel checkpoint
    loaded into a one-channel model through ``checkpoint_path`` has each summed over RGB."""
    _, rgb = small_pair("repvgg_se", seed=7)
    path = str(tmp_path / "rgb.npz")
    np.savez(path, **numpy_state(rgb))
    name, kwargs = SMALL["repvgg_se"]
    grey = getattr(byobnet, name)(in_chans=1, checkpoint_path=path, **kwargs(byobnet))
    assert grey.default_cfg["first_conv"] == ("stem.conv_kxk.conv", "stem.conv_1x1.conv")
    for conv in grey.default_cfg["first_conv"]:
        key = f"{conv}.weight"
        assert_close(grey.state_dict()[key].numpy(), numpy_state(rgb)[key].sum(axis=1, keepdims=True), 1e-6)


@pytest.mark.parametrize("config,out_indices", [("quad_edge", None), ("attn", (1, 3))])
def test_features_only_matches_timm(config, out_indices):
    """``features_only=True`` gives timm's maps (the stem's before its last reduction, each stage before a
    reduction, the head convolution's) under timm's flattened names, with its channels, reductions and values;
    ``out_indices`` picks some."""
    extra = {} if out_indices is None else {"out_indices": out_indices}
    reference, ours = small_pair(config, seed=7, features_only=True, **extra)
    assert ours.feature_info.channels() == reference.feature_info.channels()
    assert ours.feature_info.reduction() == reference.feature_info.reduction()
    assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
    outs, refs = both_outputs(reference, ours, image_batch(2, 32, 32, seed=7))
    assert len(outs) == len(refs) == (5 if out_indices is None else 2)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, 1e-5)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates at timm's feature positions (the quad stem's map before its strided last convolution,
    each stage's, the last after final_conv or, with exclude_final_conv, before it), picking all, the last n or a
    list, stopping early; prune_intermediate_layers keeps everything with the head, or cuts the stem at its tap
    (stages, final_conv, head gone), a stride-1 stage skipped by the feature positions (GENet), and a CLIP
    attention-pool head replaced by a pass-through one, as timm's do."""
    x = image_batch(2, 35, 33, seed=20)
    reference, ours = small_pair("quad_edge", seed=20)
    for kwargs in (dict(), dict(indices=2, intermediates_only=True), dict(indices=[0, 2], stop_early=True),
                   dict(indices=[-1], exclude_final_conv=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert check_pruned(reference, ours, x, 1, [4], prune_head=False).shape == (2, 10)
    assert check_pruned(reference, ours, x, [0], [0]).shape == (2, 8, 18, 17)
    reference, ours = small_pair("gernet", seed=21)
    assert check_pruned(reference, ours, x, [-2], [2]).shape == (2, 24, 5, 5)
    check_intermediates(reference, ours, x, 1e-5, indices=[0, 2])
    reference, ours = clip_pair(seed=22)
    assert check_pruned(reference, ours, image_batch(2, 32, 48, seed=22), [1], [1]).shape == (2, 32, 8, 12)
    assert ours.num_classes == 0 and ours.global_pool == reference.global_pool == ""


@pytest.mark.parametrize("stem_type,stem_pool,stem_chs", [("7x7", "maxpool", 16), ("7x7", "", 16),
                                                          ("deep", "avg", 16), ("quad2", "max2", 32),
                                                          ("", "avg2", (8, 16)), ("", "", (8, 8, 16))])
def test_stems_match_timm(stem_type, stem_pool, stem_chs):
    """The other stems and stem pools: timm's layout (names, printout, feature_info), the first convolution
    ``default_cfg`` names (timm's configs name the registered model's), and outputs."""
    blocks = lambda m: _blocks(m, ("bottle", 1, 16, 1, 0, 0.25), ("bottle", 1, 16, 2, 0, 0.25))  # noqa: E731
    torch.manual_seed(9)
    reference = randomize_byobnet(timm.create_model("resnet33ts", blocks=blocks(timm_byobnet), stem_type=stem_type,
                                            stem_pool=stem_pool, stem_chs=stem_chs, num_features=0), 9).eval()
    ours = byobnet.resnet33ts(blocks=blocks(byobnet), stem_type=stem_type, stem_pool=stem_pool, stem_chs=stem_chs,
                              num_features=0).eval()
    ours.load_state_dict(numpy_state(reference))
    check_tree(ours, reference)
    first_conv = ours.default_cfg["first_conv"]
    assert isinstance(dict(reference.named_modules())[first_conv], torch.nn.Conv2d)
    assert dict(ours.named_modules())[first_conv].in_channels == 3
    out, ref = both_outputs(reference, ours, image_batch(1, 29, 31, seed=9))
    assert_close(out, ref, 1e-5)


class _TimmSelfAttn(torch.nn.Module):
    """A stand-in self-attention layer for timm's self_attn block: a depthwise 3x3 convolution carrying the stride;
    it keeps the map size it is given (fixed-size models)."""

    def __init__(self, channels, stride=1, feat_size=None, device=None, dtype=None):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 3, stride, 1, groups=channels, device=device, dtype=dtype)
        self.feat_size = feat_size

    def forward(self, x):
        return self.conv(x)


class _OurSelfAttn(engine.nn.Module):
    """The same stand-in for ours."""

    def __init__(self, channels, stride=1, feat_size=None):
        super().__init__()
        self.conv = engine.nn.Conv2d(channels, channels, 3, stride, 1, groups=channels)
        self.feat_size = feat_size

    def forward(self, x):
        return self.conv(x)


@pytest.mark.parametrize("extra_conv", [False, True])
def test_self_attn_block_matches_timm(extra_conv):
    """The self-attention bottleneck (the attention networks' block) around a stand-in layer that strides (or after
    a strided kxk convolution, ``extra_conv``): timm's layout, seeded init and outputs."""
    def kwargs(m, attn):
        return dict(blocks=_blocks(m, ("bottle", 1, 16, 1, 0, 0.5), ("self_attn", 2, 32, 2, 0, 0.5)), stem_chs=16,
                    self_attn_layer=attn, block_kwargs=dict(extra_conv=extra_conv), num_features=0, num_classes=10)

    torch.manual_seed(10)
    reference = timm.create_model("resnet33ts", **kwargs(timm_byobnet, _TimmSelfAttn))
    engine.manual_seed(10)
    ours = byobnet.resnet33ts(**kwargs(byobnet, _OurSelfAttn))
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)
    for key, value in numpy_state(reference).items():
        assert np.array_equal(ours.state_dict()[key].numpy(), value), key
    randomize_byobnet(reference, 10).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, 27, 27, seed=10))
    assert_close(out, ref, 1e-5)


def test_fixed_input_size_and_interleaved_blocks_match_timm():
    """A fixed-input-size config needs ``img_size`` and hands each self-attention layer timm's map size;
    ``interleave_blocks`` places the second block type where timm's does."""
    def kwargs(m, attn):
        return dict(blocks=(m.ByoBlockCfg("bottle", 1, 16, s=1, br=0.5),
                            m.interleave_blocks(("bottle", "self_attn"), 3, c=32, s=2, br=0.5),
                            m.interleave_blocks(("bottle", "self_attn"), 2, every=[0], c=32, s=2, br=0.5)),
                    stem_chs=16, self_attn_layer=attn, fixed_input_size=True, num_features=0)
    reference = timm.create_model("resnet33ts", img_size=(64, 48), **kwargs(timm_byobnet, _TimmSelfAttn))
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = byobnet.resnet33ts(img_size=(64, 48), **kwargs(byobnet, _OurSelfAttn))
        with pytest.raises(ValueError):
            byobnet.resnet33ts(**kwargs(byobnet, _OurSelfAttn))
    check_tree(ours, reference)
    expected = [(n, m.feat_size) for n, m in reference.named_modules() if isinstance(m, _TimmSelfAttn)]
    assert [(n, m.feat_size) for n, m in ours.named_modules() if isinstance(m, _OurSelfAttn)] == expected
    assert len(expected) == 2
    for every, first in ((1, False), (2, True), (5, False), ([1, 2], False)):
        assert comparable_config(byobnet.interleave_blocks(("a", "b"), 4, every=every, first=first, c=8)) == \
            comparable_config(timm_byobnet.interleave_blocks(("a", "b"), 4, every=every, first=first, c=8))


def test_refuses_bad_configurations():
    """An empty image, maps BAT cannot cut into cells, an output stride other than 8, 16, 32, unknown block types,
    stems, pools, shortcuts, activations, norms and attention layers, and a self_attn block without a self-attention
    layer are refused."""
    _, ours = small_pair("attn")
    with pytest.raises((RuntimeError, ValueError)):
        ours(engine.zeros(1, 3, 0, 0))
    with pytest.raises(ValueError):
        ours(engine.zeros(1, 3, 36, 36))
    kwargs = SMALL["gernet"][1](byobnet)
    for bad in (dict(output_stride=4), dict(blocks=_blocks(byobnet, ("wide", 1, 16, 2, 0, 1.0))),
                dict(stem_type="5x5"), dict(stem_pool="min", stem_type="deep"), dict(downsample="max"),
                dict(act_layer="tanhh"), dict(norm_layer="layernorm"), dict(attn_layer="cbam"),
                dict(blocks=_blocks(byobnet, ("self_attn", 1, 16, 2, 0, 1.0)))):
        with pytest.raises(ValueError):
            byobnet.gernet_s(**dict(kwargs, **bad))


def test_list_models():
    """The ``byobnet`` module lists every model of timm's ``byobnet`` module: those with ImageNet-1k weights, CLIP's
    ResNets, whose weights are image towers, and the untrained variants too (its test model is
    tests/flowvision/models/test_timm_test_models.py's)."""
    assert models.list_models(module="byobnet") == timm.list_models(module="byobnet")
    assert sorted(models.list_models(module="byobnet", exclude_filters="test_*")) == sorted(
        NAMES + CLIP_NAMES + UNTRAINED_NAMES)
    assert not {n.split(".")[0] for n in timm.list_pretrained("*")} & set(UNTRAINED_NAMES)
    pretrained = {n.split(".")[0] for n in timm.list_pretrained()
                  if timm.models.get_pretrained_cfg(n).num_classes == 1000}
    assert pretrained & set(timm.list_models(module="byobnet")) - {"test_byobnet"} == set(NAMES)
    assert {n.split(".")[0] for n in timm.list_pretrained("resnet*_clip*")} == set(CLIP_NAMES)


def _clip_kwargs(m, **extra):
    """A small CLIP ResNet of ``m``'s block configs (8 to 128 wide, one bottleneck a stage, two heads of 64 in the
    attention pool), its position embeddings sized for 35x33 images (a 2x2 map)."""
    blocks = _blocks(m, ("bottle", 1, 32, 1, None, 0.25), ("bottle", 1, 64, 2, None, 0.25),
                     ("bottle", 1, 128, 2, None, 0.25))
    return dict(blocks=blocks, stem_chs=(8, 8, 16), img_size=(32, 48), num_classes=10, **extra)


def clip_pair(name="resnet50_clip", seed=0, **extra):
    """timm's small CLIP ResNet ``name`` (randomised: norms, convolutions, attention pool and its position
    embeddings; eval mode) and ours with its weights."""
    torch.manual_seed(seed)
    reference = timm.create_model(name, **_clip_kwargs(timm_byobnet, **extra))
    randomize_byobnet(reference, seed).eval()
    ours = getattr(byobnet, name)(**_clip_kwargs(byobnet, **extra))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_clip_entrypoint_configs_match_timm(monkeypatch):
    """Each CLIP entrypoint hands ByobNet timm's configuration field for field (anti-aliasing and head type
    included) and, with attention pooling, the image size of timm's weights."""
    ours_calls = capture_builder(monkeypatch, byobnet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_byobnet, "build_model_with_cfg")
    for name in CLIP_NAMES:
        getattr(byobnet, name)()
        getattr(timm_byobnet, name)()
        (ours_cls, ours_kwargs), (_, timm_kwargs) = ours_calls.pop(), timm_calls.pop()
        assert ours_cls is byobnet.ByobNet and set(timm_kwargs) == {"model_cfg", "pretrained_filter_fn", "feature_cfg"}
        expected = comparable_config(timm_kwargs["model_cfg"])
        assert expected.pop("zero_init_last") is True
        assert comparable_config(ours_kwargs.pop("cfg")) == expected, name
        assert ours_kwargs.pop("progress") is True
        timm_cfg = timm.models.get_pretrained_cfg(name)
        fixed = {"img_size": timm_cfg.input_size[-1]} if timm_cfg.fixed_input_size else {}
        assert ours_kwargs == fixed and bool(fixed) == (expected["head_type"] == "attn_abs"), name


def test_clip_layout_equals_timm(monkeypatch):
    """Every CLIP ResNet under 300M parameters has timm's layout (with the class count of timm's weights: the
    embedding width, or none): state_dict keys in order, shapes and dtypes, module names, printouts (the
    anti-aliasing pools), feature_info, num_features, head_hidden_size and default_cfg (the projection as
    classifier)."""
    monkeypatch.setattr(timm_byobnet, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name in CLIP_NAMES:
        if "x64" in name:
            continue
        num_classes = timm.models.get_pretrained_cfg(name).num_classes
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=num_classes)
        ours = getattr(byobnet, name)(num_classes=num_classes)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_clip_seeded_init_equals_timm():
    """After the same seed, a small CLIP ResNet has timm's weights (the attention pool's projections drawn at
    construction, at the network's init and again by the pool's own truncated normals, within 2 ulps) and both
    random streams end in step."""
    def truncated(reference):
        return {f"head.{n}.weight" for n in "qkv"} | {"head.pos_embed"}

    check_seeded_init(lambda: timm.create_model("resnet50_clip", **_clip_kwargs(timm_byobnet)),
                      lambda: byobnet.resnet50_clip(**_clip_kwargs(byobnet)), 11, truncated)


def test_clip_eval_outputs_match_timm():
    """float32, batch of 2: the attention pool at the built size (32x48) and at 48x48 (position embeddings
    resampled bicubically to a 3x3 map), the average-pooled form, and the features_only maps of the anti-aliased
    stages."""
    reference, ours = clip_pair(seed=12)
    for size in ((32, 48), (48, 48)):
        out, ref = both_outputs(reference, ours, image_batch(2, *size, seed=12))
        assert out.shape == (2, 10)
        assert_close(out, ref, 1e-5)
    reference, ours = clip_pair("resnet50_clip_gap", seed=13)
    out, ref = both_outputs(reference, ours, image_batch(2, 32, 48, seed=13))
    assert_close(out, ref, 1e-5)
    reference, ours = clip_pair(seed=14, features_only=True, out_indices=(0, 1, 2, 3))
    check_feature_maps(reference, ours, image_batch(2, 32, 48, seed=14), 4, 1e-5)


def test_clip_train_gradients_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient (the attention pool's position
    embeddings included) and the running statistics."""
    reference, ours = clip_pair(seed=15)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, 32, 48, seed=15).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_clip_dropout_and_attention_pool_head_api():
    """The attention pool's dropout and the blocks' drop-path draw timm's masks in training only; pre-logits (the
    pooled token before the projection), reset_classifier to new classes and to the unpooled map, and the refused
    poolings, as timm's."""
    reference, ours = clip_pair(seed=16, drop_rate=0.5, drop_path_rate=0.5)
    x = image_batch(2, 32, 48, seed=16)
    check_dropout_only_in_training(reference, ours, x, train_rtol=1e-5)
    reference.eval()
    ours.eval()
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 128) and ours.head_hidden_size == reference.head_hidden_size == 128
    assert_close(out, ref, 1e-5)
    assert ours.get_classifier() is ours.head.proj
    reference.reset_classifier(7)
    ours.reset_classifier(7)
    ours.head.proj.load_state_dict(numpy_state(reference.head.proj))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and not ours.head.proj.training
    assert_close(out, ref, 1e-5)
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 128, 2, 3) and ours.global_pool == "" and ours.head_hidden_size == 128
    assert_close(out, ref, 1e-5)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(7, "avg")
    with pytest.raises(ValueError, match="global_pool"):
        byobnet.resnet50_clip(**_clip_kwargs(byobnet, global_pool="avg"))
    with pytest.raises(ValueError, match="img_size"):
        byobnet.resnet50_clip(**dict(_clip_kwargs(byobnet), img_size=None))
    with pytest.raises(ValueError, match="head_type"):
        byobnet.resnet50_clip(**_clip_kwargs(byobnet, head_type="attn_rot"))


def test_untrained_variants_match_timm(monkeypatch):
    """regnetz_b16_evos and resnet50_mlp hand ByobNet timm's configuration field for field (the MLP head's type and
    width included) and build timm's layout (``check_layout``, with the class count given: ours defaults to the
    class's for a model without weights)."""
    ours_calls = capture_builder(monkeypatch, byobnet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_byobnet, "build_model_with_cfg")
    for name in UNTRAINED_NAMES:
        getattr(byobnet, name)()
        getattr(timm_byobnet, name)()
        (ours_cls, ours_kwargs), (_, timm_kwargs) = ours_calls.pop(), timm_calls.pop()
        assert ours_cls is byobnet.ByobNet and set(ours_kwargs) == {"cfg", "progress"}
        expected = comparable_config(timm_kwargs["model_cfg"])
        assert expected.pop("zero_init_last") is True
        ours = comparable_config(ours_kwargs["cfg"])
        for key in ("aa_layer", "head_hidden_size", "head_type"):
            assert ours.setdefault(key, getattr(ours_kwargs["cfg"], key)) == expected[key], (name, key)
        assert ours == expected, name
    monkeypatch.undo()
    monkeypatch.setattr(timm_byobnet, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name in UNTRAINED_NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        check_layout(getattr(byobnet, name)(num_classes=1000), reference, PLACEHOLDERS, PRINTED)


def mlp_pair(seed=0, **extra):
    """timm's small resnet50_mlp (CLIP's small body, a 32-wide hidden layer; randomised, eval mode) and ours with
    its weights."""
    kwargs = dict(head_hidden_size=32, **extra)
    torch.manual_seed(seed)
    reference = timm.create_model("resnet50_mlp", **_clip_kwargs(timm_byobnet, **kwargs))
    randomize_byobnet(reference, seed).eval()
    ours = byobnet.resnet50_mlp(**_clip_kwargs(byobnet, **kwargs))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_mlp_head_matches_timm():
    """The pool, norm and MLP head: seeded init (BatchNorm's ones and zeros, N(0, 0.01^2) linear layers) with both
    random streams in step; float32 eval logits (at sizes the anti-aliased strides halve evenly, as timm's
    shortcuts need); float64 train-mode outputs, every gradient and the running statistics (the head's BatchNorm on
    the pooled map among them)."""
    check_seeded_init(lambda: timm.create_model("resnet50_mlp", **_clip_kwargs(timm_byobnet, head_hidden_size=32)),
                      lambda: byobnet.resnet50_mlp(**_clip_kwargs(byobnet, head_hidden_size=32)), 17,
                      lambda reference: set())
    reference, ours = mlp_pair(seed=18)
    out, ref = both_outputs(reference, ours, image_batch(2, 48, 32, seed=18))
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, 32, 48, seed=19).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_mlp_head_dropout_and_api():
    """The MLP head's dropout and the blocks' drop-path draw timm's masks in training only; pre-logits (the hidden
    layer's output), reset_classifier to new pooling and classes (norm and hidden layer kept), and with
    ``reset_other`` to the unpooled map, as timm's; poolings that widen the features are refused."""
    reference, ours = mlp_pair(seed=20, drop_rate=0.5, drop_path_rate=0.5)
    x = image_batch(2, 32, 48, seed=20)
    check_dropout_only_in_training(reference, ours, x, train_rtol=1e-5)
    reference.eval()
    ours.eval()
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 32) and ours.head_hidden_size == reference.head_hidden_size == 32
    assert_close(out, ref, 1e-5)
    reference.reset_classifier(7, "max")
    ours.reset_classifier(7, "max")
    ours.head.fc.load_state_dict(numpy_state(reference.head.fc))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and not ours.head.fc.training and ours.global_pool == "max"
    assert_close(out, ref, 1e-5)
    reference.reset_classifier(0, "", reset_other=True)
    ours.reset_classifier(0, "", reset_other=True)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 128, 2, 3) and ours.head_hidden_size == reference.head_hidden_size == 128
    assert_close(out, ref, 1e-5)
    assert [n for n, _ in ours.named_modules()] == _module_names(reference)
    with pytest.raises(ValueError, match="global_pool"):
        byobnet.resnet50_mlp(**_clip_kwargs(byobnet, global_pool="catavgmax"))
