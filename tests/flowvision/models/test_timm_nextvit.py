"""timm parity of Next-ViT (nextvit_small/base/large): every variant's configuration and layout; a small stage
(convolution blocks, a transformer block with pooled keys and values, BatchNorm1d) in float32 eval mode, float64
train mode (outputs, gradients, BatchNorm statistics) and after ``reparameterize()`` (BatchNorms folded, as timm's);
stochastic depth and dropout masks; the smallest whole model (its widths are fixed) with timm's weights: logits,
pre-logits, reset_classifier, features_only and forward_intermediates; list_models."""
import numpy as np
import pytest
import timm
import torch
from timm.models import nextvit as timm_nextvit

import engine
import flowvision.models as models
from flowvision.models.timm_families import nextvit
from model_parity import (both_outputs, check_dropout_only_in_training, check_intermediates, check_layout,
                          check_structure, check_train_step, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["nextvit_base", "nextvit_large", "nextvit_small"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNorm1d", "ReLU", "Linear", "AvgPool2d", "AvgPool1d", "Dropout")


def small_stage(module, **kwargs):
    """Two convolution blocks (the first strided) and a transformer block (96 + 32 channels, 16-wide heads, keys
    and values pooled 4-fold) of ``module``'s classes."""
    return module.NextStage(16, [32, 32, 128], [module.NextConvBlock] * 2 + [module.NextTransformerBlock], stride=2,
                            sr_ratio=2, head_dim=16, mix_block_ratio=0.75, **kwargs)


def randomize_all_norms(model, seed):
    """Random parameters and statistics, BatchNorm1d's included."""
    randomize_parameters(model, seed, norms=True)
    g = torch.Generator().manual_seed(seed + 1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


def stage_pair(seed, **kwargs):
    """(timm's, ours) small stages with timm's random weights in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_all_norms(small_stage(timm_nextvit, **kwargs), seed).eval()
    ours = small_stage(nextvit, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(nextvit, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_nextvit, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(nextvit, name)()
        getattr(timm_nextvit, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)
        assert ours.stage_out_idx == reference.stage_out_idx


def test_stage_eval_train_and_reparameterize_match_timm():
    """A small stage: float32 eval outputs; after ``reparameterize()`` on every block timm's folded weights and
    outputs (the norms gone); float64 train mode: outputs, gradients and BatchNorm statistics."""
    reference, ours = stage_pair(1)
    x = np.random.default_rng(2).standard_normal((2, 16, 13, 15)).astype(np.float32)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 128, 7, 8)
    assert_close(out, ref, TOL)
    for model in (reference, ours):
        for block in model.blocks:
            block.reparameterize()
            block.reparameterize()
    check_structure(ours, reference, types=False)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert_close(state[key].numpy(), value, 1e-5, what=key)
    fused, fused_ref = both_outputs(reference, ours, x)
    assert_close(fused, fused_ref, TOL)
    assert_close(fused, ref, TOL)
    reference, ours = stage_pair(3)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, x[:, :, :9, :10].astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (split between a transformer block's attentions), the MLPs' and attention outputs'
    dropout draw timm's masks after the same seed in training and leave eval outputs alone."""
    reference, ours = stage_pair(4, drop_path=[0.2, 0.4, 0.6], drop=0.3)
    rates = [m.p for m in ours.modules() if type(m).__name__ == "StochasticDepth"]
    assert rates == [m.drop_prob for m in reference.modules() if isinstance(m, timm.layers.DropPath)]
    x = np.random.default_rng(5).standard_normal((2, 16, 9, 10)).astype(np.float32)
    check_dropout_only_in_training(reference, ours, x)


def test_smallest_model_head_features_and_intermediates_match_timm(monkeypatch):
    """The smallest whole model (one block a stage but the third's five) with random weights: logits, pre-logits,
    reset_classifier to new pooling and to none, forward_intermediates, and features_only (timm's flattened names,
    taps and maps); in_chans=1."""
    kwargs = dict(depths=(1, 1, 5, 1), stem_chs=(8, 8, 16), num_classes=10, in_chans=1)
    with torch.device("meta"):
        reference = timm_nextvit.NextViT(**kwargs)
    reference = randomize_all_norms(reference.to_empty(device="cpu"), 6).eval()
    skip_random_init(monkeypatch)
    ours = nextvit.NextViT(**kwargs)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    x = image_batch(2, 33, 31, seed=7, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 10)
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    check_intermediates(reference, ours, x, TOL, indices=(1, 3), norm=True)
    reference.reset_classifier(5, "avgmax")
    ours.reset_classifier(5, "avgmax")
    ours.head.fc.load_state_dict({k: v.numpy() for k, v in reference.head.fc.state_dict().items()})
    assert_close(*both_outputs(reference, ours, x), TOL)
    reference.reset_classifier(0)
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity)
    assert ours.head_hidden_size == reference.head_hidden_size == 1024
    features = models.create_model("nextvit_small", features_only=True, out_indices=(0, 2), **kwargs)
    with torch.device("meta"):
        timm_features = timm.create_model("nextvit_small", features_only=True, out_indices=(0, 2), **kwargs)
    assert list(features.state_dict()) == list(timm_features.state_dict())
    assert features.feature_info.module_name() == timm_features.feature_info.module_name()
    assert features.feature_info.channels() == [96, 512]
    state = numpy_state(reference)
    features.load_state_dict({k: state[k.replace("stem_", "stem.", 1).replace("stages_", "stages.", 1)]
                              for k in features.state_dict()})
    with torch.no_grad():
        refs = reference.forward_intermediates(torch.from_numpy(x), indices=(0, 2), intermediates_only=True)
    with engine.no_grad():
        outs = features.eval()(engine.from_numpy(x))
    assert len(outs) == len(refs) == 2
    for o, r in zip(outs, refs):
        assert_close(o.numpy(), r.numpy(), TOL)


def test_list_models():
    """The registry lists every variant under its timm name and module, all with 1k weights."""
    names = models.list_models(module="nextvit")
    assert names == timm.list_models(module="nextvit") == NAMES
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("nextvit*")}
