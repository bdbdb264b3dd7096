"""timm's VOLO family against timm: every registered variant's configuration; the layout of VOLO-D5 against timm's on
the meta device; seeded initialisation of a small rebuild; eval outputs of small models at an odd image size (the
outlook attention's fold over a grid of odd size, the class-attention blocks and the token-labelling head, both
poolings, no post layers); float64 train-mode outputs, every gradient and BatchNorm's running statistics; dropout and
drop path; and the timm API (pre-logits features, reset_classifier, in_chans, features_only, forward intermediates,
list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import timm.models.volo as timm_volo
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import volo
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_empty_batch, check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_structure, check_train_step, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init)
from op_check import assert_close

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]  # one BLAS thread a side: tiny tensors

NAMES = ["volo_d1_224", "volo_d1_384", "volo_d2_224", "volo_d2_384", "volo_d3_224", "volo_d3_448", "volo_d4_224",
         "volo_d4_448", "volo_d5_224", "volo_d5_448", "volo_d5_512"]
PRINTED = ("Conv2d", "BatchNorm2d", "ReLU", "LayerNorm", "GELU", "Linear", "Dropout", "Identity", "Unfold",
           "AvgPool2d")
# A small VOLO of every stage kind: an outlooker stage (on a 5 x 5 grid: outlook attention at 3 x 3 positions), the
# patch merge, two transformer stages, two class-attention blocks; per-stage MLP ratios.
SMALL = dict(layers=(1, 1, 2, 1), img_size=(45, 39), embed_dims=(16, 24, 24, 24), num_heads=(2, 3, 3, 3),
             stem_hidden_dim=8, mlp_ratio=(2.0, 3.0, 2.0, 2.0), num_classes=7)
SIZE = (45, 39)
# random values for every parameter and BatchNorm statistic of a timm model (its unit norms and zero biases hide
# bugs)
randomize = partial(randomize_parameters, tokens=("cls_token", "pos_embed"), norms=True)


def skip_inits(patch):
    """timm's and our random initialisation skipped (as every weight is set afterwards, or none is looked at)."""
    skip_random_init(patch)
    patch.setattr(volo, "trunc_normal_", lambda tensor, std=0.02: tensor)
    for init in ("kaiming_uniform_", "uniform_", "constant_"):
        patch.setattr(torch.nn.init, init, lambda tensor, *args, **kwargs: tensor)
    patch.setattr(timm_volo, "trunc_normal_", lambda tensor, *args, **kwargs: tensor)


def small_pair(seed=0, **kwargs):
    """(timm's, ours) small VOLO with timm's randomised weights in both, in eval mode. timm's self-attention takes
    its unfused path, whose attention dropout draws from the generator as ours does."""
    config = {**SMALL, **kwargs}
    with pytest.MonkeyPatch.context() as patch:
        skip_inits(patch)
        reference = randomize(timm_volo.VOLO(**config), seed)
        ours = volo.VOLO(**config)
    for module in reference.modules():
        if isinstance(module, timm_volo.Attention):
            module.fused_attn = False
    ours.load_state_dict(numpy_state(reference))
    return reference.eval(), ours.eval()


def test_variant_configs_match_timm(monkeypatch):
    """Each entrypoint hands the model class timm's configuration (keyword arguments overriding it as in timm) and
    the image size of timm's weights (which timm's builder adds from the pretrained configuration); the class has
    timm's default_cfg."""
    assert sorted(NAMES) == sorted(timm.list_models("volo_*"))
    ours_calls = capture_builder(monkeypatch, volo, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_volo, "build_model_with_cfg")
    for name in NAMES:
        getattr(volo, name)(drop_rate=0.1)
        getattr(timm_volo, name)(drop_rate=0.1)
    assert len(ours_calls) == len(timm_calls) == len(NAMES)
    for name, (ours_cls, config), (timm_cls, expected) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is volo.VOLO and timm_cls is timm_volo.VOLO
        expected = {k: v for k, v in expected.items() if k != "feature_cfg"}
        assert config.pop("progress") is True
        cfg = timm.models.get_pretrained_cfg(name)
        assert config.pop("img_size") == cfg.input_size[-1], name
        assert config == expected, name
        assert volo.VOLO.default_cfg == {"first_conv": cfg.first_conv, "classifier": cfg.classifier}


def test_layout_matches_timm(monkeypatch):
    """VOLO-D5 at 512 (the largest) against timm's on the meta device (initialisation skipped): state_dict keys in
    order, shapes and dtypes, the module tree with timm's class names, the printout of every layer, feature_info,
    num_features and default_cfg. The other variants differ from it in the configuration checked above."""
    skip_inits(monkeypatch)
    with torch.device("meta"):
        reference = timm.create_model("volo_d5_512")
    ours = models.create_model("volo_d5_512")
    check_layout(ours, reference, (), PRINTED, types=True)
    assert ours.stage_ends == reference.stage_ends


def test_seeded_init_follows_timm():
    """From the same seed, the same initial weights as timm, drawn in timm's order (the convolutions' and linear
    layers' default inits with the class token's truncated normal among them, then the position embeddings' and every
    Linear weight's truncated normal): convolutions, norms and biases bit for bit, the truncated normals within 2
    float32 ulps; both generators end in step. The printout is timm's."""
    def truncated(reference):
        linears = {f"{n}.weight" for n, m in reference.named_modules() if isinstance(m, torch.nn.Linear)}
        return linears | {"cls_token", "pos_embed"}

    reference, ours = check_seeded_init(lambda: timm_volo.VOLO(**SMALL), lambda: volo.VOLO(**SMALL), 3, truncated)
    check_structure(ours, reference)
    assert repr(ours) == repr(reference)


@pytest.mark.parametrize("kwargs,shape", [({}, (2, 7)), (dict(global_pool="avg"), (2, 7)),
                                          (dict(post_layers=None, use_aux_head=False, global_pool="avg",
                                                qkv_bias=True), (2, 7))])
def test_eval_outputs_match_timm(kwargs, shape):
    """Float32 eval logits (batch 2) at an odd image size: the class token's logits plus half the token-labelling
    head's best ones, the average of every token's, and a model without class attention and auxiliary head."""
    reference, ours = small_pair(seed=1, **kwargs)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == shape and np.abs(expected).max() > 1e-2
    assert_close(out, expected, 1e-5)


def test_train_step_matches_timm_float64():
    """Float64 train mode (BatchNorm on batch statistics; the training output is the eval one, the auxiliary logits
    added): outputs, the input gradient, every parameter gradient and the running statistics after the step equal
    timm's."""
    reference, ours = small_pair(seed=3)
    reference, ours = reference.double().train(), ours.double().train()
    check_train_step(reference, ours, image_batch(2, *SIZE, seed=4).astype(np.float64))


DROPOUTS = dict(drop_rate=0.3, pos_drop_rate=0.2, attn_drop_rate=0.2, drop_path_rate=0.3)


def test_dropout_and_drop_path_follow_timm():
    """timm's rates: drop path rising over the transformer blocks and none in the outlookers and class-attention
    blocks, dropout after the position embeddings, on attention weights (outlook, self and class attention) and
    before the heads. Eval outputs are unaffected; in train mode the same seed draws timm's masks (timm's outputs),
    another seed others."""
    reference, ours = small_pair(seed=5, **DROPOUTS)
    assert check_drop_rates(reference, ours) == [0.075, 0.075, 0.15, 0.15, 0.22499999999999998, 0.22499999999999998,
                                                 0.3, 0.3]
    x = image_batch(2, *SIZE, seed=6)
    _, plain = small_pair(seed=5)
    plain_out, _ = both_outputs(reference, plain, x)
    assert np.array_equal(check_dropout_only_in_training(reference, ours, x), plain_out)


def test_head_api_and_in_chans():
    """num_classes=0 (no auxiliary head) gives timm's pre-logits; reset_classifier replaces both heads (none for 0
    classes, the whole normalised sequence without pooling) and gives timm's outputs with timm's weights, refusing
    poolings VOLO has no use for; in_chans=1 builds a one-channel stem that gives timm's outputs."""
    x = image_batch(2, *SIZE, seed=7)
    reference, ours = small_pair(seed=8)
    with pytest.MonkeyPatch.context() as patch:
        skip_inits(patch)
        headless = volo.VOLO(**dict(SMALL, num_classes=0)).eval()
    assert headless.aux_head is None and isinstance(headless.get_classifier(), engine.nn.Identity)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith(("head.", "aux"))})
    out, expected = both_outputs(reference, headless, x, pre_logits)
    assert out.shape == (2, 24)
    assert_close(out, expected, 1e-5)
    with engine.no_grad():
        assert_close(headless(engine.from_numpy(x)).numpy(), expected, 1e-5)
    for args, shape in (((5,), (2, 5)), ((0, ""), (2, 5, 24))):
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        assert list(ours.state_dict()) == list(reference.state_dict()) and ours.num_classes == args[0]
        ours.load_state_dict(numpy_state(reference))
        out, expected = both_outputs(reference, ours, x)
        assert out.shape == shape
        assert_close(out, expected, 1e-5)
    assert ours.aux_head is None and ours.global_pool == ""
    with pytest.raises(ValueError):
        ours.reset_classifier(5, "max")
    with pytest.raises(ValueError):
        volo.VOLO(**dict(SMALL, patch_size=2))
    reference, ours = small_pair(seed=9, in_chans=1)
    assert tuple(ours.patch_embed.conv[0].weight.shape) == (8, 1, 7, 7)
    out, expected = both_outputs(reference, ours, image_batch(2, *SIZE, seed=10, c=1))
    assert_close(out, expected, 1e-5)


@pytest.mark.parametrize("out_indices,shapes", [(None, [(2, 24, 2, 2)] * 3), ((0,), [(2, 16, 5, 5)])])
def test_features_only_matches_timm(out_indices, shapes):
    """features_only: timm's FeatureGetterNet stages (by default the last three, or out_indices) as (N, C, H, W)
    maps, with timm's state_dict keys (the class token, class attention and heads pruned; with only the first
    stage, the position embeddings and final norm too), feature_info and values."""
    kwargs = dict(SMALL, features_only=True)
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    with pytest.MonkeyPatch.context() as patch:
        skip_inits(patch)
        reference = randomize(timm_volo._create_volo("volo_d1_224", **kwargs), 11).eval()
        ours = models.create_model("volo_d1_224", **kwargs)
    assert list(ours.state_dict()) == list(reference.state_dict())
    ours.load_state_dict(numpy_state(reference))
    outs = check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=12), len(shapes), 1e-5)
    assert [o.shape for o in outs] == shapes


def test_forward_intermediates_match_timm():
    """forward_intermediates' maps (normalised after the position embeddings) and final sequence, and when stopping
    early the last map."""
    reference, ours = small_pair(seed=13)
    x = image_batch(2, *SIZE, seed=14)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True)):
        _, outs = check_intermediates(reference, ours, x, 1e-5, **kwargs)
        assert len(outs) == 2


def test_other_image_sizes_are_refused():
    """The position embeddings fix the token grid: an image giving another grid than the one the model was built for
    raises (here 45 x 39 pixels give a 2 x 2 grid, as sides of 31 to 46 pixels do), a grid of one row too (which
    timm broadcasts to the embeddings'); an image too small for the patch merge too."""
    _, ours = small_pair()
    with engine.no_grad():
        assert tuple(ours(engine.from_numpy(image_batch(1, 32, 46))).shape) == (1, 7)
        for size in ((47, 39), (45, 47), (30, 39), (8, 8)):
            with pytest.raises((RuntimeError, ValueError)):
                ours(engine.from_numpy(image_batch(1, *size)))


def test_empty_batch():
    """An empty batch (which timm's model refuses: it reshapes the tokens with a -1 over no values) gives empty
    outputs in eval and train mode, zero gradients for every parameter and leaves BatchNorm's statistics as they
    were, counting the batch, as torch's BatchNorm does."""
    _, ours = small_pair(seed=15)
    check_empty_batch(ours, (3, *SIZE), 7)


def test_list_models():
    """Every variant is registered under timm's module name, each with timm's ImageNet-1k weights."""
    assert set(models.list_models("volo_*")) == set(NAMES)
    assert set(models.list_models(module="volo")) == set(NAMES)
    for name in NAMES:
        assert any(timm.models.get_pretrained_cfg(tag).num_classes == 1000 for tag in timm.list_pretrained(name + ".*"))


def test_onnx_export_matches_eager():
    """The small VOLO exported to ONNX (the outlook attention's unfold, attention and fold; class attention; the
    token-labelling head) gives our eager logits in ONNX Runtime at two batch sizes (the zoo's ONNX sweep leaves VOLO
    to this test: volo_d1_224 took 11 s there)."""
    from onnx_check import check_export

    _, ours = small_pair(seed=3)
    check_export(ours, lambda batch: (image_batch(batch, *SIZE, seed=4),), rtol=1e-4, what="volo", per_sample=True)
