"""timm parity of CPUBone (cpubone_nano, t0, s0, b0_bfrobust, b1_bfrobust, b1_dwnorm, b2_bfrobust, b2pt5_dwnorm,
b3): every variant's configuration and layout, seeded (PyTorch-default) initialisation, eval outputs (float32) of
small models (the released blocks: fused inverted residuals with grouped expansions, 2x2 kernels padded at the top
and left, the strided attention padded at odd sizes and upsampled by repeating pixels; unfused blocks with 5x5 and
3x3 attention projections, depthwise transposed upsampling and a single head; fused blocks as wide as 256 channels
turning to normed inverted residuals, dense transposed upsampling), float64 train-mode outputs, gradients and
BatchNorm statistics, all with timm's weights loaded; dropout and stochastic depth, and the timm API (pre-logits,
unpooled per-pixel head, reset_classifier with reset_other, in_chans, features_only, forward_intermediates,
prune_intermediate_layers, bad arguments, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import cpubone as timm_cpubone

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import cpubone
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, features_only_pair, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["cpubone_nano", "cpubone_t0", "cpubone_s0", "cpubone_b0_bfrobust", "cpubone_b1_bfrobust",
         "cpubone_b1_dwnorm", "cpubone_b2_bfrobust", "cpubone_b2pt5_dwnorm", "cpubone_b3"]
TOL = 1e-4
PRINTED = ("Conv2d", "ConvTranspose2d", "BatchNorm2d", "GroupNorm1", "LayerNorm", "Hardswish", "GELU", "Linear",
           "Dropout", "Upsample", "ZeroPad2d", "AdaptiveAvgPool2d", "Flatten", "Identity")
RELEASED = dict(fused_conv=True, fused_downsample=True, attn_mlp_ratio=4, expand_groups=2, small_kernels=True,
                attn_upsample="nearest")
# Small models, every stage one or two blocks: the released blocks (a stem block, two blocks in the first stage,
# attention stages 120 and 128 wide for two heads of 30 and 32 channels); unfused ones (5x5 strided and 3x3 attention
# projections, depthwise transposed upsampling, a single head then two, norms after the depthwise and projection
# layers); fused ones whose last stage is 256 wide (so its local blocks are normed inverted residuals) with dense
# transposed upsampling and 2x2 kernels.
SMALL = {
    "released": dict(width_list=[8, 8, 16, 120, 128], depth_list=[1, 2, 1, 1, 1], head_widths=(24, 32), **RELEASED),
    "unfused": dict(width_list=[8, 8, 8, 16, 128], depth_list=[1, 1, 1, 1, 1], head_widths=(16, 24),
                    expand_ratio=2, downsample_expand_ratios=(2, 3, 2, 1), local_mbconv_norm="depth_proj"),
    "wide": dict(width_list=[8, 8, 8, 16, 256], depth_list=[0, 1, 1, 1, 1], head_widths=(16, 24), expand_ratio=1,
                 fused_conv=True, small_kernels=True, expand_groups=2, attn_mlp_ratio=1, local_mbconv_norm="all"),
}
SIZE = (35, 33)


def small_pair(kind="released", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's seeded weights randomised (norms included) and loaded in ours
    through numpy, in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_cpubone.CPUBone(**config), seed, norms=True).eval()
    ours = cpubone.CPUBone(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, cpubone, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_cpubone, "build_model_with_cfg")
    for name in NAMES:
        getattr(cpubone, name)()
        getattr(timm_cpubone, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert timm_kwargs.pop("feature_cfg") == dict(out_indices=(0, 1, 2, 3), flatten_sequential=True)
        timm_kwargs.pop("pretrained_filter_fn")
        assert (ours_cls.__name__, ours_kwargs) == (timm_cls.__name__, timm_kwargs | {"progress": True}), name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # timm's default init, drawn even on the meta device, is half its build time: skipped as ours is
    for layer in (torch.nn.modules.conv._ConvNd, torch.nn.Linear):
        monkeypatch.setattr(layer, "reset_parameters", lambda self: None)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED)


@pytest.mark.parametrize("kind", ["unfused", "wide"])
def test_seeded_init_equals_timm(kind):
    """The same seed gives timm's (PyTorch-default) initial weights bit for bit, transposed convolutions included,
    and leaves both random streams in step."""
    config = dict(SMALL[kind], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_cpubone.CPUBone(**config), lambda: cpubone.CPUBone(**config),
                                        3, lambda _: set(), kind)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's, the MLPs' dropout drawing timm's masks after the same seed."""
    reference, ours = small_pair(seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    torch.manual_seed(5)
    engine.manual_seed(5)
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's linear rates over the stem's and stages' blocks, unused modules on the strided
    blocks included), the MLPs' and the head's dropout draw timm's masks after the same seed in training and leave
    eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.5, proj_drop_rate=0.25, drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.1, 0.2, 0.3] + [0.4] * 3 + [0.5] * 3)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_unpooled_head_and_bad_arguments():
    """On a one-channel unfused model upsampling its attention by repeating pixels: pre-logits features,
    ``num_classes=0``, reset_classifier to the unpooled map (the head's linear layers at every pixel) and with
    ``reset_other`` (pooled stage features straight into the classifier), as timm's; other pooling, a wider head
    input with its 1x1 convolution kept, unknown norm placements and upsampling are refused (timm asserts)."""
    config = dict(SMALL["unfused"], in_chans=1, attn_upsample="nearest")
    reference, ours = small_pair("unfused", seed=9, in_chans=1, attn_upsample="nearest")
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 24)
    assert_close(pre, pre_ref, TOL)
    headless = cpubone.CPUBone(**config, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.classifier")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    for args, shape in (((5, ""), (2, 5, 2, 2)), ((3, "avg", True), (2, 3))):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        check_structure(ours, reference)
        assert not ours.get_classifier().training
        assert (ours.global_pool, ours.head_hidden_size) == (reference.global_pool, reference.head_hidden_size)
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == shape
        assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(0, "max")
    with pytest.raises(ValueError, match="in_conv"):
        headless.head.reset(0, in_features=48)
    with pytest.raises(ValueError, match="local_mbconv_norm"):
        cpubone.CPUBone(**dict(SMALL["released"], local_mbconv_norm="none"))
    with pytest.raises(ValueError, match="attn_upsample"):
        cpubone.CPUBone(**dict(SMALL["released"], attn_upsample="bilinear"))


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices), feature_info,
    flattened module names (``stem_0``, ``stages_3``) and state dict, and feature maps; forward_intermediates and
    stopping early; prune_intermediate_layers drops the later stages and strips the head to pooling as timm's."""
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 4), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("cpubone_nano", randomize_parameters, 14, **SMALL["released"],
                                             **kwargs)
        assert type(ours) is FlatFeatureListNet
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True, intermediates_only=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights under its timm name and module."""
    names = models.list_models(module="cpubone")
    assert names == [n for n in timm.list_models(module="cpubone") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("cpubone*")}
