"""timm parity of Xception (legacy_xception), NASNet-A Large (nasnetalarge) and PNASNet-5 Large (pnasnet5large):
each entrypoint's configuration and full-size layout (on the meta device), with timm's head API on the full-size
models (pooling options, pre-logits, reset_classifier, head dropout); a narrow NASNet (its class takes the widths:
seeded initialisation, eval outputs at an odd size with one input channel, the feature taps of
forward_intermediates and features_only); the cells of NASNet and PNASNet (whose class fixes its widths) and
the blocks of Xception (likewise) alone at narrow widths, chained as their models chain them (seeded
initialisation, Xception's He-normal init, eval outputs, float64 train steps); timm's forward_intermediates and
prune_intermediate_layers on the narrow NASNet, a full-size Xception and the first cells of a full-size PNASNet;
bad arguments and list_models."""
import importlib
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import nasnet as timm_nasnet
from timm.models import pnasnet as timm_pnasnet
from timm.models._features import FeatureHookNet

import engine
import flowvision.models as models
from flowvision.models._features import FeatureBodyNet
from flowvision.models.timm_families import nasnet, pnasnet, xception
from model_parity import (both_outputs, capture_builder, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, image_batch, numpy_state, randomize_norms,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

# timm.models.xception is, as an attribute of timm.models, the deprecated 'xception' entrypoint
timm_xception = importlib.import_module("timm.models.xception")

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

TOL = 1e-4
PRINTED = ("Conv2d", "Conv2dSame", "BatchNorm2d", "BatchNormAct2d", "ReLU", "MaxPool2d", "MaxPool2dSame",
           "AvgPool2d", "AvgPool2dSame", "ZeroPad2d", "Linear", "Dropout")
# model name: (our module, timm's module, the classifier's attribute)
FAMILIES = {
    "legacy_xception": (xception, timm_xception, "fc"),
    "nasnetalarge": (nasnet, timm_nasnet, "last_linear"),
    "pnasnet5large": (pnasnet, timm_pnasnet, "last_linear"),
}
# a narrow NASNet-A: stem 8 channels, cells 8 / 16 / 32 channels wide (stem cells 2 and 4), 192 features
SMALL_NASNET = dict(stem_size=8, num_features=192)


def chain(nn_module, layers, wiring):
    """A module of ``nn_module`` (torch's or the engine's) holding ``layers`` (``layers.0``...) whose forward is
    ``wiring(layers, x)``: cells or blocks run alone, wired as their model wires them."""

    class Chain(nn_module.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn_module.ModuleList(layers)

        def forward(self, x):
            return wiring(self.layers, x)

    return Chain()


def nasnet_wiring(cells, x):
    """NASNet's wiring: the first stem cell on the (stem's) map, the second on both, every later cell on the last
    two outputs (current, older), a reduction cell passing its older input on to the next cell."""
    stem_0 = cells[0](x)
    x_prev, x = stem_0, cells[1](x, stem_0)
    for cell in cells[2:]:
        x_prev, x = (x_prev, cell(x, x_prev)) if type(cell).__name__.startswith("Reduction") else (x, cell(x, x_prev))
    return x


def nasnet_cells(module):
    """NASNet's cell types from ``module`` (timm's or ours), as the narrow NASNet has them, on an 8-channel map:
    both stem cells, a FirstCell, a normal cell, a reduction cell and the FirstCell after it (8, 16, 48, 48, 64
    and 96 channels out)."""
    return [module.CellStem0(8, 2, "same"), module.CellStem1(8, 4, "same"),
            module.FirstCell(8, 4, 16, 8, "same"), module.NormalCell(16, 8, 48, 8, "same"),
            module.ReductionCell0(48, 16, 48, 16, "same"), module.FirstCell(48, 8, 64, 16, "same")]


def pnasnet_wiring(cells, x):
    """PNASNet's wiring: the stem cell on the (stem's) map, every later cell on the last two outputs."""
    x_prev, x = x, cells[0](x)
    for cell in cells[1:]:
        x_prev, x = x, cell(x_prev, x)
    return x


def pnasnet_cells(module):
    """PNASNet's cell types from ``module`` (timm's or ours), narrow, on an 8-channel map: the stem cell, a
    reducing cell with a factorised reduction of the older input, a normal one with and one without, and a
    reducing one without (20, 40, 40, 40 and 80 channels out)."""
    cell = partial(module.Cell, pad_type="same")
    return [module.CellStem0(8, 4, 8, 4, pad_type="same"),
            cell(8, 8, 20, 8, is_reduction=True, match_prev_layer_dims=True),
            cell(20, 8, 40, 8, match_prev_layer_dims=True),
            cell(40, 8, 40, 8),
            cell(40, 16, 40, 16, is_reduction=True)]


def xception_blocks(module, nn_module):
    """Xception's block types from ``module`` (timm's or ours), narrow: the first block (no opening ReLU), a
    middle-flow block (identity shortcut), the exit block (widening last), then an exit separable convolution
    with its BatchNorm and ReLU."""
    return [module.Block(8, 16, 2, 2, start_with_relu=False), module.Block(16, 16, 3, 1),
            module.Block(16, 24, 2, 2, grow_first=False), module.SeparableConv2d(24, 32, 3, 1, 1),
            nn_module.BatchNorm2d(32), nn_module.ReLU()]


def sequential_wiring(layers, x):
    """Each layer on the last one's output."""
    for layer in layers:
        x = layer(x)
    return x


def test_entrypoints_layouts_heads_and_registry(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's full-size layout (state_dict keys,
    shapes, dtypes, module tree and class names, layer printouts, feature_info, widths, default_cfg). On those
    models, timm's head (real layers in place of the meta ones) gives timm's pooled features and logits for each
    pooling, with head dropout in training after the same seed, and reset_classifier to no classes gives the
    pooled features; an unknown pooling is refused. The registry lists exactly timm's names."""
    for name, (ours_module, timm_module, _) in FAMILIES.items():
        ours_calls = capture_builder(monkeypatch, ours_module, "build_model")
        timm_calls = capture_builder(monkeypatch, timm_module, "build_model_with_cfg")
        getattr(ours_module, name)()
        getattr(timm_module, name)()
        (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) = ours_calls[0], timm_calls[0]
        assert timm_kwargs.pop("feature_cfg")["feature_cls"] == "hook"
        assert ours_cls.__name__ == timm_cls.__name__ and ours_kwargs == dict(timm_kwargs, progress=True)
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    pairs = {}
    for name in FAMILIES:
        with torch.device("meta"):
            reference = timm.create_model(name, drop_rate=0.5)
        ours = models.create_model(name, drop_rate=0.5)
        check_layout(ours, reference, (), PRINTED, types=True)
        pairs[name] = reference, ours
    monkeypatch.undo()
    rng = np.random.default_rng(0)
    for name, (reference, ours) in pairs.items():
        classifier = FAMILIES[name][2]
        width = ours.num_features
        maps = rng.standard_normal((2, width, 3, 2)).astype(np.float32)
        for pool, classes in (("catavgmax", 7), ("max", 5)):
            ours.reset_classifier(classes, pool)
            reference.reset_classifier(classes, pool)
            setattr(reference, classifier, torch.nn.Linear(ours.head_hidden_size, classes))
            getattr(ours, classifier).load_state_dict(numpy_state(getattr(reference, classifier)))
            assert ours.head_hidden_size == reference.head_hidden_size == width * (2 if pool == "catavgmax" else 1)
            for fn in (lambda m, x: m.forward_head(x), lambda m, x: m.forward_head(x, pre_logits=True)):
                out, expected = both_outputs(reference.eval(), ours.eval(), maps, fn)
                assert_close(out, expected, TOL)
        reference.train()
        ours.train()
        torch.manual_seed(1)
        engine.manual_seed(1)
        out, expected = both_outputs(reference, ours, maps, lambda m, x: m.forward_head(x, pre_logits=True))
        assert_close(out, expected, TOL)
        assert (out == 0).mean() > 0.2
        with pytest.raises(ValueError, match="global_pool"):
            ours.reset_classifier(3, "median")
        ours.reset_classifier(0)
        assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
        assert tuple(ours.forward_head(engine.from_numpy(maps)).shape) == (2, width)
    for name, (ours_module, timm_module, _) in FAMILIES.items():
        module = ours_module.__name__.split(".")[-1]
        assert module == timm_module.__name__.split(".")[-1]
        assert models.list_models(module=module) == timm.list_models(module=module) == [name]
        assert timm.models.get_pretrained_cfg(name).num_classes == 1000


def test_small_nasnet_matches_timm():
    """A narrow NASNet-A with one input channel and head dropout, built after the same seed as timm's: the same
    initial weights bit for bit, both random streams in step. With random BatchNorms loaded: timm's logits at an
    odd size in eval mode (the dropout idle, no draws), timm's first two taps from forward_intermediates with
    stop_early (which then ends at the second, activated); then its features_only model (the whole
    model under ``body``, as timm's hook-based one) gives timm's third and fifth taps, of the widths that its
    feature_info gives (timm's feature_info holds the full-size widths whatever the configuration)."""
    kwargs = dict(SMALL_NASNET, in_chans=1, drop_rate=0.5)
    reference, ours = check_seeded_init(lambda: timm_nasnet.NASNetALarge(**kwargs),
                                        lambda: nasnet.NASNetALarge(**kwargs), 3, lambda _: set())
    check_structure(ours, reference)
    randomize_norms(reference, 4).eval()
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    x = image_batch(2, 35, 33, seed=5, c=1)
    before = engine.get_rng_state().numpy()
    out, expected = both_outputs(reference, ours, x)
    assert np.array_equal(engine.get_rng_state().numpy(), before)
    assert out.shape == (2, 1000) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, TOL)
    (final, taps), (final_ref, taps_ref) = both_outputs(
        reference, ours, x, lambda m, t: m.forward_intermediates(t, indices=[0, 1], stop_early=True))
    assert [t.shape[1:] for t in taps] == [(8, 17, 16), (8, 9, 8)] and np.array_equal(final, taps[1])
    for tap, tap_ref in zip(taps + [final], taps_ref + [final_ref]):
        assert_close(tap, tap_ref, TOL)
    features_ref = FeatureHookNet(reference, out_indices=(2, 4), no_rewrite=True)
    features = ours.feature_wrapper(ours, (2, 4))
    assert type(features) is FeatureBodyNet
    assert list(features.state_dict()) == list(features_ref.state_dict())
    assert features.feature_info.module_name() == features_ref.feature_info.module_name()
    maps, maps_ref = both_outputs(features_ref, features, x)
    assert [m.shape[1:] for m in maps] == [(48, 5, 4), (192, 2, 1)]
    assert [m.shape[1] for m in maps] == features.feature_info.channels()
    for m, m_ref in zip(maps, maps_ref):
        assert_close(m, m_ref, TOL)


@pytest.mark.parametrize("family", ["nasnet", "pnasnet"])
def test_cells_match_timm(family):
    """NASNet's and PNASNet's cell types at narrow widths, wired as their models wire them: built after the same
    seed, timm's initial weights bit for bit; with random BatchNorms, timm's float32 eval outputs at an odd size
    ('same' padding, strided and not) and its float64 train-mode outputs, gradients and BatchNorm statistics."""
    cells, timm_module, ours_module, wiring, out_shape = {
        "nasnet": (nasnet_cells, timm_nasnet, nasnet, nasnet_wiring, (2, 96, 3, 3)),
        "pnasnet": (pnasnet_cells, timm_pnasnet, pnasnet, pnasnet_wiring, (2, 80, 3, 3)),
    }[family]
    reference, ours = check_seeded_init(lambda: chain(torch.nn, cells(timm_module), wiring),
                                        lambda: chain(engine.nn, cells(ours_module), wiring), 8, lambda _: set())
    check_structure(ours, reference)
    randomize_norms(reference, 9).eval()
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(2, 19, 17, seed=10, c=8)
    out, expected = both_outputs(reference, ours.eval(), x)
    assert out.shape == out_shape
    assert_close(out, expected, TOL)
    check_train_step(reference.double().train(), ours.double().train(), x.astype(np.float64))


def test_xception_blocks_match_timm():
    """Xception's block types at narrow widths, in a chain: built after the same seed, timm's initial weights bit
    for bit, and after Xception's init (He-normal convolutions, fan-out, in module order; unit BatchNorms) again
    timm's rule's draws; with random BatchNorms, timm's float32 eval outputs at an odd size and its float64
    train-mode outputs, gradients and BatchNorm statistics."""
    reference, ours = check_seeded_init(
        lambda: chain(torch.nn, xception_blocks(timm_xception, torch.nn), sequential_wiring),
        lambda: chain(engine.nn, xception_blocks(xception, engine.nn), sequential_wiring), 11, lambda _: set())
    check_structure(ours, reference)
    torch.manual_seed(12)
    # timm's Xception.__init__ ends so (its BatchNorms start at one and zero already)
    for module in reference.modules():
        if isinstance(module, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
    engine.manual_seed(12)
    xception.Xception._init_weights(ours)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert np.array_equal(state[key].numpy(), value), key
    randomize_norms(reference, 13).eval()
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(2, 19, 17, seed=14, c=8)
    out, expected = both_outputs(reference, ours.eval(), x)
    assert out.shape == (2, 32, 5, 5)
    assert_close(out, expected, TOL)
    check_train_step(reference.double().train(), ours.double().train(), x.astype(np.float64))


def check_pruning(reference, ours, x, prune_to):
    """prune_intermediate_layers on timm's ``reference`` and ``ours`` (same weights, eval mode): keeping the last
    tap with prune_head=False leaves the classifier; pruning to ``prune_to`` gives timm's indices and layout, drops
    the head, and gives timm's forward_features, as wide as the new ``num_features`` (returned, ours)."""
    kept = ours.prune_intermediate_layers([0, -1], prune_head=False)
    assert kept == reference.prune_intermediate_layers([0, -1], prune_head=False) == [0, 4]
    assert ours.get_classifier().out_features == reference.get_classifier().out_features == ours.num_classes
    assert ours.prune_intermediate_layers(prune_to) == reference.prune_intermediate_layers(prune_to) == prune_to
    check_structure(ours, reference)
    assert isinstance(ours.get_classifier(), engine.nn.Identity)
    out, expected = both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))
    assert out.shape[1] == ours.num_features == ours.head_hidden_size
    assert_close(out, expected, TOL)
    return out


def check_full_intermediates(reference, ours, x):
    """forward_intermediates of timm's ``reference`` and ``ours`` (same weights, eval mode): every tap and the
    final map (indices None), the last two taps alone (an int, intermediates_only), the first and the third from
    the end stopping early (a list; the final map is then that tap); NHWC refused."""
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2, intermediates_only=True)
    check_intermediates(reference, ours, x, TOL, indices=[0, -3], stop_early=True)
    with pytest.raises(ValueError, match="output_fmt must be 'NCHW'"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")


def test_nasnet_intermediates_and_pruning_match_timm():
    """The narrow NASNet-A: timm's five taps (the stem; the activated outputs of cell_stem_0, cell_5 and cell_11;
    the final ReLU), then pruning to the second and third: the cells after cell_5 go (None, as in timm) and the
    model ends at cell_5's activated output, 48 channels (timm's num_features there is the full-size model's,
    from its feature_info)."""
    torch.manual_seed(20)
    reference = randomize_norms(timm_nasnet.NASNetALarge(**SMALL_NASNET, num_classes=3), 20).eval()
    ours = nasnet.NASNetALarge(**SMALL_NASNET, num_classes=3)
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(2, 19, 17, seed=21)
    check_full_intermediates(reference, ours.eval(), x)
    out = check_pruning(reference, ours, x, [1, 2])
    assert out.shape[1:] == (48, 3, 2) and reference.num_features == 1008 and out.min() == 0
    assert ours.cell_6 is None and reference.cell_6 is None


def test_xception_intermediates_and_pruning_match_timm(monkeypatch):
    """The full-size Xception (its widths are fixed): timm's five taps (the stem; the activated outputs of block1,
    block2 and block11, as the ReLU opening the next block; the final ReLU), then pruning to the first and third:
    block3 becomes its opening ReLU, the later blocks and the exit convolutions identities."""
    torch.manual_seed(22)
    reference = randomize_norms(timm_xception.Xception(num_classes=3), 22).eval()
    skip_random_init(monkeypatch)
    ours = xception.Xception(num_classes=3)
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(2, 19, 17, seed=23)
    check_full_intermediates(reference, ours.eval(), x)
    out = check_pruning(reference, ours, x, [0, 2])
    assert out.shape[1:] == (256, 2, 2) and ours.num_features == reference.num_features
    assert type(ours.block3).__name__ == "ReLU" and out.min() == 0


def test_pnasnet_intermediates_and_pruning_match_timm(monkeypatch):
    """PNASNet-5 Large, whose widths are fixed, at full size but with random weights in its first seven layers
    only (up to cell_3; timm's model made on the meta device, the rest left empty): timm's first three taps (the
    stem; the activated outputs of cell_stem_0 and cell_3), stopping early; then pruning to them: the later
    cells go, and the model ends at cell_3's activated output, timm's 1080 channels."""
    with torch.device("meta"):
        reference = timm_pnasnet.PNASNet5Large(num_classes=3, pad_type="same")
    reference.to_empty(device="cpu")
    skip_random_init(monkeypatch)
    ours = pnasnet.PNASNet5Large(num_classes=3, pad_type="same")
    for name in ours.layer_names[:7]:
        layer = randomize_parameters(reference.get_submodule(name), 24, norms=True)
        getattr(ours, name).load_state_dict(numpy_state(layer))
    reference.eval()
    x = image_batch(2, 19, 17, seed=25)
    check_intermediates(reference, ours.eval(), x, TOL, indices=[0, 1, -3], stop_early=True)
    check_intermediates(reference, ours, x, TOL, indices=[1], stop_early=True, intermediates_only=True)
    out = check_pruning(reference, ours, x, [0, 1, 2])
    assert out.shape[1:] == (1080, 3, 2) and ours.num_features == reference.num_features
    assert ours.layer_names == reference.layer_names and ours.cell_4 is None


def test_bad_arguments():
    """NASNet and PNASNet refuse output strides other than 32 (timm asserts)."""
    for cls in (nasnet.NASNetALarge, pnasnet.PNASNet5Large):
        with pytest.raises(ValueError, match="output stride"):
            cls(output_stride=16)
