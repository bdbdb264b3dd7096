"""timm parity of PiT (timm's ``pit`` module), plain and distilled: every registered variant's configuration and the
full-size layout of one of each kind against timm's on the meta device; seeded initialisation, float32 eval outputs
and float64 train-mode outputs and gradients of small models with timm's randomised weights loaded; dropout and drop
path; the distilled heads; and the timm API (pre-logits, num_classes=0, global pooling, reset_classifier, in_chans,
the image size check, features_only, forward_intermediates, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import pit as timm_pit

import engine
import flowvision.models as models
from flowvision.models.timm_families import pit
from model_parity import (both_outputs, capture_builder, check_distilled_training, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_intermediates, check_layout,
                          check_seeded_init, check_train_step, features_only_pair, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["pit_b_224", "pit_b_distilled_224", "pit_s_224", "pit_s_distilled_224", "pit_ti_224",
         "pit_ti_distilled_224", "pit_xs_224", "pit_xs_distilled_224"]
# timm's stages hold a no-op norm slot that ours leaves out
PLACEHOLDERS = ("transformers.0.norm", "transformers.1.norm", "transformers.2.norm")
PRINTED = ("Conv2d", "Linear", "LayerNorm", "Dropout", "GELU")
TOL = 1e-5
# Small models: three stages of one, two and one blocks, 8, 16 and 32 channels (2, 4 and 8 heads); 8x8 patches at
# stride 4 of a 51x39 image (3 pixels left over each way) give an 11x8 map, pooled to 6x4 and 3x2 (odd sizes,
# padded depthwise convolutions).
SMALL = dict(img_size=(51, 39), patch_size=8, stride=4, base_dims=(4, 4, 4), depth=(1, 2, 1), heads=(2, 4, 8),
             num_classes=7)
SIZE = (51, 39)
# random values for every parameter of a timm model (zero biases and unit norms would hide bugs)
randomize = partial(randomize_parameters, tokens=("cls_token", "pos_embed"))


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small PiT with timm's randomised weights in both, in eval mode."""
    config = dict(SMALL, **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_pit.PoolingVisionTransformer(**config), seed)
    ours = pit.PoolingVisionTransformer(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_every_variant_has_timm_configuration_and_layout(monkeypatch):
    """Each entrypoint hands the class timm's configuration; built full size, a plain and a distilled model have
    timm's layout: state_dict keys, order, shapes and dtypes, module tree, layer printouts, feature_info,
    num_features, default_cfg."""
    ours_calls = capture_builder(monkeypatch, pit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_pit, "build_model_with_cfg")
    for name in NAMES:
        getattr(pit, name)()
        getattr(timm_pit, name)()
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls.__name__ == timm_cls.__name__
        assert ours_kwargs.pop("progress") is True
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("pretrained_filter_fn", "feature_cfg")}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(pit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    for name in ("pit_ti_224", "pit_b_distilled_224"):
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


@pytest.mark.parametrize("distilled", [False, True])
def test_seeded_init_and_eval_outputs_match_timm(distilled):
    """The same seed gives timm's initial weights (position embeddings and prefix tokens drawn twice, as timm draws
    them; truncated normals within 2 float32 ulps, the rest bit for bit) and leaves both random streams in step;
    with timm's randomised weights, float32 eval logits and pre-logits features of a batch of 2 equal timm's."""
    check_seeded_init(lambda: timm_pit.PoolingVisionTransformer(**SMALL, distilled=distilled),
                      lambda: pit.PoolingVisionTransformer(**SMALL, distilled=distilled), 3,
                      lambda reference: {"pos_embed", "cls_token"}, what=distilled)
    reference, ours = small_pair(seed=1, distilled=distilled)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)


def test_train_mode_gradients_match_timm_float64():
    """float64, train mode, distilled (the heads' average): outputs, input gradient and every parameter's gradient
    (position embeddings, both prefix tokens, the pooling layers) equal timm's."""
    reference, ours = small_pair(seed=4, distilled=True)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=5).astype(np.float64))


def test_dropout_drop_path_and_distilled_training():
    """timm's rates (drop path rising over the blocks, dropout after the position embeddings, in the blocks and
    before the heads); in train mode the same seed draws timm's masks; distilled training returns both heads'
    logits, as timm's."""
    rates = dict(drop_rate=0.3, pos_drop_rate=0.2, proj_drop_rate=0.1, attn_drop_rate=0.1, drop_path_rate=0.3)
    reference, ours = small_pair(seed=6, distilled=True, **rates)
    check_drop_rates(reference, ours)
    x = image_batch(2, *SIZE, seed=7)
    check_dropout_only_in_training(reference, ours, x, TOL)
    check_distilled_training(reference, ours, x, 1e-4, 7)


def test_head_api_in_chans_and_image_size():
    """num_classes=0 gives the class token's features; reset_classifier to new classes and to no pooling (the prefix
    tokens through the head) as timm's; the distilled heads need token pooling; in_chans=1 builds a one-channel
    embedding that gives timm's outputs; images that give another grid are refused."""
    reference, ours = small_pair(seed=9, in_chans=1)
    x = image_batch(2, *SIZE, seed=10, c=1)
    headless = pit.PoolingVisionTransformer(**dict(SMALL, num_classes=0, in_chans=1))
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    out, ref = both_outputs(partial(pre_logits, reference), headless.eval(), x)
    assert out.shape == (2, 32)
    assert_close(out, ref, TOL)
    reference.reset_classifier(5, "")
    ours.reset_classifier(5, "")
    assert ours.get_classifier().out_features == 5 and not ours.head.training and ours.num_classes == 5
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 1, 5)
    assert_close(out, ref, TOL)
    distilled = pit.PoolingVisionTransformer(**dict(SMALL, distilled=True))
    with pytest.raises(ValueError):
        distilled.reset_classifier(5, "")
    with pytest.raises(ValueError):
        pit.PoolingVisionTransformer(**dict(SMALL, distilled=True, global_pool=""))
    distilled.reset_classifier(0)
    assert all(isinstance(h, engine.nn.Identity) for h in distilled.get_classifier())
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(image_batch(1, 48, 36, c=1))).shape) == (1, 1, 5)
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 52, 38, c=1)))
    with pytest.raises(ValueError, match="img_size"):
        ours(engine.from_numpy(image_batch(1, 7, 7, c=1)))


@pytest.mark.parametrize("distilled, out_indices", [(False, None), (True, (0, 1))])
def test_features_only_and_intermediates_match_timm(distilled, out_indices):
    """features_only through the entrypoints: timm's whole headless model under ``body`` (its state_dict keys), its
    feature_info and stage maps (all three, or those out_indices picks); forward_intermediates' maps and final
    prefix tokens, stopping early, as timm's."""
    name = "pit_ti_distilled_224" if distilled else "pit_ti_224"
    kwargs = dict(SMALL, num_classes=1000)
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    reference, ours = features_only_pair(name, randomize, 11, **kwargs)
    assert type(ours) is pit.FeatureBodyNet
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=12), 3 if out_indices is None else 2, TOL)
    reference, ours = small_pair(seed=13, distilled=distilled)
    x = image_batch(2, *SIZE, seed=14)
    for kwargs in (dict(indices=[0, 2]), dict(indices=[1], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)


def test_list_models():
    """Every PiT with ImageNet weights in timm is registered under its timm name and module."""
    assert models.list_models(module="pit") == sorted(NAMES)
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("pit*")}
