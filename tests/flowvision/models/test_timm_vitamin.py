"""timm parity of ViTamin (vitamin_small_224 ... vitamin_xlarge_384): every variant's configuration (the backbone's
included), the layout of the full-size small and base models, seeded initialisation (the stem's convolutions drawn
twice as it is built, the MBConv blocks' drawn again by the ViT's init), eval outputs (float32) of small models at
odd image sizes (with and without position embeddings, average and class-token pooling), float64 train-mode
outputs and every gradient, dropout and stochastic depth masks, all with timm's weights loaded; the head API
(pre-logits, num_classes=0, reset_classifier, in_chans=1), features_only, forward_intermediates,
prune_intermediate_layers, refused arguments and list_models."""
import numpy as np
import pytest
import timm
import torch
from timm.layers import HybridEmbed
from timm.models import vision_transformer as timm_vit
from timm.models import vitamin as timm_vitamin

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import vitamin
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_structure,
                          check_train_step, features_only_pair, image_batch, linear_weights, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init, without_default_head)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["vitamin_base_224", "vitamin_large2_224", "vitamin_large2_256", "vitamin_large2_336", "vitamin_large2_384",
         "vitamin_large_224", "vitamin_large_256", "vitamin_large_336", "vitamin_large_384", "vitamin_small_224",
         "vitamin_xlarge_256", "vitamin_xlarge_336", "vitamin_xlarge_384"]
# the variants under 300M parameters, whose full-size layout is built (the large ones, 333M to 436M, are not)
BUILT = ["vitamin_small_224", "vitamin_base_224"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm", "LayerNorm2d", "LayerNormAct2d", "AvgPool2d", "Linear", "GELU", "Dropout",
           "Identity")
TOKENS = ("pos_embed", "cls_token")
SIZE = (35, 33)
# Small models: a 8-wide stem, stages of 16 and 24 channels (1 and 2 blocks), 32-wide tokens: a 3x3 grid of 35x33
# images; 'plain' as timm's ViTamins (learnt position embeddings, average pooling), 'token' as the xlarge ones (no
# position embeddings) but with a class token and its pooling, 3 blocks
BACKBONE = dict(embed_dim=(16, 24, 32), depths=(1, 2, 1), stem_width=8)
SMALL = {
    "plain": dict(embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0, class_token=False, global_pool="avg"),
    "token": dict(embed_dim=32, depth=3, num_heads=4, mlp_ratio=3.0, pos_embed="none"),
}


def build_timm(kind, img_size=SIZE, **kwargs):
    """timm's small ``kind`` ViTamin, the backbone built first as ``_create_vitamin`` builds it."""
    backbone = timm_vitamin.MbConvStages(timm_vitamin.VitCfg(**BACKBONE), in_chans=kwargs.get("in_chans", 3))
    embed = lambda **args: HybridEmbed(backbone=backbone, proj=False, **args)  # noqa: E731
    return timm_vit.VisionTransformer(img_size=img_size, patch_size=1, embed_layer=embed,
                                      mlp_layer=timm_vitamin.GeGluMlp, **{**SMALL[kind], **kwargs})


def build_ours(kind, img_size=SIZE, **kwargs):
    """Our small ``kind`` ViTamin."""
    return vitamin.ViTamin(vitamin.VitCfg(**BACKBONE), img_size=img_size, **{**SMALL[kind], **kwargs})


def small_pair(kind, seed, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's weights randomised and loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_parameters(build_timm(kind, **kwargs), seed, tokens=TOKENS).eval()
    ours = build_ours(kind, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def skip_timm_init(patch):
    """timm's random initialisation skipped too (torch's init functions and timm's truncated normal as no-ops): on
    the meta device they draw nothing but still cost their calls."""
    for name in ("kaiming_uniform_", "uniform_", "normal_", "trunc_normal_", "zeros_", "ones_", "constant_"):
        patch.setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
    patch.setattr(timm_vit, "trunc_normal_", lambda tensor, *args, **kwargs: tensor)


def test_every_variant_has_timm_configuration(monkeypatch):
    """Each entrypoint hands its class timm's arguments: the backbone's widths, depths and stem (timm's convolution
    settings, which the backbone's layers fix, are its defaults with the channel LayerNorm of eps 1e-6), the
    transformer's sizes, the GeGLU MLP, no class token, average pooling, no position embeddings in the xlarge
    models; the image size of timm's weights."""
    ours_calls = capture_builder(monkeypatch, vitamin, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_vitamin, "_create_vitamin")
    for name in NAMES:
        getattr(vitamin, name)()
        getattr(timm_vitamin, name)()
    fixed_conv_cfg = timm_vitamin.VitConvCfg(norm_layer="layernorm2d", norm_eps=1e-6)
    for name, (ours_cls, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is vitamin.ViTamin
        ours_kwargs, timm_kwargs = without_default_head(name, ours_kwargs), dict(timm_kwargs)
        assert ours_kwargs.pop("progress") is True and timm_kwargs.pop("pretrained") is False
        ours_cfg, timm_cfg = ours_kwargs.pop("embed_cfg"), timm_kwargs.pop("embed_cfg")
        assert vars(ours_cfg) == {k: getattr(timm_cfg, k) for k in ("embed_dim", "depths", "stem_width")}, name
        assert timm_cfg.conv_cfg == fixed_conv_cfg and timm_cfg.head_type == "1d", name
        assert ours_kwargs.pop("mlp_layer") is vitamin.GeGluMlp
        assert timm_kwargs.pop("mlp_layer") is timm_vitamin.GeGluMlp
        assert ours_kwargs == timm_kwargs, name
        assert ours_kwargs.get("img_size", 224) == timm.models.get_pretrained_cfg(name).input_size[-1], name


@pytest.mark.parametrize("name", BUILT)
def test_layout_matches_timm(name, monkeypatch):
    """The full-size small and base models have timm's layout: state_dict keys, order, shapes, module tree, layer
    printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    skip_random_init(monkeypatch)
    skip_timm_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model(name, num_classes=0)
    check_layout(models.create_model(name, num_classes=0), reference, (), PRINTED)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_and_eval_outputs_match_timm(kind):
    """The same seed gives timm's weights (the convolutions He-normal, drawn again where timm draws again;
    truncated-normal Linear weights and position embeddings within 2 ulps) and leaves both random streams in
    step; with random weights, float32 logits of a batch of 2 at an odd size equal timm's."""
    reference, ours = check_seeded_init(lambda: build_timm(kind, num_classes=10),
                                        lambda: build_ours(kind, num_classes=10), 3,
                                        lambda model: linear_weights(model) | {"pos_embed"}, kind)
    check_structure(ours, reference, types=False)
    assert ours.feature_info == reference.feature_info
    randomize_parameters(reference, 1, tokens=TOKENS)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference.eval(), ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm_float64():
    """float64, train mode: outputs, input gradient and every parameter's gradient (backbone and transformer)
    equal timm's."""
    reference, ours = small_pair("plain", 4, num_classes=7)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, *SIZE, seed=5).astype(np.float64))


@pytest.mark.parametrize("kind", list(SMALL))
def test_drop_path_and_dropout_only_in_training(kind):
    """Dropout (position embeddings, projections, attention, head) and stochastic depth rates are timm's; they draw
    timm's masks after the same seed in training (no position dropout without position embeddings, as timm's) and
    leave eval outputs alone."""
    drops = dict(drop_rate=0.3, pos_drop_rate=0.1, proj_drop_rate=0.2, attn_drop_rate=0.1, drop_path_rate=0.5)
    reference, ours = small_pair(kind, 6, **drops)
    block_rates = np.linspace(0, 0.5, SMALL[kind]["depth"])[1:]
    assert check_drop_rates(reference, ours) == pytest.approx(np.repeat(block_rates, 2))
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_in_chans_and_refused_arguments():
    """Through the entrypoint with a small backbone (timm's VitCfg serves ours too): a one-channel model gives
    timm's pre-logits and logits; a headless one (num_classes=0) the pooled features; reset_classifier to max
    pooling and new classes, then to the unpooled sequence, as timm's. Another image size, patches of more than one
    position, a backbone narrower than the tokens, unknown poolings, position embeddings and weight_init are
    refused."""
    kwargs = dict(embed_cfg=timm_vitamin.VitCfg(**BACKBONE), img_size=SIZE, embed_dim=32, depth=1, num_heads=2,
                  in_chans=1, num_classes=5)
    torch.manual_seed(8)
    reference = randomize_parameters(timm.create_model("vitamin_small_224", **kwargs), 8, tokens=TOKENS).eval()
    ours = models.create_model("vitamin_small_224", **kwargs)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    assert ours.patch_embed.backbone.stem.conv1.in_channels == 1
    x = image_batch(2, *SIZE, seed=9, c=1)
    for fn in (None, pre_logits):
        out, ref = both_outputs(reference, ours, x, fn)
        assert_close(out, ref, TOL)
    headless = models.create_model("vitamin_small_224", **dict(kwargs, num_classes=0))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], both_outputs(reference, ours, x, pre_logits)[1], TOL)
    reference.reset_classifier(3, "max")
    ours.reset_classifier(3, "max")
    ours.head.load_state_dict({k[5:]: v for k, v in numpy_state(reference).items() if k.startswith("head.")})
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 3) and not ours.head.training
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    reference.reset_classifier(0, "")
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 9, 32)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="Input size"):
        ours(engine.zeros(1, 1, 32, 32))
    with pytest.raises(ValueError, match="patch_size"):
        build_ours("plain", patch_size=2)
    with pytest.raises(ValueError, match="embed_dim"):
        build_ours("plain", embed_dim=48, num_heads=2)
    with pytest.raises(ValueError, match="global_pool"):
        build_ours("plain", global_pool="map")
    with pytest.raises(ValueError, match="global_pool"):
        build_ours("token", global_pool="token", class_token=False)
    with pytest.raises(ValueError, match="pos_embed"):
        build_ours("token", pos_embed="rope")
    with pytest.raises(ValueError, match="weight_init"):
        build_ours("plain", weight_init="jax")


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only (timm's getter over the blocks): the picked blocks' token maps, feature_info (reductions: the
    backbone's stride, 11 for a 3x3 grid of 35x33 images) and state_dict; forward_intermediates (NCHW with the
    final norm, token sequences stopping early) and prune_intermediate_layers as timm's."""
    kwargs = dict(embed_cfg=timm_vitamin.VitCfg(**BACKBONE), img_size=SIZE, embed_dim=32, depth=3, num_heads=2)
    x = image_batch(2, *SIZE, seed=11)
    reference, ours = features_only_pair("vitamin_small_224", lambda m, s: randomize_parameters(m, s, tokens=TOKENS),
                                         10, out_indices=(0, 2), **kwargs)
    assert type(ours) is FeatureGetterNet
    outs = check_feature_maps(reference, ours, x, 2, TOL)
    assert outs[0].shape == (2, 32, 3, 3) and ours.feature_info.reduction() == [11, 11]
    reference, ours = small_pair("token", 12)
    for options in (dict(indices=2, norm=True), dict(indices=[0], stop_early=True, output_fmt="NLC"),
                    dict(indices=1, return_prefix_tokens=True)):
        check_intermediates(reference, ours, x, TOL, **options)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference, types=False)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 10, 32)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's ViTamins, all with published weights, under their timm names."""
    names = models.list_models(module="vitamin")
    assert names == NAMES == sorted(timm.list_models(module="vitamin"))
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("vitamin*")}
