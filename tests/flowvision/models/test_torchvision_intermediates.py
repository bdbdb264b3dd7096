"""timm's ``forward_intermediates`` / ``prune_intermediate_layers`` on torchvision's ResNet, DenseNet, Inception v3 and
VGG, which serve timm's names (resnet18, densenet121, inception_v3, vgg11): against timm's class of the same name with
the same weights (random, BatchNorm statistics included, copied through numpy; ours built without its own init) on
small images: the maps each ``indices`` picks, ``intermediates_only``, ``stop_early``, the refused ``output_fmt``,
and the pruned models' indices, ``num_features`` and outputs. timm's VGG has another head (a pre-logits ConvMlp), so
only its trunk's weights are shared: its intermediates also equal our ``features_only`` maps."""
import copy

import pytest
import timm
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FeatureListNet
from model_parity import (both_outputs, check_intermediates, image_batch, numpy_state, randomize_norms,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

TOL = 1e-4
# forward_intermediates' keywords: all; the last n alone (the whole net runs); a list from both ends, stopping early;
# the stem's map alone, stopping early (ResNet still runs the max pool after it)
CASES = (dict(), dict(indices=2, intermediates_only=True), dict(indices=[0, -3], stop_early=True),
         dict(indices=[0], stop_early=True))


@pytest.fixture(scope="module")
def no_init():
    """Our random initialisation skipped for the module's models (all weights come from timm's)."""
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        yield


def timm_pair(name, seed, **kwargs):
    """timm's ``name`` (seeded init, random BatchNorm statistics) and ours with its state_dict, both in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm.create_model(name, **kwargs), seed).eval()
    ours = models.create_model(name, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def check_api(reference, ours, x):
    """Every case of ``CASES`` gives timm's maps and final output; ``output_fmt='NHWC'`` is refused."""
    for kwargs in CASES:
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt must be 'NCHW', got 'NHWC'"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")


def pruned(model, indices, prune_head=True):
    """A copy of ``model`` sharing its submodules (pruning only reassigns the model's own children, in timm's
    classes and ours), pruned to ``indices``; returns it and the indices kept."""
    clone = copy.copy(model)
    clone._modules = copy.copy(model._modules)
    return clone, clone.prune_intermediate_layers(indices, prune_head=prune_head)


def check_pruned(reference, ours, x, indices):
    """Both pruned to ``indices`` (the head too): the same absolute indices, ``num_features`` and
    ``head_hidden_size``, timm's intermediates on the pruned nets, and timm's ``forward_features`` and
    ``forward_head`` (the map as it is). Returns our pruned model."""
    reference, kept = pruned(reference, indices)
    ours, ours_kept = pruned(ours, indices)
    assert ours_kept == kept
    assert (ours.num_features, ours.head_hidden_size) == (reference.num_features, reference.head_hidden_size)
    check_intermediates(reference, ours, x, TOL, indices=kept)
    out, expected = both_outputs(reference, ours, x, lambda m, t: [m.forward_features(t), m(t)])
    for o, e in zip(out, expected):
        assert o.shape == e.shape
        assert_close(o, e, TOL)
    return ours


def check_head_kept(reference, ours):
    """Both pruned to every index with ``prune_head=False``: all indices kept, the classifier and widths unchanged.
    Returns our pruned model."""
    reference, kept = pruned(reference, None, prune_head=False)
    ours, ours_kept = pruned(ours, None, prune_head=False)
    assert ours_kept == kept == list(range(len(kept)))
    assert ours.num_classes == reference.num_classes == 1000
    assert ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
    return ours


def test_resnet_matches_timm(no_init):
    """timm's five maps (the stem's ReLU before the max pool, layer1-4), the max pool still run when stopping at the
    stem; pruning empties the later layers (and the max pool with the stem alone) and drops the head."""
    reference, ours = timm_pair("resnet18", seed=0)
    x = image_batch(2, 64, 48, seed=1)
    check_api(reference, ours, x)
    stem_only = check_pruned(reference, ours, x, [0])
    assert stem_only.num_features == 64 and isinstance(stem_only.maxpool, engine.nn.Identity)
    two_stages = check_pruned(reference, ours, x, [1, -3])
    assert two_stages.num_features == 128 and len(two_stages.layer3) == 0 and two_stages.fc is None
    assert isinstance(two_stages.get_classifier(), engine.nn.Identity)
    two_stages.reset_classifier(5)  # a new head on the pruned map's 128 channels
    assert tuple(two_stages(engine.from_numpy(x)).shape) == (2, 5)
    assert check_head_kept(reference, ours).num_features == 512


def test_densenet_matches_timm(no_init):
    """timm's five maps (the stem's ReLU, dense blocks 1-3 before their transitions, the final norm through the ReLU
    that timm's norm5 carries); pruning cuts ``features`` after the last pick and drops the head."""
    reference, ours = timm_pair("densenet121", seed=2)
    x = image_batch(2, 64, 48, seed=3)
    check_api(reference, ours, x)
    two_blocks = check_pruned(reference, ours, x, [0, 2])
    assert two_blocks.num_features == 512 and list(two_blocks.features.named_children())[-1][0] == "denseblock2"
    assert check_head_kept(reference, ours).num_features == 1024


def test_inception_v3_matches_timm(no_init):
    """timm's five maps (Conv2d_2b_3x3 and Conv2d_4a_3x3 before their max pools, Mixed_5d, Mixed_6e, Mixed_7c) at the
    smallest size the net takes; pruning turns the later modules into identities and drops both heads."""
    reference, ours = timm_pair("inception_v3", seed=4, aux_logits=False)
    x = image_batch(2, 75, 75, seed=5)
    check_api(reference, ours, x)
    stem = check_pruned(reference, ours, x, [0, 1])
    assert stem.num_features == 192 and isinstance(stem.maxpool2, engine.nn.Identity) and not stem.aux_logits
    with_aux, _ = pruned(models.create_model("inception_v3", num_classes=10), 1, prune_head=False)
    assert with_aux.aux_logits and with_aux.AuxLogits is not None and with_aux.fc.out_features == 10
    assert check_head_kept(reference, ours).num_features == 2048


def test_vgg_matches_timm_trunk_and_features_only(no_init):
    """timm's six maps (each conv block's last ReLU, before its max pool, then the final max pool) with the same
    trunk weights, also our ``features_only`` maps, the final output ``forward_features``'; pruning cuts
    ``features`` and drops the whole head (timm's ConvMlp and classifier), the widths as timm's."""
    torch.manual_seed(6)
    # timm's pre-logits ConvMlp narrowed to 8 hidden channels: the heads differ, only the trunks are compared
    reference = timm.create_model("vgg11", mlp_ratio=1 / 512).eval()
    ours = models.create_model("vgg11").eval()
    ours.features.load_state_dict(numpy_state(reference.features))
    x = image_batch(2, 40, 36, seed=7)
    check_api(reference, ours, x)
    final, intermediates = ours.forward_intermediates(engine.from_numpy(x))
    maps = FeatureListNet(ours)(engine.from_numpy(x))
    assert len(intermediates) == len(maps) == 6
    for intermediate, expected in zip(intermediates, maps):
        assert engine.equal(intermediate, expected)
    assert engine.equal(final, ours.forward_features(engine.from_numpy(x)))
    two_blocks = check_pruned(reference, ours, x, [1, -4])
    assert two_blocks.num_features == two_blocks.head_hidden_size == 256 and two_blocks.classifier is None
    assert isinstance(two_blocks.get_classifier(), engine.nn.Identity)
    with pytest.raises(ValueError, match="head was taken away by prune_intermediate_layers"):
        two_blocks.reset_classifier(5)
    headless = check_pruned(reference, ours, x, [0, -1])
    assert headless.num_features == 512 and len(headless.features) == len(ours.features)
    assert check_head_kept(reference, ours).num_features == 4096
