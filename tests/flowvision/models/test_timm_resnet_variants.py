"""timm's ResNeSt, Res2Net and SK-ResNet families (timm's ResNet with their own blocks) against timm 1.0: the layout
of every registered model, seeded initial weights, eval outputs of whole models at an odd size, float64 train-mode
outputs and gradients of small configurations (radix 1, 2 and 4, avd before and after the split attention, stage and
normal Res2Net blocks, split and shared selective-kernel inputs, dilation), the attention width rules, drop-path and
dropout, the head API, ``in_chans`` and ``features_only``.

Then the rest of timm's ``resnet`` module (C and S stems, GroupNorm, average-pool and blur anti-aliasing, ResNet-RS,
SENet-154, the big ResNeXts, the pruned ECA-ResNets): each entrypoint's configuration and the layout of a one-block
rebuild, the shipped pruned widths, and small configurations combining the new options (seeded init, eval outputs,
float64 gradients, drop-path, the head API, ``in_chans`` and ``features_only`` of a pruned network)."""
import importlib.resources
import json
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest
import timm
import timm.layers
import timm.models
import timm.models.res2net as timm_res2net
import timm.models.resnest as timm_resnest
import timm.models.resnet as timm_resnet
import timm.models.sknet as timm_sknet
import torch

import engine
from flowvision.models import list_models
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import res2net, resnest, resnet, sknet
from model_parity import (backward_both, both_outputs, capture_builder, check_empty_batch, check_intermediates,
                          check_layout, check_resnet_drop_path, check_train_step, image_batch, numpy_state,
                          randomize_norms, skip_random_init)
from op_check import assert_close

FAMILIES = {
    "resnest": ["resnest14d", "resnest26d", "resnest50d", "resnest101e", "resnest200e", "resnest269e",
                "resnest50d_4s2x40d", "resnest50d_1s4x24d"],
    "res2net": ["res2net50_26w_4s", "res2net50_26w_6s", "res2net50_26w_8s", "res2net50_48w_2s", "res2net50_14w_8s",
                "res2net101_26w_4s", "res2next50", "res2net50d", "res2net101d"],
    "sknet": ["skresnet18", "skresnet34", "skresnext50_32x4d", "skresnet50", "skresnet50d"],
}
# timm's models without published weights among them: registered too, their layout checked as the others'
UNTRAINED = ["skresnet50", "skresnet50d"]
MODULES = {"resnest": resnest, "res2net": res2net, "sknet": sknet}
NAMES = [name for names in FAMILIES.values() for name in names]
# timm's no-op identities for features these blocks leave out (DropBlock, the plain conv's norm and act in ResNeSt)
PLACEHOLDERS = ("drop_block", "bn2", "act2", "conv2.drop")
# layers whose printout shows every hyper-parameter (kernel, stride, padding, dilation, groups, ceil mode...)
PRINTED = {"Conv2d", "BatchNorm2d", "MaxPool2d", "AvgPool2d", "Linear", "AdaptiveAvgPool2d", "Flatten"}
# small configurations of the ResNet class with each family's block (timm's arguments and block names)
SMALL = {
    "resnest_r2_grouped_deep": ("resnest", "ResNestBottleneck",
                                dict(stem_type="deep", stem_width=8, avg_down=True, cardinality=2, base_width=32,
                                     block_args=dict(radix=2, avd=True, avd_first=False))),
    "resnest_r4_avd_first_os8": ("resnest", "ResNestBottleneck",
                                 dict(stem_type="deep", stem_width=8, avg_down=True, cardinality=2, base_width=64,
                                      output_stride=8, block_args=dict(radix=4, avd=True, avd_first=True))),
    "resnest_r1_no_avd": ("resnest", "ResNestBottleneck",
                          dict(cardinality=4, base_width=24, block_args=dict(radix=1, avd=False))),
    "res2net_4s_os16": ("res2net", "Bottle2neck", dict(base_width=26, output_stride=16, block_args=dict(scale=4))),
    "res2next_3s_deep": ("res2net", "Bottle2neck",
                         dict(stem_type="deep", stem_width=8, avg_down=True, base_width=16, cardinality=2,
                              block_args=dict(scale=3))),
    "sk_basic_split_os8": ("sknet", "SelectiveKernelBasic",
                           dict(output_stride=8, zero_init_last=False,
                                block_args=dict(sk_kwargs=dict(rd_ratio=1 / 8, rd_divisor=16, split_input=True)))),
    "sk_bottleneck_grouped": ("sknet", "SelectiveKernelBottleneck",
                              dict(cardinality=4, base_width=16, zero_init_last=False,
                                   block_args=dict(sk_kwargs=dict(rd_divisor=32, split_input=False)))),
}
TIMM_MODULES = {"resnest": timm_resnest, "res2net": timm_res2net, "sknet": timm_sknet}


def _small_builders(config, **overrides):
    """Builders of a small configuration by timm and by us: one block per stage, narrow stages, 10 classes."""
    family, block, args = SMALL[config]
    args = dict(args, layers=(1, 1, 1, 1), channels=(8, 16, 16, 32), num_classes=10)
    args.update(overrides)
    return (lambda: timm_resnet.ResNet(getattr(TIMM_MODULES[family], block), **args),
            lambda: resnet.ResNet(getattr(MODULES[family], block), **args))


def _pair(build_timm, build_ours, seed=0):
    """A seeded timm model with random norms (eval mode) and ours with its weights, built without random init."""
    torch.manual_seed(seed)
    reference = randomize_norms(build_timm(), seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = build_ours()
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _small_pair(config, seed=0, **overrides):
    """A small configuration from timm's ResNet class and from ours, with the same random weights."""
    return _pair(*_small_builders(config, **overrides), seed)


def _entrypoint(name):
    """Our entrypoint of a registered model, from its family's module."""
    return getattr(next(MODULES[f] for f, names in FAMILIES.items() if name in names), name)


def _named_pair(name, seed=0, **kwargs):
    """A registered model from timm and from us, with the same random weights."""
    return _pair(lambda: timm.create_model(name, pretrained=False, **kwargs), lambda: _entrypoint(name)(**kwargs),
                 seed)


def test_registered_names():
    """Each family registers under timm's module name exactly timm's models: those with ImageNet-1k weights and the
    untrained SK-ResNet-50 and -50-D."""
    for family, names in FAMILIES.items():
        assert list_models(module=family) == timm.list_models(module=family)
        assert sorted(list_models(module=family)) == sorted(names)
    assert sorted(list_models("res2ne*")) == sorted(FAMILIES["res2net"])
    assert sorted(list_models("sk*")) == sorted(FAMILIES["sknet"])
    pretrained = {n.split(".")[0] for p in ("resnest*", "res2ne*", "sk*") for n in timm.list_pretrained(p)}
    assert pretrained == set(NAMES) - set(UNTRAINED)


def test_attention_widths_match_timm(monkeypatch):
    """Split attention's bottleneck (in * radix / 4 to a multiple of 8, at least 32, at most 10% below) and the
    selective kernel's (out * rd_ratio to a multiple of rd_divisor) are timm's for many widths (timm's layers on
    the meta device, ours without random init)."""
    skip_random_init(monkeypatch)
    for channels in [8, 24, 40, 64, 72, 120, 128, 200, 256, 512, 1000, 1024]:
        for radix, groups in [(1, 1), (2, 1), (4, 2), (1, 4)]:
            with torch.device("meta"):
                reference = timm.layers.SplitAttn(channels, channels, radix=radix, groups=groups,
                                                  norm_layer=torch.nn.BatchNorm2d)
            ours = resnest.SplitAttn(channels, channels, radix=radix, groups=groups)
            assert ours.fc1.out_channels == reference.fc1.out_channels, (channels, radix)
        for sk_args in [dict(rd_ratio=1 / 8, rd_divisor=16), dict(rd_ratio=1 / 16, rd_divisor=32), {}]:
            with torch.device("meta"):
                reference = timm.layers.SelectiveKernel(channels, channels, **sk_args)
            ours = sknet.SelectiveKernel(channels, channels, **sk_args)
            assert ours.attn.fc_reduce.out_channels == reference.attn.fc_reduce.out_channels, (channels, sk_args)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_layout_equals_timm(name, monkeypatch):
    """state_dict keys in order, shapes and dtypes; module names (timm's no-op placeholders aside) and the printout
    of every layer; feature_info, num_features and default_cfg (1000 classes on both sides). timm's model is built on
    the meta device, ours without random init (the registered configuration, compared through the model it builds)."""
    with torch.device("meta"):
        reference = timm.create_model(name, pretrained=False, num_classes=1000)
    skip_random_init(monkeypatch)
    ours = _entrypoint(name)(num_classes=1000)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)


@pytest.mark.slow
def test_seeded_init_equals_timm():
    """After the same seed, our weights are timm's bit for bit (kaiming fan-out convs, the attention convs' default
    biases, zeroed last norms or not: the entrypoints' defaults) and both generators end in step, for each small
    configuration (the registered models share their classes and ``ResNet._init_weights``)."""
    for build_timm, build_ours in [_small_builders(config) for config in sorted(SMALL)]:
        torch.manual_seed(5)
        reference = build_timm()
        engine.manual_seed(5)
        ours = build_ours()
        expected = numpy_state(reference)
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        assert list(state) == list(expected)
        assert all(np.array_equal(state[k], v) and state[k].dtype == v.dtype for k, v in expected.items())
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnest14d", "res2net50_26w_4s", "skresnet18"])
def test_eval_outputs_match_timm(name):
    """Whole models with random weights and norms, float32, batch 2 at 35x35 (odd maps in the average pools)."""
    reference, ours = _named_pair(name, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, 35, 35, seed=1))
    assert out.shape == (2, 1000)
    assert_close(out, ref, 1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(SMALL))
def test_train_gradients_match_timm(config):
    """float64, train mode: outputs, the input gradient and every parameter's gradient, then the updated running
    statistics, for small configurations covering each block's options, dilation and the stems."""
    reference, ours = _small_pair(config, seed=2)
    assert ours.feature_info == reference.feature_info
    reference.double().train()
    ours.double().train()
    ref_params, params = backward_both(reference, ours, image_batch(2, 23, 25, seed=2).astype(np.float64))
    assert list(params) == list(ref_params)
    for key, p in ref_params.items():
        grad, ref = params[key].grad.numpy(), p.grad.numpy()
        if key.endswith("conv2.fc1.bias"):  # before a train-mode norm: zero but for rounding, so on its weight's scale
            scale = np.abs(ref_params[key[:-len("bias")] + "weight"].grad.numpy()).max()
            assert np.abs(grad - ref).max() <= 1e-9 * scale and np.abs(ref).max() <= 1e-9 * scale, key
        else:
            assert_close(grad, ref, 1e-9, what=f"grad of {key}")
    buffers = dict(ours.named_buffers())
    for key, b in reference.named_buffers():
        assert_close(buffers[key].numpy(), b.numpy(), 1e-10, what=key)


@pytest.mark.slow
@pytest.mark.parametrize("config", ["resnest_r2_grouped_deep", "res2net_4s_os16", "sk_basic_split_os8"])
def test_drop_path_and_dropout(config):
    """timm's per-block drop-path rates; in train mode both drop and draw timm's random stream (timm's outputs,
    including ResNeSt's drop-path on the projection shortcut's input, the same after the same seed), in eval mode
    they are off."""
    reference, ours = _small_pair(config, seed=3, layers=(2, 1, 1, 2), drop_path_rate=0.5, drop_rate=0.5)
    _, plain = _small_pair(config, seed=3, layers=(2, 1, 1, 2))
    check_resnet_drop_path(reference, ours, plain, image_batch(4, 21, 21, seed=3))


@pytest.mark.slow
def test_head_api_matches_timm():
    """``num_classes=0`` gives timm's pooled features (``forward_head(pre_logits=True)``); ``reset_classifier`` to
    another class count and pool; ``global_pool=''`` leaves the feature map."""
    x = image_batch(2, 27, 27, seed=4)
    reference, ours = _small_pair("resnest_r2_grouped_deep", seed=4)
    build_timm, build_ours = _small_builders("resnest_r2_grouped_deep", num_classes=0)
    headless = build_ours().eval()
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("fc.")})
    with torch.no_grad():
        pooled = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True).numpy()
    with engine.no_grad():
        features = headless(engine.from_numpy(x)).numpy()
    assert features.shape == pooled.shape == (2, 32 * 4)
    assert_close(features, pooled, 1e-5)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    ours.reset_classifier(7, "catavgmax")
    reference.reset_classifier(7, "catavgmax")
    assert ours.num_classes == 7 and ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
    ours.reset_classifier(0, "")
    with engine.no_grad():
        unpooled = ours(engine.from_numpy(x)).numpy()
        assert np.array_equal(unpooled, ours.forward_features(engine.from_numpy(x)).numpy())


@pytest.mark.slow
def test_in_chans_one_matches_timm():
    """``in_chans=1``: the deep stem's first conv takes one channel, and with timm's weights the outputs are timm's."""
    reference, ours = _named_pair("resnest14d", seed=6, in_chans=1)
    assert ours.conv1[0].weight.shape == (32, 1, 3, 3)
    assert ours.default_cfg["first_conv"] == "conv1.0"
    out, ref = both_outputs(reference, ours, image_batch(2, 33, 33, seed=6, c=1))
    assert_close(out, ref, 1e-4)


@pytest.mark.slow
def test_features_only_matches_timm():
    """``features_only=True`` gives timm's five maps (strides 2..32: the stem's ReLU and the four stages), with
    its channels, reductions and values."""
    reference, ours = _named_pair("skresnet18", seed=7, features_only=True)
    assert ours.feature_info.channels() == reference.feature_info.channels() == [64, 64, 128, 256, 512]
    assert ours.feature_info.reduction() == reference.feature_info.reduction() == [2, 4, 8, 16, 32]
    outs, refs = both_outputs(reference, ours, image_batch(2, 35, 35, seed=7))
    assert len(outs) == len(refs) == 5
    for out, ref in zip(outs, refs):
        assert_close(out, ref, 1e-4)


@pytest.mark.slow
def test_resnest_runs_an_empty_batch():
    """timm's ResNeSt fails on an empty batch (a reshape of no elements with -1), so the empty-batch sweep leaves it
    out; ours gives (0, classes) logits in eval and training, and zero gradients."""
    check_empty_batch(resnest.resnest14d(num_classes=5), (3, 35, 35), 5)


# The rest of timm's ``resnet`` module with ImageNet-1k weights (test_timm_resnet.py has the others).
RESNET_NAMES = ["resnet50c", "resnet101c", "resnet152c", "resnet50s", "resnet101s", "resnet152s", "resnet50_gn",
                "resnext50d_32x4d", "resnext101_32x4d", "resnext101_32x16d", "resnext101_32x32d", "ecaresnet50d_pruned",
                "ecaresnet101d_pruned", "senet154", "resnetblur50", "resnetaa50", "resnetaa50d", "resnetaa101d",
                "seresnextaa101d_32x8d", "seresnextaa201d_32x8d", "resnetrs50", "resnetrs101", "resnetrs152",
                "resnetrs200", "resnetrs270", "resnetrs350", "resnetrs420"]
# timm's ``resnet`` variants without published weights: new configurations of the options above (their layout in full,
# under ~100M parameters, in test_timm_resnet.py)
UNTRAINED_RESNETS = ["ecaresnet200d", "ecaresnext26t_32x4d", "ecaresnext50t_32x4d", "resnet50t", "resnet200",
                     "resnetaa34d", "resnetblur18", "resnetblur50d", "resnetblur101d", "seresnet18", "seresnet34",
                     "seresnet50t", "seresnet101", "seresnet152", "seresnet200d", "seresnet269d", "seresnetaa50d"]
RESNET_PLACEHOLDERS = ("drop_block", "aa", "se.bn")  # timm's no-op identities: DropBlock, unused anti-aliasing, SE norm
RESNET_PRINTED = PRINTED | {"Conv1d", "GroupNorm"}
# each side's layer classes for the options
TIMM_LAYERS = SimpleNamespace(blocks=timm_resnet, avg=torch.nn.AvgPool2d, blur=timm.layers.BlurPool2d,
                              se=timm.layers.SEModule)
OUR_LAYERS = SimpleNamespace(blocks=resnet, avg=engine.nn.AvgPool2d, blur=resnet.BlurPool2d, se=resnet.SEModule)
# Small configurations of the ResNet class (timm's arguments from each side's layers), one block per stage, with their
# input size (average-pool anti-aliasing floors odd maps where the shortcut's ceil mode does not: timm's fail too)
RESNET_SMALL = {
    "rs_avg_aa_se_grouped_os16": (lambda m: dict(
        block=m.blocks.Bottleneck, stem_type="deep", stem_width=8, replace_stem_pool=True, avg_down=True,
        aa_layer=m.avg, cardinality=2, base_width=32, output_stride=16,
        block_args=dict(attn_layer=partial(m.se, rd_ratio=0.25))), 32),
    "blur_groupnorm_basic_os8": (lambda m: dict(
        block=m.blocks.BasicBlock, aa_layer=m.blur, norm_layer="groupnorm", channels=(32, 32, 32, 32),
        output_stride=8), 25),
    "senet_blur_stem_pool_os16": (lambda m: dict(
        block=m.blocks.Bottleneck, stem_type="deep", stem_width=8, replace_stem_pool=True, aa_layer=m.blur,
        cardinality=4, base_width=16, block_reduce_first=2, down_kernel_size=3, output_stride=16,
        block_args=dict(attn_layer="se")), 27),
    "pruned_eca_deep": (lambda m: dict(
        block=m.blocks.Bottleneck, stem_type="deep", stem_width=8, avg_down=True,
        block_args=dict(attn_layer="eca")), 23),
}


def _resnet_args(config, side, **overrides):
    """A small configuration's arguments from one side's layer classes, with narrow stages and 10 classes."""
    make_args, _ = RESNET_SMALL[config]
    return dict(dict(layers=(1, 1, 1, 1), channels=(8, 16, 16, 32), num_classes=10), **make_args(side), **overrides)


def _small_widths(reference):
    """Weight shapes pruning each width of timm's ``reference`` to three quarters (a width is a function of the
    unpruned one, so connected layers stay consistent), for its convolutions, BatchNorms and classifier."""
    shapes = {}
    for name, m in reference.named_modules():
        if isinstance(m, torch.nn.Conv2d):
            shapes[f"{name}.weight"] = [c - c // 4 for c in m.weight.shape[:2]] + list(m.kernel_size)
        elif isinstance(m, torch.nn.BatchNorm2d):
            shapes[f"{name}.weight"] = [m.num_features - m.num_features // 4]
        elif isinstance(m, torch.nn.Linear):
            shapes[f"{name}.weight"] = [m.out_features, m.in_features - m.in_features // 4]
    return shapes


def _prune_timm(reference, shapes):
    """timm's pruning of ``reference`` to ``shapes``, from its layer-shape string (the format of its shipped files)."""
    reference.pretrained_cfg = {"first_conv": "conv1.0"}
    spec = "***".join(f"{key}:{list(shape)}" for key, shape in shapes.items())
    return timm.models.adapt_model_from_string(reference, spec)


def _resnet_builders(config, features_only=False, **overrides):
    """Builders of a small configuration by timm and by us (``features_only``: ours through ``build_model``); the
    pruned one narrowed as ``_small_widths`` says."""
    timm_args, our_args = _resnet_args(config, TIMM_LAYERS, **overrides), _resnet_args(config, OUR_LAYERS, **overrides)
    if config != "pruned_eca_deep":
        return lambda: timm_resnet.ResNet(**timm_args), lambda: resnet.ResNet(**our_args)
    with torch.device("meta"):
        shapes = _small_widths(timm_resnet.ResNet(**timm_args))
    model_cls = partial(resnet._pruned_resnet, shapes)
    return (lambda: _prune_timm(timm_resnet.ResNet(**timm_args), shapes),
            lambda: build_model(model_cls, "pruned", features_only=features_only, **our_args))


def _randomize_group_norms(model, seed):
    """Random affine parameters for timm's GroupNorms (``randomize_norms`` sets BatchNorms only)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.GroupNorm):
                m.weight.copy_(torch.rand(m.num_channels, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_channels, generator=g) * 0.1)
    return model


def _resnet_pair(config, seed=0, **overrides):
    """A small configuration by timm (random norms, eval mode) and by us with its weights."""
    build_timm, build_ours = _resnet_builders(config, **overrides)
    torch.manual_seed(seed)
    reference = _randomize_group_norms(randomize_norms(build_timm(), seed), seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = build_ours()
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _spec(value):
    """A configuration value comparable across the implementations: classes by name, partials by function name and
    keywords, timm's norm name as its class's."""
    if isinstance(value, dict):
        return {k: _spec(v) for k, v in value.items()}
    if isinstance(value, partial):
        return _spec(value.func), _spec(value.keywords)
    if isinstance(value, type):
        return value.__name__
    return "GroupNorm" if value == "groupnorm" else value


def _timm_pruned_widths(name):
    """The convolution and norm weight shapes in timm's file for the pruned model ``name``."""
    text = importlib.resources.files("timm.models").joinpath(f"_pruned/{name}.txt").read_text().strip()
    shapes = {}
    for entry in text.split("***"):
        key, shape = entry.split(":")
        if not key.endswith(("_M.weight", "se.conv.weight")):  # timm's unused entries and the (kept) ECA kernels
            shapes[key] = json.loads(shape)
    return shapes


def test_resnet_registered_names():
    """The ``resnet`` family lists exactly timm's ``resnet`` module: its models with ImageNet-1k weights (torchvision's
    names and timm's test_resnet among them) and the untrained variants, registered too."""
    in1k = {tag.split(".")[0] for tag in timm.list_pretrained()
            if timm.models.get_pretrained_cfg(tag).num_classes == 1000}
    assert list_models(module="resnet") == timm.list_models(module="resnet")
    assert set(timm.list_models(module="resnet")) - in1k == set(UNTRAINED_RESNETS)
    assert set(RESNET_NAMES) <= in1k


@pytest.mark.slow
def test_resnet_entrypoints_match_timm(monkeypatch):
    """Each entrypoint (the untrained variants' too) hands its builder timm's configuration (the pruned ones timm's
    widths, from the package's assets); the model it gives, rebuilt with one block per stage, has timm's layout
    (timm's on the meta device, ours without random init), and the pruned ECA-ResNet-50-D has it in full."""
    ours_calls = capture_builder(monkeypatch, resnet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_resnet, "build_model_with_cfg")
    skip_random_init(monkeypatch)
    rebuilt = set()
    for name in RESNET_NAMES + UNTRAINED_RESNETS:
        getattr(resnet, name)()
        getattr(timm_resnet, name)()
        (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) = ours_calls.pop(), timm_calls.pop()
        pruned = timm_kwargs.pop("pruned", False)
        if pruned:
            assert ours_cls.func is resnet._pruned_resnet and ours_cls.args[0] == _timm_pruned_widths(name)
        else:
            assert ours_cls is resnet.ResNet
        assert timm_cls is timm_resnet.ResNet and _spec(ours_kwargs) == _spec(timm_kwargs), name
        config = repr(_spec(dict(ours_kwargs, layers=None)))
        if not pruned and config not in rebuilt:
            rebuilt.add(config)
            with torch.device("meta"):
                reference = timm_cls(**dict(timm_kwargs, layers=(1, 1, 1, 1)))
            cfg = timm.models.get_pretrained_cfg(name)
            reference.pretrained_cfg = {"first_conv": cfg.first_conv, "classifier": cfg.classifier}
            check_layout(ours_cls(**dict(ours_kwargs, layers=(1, 1, 1, 1))), reference, RESNET_PLACEHOLDERS,
                         RESNET_PRINTED)
    assert len(rebuilt) == 26
    monkeypatch.undo()
    with torch.device("meta"):
        reference = timm.create_model("ecaresnet50d_pruned", pretrained=False)
    skip_random_init(monkeypatch)
    check_layout(resnet.ecaresnet50d_pruned(), reference, RESNET_PLACEHOLDERS, RESNET_PRINTED)


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("config", sorted(RESNET_SMALL))
def test_resnet_options_match_timm(config):
    """Seeded from the same seed, our weights are timm's bit for bit and the random streams end in step (the pruned
    network: every layer rebuilt with default init, the ECA kernels of the full widths); with timm's random weights,
    float32 eval outputs of a batch of 2 are timm's (the pruned network with one input channel)."""
    in_chans = 1 if config == "pruned_eca_deep" else 3
    build_timm, build_ours = _resnet_builders(config, in_chans=in_chans)
    torch.manual_seed(5)
    reference = build_timm()
    engine.manual_seed(5)
    ours = build_ours()
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    expected = numpy_state(reference)
    state = {k: v.numpy() for k, v in ours.state_dict().items()}
    assert list(state) == list(expected)
    assert all(np.array_equal(state[k], v) and state[k].dtype == v.dtype for k, v in expected.items())
    assert ours.feature_info == reference.feature_info
    assert (ours.num_features, ours.head_hidden_size) == (reference.num_features, reference.head_hidden_size)
    _randomize_group_norms(randomize_norms(reference, 1), 1).eval()
    ours.load_state_dict(numpy_state(reference))
    size = RESNET_SMALL[config][1]
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, size, size, seed=1, c=in_chans))
    assert out.shape == (2, 10)
    assert_close(out, ref, 1e-5)


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("config", ["rs_avg_aa_se_grouped_os16", "blur_groupnorm_basic_os8", "pruned_eca_deep"])
def test_resnet_options_train_step_matches_timm(config):
    """float64, train mode: outputs, the input gradient, every parameter's gradient and the updated running statistics,
    through average-pool and blur anti-aliasing (dilated too), ResNet-RS's stem, GroupNorm and a pruned network."""
    reference, ours = _resnet_pair(config, seed=2)
    size = RESNET_SMALL[config][1]
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, size, size, seed=2).astype(np.float64))


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_resnet_options_drop_path_and_dropout():
    """SENet's blocks behind blur anti-aliasing: timm's per-block drop-path rates, its masks after the same seed in
    train mode, nothing dropped in eval mode."""
    reference, ours = _resnet_pair("senet_blur_stem_pool_os16", seed=3, layers=(2, 1, 1, 2), drop_path_rate=0.5,
                                   drop_rate=0.5)
    _, plain = _resnet_pair("senet_blur_stem_pool_os16", seed=3, layers=(2, 1, 1, 2))
    check_resnet_drop_path(reference, ours, plain, image_batch(4, 21, 21, seed=3))


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_pruned_head_and_features_match_timm(monkeypatch):
    """A pruned network's head and features follow its widths: ``reset_classifier(0)`` gives timm's pooled features
    (``forward_head(pre_logits=True)``), ``reset_classifier`` to 'catavgmax' timm's classifier, ``num_classes=0``
    timm's ``num_features``, and ``features_only`` timm's five maps with the pruned channels."""
    reference, ours = _resnet_pair("pruned_eca_deep", seed=4)
    x = image_batch(2, 23, 23, seed=4)
    with torch.no_grad():
        pooled = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True).numpy()
    ours.reset_classifier(0)
    with engine.no_grad():
        features = ours(engine.from_numpy(x)).numpy()
    assert features.shape == pooled.shape == (2, 96)
    assert_close(features, pooled, 1e-5)
    ours.reset_classifier(7, "catavgmax")
    reference.reset_classifier(7, "catavgmax")
    assert ours.get_classifier().weight.shape == reference.get_classifier().weight.shape == (7, 192)
    assert ours.head_hidden_size == reference.head_hidden_size == 192
    skip_random_init(monkeypatch)
    build_timm, build_ours = _resnet_builders("pruned_eca_deep", num_classes=0)
    with torch.device("meta"):
        headless = build_timm()
    assert build_ours().num_features == headless.num_features == 96
    maps = timm.models.FeatureListNet(reference)
    ours = _resnet_builders("pruned_eca_deep", features_only=True)[1]()
    ours.load_state_dict(numpy_state(maps))
    assert ours.feature_info.channels() == maps.feature_info.channels() == [12, 24, 48, 48, 96]
    outs, refs = both_outputs(maps, ours.eval(), x)
    assert len(outs) == len(refs) == 5
    for out, ref in zip(outs, refs):
        assert_close(out, ref, 1e-5)


def test_intermediates_and_pruning_match_timm(one_thread):
    """forward_intermediates and prune_intermediate_layers (the ResNet class's, tested in full in test_timm_resnet.py)
    on a pruned network, whose kept width comes from its narrowed feature_info, and on Res2NeXt blocks: the stem's
    and layer2's maps stopping early, then pruning after layer2 gives timm's indices, widths and feature map."""
    x = image_batch(2, 23, 23, seed=9)
    for reference, ours in (_resnet_pair("pruned_eca_deep", seed=9), _small_pair("res2next_3s_deep", seed=9)):
        check_intermediates(reference, ours, x, 1e-5, indices=[0, 2], stop_early=True)
        assert ours.prune_intermediate_layers([1, 2]) == reference.prune_intermediate_layers([1, 2]) == [1, 2]
        assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == reference.num_features
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ref.shape
        assert_close(out, ref, 1e-5)
