"""timm parity of EfficientViT from MSRA (efficientvit_m0 to m5): every variant's configuration and layout, seeded
initialisation, eval outputs (float32) of a small model (cascaded group attention in padded and exact windows,
queries' depthwise kernels per head, downsampling with squeeze-and-excitation), float64 train-mode outputs, gradients
(attention biases included) and BatchNorm statistics, all with timm's weights loaded; the attention-bias cache of
eval mode (stale until a mode switch or a dtype move, as timm's), the BatchNorm folds (``fuse``), the residual
branches' per-sample drop and the head's dropout, and the timm API (pre-logits, pooling, reset_classifier,
in_chans, features_only, forward_intermediates, bad arguments, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import efficientvit_msra as timm_msra

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import efficientvit_msra as msra
from model_parity import (both_outputs, check_dropout_only_in_training, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, cpu_only_from_here, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["efficientvit_m0", "efficientvit_m1", "efficientvit_m2", "efficientvit_m3", "efficientvit_m4",
         "efficientvit_m5"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNorm1d", "ReLU", "Sigmoid", "Linear", "Dropout")

# A small model built for 96-pixel images: stages of 16, 24 and 32 channels with 2, 3 and 2 heads (value widths 4,
# 2 and 4 channels: attention ratios 2, 2/3 and 4), windows of 3, 3 and 2 on maps of 6, 3 and 2, query kernels of
# 5 and 3. At 70x61 pixels every stage pads its windows; at 96x96 the first partitions whole windows and the
# others attend their map at once.
SMALL = dict(img_size=96, embed_dim=(16, 24, 32), key_dim=(4, 4, 4), depth=(1, 1, 1), num_heads=(2, 3, 2),
             window_size=(3, 3, 2), kernels=(5, 3, 3))
SIZE = (70, 61)


def check_same_layout(ours, reference):
    """``check_structure`` without timm's empty norm slots of squeeze-and-excitation (``se.bn`` identities, which
    ours leaves out): the same state_dict keys in order, shapes and dtypes, the same module tree otherwise."""
    state = {k: (tuple(v.shape), v.numpy().dtype) for k, v in ours.state_dict().items()}
    assert list(state.items()) == [(k, (tuple(v.shape), v.numpy().dtype)) for k, v in reference.state_dict().items()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules() if not n.endswith("se.bn")]


def randomize_statistics(bn):
    """Random running statistics for timm's BatchNorm ``bn`` (a 1-d one, which ``randomize_norms`` leaves alone)."""
    with torch.no_grad():
        bn.running_mean.normal_(0.0, 0.1)
        bn.running_var.uniform_(0.5, 1.5)
    return bn


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small models, timm's seeded weights randomised (attention biases, norms, the classifier's
    BatchNorm and the branches' zero-initialised BatchNorm scales included) and loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_msra.EfficientVitMsra(**SMALL | kwargs), seed, norms=True).eval()
    if isinstance(reference.head, timm_msra.NormLinear):
        randomize_statistics(reference.head.bn)
    ours = msra.EfficientVitMsra(**SMALL | kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree (timm's empty norm slot of squeeze-and-excitation left out), layer printouts,
    feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(msra, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_msra, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(msra, name)()
        getattr(timm_msra, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert timm_kwargs.pop("pretrained_filter_fn") is timm_msra.checkpoint_filter_fn
        assert timm_kwargs.pop("feature_cfg") == dict(flatten_sequential=True, out_indices=(0, 1, 2))
        assert ours_kwargs == timm_kwargs, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(msra, "trunc_normal_", lambda tensor, std=0.02: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, ("se.bn",), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (PyTorch's default convolution init, the classifier's truncated
    normal) and leaves both random streams in step; the attention biases' offset indices are timm's."""
    reference, ours = check_seeded_init(lambda: timm_msra.EfficientVitMsra(**SMALL, num_classes=10),
                                        lambda: msra.EfficientVitMsra(**SMALL, num_classes=10), 3,
                                        lambda _: {"head.linear.weight"})
    check_same_layout(ours, reference)
    buffers = dict(ours.named_buffers())
    for name, buffer in reference.named_buffers():
        assert np.array_equal(buffers[name].numpy(), buffer.numpy()), name
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("size", [SIZE, (96, 96)])
def test_eval_outputs_match_timm(size):
    """float32 logits of a batch of 2, with padded windows (70x61) and whole ones (96x96)."""
    reference, ours = small_pair(seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *size, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient (the attention biases' included)
    and the updated BatchNorm running statistics equal timm's."""
    reference, ours = small_pair(seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 53, 49, seed=5).astype(np.float64))


def test_attention_bias_cache_follows_timm():
    """Eval mode keeps the gathered attention biases: weights loaded in eval mode leave both models on the old
    biases; ``eval()``, ``train()`` and a dtype move empty the cache, as in timm."""
    cpu_only_from_here("the attention bias cache")
    reference, ours = small_pair(seed=6)
    x = image_batch(2, *SIZE, seed=8)
    first, _ = both_outputs(reference, ours, x)
    rng = np.random.default_rng(7)
    biases = {k: rng.standard_normal(v.shape).astype(np.float32) for k, v in numpy_state(reference).items()
              if k.endswith("attention_biases")}
    reference.load_state_dict({k: torch.from_numpy(v) for k, v in biases.items()}, strict=False)
    ours.load_state_dict(biases, strict=False)
    stale, stale_ref = both_outputs(reference, ours, x)
    assert np.array_equal(stale, first)
    assert_close(stale, stale_ref, TOL)
    reference.eval()
    ours.eval()
    renewed, renewed_ref = both_outputs(reference, ours, x)
    assert not np.allclose(renewed, first, atol=1e-3)
    assert_close(renewed, renewed_ref, TOL)
    attention = ours.stages[0].blocks[0].mixer.m.attn
    assert list(attention.attention_bias_cache) == ["cpu"]
    ours.double()
    assert attention.attention_bias_cache == {}
    with engine.no_grad():
        ours(engine.from_numpy(x.astype(np.float64)))
    ours.train()
    assert attention.attention_bias_cache == {}


def test_fuse_equals_timm():
    """``ConvNorm.fuse()`` (a grouped, strided convolution) and ``NormLinear.fuse()`` (with and without bias) give
    timm's folded layers and the unfused layers' eval outputs."""
    torch.manual_seed(9)
    layers = [(timm_msra.ConvNorm(8, 12, 3, 2, 1, groups=4), msra.ConvNorm(8, 12, 3, 2, 1, groups=4),
               image_batch(2, 9, 7, seed=10, c=8)),
              (timm_msra.NormLinear(8, 5), msra.NormLinear(8, 5), image_batch(3, 1, 1, seed=11, c=8)[:, :, 0, 0]),
              (timm_msra.NormLinear(8, 5, bias=False), msra.NormLinear(8, 5, bias=False),
               image_batch(3, 1, 1, seed=12, c=8)[:, :, 0, 0])]
    for reference, ours, x in layers:
        randomize_parameters(reference, 13)
        randomize_statistics(reference.bn)
        ours.load_state_dict(numpy_state(reference))
        fused_reference = reference.fuse()
        fused = ours.fuse()
        assert repr(fused) == repr(fused_reference)
        for key, value in numpy_state(fused_reference).items():
            assert_close(fused.state_dict()[key].numpy(), value, 1e-6, what=key)
        out, ref = both_outputs(reference.eval(), fused, x)
        assert_close(out, ref, 1e-5)


def test_residual_drop_and_dropout_only_in_training():
    """A residual branch with ``drop`` draws timm's per-sample masks after the same seed in training and adds the
    whole branch in eval mode; the model's dropout (the classifier's) is timm's, only in training."""
    torch.manual_seed(14)
    reference = timm_msra.ResidualDrop(timm_msra.ConvNorm(4, 4, 3, 1, 1), drop=0.5)
    ours = msra.ResidualDrop(msra.ConvNorm(4, 4, 3, 1, 1), drop=0.5)
    randomize_parameters(reference, 14, norms=True)
    ours.load_state_dict(numpy_state(reference))
    check_dropout_only_in_training(reference.eval(), ours.eval(), image_batch(8, 5, 5, seed=15, c=4))
    reference, ours = small_pair(seed=16, drop_rate=0.5)
    assert ours.head.drop.p == reference.head.drop.p == 0.5
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=17))


def test_pre_logits_pooling_and_reset_classifier_like_timm():
    """Pre-logits features, ``num_classes=0``, reset_classifier to a new size with concatenated average and max
    pooling (the classifier's BatchNorm on the doubled width) and to none without pooling (the unpooled map), as
    timm's."""
    reference, ours = small_pair(seed=18)
    x = image_batch(2, *SIZE, seed=19)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    assert ours.head_hidden_size == reference.head_hidden_size == pre.shape[1] == 32
    headless = msra.EfficientVitMsra(**SMALL, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    reference.reset_classifier(5, "catavgmax")
    ours.reset_classifier(5, "catavgmax")
    check_same_layout(ours, reference)
    assert ours.get_classifier() is ours.head.linear and not ours.head.training
    assert ours.head_hidden_size == reference.head_hidden_size == 64
    randomize_statistics(randomize_parameters(reference.head, 20).bn)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    features = to_numpy(ours(engine.from_numpy(x)))
    assert features.shape == (2, 32, 2, 1) and ours.head_hidden_size == 32


def test_in_chans_1_intermediates_and_bad_arguments():
    """A one-channel model matches timm's; forward_intermediates and prune_intermediate_layers are timm's; a
    classifier without pooling, an empty window and a stage that widens without downsampling are refused (timm
    asserts)."""
    reference, ours = small_pair(seed=20, in_chans=1)
    x = image_batch(2, *SIZE, seed=21, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    check_intermediates(reference, ours, x, TOL)
    check_intermediates(reference, ours, x, TOL, indices=[0, 1], stop_early=True, intermediates_only=True)
    assert ours.prune_intermediate_layers(2) == reference.prune_intermediate_layers(2) == [1, 2]
    check_same_layout(ours, reference)
    assert ours.num_features == reference.num_features and ours.head_hidden_size == reference.head_hidden_size
    with pytest.raises(ValueError, match="pooled"):
        msra.EfficientVitMsra(**SMALL, global_pool="")
    with pytest.raises(ValueError, match="window_resolution"):
        msra.LocalWindowAttention(16, 4, 2, resolution=6, window_resolution=0)
    with pytest.raises(ValueError, match="width"):
        msra.EfficientVitStage(16, 24, 4)


@pytest.mark.parametrize("out_indices", [None, (0, 2)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's taps (the three stages by default), its
    feature_info, its flattened module names (``patch_embed_conv1``, ``stages_1``) and state dict, and its
    feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(22)
    reference = timm_msra._create_efficientvit_msra("efficientvit_m0", features_only=True, **SMALL, **kwargs)
    randomize_parameters(reference, 22, norms=True).eval()
    ours = msra._create_efficientvit_msra("efficientvit_m0", False, True, features_only=True, **SMALL, **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_same_layout(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == reference.feature_info.get(key)
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=23))
    assert len(outs) == len(refs) == (3 if out_indices is None else 2)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module."""
    names = models.list_models(module="efficientvit_msra")
    assert names == [n for n in timm.list_models(module="efficientvit_msra") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("efficientvit_m*")}
