"""timm parity of the hybrid ViTs (vit_tiny_r_s16_p8_224/384, vit_small_r26_s32_224/384, vit_base_r50_s16_384,
vit_large_r50_s32_224/384): every variant's configuration (the backbone included) and layout, seeded
initialisation (the backbone's init run again by the ViT's, its blocks' last norms zeroed), eval outputs (float32)
of small models of both backbone kinds (ResNet stages of non-pre-activated bottlenecks with weight-standardised
"same" convolutions and GroupNorm; the stem alone with 3x3 patches) at an odd image size, float64 train-mode
outputs and gradients, dropout and stochastic depth masks, all with timm's weights loaded; the head API (pre-logits,
pooling, reset_classifier), in_chans=1, features_only, refused arguments and list_models. Also vit_base_r50_s16_224
(ImageNet-21k features) and MobileCLIP's vit_base_mci_224: configuration and layout, and for a small model of the
latter's kind (a convolutional stem with BatchNorm and GELU, no projection, position embeddings on the patches
only) seeded init, eval outputs, float64 train-mode gradients and running statistics. timm's untrained hybrids
(vit_base_r26_s32_224, and ViT-S / ViT-B over features_only ResNet-26-D / ResNet-50-D): their configuration and
backbones, the small ones' layouts, and a small model over a ResNet-D as above."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.layers import HybridEmbed, StdConv2dSame
from timm.models import resnet as timm_resnet
from timm.models import resnetv2 as timm_resnetv2
from timm.models import vision_transformer as timm_vit
from timm.models import vision_transformer_hybrid as timm_hybrid

import engine
import flowvision.models as models
from flowvision.models._features import FeatureListNet
from flowvision.models.timm_families import resnet
from flowvision.models.timm_families import vision_transformer_hybrid as hybrid
from flowvision.models.timm_families._layers import pair
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_layout, check_seeded_init,
                          check_train_step, image_batch, numpy_state, pre_logits, randomize_norms,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["vit_base_r50_s16_384", "vit_large_r50_s32_224", "vit_large_r50_s32_384", "vit_small_r26_s32_224",
         "vit_small_r26_s32_384", "vit_tiny_r_s16_p8_224", "vit_tiny_r_s16_p8_384"]
# hybrids whose timm weights are not ImageNet-1k classifiers: ImageNet-21k features, a MobileCLIP image tower
OTHER_NAMES = ["vit_base_mci_224", "vit_base_r50_s16_224"]
# timm's hybrids without published weights (registered too): R26+ViT-B/S32, and ViTs over a features_only
# ResNet-26-D / ResNet-50-D (stride 32, or its first three stages: stride 16)
UNTRAINED = ["vit_base_r26_s32_224", "vit_base_resnet26d_224", "vit_base_resnet50d_224", "vit_small_resnet26d_224",
             "vit_small_resnet50d_s16_224"]
TOL = 1e-4
PRINTED = ("StdConv2dSame", "GroupNormAct", "MaxPool2dSame", "Conv2d", "Linear", "LayerNorm", "ReLU", "GELU",
           "Dropout", "Identity")
SIZE = (35, 33)
TOKENS = ("cls_token", "pos_embed")
# Small transformers over both backbones: ResNet stages of 1 and 2 bottlenecks (128 and 256 wide, a 32-wide stem;
# a 5x5 map of 35x33 images, one token per position) or the stem alone (a 9x9 map cut into 3x3 patches)
SMALL_VIT = dict(img_size=SIZE, embed_dim=32, depth=2, num_heads=2)
PATCH = {"resnet": 1, "stem": 3}
_timm_conv = partial(StdConv2dSame, eps=1e-8)


def timm_backbone(kind, in_chans=3):
    """timm's backbone of a small ``kind`` model, as its ``_resnetv2`` builds it but narrower."""
    if kind == "stem":
        return timm_resnetv2.create_resnetv2_stem(in_chans, stem_type="same", preact=False, conv_layer=_timm_conv)
    return timm_resnetv2.ResNetV2(layers=(1, 2), channels=(128, 256), stem_chs=32, in_chans=in_chans, num_classes=0,
                                  global_pool="", preact=False, stem_type="same", conv_layer=_timm_conv)


def our_backbone(kind, in_chans=3):
    """Our backbone of a small ``kind`` model."""
    if kind == "stem":
        return hybrid.ResNetStem(in_chans)
    return hybrid.ResNetBackbone((1, 2), channels=(128, 256), in_chans=in_chans, stem_chs=32)


def build_timm(kind, **kwargs):
    """timm's small ``kind`` hybrid (the backbone built first, as timm's entrypoints do)."""
    embed = partial(HybridEmbed, backbone=timm_backbone(kind, kwargs.get("in_chans", 3)))
    return timm_hybrid.VisionTransformer(embed_layer=embed, patch_size=PATCH[kind], **SMALL_VIT, **kwargs)


def build_ours(kind, **kwargs):
    """Our small ``kind`` hybrid."""
    backbone = our_backbone(kind, kwargs.get("in_chans", 3))
    return hybrid.HybridVisionTransformer(backbone, patch_size=PATCH[kind], **SMALL_VIT, **kwargs)


def small_pair(kind, seed, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's weights randomised and loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_parameters(build_timm(kind, **kwargs), seed, tokens=TOKENS).eval()
    ours = build_ours(kind, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def skip_timm_init(patch):
    """timm's random initialisation skipped (torch's init functions and timm's truncated normal as no-ops): its
    full-size models build on the meta device in a fraction of the time, for tests of their layout."""
    for name in ("kaiming_uniform_", "kaiming_normal_", "uniform_", "normal_", "trunc_normal_", "zeros_", "ones_",
                 "constant_"):
        patch.setattr(torch.nn.init, name, lambda tensor, *args, **kwargs: tensor)
    patch.setattr(timm_vit, "trunc_normal_", lambda tensor, *args, **kwargs: tensor)


def _layout(module):
    """A module's state_dict keys and shapes, in order."""
    return [(k, tuple(v.shape)) for k, v in module.state_dict().items()]


def _builder_calls(monkeypatch, names):
    """Our and timm's builder calls (``capture_builder``'s (class, kwargs)) of the entrypoints ``names``, each called
    with ``in_chans=2``: the backbones are built, init skipped (timm's on the meta device), the models are not."""
    skip_random_init(monkeypatch)
    skip_timm_init(monkeypatch)
    ours_calls = capture_builder(monkeypatch, hybrid, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_hybrid, "build_model_with_cfg")
    for name in names:
        getattr(hybrid, name)(in_chans=2)
        with torch.device("meta"):
            getattr(timm_hybrid, name)(in_chans=2)
    return ours_calls, timm_calls


def test_every_variant_has_timm_configuration(monkeypatch):
    """Each entrypoint builds timm's backbone (its kind, state_dict keys and shapes; on the caller's in_chans) and
    hands the transformer timm's arguments, with the image size of timm's weights."""
    ours_calls, timm_calls = _builder_calls(monkeypatch, NAMES)
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is hybrid.HybridVisionTransformer and timm_cls is timm_vit.VisionTransformer
        assert issubclass(ours_cls, hybrid.VisionTransformer)
        timm_cfg = timm.models.get_pretrained_cfg(name)
        assert timm_cfg.fixed_input_size and timm_cfg.num_classes == 1000, name
        ours_kwargs = dict(ours_kwargs)
        backbone = ours_kwargs.pop("backbone")
        theirs = timm_kwargs.pop("embed_layer").keywords["backbone"]
        assert isinstance(backbone, hybrid.ResNetStem) == isinstance(theirs, torch.nn.Sequential), name
        assert _layout(backbone) == _layout(theirs), name
        assert ours_kwargs.pop("progress") is True
        assert pair(ours_kwargs.pop("img_size")) == timm_cfg.input_size[-2:], name
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_filter_fn", "feature_cfg")}


@pytest.mark.parametrize("name", ["vit_tiny_r_s16_p8_224", "vit_small_r26_s32_224"])
def test_layout_matches_timm(name, monkeypatch):
    """Both kinds of model (the stem alone, ResNet stages) have timm's layout: state_dict keys, order, shapes,
    module tree, layer printouts, feature_info (reductions counting the backbone's stride), num_features and
    default_cfg (the backbone's first convolution)."""
    skip_random_init(monkeypatch)
    skip_timm_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model(name)
    check_layout(models.create_model(name), reference, (), PRINTED)


@pytest.mark.parametrize("kind", list(PATCH))
def test_seeded_init_and_eval_outputs_match_timm(kind):
    """The same seed gives timm's weights (the backbone's He-normal convolutions drawn twice, its last norms
    zeroed; truncated-normal Linear weights and position embeddings within 2 ulps) and leaves both random streams in
    step; with random weights, float32 logits of a batch of 2 at an odd size equal timm's."""
    def truncated(reference):
        linear = {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}
        return linear | {"pos_embed"}

    reference, ours = check_seeded_init(lambda: build_timm(kind, num_classes=10),
                                         lambda: build_ours(kind, num_classes=10), 3, truncated, kind)
    if kind == "resnet":
        assert not ours.patch_embed.backbone.stages[1].blocks[1].norm3.weight.detach().numpy().any()
    assert ours.feature_info == reference.feature_info
    randomize_parameters(reference, 1, tokens=TOKENS)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference.eval(), ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm_float64():
    """float64, train mode: outputs, input gradient and every parameter's gradient (backbone and transformer)
    equal timm's."""
    reference, ours = small_pair("resnet", 4, num_classes=7)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Dropout (position, projection, attention, head) and stochastic depth rates are timm's; they draw timm's
    masks after the same seed in training and leave eval outputs alone."""
    drops = dict(drop_rate=0.3, pos_drop_rate=0.1, proj_drop_rate=0.2, attn_drop_rate=0.1, drop_path_rate=0.5)
    reference, ours = small_pair("stem", 6, **drops)
    check_drop_rates(reference, ours)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_in_chans_and_refused_arguments():
    """Through the entrypoints: a one-channel model (its backbone built for it) with average pooling gives timm's
    pre-logits and logits; reset_classifier to a new size and to none as timm's. A map that does not split into
    patches, another image size and an unknown weight_init are refused."""
    kwargs = dict(SMALL_VIT, patch_size=3, in_chans=1, global_pool="avg", num_classes=5)
    torch.manual_seed(8)
    reference = randomize_parameters(timm.create_model("vit_tiny_r_s16_p8_224", **kwargs), 8, tokens=TOKENS).eval()
    ours = models.create_model("vit_tiny_r_s16_p8_224", **kwargs)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    assert ours.patch_embed.backbone.conv.in_channels == 1
    x = image_batch(2, *SIZE, seed=9, c=1)
    for fn in (None, pre_logits):
        out, ref = both_outputs(reference, ours, x, fn)
        assert_close(out, ref, TOL)
    reference.reset_classifier(3)
    ours.reset_classifier(3)
    ours.head.load_state_dict({k[5:]: v for k, v in numpy_state(reference).items() if k.startswith("head.")})
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 3)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity)
    assert tuple(ours(engine.from_numpy(x)).shape) == (2, 32)
    with pytest.raises(AssertionError):
        timm.create_model("vit_tiny_r_s16_p8_224", **dict(kwargs, patch_size=2))
    with pytest.raises(ValueError, match="patches"):
        models.create_model("vit_tiny_r_s16_p8_224", **dict(kwargs, patch_size=2))
    with pytest.raises(ValueError, match="Input size"):
        ours(engine.zeros(1, 1, 32, 32))
    with pytest.raises(ValueError, match="weight_init"):
        build_ours("stem", weight_init="jax")


def test_features_only_matches_timm():
    """features_only (timm's getter over the transformer blocks): the last blocks' token maps, timm's feature_info
    (reductions: the backbone's stride times the patch size) and state_dict."""
    kwargs = dict(SMALL_VIT, patch_size=3, depth=3, out_indices=(0, 2))
    torch.manual_seed(10)
    reference = timm.create_model("vit_tiny_r_s16_p8_224", features_only=True, **kwargs)
    randomize_parameters(reference, 10, tokens=TOKENS).eval()
    ours = models.create_model("vit_tiny_r_s16_p8_224", features_only=True, **kwargs)
    assert list(ours.state_dict()) == list(reference.state_dict())
    ours.load_state_dict(numpy_state(reference))
    outs = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=11), 2, TOL)
    assert outs[0].shape == (2, 32, 3, 3) and ours.feature_info.reduction() == [9, 9]


def test_list_models():
    """The registry lists exactly timm's hybrid ViTs (those with ImageNet-1k weights, the others with weights and the
    untrained ones), under their timm names."""
    names = models.list_models(module="vision_transformer_hybrid")
    assert names == sorted(NAMES + OTHER_NAMES + UNTRAINED) == timm.list_models(module="vision_transformer_hybrid")
    names = [n for n in names if n not in OTHER_NAMES + UNTRAINED]
    in1k = {n.split(".")[0] for n in timm.list_pretrained("vit_*")
            if n.split(".")[0] in timm.list_models(module="vision_transformer_hybrid") and n.endswith("in1k")}
    assert set(names) == in1k


def test_other_entrypoints_configuration_and_layout(monkeypatch):
    """vit_base_r50_s16_224 and vit_base_mci_224 build timm's backbone (on the caller's in_chans) and hand the
    transformer timm's arguments (no projection for MobileCLIP's stem) with the image size of timm's weights; with
    the class count of those weights (none, or the 512-wide embedding) they have timm's layout."""
    ours_calls, timm_calls = _builder_calls(monkeypatch, OTHER_NAMES)
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(OTHER_NAMES, ours_calls, timm_calls):
        ours_kwargs = dict(ours_kwargs)
        embed = timm_kwargs.pop("embed_layer")
        assert _layout(ours_kwargs.pop("backbone")) == _layout(embed.keywords.pop("backbone")), name
        assert ours_kwargs.pop("proj", True) == embed.keywords.pop("proj", True) and not embed.keywords, name
        assert ours_kwargs.pop("progress") is True
        assert pair(ours_kwargs.pop("img_size")) == timm.models.get_pretrained_cfg(name).input_size[-2:], name
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    skip_timm_init(monkeypatch)
    for name in OTHER_NAMES:
        num_classes = timm.models.get_pretrained_cfg(name).num_classes
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=num_classes)
        check_layout(models.create_model(name, num_classes=num_classes), reference, (), PRINTED + ("BatchNormAct2d",))


# a small MobileCLIP-style hybrid: an 8, 8, 32 wide stem (4x4/4, 2x2/2, 2x2/2: a 2x2 map of 35x33 images), no
# projection, position embeddings on the patch tokens only
MCI_STEM = dict(channels=(8, 8, 32), stride=(4, 2, 2), kernel_size=(4, 2, 2), padding=0)
MCI_VIT = dict(SMALL_VIT, patch_size=1, no_embed_class=True, num_classes=10)


def build_timm_mci():
    """timm's small MobileCLIP-style hybrid (its stem built first)."""
    backbone = timm_hybrid.ConvStem(act_layer=torch.nn.GELU, **MCI_STEM)
    return timm_hybrid.VisionTransformer(embed_layer=partial(HybridEmbed, backbone=backbone, proj=False), **MCI_VIT)


def build_ours_mci():
    """Our small MobileCLIP-style hybrid."""
    return hybrid.HybridVisionTransformer(hybrid.ConvStem(act_layer=engine.nn.GELU, **MCI_STEM), proj=False,
                                          **MCI_VIT)


def test_mci_seeded_init_outputs_and_gradients_match_timm():
    """The small MobileCLIP-style hybrid: the same seed gives timm's weights (the stem's default inits, no
    projection drawn) and both streams end in step; with random weights and BatchNorm statistics, float32 logits at
    an odd size and float64 train-mode outputs, gradients and running statistics equal timm's; a stem whose width
    is not the embedding's is refused."""
    def truncated(reference):
        return {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)} | {"pos_embed"}

    reference, ours = check_seeded_init(build_timm_mci, build_ours_mci, 3, truncated)
    assert ours.feature_info == reference.feature_info
    assert ours.default_cfg["first_conv"] == "patch_embed.backbone.0.conv"
    randomize_norms(randomize_parameters(reference, 1, tokens=TOKENS), 1)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference.eval(), ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, *SIZE, seed=5).astype(np.float64))
    with pytest.raises(ValueError, match="embed_dim"):
        hybrid.HybridVisionTransformer(hybrid.ConvStem(**MCI_STEM), proj=False, **dict(MCI_VIT, embed_dim=16))


def test_untrained_configuration_and_layout(monkeypatch):
    """The untrained entrypoints build timm's backbone first (its kind and state_dict layout, on the caller's
    in_chans: the R26 stages, or a features_only ResNet-D cut after its fourth or third stage) and hand the
    transformer timm's arguments with the image size of timm's configuration; the two small ones over ResNet-D (61M
    and 57M parameters) have timm's layout at full size (the token grid of the stride-32 and stride-16 maps, the
    stem's first convolution as first_conv)."""
    ours_calls, timm_calls = _builder_calls(monkeypatch, UNTRAINED)
    for name, (_, ours_kwargs), (_, timm_kwargs) in zip(UNTRAINED, ours_calls, timm_calls):
        ours_kwargs = dict(ours_kwargs)
        backbone = ours_kwargs.pop("backbone")
        theirs = timm_kwargs.pop("embed_layer").keywords["backbone"]
        assert isinstance(backbone, FeatureListNet) == ("resnet" in name) == (type(theirs).__name__ == "FeatureListNet")
        assert _layout(backbone) == _layout(theirs), name
        assert ours_kwargs.pop("progress") is True
        assert pair(ours_kwargs.pop("img_size")) == timm.models.get_pretrained_cfg(name).input_size[-2:], name
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    skip_timm_init(monkeypatch)
    for name in ("vit_small_resnet26d_224", "vit_small_resnet50d_s16_224"):
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        check_layout(models.create_model(name, num_classes=1000), reference, ("drop_block", "aa"),
                     PRINTED + ("BatchNorm2d",))


# a small ViT over a features_only ResNet-26-D of one bottleneck a stage, 8 to 64 channels: a 2x2 map of 35x33 images
SMALL_RESNET = dict(layers=(1, 1, 1, 1), channels=(8, 8, 16, 16), stem_width=8, features_only=True, out_indices=[4])


def test_resnet_d_backbone_matches_timm():
    """The small ViT over a features_only ResNet-D: the same seed gives timm's weights (the backbone's own init, its
    last norms zeroed, untouched by the ViT's) and both streams end in step; with random weights and BatchNorm
    statistics, float32 logits at an odd size (the map's sides rounded up) and float64 train-mode outputs, every
    gradient and the running statistics equal timm's."""
    def build_timm_resnet_hybrid():
        backbone = timm_resnet.resnet26d(**SMALL_RESNET)
        return timm_hybrid.VisionTransformer(embed_layer=partial(HybridEmbed, backbone=backbone), patch_size=1,
                                             num_classes=10, **SMALL_VIT)

    def build_ours_resnet_hybrid():
        return hybrid.HybridVisionTransformer(resnet.resnet26d(**SMALL_RESNET), patch_size=1, num_classes=10,
                                              **SMALL_VIT)

    def truncated(reference):
        return {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)} | {"pos_embed"}

    reference, ours = check_seeded_init(build_timm_resnet_hybrid, build_ours_resnet_hybrid, 3, truncated)
    assert ours.patch_embed.grid_size == reference.patch_embed.grid_size == (2, 2)
    assert ours.feature_info == reference.feature_info
    randomize_norms(randomize_parameters(reference, 1, tokens=TOKENS), 1)
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference.eval(), ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, *SIZE, seed=5).astype(np.float64))
