"""timm's RegNet family (RegNetX, Y, V and Z, and the untrained regnety_040_sgn and regnetz_005) against timm 1.0:
the generated widths and the layout of every registered model, seeded initial weights, float32 eval outputs and
float64 train-mode outputs, gradients and running statistics of small configurations covering each block kind (plain,
SE, pre-activation, inverted without residual), norm (BatchNorm, GroupNorm), shortcut (1x1 projection, average
pooling, "same" pooling in a dilated stage) and head (identity, activation, 1x1 convolution), output strides 8 and 16,
torchvision's group rounding, drop-path and dropout, the head API, ``in_chans``, ``features_only`` and the
registry."""
import dataclasses
import inspect
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.regnet as timm_regnet
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import regnet
from model_parity import (both_outputs, check_dropout_only_in_training, check_head_api, check_intermediates,
                          check_layout, check_pruned, check_train_step, image_batch, numpy_state, randomize_norms,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); small models, whose many small ops pay for every thread
# handoff, so one BLAS thread on each side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["regnetv_040", "regnetv_064", "regnetx_002", "regnetx_004", "regnetx_004_tv", "regnetx_006", "regnetx_008",
         "regnetx_016", "regnetx_032", "regnetx_040", "regnetx_064", "regnetx_080", "regnetx_120", "regnetx_160",
         "regnetx_320", "regnety_002", "regnety_004", "regnety_006", "regnety_008", "regnety_008_tv", "regnety_016",
         "regnety_032", "regnety_040", "regnety_064", "regnety_080", "regnety_080_tv", "regnety_120", "regnety_160",
         "regnety_320", "regnety_640", "regnety_1280", "regnety_2560", "regnetz_040", "regnetz_040_h"]
# timm's variants without weights (new configurations; regnety_040_sgn with GroupNorm)
UNTRAINED_NAMES = ["regnety_040_sgn", "regnetz_005"]
# timm's no-op identity for the SE's missing norm
PLACEHOLDERS = ("se.bn",)
# layers whose printout shows every hyper-parameter (kernel, stride, padding, dilation, groups, ceil mode...)
PRINTED = {"Conv2d", "BatchNorm2d", "GroupNormAct", "AvgPool2d", "Linear", "AdaptiveAvgPool2d", "Flatten", "Dropout"}


def _group_norm4(module):
    """``module``'s (timm's regnet module or ours) GroupNorm with its activation in groups of 4 channels, so that
    the narrow layers split."""
    return partial(module.GroupNormAct, group_size=4)


# Small configurations: a registered model with timm's RegNetCfg fields overridden (timm lays extra kwargs over its
# configuration, ours over the entrypoint's; a ``norm_layer`` is a function of the module, see ``for_module``).
# depth 6, w0 8, wa 12, wm 2 gives widths 8, 16, 32, 32, 64, 64: four stages of 1, 1, 2 and 2 blocks.
_TINY = dict(depth=6, w0=8, wa=12.0, wm=2.0, stem_width=8, num_classes=10)
SMALL = {
    "x": ("regnetx_002", dict(_TINY, group_size=8)),
    "y_tv_os16": ("regnety_008_tv", dict(_TINY, group_size=12, output_stride=16)),
    "v_avg_os8": ("regnetv_064", dict(_TINY, group_size=8, output_stride=8)),
    "z_head_conv": ("regnetz_040_h", dict(_TINY, group_size=4, num_features=24)),
    # GroupNorm and SiLU (stem, blocks, projection shortcuts, the zeroed last norm), SE
    "y_group_norm": ("regnety_040_sgn", dict(_TINY, group_size=8, norm_layer=_group_norm4)),
}


def for_module(kwargs, module):
    """A small configuration's keyword arguments for ``module`` (timm's regnet module or ours): its norm layer."""
    if "norm_layer" not in kwargs:
        return kwargs
    return dict(kwargs, norm_layer=kwargs["norm_layer"](module))


def randomize(model, seed):
    """timm's ``model`` with random BatchNorm statistics and affines and random biases (zero at init)."""
    randomize_norms(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") and p.ndim == 1 and not name.endswith(("bn.bias", "norm1.bias", "norm2.bias",
                                                                             "norm3.bias")):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model


def small_pair(config, seed=0, **overrides):
    """timm's small model (randomised, eval mode) and ours with its weights, built without random init."""
    name, kwargs = SMALL[config]
    kwargs = dict(kwargs, **overrides)
    torch.manual_seed(seed)
    reference = randomize(timm.create_model(name, pretrained=False, **for_module(kwargs, timm_regnet)), seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = getattr(regnet, name)(**for_module(kwargs, regnet))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_generated_widths_match_timm():
    """The per-block widths (float32 quantized linear rule) and the stage widths and group sizes after the group
    compatibility rounding (pycls's and torchvision's) are timm's for every registered configuration and more."""
    configs = [timm_regnet.model_cfgs[name] for name in NAMES + UNTRAINED_NAMES]
    configs += [timm_regnet.RegNetCfg(w0=w0, wa=wa, wm=wm, depth=depth, group_size=g)
                for w0, wa, wm, depth, g in [(8, 12.0, 2.0, 6, 12), (16, 3.3, 2.6, 30, 6), (64, 99.9, 1.5, 11, 40)]]
    for cfg in configs:
        expected, _, _ = timm_regnet.generate_regnet(cfg.wa, cfg.w0, cfg.wm, cfg.depth, cfg.group_size)
        widths = regnet.block_widths(cfg.wa, cfg.w0, cfg.wm, cfg.depth)
        assert widths == expected, cfg
        stage_widths = sorted(set(widths))
        for ratio in (0.0, 0.9):
            args = (stage_widths, [cfg.bottle_ratio] * len(stage_widths), [cfg.group_size] * len(stage_widths), ratio)
            assert regnet.compatible_widths_groups(*args) == timm_regnet.adjust_widths_groups_comp(*args)
    with pytest.raises(ValueError):
        regnet.block_widths(10.0, 12, 2.0, 5)


def _comparable_norm(norm_layer):
    """A norm layer setting in a form timm's and ours compare in: a name, or a partial's (class name, arguments)."""
    if isinstance(norm_layer, partial):
        return norm_layer.func.__name__, norm_layer.args, norm_layer.keywords
    return norm_layer


def test_entrypoint_configs_match_timm(monkeypatch):
    """Every entrypoint builds RegNet with timm's configuration: each RegNetCfg field (our defaults where the
    entrypoint leaves one out, timm's activation names, the norm: 'batchnorm' or GroupNorm in groups of 16) and
    timm's extra arguments (no zeroed last norms in RegNetZ). With the generated widths checked above and the
    layouts below, the registered models are timm's."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(regnet, "build_model", lambda cls, variant, *args, **kwargs: ours_calls.append(kwargs))
    monkeypatch.setattr(timm_regnet, "build_model_with_cfg", lambda cls, variant, *args, **kwargs:
                        timm_calls.append(kwargs))
    defaults = {k: p.default for k, p in inspect.signature(regnet.RegNet).parameters.items()}
    for name in NAMES + UNTRAINED_NAMES:
        getattr(regnet, name)()
        getattr(timm_regnet, name)()
        ours = dict(defaults, **ours_calls.pop())
        theirs = dict(timm_calls.pop())
        expected = dataclasses.asdict(theirs.pop("model_cfg"))
        assert _comparable_norm(ours.pop("norm_layer")) == _comparable_norm(expected.pop("norm_layer")), name
        expected.update({k: v for k, v in theirs.items() if k != "pretrained_filter_fn"})
        assert {k: ours[k] for k in expected} == expected, name


# one registered model of each kind: plain, torchvision rounding, SE, pre-activation (both shortcuts), RegNetZ
# (both heads), the largest; the untrained variants
LAYOUT_NAMES = ["regnetx_002", "regnetx_004_tv", "regnety_008_tv", "regnety_040", "regnetv_040", "regnetv_064",
                "regnetz_040", "regnetz_040_h", "regnety_2560"] + UNTRAINED_NAMES


@pytest.mark.parametrize("name", LAYOUT_NAMES)
def test_layout_equals_timm(name, monkeypatch):
    """state_dict keys in order, shapes and dtypes; module names (timm's SE norm placeholder aside) and the printout
    of every layer; feature_info, num_features, head_hidden_size and default_cfg. timm's model is built on the meta
    device, ours without random init (timm's weight initialisation skipped too: on the meta device it only costs
    time)."""
    monkeypatch.setattr(timm_regnet, "_init_weights", lambda *args, **kwargs: None)
    with torch.device("meta"):
        reference = timm.create_model(name, pretrained=False)
    skip_random_init(monkeypatch)
    ours = getattr(regnet, name)()
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)


@pytest.mark.parametrize("name,output_stride", [("regnetv_064", 8), ("regnety_004", 16)])
def test_dilated_layout_equals_timm(name, output_stride, monkeypatch):
    """``output_stride`` 8 and 16: timm's dilations, projections and (for average-pool shortcuts) "same" pools."""
    monkeypatch.setattr(timm_regnet, "_init_weights", lambda *args, **kwargs: None)
    with torch.device("meta"):
        reference = timm.create_model(name, pretrained=False, output_stride=output_stride)
    skip_random_init(monkeypatch)
    ours = getattr(regnet, name)(output_stride=output_stride)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_equals_timm():
    """After the same seed, our weights are timm's bit for bit (N(0, 2 / fan-out) convolutions, N(0, 0.01^2)
    classifier, zero biases, last norms zeroed but in RegNetZ, GroupNorm's included) and both random streams end in
    step."""
    for name, kwargs in SMALL.values():
        torch.manual_seed(5)
        reference = timm.create_model(name, pretrained=False, **for_module(kwargs, timm_regnet))
        engine.manual_seed(5)
        ours = getattr(regnet, name)(**for_module(kwargs, regnet))
        expected = numpy_state(reference)
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        assert list(state) == list(expected)
        for key, value in expected.items():
            assert state[key].dtype == value.dtype and np.array_equal(state[key], value), (name, key)
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())


@pytest.mark.parametrize("config", list(SMALL))
def test_eval_outputs_match_timm(config):
    """float32 logits of a batch of 2 at an odd size (odd maps in the strided and pooled shortcuts)."""
    reference, ours = small_pair(config, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, 37, 37, seed=1))
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)


@pytest.mark.parametrize("config", list(SMALL))
def test_train_gradients_match_timm(config):
    """float64, train mode: outputs, the input gradient and every parameter's gradient, then the updated running
    statistics. A RegNetZ block without residual feeds only 1x1 convolutions and train-mode norms, which remove any
    per-channel shift: its last norm's bias has a true gradient of 0 and both sides give rounding noise (1e-18), so
    errors are measured against the model's largest gradient where a parameter's own gradients are that small."""
    reference, ours = small_pair(config, seed=2)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 23, 25, seed=2).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout():
    """timm's per-block drop-path rates (0 at the first block, the rate at the last); in train mode both draw timm's
    random stream (the same outputs after the same seed, others after another); in eval mode nothing is drawn or
    dropped (timm's output whatever the seed)."""
    x = image_batch(2, 21, 21, seed=3)
    reference, ours = small_pair("v_avg_os8", seed=3, drop_path_rate=0.5, drop_rate=0.5)
    blocks = [b for s in ("s1", "s2", "s3", "s4") for b in getattr(ours, s)]
    expected = [getattr(b.drop_path, "drop_prob", 0.0) for s in ("s1", "s2", "s3", "s4")
                for b in getattr(reference, s).children()]
    assert [getattr(b.drop_path, "p", 0.0) for b in blocks] == expected
    assert expected[0] == 0.0 and expected[-1] == 0.5
    check_dropout_only_in_training(reference, ours, x, train_rtol=1e-5)


def test_head_api_matches_timm():
    """``num_classes=0``, ``reset_classifier`` and ``global_pool=''`` as timm's (``model_parity.check_head_api``)."""
    x = image_batch(2, 27, 27, seed=4)
    reference, ours = small_pair("z_head_conv", seed=4)
    name, kwargs = SMALL["z_head_conv"]
    headless = getattr(regnet, name)(**dict(kwargs, num_classes=0)).eval()
    check_head_api(reference, ours, headless, x, 24, (2, 24, 1, 1))


def test_in_chans_one_matches_timm():
    """``in_chans=1``: the stem takes one channel, and with timm's weights the outputs are timm's."""
    reference, ours = small_pair("x", seed=6, in_chans=1)
    assert ours.stem.conv.weight.shape == (8, 1, 3, 3)
    out, ref = both_outputs(reference, ours, image_batch(2, 33, 33, seed=6, c=1))
    assert_close(out, ref, 1e-5)


def test_features_only_matches_timm():
    """``features_only=True`` gives timm's five maps (strides 2..32: the stem and the four stages) with its channels,
    reductions and values; ``out_indices`` picks some."""
    x = image_batch(2, 35, 35, seed=7)
    for out_indices in (None, (1, 3)):
        extra = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = small_pair("y_tv_os16", seed=7, features_only=True, output_stride=32, **extra)
        assert ours.feature_info.channels() == reference.feature_info.channels()
        assert ours.feature_info.reduction() == reference.feature_info.reduction()
        assert ours.feature_info.module_name() == reference.feature_info.module_name()
        outs, refs = both_outputs(reference, ours, x)
        assert len(outs) == len(refs) == (5 if out_indices is None else 2)
        for out, ref in zip(outs, refs):
            assert_close(out, ref, 1e-5)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates gives timm's five maps (the stem's, then each stage's before the head convolution,
    which only the final map passes through), picking all, the last n or a list, stopping early;
    prune_intermediate_layers keeps everything with the head, drops the head convolution with the head (the
    features never use it), then turns the later stages into identities, as timm's does."""
    x = image_batch(2, 35, 33, seed=20)
    reference, ours = small_pair("z_head_conv", seed=20)
    for kwargs in (dict(), dict(indices=3, intermediates_only=True), dict(indices=[0, 2], stop_early=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert check_pruned(reference, ours, x, 1, [4], prune_head=False).shape == (2, 10)
    assert check_pruned(reference, ours, x, 1, [4]).shape == (2, 64, 2, 2)
    assert check_pruned(reference, ours, x, [1, -3], [1, 2]).shape == (2, 16, 5, 5)
    check_intermediates(reference, ours, x, 1e-5, indices=[0, 2])


def test_refuses_bad_configurations():
    """An empty image, an output stride other than 8, 16, 32, a configuration without four stages, an unknown
    shortcut, activation or norm, and GroupNorm groups that do not split the channels are refused."""
    _, ours = small_pair("x")
    with pytest.raises((RuntimeError, ValueError)):
        ours(engine.zeros(1, 3, 0, 0))
    name, kwargs = SMALL["x"]
    for bad in (dict(output_stride=4), dict(depth=4), dict(downsample="max"), dict(act_layer="tanhh"),
                dict(norm_layer="layernorm"), dict(norm_layer=partial(regnet.GroupNormAct, group_size=3))):
        with pytest.raises(ValueError):
            getattr(regnet, name)(**dict(kwargs, **bad))


def test_list_models():
    """The ``regnet`` module lists torchvision's RegNets and ours; ours are every model of timm's ``regnet`` module:
    those with ImageNet-1k weights and the untrained variants too (its other regnetz_* models live in timm's
    ``byobnet``)."""
    assert set(NAMES) < set(models.list_models(module="regnet"))
    assert models.list_models("regnet[xyvz]_*", module="regnet") == timm.list_models(module="regnet")
    assert set(timm.list_models(module="regnet")) == set(NAMES + UNTRAINED_NAMES)
    pretrained = {n.split(".")[0] for n in timm.list_pretrained("regnet[xyvz]_*")
                  if timm.models.get_pretrained_cfg(n).num_classes == 1000}
    assert pretrained & set(timm.list_models(module="regnet")) == set(NAMES)
