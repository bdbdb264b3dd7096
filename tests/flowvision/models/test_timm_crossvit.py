"""timm's CrossViT family against timm: every registered variant's configuration; the layout of a dagger and a plain
model against timm's on the meta device; seeded initialisation of small rebuilds; eval outputs of small models (both
patch embeddings, both poolings, one and several fusion blocks, inputs resized and cropped to each branch's size);
float64 train-mode outputs and every gradient; dropout and drop path; and the timm API (pre-logits features,
reset_classifier, in_chans, features_only, forward intermediates, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.crossvit as timm_crossvit
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import crossvit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_empty_batch, check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, image_batch, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]  # one BLAS thread a side: tiny tensors

NAMES = ["crossvit_9_240", "crossvit_9_dagger_240", "crossvit_15_240", "crossvit_15_dagger_240",
         "crossvit_15_dagger_408", "crossvit_18_240", "crossvit_18_dagger_240", "crossvit_18_dagger_408",
         "crossvit_base_240", "crossvit_small_240", "crossvit_tiny_240"]
PRINTED = ("Conv2d", "ReLU", "LayerNorm", "GELU", "Linear", "Dropout", "Identity")
# Small models: 12- and 16-pixel patches of a 48-pixel image (the second branch at 36), one multi-scale block with a
# single cross-attention block per branch (timm's registered layout) and one with a stack of them; the dagger patch
# embedding (the second branch at 32 pixels) with average pooling.
SMALL = dict(img_size=48, img_scale=(1.0, 0.75), patch_size=(12, 16), embed_dim=(16, 24),
             depth=((1, 2, 0), (2, 1, 1)), num_heads=(2, 3), mlp_ratio=(2.0, 3.0, 1.0), num_classes=7)
DAGGER = dict(img_size=48, img_scale=(1.0, 2 / 3), patch_size=(12, 16), embed_dim=(16, 24), depth=((1, 1, 0),),
              num_heads=(2, 2), mlp_ratio=(2.0, 2.0, 1.0), multi_conv=True, num_classes=5, global_pool="avg")
SIZE = (41, 37)  # resized (bicubic) to each branch's size
# random values for every parameter of a timm model (its unit norms and zero biases hide bugs), each branch's
# class token and position embeddings N(0, 1)
randomize = partial(randomize_parameters, tokens=("cls_token_0", "cls_token_1", "pos_embed_0", "pos_embed_1"))


def unfused(model):
    """``model`` (timm's) with its self-attention on the unfused path, whose attention dropout draws from the
    generator as ours does."""
    for module in model.modules():
        if isinstance(module, timm.layers.Attention):
            module.fused_attn = False
    return model


def skip_inits(patch):
    """timm's and our random initialisation skipped (as every weight is set afterwards, or none is looked at)."""
    skip_random_init(patch)
    patch.setattr(crossvit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    for init in ("kaiming_uniform_", "uniform_", "constant_"):
        patch.setattr(torch.nn.init, init, lambda tensor, *args, **kwargs: tensor)
    patch.setattr(timm_crossvit, "trunc_normal_", lambda tensor, *args, **kwargs: tensor)


def small_pair(config, seed=0, **kwargs):
    """(timm's, ours) small CrossViT of ``config`` with timm's randomised weights in both, in eval mode."""
    config = {**config, **kwargs}
    with pytest.MonkeyPatch.context() as patch:
        skip_inits(patch)
        reference = unfused(randomize(timm_crossvit.CrossVit(**config), seed))
        ours = crossvit.CrossVit(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def as_tuples(value):
    """Lists as tuples, nested ones too (timm's entrypoints pass lists where ours pass tuples)."""
    return tuple(as_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def test_variant_configs_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration (keyword arguments overriding it as in timm) and
    the image size of timm's weights (which timm's builder adds from the pretrained configuration)."""
    assert sorted(NAMES) == sorted(timm.list_models("crossvit_*"))
    ours_calls = capture_builder(monkeypatch, crossvit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_crossvit, "build_model_with_cfg")
    for name in NAMES:
        getattr(crossvit, name)(drop_rate=0.1)
        getattr(timm_crossvit, name)(drop_rate=0.1)
    assert len(ours_calls) == len(timm_calls) == len(NAMES)
    for name, (ours_cls, config), (timm_cls, expected) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is crossvit.CrossVit and timm_cls is timm_crossvit.CrossVit
        expected = {k: as_tuples(v) for k, v in expected.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
        assert config.pop("progress") is True
        assert config.pop("img_size") == timm.models.get_pretrained_cfg(name).input_size[-1], name
        assert config == expected, name


def test_layout_matches_timm(monkeypatch):
    """CrossViT-15-dagger at 408 against timm's on the meta device (initialisation skipped, which takes a second
    there): state_dict keys in order, shapes and dtypes, the module tree with timm's class names, the printout of
    every layer, feature_info, num_features, head_hidden_size and default_cfg. The other variants differ from it in
    the configuration checked above; the single-convolution patch embedding's printout is checked below."""
    name = "crossvit_15_dagger_408"
    skip_inits(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model(name)
    ours = models.create_model(name)
    check_layout(ours, reference, (), PRINTED, types=True)
    assert ours.img_size_scaled == reference.img_size_scaled


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm, drawn in timm's order (the convolutions' and linear
    layers' default inits, then the position embeddings', class tokens' and every Linear weight's truncated normal):
    convolutions, norms and biases bit for bit, the truncated normals within 2 float32 ulps; both generators end in
    step. The module trees and printouts are timm's."""
    def truncated(reference):
        linears = {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}
        return linears | {k for k in reference.state_dict() if k.startswith(("pos_embed", "cls_token"))}

    for seed, config in enumerate((SMALL, DAGGER)):
        reference, ours = check_seeded_init(lambda: timm_crossvit.CrossVit(**config),
                                            lambda: crossvit.CrossVit(**config), seed, truncated, str(seed))
        check_structure(ours, reference)
        assert repr(ours) == repr(reference)


@pytest.mark.parametrize("config,size,kwargs", [(SMALL, SIZE, {}), (SMALL, (53, 51), dict(crop_scale=True)),
                                                (DAGGER, (48, 48), {})])
def test_eval_outputs_match_timm(config, size, kwargs):
    """Float32 eval logits (batch 2) of small models at odd image sizes: resized to both branches' sizes (bicubic),
    center-cropped to them (``crop_scale``), or kept for the first branch and resized for the dagger's second."""
    reference, ours = small_pair(config, seed=1, **kwargs)
    out, expected = both_outputs(reference, ours, image_batch(2, *size, seed=2))
    assert out.shape == (2, config["num_classes"]) and np.abs(expected).max() > 1e-2
    assert_close(out, expected, 1e-5)


def test_train_step_matches_timm_float64():
    """Float64 train mode: outputs, the input gradient (through the bicubic resizing) and every parameter gradient
    equal timm's."""
    reference, ours = small_pair(SMALL, seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=4).astype(np.float64))


DROPOUTS = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def test_dropout_and_drop_path_follow_timm():
    """timm's rates: drop path rising over each multi-scale block's stack (the fusion taking the last block's), dropout
    after the position embeddings, on attention weights, after projections and MLPs and before the heads. Eval
    outputs are unaffected; in train mode the same seed draws timm's masks (timm's outputs), another seed others."""
    reference, ours = small_pair(SMALL, seed=5, **DROPOUTS)
    assert max(check_drop_rates(reference, ours)) == pytest.approx(0.3)
    x = image_batch(2, *SIZE, seed=6)
    _, plain = small_pair(SMALL, seed=5)
    plain_out, _ = both_outputs(reference, plain, x)
    assert np.array_equal(check_dropout_only_in_training(reference, ours, x), plain_out)


def test_head_api_and_in_chans():
    """num_classes=0 gives both branches' pooled features, concatenated, as timm's pre-logits; reset_classifier gives
    the classes and pooling asked for (new heads that give timm's outputs with timm's weights) and refuses poolings
    CrossViT has no use for; in_chans=1 builds one-channel first convolutions that give timm's outputs."""
    x = image_batch(2, *SIZE, seed=7)
    reference, ours = small_pair(DAGGER, seed=8)
    with pytest.MonkeyPatch.context() as patch:
        skip_inits(patch)
        headless = crossvit.CrossVit(**dict(DAGGER, num_classes=0)).eval()
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    out, expected = both_outputs(reference, headless, x, pre_logits)
    assert out.shape == (2, 40) and isinstance(headless.get_classifier()[0], engine.nn.Identity)
    assert_close(out, expected, 1e-5)
    with engine.no_grad():
        assert_close(headless(engine.from_numpy(x)).numpy(), expected, 1e-5)
    reference.reset_classifier(3, "token")
    ours.reset_classifier(3, "token")
    assert [h.out_features for h in ours.get_classifier()] == [3, 3] and ours.global_pool == "token"
    assert not ours.get_classifier().training
    ours.load_state_dict(numpy_state(reference))
    out, expected = both_outputs(reference, ours, x)
    assert out.shape == (2, 3)
    assert_close(out, expected, 1e-5)
    with pytest.raises(ValueError):
        ours.reset_classifier(3, "max")
    with pytest.raises(ValueError):
        crossvit.CrossVit(**dict(DAGGER, patch_size=(8, 16)))
    reference, ours = small_pair(SMALL, seed=9, in_chans=1, depth=((1, 1, 0),))
    assert tuple(ours.patch_embed[0].proj.weight.shape) == (16, 1, 12, 12)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=10, c=1))
    assert_close(out, expected, 1e-5)


@pytest.mark.parametrize("out_indices", [None, (0, -1)])
def test_features_only_matches_timm(out_indices):
    """features_only: timm's FeatureGetterNet stages (by default the last multi-scale block's patch tokens of both
    branches, or out_indices counted branch by branch) as maps of each branch's patch grid, with timm's state_dict
    keys (norms and heads pruned), feature_info and values."""
    kwargs = dict(SMALL, features_only=True)
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    with pytest.MonkeyPatch.context() as patch:
        skip_inits(patch)
        reference = randomize(timm_crossvit._create_crossvit("crossvit_9_240", **kwargs), 11).eval()
        ours = models.create_model("crossvit_9_240", **kwargs)
    assert list(ours.state_dict()) == list(reference.state_dict())
    ours.load_state_dict(numpy_state(reference))
    outs = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=12), 2, 1e-5)
    assert [o.shape for o in outs] == [(2, 16, 4, 4), (2, 24, 2, 2)]
    assert ours.feature_info.reduction() == [12, 21]


def test_forward_intermediates_match_timm():
    """forward_intermediates' normalised token sequences, and maps when stopping early, and the final sequences."""
    reference, ours = small_pair(SMALL, seed=13)
    x = image_batch(2, *SIZE, seed=14)
    for kwargs in (dict(indices=2, norm=True, output_fmt="NLC"), dict(indices=[0, 2], stop_early=True)):
        _, outs = check_intermediates(reference, ours, x, 1e-5, **kwargs)
        assert len(outs) == 2


def test_any_image_size_is_resized():
    """The input is resized to each branch's size, so even a 1-pixel image is classified; a branch's patch embedding
    refuses other sizes."""
    _, ours = small_pair(DAGGER)
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(image_batch(1, 1, 1))).shape) == (1, 5)
        with pytest.raises(ValueError):
            ours.patch_embed[1](engine.from_numpy(image_batch(1, 48, 48)))


def test_empty_batch():
    """An empty batch (timm's CrossViT refuses it: a reshape of no values with -1) gives no logits, an empty input
    gradient and zero parameter gradients."""
    _, ours = small_pair(SMALL)
    check_empty_batch(ours, (3, *SIZE), 7)


def test_list_models():
    """Every variant is registered under timm's module name, each with timm's ImageNet-1k weights."""
    assert set(models.list_models("crossvit_*")) == set(NAMES)
    assert set(models.list_models(module="crossvit")) == set(NAMES)
    for name in NAMES:
        assert any(timm.models.get_pretrained_cfg(tag).num_classes == 1000 for tag in timm.list_pretrained(name + ".*"))
