"""timm parity of Visformer (timm's ``visformer`` module: visformer_tiny, visformer_small): every variant's
configuration and full-size layout against timm's on the meta device, and its seeded initialisation (He-normal
convolutions) rebuilt narrow; float32 eval outputs of small models at a non-square size whose patch grids leave
pixels over (the released layout: a convolutional stem, BatchNorm patch embeddings and norms, a first stage without
attention with grouped 3x3 convolutions in its MLP; and timm's other options: a patch-embedding stem, the ViT stem,
LayerNorm2d, attention everywhere, narrow spatial MLPs, no position embeddings); float64 train-mode outputs,
gradients and BatchNorm statistics; dropout and drop path with timm's masks; and the timm API (pre-logits, pooling,
num_classes=0, reset_classifier, in_chans, the image size check, features_only, forward_intermediates,
list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import visformer as timm_visformer

import engine
import flowvision.models as models
from flowvision.models.timm_families import visformer
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_fixed_size_config, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, features_only_pair, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["visformer_small", "visformer_tiny"]
PRINTED = ("Conv2d", "Linear", "BatchNorm2d", "Dropout", "GELU", "ReLU")
TOL = 1e-5
SIZE = (76, 52)  # stem 38 x 26, then 9 x 6, 4 x 3 and 2 x 1 grids with pixels left over at each patch embedding
# The released layout, narrow: 8-channel stem, 12, 24 and 48 channels, 3 heads, stages of 1, 2 and 1 blocks.
RELEASED = dict(img_size=SIZE, patch_size=16, init_channels=8, embed_dim=24, depth=(1, 2, 1), num_heads=3, group=4,
                attn_stage="011", spatial_conv="100", conv_init=True, num_classes=7)
TIMM_NORMS = dict(norm_layer=torch.nn.BatchNorm2d, embed_norm=torch.nn.BatchNorm2d)
OUR_NORMS = dict(norm_layer=engine.nn.BatchNorm2d, embed_norm=engine.nn.BatchNorm2d)
# timm's other options: no stem conv (an 8-pixel patch embedding), LayerNorm2d, attention in every stage, 5/6-wide
# spatial MLPs (one group), no position embeddings, depth 4 split as 1, 2, 1; the ViT stem (16-pixel patches, blocks
# in the middle stage only, as timm's stage widths allow).
OPTIONS = {
    "patch_stem": dict(img_size=SIZE, patch_size=16, init_channels=None, embed_dim=24, depth=4, num_heads=3, group=1,
                       attn_stage="111", spatial_conv="011", use_pos_embed=False, num_classes=7),
    "vit_stem": dict(img_size=SIZE, patch_size=16, embed_dim=24, depth=(0, 2, 0), num_heads=3, vit_stem=True,
                     spatial_conv="010", num_classes=7),
}
randomize = partial(randomize_parameters, tokens=("pos_embed1", "pos_embed2", "pos_embed3"), norms=True)


def released_pair(seed=0, **kwargs):
    """(timm's, ours) small model of the released layout with timm's randomised weights and norms, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize(timm_visformer.Visformer(**RELEASED, **TIMM_NORMS, **kwargs), seed)
    ours = visformer.Visformer(**RELEASED, **OUR_NORMS, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def same_config(key, ours, theirs):
    """Entrypoint values equal, the norm classes by name (engine's BatchNorm2d for torch's)."""
    return ours.__name__ == theirs.__name__ if key in TIMM_NORMS else ours == theirs


def test_every_variant_has_timm_configuration_layout_and_init(monkeypatch):
    """Each entrypoint passes timm's configuration (with the image size of timm's weights); rebuilt narrow from the
    same seed, each gives timm's initial weights (He-normal convolutions bit for bit, truncated normals within 2
    ulps) and leaves both random streams in step; built full size on the meta device, timm's state_dict keys, order,
    shapes and dtypes, module tree, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls = capture_builder(monkeypatch, visformer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_visformer, "build_model_with_cfg")
    for name in NAMES:
        getattr(visformer, name)()
        getattr(timm_visformer, name)()
    configs = [check_fixed_size_config(name, ours, theirs, same_config)
               for name, ours, theirs in zip(NAMES, ours_calls, timm_calls)]
    monkeypatch.undo()
    for name, config in zip(NAMES, configs):
        narrow = dict(config, img_size=64, init_channels=4, embed_dim=8 * config["num_heads"], depth=(1, 1, 1))
        check_seeded_init(partial(timm_visformer.Visformer, **narrow),
                          partial(visformer.Visformer, **dict(narrow, **OUR_NORMS)), 3,
                          lambda reference: {"pos_embed1", "pos_embed2", "pos_embed3", "head.weight"}, name)
    skip_random_init(monkeypatch)
    # timm's truncated normal takes ~7 ms a tensor on the meta device; the layout needs no values
    monkeypatch.setattr(timm_visformer, "trunc_normal_", lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        check_layout(models.create_model(name), reference, (), PRINTED)


def test_eval_outputs_match_timm():
    """float32 logits of a batch of 2 for the released layout and each of timm's other options, and the released
    model's pre-logits features."""
    reference, ours = released_pair(seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 48)
    assert_close(out, ref, TOL)
    for kind, config in OPTIONS.items():
        torch.manual_seed(3)
        reference = randomize(timm_visformer.Visformer(**config), 3).eval()
        ours = visformer.Visformer(**config)
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours.eval(), x)
        assert_close(out, ref, TOL, what=kind)


def test_train_mode_gradients_and_statistics_match_timm_float64():
    """float64, train mode: outputs, the input gradient, every parameter's gradient (position embeddings, patch
    embeddings, attention, grouped convolutions) and the updated BatchNorm statistics equal timm's."""
    reference, ours = released_pair(seed=4)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_dropout_and_drop_path_follow_timm():
    """timm's dropout and drop-path rates (rising over the blocks of all stages); eval outputs untouched; in train
    mode the same seed draws timm's masks (after the position embeddings, on attention weights, in the MLPs, before
    the head), another seed others."""
    rates = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.1, attn_drop_rate=0.2, drop_path_rate=0.3)
    reference, ours = released_pair(seed=6, **rates)
    assert check_drop_rates(reference, ours) == pytest.approx([0.1, 0.2, 0.3])
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_in_chans_and_image_size():
    """In a one-channel model: num_classes=0 gives timm's pooled features; reset_classifier to new classes and
    'catavgmax' pooling (twice the features) and to no pooling, as timm's; an unknown pooling is refused; an image
    size whose stem map differs from the one built for is refused."""
    reference, ours = released_pair(seed=8, in_chans=1)
    x = image_batch(2, *SIZE, seed=9, c=1)
    headless = visformer.Visformer(**dict(RELEASED, num_classes=0, in_chans=1), **OUR_NORMS)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    out, ref = both_outputs(partial(pre_logits, reference), headless.eval(), x)
    assert out.shape == (2, 48)
    assert_close(out, ref, TOL)
    for pool, shape in (("catavgmax", (2, 5)), ("", (2, 48, 2, 1))):
        reference.reset_classifier(5 if pool else 0, pool)
        ours.reset_classifier(5 if pool else 0, pool)
        assert ours.head_hidden_size == reference.head_hidden_size and not ours.global_pool.training
        ours.head.load_state_dict(numpy_state(reference.head))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == shape
        assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(5, "median")
    for size in ((74, 52), (76, 56)):
        with pytest.raises(ValueError, match="img_size"):
            ours(engine.zeros(1, 1, *size))


def test_features_only_and_intermediates_match_timm():
    """features_only through the entrypoint: timm's three stage maps by default (strides 8, 16, 32), or the first
    two (the last stage's embeddings, the norm and the head pruned), with timm's state_dict keys and feature_info;
    forward_intermediates' maps (the last one normalised) and final map, and stopping early."""
    kwargs = dict(RELEASED, num_classes=1000)
    for out_indices, count in ((None, 3), ((0, 1), 2)):
        extra = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("visformer_tiny", randomize, 10, **kwargs, **extra)
        maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=11), count, TOL)
        assert [m.shape[1:] for m in maps] == [(12, 9, 6), (24, 4, 3), (48, 2, 1)][:count]
    reference, ours = released_pair(seed=12)
    x = image_batch(2, *SIZE, seed=13)
    for kwargs in (dict(norm=True), dict(indices=[1], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)


def test_list_models():
    """Every Visformer with ImageNet-1k weights in timm is registered under its timm name and module."""
    assert models.list_models(module="visformer") == NAMES
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("visformer*")}
