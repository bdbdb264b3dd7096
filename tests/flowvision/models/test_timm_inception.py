"""timm's Inception-v4, Inception-ResNet-v2 and Aligned Xception against timm itself: the layout of every variant
(with and without options), eval numerics of whole models, float64 train-mode outputs, gradients and BatchNorm
statistics (per block for the fixed-width Inceptions, a small configuration for Xception), stochastic depth and
dropout, seeded initialisation, and the timm API (pre-logits, reset_classifier, in_chans, features_only,
forward_intermediates and prune_intermediate_layers)."""
import copy
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import xception_aligned as timm_xception

import engine
import flowvision.models as models
from flowvision.models._features import FeatureHookNet, FeatureListNet, FlatFeatureListNet
from flowvision.models.timm_families import xception_aligned
from flowvision.models.timm_families._layers import SelectAdaptivePool2d
from flowvision.models.timm_families.inception_resnet_v2 import InceptionResnetV2
from flowvision.models.timm_families.inception_v4 import InceptionV4
from model_parity import (both_outputs, check_intermediates, check_structure, check_train_step, image_batch,
                          numpy_state, randomize_norms, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["inception_v4", "inception_resnet_v2", "xception41", "xception65", "xception71", "xception41p",
         "xception65p"]
MODULES = {"inception_v4": ["inception_v4"], "inception_resnet_v2": ["inception_resnet_v2"],
           "xception_aligned": ["xception41", "xception41p", "xception65", "xception65p", "xception71"]}
# the smallest odd-sized inputs: the Inceptions' unpadded convolutions need 75 pixels; Xception pads (any size)
SIZES = {"inception_v4": (77, 75), "inception_resnet_v2": (77, 75), "xception41": (35, 33),
         "xception71": (35, 33), "xception41p": (35, 33)}
TOL = 1e-4
# Aligned Xception shrunk to four narrow blocks of each kind: a projection shortcut, an identity one, a strided
# block, one dilated by output_stride=8 and the exit block without skip
SMALL_XCEPTION = [
    dict(in_chs=64, out_chs=16, stride=2),
    dict(in_chs=16, out_chs=16, stride=1),
    dict(in_chs=16, out_chs=(16, 24, 24), stride=2),
    dict(in_chs=24, out_chs=24, stride=2),
    dict(in_chs=24, out_chs=(32, 32, 40), stride=1, no_skip=True),
]


def _reference(name, seed=0, **kwargs):
    """timm's model, seeded, with random BatchNorm statistics and affines (the defaults 0/1 hide bugs), in eval."""
    torch.manual_seed(seed)
    return randomize_norms(timm.create_model(name, **kwargs), seed).eval()


def _ours(name, state, **kwargs):
    """Our model built without random init, ``state`` (numpy arrays) loaded strictly, in eval mode."""
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        model = models.create_model(name, **kwargs)
    model.load_state_dict(state)
    return model.eval()


_PAIRS = {}


def _pair(name):
    """timm's model and ours with its weights, built once per session."""
    if name not in _PAIRS:
        reference = _reference(name)
        _PAIRS[name] = reference, _ours(name, numpy_state(reference))
    return _PAIRS[name]


def _small_xception_pair(preact, seed=0, **kwargs):
    """A small Aligned Xception from timm's class and ours, same random weights (norms randomised), in eval."""
    cfg = [dict(b, start_with_relu=False) if b.get("no_skip") and not preact else dict(b) for b in SMALL_XCEPTION]
    torch.manual_seed(seed)
    reference = timm_xception.XceptionAligned(copy.deepcopy(cfg), output_stride=8, preact=preact, num_classes=10,
                                              norm_layer=partial(torch.nn.BatchNorm2d, eps=1e-3), **kwargs)
    randomize_norms(reference, seed).eval()
    ours = xception_aligned.XceptionAligned(cfg, output_stride=8, preact=preact, num_classes=10, norm_eps=1e-3,
                                            **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _check_train_step(reference, ours, x):
    """float64, train mode: outputs, the input gradient, every parameter's gradient (relative to its own size, or
    to 1e-3 of the largest gradient where the exact one is 0) and the updated BatchNorm statistics."""
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, x)


# ---- structure and registration ------------------------------------------------------------------------------


@pytest.mark.parametrize("name, kwargs", [(name, {}) for name in NAMES] + [
    ("inception_v4", dict(in_chans=1, num_classes=0)),
    ("inception_resnet_v2", dict(in_chans=5, global_pool="catavgmax", num_classes=7)),
    ("xception65", dict(output_stride=16, in_chans=1)),
    ("xception71", dict(output_stride=8, global_pool="max")),
    ("xception65p", dict(drop_path_rate=0.2, drop_rate=0.3, global_pool="")),
])
def test_layout_matches_timm(name, kwargs):
    """state_dict keys in order, shapes, dtypes, module names (and classes), BatchNorm eps and feature_info of
    every variant against timm's built on the meta device; the stochastic depth of each block too."""
    with torch.device("meta"):
        reference = timm.create_model(name, **kwargs)
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = models.create_model(name, **kwargs)
    check_structure(ours, reference, types="drop_path_rate" not in kwargs)
    ref_eps = [m.eps for m in reference.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert [m.eps for m in ours.modules() if isinstance(m, engine.nn.BatchNorm2d)] == ref_eps
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == reference.num_features
    assert type(ours).default_cfg["first_conv"] == reference.pretrained_cfg["first_conv"]
    assert type(ours).default_cfg["classifier"] == reference.pretrained_cfg["classifier"]
    ref_drop = [(n, m.drop_prob) for n, m in reference.named_modules() if type(m).__name__ == "DropPath"]
    assert [(n, m.p) for n, m in ours.named_modules() if type(m).__name__ == "StochasticDepth"] == ref_drop


def test_registered_names_and_modules():
    assert set(models.list_models("xception*")) >= set(MODULES["xception_aligned"])
    assert set(models.list_models("inception_*")) >= {"inception_v4", "inception_resnet_v2"}
    for module, names in MODULES.items():
        assert models.list_models(module=module) == names
    assert set(timm.list_models(["inception_v4", "inception_resnet_v2", "xception*"])) == set(NAMES)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights bit for bit (both use the framework's default inits, drawn in
    the same order), and leaves both generators in step."""
    for name in ("inception_resnet_v2", "xception41p"):
        engine.manual_seed(5)
        ours = models.create_model(name)
        torch.manual_seed(5)
        reference = timm.create_model(name)
        our_sd = ours.state_dict()
        for key, value in reference.state_dict().items():
            assert np.array_equal(our_sd[key].numpy(), value.numpy()), key
        assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())


# ---- numerics ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SIZES))
def test_eval_outputs_match_timm(name):
    """Logits of a batch of 2 at the smallest odd size, float32, timm's weights (random norms) loaded."""
    reference, ours = _pair(name)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZES[name], seed=1))
    assert np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("name, blocks, shapes", [
    ("inception_v4", [slice(0, 6), 6, 10, 11, 18, 19], [(3, 75), (384, 5), (384, 7), (1024, 5), (1024, 7), (1536, 3)]),
    ("inception_resnet_v2", ["stem", "mixed_5b", "repeat.0", "mixed_6a", "repeat_1.0", "mixed_7a", "repeat_2.0",
                             "block8", "conv2d_7b"],
     [(3, 75), (192, 5), (320, 5), (320, 7), (1088, 5), (1088, 7), (2080, 3), (2080, 3), (2080, 3)]),
])
def test_blocks_train_mode_gradients_match_timm(name, blocks, shapes):
    """Each kind of block (and the stem) in float64 and train mode, on a batch of 2 at a small size: outputs,
    input and parameter gradients, BatchNorm running statistics (the fixed-width Inceptions cannot be shrunk
    whole, so every block class is checked on its own; the eval test covers their composition)."""
    reference, ours = _pair(name)
    stem = ["conv2d_1a", "conv2d_2a", "conv2d_2b", "maxpool_3a", "conv2d_3b", "conv2d_4a", "maxpool_5a"]
    for block, (channels, size) in zip(blocks, shapes):
        if isinstance(block, (int, slice)):
            ref_block, our_block = reference.features[block], ours.features[block]
        elif block == "stem":
            ref_block = torch.nn.Sequential(*[getattr(reference, n) for n in stem])
            our_block = engine.nn.Sequential(*[getattr(ours, n) for n in stem])
        else:
            ref_block, our_block = reference.get_submodule(block), ours.get_submodule(block)
        x = image_batch(2, size, size + 2, seed=2, c=channels).astype(np.float64)
        _check_train_step(copy.deepcopy(ref_block), copy.deepcopy(our_block), x)


@pytest.mark.parametrize("preact", [False, True])
def test_small_xception_train_mode_gradients_match_timm(preact):
    """A small Aligned Xception (both block kinds, projection and identity shortcuts, dilation, the exit block)
    in float64 and train mode: outputs, input and parameter gradients, BatchNorm statistics."""
    reference, ours = _small_xception_pair(preact)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info
    _check_train_step(reference, ours, image_batch(2, 23, 21, seed=3).astype(np.float64))


def test_drop_path_and_dropout_active_in_training_only():
    """Stochastic depth (timm's linear rule) and the head's dropout change train-mode outputs from call to call;
    in eval both are off and the model matches timm's."""
    reference, ours = _small_xception_pair(preact=True, drop_path_rate=0.5, drop_rate=0.5)
    probs = [m.p for m in ours.modules() if type(m).__name__ == "StochasticDepth"]
    assert probs == [m.drop_prob for m in reference.modules() if type(m).__name__ == "DropPath"]
    assert probs == [0.5 * i / 4 for i in range(1, 5)]  # linear from 0 (no module) at the first block
    assert ours.head.drop.p == 0.5
    x = image_batch(2, 23, 21, seed=4)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    training = copy.deepcopy(ours).train()
    first = to_numpy(training(engine.from_numpy(x)))
    second = to_numpy(training(engine.from_numpy(x)))
    assert not np.allclose(first, second)
    # the Inceptions' dropout before the classifier
    head = InceptionV4(num_classes=10, drop_rate=0.5)
    features = engine.from_numpy(image_batch(2, 2, 2, seed=5, c=1536))
    train_out = head.forward_head(features, pre_logits=True)
    assert (to_numpy(train_out) == 0).mean() > 0.3
    head.eval()
    assert_close(to_numpy(head.forward_head(features, pre_logits=True)), to_numpy(features).mean((2, 3)), 1e-6)


# ---- the timm API -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["inception_v4", "inception_resnet_v2", "xception41p"])
def test_num_classes_0_gives_timm_pre_logits(name):
    reference, _ = _pair(name)
    classifier = reference.pretrained_cfg["classifier"]
    state = {k: v for k, v in numpy_state(reference).items() if not k.startswith(classifier + ".")}
    ours = _ours(name, state, num_classes=0)
    x = image_batch(2, *SIZES[name], seed=6)
    with torch.no_grad():
        ref = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True).numpy()
    with engine.no_grad():
        out = to_numpy(ours(engine.from_numpy(x)))
    assert out.shape == (2, ours.num_features)
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("name", ["inception_resnet_v2", "xception41"])
def test_reset_classifier_like_timm(name):
    """reset_classifier(0) gives the pooled features; reset_classifier(n, 'catavgmax') a layer over twice the
    features (timm's head_hidden_size follows), whose outputs match timm's after the same reset (its new weights
    loaded)."""
    reference, ours = (copy.deepcopy(m) for m in _pair(name))
    x = image_batch(2, *SIZES[name], seed=7)
    assert ours.head_hidden_size == reference.head_hidden_size == ours.num_features
    ours.reset_classifier(0)
    reference.reset_classifier(0)
    assert type(ours.get_classifier()).__name__ == "Identity"
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, ours.num_features)
    assert_close(out, ref, TOL)
    reference.reset_classifier(12, "catavgmax")
    ours.reset_classifier(12, "catavgmax")
    check_structure(ours, reference, types=False)
    assert ours.num_classes == 12 and ours.get_classifier().in_features == 2 * ours.num_features
    assert ours.head_hidden_size == reference.head_hidden_size == 2 * ours.num_features
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)


def test_in_chans_1_runs():
    """A one-channel model has timm's one-channel first conv (the layout test) and classifies grey images."""
    model = xception_aligned.XceptionAligned(SMALL_XCEPTION, in_chans=1, num_classes=4, output_stride=8).eval()
    assert tuple(model.stem[0].conv.weight.shape) == (32, 1, 3, 3)
    with engine.no_grad():
        assert tuple(model(engine.from_numpy(image_batch(2, 19, 17, c=1))).shape) == (2, 4)


@pytest.mark.parametrize("name, out_indices", [("inception_v4", None), ("inception_resnet_v2", None),
                                               ("xception41", None), ("xception41p", (1, 3))])
def test_features_only_matches_timm_intermediates(name, out_indices):
    """features_only returns timm's stages (its forward_intermediates, the taps its features_only models use):
    FeatureListNet for Inception-ResNet-v2, FlatFeatureListNet (timm's flattened weight names) for Inception-v4,
    hook-based for Xception, whose stages end inside blocks."""
    reference, _ = _pair(name)
    state = numpy_state(reference)
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = models.create_model(name, features_only=True, out_indices=out_indices)
    expected_cls = (FeatureHookNet if name.startswith("xception") else FlatFeatureListNet if name == "inception_v4"
                    else FeatureListNet)
    assert type(ours) is expected_cls
    flat = name == "inception_v4"  # the reference is timm's classifier: its names are not flattened
    ours.load_state_dict({k: state[k.replace("features_", "features.", 1) if flat else k] for k in ours.state_dict()})
    ours.eval()
    indices = list(range(len(reference.feature_info))) if out_indices is None else list(out_indices)
    assert ours.feature_info.get_dicts() == [reference.feature_info[i] for i in indices]
    x = image_batch(2, *SIZES[name], seed=8)
    with torch.no_grad():
        refs = reference.forward_intermediates(torch.from_numpy(x), indices=indices, intermediates_only=True)
    with engine.no_grad():
        outs = ours(engine.from_numpy(x))
    assert len(outs) == len(refs) == len(indices)
    for out, ref, channels in zip(outs, refs, ours.feature_info.channels()):
        assert out.shape[1] == channels
        assert_close(to_numpy(out), ref.numpy(), TOL)


def check_intermediates_and_pruning(reference, ours, x, prune_to):
    """timm's ``reference`` and ``ours`` (same weights, eval mode) through timm's intermediates API:
    forward_intermediates with every tap and the final map (indices None), the last two taps alone (an int,
    intermediates_only), the first and the third from the end stopping early (a list); NHWC refused. Then
    prune_intermediate_layers keeping the last tap with prune_head=False leaves the classifier, and pruning to
    ``prune_to`` gives timm's indices, layout, widths and forward_features (returned, ours)."""
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, intermediates_only=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, -3], stop_early=True)
    with pytest.raises(ValueError, match="output_fmt must be 'NCHW'"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    last = len(ours.feature_info) - 1
    kept = ours.prune_intermediate_layers([0, -1], prune_head=False)
    assert kept == reference.prune_intermediate_layers([0, -1], prune_head=False) == [0, last]
    assert ours.get_classifier().out_features == reference.get_classifier().out_features == ours.num_classes
    assert ours.prune_intermediate_layers(prune_to) == reference.prune_intermediate_layers(prune_to) == prune_to
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.num_features == reference.head_hidden_size
    assert type(ours.get_classifier()).__name__ == "Identity"
    out, expected = both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))
    assert out.shape[1] == ours.num_features == ours.feature_info[max(prune_to)]["num_chs"]
    assert_close(out, expected, TOL)
    return out


@pytest.mark.parametrize("name", ["inception_v4", "inception_resnet_v2"])
def test_inception_intermediates_and_pruning_match_timm(name):
    """The full-size Inceptions (they cannot be built smaller; one image at the smallest size): timm's five taps
    (the stem at strides 2 and 4, the last blocks at strides 8, 16 and 32) and pruning to the first two, after
    which the model ends at the stride-4 tap (later layers cut or made identities, the head gone)."""
    reference, ours = _pair(name)
    del _PAIRS[name]  # pruned below
    out = check_intermediates_and_pruning(reference, ours, image_batch(1, *SIZES[name], seed=9), [0, 1])
    assert out.shape[2:] == ((17, 17) if name == "inception_v4" else (15, 15))


@pytest.mark.parametrize("preact", [False, True])
def test_xception_intermediates_and_pruning_match_timm(preact):
    """A small Aligned Xception: timm's four taps (inside each strided block, the input of its last separable
    convolution; then the last block's output), and pruning to the second, inside the third block, which then
    ends there (its last convolution and residual connection dropped, and the later blocks)."""
    reference, ours = _small_xception_pair(preact)
    out = check_intermediates_and_pruning(reference, ours, image_batch(2, 23, 21, seed=10), [1])
    assert out.shape[1:] == (24, 6, 6)


def test_output_stride_is_fixed_for_inceptions():
    with pytest.raises(ValueError, match="output stride of 32"):
        InceptionResnetV2(output_stride=16)
    with pytest.raises(ValueError, match="unknown global_pool"):
        SelectAdaptivePool2d("fast")
