"""timm's MobileViT and MobileViTv2 against timm 1.0: every registered model's configuration, the layout of the
smallest model of each kind, and, on a small network holding both blocks (non-square patches, maps that are not
multiples of the patch size, so both resizes run), seeded initial weights, float32 eval outputs, float64 train-mode
outputs, gradients and running statistics, drop-path and dropout (the transformer's attention and projection
dropout, the linear attention's), the head API, ``in_chans``, ``features_only``, too-small inputs, empty batches
and the registry."""
import dataclasses

import numpy as np
import pytest
import timm
import timm.models.byobnet as timm_byobnet
import timm.models.mobilevit as timm_mobilevit
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import byobnet, mobilevit
from model_parity import (both_outputs, capture_builder, check_byob_config, check_dropout_only_in_training,
                          check_feature_maps, check_head_api, check_layout, check_train_step, image_batch, numpy_state,
                          randomize_byobnet, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); small models, whose many small ops pay for every thread
# handoff, so one BLAS thread on each side
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["mobilevit_s", "mobilevit_xs", "mobilevit_xxs", "mobilevitv2_050", "mobilevitv2_075", "mobilevitv2_100",
         "mobilevitv2_125", "mobilevitv2_150", "mobilevitv2_175", "mobilevitv2_200"]
# layers whose printout shows every hyper-parameter (kernel, stride, padding, groups, eps, inplace...)
PRINTED = {"Conv2d", "BatchNormAct2d", "LayerNorm", "GroupNorm1", "Linear", "SiLU", "Dropout", "AdaptiveAvgPool2d",
           "Flatten"}


def small_kwargs(module, **block_kwargs):
    """A small network from ``module``'s (timm's or our) stage helpers: two stages of inverted residuals (the second
    strided), a stage ending in a MobileViT block (2 x 3 patches, one transformer block of width 16) and one ending
    in a MobileViTv2 block (3 x 2 patches, two linear transformer blocks of width 12), a 1x1 head convolution;
    ``block_kwargs`` go to both transformer blocks (dropout rates)."""
    v1_ir, v1 = module._mobilevit_block(d=1, c=16, s=2, transformer_dim=16, transformer_depth=1, patch_size=(2, 3),
                                        br=2.0)
    v2_ir, v2 = module._mobilevitv2_block(d=1, c=24, s=2, transformer_depth=2, patch_size=(3, 2))
    v1 = dataclasses.replace(v1, block_kwargs=dict(v1.block_kwargs, **block_kwargs))
    v2 = dataclasses.replace(v2, block_kwargs=dict(v2.block_kwargs, **block_kwargs))
    return dict(blocks=(module._inverted_residual_block(d=1, c=8, s=1, br=2.0),
                        module._inverted_residual_block(d=1, c=8, s=2, br=2.0), (v1_ir, v1), (v2_ir, v2)),
                stem_chs=8, num_features=32, num_classes=10)


def small_pair(seed=0, block_kwargs=None, **overrides):
    """timm's small network (randomised, eval mode) and ours with its weights, built without random init."""
    block_kwargs = block_kwargs or {}
    torch.manual_seed(seed)
    reference = timm.create_model("mobilevit_xxs", **small_kwargs(timm_mobilevit, **block_kwargs), **overrides)
    randomize_byobnet(reference, seed).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = mobilevit.mobilevit_xxs(**small_kwargs(mobilevit, **block_kwargs), **overrides)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_entrypoint_configs_match_timm(monkeypatch):
    """Every entrypoint builds ByobNet with timm's configuration (stages, block kwargs, stem, widths, activation,
    head convolution); timm's fields we leave out keep their defaults there."""
    ours_calls = capture_builder(monkeypatch, mobilevit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_mobilevit, "build_model_with_cfg")
    for name in NAMES:
        getattr(mobilevit, name)()
        getattr(timm_mobilevit, name)()
        (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) = ours_calls.pop(), timm_calls.pop()
        assert ours_cls is byobnet.ByobNet and timm_cls is timm_byobnet.ByobNet
        assert set(ours_kwargs) == {"cfg", "progress"}
        assert timm_kwargs["feature_cfg"] == dict(flatten_sequential=True)
        check_byob_config(ours_kwargs["cfg"], timm_kwargs["model_cfg"], name)


def test_layout_equals_timm(monkeypatch):
    """The smallest model of each kind: state_dict keys in order, shapes and dtypes, module names and printouts,
    feature_info, num_features, head_hidden_size and default_cfg; ``features_only`` gives timm's five maps by default
    (timm's model on the meta device, ours without random init)."""
    monkeypatch.setattr(timm_byobnet, "_init_weights", lambda *args, **kwargs: None)
    skip_random_init(monkeypatch)
    for name in ("mobilevit_xxs", "mobilevitv2_050"):
        with torch.device("meta"):
            reference = timm.create_model(name, pretrained=False)
        ours = getattr(mobilevit, name)()
        check_layout(ours, reference, (), PRINTED)
    with torch.device("meta"):
        reference = timm.create_model("mobilevit_xxs", pretrained=False, features_only=True)
    ours = mobilevit.mobilevit_xxs(features_only=True)
    assert ours.feature_info.module_name() == reference.feature_info.module_name()
    assert ours.feature_info.channels() == reference.feature_info.channels() == [16, 24, 48, 64, 320]
    assert ours.feature_info.reduction() == reference.feature_info.reduction() == [2, 4, 8, 16, 32]


def test_small_network_matches_timm():
    """The small network: seeded init bit for bit (byobnet's N(0, 2 / fan-out) convolutions and N(0, 0.01^2)
    linear layers drawn over PyTorch's default init, unit norms) with both random streams in step; then with timm's
    randomised weights, float32 eval logits of a batch of 2 at an odd size (maps of 9 x 8 and 5 x 4 in the blocks: both
    resize), and at a size whose maps fit the patches (6 x 12 and 3 x 6: neither resizes); with output stride 8 (the
    MobileViTv2 stage dilated instead of strided)."""
    torch.manual_seed(5)
    reference = timm.create_model("mobilevit_xxs", **small_kwargs(timm_mobilevit))
    engine.manual_seed(5)
    ours = mobilevit.mobilevit_xxs(**small_kwargs(mobilevit))
    expected = numpy_state(reference)
    state = {k: v.numpy() for k, v in ours.state_dict().items()}
    assert list(state) == list(expected)
    for key, value in expected.items():
        assert state[key].dtype == value.dtype and np.array_equal(state[key], value), key
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    randomize_byobnet(reference, 1).eval()
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    for size in ((67, 59), (48, 96)):
        out, ref = both_outputs(reference, ours, image_batch(2, *size, seed=1))
        assert out.shape == (2, 10)
        assert_close(out, ref, 1e-5)
    reference, ours = small_pair(seed=1, output_stride=8)
    assert ours.feature_info == reference.feature_info
    out, ref = both_outputs(reference, ours, image_batch(2, 37, 41, seed=1))
    assert_close(out, ref, 1e-5)


def test_train_gradients_match_timm():
    """float64, train mode: outputs, the input gradient, every parameter's gradient and the updated running
    statistics."""
    reference, ours = small_pair(seed=2)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 29, 27, seed=2).astype(np.float64), rtol=1e-9, floor=1e-6)


def test_drop_path_and_dropout():
    """timm's per-block drop-path rates (0 at the first block, the rate at the last); the transformer blocks'
    attention and projection dropout and the classifier's; in train mode both draw timm's random stream (the same
    outputs after the same seed, others after another); in eval mode nothing is drawn or dropped."""
    x = image_batch(2, 21, 23, seed=3)
    reference, ours = small_pair(seed=3, block_kwargs=dict(drop=0.2, attn_drop=0.2), drop_path_rate=0.5,
                                 drop_rate=0.5)
    rates = [getattr(m, "p", 0.0) for name, m in ours.named_modules() if name.endswith("drop_path1")]
    expected = [m.drop_prob for name, m in reference.named_modules() if name.endswith("drop_path1")]
    assert rates == pytest.approx(expected) and expected[-1] == 0.5 and len(expected) == 3
    check_dropout_only_in_training(reference, ours, x, train_rtol=1e-5)


def test_head_api_matches_timm():
    """``num_classes=0``, ``reset_classifier`` and ``global_pool=''`` as timm's (``model_parity.check_head_api``)."""
    x = image_batch(2, 27, 25, seed=4)
    reference, ours = small_pair(seed=4)
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        headless = mobilevit.mobilevit_xxs(**dict(small_kwargs(mobilevit), num_classes=0)).eval()
    check_head_api(reference, ours, headless, x, 32, (2, 32, 3, 2))


def test_in_chans_and_features_only_match_timm():
    """``in_chans=1``: the stem takes one channel and gives timm's logits; ``features_only=True`` gives timm's five
    maps (each stage's before a reduction, the head convolution's, after the MobileViTv2 block's map grew to fit its
    patches) under timm's flattened names, ``out_indices`` some of them."""
    reference, ours = small_pair(seed=6, in_chans=1)
    assert ours.stem.conv.weight.shape == (8, 1, 3, 3)
    out, ref = both_outputs(reference, ours, image_batch(2, 33, 31, seed=6, c=1))
    assert_close(out, ref, 1e-5)
    x = image_batch(2, 35, 37, seed=7)
    reference, ours = small_pair(seed=7, features_only=True, out_indices=(0, 1, 2, 3))
    maps = check_feature_maps(reference, ours, x, 4, 1e-5)
    assert [m.shape[1:] for m in maps] == [(8, 18, 19), (8, 9, 10), (16, 5, 5), (32, 3, 4)]
    reference, ours = small_pair(seed=7, features_only=True, out_indices=(1, 3))
    check_feature_maps(reference, ours, x, 2, 1e-5)


def test_input_sizes():
    """An empty image is refused; the smallest one, 1 x 1, runs as in timm (every map is resized up to its
    patches); an empty batch gives no logits (timm's reshapes fail on one)."""
    reference, ours = small_pair(seed=8)
    with pytest.raises((RuntimeError, ValueError)):
        ours(engine.zeros(1, 3, 0, 0))
    out, ref = both_outputs(reference, ours, image_batch(1, 1, 1, seed=8))
    assert_close(out, ref, 1e-5)
    with engine.no_grad():
        assert ours(engine.zeros(0, 3, 29, 31)).shape == (0, 10)


def test_list_models():
    """The ``mobilevit`` module lists the models of timm's ``mobilevit`` module with ImageNet-1k weights."""
    assert sorted(models.list_models(module="mobilevit")) == NAMES
    pretrained = {n.split(".")[0] for n in timm.list_pretrained()
                  if timm.models.get_pretrained_cfg(n).num_classes == 1000}
    assert pretrained & set(timm.list_models(module="mobilevit")) == set(NAMES)
