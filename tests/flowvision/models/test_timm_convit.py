"""timm parity of ConViT (timm's ``convit`` module: convit_tiny, convit_small, convit_base): every variant's
configuration and full-size layout against timm's on the meta device, and its seeded initialisation (GPSA's
convolution-like local init for 4, 9 and 16 heads) rebuilt narrow; float32 eval outputs of a small model at an odd
image size (gated positional and plain attention, the class token joining late, both poolings); float64 train-mode
outputs and every gradient; dropout and drop path with timm's masks; and the timm API (pre-logits, num_classes=0,
reset_classifier, in_chans, the image size and pooling checks, features_only, forward_intermediates, attention
maps, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import convit as timm_convit

import engine
import flowvision.models as models
from flowvision.models.timm_families import convit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_fixed_size_config, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, features_only_pair, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["convit_base", "convit_small", "convit_tiny"]
PRINTED = ("Conv2d", "Linear", "LayerNorm", "Dropout", "GELU")
TOL = 1e-5
SIZE = (35, 37)  # a 4 x 4 grid of 8-pixel patches with pixels left over, not square
# two GPSA blocks, then the class token and a plain block; 4 heads of 4 channels
SMALL = dict(img_size=SIZE, patch_size=8, embed_dim=4, num_heads=4, depth=3, local_up_to_layer=2, num_classes=7,
             qkv_bias=True)
# random values for every parameter of a timm model (its zero biases, unit norms and gates would hide bugs)
randomize = partial(randomize_parameters, scales=("gating_param",), tokens=("cls_token", "pos_embed"))


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small ConViT with timm's randomised weights in both, in eval mode."""
    config = {**SMALL, **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_convit.ConVit(**config), seed)
    ours = convit.ConVit(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def truncated(reference):
    """The state_dict keys timm draws from its truncated normal: tokens, position embeddings, Linear weights (the
    GPSA value projections, set to the identity after, are exact)."""
    return {"cls_token", "pos_embed"} | {f"{n}.weight" for n, m in reference.named_modules()
                                         if isinstance(m, torch.nn.Linear)}


def test_every_variant_has_timm_configuration_layout_and_init(monkeypatch):
    """Each entrypoint passes timm's configuration (with the image size of timm's weights); rebuilt narrow (two
    channels a head, a GPSA and a plain block) from the same seed, each gives timm's initial weights and leaves both
    random streams in step; built full size on the meta device, timm's state_dict keys, order, shapes and dtypes,
    module tree, layer printouts, feature_info, num_features and default_cfg."""
    ours_calls = capture_builder(monkeypatch, convit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_convit, "build_model_with_cfg")
    for name in NAMES:
        getattr(convit, name)()
        getattr(timm_convit, name)()
    configs = [check_fixed_size_config(name, ours, theirs) for name, ours, theirs in zip(NAMES, ours_calls, timm_calls)]
    monkeypatch.undo()
    for name, config in zip(NAMES, configs):
        narrow = dict(config, img_size=48, embed_dim=2, depth=2, local_up_to_layer=1)
        check_seeded_init(partial(timm_convit.ConVit, **narrow), partial(convit.ConVit, **narrow), 3, truncated, name)
    skip_random_init(monkeypatch)
    # timm's truncated normal takes ~7 ms a tensor on the meta device; the layout needs no values
    monkeypatch.setattr(timm_convit, "trunc_normal_", lambda tensor, *args, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        check_layout(models.create_model(name), reference, (), PRINTED)


def test_eval_outputs_and_pre_logits_match_timm():
    """float32 logits and pre-logits features of a batch of 2 (class token), then average pooling and the whole
    sequence (reset_classifier), as timm's."""
    reference, ours = small_pair(seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert out.shape == (2, 16)
    assert_close(out, ref, TOL)
    for pool, shape in (("avg", (2, 5)), ("", (2, 17, 5))):
        reference.reset_classifier(5, pool)
        ours.reset_classifier(5, pool)
        assert not ours.head.training and ours.num_classes == 5 and ours.global_pool == pool
        ours.head.load_state_dict(numpy_state(reference.head))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == shape
        assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm_float64():
    """float64, train mode, without position embeddings: outputs, the input gradient, every parameter's gradient
    (gates, positional projections, class token) and the relative-offset buffers equal timm's."""
    reference, ours = small_pair(seed=3, use_pos_embed=False, locality_strength=0.5)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=4).astype(np.float64))
    assert ours.blocks[0].attn.rel_indices.dtype == engine.float64


def test_dropout_and_drop_path_follow_timm():
    """timm's dropout and drop-path rates (rising over the blocks); eval outputs untouched; in train mode the same
    seed draws timm's masks (after the position embeddings, on the gated and plain attention weights, in the blocks,
    before the head), another seed others."""
    rates = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.1, attn_drop_rate=0.2, drop_path_rate=0.3)
    reference, ours = small_pair(seed=5, **rates)
    assert check_drop_rates(reference, ours) == pytest.approx([0.15, 0.3])
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=6))


def test_headless_in_chans_and_bad_arguments():
    """num_classes=0 gives timm's class-token features; in_chans=1 builds a one-channel projection with timm's
    outputs; poolings other than '', 'token' and 'avg' and images of another size are refused."""
    reference, ours = small_pair(seed=7, in_chans=1, num_classes=0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity)
    assert tuple(ours.patch_embed.proj.weight.shape) == (16, 1, 8, 8)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=8, c=1))
    assert out.shape == (2, 16)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        convit.ConVit(**SMALL, global_pool="max")
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(3, "avgmax")
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.zeros(1, 1, 32, 32))


def test_features_only_intermediates_and_attention_maps_match_timm():
    """features_only through the entrypoint (4 blocks, the last 3 by default: the class token kept; or the first
    two: the class token pruned): timm's state_dict keys, feature_info and (N, C, H/8, W/8) maps;
    forward_intermediates' patch tokens (normalised, 'NLC', stopping early) and final sequence; the GPSA and plain
    attention's mean distances and maps."""
    for out_indices, has_class_token in ((None, True), ((0, 1), False)):
        kwargs = dict(SMALL, num_classes=1000, depth=4)
        if out_indices is not None:
            kwargs["out_indices"] = out_indices
        reference, ours = features_only_pair("convit_tiny", randomize, 9, **kwargs)
        assert ("model.cls_token" in ours.state_dict()) == has_class_token
        maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=10), 3 if out_indices is None else 2,
                                  TOL)
        assert all(m.shape == (2, 16, 4, 4) for m in maps)
    reference, ours = small_pair(seed=11)
    x = image_batch(2, *SIZE, seed=12)
    for kwargs in (dict(indices=3, norm=True, output_fmt="NLC"), dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    tokens = both_outputs(reference, ours, x, lambda m, t: m.blocks[0].norm1(m.patch_embed(t)))[0]
    for index in (0, 2):
        reference.blocks[index].attn(torch.from_numpy(tokens))
        out, ref = both_outputs(reference.blocks[index].attn, ours.blocks[index].attn, tokens,
                                lambda m, t: m.get_attention_map(t, return_map=True))
        for o, r in zip(out, ref):
            assert_close(o, r, TOL)


def test_list_models():
    """Every ConViT with ImageNet-1k weights in timm is registered under its timm name and module."""
    assert models.list_models(module="convit") == NAMES
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("convit*")}
