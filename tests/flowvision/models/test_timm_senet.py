"""timm parity of the legacy SENets (legacy_senet154, legacy_seresnet18/34/50/101/152,
legacy_seresnext26/50/101_32x4d): every variant's configuration and layout, seeded initialisation (He-normal
convolutions drawn after the construction-time draws, shortcut projections before their blocks), eval outputs
(float32) of small models (grouped basic blocks with identity and projection shortcuts, SENet-154's
three-convolution stem and 3x3 projection shortcuts, SE-ResNeXt bottlenecks), float64 train-mode steps (outputs,
gradients, BatchNorm statistics) of a small model and of each block type, all with timm's weights loaded; the head's
dropout only in training, and the timm API (pre-logits, pooling options, reset_classifier, in_chans, features_only,
forward_intermediates, prune_intermediate_layers, bad arguments, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import senet as timm_senet

import engine
import flowvision.models as models
from flowvision.models._features import FeatureListNet
from flowvision.models.timm_families import senet
from model_parity import (both_outputs, check_dropout_only_in_training, check_feature_maps,
                          check_intermediates, check_layout, check_seeded_init, check_structure, check_train_step,
                          image_batch, numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["legacy_senet154", "legacy_seresnet18", "legacy_seresnet34", "legacy_seresnet50", "legacy_seresnet101",
         "legacy_seresnet152", "legacy_seresnext26_32x4d", "legacy_seresnext50_32x4d", "legacy_seresnext101_32x4d"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "ReLU", "Sigmoid", "Linear", "MaxPool2d")
BLOCKS = ("SEBottleneck", "SEResNetBottleneck", "SEResNeXtBottleneck", "SEResNetBlock")

# The stage widths are fixed (64 to 512 planes), so the small models have one block per stage (two in the first,
# for an identity shortcut behind a projection-free first block), few classes and, to keep them cheap, grouped 3x3
# convolutions. "grouped" has basic blocks; "stem3x3" SENet-154's three-convolution stem, its 128-channel stem
# width and 3x3 projection shortcuts; "resnext" SE-ResNeXt bottlenecks (projection shortcuts in every stage).
SMALL = {
    "grouped": dict(block="SEResNetBlock", layers=[2, 1, 1, 1], groups=64, reduction=16),
    "stem3x3": dict(block="SEResNetBlock", layers=[1, 1, 1, 1], groups=64, reduction=8, inplanes=128,
                    input_3x3=True, downsample_kernel_size=3, downsample_padding=1),
    "resnext": dict(block="SEResNeXtBottleneck", layers=[1, 1, 1, 1], groups=8, reduction=16),
}
SIZE = (35, 33)


def small_config(kind, module, **kwargs):
    """``SMALL[kind]`` with ``kwargs``, its block class taken from ``module`` (timm's senet or ours)."""
    config = {**SMALL[kind], "num_classes": 10, **kwargs}
    config["block"] = getattr(module, config["block"])
    return config


def randomize(model, seed):
    """Random parameters and BatchNorm statistics for a timm model built on the meta device and moved to empty CPU
    storage (its initialisation would cost more than the test), its batch counters zeroed."""
    randomize_parameters(model, seed, norms=True)
    for name, buffer in model.named_buffers():
        if name.endswith("num_batches_tracked"):
            buffer.zero_()
    return model


def empty_timm_model(build):
    """``build(device)``'s model built on the meta device and moved to empty CPU storage."""
    return build("meta").to_empty(device="cpu")


def ours_with(state, build):
    """Our model from ``build()`` with its random initialisation skipped and ``state`` loaded, in eval mode."""
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = build()
    ours.load_state_dict(state)
    return ours.eval()


def small_pair(kind="grouped", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` SENets, timm's with random weights loaded in ours, in eval mode."""
    reference = empty_timm_model(lambda device: timm_senet.SENet(**small_config(kind, timm_senet, **kwargs),
                                                                 device=device))
    randomize(reference, seed).eval()
    ours = ours_with(numpy_state(reference), lambda: senet.SENet(**small_config(kind, senet, **kwargs)))
    return reference, ours


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (block class, stage depths, groups, SE reduction,
    SENet-154's stem and shortcuts) and builds timm's layout: state_dict keys, order, shapes, dtypes, module tree,
    layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(senet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_senet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(senet, name)()
        getattr(timm_senet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs.pop("block").__name__ == timm_kwargs.pop("block").__name__, name
        assert ours_kwargs == timm_kwargs, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for init in ("kaiming_uniform_", "uniform_", "normal_", "kaiming_normal_", "constant_", "ones_", "zeros_"):
        monkeypatch.setattr(torch.nn.init, init, lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)
        assert ours.drop_rate == reference.drop_rate == 0.2


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights bit for bit (construction-time draws, then He-normal fan-out
    convolutions in module order, shortcut projections drawn before their blocks, unit BatchNorms) and leaves
    both random streams in step."""
    one_by_one = dict(downsample_kernel_size=1, downsample_padding=0)
    reference, ours = check_seeded_init(lambda: timm_senet.SENet(**small_config("stem3x3", timm_senet, **one_by_one)),
                                        lambda: senet.SENet(**small_config("stem3x3", senet, **one_by_one)), 3,
                                        lambda r: set())
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", ["stem3x3", "resnext"])
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size (the stem's max pooling rounds up), timm's weights loaded
    through numpy ("grouped": in the dropout, head and in_chans tests)."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode, a whole small model: outputs, input gradient, every parameter's gradient and the
    updated BatchNorm running statistics equal timm's."""
    reference, ours = small_pair(seed=4, drop_rate=0.0)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


@pytest.mark.parametrize("block", BLOCKS)
def test_blocks_train_step_matches_timm(block):
    """Each block type at narrow widths, float64 and train mode: a strided block with a 3x3 projection shortcut
    (grouped 3x3 convolutions where the type allows), then one with the identity shortcut; outputs, gradients and
    BatchNorm statistics equal timm's."""
    groups = 1 if block == "SEResNetBlock" else 8

    def build(module, device=None):
        block_cls = getattr(module, block)
        nn = torch.nn if module is timm_senet else engine.nn
        width = 16 * block_cls.expansion
        kwargs = {} if device is None else {"device": device}
        shortcut = nn.Sequential(nn.Conv2d(24, width, 3, stride=2, padding=1, bias=False, **kwargs),
                                 nn.BatchNorm2d(width, **kwargs))
        return nn.Sequential(block_cls(24, 16, groups, 4, 2, shortcut, **kwargs),
                             block_cls(width, 16, groups, 4, **kwargs))

    reference = randomize(empty_timm_model(lambda device: build(timm_senet, device)), 6)
    ours = ours_with(numpy_state(reference), lambda: build(senet))
    check_structure(ours, reference)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 11, 9, seed=7, c=24).astype(np.float64))


def test_dropout_only_in_training():
    """The head's functional dropout (timm's default rate 0.2 here 0.5): nothing dropped in eval mode; in training
    timm's mask after the same seed, another after another seed."""
    reference, ours = small_pair(seed=8, drop_rate=0.5)
    assert not [m for m in ours.modules() if isinstance(m, engine.nn.Dropout)]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=9))


def test_head_api_like_timm():
    """Pre-logits features with 'catavgmax' pooling; num_classes=0 gives timm's pooled features; reset_classifier
    to a new size and pooling (timm's widths and logits), and to neither (the last stage's map)."""
    reference, ours = small_pair(seed=10, global_pool="catavgmax")
    x = image_batch(2, *SIZE, seed=11)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 1024) and ours.head_hidden_size == reference.head_hidden_size == 1024
    assert_close(pre, pre_ref, TOL)
    headless = ours_with({k: v for k, v in numpy_state(reference).items() if not k.startswith("last_linear.")},
                         lambda: senet.SENet(**small_config("grouped", senet, num_classes=0, global_pool="catavgmax")))
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless, x)[0], pre_ref, TOL)
    reference.reset_classifier(5, "max")
    ours.reset_classifier(5, "max")
    check_structure(ours, reference)
    assert ours.head_hidden_size == reference.head_hidden_size == 512 and not ours.get_classifier().training
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    assert ours.num_classes == 0 and isinstance(ours.get_classifier(), engine.nn.Identity)
    with engine.no_grad():
        unpooled = ours(engine.from_numpy(x)).numpy()
        assert np.array_equal(unpooled, ours.forward_features(engine.from_numpy(x)).numpy())
    assert unpooled.shape == (2, 512, 2, 1)


def test_in_chans_1_and_bad_arguments():
    """A one-channel model matches timm's; an unknown pooling and a channels-last intermediate format are
    refused."""
    reference, ours = small_pair(seed=12, in_chans=1)
    assert tuple(ours.layer0.conv1.weight.shape) == (64, 1, 7, 7)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=13, c=1))
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        senet.SENet(**small_config("grouped", senet, global_pool="bogus"))
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.zeros(1, 1, 35, 33), output_fmt="NHWC")


@pytest.mark.parametrize("out_indices", [None, (1, 4)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's FeatureListNet taps (the stem before its max pooling
    and the four stages; all five by default), its feature_info, state_dict keys and feature maps."""
    kwargs = dict(SMALL["grouped"], block=senet.SEResNetBlock, features_only=True)
    timm_kwargs = dict(kwargs, block=timm_senet.SEResNetBlock)
    if out_indices is not None:
        kwargs["out_indices"] = timm_kwargs["out_indices"] = out_indices
    reference = empty_timm_model(lambda device: timm_senet._create_senet("legacy_seresnet18", device=device,
                                                                         **timm_kwargs))
    randomize(reference, 14).eval()
    ours = ours_with(numpy_state(reference),
                     lambda: senet._create_senet("legacy_seresnet18", False, True, {}, kwargs))
    assert type(ours) is FeatureListNet
    assert list(ours.state_dict()) == list(reference.state_dict())
    maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=15), 5 if out_indices is None else 2,
                              TOL)
    assert maps[-1].shape == (2, 512, 2, 1)


def test_intermediates_and_pruning_like_timm():
    """forward_intermediates (the stem before pooling and the stages; picked, the last n, stopping early) and
    prune_intermediate_layers (stages after the last tap and the classifier gone, num_features that tap's width)
    give timm's maps and outputs."""
    reference, ours = small_pair(seed=16)
    x = image_batch(2, *SIZE, seed=17)
    for kwargs in (dict(indices=[0, 2]), dict(indices=2), dict(indices=[1], stop_early=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    for indices in ([1, 2], [0]):
        reference, ours = small_pair(seed=16)
        assert ours.prune_intermediate_layers(indices) == reference.prune_intermediate_layers(indices)
        check_structure(ours, reference)
        assert (ours.num_features, ours.head_hidden_size) == (reference.num_features, reference.head_hidden_size)
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ref.shape
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant under its timm name and module, all of timm's ``senet`` models with
    ImageNet-1k weights."""
    names = models.list_models(module="senet")
    assert names == timm.list_models(module="senet") == NAMES
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("legacy_se*")}
