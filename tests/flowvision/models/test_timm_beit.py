"""timm's BEiT family against timm: every registered variant's configuration, and its module tree, state_dict layout
and seeded initialisation rebuilt narrow and shallow; a full-width model's layout on the meta device; eval outputs of
small models at an odd image size (per-block and shared relative position biases, layer scale, absolute position
embeddings, SwiGLU and plain MLPs, every pooling); float64 train-mode outputs and every gradient; dropout and drop path;
and the timm API (pre-logits features, reset_classifier, in_chans, image size check, features_only, forward
intermediates, list_models)."""
import math

import numpy as np
import pytest
import timm
import timm.models.beit as timm_beit
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import beit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_fixed_size_config, check_intermediates, check_layout,
                          check_seeded_init, check_structure, check_train_step, features_only_pair, image_batch,
                          numpy_state, pre_logits, skip_random_init)
from op_check import assert_close

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]  # one BLAS thread a side: tiny tensors

BEITS = ["beit_base_patch16_224", "beit_base_patch16_384", "beit_large_patch16_224", "beit_large_patch16_384",
         "beit_large_patch16_512", "beitv2_base_patch16_224", "beitv2_large_patch16_224"]
SIZE = (50, 38)  # a 6 x 4 grid of 8-pixel patches with pixels left over, not square
SMALL = dict(img_size=SIZE, patch_size=8, embed_dim=24, depth=2, num_heads=3, num_classes=7)
REGISTERED = dict(use_abs_pos_emb=False, use_rel_pos_bias=True, init_values=0.1)  # the registered models' kind
PRINTED = ("Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "Identity")


def randomize(model, seed):
    """Random values for every parameter of a timm model (its zero biases and position tables, unit norms and small
    layer scales and head would hide bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("gamma_1", "gamma_2")) or (p.ndim == 1 and name.endswith("weight")):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.ndim == 1 or name.endswith(("cls_token", "pos_embed", "relative_position_bias_table")):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p[0].numel()))
    return model


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small BEiT (``SMALL`` updated by ``kwargs``) with timm's randomised weights, in eval mode."""
    config = {**SMALL, **kwargs}
    torch.manual_seed(seed)
    reference = randomize(timm_beit.Beit(**config), seed)
    ours = beit.Beit(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def linear_weights_and_tokens(model):
    """The keys timm draws with its truncated normal: Linear weights, class token, position embeddings."""
    keys = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    return keys | {"cls_token", "pos_embed"}


def test_variants_match_timm(monkeypatch):
    """Each entrypoint passes timm's configuration (with the image size of timm's weights); rebuilt narrow (two
    channels a head) with two blocks from the same seed, both models have the same module tree and classes,
    state_dict keys, order, shapes and dtypes, the same relative position indices and the same initial values
    (truncated normals within 2 float32 ulps: the engine's erfinv rounds differently from torch's; the rest bit for
    bit, the rescaled projections and head included), and both random streams end in step."""
    ours_calls = capture_builder(monkeypatch, beit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_beit, "build_model_with_cfg")
    for name in BEITS:
        getattr(beit, name)()
        getattr(timm_beit, name)()
    monkeypatch.undo()
    for name, ours_call, timm_call in zip(BEITS, ours_calls, timm_calls):
        timm_kwargs = check_fixed_size_config(name, ours_call, timm_call)
        narrow = dict(timm_kwargs, embed_dim=2 * timm_kwargs["num_heads"], depth=2)
        reference, ours = check_seeded_init(lambda: timm_beit.Beit(**narrow), lambda: beit.Beit(**narrow), 3,
                                            linear_weights_and_tokens, name)
        check_structure(ours, reference)
        index = reference.blocks[1].attn.relative_position_index.numpy()
        assert np.array_equal(ours.blocks[1].attn.relative_position_index.numpy(), index), name
        assert ours.feature_info == reference.feature_info and ours.num_features == reference.num_features


def test_full_width_layout_matches_timm(monkeypatch):
    """BEiT-L/16 at 512 (one of its blocks) against timm's, built on the meta device: state_dict keys in order,
    shapes and dtypes, the module tree, the printout of every layer, feature_info, num_features and default_cfg."""
    with torch.device("meta"):
        reference = timm.create_model("beit_large_patch16_512", depth=1)
    skip_random_init(monkeypatch)
    monkeypatch.setattr(beit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    ours = models.create_model("beit_large_patch16_512", depth=1)
    check_layout(ours, reference, (), PRINTED)
    assert ours.head_hidden_size == 1024


KINDS = {
    "registered": REGISTERED,  # per-block biases, layer scale, average pooling after fc_norm
    "shared_abs_token_swiglu": dict(use_shared_rel_pos_bias=True, global_pool="token", swiglu_mlp=True,
                                    scale_mlp=True, mlp_ratio=2.0),
    "both_biases_sequence": dict(REGISTERED, use_shared_rel_pos_bias=True, global_pool="", qkv_bias=False,
                                 scale_mlp=True),
}


def test_eval_outputs_match_timm():
    """Float32 eval outputs (batch 2, an odd image size) of each kind of small model, and pre-logits features."""
    x = image_batch(2, *SIZE, seed=1)
    for kind, kwargs in KINDS.items():
        reference, ours = small_pair(**kwargs)
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ((2, 25, 7) if kwargs.get("global_pool") == "" else (2, 7)), kind
        assert_close(out, ref, 1e-5, what=kind)
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(out, ref, 1e-5, what="pre-logits")


def test_train_mode_gradients_match_timm_float64():
    """Float64 train mode, per-block and shared biases with absolute position embeddings: outputs, the input gradient
    and every parameter gradient (tables, layer scales, q / v biases) equal timm's; the zero key-bias buffer too."""
    reference, ours = small_pair(seed=2, **dict(REGISTERED, use_shared_rel_pos_bias=True, use_abs_pos_emb=True))
    check_train_step(reference.double().train(), ours.double().train(), image_batch(2, *SIZE, seed=3).astype(float))


DROPOUTS = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def test_dropout_and_drop_path_follow_timm():
    """timm's drop path rates (rising to the last block) and dropout rates; eval outputs unaffected; in train mode the
    same seed draws timm's masks (timm's outputs), another seed others."""
    reference, ours = small_pair(seed=4, depth=3, **REGISTERED, **DROPOUTS)
    assert len(check_drop_rates(reference, ours)) == 4
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=5))


def test_head_api_in_chans_and_image_size_check():
    """num_classes=0 gives the pooled features; reset_classifier gives the classes and pooling asked for ('' returns
    the whole sequence, an unknown pooling is refused); in_chans=1 builds a one-channel patch projection that gives
    timm's outputs; an image of another size than the model's is refused; an empty batch gives empty logits (timm's
    model fails on one: a reshape of no elements with -1)."""
    reference, ours = small_pair(seed=6, in_chans=1, **REGISTERED)
    with engine.no_grad():
        assert tuple(ours(engine.zeros(0, 1, *SIZE)).shape) == (0, 7)
    assert tuple(ours.patch_embed.proj.weight.shape) == (24, 1, 8, 8)
    x = image_batch(2, *SIZE, seed=7, c=1)
    headless = beit.Beit(**dict(SMALL, in_chans=1, num_classes=0, **REGISTERED))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    reference.reset_classifier(0)
    features, expected = both_outputs(reference, headless.eval(), x)
    assert features.shape == (2, 24) and isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(features, expected, 1e-5)
    reference.reset_classifier(5, "")
    ours.reset_classifier(5, "")
    ours.head.load_state_dict(numpy_state(reference.head))
    assert ours.get_classifier().out_features == 5 and ours.num_classes == 5 and ours.global_pool == ""
    assert not ours.head.training
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 25, 5)
    assert_close(out, ref, 1e-5)
    with pytest.raises(ValueError):
        ours.reset_classifier(5, "max")
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.zeros(1, 1, 16, 16))


def test_features_only_and_intermediates_match_timm():
    """features_only (3 blocks): timm's FeatureGetterNet maps (the last three blocks by default, or out_indices),
    its state_dict keys (norm and head pruned) and feature_info; forward_intermediates' token sequences, normalised,
    with class tokens, stopping early, and the final sequence."""
    for out_indices, count in ((None, 3), ((0, -2), 2)):
        kwargs = dict(SMALL, depth=3)
        if out_indices is not None:
            kwargs["out_indices"] = out_indices
        reference, ours = features_only_pair("beit_base_patch16_224", randomize, 8, **kwargs)
        maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=9), count, 1e-5)
        assert all(m.shape == (2, 24, 6, 4) for m in maps)
    reference, ours = small_pair(seed=10, depth=3, **REGISTERED)
    x = image_batch(2, *SIZE, seed=11)
    for kwargs in (dict(indices=2, norm=True, output_fmt="NLC", return_prefix_tokens=True),
                   dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)


def test_list_models():
    """Every variant is registered, under timm's module name."""
    assert set(models.list_models("beit*")) >= set(BEITS)
    assert set(models.list_models(module="beit")) == set(BEITS)
