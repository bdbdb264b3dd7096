"""timm parity of LeViT (timm's ``levit`` module), linear and convolutional: every registered variant's configuration
(timm's untrained experiments too) and full-size layout against timm's on the meta device; seeded initialisation,
float32 eval outputs and float64 train-mode outputs, gradients and BatchNorm statistics of small models of both
forms, with timm's randomised weights loaded (and of the stride-8 stem with SiLU); drop path and dropout; the
distilled heads; and the timm API (pre-logits, num_classes=0, reset_classifier, in_chans, the image size check,
features_only, forward_intermediates, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import levit as timm_levit

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet, FlatFeatureListNet
from flowvision.models.timm_families import levit  # registers the untrained names too
from model_parity import (both_outputs, capture_builder, check_distilled_training, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, features_only_pair, image_batch, numpy_state,
                          pre_logits, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["levit_128", "levit_128s", "levit_192", "levit_256", "levit_384", "levit_conv_128", "levit_conv_128s",
         "levit_conv_192", "levit_conv_256", "levit_conv_384"]
# timm's experiments without published weights (SiLU; a stride-8 stem, wider, deeper; one head but levit_*384_s8)
UNTRAINED_NAMES = ["levit_256d", "levit_384_s8", "levit_512", "levit_512_s8", "levit_512d", "levit_conv_256d",
                   "levit_conv_384_s8", "levit_conv_512", "levit_conv_512_s8", "levit_conv_512d"]
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNorm1d", "Linear", "Hardswish", "SiLU", "AvgPool2d", "Dropout",
           "Downsample")
TOL = 1e-5
# Small models: three stages of one, two and one blocks (key width 4, 2 to 4 heads, downsampling with 4 and 6
# heads); an 80x48 image gives a 5x3 grid, then 3x2 and 2x1 (odd sizes, subsampled with the last row kept). LeViT
# only runs at multiples of 16 pixels, the stem's stride, as in timm.
SMALL = dict(img_size=(80, 48), embed_dim=(16, 24, 32), key_dim=4, num_heads=(2, 3, 4), depth=(1, 2, 1),
             num_classes=7)
SIZE = (80, 48)
# The stride-8 stem (three convolutions) with SiLU, on a 40x24 image: the same 5x3, 3x2, 2x1 grids.
S8 = dict(SMALL, img_size=(40, 24), stem_type="s8", act_layer="silu")


def randomize(model, seed):
    """Random values for every parameter and BatchNorm statistic of a timm model (zero biases and attention biases,
    unit and zero norm scales would hide bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bn.weight"):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif name.endswith(("bias", "attention_biases")):
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel()))
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.3)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model


def small_pair(use_conv=False, seed=0, cls="LevitDistilled", **kwargs):
    """(timm's, ours) small LeViT (distilled unless ``cls`` says 'Levit') with timm's randomised weights in both, in
    eval mode."""
    config = dict(SMALL, use_conv=use_conv, **kwargs)
    torch.manual_seed(seed)
    reference = randomize(getattr(timm_levit, cls)(**config), seed)
    ours = getattr(levit, cls)(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint (the untrained ones too) hands its class (distilled or not, as timm's) timm's configuration;
    built full size, the smallest linear and the largest convolutional model with weights and three untrained ones
    (the deeper linear one, both convolutional ones with the stride-8 stem) have timm's layout: state_dict keys,
    order, shapes and dtypes, module tree and classes, layer printouts, feature_info, num_features, default_cfg
    (timm's configuration of the distilled levit_conv_384_s8 names its first head only as its classifier, ours
    both)."""
    ours_calls = capture_builder(monkeypatch, levit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_levit, "build_model_with_cfg")
    names = NAMES + UNTRAINED_NAMES
    for name in names:
        getattr(levit, name)()
        getattr(timm_levit, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(names, ours_calls, timm_calls):
        distilled = name in NAMES or name.endswith("384_s8")
        assert ours_cls.__name__ == timm_cls.__name__ == ("LevitDistilled" if distilled else "Levit"), name
        assert ours_kwargs.pop("progress") is True
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("pretrained_filter_fn", "feature_cfg")}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(levit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    for name in ("levit_128s", "levit_conv_384", "levit_256d", "levit_conv_384_s8", "levit_conv_512_s8"):
        with torch.device("meta"):
            reference = timm.create_model(name)
        if name == "levit_conv_384_s8":
            reference.pretrained_cfg = dict(reference.pretrained_cfg, classifier=("head.linear", "head_dist.linear"))
        ours = models.create_model(name)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("use_conv", [False, True])
def test_seeded_init_and_eval_outputs_match_timm(use_conv):
    """The same seed gives timm's initial weights (the heads' truncated normals within 2 float32 ulps, the rest bit
    for bit) and attention-bias indices, and leaves both random streams in step; with timm's randomised weights,
    float32 eval logits (the average of the two heads) and pre-logits features of a batch of 2 equal timm's."""
    check_seeded_init(lambda: timm_levit.LevitDistilled(**SMALL, use_conv=use_conv),
                      lambda: levit.LevitDistilled(**SMALL, use_conv=use_conv), 3,
                      lambda reference: {"head.linear.weight", "head_dist.linear.weight"}, what=use_conv)
    reference, ours = small_pair(use_conv, seed=1)
    ours_idxs = {n: b.numpy() for n, b in ours.named_buffers() if n.endswith("attention_bias_idxs")}
    ref_idxs = {n: b.numpy() for n, b in reference.named_buffers() if n.endswith("attention_bias_idxs")}
    assert list(ours_idxs) == list(ref_idxs) and len(ref_idxs) == 6
    for name, idxs in ref_idxs.items():
        assert np.array_equal(ours_idxs[name], idxs), name
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)


@pytest.mark.parametrize("use_conv", [False, True])
def test_train_mode_gradients_and_statistics_match_timm_float64(use_conv):
    """float64, train mode (BatchNorm on batch statistics; the heads' average): outputs, input gradient, every
    parameter's gradient (attention biases included) and every buffer (running statistics, bias indices) equal
    timm's."""
    reference, ours = small_pair(use_conv, seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_stride8_stem_with_silu_matches_timm():
    """The stride-8 stem (three convolutions) with SiLU, plain (one-head) models: seeded initialisation as timm's;
    float32 eval logits of the linear form and a float64 train step of the convolutional one (outputs, every
    gradient, BatchNorm statistics) equal timm's."""
    reference, ours = check_seeded_init(lambda: timm_levit.Levit(**S8), lambda: levit.Levit(**S8), 3,
                                        lambda reference: {"head.linear.weight"}, what="s8")
    assert [n for n, _ in ours.stem.named_children()] == ["conv1", "act1", "conv2", "act2", "conv3"]
    assert ours.feature_info == reference.feature_info and ours.feature_info[0]["reduction"] == 8
    reference, ours = small_pair(seed=15, cls="Levit", **S8)
    x = image_batch(2, *S8["img_size"], seed=16)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    reference, ours = small_pair(True, seed=17, cls="Levit", **S8)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, x.astype(np.float64))


def test_drop_path_dropout_and_distilled_training():
    """timm's rates (drop path on every residual branch, dropout in both heads); eval outputs unaffected; in train
    mode the same seed draws timm's masks; distilled training returns both heads' logits, as timm's."""
    reference, ours = small_pair(seed=6, drop_rate=0.3, drop_path_rate=0.2)
    reference.double()
    ours.double()
    assert check_drop_rates(reference, ours) == [0.2] * 10
    x = image_batch(2, *SIZE, seed=7).astype(np.float64)
    check_dropout_only_in_training(reference, ours, x, 1e-10, 1e-10)
    check_distilled_training(reference, ours, x, 1e-10, 7)


def test_head_api_in_chans_and_image_size():
    """The plain (undistilled) model with in_chans=1 (a one-channel stem) gives timm's outputs; num_classes=0 the
    pooled features; reset_classifier to new classes and to no pooling as timm's (both heads of the distilled
    model); an image of another size is refused."""
    reference, ours = small_pair(seed=9, cls="Levit", in_chans=1)
    x = image_batch(2, *SIZE, seed=10, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7)
    assert_close(out, ref, TOL)
    headless = levit.Levit(**dict(SMALL, num_classes=0, in_chans=1))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    pre, pre_ref = both_outputs(partial(pre_logits, reference), headless.eval(), x)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)
    reference.reset_classifier(5)
    ours.reset_classifier(5)
    assert tuple(ours.get_classifier().linear.weight.shape) == (5, 32)
    assert not ours.head.training and ours.num_classes == 5
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(x)).shape) == (2, 2, 32)
    with pytest.raises(ValueError):
        ours.reset_classifier(5, "max")
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 96, 48, c=1)))
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 1, 1, c=1)))
    distilled = levit.LevitDistilled(**SMALL)
    distilled.reset_classifier(5)
    assert [tuple(h.linear.weight.shape) for h in distilled.get_classifier()] == [(5, 32), (5, 32)]
    distilled.reset_classifier(0)
    assert all(isinstance(h, engine.nn.Identity) for h in distilled.get_classifier())


@pytest.mark.parametrize("name, out_indices", [("levit_128s", (0, 1)), ("levit_conv_128s", None)])
def test_features_only_and_intermediates_match_timm(name, out_indices):
    """features_only through the entrypoints: timm's wrapper (the stages' outputs from forward_intermediates for the
    linear form, the flattened stage list for the convolutional one), its state_dict keys (the stages after the
    last one picked pruned), feature_info and maps; forward_intermediates' maps and final tokens, stopping early,
    as timm's."""
    kwargs = dict(SMALL, num_classes=1000)
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    reference, ours = features_only_pair(name, randomize, 11, **kwargs)
    assert type(ours) is (FlatFeatureListNet if "conv" in name else FeatureGetterNet)
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=12), 3 if out_indices is None else 2, TOL)
    reference, ours = small_pair("conv" in name, seed=13)
    x = image_batch(2, *SIZE, seed=14)
    for kwargs, shapes in ((dict(indices=[0, 2]), [(2, 16, 5, 3), (2, 32, 2, 1)]),
                           (dict(indices=[1], stop_early=True), [(2, 24, 3, 2)])):
        _, outs = check_intermediates(reference, ours, x, TOL, **kwargs)
        assert [o.shape for o in outs] == shapes


def test_list_models():
    """The module lists exactly timm's LeViT models under their timm names: those with ImageNet weights, and the
    untrained variants (timm's experiments without published weights), registered too."""
    assert models.list_models(module="levit") == timm.list_models(module="levit") == sorted(NAMES + UNTRAINED_NAMES)
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("levit*")}
