"""timm parity of EfficientViT from MIT (efficientvit_b0 to b3, efficientvit_l1 to l3): every variant's configuration
and layout, seeded initialisation, eval outputs (float32) of a small B and a small L model (the stems'
depthwise-separable and plain convolution pairs, inverted residuals plain, fused and with fewer norms, the
multi-scale linear attention, hard-swish and GELU, BatchNorm eps 1e-7, the head's LayerNorm), float64 train-mode
outputs, gradients and BatchNorm statistics, all with timm's weights loaded; the linear attention computed in float32
as timm's; dropout, and the timm API (pre-logits, pooling, reset_classifier with reset_other, in_chans,
features_only, forward_intermediates, prune_intermediate_layers, bad arguments, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import efficientvit_mit as timm_mit

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import efficientvit_mit as mit
from model_parity import (both_outputs, check_dropout_only_in_training, check_intermediates, check_layout,
                          check_seeded_init, check_structure, check_train_step, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["efficientvit_b0", "efficientvit_b1", "efficientvit_b2", "efficientvit_b3", "efficientvit_l1",
         "efficientvit_l2", "efficientvit_l3"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "LayerNorm", "ReLU", "ReLU6", "Hardswish", "GELUTanh", "Linear", "Dropout")

# Small models of both classes: the B model's stem has a depthwise-separable block, its first stage a residual
# inverted residual after the strided one, its last two stages one attention block each (heads of 4 channels); the
# L model has every stage of one block (fused inverted residuals, then ones with fewer norms, then attention).
SMALL = {
    "b": (dict(widths=(4, 8, 8, 16, 16), depths=(1, 2, 1, 1, 1), head_dim=4, head_widths=(24, 32), expand_ratio=2),
          timm_mit.EfficientVit, mit.EfficientVit),
    "l": (dict(widths=(4, 8, 8, 8, 16), depths=(1, 1, 1, 1, 1), head_dim=4, head_widths=(24, 32)),
          timm_mit.EfficientVitLarge, mit.EfficientVitLarge),
}
SIZE = (37, 45)


def small_pair(kind="b", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights randomised (norms included) and loaded in ours,
    in eval mode."""
    config, timm_cls, ours_cls = SMALL[kind]
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_cls(**config, **kwargs), seed, norms=True).eval()
    ours = ours_cls(**config, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def attention_in_own_dtype(self, q, k, v):
    """timm's linear attention without its float32 cast (the same code runs on both sides' tensors)."""
    out = q @ (k.transpose(-1, -2) @ v)
    return out[..., :-1] / (out[..., -1:] + self.eps)


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(mit, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(
        (cls.__name__, kw)))
    monkeypatch.setattr(timm_mit, "build_model_with_cfg", lambda cls, variant, pretrained, **kw: timm_calls.append(
        (cls.__name__, kw)))
    for name in NAMES:
        getattr(mit, name)()
        getattr(timm_mit, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert timm_kwargs.pop("feature_cfg") == dict(flatten_sequential=True, out_indices=(0, 1, 2, 3))
        assert (ours_cls, ours_kwargs) == (timm_cls, timm_kwargs), name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's (PyTorch-default) initial weights bit for bit and leaves both random streams in
    step."""
    config, timm_cls, ours_cls = SMALL[kind]
    reference, ours = check_seeded_init(lambda: timm_cls(**config, num_classes=10),
                                        lambda: ours_cls(**config, num_classes=10), 3, lambda _: set(), kind)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("kind", list(SMALL))
def test_train_mode_gradients_and_statistics_match_timm(kind, monkeypatch):
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's, the linear attention computed in float64 on both sides (timm's float32 cast would
    leave float32 rounding in a float64 comparison; ``test_linear_attention_in_float32`` checks the cast)."""
    monkeypatch.setattr(timm_mit.LiteMLA, "_attn", attention_in_own_dtype)
    monkeypatch.setattr(mit.LiteMLA, "_attn", attention_in_own_dtype)
    reference, ours = small_pair(kind, seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 23, 21, seed=5).astype(np.float64))


def test_linear_attention_in_float32():
    """On float64 inputs the linear attention is computed in float32 and returned in float64, as timm's: both
    results agree to float32 precision and differ from the attention computed in float64 by float32 rounding."""
    reference = timm_mit.LiteMLA(16, 12, dim=4)
    ours = mit.LiteMLA(16, 12, dim=4)
    rng = np.random.default_rng(6)
    q, k = (np.abs(rng.standard_normal((2, 4, 35, 4))) for _ in range(2))
    v = np.concatenate([rng.standard_normal((2, 4, 35, 4)), np.ones((2, 4, 35, 1))], axis=-1)
    out = to_numpy(ours._attn(*(engine.from_numpy(a) for a in (q, k, v))))
    ref = to_numpy(reference._attn(*(torch.from_numpy(a) for a in (q, k, v))))
    exact = to_numpy(attention_in_own_dtype(reference, *(torch.from_numpy(a) for a in (q, k, v))))
    assert out.dtype == ref.dtype == np.float64
    assert_close(out, ref, 1e-6)
    assert 1e-12 < np.abs(out - exact).max() / np.abs(exact).max() < 1e-6


def test_dropout_only_in_training():
    """The head's dropout (before the final layer) draws timm's masks after the same seed in training and leaves
    eval outputs alone."""
    reference, ours = small_pair("l", seed=8, drop_rate=0.5)
    assert ours.head.classifier[3].p == reference.head.classifier[3].p == 0.5
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=9))


def test_pre_logits_pooling_and_reset_classifier_like_timm():
    """Pre-logits features (after the head's LayerNorm and activation), ``num_classes=0``, reset_classifier to a
    new size and pooling, and with ``reset_other`` (pooled stage features straight into the classifier), as timm's;
    pooling that drops or widens the features is refused."""
    reference, ours = small_pair("b", seed=10)
    x = image_batch(2, *SIZE, seed=11)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    assert ours.head_hidden_size == reference.head_hidden_size == pre.shape[1] == 32
    headless = mit.EfficientVit(**SMALL["b"][0], num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.classifier.4")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    for args in ((5, "max"), (3, None, True)):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        check_structure(ours, reference)
        assert ours.get_classifier() is ours.head.classifier[4] and not ours.get_classifier().training
        assert (ours.global_pool, ours.head_hidden_size) == (reference.global_pool, reference.head_hidden_size)
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == (2, args[0])
        assert_close(out, ref, TOL)
    for pool in ("", "catavgmax"):
        with pytest.raises(ValueError, match="pooling"):
            mit.EfficientVit(**SMALL["b"][0], global_pool=pool)
        with pytest.raises(ValueError, match="pooling"):
            ours.reset_classifier(0, pool)


def test_in_chans_1_intermediates_and_bad_arguments():
    """A one-channel model matches timm's; forward_intermediates and prune_intermediate_layers (which strips the
    head to pooling) are timm's; an unknown block type is refused (timm asserts)."""
    reference, ours = small_pair("l", seed=12, in_chans=1)
    x = image_batch(2, *SIZE, seed=13, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    check_intermediates(reference, ours, x, TOL, indices=2)
    check_intermediates(reference, ours, x, TOL, indices=[0, 2], stop_early=True, intermediates_only=True)
    assert ours.prune_intermediate_layers([1, 2]) == reference.prune_intermediate_layers([1, 2]) == [1, 2]
    check_structure(ours, reference)
    assert ours.num_features == reference.num_features and ours.head_hidden_size == reference.head_hidden_size
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 8)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="block_type"):
        mit.build_local_block(4, 4, 1, 1, engine.nn.BatchNorm2d, engine.nn.ReLU, block_type="wide")


@pytest.mark.parametrize("out_indices", [None, (1, 3)])
def test_features_only_matches_timm(out_indices):
    """features_only through the entrypoints' builder: timm's taps (the four stages by default), its feature_info,
    its flattened module names (``stem_in_conv``, ``stages_2``) and state dict, and its feature maps."""
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    torch.manual_seed(14)
    reference = timm_mit._create_efficientvit("efficientvit_b0", features_only=True, **SMALL["b"][0], **kwargs)
    randomize_parameters(reference, 14, norms=True).eval()
    ours = mit._create_efficientvit("efficientvit_b0", False, True, features_only=True, **SMALL["b"][0], **kwargs)
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == reference.feature_info.get(key)
    outs, refs = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=15))
    assert len(outs) == len(refs) == (4 if out_indices is None else 2)
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module."""
    names = models.list_models(module="efficientvit_mit")
    assert names == [n for n in timm.list_models(module="efficientvit_mit") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("efficientvit_[bl]*")}
