"""timm's ResNet variants (ResNet-D/-T, SE-ResNeXt, ECA-ResNet) against timm 1.0: the layout of every registered
model (timm's untrained variants under ~100M parameters too), seeded initial weights, eval outputs of whole models
at an odd size, float64 train-mode outputs and gradients of small configurations (deep and tiered stems, average-pool
and dilated shortcuts, SE and ECA), the SE and ECA width rules, drop-path and dropout, the head API, ``in_chans`` and
``features_only``."""
import numpy as np
import pytest
import timm
import timm.layers
import timm.models.resnet as timm_resnet
import torch

import engine
from flowvision.models import list_models
from flowvision.models._helpers import adapt_input_conv
from flowvision.models.timm_families import resnet
from model_parity import (backward_both, both_outputs, check_intermediates, check_layout, check_resnet_drop_path,
                          image_batch, numpy_state, randomize_norms, skip_random_init)
from op_check import assert_close

NAMES = ["resnet10t", "resnet14t", "resnet18d", "resnet26", "resnet26d", "resnet26t", "resnet34d", "resnet50d",
         "resnet101d", "resnet152d", "resnet200d", "seresnet50", "seresnet152d", "seresnext26d_32x4d",
         "seresnext26t_32x4d", "seresnext50_32x4d", "seresnext101_32x4d", "seresnext101_32x8d", "seresnext101d_32x8d",
         "seresnext101_64x4d", "ecaresnet26t", "ecaresnet50d", "ecaresnet50t", "ecaresnet101d", "ecaresnet269d",
         "ecaresnetlight"]
# timm's variants without published weights under ~100M parameters, whose layout is checked in full (the deeper
# resnet200, seresnet200d, seresnet269d and ecaresnet200d: their configuration, in test_timm_resnet_variants.py)
UNTRAINED = ["resnet50t", "resnetaa34d", "resnetblur18", "resnetblur50d", "resnetblur101d", "seresnet18", "seresnet34",
             "seresnet50t", "seresnet101", "seresnet152", "seresnetaa50d", "ecaresnext26t_32x4d", "ecaresnext50t_32x4d"]
# timm's no-op placeholders for features these models do not use (DropBlock, anti-aliasing, a norm inside SE)
PLACEHOLDERS = ("drop_block", "aa", "se.bn")
# layers whose printout shows every hyper-parameter (kernel, stride, padding, dilation, groups, ceil mode...)
PRINTED = {"Conv1d", "Conv2d", "BatchNorm2d", "MaxPool2d", "AvgPool2d", "BlurPool2d", "Linear", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool2d", "Flatten"}
# small configurations of the ResNet class (timm's arguments), one per combination of the options
SMALL = {
    "tiered_avgdown_se_grouped": dict(block="Bottleneck", stem_type="deep_tiered", stem_width=8, avg_down=True,
                                      cardinality=2, base_width=16, block_args=dict(attn_layer="se")),
    "deep_avgdown_eca_basic_os8": dict(block="BasicBlock", stem_type="deep", stem_width=8, avg_down=True,
                                       output_stride=8, block_args=dict(attn_layer="eca")),
    "plain_eca_os16_catavgmax": dict(block="Bottleneck", output_stride=16, global_pool="catavgmax",
                                     block_args=dict(attn_layer="eca")),
    "plain_se_basic": dict(block="BasicBlock", block_args=dict(attn_layer="se")),
}


def _small_args(config, **overrides):
    """The keyword arguments of a small configuration: one block per stage, narrow stages, 10 classes."""
    args = dict(SMALL[config], layers=(1, 1, 1, 1), channels=(8, 16, 16, 32), num_classes=10)
    args.update(overrides)
    return args


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
    args = _small_args(config, **overrides)
    block = args.pop("block")
    return _pair(lambda: timm_resnet.ResNet(getattr(timm_resnet, block), **args),
                 lambda: resnet.ResNet(getattr(resnet, block), **args), seed)


def _named_pair(name, seed=0, **kwargs):
    """A registered model from timm and from us, with the same random weights."""
    return _pair(lambda: timm.create_model(name, pretrained=False, **kwargs),
                 lambda: getattr(resnet, name)(**kwargs), seed)


def test_registered_names():
    """Every variant is registered under timm's name, in the ``resnet`` family beside torchvision's ResNets."""
    assert set(NAMES) <= set(list_models(["*resnet*", "*resnext*"]))
    assert sorted(list_models("seresnext*", module="resnet", exclude_filters="seresnextaa*")) == \
        sorted(n for n in NAMES if n.startswith("seresnext"))
    assert set(list_models(module="resnet")) >= set(NAMES) | {"resnet50"}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES + UNTRAINED)
def test_layout_equals_timm(name, monkeypatch):
    """state_dict keys in order, shapes and dtypes; module names (timm's no-op placeholders aside) and the printout
    of every layer; feature_info and default_cfg, for the models with weights and the untrained ones (1000 classes
    on both sides). timm's model is built on the meta device (its random draws, which cost more than building it
    there, skipped), ours without init."""
    for init_name in ("kaiming_normal_", "kaiming_uniform_", "uniform_"):
        monkeypatch.setattr(torch.nn.init, init_name, lambda tensor, *args, **kwargs: tensor)
    with torch.device("meta"):
        reference = timm.create_model(name, pretrained=False, num_classes=1000)
    skip_random_init(monkeypatch)
    ours = getattr(resnet, name)(num_classes=1000)
    check_layout(ours, reference, PLACEHOLDERS, PRINTED)


@pytest.mark.slow
def test_seeded_init_equals_timm():
    """After the same seed, our weights are timm's bit for bit (its kaiming fan-out convs, default-initialised
    SE biases, ECA kernels and classifier, zeroed last norms) and both generators end in step."""
    builds = [(lambda: timm.create_model("resnet10t", pretrained=False), lambda: resnet.resnet10t())]
    for config in ("tiered_avgdown_se_grouped", "plain_eca_os16_catavgmax"):
        args = _small_args(config)
        block = args.pop("block")
        builds.append((lambda b=block, a=args: timm_resnet.ResNet(getattr(timm_resnet, b), **a),
                       lambda b=block, a=args: resnet.ResNet(getattr(resnet, b), **a)))
    for build_timm, build_ours in builds:
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
@pytest.mark.parametrize("name", ["seresnext26d_32x4d", "ecaresnet26t"])
def test_eval_outputs_match_timm(name):
    """Whole models with random weights and norms, float32, batch 2 at 35x35 (odd maps in the average-pool
    shortcuts): SE-ResNeXt with a deep stem, ECA-ResNet with a tiered stem (basic blocks: the features test)."""
    reference, ours = _named_pair(name, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, 35, 35, seed=1))
    assert out.shape == (2, 1000)
    assert_close(out, ref, 1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(SMALL))
def test_train_gradients_match_timm(config):
    """float64, train mode: outputs, the input gradient and every parameter's gradient, then the updated running
    statistics, for small configurations covering the stems, shortcuts, blocks, attentions, dilation and pools."""
    reference, ours = _small_pair(config, seed=2)
    assert ours.feature_info == reference.feature_info
    reference.double().train()
    ours.double().train()
    ref_params, params = backward_both(reference, ours, image_batch(2, 29, 31, seed=2).astype(np.float64))
    assert list(params) == list(ref_params)
    for key, p in ref_params.items():
        assert_close(params[key].grad.numpy(), p.grad.numpy(), 1e-9, what=f"grad of {key}")
    buffers = dict(ours.named_buffers())
    for key, b in reference.named_buffers():
        assert_close(buffers[key].numpy(), b.numpy(), 1e-10, what=key)


def test_se_and_eca_widths_match_timm():
    """SE's squeeze width (channels / 16 rounded to the nearest multiple of 8, at least 8) and ECA's kernel size
    (from log2 of the channels, gamma 2, beta 1, odd, at least 3) are timm's for many channel counts."""
    for channels in [8, 24, 64, 72, 120, 128, 200, 256, 384, 512, 1000, 1024, 1500, 2048, 4096]:
        se_width = timm.layers.SEModule(channels).fc1.out_channels
        eca_kernel = timm.layers.EcaModule(channels).conv.kernel_size
        assert resnet.SEModule(channels).fc1.out_channels == se_width, channels
        assert resnet.EcaModule(channels).conv.kernel_size == eca_kernel, channels


@pytest.mark.parametrize("channels", [8, 200, 2048])
def test_se_and_eca_match_timm(channels):
    """Both gates give timm's values and gradients (float64, every parameter)."""
    torch.manual_seed(channels)
    modules = [(timm.layers.SEModule(channels), resnet.SEModule(channels)),
               (timm.layers.EcaModule(channels), resnet.EcaModule(channels))]
    x = image_batch(2, 3, 5, seed=channels, c=channels).astype(np.float64)
    for reference, ours in modules:
        reference.double()
        ours.load_state_dict(numpy_state(reference))
        ours.double()
        assert {k: v.shape for k, v in ours.state_dict().items()} == \
               {k: tuple(v.shape) for k, v in reference.state_dict().items()}
        ref_params, params = backward_both(reference, ours, x)
        for key, p in ref_params.items():
            assert_close(params[key].grad.numpy(), p.grad.numpy(), 1e-9, what=f"grad of {key}")


@pytest.mark.slow
def test_drop_path_and_dropout():
    """timm's per-block drop-path rates (linear in the block index); in train mode both drop and draw timm's
    random stream (the same outputs after the same seed), in eval mode they are off."""
    reference, ours = _small_pair("tiered_avgdown_se_grouped", seed=3, layers=(2, 1, 1, 2), drop_path_rate=0.5,
                                  drop_rate=0.5)
    _, plain = _small_pair("tiered_avgdown_se_grouped", seed=3, layers=(2, 1, 1, 2))
    check_resnet_drop_path(reference, ours, plain, image_batch(4, 21, 21, seed=3))


@pytest.mark.slow
@pytest.mark.parametrize("pool", ["avg", "max", "avgmax", "catavgmax"])
def test_head_api_matches_timm(pool):
    """Each global pool: logits; ``num_classes=0`` gives timm's pooled features (``forward_head(pre_logits)``);
    ``reset_classifier`` to another class count and pool; ``global_pool=''`` leaves the feature map."""
    x = image_batch(2, 27, 27, seed=4)
    reference, ours = _small_pair("tiered_avgdown_se_grouped", seed=4, global_pool=pool)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, 1e-5)
    args = _small_args("tiered_avgdown_se_grouped", global_pool=pool, num_classes=0)
    headless = resnet.ResNet(getattr(resnet, args.pop("block")), **args).eval()
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("fc.")})
    with torch.no_grad():
        pooled = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True).numpy()
    with engine.no_grad():
        features = headless(engine.from_numpy(x)).numpy()
    assert features.shape == pooled.shape == (2, 32 * 4 * (2 if pool == "catavgmax" else 1))
    assert_close(features, pooled, 1e-5)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    ours.reset_classifier(7, "catavgmax" if pool != "catavgmax" else "max")
    reference.reset_classifier(7, "catavgmax" if pool != "catavgmax" else "max")
    assert ours.num_classes == 7 and ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
    ours.reset_classifier(0, "")
    with engine.no_grad():
        unpooled = ours(engine.from_numpy(x)).numpy()
        assert np.array_equal(unpooled, ours.forward_features(engine.from_numpy(x)).numpy())
    with pytest.raises(ValueError, match="num_classes=0"):
        ours.reset_classifier(5, "")


@pytest.mark.slow
def test_in_chans_and_checkpoint_adaptation(tmp_path):
    """``in_chans=1``: the deep stem's first conv takes one channel; a 3-channel timm checkpoint loads through
    ``checkpoint_path`` with its first conv summed over RGB (``default_cfg['first_conv']`` is 'conv1.0'), and
    gives the outputs of timm's model with that conv."""
    torch.manual_seed(6)
    reference = randomize_norms(timm.create_model("resnet10t", pretrained=False), 6).eval()
    path = tmp_path / "resnet10t.npz"
    np.savez(path, **numpy_state(reference))
    ours = resnet.resnet10t(in_chans=1, checkpoint_path=str(path)).eval()
    assert ours.conv1[0].weight.shape == (24, 1, 3, 3)
    mono = timm.create_model("resnet10t", pretrained=False, in_chans=1).eval()
    state = reference.state_dict()
    state["conv1.0.weight"] = torch.from_numpy(adapt_input_conv(1, state["conv1.0.weight"].numpy()))
    mono.load_state_dict(state)
    out, ref = both_outputs(mono, ours, image_batch(2, 33, 33, seed=6, c=1))
    assert_close(out, ref, 1e-4)


@pytest.mark.slow
def test_features_only_matches_timm():
    """``features_only=True`` gives timm's five maps (strides 2..32: the stem's ReLU and the four stages), with
    its channels, reductions and values; ``out_indices`` picks some."""
    reference, ours = _named_pair("resnet10t", seed=7, features_only=True)
    assert ours.feature_info.channels() == reference.feature_info.channels() == [64, 64, 128, 256, 512]
    assert ours.feature_info.reduction() == reference.feature_info.reduction() == [2, 4, 8, 16, 32]
    outs, refs = both_outputs(reference, ours, image_batch(2, 35, 35, seed=7))
    assert len(outs) == len(refs) == 5
    for out, ref in zip(outs, refs):
        assert_close(out, ref, 1e-4)
    some = resnet.resnet10t(features_only=True, out_indices=(1, 3))
    assert some.feature_info.reduction() == [4, 16]
    assert "layer4" not in dict(some.named_children())


def test_intermediates_and_pruning_match_timm(one_thread):
    """forward_intermediates over timm's five levels (the stem's activation, then layer1..4): all, the last n alone
    (``norm`` a no-op), a list stopping early, the stem's level alone stopping early (after the stem's pool); an
    NHWC request refused; then prune_intermediate_layers on both, keeping all (the head too), up to layer2, then the
    stem alone: the same indices, outputs (the unpooled map once the head goes), num_features and head_hidden_size."""
    reference, ours = _small_pair("tiered_avgdown_se_grouped", seed=8)
    x = image_batch(2, 35, 33, seed=8)
    for kwargs in (dict(), dict(indices=2, norm=True, intermediates_only=True), dict(indices=[0, -2], stop_early=True),
                   dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    for indices, prune_head, width in ((4, False, 128), ([1, -3], True, 64), ([0], True, 16)):
        kept = ours.prune_intermediate_layers(indices, prune_head=prune_head)
        assert kept == reference.prune_intermediate_layers(indices, prune_head=prune_head)
        assert ours.num_features == reference.num_features == width
        assert ours.head_hidden_size == reference.head_hidden_size
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ref.shape
        assert_close(out, ref, 1e-5)
