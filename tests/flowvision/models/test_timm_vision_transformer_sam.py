"""timm parity of the Segment Anything image encoders (samvit_base_patch16, samvit_large_patch16,
samvit_huge_patch16): every variant's configuration, the full-size base model's layout, seeded initialisation
(PyTorch's defaults, zero position tables), eval outputs (float32) of small models at the built size and at another
(position embeddings resampled, global relative positions resized, windows padded), both with windowed attention,
relative positions and the convolutional neck, and without (layer scale, query-key norms, a pre-norm, the norm
neck); float64 train-mode outputs and every gradient, dropout and stochastic depth masks, all with timm's weights
loaded; the head API (pre-logits, reset_classifier, num_classes=0, in_chans=1), features_only,
forward_intermediates, prune_intermediate_layers, refused inputs and list_models. timm's untrained
samvit_base_patch16_224 (a 224-pixel classifier with a norm for neck, the small 'plain' kind's path): its
configuration and layout."""
import numpy as np
import pytest
import timm
import torch
from timm.models import vision_transformer_sam as timm_sam

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import vision_transformer_sam as sam
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init, check_structure,
                          check_train_step, features_only_pair, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init, without_default_head)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["samvit_base_patch16", "samvit_huge_patch16", "samvit_large_patch16"]
# timm's variant without published weights (registered too): a 224-pixel classifier, a norm for neck
UNTRAINED = ["samvit_base_patch16_224"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm", "LayerNorm2d", "Linear", "GELU", "Dropout", "Identity", "Flatten",
           "AdaptiveAvgPool2d")
TABLES = ("pos_embed", "rel_pos_h", "rel_pos_w")
# Small models on 48x48 images cut into 8x8 patches (a 6x6 grid): 'windowed' as timm's SAM encoders (4x4 windows
# over the padded grid, the middle block global, relative positions, a 16-wide convolutional neck); 'plain'
# without windows, relative or absolute positions, with layer scale, query-key norms, a pre-norm and the norm neck
SMALL = {
    "windowed": dict(img_size=48, patch_size=8, embed_dim=32, depth=3, num_heads=2, window_size=4,
                     global_attn_indexes=[1], use_rel_pos=True, neck_chans=16),
    "plain": dict(img_size=48, patch_size=8, embed_dim=32, depth=2, num_heads=4, mlp_ratio=2.0, window_size=0,
                  use_abs_pos=False, neck_chans=0, init_values=0.5, qk_norm=True, pre_norm=True,
                  global_pool="max"),
}
OTHER_SIZE = (40, 56)


def small_pair(kind, seed, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's weights randomised and loaded in ours, in eval mode."""
    config = {**SMALL[kind], **kwargs}
    torch.manual_seed(seed)
    reference = randomize_parameters(timm_sam.VisionTransformerSAM(**config), seed, tokens=TABLES).eval()
    ours = sam.VisionTransformerSAM(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_configuration(monkeypatch):
    """Each entrypoint hands its class timm's arguments (1024-pixel images of 16-pixel patches, windows of 14,
    the global blocks, relative positions; the untrained samvit_base_patch16_224 at 224 with a norm for neck);
    timm's weights are image encoders without classes."""
    ours_calls = capture_builder(monkeypatch, sam, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_sam, "build_model_with_cfg")
    for name in NAMES + UNTRAINED:
        getattr(sam, name)()
        getattr(timm_sam, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES + UNTRAINED, ours_calls, timm_calls):
        assert ours_cls is sam.VisionTransformerSAM and timm_cls is timm_sam.VisionTransformerSAM
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
        assert without_default_head(name, ours_kwargs) == expected | {"progress": True}, name
        assert timm.models.get_pretrained_cfg(name).num_classes == (1000 if name in UNTRAINED else 0), name


def test_base_layout_matches_timm(monkeypatch):
    """The full-size samvit_base_patch16 (89M parameters; the large and huge ones are not built) and the untrained
    samvit_base_patch16_224 (86M, a 1000-class head) have timm's layout: state_dict keys, order, shapes, module tree,
    layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    skip_random_init(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model("samvit_base_patch16", num_classes=0)
    check_layout(models.create_model("samvit_base_patch16", num_classes=0), reference, (), PRINTED)
    with torch.device("meta"):
        reference = timm.create_model("samvit_base_patch16_224", num_classes=1000)
    check_layout(models.create_model("samvit_base_patch16_224", num_classes=1000), reference, (), PRINTED)


@pytest.mark.parametrize("kind", list(SMALL))
def test_seeded_init_and_eval_outputs_match_timm(kind):
    """The same seed gives timm's weights (PyTorch's default init, zero position tables), bit for bit, and leaves
    both random streams in step; with random weights, float32 logits of a batch of 2 equal timm's at the built
    size and at another (multiples of the patch size)."""
    config = dict(SMALL[kind], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_sam.VisionTransformerSAM(**config),
                                        lambda: sam.VisionTransformerSAM(**config), 3, lambda model: set(), kind)
    check_structure(ours, reference, types=False)
    assert ours.feature_info == reference.feature_info
    randomize_parameters(reference, 1, tokens=TABLES)
    ours.load_state_dict(numpy_state(reference))
    for size in ((48, 48), OTHER_SIZE):
        out, ref = both_outputs(reference.eval(), ours.eval(), image_batch(2, *size, seed=2))
        assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
        assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm_float64():
    """float64, train mode, windows padded: outputs, input gradient and every parameter's gradient (relative
    position tables and position embeddings included) equal timm's."""
    reference, ours = small_pair("windowed", 4, num_classes=7)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, 48, 48, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Dropout (position embeddings, projections, attention weights inside the fused attention, head) and
    stochastic depth rates are timm's; they draw timm's masks after the same seed in training and leave eval
    outputs alone."""
    drops = dict(drop_rate=0.3, pos_drop_rate=0.1, proj_drop_rate=0.2, attn_drop_rate=0.1, drop_path_rate=0.5)
    reference, ours = small_pair("windowed", 6, **drops)
    assert check_drop_rates(reference, ours) == pytest.approx([0.25, 0.25, 0.5, 0.5])
    check_dropout_only_in_training(reference, ours, image_batch(2, 48, 48, seed=7))


def test_head_api_in_chans_and_refused_inputs():
    """Through the entrypoint: a one-channel model gives timm's pre-logits and logits; get_classifier is the whole
    head, as timm's; a headless one (num_classes=0) the pooled neck features; reset_classifier to 'catavgmax' and
    new classes, then to the unpooled map, as timm's. Images whose sides are not multiples of the patch size are
    refused."""
    kwargs = dict(SMALL["windowed"], in_chans=1, num_classes=5)
    torch.manual_seed(8)
    reference = randomize_parameters(timm.create_model("samvit_base_patch16", **kwargs), 8, tokens=TABLES).eval()
    ours = models.create_model("samvit_base_patch16", **kwargs)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    assert ours.patch_embed.proj.in_channels == 1 and ours.get_classifier() is ours.head
    x = image_batch(2, *OTHER_SIZE, seed=9, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 16)
    assert_close(pre, pre_ref, TOL)
    assert_close(*both_outputs(reference, ours, x), TOL)
    headless = models.create_model("samvit_base_patch16", **dict(kwargs, num_classes=0))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc")})
    assert isinstance(headless.head.fc, engine.nn.Identity) and headless.head_hidden_size == 16
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(3, "catavgmax")
    ours.reset_classifier(3, "catavgmax")
    assert ours.head_hidden_size == reference.head_hidden_size == 32 and ours.global_pool == "catavgmax"
    ours.head.load_state_dict(numpy_state(reference.head))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 3) and not ours.head.training
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    out = both_outputs(reference, ours, x)[0]
    assert out.shape == (2, 16, 5, 7)
    assert np.array_equal(out, both_outputs(reference, ours, x, lambda m, t: m.forward_features(t))[0])
    with pytest.raises(ValueError, match="divisible by patch size"):
        ours(engine.zeros(1, 1, 44, 48))


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only (timm's getter over the blocks, the neck pruned): the picked blocks' maps, feature_info and
    state_dict; forward_intermediates (through the neck with ``norm``, stopping early); prune_intermediate_layers
    with the neck, which resets the head sized for it to none (the unpooled last block's map), as timm's."""
    x = image_batch(2, *OTHER_SIZE, seed=11)
    reference, ours = features_only_pair("samvit_base_patch16",
                                         lambda m, s: randomize_parameters(m, s, tokens=TABLES), 10,
                                         out_indices=(0, 2), **SMALL["windowed"])
    assert type(ours) is FeatureGetterNet
    outs = check_feature_maps(reference, ours, x, 2, TOL)
    assert outs[0].shape == (2, 32, 5, 7)
    reference, ours = small_pair("windowed", 12)
    for options in (dict(indices=2, norm=True), dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **options)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NLC")
    assert ours.prune_intermediate_layers([1], prune_norm=True, prune_head=False) == [1]
    reference.prune_intermediate_layers([1], prune_norm=True, prune_head=False)
    check_structure(ours, reference, types=False)
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 32
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 32, 5, 7)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's SAM models under their timm names: the encoders with published weights and
    the untrained samvit_base_patch16_224."""
    names = models.list_models(module="vision_transformer_sam")
    assert names == sorted(NAMES + UNTRAINED) == timm.list_models(module="vision_transformer_sam")
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("samvit*")}
