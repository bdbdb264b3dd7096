"""timm parity of VoVNet (ese_vovnet19b_dw, ese_vovnet39b, ese_vovnet57b, and the untrained vovnet39a/57a,
ese_vovnet19b_slim/slim_dw, ese_vovnet99b, eca_vovnet39b and ese_vovnet39b_evos): every variant's configuration and
layout, seeded initialisation, eval outputs (float32) of small models of each kind (full 3x3 and depthwise-separable
chains, the depthwise blocks' 1x1 reduction, residual blocks, effective squeeze-and-excitation, ECA, EvoNorm-S0 as
norm and activation, ceil-mode max pools, stride-4 and stride-2 stems), float64 train-mode outputs, gradients and
BatchNorm statistics, all with timm's weights loaded; stochastic depth and dropout, and the timm API (pre-logits,
pooling, reset_classifier, in_chans, configuration overrides, bad arguments, features_only, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.layers import create_norm_act_layer
from timm.layers import evo_norm as timm_evo_norm
from timm.models import vovnet as timm_vovnet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import vovnet
from flowvision.models.timm_families.resnetv2 import EvoNorm2dS0
from model_parity import (both_outputs, check_drop_rates, check_dropout_only_in_training, check_feature_maps,
                          check_head_api, check_intermediates, check_layout, check_seeded_init, check_structure,
                          check_train_step, features_only_pair, image_batch, numpy_state, randomize_norms,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["ese_vovnet19b_dw", "ese_vovnet39b", "ese_vovnet57b"]
# timm's entrypoints without published weights, registered too: V1 models, slim, deeper, ECA and EvoNorm ones
UNTRAINED = ["vovnet39a", "vovnet57a", "ese_vovnet19b_slim_dw", "ese_vovnet19b_slim", "ese_vovnet99b",
             "eca_vovnet39b", "ese_vovnet39b_evos"]
TOL = 1e-4
PRINTED = ("ConvNormAct", "SeparableConvNormAct", "EffectiveSEModule", "EcaModule", "Conv1d", "Sigmoid",
           "EvoNorm2dS0", "Conv2d", "BatchNormAct2d", "ReLU", "Hardsigmoid", "MaxPool2d", "Flatten", "Dropout",
           "Linear")

# Small configurations, as keyword arguments that override a variant's: full 3x3 chains of two with residual
# blocks (stages of 1, 2, 1, 2 blocks); depthwise-separable chains whose blocks narrow their input first but in the
# first stage, after a stride-2 stem (four pooled stages).
SMALL = {
    "ese": dict(stem_chs=[8, 8, 16], stage_conv_chs=[8, 12, 16, 16], stage_out_chs=[16, 24, 32, 40],
                layer_per_block=2, block_per_stage=[1, 2, 1, 2], residual=True, depthwise=False, attn="ese"),
    "dw": dict(stem_chs=[8, 8, 8], stage_conv_chs=[8, 12, 16, 16], stage_out_chs=[16, 24, 32, 40],
               layer_per_block=3, block_per_stage=[1, 1, 1, 1], residual=True, depthwise=True, attn="ese",
               stem_stride=2),
    "eca": dict(stem_chs=[8, 8, 16], stage_conv_chs=[8, 8, 16, 16], stage_out_chs=[16, 16, 32, 40],
                layer_per_block=2, block_per_stage=[1, 1, 1, 1], residual=True, depthwise=False, attn="eca"),
    "evos": dict(stem_chs=[32, 32, 32], stage_conv_chs=[32, 32, 32, 32], stage_out_chs=[32, 64, 64, 64],
                 layer_per_block=2, block_per_stage=[1, 1, 1, 1]),
}
CFG = vovnet.MODEL_CFGS["ese_vovnet39b"]
SIZE = (37, 43)


def timm_evonorm(num_features, **kwargs):
    """timm's ese_vovnet39b_evos norm: EvoNorm-S0 (32 groups) from its norm-and-activation factory."""
    return create_norm_act_layer("evonorms0", num_features, jit=False, **kwargs)


def norm_args(kind):
    """(timm's, our) ``norm_layer`` argument of the small ``kind``: EvoNorm-S0 for 'evos', none (BatchNorm and
    ReLU) for the others."""
    if kind == "evos":
        return dict(norm_layer=timm_evonorm), dict(norm_layer=EvoNorm2dS0)
    return {}, {}


def randomize(model, seed):
    """timm's ``model`` with random BatchNorm statistics and affines and random EvoNorm parameters (the unit and
    zero defaults would hide bugs)."""
    randomize_norms(model, seed)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, timm_evo_norm.EvoNorm2dS0):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
                m.v.copy_(torch.rand(m.v.shape, generator=g) + 0.5)
    return model


def group_std_float64(x, groups=32, eps=1e-5, flatten=False):
    """timm's EvoNorm group standard deviation without its cast to float32 (a float64 run stays float64)."""
    batch, channels, height, width = x.shape
    grouped = x.reshape(batch, groups, channels // groups, height, width)
    std = grouped.var(dim=(2, 3, 4), unbiased=False, keepdim=True).add(eps).sqrt()
    return std.expand(grouped.shape).reshape(batch, channels, height, width)


def small_pair(kind="ese", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights with random norms loaded in ours, in eval mode."""
    timm_norm, our_norm = norm_args(kind)
    torch.manual_seed(seed)
    reference = randomize(timm_vovnet.VovNet(CFG, **SMALL[kind], **timm_norm, **kwargs), seed).eval()
    ours = vovnet.VovNet(CFG, **SMALL[kind], **our_norm, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree and class names, layer printouts, feature_info, num_features, head_hidden_size and
    default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(vovnet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_vovnet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES + UNTRAINED:
        getattr(vovnet, name)()
        getattr(timm_vovnet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES + UNTRAINED, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "model_cfg", "norm_layer")}
        norm_layer = ours_kwargs.pop("norm_layer", None)
        assert ours_kwargs == expected | {"cfg": timm_kwargs["model_cfg"]}, name
        assert timm_kwargs["feature_cfg"] == dict(flatten_sequential=True), name
        if "norm_layer" in timm_kwargs:  # timm's EvoNorm factory function: the same norm, 32 groups
            ours, theirs = norm_layer(64, apply_act=True), timm_kwargs["norm_layer"](64, apply_act=True, act_kwargs={})
            assert (type(ours).__name__, ours.groups, ours.eps) == (type(theirs).__name__, theirs.groups, theirs.eps)
        else:
            assert norm_layer is None, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # timm's random draws on the meta device cost more than building its models: skipped as ours are
    for init_name in ("kaiming_normal_", "kaiming_uniform_", "uniform_"):
        monkeypatch.setattr(torch.nn.init, init_name, lambda tensor, *args, **kwargs: tensor)
    for name in NAMES + UNTRAINED:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_and_eval_outputs_match_timm(kind):
    """The same seed gives timm's initial weights bit for bit (He-normal convolutions, PyTorch's default biases and
    classifier weight, ECA's PyTorch default, EvoNorm's units and zeros) and leaves both random streams in step;
    with random norms loaded, float32 logits of a batch of 2 at an odd size are timm's."""
    timm_norm, our_norm = norm_args(kind)
    reference, ours = check_seeded_init(lambda: timm_vovnet.VovNet(CFG, num_classes=10, **SMALL[kind], **timm_norm),
                                        lambda: vovnet.VovNet(CFG, num_classes=10, **SMALL[kind], **our_norm),
                                        3, lambda model: set(), kind)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info
    randomize(reference, 1).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", list(SMALL))
def test_train_mode_gradients_and_statistics_match_timm(kind, monkeypatch):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's (timm's EvoNorm kept in float64, where it computes its group statistics in float32)."""
    monkeypatch.setattr(timm_evo_norm, "group_std", group_std_float64)
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 33, 35, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates, block by block, no module where the rate is 0) and the head's dropout:
    nothing dropped in eval mode, timm's masks after the same seed in training."""
    reference, ours = small_pair("ese", seed=6, drop_rate=0.5, drop_path_rate=0.5)
    rates = check_drop_rates(reference, ours)
    assert len(rates) == 5 and rates[-1] == pytest.approx(0.5)
    assert ours.stages[0].blocks[0].drop_path is None
    x = image_batch(2, 33, 35, seed=7)
    out = check_dropout_only_in_training(reference, ours, x)
    _, plain = small_pair("ese", seed=6)
    assert np.array_equal(out, both_outputs(reference, plain, x)[0])


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits features, ``num_classes=0``, reset_classifier to wider and to no pooling, as timm's, on a
    one-channel model (timm's outputs); an output stride other than 32, an unknown keyword and a depthwise residual
    block that narrows its input are refused, as timm refuses them; so is attention other than ESE and ECA (ours has
    only those its variants use)."""
    reference, ours = small_pair("ese", seed=9, in_chans=1)
    x = image_batch(2, 33, 35, seed=10, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    headless = vovnet.VovNet(CFG, **SMALL["ese"], in_chans=1, num_classes=0)
    check_head_api(reference, ours, headless.eval(), x, 40, (2, 40, 1, 1))
    with pytest.raises(ValueError, match="output_stride"):
        vovnet.VovNet(CFG, output_stride=16)
    with pytest.raises(TypeError, match="stage_chs"):
        vovnet.VovNet(CFG, stage_chs=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="attn"):
        vovnet.VovNet(CFG, attn="cbam")
    with pytest.raises(ValueError, match="residual"):
        vovnet.VovNet(CFG, **SMALL["dw"] | dict(block_per_stage=[1, 2, 1, 1]))


@pytest.mark.parametrize("kind, out_indices", [("ese", None), ("dw", (0, -2))])
def test_features_only_matches_timm(kind, out_indices):
    """features_only through the entrypoints (their configuration made small): timm's five taps by default (the
    stem's second or third convolution, the four stages), its feature_info, its flattened module names
    (``stem_1``, ``stages_2``) and state dict, and its feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    reference, ours = features_only_pair("ese_vovnet39b", randomize_norms, 11, **SMALL[kind], **kwargs)
    assert type(ours) is FlatFeatureListNet
    assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=12), 5 if out_indices is None else 2, TOL)


@pytest.mark.parametrize("prune_to", [2, 0])
def test_forward_intermediates_and_pruning_like_timm(prune_to):
    """forward_intermediates (the stem before its last convolution and the four stages; all, the last two,
    stop_early) and prune_intermediate_layers (the stages after the last one taken dropped, and the stem's last
    convolution where only the stem is kept; the head reduced to the identity) as timm's."""
    reference, ours = small_pair("ese", seed=16)
    x = image_batch(2, 33, 35, seed=17)
    final, intermediates = check_intermediates(reference, ours, x, TOL)
    assert len(intermediates) == 5 and np.array_equal(final, intermediates[-1])
    check_intermediates(reference, ours, x, TOL, indices=2)
    check_intermediates(reference, ours, x, TOL, indices=[0, prune_to], stop_early=True, intermediates_only=True)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([prune_to]) == reference.prune_intermediate_layers([prune_to]) == [prune_to]
    check_structure(ours, reference)
    assert ours.num_features == reference.num_features and ours.head_hidden_size == reference.head_hidden_size
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == ref.shape and out.shape[1] == ours.feature_info[prune_to]["num_chs"]
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's ``vovnet`` models under their timm names and module: those with 1k weights
    and the untrained vovnet39a/57a, slim, ese_vovnet99b, ECA and EvoNorm ones, registered too."""
    names = models.list_models(module="vovnet")
    assert names == timm.list_models(module="vovnet")
    assert set(names) == set(NAMES + UNTRAINED)
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("*vovnet*")}
