"""timm's CSPNet family (CSPResNet, CSPResNeXt, CSPDarkNet, DarkNet and the CS3 models, those without published
weights included) against timm 1.0: every registered model's configuration, the layout of one of each kind (at output
strides 32, 16 and 8), of every untrained model and of the small configurations, seeded initial weights, float32
eval outputs and float64 train-mode outputs, gradients and running statistics of small configurations covering each
stage kind (cross, CS3, dark), block kind (bottleneck, dark, edge, with and without SE), stem (pooled, full-size,
two-convolution, focus) and downsampling (strided, grown, average-pooled, dilated), drop-path and dropout, the head
API, ``in_chans``, ``features_only`` and the registry."""
import dataclasses
import inspect

import numpy as np
import pytest
import timm
import timm.models.cspnet as timm_cspnet
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import cspnet
from model_parity import (both_outputs, capture_builder, check_dropout_only_in_training, check_head_api,
                          check_intermediates, check_layout, check_pruned_to_stem_head, check_train_step, image_batch,
                          numpy_state, randomize_norms, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); small models, one BLAS thread on each side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["cs3darknet_focus_l", "cs3darknet_focus_m", "cs3darknet_focus_s", "cs3darknet_l", "cs3darknet_m",
         "cs3darknet_x", "cs3edgenet_x", "cs3se_edgenet_x", "cs3sedarknet_l", "cs3sedarknet_x", "cspdarknet53",
         "cspresnet50", "cspresnext50", "darknet53", "darknetaa53"]
# timm's entrypoints without published weights (deep stems, shallow DarkNets, grouped CS3 stages): configurations
# of the layers above, registered too
UNTRAINED = ["cs3darknet_focus_x", "cs3darknet_s", "cs3sedarknet_xdw", "cspresnet50d", "cspresnet50w", "darknet17",
             "darknet21", "sedarknet21"]
# timm's no-op identities: the bottleneck's unused second SE slot and the SE's missing norm
PLACEHOLDERS = ("attn3", "attn.bn", "attn2.bn")
# layers whose printout shows every hyper-parameter (kernel, stride, padding, dilation, groups, slope...)
PRINTED = {"Conv2d", "BatchNorm2d", "AvgPool2d", "MaxPool2d", "Linear", "AdaptiveAvgPool2d", "Flatten", "Dropout",
           "LeakyReLU"}
# arguments of the model itself (the same on both sides); the others are timm's CspModelCfg fields in our spelling
MODEL_ARGS = {"in_chans", "num_classes", "output_stride", "global_pool", "drop_rate", "drop_path_rate",
              "zero_init_last", "features_only", "out_indices"}
# Small configurations: a registered model with some settings overridden, together covering every stage, block,
# stem and downsampling kind (grouped bottlenecks with SE; grown downsampling and per-stage ratios; average-pooled
# and dilated dark stages; a focus stem with SE dark blocks; edge blocks with SE in a dilated CS3 network).
SMALL = {
    "csp_bottle_se": ("cspresnext50", dict(stem_chs=8, depths=(1, 2), widths=(16, 32), groups=2, se_ratio=0.25)),
    "csp_dark": ("cspdarknet53", dict(stem_chs=4, depths=(1, 1, 2), widths=(8, 16, 32))),
    "dark_avg_os8": ("darknetaa53", dict(stem_chs=4, depths=(1, 1, 1, 2), widths=(8, 8, 16, 16), output_stride=8)),
    "cs3_focus_se": ("cs3darknet_focus_s", dict(stem_chs=8, depths=(1, 2), widths=(16, 32), se_ratio=0.25)),
    "cs3_edge_os8": ("cs3se_edgenet_x", dict(stem_chs=(4, 8), depths=(2, 1, 1), widths=(16, 16, 32),
                                             output_stride=8)),
}


def entrypoint_config(name):
    """The full CspNet arguments the entrypoint ``name`` builds with (our defaults where it leaves one out)."""
    with pytest.MonkeyPatch.context() as patch:
        calls = capture_builder(patch, cspnet, "build_model")
        getattr(cspnet, name)()
    defaults = {k: p.default for k, p in inspect.signature(cspnet.CspNet).parameters.items()
                if p.default is not inspect.Parameter.empty}
    return dict(defaults, **calls[0][1])


def timm_cfg(config):
    """Our CspNet arguments ``config`` (model arguments left out) as timm's CspModelCfg."""
    n = len(config["depths"])
    se = timm_cspnet._pad_arg(config["se_ratio"], n)
    stem = timm_cspnet.CspStemCfg(
        out_chs=config["stem_chs"], stride=config["stem_stride"], kernel_size=config["stem_kernel_size"],
        padding="" if config["stem_padding"] is None else config["stem_padding"], pool=config["stem_pool"])
    stages = timm_cspnet.CspStagesCfg(
        depth=tuple(config["depths"]), out_chs=tuple(config["widths"]), stride=config["strides"],
        groups=config["groups"], block_ratio=config["block_ratio"], bottle_ratio=config["bottle_ratio"],
        avg_down=config["avg_down"], attn_layer=tuple("se" if r else None for r in se),
        attn_kwargs=tuple(dict(rd_ratio=r) if r else None for r in se), stage_type=config["stage_type"],
        block_type=config["block_type"], expand_ratio=config["expand_ratio"], cross_linear=config["cross_linear"],
        down_growth=config["down_growth"])
    return timm_cspnet.CspModelCfg(stem=stem, stages=stages, act_layer=config["act_layer"])


def resolved(cfg):
    """timm's CspModelCfg as a comparable dict: per-stage settings padded, each stage's attention as its SE ratio
    (timm's SE default 1/16 where no ratio is given), the unused ``zero_init_last`` field left out."""
    fields = dataclasses.asdict(cfg)
    stages = fields["stages"]
    layers, kwargs = stages.pop("attn_layer"), stages.pop("attn_kwargs")
    assert set(layers) <= {"se", None}
    stages["se_ratio"] = tuple((kw or {}).get("rd_ratio", 1 / 16) if layer else 0.0
                               for layer, kw in zip(layers, kwargs))
    assert fields.pop("norm_layer") == "batchnorm" and fields.pop("aa_layer") is None
    del fields["zero_init_last"]
    return fields


def timm_kwargs(name, kwargs):
    """timm.create_model's arguments for our entrypoint ``name`` called with ``kwargs``: the model arguments as they
    are, and where ``kwargs`` override the configuration, the entrypoint's configuration so overridden as timm's
    ``stem``, ``stages`` and ``act_layer``."""
    if set(kwargs) <= MODEL_ARGS:
        return dict(kwargs)
    config = dict(entrypoint_config(name), **kwargs)
    cfg = timm_cfg({k: v for k, v in config.items() if k not in MODEL_ARGS})
    return dict({k: v for k, v in kwargs.items() if k in MODEL_ARGS}, stem=cfg.stem, stages=cfg.stages,
                act_layer=cfg.act_layer)


def randomize(model, seed):
    """timm's ``model`` with random BatchNorm statistics and affines, its SE weights and biases (zero at init)
    perturbed."""
    randomize_norms(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".fc1." in name or ".fc2." in name:
                p.add_(torch.randn(p.shape, generator=g) * 0.1)
    return model


def small_pair(config, seed=0, **overrides):
    """timm's small model (randomised, eval mode) and ours with its weights, built without random init."""
    name, kwargs = SMALL[config]
    kwargs = dict(kwargs, num_classes=10, **overrides)
    torch.manual_seed(seed)
    reference = randomize(timm.create_model(name, pretrained=False, **timm_kwargs(name, kwargs)), seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = getattr(cspnet, name)(**kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_entrypoint_configs_match_timm():
    """Every entrypoint builds CspNet with timm's configuration of that model: stem, every stage setting (our
    scalars and short tuples padded as timm pads them, SE ratios), activation; and timm's CspNet defaults."""
    for name in NAMES + UNTRAINED:
        assert resolved(timm_cfg(entrypoint_config(name))) == resolved(timm_cspnet.model_cfgs[name]), name
    defaults = inspect.signature(timm_cspnet.CspNet).parameters
    ours = inspect.signature(cspnet.CspNet).parameters
    for key in MODEL_ARGS - {"features_only", "out_indices"}:
        assert ours[key].default == defaults[key].default, key


# registered models of each kind (with the configurations checked above, the others follow): pooled stem with cross
# stages of bottlenecks (dilated at output stride 16), average-pooled DarkNet (dilated at output stride 8), focus
# stem, two-convolution stem with SE (dilated); then the small configurations (cross stages of dark blocks, edge
# blocks...); and every untrained model
LAYOUT_CASES = [("cspresnet50", dict(output_stride=16)), ("darknetaa53", dict(output_stride=8)),
                ("cs3darknet_focus_s", {}), ("cs3sedarknet_l", dict(output_stride=8))] + list(SMALL.values()) + [
                    (name, {}) for name in UNTRAINED]


def test_layout_equals_timm(monkeypatch):
    """Registered models of each kind (some at output strides 16 and 8), every untrained model and the small
    configurations: state_dict
    keys in order, shapes and dtypes; module names (timm's placeholders aside) and the printout of every layer;
    feature_info, num_features, head_hidden_size and default_cfg. timm's model is built on the meta device, ours
    without random init."""
    monkeypatch.setattr(timm_cspnet, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name, kwargs in LAYOUT_CASES:
        with torch.device("meta"):
            reference = timm.create_model(name, pretrained=False, **timm_kwargs(name, kwargs))
        ours = getattr(cspnet, name)(**kwargs)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_equals_timm():
    """After the same seed, our weights are timm's bit for bit (He-normal fan-out convolutions, N(0, 0.01^2)
    classifier, zero biases, the blocks' last norm scales zeroed) and both random streams end in step."""
    for name, kwargs in SMALL.values():
        torch.manual_seed(5)
        reference = timm.create_model(name, pretrained=False, **timm_kwargs(name, kwargs))
        engine.manual_seed(5)
        ours = getattr(cspnet, name)(**kwargs)
        expected = numpy_state(reference)
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        assert list(state) == list(expected)
        for key, value in expected.items():
            assert state[key].dtype == value.dtype and np.array_equal(state[key], value), (name, key)
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())


@pytest.mark.parametrize("config", list(SMALL))
def test_eval_outputs_match_timm(config):
    """float32 logits of a batch of 2 at an odd size (odd maps in the strided and pooled downsamplings)."""
    reference, ours = small_pair(config, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, 37, 35, seed=1))
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)


@pytest.mark.parametrize("config", ["csp_bottle_se", "dark_avg_os8", "cs3_edge_os8"])
def test_train_gradients_match_timm(config):
    """float64, train mode: outputs, the input gradient and every parameter's gradient, then the updated running
    statistics."""
    reference, ours = small_pair(config, seed=2)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 23, 21, seed=2).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout():
    """timm's drop-path rates (linear over all blocks, from 0 at the first); in train mode both draw timm's random
    stream (the same outputs after the same seed, others after another); in eval mode nothing is drawn or dropped."""
    x = image_batch(2, 21, 19, seed=3)
    reference, ours = small_pair("cs3_focus_se", seed=3, drop_path_rate=0.5, drop_rate=0.5)
    expected = [getattr(b.drop_path, "drop_prob", 0.0) for s in reference.stages for b in s.blocks]
    assert [getattr(b.drop_path, "p", 0.0) for s in ours.stages for b in s.blocks] == expected
    assert expected[0] == 0.0 and expected[-1] == 0.5
    check_dropout_only_in_training(reference, ours, x, train_rtol=1e-5)


def test_head_api_matches_timm():
    """``num_classes=0``, ``reset_classifier`` and ``global_pool=''`` as timm's (``model_parity.check_head_api``)."""
    x = image_batch(2, 27, 25, seed=4)
    reference, ours = small_pair("csp_dark", seed=4)
    name, kwargs = SMALL["csp_dark"]
    headless = getattr(cspnet, name)(**dict(kwargs, num_classes=0)).eval()
    check_head_api(reference, ours, headless, x, 32, (2, 32, 4, 4))


def test_in_chans_one_matches_timm():
    """``in_chans=1``: the stem takes one channel, and with timm's weights the outputs are timm's."""
    reference, ours = small_pair("cs3_focus_se", seed=6, in_chans=1)
    assert ours.stem.conv1.conv.weight.shape == (8, 1, 6, 6)
    out, ref = both_outputs(reference, ours, image_batch(2, 33, 31, seed=6, c=1))
    assert_close(out, ref, 1e-5)


def test_features_only_matches_timm(monkeypatch):
    """``features_only=True`` gives timm's maps, state_dict keys, channels, reductions and module names: by default
    every tap, the stem's convolution before its pool and the stages (the first, unstrided stage in place of the
    pool) for CSPResNeXt, the full-size stem and the stages for CSPDarkNet; ``out_indices`` picks some. A registered
    DarkNet has timm's six default taps, SE-DarkNet-21 timm's first five (timm's on the meta device)."""
    x = image_batch(2, 35, 33, seed=7)
    for config, out_indices, taps in (("csp_bottle_se", None, (0, 1, 2)), ("csp_dark", None, (0, 1, 2, 3)),
                                      ("csp_dark", (0, 2), (0, 2))):
        reference, _ = small_pair(config, seed=7, features_only=True, out_indices=taps)
        name, kwargs = SMALL[config]
        extra = {} if out_indices is None else {"out_indices": out_indices}
        ours = getattr(cspnet, name)(**kwargs, num_classes=10, features_only=True, **extra).eval()
        ours.load_state_dict(numpy_state(reference))
        for key in ("channels", "reduction", "module_name"):
            assert getattr(ours.feature_info, key)() == getattr(reference.feature_info, key)()
        outs, refs = both_outputs(reference, ours, x)
        assert len(outs) == len(refs) == len(taps)
        for out, ref in zip(outs, refs):
            assert_close(out, ref, 1e-5)
    monkeypatch.setattr(timm_cspnet, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name, taps in (("darknet53", 6), ("sedarknet21", 5)):
        with torch.device("meta"):
            reference = timm.create_model(name, pretrained=False, features_only=True)
        ours = getattr(cspnet, name)(features_only=True)
        for key in ("channels", "reduction", "module_name"):
            assert getattr(ours.feature_info, key)() == getattr(reference.feature_info, key)()
        assert len(ours.feature_info) == taps and list(ours.state_dict()) == list(reference.state_dict())


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates gives timm's taps (the stem's convolution before its pool, then each stage) for all, the
    last n and listed indices, alone and stopping early; prune_intermediate_layers keeps everything (and the head,
    ``prune_head=False``) for the last tap, then cuts the stem's pool and the stages for the stem's tap alone, the
    widths then the stem's and a new classifier sized for them, as timm's; a channels-last output format is
    refused."""
    reference, ours = small_pair("csp_bottle_se", seed=8)
    x = image_batch(2, 35, 33, seed=8)
    for kwargs in (dict(), dict(indices=2), dict(indices=[0, -1], intermediates_only=True),
                   dict(indices=[1], stop_early=True), dict(indices=[0], stop_early=True, norm=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    kept = [0, -1]
    assert ours.prune_intermediate_layers(kept, prune_head=False) == reference.prune_intermediate_layers(
        kept, prune_head=False) == [0, 2]
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert [n for n, _ in ours.stem.named_children()] == ["conv1"] and len(ours.stages) == 0
    check_pruned_to_stem_head(reference, ours, x, 8, (2, 8, 18, 17))


def test_refuses_bad_inputs_and_configurations():
    """Inputs too small for a stem or an average-pooled downsampling, an output stride other than 8, 16, 32, an
    unknown stage, block or activation, an impossible stem are refused."""
    name, kwargs = SMALL["dark_avg_os8"]
    ours = getattr(cspnet, name)(**kwargs).eval()
    for size in (0, 2):
        with pytest.raises((RuntimeError, ValueError)), engine.no_grad():
            ours(engine.zeros(1, 3, size, size))
    bad_configs = (dict(output_stride=4), dict(stage_type="cs2"), dict(block_type=("dark", "res")),
                   dict(act_layer="tanhh"), dict(stem_stride=3), dict(stem_pool="avg"), dict(widths=(8, 16)))
    for bad in bad_configs:
        with pytest.raises(ValueError):
            getattr(cspnet, name)(**dict(kwargs, **bad))


def test_list_models():
    """The ``cspnet`` module lists exactly timm's ``cspnet`` models: those with ImageNet-1k weights and the untrained
    ones, registered too."""
    assert models.list_models(module="cspnet") == timm.list_models(module="cspnet")
    assert set(models.list_models(module="cspnet")) == set(NAMES + UNTRAINED)
    pretrained = {n.split(".")[0] for n in timm.list_pretrained()
                  if timm.models.get_pretrained_cfg(n).num_classes == 1000}
    assert pretrained & set(timm.list_models(module="cspnet")) == set(NAMES)
