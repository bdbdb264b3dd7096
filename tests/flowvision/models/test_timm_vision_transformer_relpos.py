"""timm's relative-position ViTs against timm: every registered variant's configuration, and its module tree, state_dict
layout, fixed position buffers and seeded initialisation rebuilt narrow and shallow; full-size layouts on the meta
device; eval outputs of small models at an odd image size (MLP biases with timm's and Swin V2's coordinates, bias
tables, per-block and shared, with and without a class token, pre-norm and residual post-norm blocks, every pooling);
float64 train-mode outputs and every gradient; dropout (the bias MLP's own included) and drop path; timm's ViT init;
and the timm API (pooled features, reset_classifier, in_chans, image size check, features_only, forward intermediates,
list_models). timm's untrained variants (ViT-B/16+, ViT-B/16 with a class token, ViT-S/B with post-norm blocks,
test_vit_relpos) are configurations of the same kinds: their configuration, narrow rebuild and layouts."""
import numpy as np
import pytest
import timm
import timm.models.vision_transformer_relpos as timm_relpos
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import vision_transformer_relpos as relpos
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_fixed_size_config, check_intermediates, check_layout,
                          check_seeded_init, check_structure, check_train_step, features_only_pair, image_batch,
                          numpy_state, pre_logits, skip_random_init)
from op_check import assert_close

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]  # one BLAS thread a side: tiny tensors

RELPOS = ["vit_relpos_base_patch16_224", "vit_relpos_base_patch16_clsgap_224", "vit_relpos_base_patch32_plus_rpn_256",
          "vit_relpos_medium_patch16_224", "vit_relpos_medium_patch16_cls_224", "vit_relpos_medium_patch16_rpn_224",
          "vit_relpos_small_patch16_224", "vit_srelpos_medium_patch16_224", "vit_srelpos_small_patch16_224"]
# timm's variants without published weights, of the same kinds (registered too)
UNTRAINED = ["test_vit_relpos", "vit_relpos_base_patch16_cls_224", "vit_relpos_base_patch16_plus_240",
             "vit_relpos_base_patch16_rpn_224", "vit_relpos_small_patch16_rpn_224"]
SIZE = (50, 38)  # a 6 x 4 grid of 8-pixel patches with pixels left over, not square
SMALL = dict(img_size=SIZE, patch_size=8, embed_dim=24, depth=2, num_heads=3, num_classes=7)
PRINTED = ("Conv2d", "LayerNorm", "Linear", "Dropout", "GELU", "ReLU", "Identity")


def randomize(model, seed):
    """Random values for every parameter of a timm model (zero biases, unit norms and 1e-6 layer scales would hide
    bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gamma") or (p.ndim == 1 and name.endswith("weight")):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.ndim == 1 or name.endswith(("cls_token", "relative_position_bias_table")):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel()))
    return model


def build_both(rpn=False, **kwargs):
    """Builders of timm's model and ours on ``SMALL`` updated by ``kwargs`` (residual post-norm blocks if ``rpn``)."""
    config = {**SMALL, **kwargs}
    timm_block = timm_relpos.ResPostRelPosBlock if rpn else timm_relpos.RelPosBlock
    ours_block = relpos.ResPostRelPosBlock if rpn else relpos.RelPosBlock
    return (lambda: timm_relpos.VisionTransformerRelPos(**config, block_fn=timm_block),
            lambda: relpos.VisionTransformerRelPos(**config, block_fn=ours_block))


def small_pair(seed=0, rpn=False, **kwargs):
    """(timm's, ours) small model with timm's randomised weights, in eval mode."""
    build_timm, build_ours = build_both(rpn, **kwargs)
    torch.manual_seed(seed)
    reference = randomize(build_timm(), seed)
    ours = build_ours()
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def tables(model):
    """The keys of the bias tables, drawn by timm's truncated normal."""
    return {k for k in model.state_dict() if k.endswith("relative_position_bias_table")}


def test_variants_match_timm(monkeypatch):
    """Each entrypoint (the untrained ones too) passes timm's configuration (with the image size of its default
    configuration); rebuilt narrow (two
    channels a head) with two blocks from the same seed, both models have the same module tree and classes, state_dict
    keys, order, shapes and dtypes, the same position indices and log coordinates (bit for bit) and the same initial
    values (PyTorch's default inits, timm's class token), and both random streams end in step."""
    ours_calls = capture_builder(monkeypatch, relpos, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_relpos, "build_model_with_cfg")
    for name in RELPOS + UNTRAINED:
        getattr(relpos, name)()
        getattr(timm_relpos, name)()
    monkeypatch.undo()
    for name, ours_call, timm_call in zip(RELPOS + UNTRAINED, ours_calls, timm_calls):
        timm_kwargs = check_fixed_size_config(name, ours_call, timm_call, lambda key, value, expected: (
            value.__name__ == expected.__name__ if key == "block_fn" else value == expected))
        narrow = dict(timm_kwargs, embed_dim=2 * timm_kwargs["num_heads"], depth=2)
        ours_narrow = dict(narrow, block_fn=getattr(relpos, narrow.get("block_fn", relpos.RelPosBlock).__name__))
        reference, ours = check_seeded_init(lambda: timm_relpos.VisionTransformerRelPos(**narrow),
                                            lambda: relpos.VisionTransformerRelPos(**ours_narrow), 3, tables, name)
        check_structure(ours, reference)
        buffers = dict(ours.named_buffers())
        assert list(buffers) == [k for k, _ in reference.named_buffers()]
        for key, value in reference.named_buffers():
            assert buffers[key].numpy().dtype == value.numpy().dtype, (name, key)
            assert np.array_equal(buffers[key].numpy(), value.numpy()), (name, key)
        assert ours.feature_info == reference.feature_info and ours.num_features == reference.num_features


def test_full_width_layout_matches_timm(monkeypatch):
    """Registered models against timm's, built on the meta device (ViT-B/32+ with post-norm blocks cut to two blocks,
    ViT-S/16 with a shared bias MLP whole, the untrained ViT-S/16 with post-norm blocks and timm's test model whole):
    state_dict keys in order, shapes and dtypes, the module tree, the printout of every layer, feature_info,
    num_features and default_cfg."""
    skip_random_init(monkeypatch)
    for name, kwargs in [("vit_relpos_base_patch32_plus_rpn_256", dict(depth=2)),
                         ("vit_srelpos_small_patch16_224", {}), ("vit_relpos_small_patch16_rpn_224", {}),
                         ("test_vit_relpos", {})]:
        with torch.device("meta"):
            reference = timm.create_model(name, **kwargs)
        ours = models.create_model(name, **kwargs)
        check_layout(ours, reference, (), PRINTED)


KINDS = {
    "registered": dict(qkv_bias=False, fc_norm=True),  # MLP biases, no class token, average pooling, layer scale
    "class_token_table_qk_norm": dict(class_token=True, global_pool="token", rel_pos_type="bias", qk_norm=True),
    "rpn_shared_swin_clsgap": dict(rpn=True, shared_rel_pos=True, rel_pos_type="mlp_swin", rel_pos_dim=16,
                                   class_token=True, fc_norm=True),
    "shared_table_sequence": dict(init_values=None, shared_rel_pos=True, rel_pos_type="bias", global_pool=""),
}


def test_eval_outputs_match_timm():
    """Float32 eval outputs (batch 2, an odd image size) of each kind of small model, and pre-logits features."""
    x = image_batch(2, *SIZE, seed=1)
    for kind, kwargs in KINDS.items():
        reference, ours = small_pair(**kwargs)
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ((2, 24, 7) if kwargs.get("global_pool") == "" else (2, 7)), kind
        assert_close(out, ref, 1e-5, what=kind)
    reference, ours = small_pair(**KINDS["class_token_table_qk_norm"])
    out, ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(out, ref, 1e-5, what="pre-logits")


@pytest.mark.parametrize("kind", ["class_token_table_qk_norm", "rpn_shared_swin_clsgap"])
def test_train_mode_gradients_match_timm_float64(kind):
    """Float64 train mode (the bias MLP drops hidden units: both seeded alike): outputs, the input gradient, every
    parameter gradient (tables, bias MLPs, layer scales, class token) and the fixed buffers equal timm's."""
    reference, ours = small_pair(seed=2, **KINDS[kind])
    torch.manual_seed(3)
    engine.manual_seed(3)
    check_train_step(reference.double().train(), ours.double().train(), image_batch(2, *SIZE, seed=3).astype(float))


DROPOUTS = dict(drop_rate=0.3, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def test_dropout_and_drop_path_follow_timm():
    """timm's drop path rates (rising to the last block) and dropout rates, the bias MLP's 1/8 included; eval outputs
    unaffected; in train mode the same seed draws timm's masks (timm's outputs), another seed others."""
    reference, ours = small_pair(seed=4, depth=3, class_token=True, **DROPOUTS)
    assert len(check_drop_rates(reference, ours)) == 4
    assert 0.125 in [m.p for m in ours.modules() if isinstance(m, engine.nn.Dropout)]
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=5))


def test_timm_vit_init_and_fix_init():
    """weight_init='' (timm's ViT scheme: truncated-normal Linear weights, zero biases, the post-norms' weights set
    again) with fix_init (output projections divided by sqrt(2 (i + 1))) gives timm's initial values."""
    build_timm, build_ours = build_both(rpn=True, weight_init="", fix_init=True, class_token=True,
                                        rel_pos_type="bias", init_values=0.1)

    def drawn(model):
        linear = {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
        return linear | tables(model)

    check_seeded_init(build_timm, build_ours, 5, drawn)


def test_head_api_in_chans_and_image_size_check():
    """num_classes=0 gives the pooled features; reset_classifier gives the classes and pooling asked for ('' returns
    the whole sequence; 'token' without a class token and unknown poolings are refused); in_chans=1 builds a
    one-channel patch projection that gives timm's outputs; an image of another size than the model's is refused."""
    reference, ours = small_pair(seed=6, in_chans=1, fc_norm=True)
    assert tuple(ours.patch_embed.proj.weight.shape) == (24, 1, 8, 8)
    x = image_batch(2, *SIZE, seed=7, c=1)
    headless = relpos.VisionTransformerRelPos(**dict(SMALL, in_chans=1, num_classes=0, fc_norm=True))
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
    assert out.shape == (2, 24, 5)
    assert_close(out, ref, 1e-5)
    for pool in ("token", "max"):
        with pytest.raises(ValueError):
            ours.reset_classifier(5, pool)
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.zeros(1, 1, 16, 16))


def test_features_only_and_intermediates_match_timm():
    """features_only (3 blocks, a class token): timm's FeatureGetterNet maps (the last three blocks by default, or
    out_indices), its state_dict keys (norm and head pruned) and feature_info; forward_intermediates' token
    sequences, normalised, with class tokens, stopping early, and the final sequence."""
    for out_indices, count in ((None, 3), ((0, -2), 2)):
        kwargs = dict(SMALL, depth=3, rel_pos_dim=16)
        if out_indices is not None:
            kwargs["out_indices"] = out_indices
        reference, ours = features_only_pair("vit_relpos_medium_patch16_cls_224", randomize, 8, **kwargs)
        maps = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=9), count, 1e-5)
        assert all(m.shape == (2, 24, 6, 4) for m in maps)
    reference, ours = small_pair(seed=10, depth=3, class_token=True)
    x = image_batch(2, *SIZE, seed=11)
    for kwargs in (dict(indices=2, norm=True, output_fmt="NLC", return_prefix_tokens=True),
                   dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, 1e-5, **kwargs)


def test_list_models():
    """Every variant is registered, under timm's module name: the module lists exactly timm's, the untrained
    variants included."""
    names = models.list_models(module="vision_transformer_relpos")
    assert names == timm.list_models(module="vision_transformer_relpos")
    assert set(names) == set(RELPOS + UNTRAINED)
