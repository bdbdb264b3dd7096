"""timm parity of the normalizer-free networks (dm_nfnet_f0..f6, nfnet_f0..f7, nfnet_l0, eca_nfnet_l0..l3,
nf_regnet_b0..b5, nf_resnet26/50/101, nf_seresnet26/50/101, nf_ecaresnet26/50/101): every variant's configuration,
the layout of one model of each kind and of every untrained variant under 100M parameters, built without weights, seeded
initialisation, float32 eval outputs and float64 train-mode outputs and gradients of small configurations covering
each stem (deep quad, 3x3, 7x7 with pooling), convolution (scaled weight standardisation, with TensorFlow "SAME"
padding), activation gain (in the weights, in the activations), attention (SE on the output or inside the
bottleneck, ECA), skipinit and dilation (output strides 16 and 8), all with timm's weights loaded; drop-path and
dropout, the head API, ``in_chans``, ``features_only`` and the registry."""
from dataclasses import asdict

import numpy as np
import pytest
import timm
import timm.models.nfnet as timm_nfnet
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import nfnet
from model_parity import (both_outputs, capture_builder, check_dropout_only_in_training, check_intermediates,
                          check_layout, check_pruned, check_train_step, image_batch, numpy_state, pre_logits,
                          skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); many small ops, so one BLAS thread on each side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

# the variants with ImageNet-1k weights in timm
TRAINED_NAMES = ["dm_nfnet_f0", "dm_nfnet_f1", "dm_nfnet_f2", "dm_nfnet_f3", "dm_nfnet_f4", "dm_nfnet_f5",
                 "dm_nfnet_f6", "eca_nfnet_l0", "eca_nfnet_l1", "eca_nfnet_l2", "nf_regnet_b1", "nf_resnet50",
                 "nfnet_l0"]
# timm's untrained variants, new configurations of the same layers (built from scratch or from one's own checkpoint)
UNTRAINED_NAMES = ["eca_nfnet_l3", "nf_ecaresnet26", "nf_ecaresnet50", "nf_ecaresnet101", "nf_regnet_b0",
                   "nf_regnet_b2", "nf_regnet_b3", "nf_regnet_b4", "nf_regnet_b5", "nf_resnet26", "nf_resnet101",
                   "nf_seresnet26", "nf_seresnet50", "nf_seresnet101", "nfnet_f0", "nfnet_f1", "nfnet_f2", "nfnet_f3",
                   "nfnet_f4", "nfnet_f5", "nfnet_f6", "nfnet_f7"]
NAMES = TRAINED_NAMES + UNTRAINED_NAMES
# one of each kind, built without weights on both sides (DeepMind's F3, 255M parameters, is never built otherwise)
LAYOUT_NAMES = ["dm_nfnet_f3", "eca_nfnet_l0", "nf_regnet_b1", "nf_resnet50", "nfnet_l0"]
# the untrained variants under 100M parameters (nfnet_f1..f7 and eca_nfnet_l3, the largest, only by configuration)
UNTRAINED_LAYOUT_NAMES = ["nf_ecaresnet26", "nf_ecaresnet50", "nf_ecaresnet101", "nf_regnet_b0", "nf_regnet_b2",
                          "nf_regnet_b3", "nf_regnet_b4", "nf_regnet_b5", "nf_resnet26", "nf_resnet101",
                          "nf_seresnet26", "nf_seresnet50", "nf_seresnet101", "nfnet_f0"]
PRINTED = {"ScaledStdConv2d", "ScaledStdConv2dSame", "GammaAct", "ReLU", "SiLU", "Sigmoid", "Conv2d", "Conv1d",
           "MaxPool2d", "AvgPool2d", "Dropout", "Linear"}
TOL = 1e-5
SIZE = (29, 27)

_TINY = dict(depths=(1, 2, 1, 1), channels=(16, 32, 48, 64))
# Small configurations: (NfCfg fields, other model arguments)
SMALL = {
    # DeepMind's NFNet: four-convolution stem, "SAME" padding, GELU with its gain in the activations, skipinit, SE
    "dm": (dict(_TINY, stem_type="deep_quad", stem_chs=16, group_size=8, extra_conv=True, gamma_in_act=True,
                same_padding=True, skipinit=True, num_features=96, act_layer="gelu", attn_layer="se",
                attn_kwargs=dict(rd_ratio=0.5)), {}),
    # timm's light NFNet: SiLU with its gain in the weights, ECA, a quarter-width bottleneck
    "eca": (dict(_TINY, stem_type="deep_quad", stem_chs=16, group_size=8, bottle_ratio=0.25, extra_conv=True,
                 num_features=96, act_layer="silu", attn_layer="eca", attn_kwargs={}), {}),
    # NF-RegNet: 3x3 stem, inverted bottleneck from the input width with SE inside, width factor; dilated last stage
    "reg": (dict(_TINY, stem_type="3x3", group_size=8, width_factor=0.75, bottle_ratio=2.25, num_features=80,
                 reg=True, attn_layer="se", attn_kwargs=dict(rd_ratio=0.5)), dict(output_stride=16)),
    # NF-ResNet: 7x7 stem and max pool, ReLU, no attention; the last two stages dilated
    "res": (dict(_TINY, stem_type="7x7_pool", stem_chs=16, bottle_ratio=0.25, act_layer="relu", attn_kwargs={}),
            dict(output_stride=8)),
}


def randomize(model, seed):
    """timm's ``model`` with random convolution gains (the last one of each block, or skipinit's, starts at zero and
    would hide the whole branch) and biases."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gain"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
    return model


def build_pair(config, seed=0, **overrides):
    """timm's and our small ``config`` models, each built right after ``seed`` is set (not randomised)."""
    fields, kwargs = SMALL[config]
    kwargs = dict(kwargs, num_classes=10, **overrides)
    torch.manual_seed(seed)
    reference = timm_nfnet.NormFreeNet(timm_nfnet.NfCfg(**fields), **kwargs)
    engine.manual_seed(seed)
    ours = nfnet.NormFreeNet(nfnet.NfCfg(**fields), **kwargs)
    return reference, ours


def small_pair(config, seed=0, **overrides):
    """timm's small model (randomised) and ours with its weights, both in eval mode."""
    reference, ours = build_pair(config, seed, **overrides)
    randomize(reference, seed).eval()
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _hyper_parameters(model):
    """The settings printouts leave out: each standardised convolution's scale, eps and dynamic padding, each
    gamma activation's function, gain and in-place flag, each block's alpha, beta and attention gain."""
    settings = []
    for m in model.modules():
        kind = type(m).__name__
        if kind.startswith("ScaledStdConv2d"):
            settings.append((kind, m.scale, m.eps, getattr(m, "same_pad", None)))
        elif kind == "GammaAct":
            settings.append((kind, m.act_fn.__name__, m.gamma, m.inplace))
        elif kind == "NormFreeBlock":
            settings.append((kind, m.alpha, m.beta, m.attn_gain))
    return settings


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands its class timm's architecture (every NfCfg field); one model of each kind has timm's
    layout: state_dict keys in order, shapes and dtypes, module names (but for SE's no-op norm slot), printouts of
    the layers, the settings printouts leave out, feature_info, num_features, head_hidden_size and default_cfg (both
    sides' random initialisation skipped: timm's model is on the meta device, ours on untouched storage)."""
    ours_calls = capture_builder(monkeypatch, nfnet, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_nfnet, "build_model_with_cfg")
    for name in NAMES:
        getattr(nfnet, name)()
        getattr(timm_nfnet, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs["progress"] and not set(ours_kwargs) - {"progress", "cfg"}, name
        assert asdict(ours_kwargs["cfg"]) == asdict(timm_kwargs["model_cfg"]), name
    monkeypatch.undo()
    check_layouts(monkeypatch, LAYOUT_NAMES)


def check_layouts(monkeypatch, names):
    """Each model of ``names`` has timm's layout (``check_layout``, but for SE's no-op norm slot) and the settings
    printouts leave out; both sides' random initialisation skipped: timm's model is on the meta device, ours on
    untouched storage. The class count is given, as ours defaults to the class's for a model without weights."""
    skip_random_init(monkeypatch)
    for init in ("kaiming_normal_", "kaiming_uniform_", "uniform_", "normal_", "constant_", "zeros_"):
        monkeypatch.setattr(torch.nn.init, init, lambda tensor, *args, **kwargs: tensor)
    for name in names:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        ours = models.create_model(name, num_classes=1000)
        check_layout(ours, reference, (".bn",), PRINTED)
        assert _hyper_parameters(ours) == _hyper_parameters(reference), name


def test_untrained_variants_have_timm_layout(monkeypatch):
    """timm's untrained variants under 100M parameters (NF-ResNets with and without SE or ECA, NF-RegNet-B0..B5,
    nfnet_f0) have timm's layout, as ``test_every_variant_has_timm_configuration_and_layout`` checks it."""
    check_layouts(monkeypatch, UNTRAINED_LAYOUT_NAMES)


def test_seeded_init_equals_timm():
    """After the same seed, our weights are timm's bit for bit (convolutions He-normal over their fan-in with zero
    biases, ECA's 1-d convolutions PyTorch's default, the classifier N(0, 0.01^2), unit gains but zero ones on each
    block's last convolution, or on skipinit's scalar) and both random streams end in step."""
    for config in SMALL:
        reference, ours = build_pair(config, seed=3)
        expected = numpy_state(reference)
        state = {k: v.numpy() for k, v in ours.state_dict().items()}
        assert list(state) == list(expected), config
        for key, value in expected.items():
            assert state[key].dtype == value.dtype and np.array_equal(state[key], value), (config, key)
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy()), config
        assert ours.feature_info == reference.feature_info, config
        assert _hyper_parameters(ours) == _hyper_parameters(reference), config


def test_eval_outputs_match_timm():
    """float32 logits of a batch of 2 at an odd size, timm's randomised weights loaded through numpy."""
    x = image_batch(2, *SIZE, seed=1)
    for config in SMALL:
        reference, ours = small_pair(config, seed=2)
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2, config
        assert_close(out, ref, TOL, what=config)


@pytest.mark.parametrize("config", ["dm", "eca", "reg"])
def test_train_mode_gradients_match_timm(config):
    """float64, train mode: outputs, input gradient and every parameter's gradient (gains, skipinit's scalar,
    attention layers) equal timm's."""
    reference, ours = small_pair(config, seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """drop_path_rate grows per block as timm's (0 at the first block); in eval mode nothing is dropped; in
    training both draw timm's masks after the same seed."""
    reference, ours = small_pair("res", seed=6, drop_path_rate=0.5, drop_rate=0.5)
    _, plain = small_pair("res", seed=6)
    rates = [block.drop_path.p if hasattr(block.drop_path, "p") else 0.0 for stage in ours.stages for block in stage]
    expected = [getattr(block.drop_path, "drop_prob", 0.0) for stage in reference.stages for block in stage]
    assert rates == pytest.approx(expected) and rates[0] == 0.0 and rates[-1] == pytest.approx(0.5)
    x = image_batch(2, *SIZE, seed=7)
    plain_out, _ = both_outputs(reference, plain, x)
    assert np.array_equal(check_dropout_only_in_training(reference, ours, x, TOL, TOL), plain_out)


def test_head_api_and_in_chans_like_timm():
    """Pre-logits features and logits with 'catavgmax' pooling, ``num_classes=0``, reset_classifier to new pooling
    and size and to none, as timm's; a one-channel model matches timm's."""
    reference, ours = small_pair("reg", seed=8, global_pool="catavgmax")
    x = image_batch(2, *SIZE, seed=9)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 2 * ours.num_features) and ours.head_hidden_size == reference.head_hidden_size
    assert_close(pre, pre_ref, TOL)
    headless = nfnet.NormFreeNet(nfnet.NfCfg(**SMALL["reg"][0]), num_classes=0, global_pool="catavgmax",
                                 **SMALL["reg"][1])
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc")})
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    reference.reset_classifier(5, "max")
    ours.reset_classifier(5, "max")
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
        k: tuple(v.shape) for k, v in reference.state_dict().items()}
    assert ours.head_hidden_size == reference.head_hidden_size == ours.num_features
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
    reference, ours = small_pair("eca", seed=10, in_chans=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=11, c=1))
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("name,config,out_indices", [("dm_nfnet_f0", "dm", None), ("nf_resnet50", "res", (0, 2))])
def test_features_only_matches_timm(name, config, out_indices):
    """features_only through the entrypoints (small widths and depths passed as NfCfg overrides, as timm takes
    them): timm's taps (the stem's penultimate convolution or its only one, each stage, final_conv before the final
    activation), feature_info, state_dict keys (``stem_conv1``, ``stages_0``...) and feature maps."""
    kwargs = dict(SMALL[config][0], features_only=True)
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    torch.manual_seed(12)
    reference = randomize(timm.create_model(name, **kwargs), 12).eval()
    ours = getattr(nfnet, name)(**kwargs)
    assert type(ours) is FlatFeatureListNet
    ours.load_state_dict(numpy_state(reference))
    assert list(ours.state_dict()) == list(reference.state_dict())
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == reference.feature_info.get(key)
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=13))
    assert len(outs) == len(refs) == (5 if out_indices is None else 2)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates gives timm's five maps (the deep stem's penultimate convolution's, each stage's, the
    last after final_conv and before the final activation), picking all, the last n or a list, stopping early;
    prune_intermediate_layers keeps everything with the head, or cuts the stem after its tap (stages, final_conv,
    the final activation and the head gone), as timm's does."""
    x = image_batch(2, *SIZE, seed=20)
    reference, ours = small_pair("eca", seed=20)
    for kwargs in (dict(), dict(indices=2, intermediates_only=True), dict(indices=[0, 3], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert check_pruned(reference, ours, x, 1, [4], prune_head=False).shape == (2, 10)
    assert check_pruned(reference, ours, x, [-3, 0], [2, 0]).shape == (2, 32, 4, 4)
    check_intermediates(reference, ours, x, TOL, indices=[0, 2])
    assert check_pruned(reference, ours, x, [0], [0]).shape == (2, 8, 15, 14)


def test_one_pixel_inputs_and_bad_arguments():
    """Every layer pads, so a 1x1 image runs as in timm (here with GELU's gain in the weights, as timm's nfnet_f
    models have it); unknown activations, attention and stems are refused."""
    reference, ours = small_pair("dm", seed=14, gamma_in_act=False)
    assert repr(ours.final_act) == repr(reference.final_act) == "GELU()"
    out, ref = both_outputs(reference, ours, image_batch(1, 1, 1, seed=15))
    assert_close(out, ref, TOL)
    for field, value in (("act_layer", "mish"), ("attn_layer", "cbam"), ("stem_type", "deep_quad_pool")):
        with pytest.raises(ValueError, match=field):
            nfnet.NormFreeNet(nfnet.NfCfg(**dict(SMALL["res"][0], **{field: value})))


def test_list_models():
    """The registry lists every model of timm's ``nfnet`` module under its name and module: those with ImageNet-1k
    weights and the untrained variants too (test_nfnet is tests/flowvision/models/test_timm_test_models.py's)."""
    assert models.list_models(module="nfnet") == timm.list_models(module="nfnet")
    with_weights = {tag.split(".")[0] for tag in timm.list_pretrained("*nf*")}
    expected = [n for n in timm.list_models(module="nfnet") if n in with_weights and n != "test_nfnet"]
    assert expected == sorted(TRAINED_NAMES) and not with_weights & set(UNTRAINED_NAMES)
    assert set(models.list_models(module="nfnet", exclude_filters="test_*")) == set(NAMES)
