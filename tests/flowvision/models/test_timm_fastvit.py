"""timm parity of FastViT (fastvit_t8/t12/s12/sa12/sa24/sa36/ma36) and the MobileCLIP image towers (fastvit_mci0-4):
every variant's configuration and full-size layout on the meta device (fastvit_mci4, over 300M parameters, by
configuration only); a small five-stage MCi model (LayerNorm before attention in two stages, active large-kernel
patch convolutions) for seeded init, eval and train outputs and features_only; seeded initialisation; float32 eval
outputs of small models (RepMixer with and without layer scale, multi-head attention, conditional position encodings
of two shapes, patch embeddings with squeeze-and-excitation and activation, a stage without downsampling, 5x5
kernels, a stem without 1x1 branches); re-parameterisation (``reparameterize_model`` copying and in place, the
layers' ``reparameterize``, ``inference_mode``): timm's module tree, state_dict and outputs, the unfused outputs,
timm's frozen parameters; float64 train-mode outputs, gradients and BatchNorm statistics; dropout and stochastic
depth with timm's masks; all with timm's randomised weights loaded; and the timm API (pre-logits, pooling,
reset_classifier, in_chans, bad arguments, features_only, forward_intermediates, prune_intermediate_layers,
fork_feat, list_models)."""
from functools import partial

import numpy as np
import pytest
import timm
import torch
from timm.models import fastvit as timm_fastvit
from timm.models import reparameterize_model as timm_reparameterize_model

import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import fastvit
from model_parity import (both_outputs, check_drop_rates, check_dropout_only_in_training, check_feature_maps,
                          check_head_api, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          comparable_config, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init, without_default_head)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["fastvit_t8", "fastvit_t12", "fastvit_s12", "fastvit_sa12", "fastvit_sa24", "fastvit_sa36", "fastvit_ma36"]
# MobileCLIP's image towers: timm's weights are CLIP embeddings (512 or 768 wide)
MCI_NAMES = ["fastvit_mci0", "fastvit_mci1", "fastvit_mci2", "fastvit_mci3", "fastvit_mci4"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "BatchNormAct2d", "LayerNorm2d", "Linear", "GELU", "ReLU", "Sigmoid", "Dropout")
# timm's identity slot that we leave out: the (absent) norm of squeeze-and-excitation
PLACEHOLDERS = (".se.bn",)


def small_config(module, kind):
    """Small configurations of timm's (``module`` timm's fastvit) or our class. "sa": stages of one block 8 to 64
    wide, attention (1 and 2 heads) after 7x7 and 3x3 position encodings in the last two. "options": a
    second stage that keeps the width (no patch embedding), squeeze-and-excitation and an activation in one
    patch embedding, 5x5 RepMixer and patch kernels, no layer scales, no 1x1 stem branches, a 3x final
    widening. A 35x33 image gives 9x9 maps after the stem, then (in "sa") 5x5, 3x3 and 2x2."""
    if kind == "mci":
        pos_emb = partial(module.RepConditionalPosEnc, spatial_shape=(7, 7))
        return dict(layers=(1, 1, 1, 1, 1), embed_dims=(8, 16, 16, 32, 64), mlp_ratios=(4,) * 5, num_classes=7,
                    downsamples=(False, True, True, True, True), se_downsamples=(False, False, True, True, False),
                    token_mixers=("repmixer",) * 3 + ("attention",) * 2, pos_embs=(None,) * 3 + (pos_emb,) * 2,
                    lkc_use_act=True, norm_layer=partial(module.LayerNorm2d, eps=1e-5), stem_use_scale_branch=False)
    if kind == "sa":
        return dict(layers=(1, 1, 1, 1), embed_dims=(8, 16, 32, 64), mlp_ratios=(3, 3, 2, 2), num_classes=7,
                    token_mixers=("repmixer", "repmixer", "attention", "attention"),
                    pos_embs=(None, None, partial(module.RepConditionalPosEnc, spatial_shape=(7, 7)),
                              partial(module.RepConditionalPosEnc, spatial_shape=3)))
    return dict(layers=(1, 1, 1, 2), embed_dims=(8, 8, 16, 32), mlp_ratios=(2, 2, 3, 2), num_classes=7,
                token_mixers=("repmixer", "repmixer", "repmixer", "attention"),
                se_downsamples=(False, False, True, False), repmixer_kernel_size=5, down_patch_size=5, lkc_use_act=True,
                stem_use_scale_branch=False,
                layer_scale_init_value=None, cls_ratio=3.0)


SIZE = (35, 33)


def randomize(model, seed):
    """Random values for every parameter (layer scales U(0.5, 1.5): timm's 1e-5 would hide the branches) and every
    BatchNorm's statistics of a timm FastViT."""
    return randomize_parameters(model, seed, scales=("gamma",), norms=True)


def check_tree(ours, reference):
    """The same state_dict keys (in order) and shapes, and the same module tree and class names (our
    StochasticDepth for timm's DropPath), but for timm's Identity ``PLACEHOLDERS``, which we leave out."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    assert all(tuple(our_sd[k].shape) == tuple(v.shape) for k, v in ref_sd.items())
    expected = [(n, type(m).__name__) for n, m in reference.named_modules()
                if not (n.endswith(PLACEHOLDERS) and isinstance(m, torch.nn.Identity))]
    renamed = {"StochasticDepth": "DropPath"}
    names = [(n, type(m).__name__) for n, m in ours.named_modules()]
    assert [(n, renamed.get(kind, kind)) for n, kind in names] == expected


def small_pair(kind="sa", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's randomised weights loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize(timm_fastvit.FastVit(**{**small_config(timm_fastvit, kind), **kwargs}), seed).eval()
    ours = fastvit.FastVit(**{**small_config(fastvit, kind), **kwargs})
    check_tree(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (position encodings compared as class name and
    arguments) and builds timm's layout: state_dict keys, order, shapes, dtypes, module tree, layer printouts,
    feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(fastvit, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_fastvit, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(fastvit, name)()
        getattr(timm_fastvit, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert comparable_config(without_default_head(name, ours_kwargs)) == comparable_config(expected), name
        assert timm_kwargs["feature_cfg"] == dict(flatten_sequential=True, out_indices=(0, 1, 2, 3))
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(fastvit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    # timm's random draws on the meta device run through Python reference ops: skipped, as ours
    monkeypatch.setattr(timm_fastvit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(torch.nn.init, "constant_", lambda tensor, value: tensor)
    for layer in (torch.nn.Linear, torch.nn.Conv2d, torch.nn.modules.batchnorm._NormBase):
        monkeypatch.setattr(layer, "reset_parameters", lambda self: None)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        ours = models.create_model(name)
        check_layout(ours, reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (PyTorch's default inits, truncated-normal feed-forward
    convolutions and linear layers, constant layer scales) and leaves both random streams in step."""
    for kind in ("sa", "options"):
        check_seeded_init(lambda: timm_fastvit.FastVit(**small_config(timm_fastvit, kind)),
                          lambda: fastvit.FastVit(**small_config(fastvit, kind)), 3,
                          lambda reference: {f"{n}.weight" for n, m in reference.named_modules()
                                             if isinstance(m, torch.nn.Linear) or ".mlp." in n + "."
                                             and isinstance(m, torch.nn.Conv2d)}, what=kind)


@pytest.mark.parametrize("kind", ["sa", "options"])
def test_eval_outputs_and_reparameterization_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size; then ``reparameterize_model`` (a copy; the original keeps its
    branches) gives timm's module tree, state_dict, frozen parameters and outputs, the unfused outputs too; in
    place it gives the same, and a second pass changes nothing; ``inference_mode=True`` builds that tree, and
    takes its weights."""
    reference, ours = small_pair(kind, seed=1)
    x = image_batch(2, *SIZE, seed=2)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    fused_reference = timm_reparameterize_model(reference)
    fused = fastvit.reparameterize_model(ours)
    assert fused is not ours and ours.stem[0].reparam_conv is None
    check_tree(fused, fused_reference)
    state = fused.state_dict()
    for key, value in numpy_state(fused_reference).items():
        assert_close(state[key].numpy(), value, 1e-5, what=key)
    frozen = [n for n, p in fused.named_parameters() if not p.requires_grad]
    assert frozen == [n for n, p in fused_reference.named_parameters() if not p.requires_grad] != []
    fused_out, fused_ref = both_outputs(fused_reference, fused, x)
    assert_close(fused_out, fused_ref, TOL)
    assert_close(fused_out, out, TOL)
    assert fastvit.reparameterize_model(ours, inplace=True) is ours
    for module in ours.modules():
        if hasattr(module, "reparameterize"):
            module.reparameterize()
    check_tree(ours, fused_reference)
    assert np.array_equal(both_outputs(fused_reference, ours, x)[0], fused_out)
    deployed = fastvit.FastVit(**small_config(fastvit, kind), inference_mode=True)
    check_tree(deployed, timm_fastvit.FastVit(**small_config(timm_fastvit, kind), inference_mode=True))
    deployed.load_state_dict(numpy_state(fused_reference))
    assert_close(both_outputs(fused_reference, deployed.eval(), x)[0], fused_ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode (batch statistics in every BatchNorm): outputs, input gradient, every parameter's
    gradient and the updated running statistics equal timm's, for both small models."""
    for kind in ("sa", "options"):
        reference, ours = small_pair(kind, seed=4)
        reference.double().train()
        ours.double().train()
        check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_dropout_and_drop_path_only_in_training():
    """timm's per-block stochastic depth rates (linear over all blocks, no module at rate 0), feed-forward and
    head dropout: eval outputs untouched, timm's masks after the same seed in training."""
    reference, ours = small_pair("sa", seed=6, drop_rate=0.3, proj_drop_rate=0.2, drop_path_rate=0.4)
    rates = check_drop_rates(reference, ours)
    assert len(rates) == 5 and rates[-1] == pytest.approx(0.4)
    reference.double()
    ours.double()
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7).astype(np.float64), 1e-10, 1e-10)


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits, num_classes=0 and reset_classifier (other pooling, no pooling) as timm's; a one-channel model
    gives timm's outputs, a 1x1 image runs; bad arguments are refused where timm asserts or raises."""
    reference, ours = small_pair("options", seed=8, global_pool="avgmax")
    x = image_batch(2, *SIZE, seed=9)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    headless = fastvit.FastVit(**small_config(fastvit, "options") | dict(num_classes=0, global_pool="avgmax"))
    check_head_api(reference, ours, headless.eval(), x, 96, (2, 96, 2, 2))
    assert ours.global_pool == ""
    reference, ours = small_pair("sa", seed=10, in_chans=1)
    for shape in ((2, *SIZE), (1, 1, 1)):
        out, ref = both_outputs(reference, ours, image_batch(*shape, seed=11, c=1))
        assert_close(out, ref, TOL)
    for kwargs, timm_error, message in [
            (dict(token_mixers=("repmixer",) * 3 + ("pooling",)), ValueError, "not supported"),
            (dict(embed_dims=(8, 16, 16, 64)), AssertionError, "divisible by head_dim")]:
        with pytest.raises(timm_error):
            timm_fastvit.FastVit(**{**small_config(timm_fastvit, "sa"), **kwargs})
        with pytest.raises(ValueError, match=message):
            fastvit.FastVit(**{**small_config(fastvit, "sa"), **kwargs})
    with pytest.raises(AssertionError):
        timm_fastvit.RepConditionalPosEnc(8, spatial_shape=(3, 3, 3))
    with pytest.raises(ValueError, match="spatial_shape"):
        fastvit.RepConditionalPosEnc(8, spatial_shape=(3, 3, 3))
    with pytest.raises(AssertionError):
        timm_fastvit.FastVitStage(8, 16, 1, "repmixer", downsample=False, drop_path_rate=[0.0])
    with pytest.raises(ValueError, match="keeps its width"):
        fastvit.FastVitStage(8, 16, 1, "repmixer", downsample=False)
    with pytest.raises(ValueError, match="global_pool"):
        fastvit.FastVit(**small_config(fastvit, "sa"), global_pool="mean")


def test_features_intermediates_pruning_and_fork_feat():
    """features_only through the entrypoints' builder (timm's four stage taps, or those of ``out_indices``, under
    its flattened names), forward_intermediates (all stages, picked ones stopping early), prune_intermediate_layers
    (timm's stages kept, final convolution and head dropped) and the dense-prediction ``fork_feat`` form (a norm
    per stage), all as timm's."""
    x = image_batch(2, *SIZE, seed=12)
    for out_indices in (None, (1, 3)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        torch.manual_seed(13)
        reference = timm_fastvit._create_fastvit("fastvit_sa12", features_only=True,
                                                 **small_config(timm_fastvit, "options"), **kwargs)
        randomize(reference, 13).eval()
        ours = fastvit._create_fastvit("fastvit_sa12", False, True, features_only=True,
                                       **small_config(fastvit, "options"), **kwargs)
        assert type(ours) is FlatFeatureListNet
        assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
        ours.load_state_dict(numpy_state(reference))
        check_feature_maps(reference, ours, x, 4 if out_indices is None else 2, TOL)
    reference, ours = small_pair("sa", seed=14)
    _, maps = check_intermediates(reference, ours, x, TOL)
    assert [m.shape[1:] for m in maps] == [(8, 9, 9), (16, 5, 5), (32, 3, 3), (64, 2, 2)]
    check_intermediates(reference, ours, x, TOL, indices=[0, 2], stop_early=True)
    check_intermediates(reference, ours, x, TOL, indices=1, intermediates_only=True)
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_tree(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 16
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 16, 5, 5)
    assert_close(out, ref, TOL)
    reference, ours = small_pair("options", seed=15, fork_feat=True)
    assert ours.num_classes == 0 and ours.num_features == ours.head_hidden_size == 32
    outs, refs = both_outputs(reference, ours, x)
    assert [o.shape[1] for o in outs] == [8, 8, 16, 32]
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with 1k weights and the MobileCLIP image towers under their timm names and
    module, as timm orders them."""
    names = models.list_models(module="fastvit")
    assert names == [n for n in timm.list_models(module="fastvit") if n in NAMES + MCI_NAMES]
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("fastvit*")}
    assert set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("fastvit*") if "in1k" in n}


def test_mci_configuration_and_layout(monkeypatch):
    """Each MCi entrypoint hands FastVit timm's configuration (LayerNorm partials compared by name and eps) and
    features_only timm's first four stages; those under 300M parameters build timm's layout with the embedding
    width of timm's weights as classes (default_cfg: one first convolution where the stem has no 1x1 branch)."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(fastvit, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_fastvit, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in MCI_NAMES:
        getattr(fastvit, name)()
        getattr(timm_fastvit, name)()
    for name, ours_kwargs, timm_kwargs in zip(MCI_NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert comparable_config(without_default_head(name, ours_kwargs)) == comparable_config(expected), name
        assert timm_kwargs["feature_cfg"] == dict(flatten_sequential=True, out_indices=(0, 1, 2, 3))
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(fastvit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(timm_fastvit, "trunc_normal_", lambda tensor, std=0.02: tensor)
    monkeypatch.setattr(torch.nn.init, "constant_", lambda tensor, value: tensor)
    for layer in (torch.nn.Linear, torch.nn.Conv2d, torch.nn.LayerNorm, torch.nn.modules.batchnorm._NormBase):
        monkeypatch.setattr(layer, "reset_parameters", lambda self: None)
    for name in MCI_NAMES[:-1]:
        num_classes = timm.models.get_pretrained_cfg(name).num_classes
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=num_classes)
        check_layout(models.create_model(name, num_classes=num_classes), reference, PLACEHOLDERS, PRINTED)


def test_mci_seeded_init_outputs_gradients_and_features_match_timm():
    """A small five-stage MCi model: timm's seeded weights; float32 logits of a batch of 2 at an odd size (maps of
    9x9 down to 1x1) and after ``reparameterize_model``; float64 train-mode gradients and statistics; features_only
    (timm's first four of five stages)."""
    check_seeded_init(lambda: timm_fastvit.FastVit(**small_config(timm_fastvit, "mci")),
                      lambda: fastvit.FastVit(**small_config(fastvit, "mci")), 3,
                      lambda reference: {f"{n}.weight" for n, m in reference.named_modules()
                                         if isinstance(m, torch.nn.Linear) or ".mlp." in n + "."
                                         and isinstance(m, torch.nn.Conv2d)})
    reference, ours = small_pair("mci", seed=16)
    assert ours.default_cfg["first_conv"] == "stem.0.conv_kxk.0.conv"
    x = image_batch(2, *SIZE, seed=16)
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 7) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)
    fused_out, fused_ref = both_outputs(timm_reparameterize_model(reference), fastvit.reparameterize_model(ours), x)
    assert_close(fused_out, fused_ref, TOL)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=17).astype(np.float64))
    torch.manual_seed(18)
    reference = timm_fastvit._create_fastvit("fastvit_mci3", features_only=True, **small_config(timm_fastvit, "mci"))
    randomize(reference, 18).eval()
    ours = fastvit._create_fastvit("fastvit_mci3", False, True, features_only=True, **small_config(fastvit, "mci"))
    ours.load_state_dict(numpy_state(reference))
    check_feature_maps(reference, ours, x, 4, TOL)
