"""timm parity of CSATv2 (csatv2, csatv2_21m): every variant's configuration and layout, seeded initialisation, the
DCT stem's pieces built without an FFT (DCT matrices, zigzag order, Y/Cb/Cr split), eval outputs (float32) of small
models (convolutional blocks with spatial attention, transformer blocks, layer scale) and of the downsampling
transformer block, float64 train-mode outputs and gradients, all with timm's weights loaded; stochastic depth and
the head's dropout, and the timm API (pre-logits, pooling, reset_classifier, features_only, forward_intermediates,
prune_intermediate_layers, list_models)."""
import importlib

import numpy as np
import pytest
import timm
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import csatv2
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, conv_and_linear_weights, features_only_pair,
                          image_batch, numpy_state, pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

# ``from timm.models import csatv2`` gives the entrypoint of that name, not the module
timm_csatv2 = importlib.import_module("timm.models.csatv2")

NAMES = ["csatv2", "csatv2_21m"]
TOL = 1e-4
PRINTED = ("Conv2d", "Linear", "LayerNorm", "LayerNorm2d", "GELU", "AdaptiveAvgPool2d", "Dropout", "Flatten")
# Small models: widths 16 to 32, one convolutional block in the first two stages, one of each kind in the last two;
# the second with layer scale and stochastic depth over the transformer blocks too; the third, for the API, with a
# single transformer block (in the last stage).
SMALL = {
    "plain": dict(dims=(16, 16, 24, 32), depths=(1, 1, 2, 2), transformer_depths=(0, 0, 1, 1)),
    "layer_scale": dict(dims=(8, 16, 16, 24), depths=(1, 2, 2, 2), transformer_depths=(0, 0, 1, 1),
                        ls_init_value=1e-6, transformer_drop_path=True),
    "api": dict(dims=(16, 16, 24, 32), depths=(1, 1, 1, 2), transformer_depths=(0, 0, 0, 1)),
}
EVAL_KINDS = ["plain", "layer_scale"]
SIZE = (88, 72)  # sides multiples of 8 (the DCT blocks): maps of 11x9, 5x4, 2x2 and 1x1


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's with random parameters (layer scales included), loaded in ours
    through numpy, in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_csatv2.CSATv2(**config), seed, scales=("gamma",)).eval()
    ours = csatv2.CSATv2(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def timm_dct_matrix(kernel_size, kernel_type=2, orthonormal=True):
    """timm's DCT matrix (built through its float32 FFT) as one of ours."""
    return engine.from_numpy(timm_csatv2.Dct1d(kernel_size, kernel_type, orthonormal).weights.numpy())


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, csatv2, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_csatv2, "build_model_with_cfg")
    for name in NAMES:
        getattr(csatv2, name)()
        getattr(timm_csatv2, name)()
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_csatv2, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


def test_seeded_init_equals_timm(monkeypatch):
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps, the rest bit for bit)
    and leaves both random streams in step; the DCT matrix draws nothing and is checked on its own below."""
    monkeypatch.setattr(csatv2, "dct_matrix", timm_dct_matrix)
    config = dict(SMALL["layer_scale"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_csatv2.CSATv2(**config), lambda: csatv2.CSATv2(**config), 3,
                                        conv_and_linear_weights)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


def test_dct_stem_pieces_match_timm():
    """Without an FFT in the engine: the DCT matrices (types II and III, orthonormal or not) are timm's within a
    float32 rounding (timm's come from a float32 FFT and inverse), the 2-d DCT of blocks is timm's, and so are the
    zigzag order and the Y/Cb/Cr split of the stem's width (a width it can't split is refused)."""
    for kernel_type in (2, 3):
        for orthonormal in (True, False):
            expected = timm_csatv2.Dct1d(8, kernel_type, orthonormal).weights.numpy()
            assert_close(csatv2.dct_matrix(8, kernel_type, orthonormal).numpy(), expected, 5e-7)
    blocks = image_batch(2, 8, 8, seed=1) * 100
    out, ref = both_outputs(timm_csatv2.Dct2d(8), csatv2.Dct2d(8), blocks)
    assert_close(out, ref, 1e-6)
    for rows, cols in ((8, 8), (3, 5), (4, 2)):
        assert csatv2.zigzag_order(rows, cols) == timm_csatv2._zigzag_permutation(rows, cols)
    for width in (8, 32, 48, 384):
        assert csatv2.split_ycbcr_channels(width) == timm_csatv2._split_out_chs(width)
    with pytest.raises(ValueError, match="multiple of 8"):
        csatv2.split_ycbcr_channels(20)


@pytest.mark.parametrize("kind", EVAL_KINDS)
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 (the spatial attention's transformer mixes the batch's images, as timm's
    does) at an odd map size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_downsampling_transformer_block_matches_timm():
    """The transformer block's downsampling form (max-pooled attention and shortcut, projected to a new width),
    which timm's class offers and its models leave unused."""
    torch.manual_seed(11)
    reference = randomize_parameters(timm_csatv2.TransformerBlock(16, 24, downsample=True), 11).eval()
    ours = csatv2.TransformerBlock(16, 24, downsample=True)
    ours.load_state_dict(numpy_state(reference))
    check_structure(ours.eval(), reference)
    out, ref = both_outputs(reference, ours, image_batch(2, 9, 7, seed=12, c=16))
    assert out.shape == (2, 24, 5, 4)
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode: outputs, input gradient and every parameter's gradient equal timm's (the buffers, the
    DCT matrix and the stem's statistics, stay as they are)."""
    reference, ours = small_pair("layer_scale", seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 72, 64, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates over the convolutional blocks, the transformer blocks left without
    unless ``transformer_drop_path``; no module where the rate is 0) and the head's dropout draw timm's masks after
    the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair("api", seed=6, drop_rate=0.5, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([1 / 6, 1 / 3, 0.5])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))
    reference, ours = small_pair("layer_scale", seed=8, drop_path_rate=0.3)
    assert check_drop_rates(reference, ours) == pytest.approx([0.05, 0.1, 0.15, 0.2, 0.2, 0.25, 0.3, 0.3])


def test_head_api_pooling_and_bad_arguments():
    """Pre-logits features, ``num_classes=0`` (the pooled, normalised features), reset_classifier to new pooling
    and classes, with ``reset_other`` (the head's norm dropped) and to the unpooled (normalised) map, as timm's;
    pooling that widens the features and image sides that aren't multiples of 8 are refused, other input
    channels warned about."""
    reference, ours = small_pair("api", seed=9, global_pool="max")
    x = image_batch(2, *SIZE, seed=10)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)
    headless = csatv2.CSATv2(**SMALL["api"], num_classes=0, global_pool="max")
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    for num_classes, pool, reset_other in ((5, "avgmax", False), (3, None, True), (0, "", False)):
        reference.reset_classifier(num_classes, pool, reset_other=reset_other)
        ours.reset_classifier(num_classes, pool, reset_other=reset_other)
        if num_classes:
            ours.head.fc.load_state_dict(numpy_state(reference.head.fc))
        check_structure(ours, reference, types=False)
        assert ours.head_hidden_size == reference.head_hidden_size == 32 and not ours.head.training
        assert ours.global_pool == reference.global_pool
        out, ref = both_outputs(reference, ours, x)
        assert_close(out, ref, TOL)
    assert out.shape == (2, 32, 1, 1)
    with pytest.raises(ValueError, match="global_pool"):
        csatv2.CSATv2(**SMALL["plain"], global_pool="catavgmax")
    with pytest.raises(ValueError, match="multiples of 8"):
        ours(engine.from_numpy(image_batch(1, 68, 64)))
    with pytest.warns(UserWarning, match="3-channel"):
        csatv2.CSATv2(**SMALL["plain"], in_chans=1)


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices, the stem's included),
    feature_info, flattened module names (``stem_dct``, ``stages_3``) and state dict, and feature maps;
    forward_intermediates with the stem's tap and stopping early; prune_intermediate_layers drops the later stages,
    the head's norm and the classifier as timm's does."""
    config = SMALL["api"]
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 4), ((0, 2), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("csatv2", randomize_parameters, 14, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair("api", seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True), dict(indices=[0])):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([4], prune_norm=True, prune_head=False) == \
        reference.prune_intermediate_layers([4], prune_norm=True, prune_head=False) == [4]
    check_structure(ours, reference, types=False)
    assert_close(*both_outputs(reference, ours, x), TOL)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference, types=False)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 11, 9)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists both variants with 1k weights under their timm names and module."""
    names = models.list_models(module="csatv2")
    assert names == timm.list_models(module="csatv2") == NAMES
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("csatv2*")}
