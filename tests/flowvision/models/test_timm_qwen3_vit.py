"""timm parity of Qwen3-VL's vision encoder (timm's ``qwen3_vit``: qwen3_vit_88m/306m/416m, their ``_merge`` and
``_enc`` forms): every variant's configuration and layout (full size for the 88M ones, one block of full width for the
larger), seeded initialisation; eval outputs (float32) of small classifiers, projector classifiers and encoders at
odd patch grids (the learnt position grid resampled, half-layout RoPE), float64 train-mode outputs and every gradient,
with timm's weights loaded; dropout and stochastic depth; and the timm API (pre-logits, reset_classifier, the
encoder's poolings, features_only, forward_intermediates, prune_intermediate_layers, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import qwen3_vit as timm_qwen

import engine
import flowvision.models as models
from flowvision.models._features import FeatureGetterNet
from flowvision.models.timm_families import qwen3_vit
from model_parity import (both_outputs, capture_builder, check_drop_rates, check_dropout_only_in_training,
                          check_feature_maps, check_intermediates, check_layout, check_seeded_init,
                          check_train_step, image_batch, linear_weights, numpy_state, pre_logits,
                          randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["qwen3_vit_88m", "qwen3_vit_88m_enc", "qwen3_vit_88m_merge", "qwen3_vit_306m", "qwen3_vit_306m_enc",
         "qwen3_vit_306m_merge", "qwen3_vit_416m", "qwen3_vit_416m_enc", "qwen3_vit_416m_merge"]
TOL = 1e-4
# timm's query / key norm slots, identities here, that ours leaves out
PLACEHOLDERS = ("q_norm", "k_norm")
PRINTED = ("Conv2d", "Linear", "LayerNorm", "Dropout", "GELU")
# Small models: 4-pixel patches, 2 heads of 16 channels, a 4 x 4 learnt position grid; the projector maps to 24
# channels. 36 x 28 pixels make a 9 x 7 patch grid, 32 x 24 an 8 x 6 one (the projector takes even grids).
SMALL = dict(img_size=32, patch_size=4, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0, pos_embed_grid_size=4)
MERGE = dict(encoder_pool="merge", out_features=24)
ODD, EVEN = (36, 28), (32, 24)


def check_same_tree(ours, reference):
    """Our state_dict has timm's keys in order, shapes and dtypes, and our module tree is timm's but for its
    query / key norm slots."""
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in reference.state_dict().items()}
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, m in reference.named_modules()
                                                    if not n.endswith(PLACEHOLDERS)]


def small_pair(cls="Qwen3VitClassifier", seed=0, **kwargs):
    """(timm's, ours) small models of the class ``cls`` with random weights (timm's, loaded in ours through
    numpy), in eval mode."""
    config = dict(SMALL, **kwargs)
    torch.manual_seed(seed)
    reference = randomize_parameters(getattr(timm_qwen, cls)(**config), seed, tokens=("pos_embed",)).eval()
    ours = getattr(qwen3_vit, cls)(**config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration (the projector's width from the default weights) and
    builds timm's layout: state_dict keys, order, shapes, dtypes, module tree, layer printouts, feature_info,
    num_features, head_hidden_size and default_cfg, with one block of full width."""
    ours_calls = capture_builder(monkeypatch, qwen3_vit, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_qwen, "build_model_with_cfg")
    for name in NAMES:
        getattr(qwen3_vit, name)(num_classes=0)
        getattr(timm_qwen, name)(num_classes=0)
    for name, (ours_cls, ours_kwargs), (timm_cls, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls.__name__ == timm_cls.__name__, name
        expected = {k: v for k, v in timm_kwargs.items()
                    if k not in ("feature_cfg", "pretrained_filter_fn", "pretrained_cfg", "kwargs_filter")}
        if name.endswith("_enc"):
            expected.pop("num_classes")
        assert ours_kwargs == expected | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_qwen, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in ("qwen3_vit_88m", "qwen3_vit_306m_enc", "qwen3_vit_416m_merge"):
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=0, depth=1)
        check_layout(models.create_model(name, num_classes=0, depth=1), reference, PLACEHOLDERS, PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps, the patch convolution's
    default draws and the rest bit for bit) and leaves both random streams in step; the projector classifier."""
    config = dict(SMALL, **MERGE, num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_qwen.Qwen3VitClassifier(**config),
                                        lambda: qwen3_vit.Qwen3VitClassifier(**config), 3,
                                        lambda m: linear_weights(m) | {"encoder.pos_embed"})
    check_same_tree(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("cls, kwargs, size, shape", [
    ("Qwen3VitClassifier", dict(num_classes=5), ODD, (2, 5)),
    ("Qwen3VitClassifier", dict(MERGE, num_classes=5), EVEN, (2, 5)),
    ("Qwen3VitEncoder", dict(out_features=24), EVEN, (2, 12, 24)),
    ("Qwen3VitEncoder", dict(global_pool="avg"), ODD, (2, 32)),
])
def test_eval_outputs_match_timm(cls, kwargs, size, shape):
    """float32 outputs of a batch of 2 at odd patch grids (the position grid resampled), timm's weights loaded:
    classifiers on patches or projector tokens, the encoder's projector tokens and averaged patches."""
    reference, ours = small_pair(cls, seed=1, **kwargs)
    out, ref = both_outputs(reference, ours, image_batch(2, *size, seed=2))
    assert out.shape == shape and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_match_timm():
    """float64, train mode, the projector classifier: outputs, input gradient and every parameter's gradient equal
    timm's."""
    reference, ours = small_pair(seed=4, num_classes=7, **MERGE)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *EVEN, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth, attention, projection and head dropout draw timm's masks after the same seed in training,
    and leave eval outputs alone."""
    reference, ours = small_pair(seed=6, num_classes=5, drop_rate=0.3, proj_drop_rate=0.2, attn_drop_rate=0.2,
                                 drop_path_rate=0.5)
    assert check_drop_rates(reference, ours) == pytest.approx([0.5, 0.5])
    check_dropout_only_in_training(reference, ours, image_batch(2, *ODD, seed=7))


def test_head_api_and_bad_arguments():
    """Pre-logits features, ``num_classes=0``, reset_classifier to new classes and to every token (''), the
    encoder's raw grid and its refusal to classify, as timm's; unknown poolings are refused."""
    reference, ours = small_pair(seed=9, num_classes=5, in_chans=1)
    x = image_batch(2, *ODD, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 32)
    assert_close(pre, pre_ref, TOL)
    headless = qwen3_vit.Qwen3VitClassifier(**SMALL, in_chans=1, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(3, "")
    ours.reset_classifier(3, "")
    ours.head.load_state_dict(numpy_state(reference.head))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 63, 3) and not ours.head.training and ours.num_classes == 3
    assert_close(out, ref, TOL)
    reference, ours = small_pair("Qwen3VitEncoder", seed=11, global_pool="")
    out, ref = both_outputs(reference, ours, image_batch(2, *ODD, seed=11))
    assert out.shape == (2, 9, 7, 32) and ours.head_hidden_size == ours.num_features == 32
    assert_close(out, ref, TOL)
    with pytest.raises(NotImplementedError):
        ours.forward_head(engine.zeros(1, 2, 2, 32))
    with pytest.raises(ValueError, match="global_pool"):
        qwen3_vit.Qwen3VitClassifier(**SMALL, global_pool="max")
    merging = qwen3_vit.Qwen3VitEncoder(**SMALL, out_features=24)
    with pytest.raises(ValueError, match="merge_size"):
        merging(engine.from_numpy(image_batch(1, *ODD)))


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry (timm's last three blocks, or out_indices), feature_info, state dict and
    maps; forward_intermediates (NCHW and NLC, stopping early, as a dict, with the projector on the final tokens);
    prune_intermediate_layers drops the later blocks, the projector and the head as timm's does."""
    x = image_batch(2, *EVEN, seed=15)
    for name, out_indices, count in (("qwen3_vit_88m", None, 3), ("qwen3_vit_88m_enc", (0,), 1)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = _features_pair(name, 14, **kwargs)
        assert type(ours) is FeatureGetterNet
        check_same_tree(ours, reference)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16, num_classes=5, depth=3, **MERGE)
    for kwargs in (dict(indices=2), dict(indices=[0, 1], stop_early=True, output_fmt="NLC")):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with torch.no_grad():
        ref = reference.forward_intermediates(torch.from_numpy(x), indices=1, output_dict=True)
    with engine.no_grad():
        out = ours.forward_intermediates(engine.from_numpy(x), indices=1, output_dict=True)
    assert sorted(out) == sorted(ref) == ["image_features", "image_intermediates"]
    assert_close(out["image_features"].numpy(), ref["image_features"].numpy(), TOL)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_same_tree(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 32
    assert ours.feature_info == reference.feature_info
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 32)
    assert_close(out, ref, TOL)


def _features_pair(name, seed, **kwargs):
    """timm's and our small ``features_only`` models ``name`` with the same random weights, in eval mode."""
    config = dict(SMALL, depth=3, out_features=24, **kwargs)
    torch.manual_seed(seed)
    reference = timm.create_model(name, features_only=True, **config)
    randomize_parameters(reference, seed, tokens=("pos_embed",)).eval()
    ours = models.create_model(name, features_only=True, **config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_list_models():
    """The registry lists every variant under its timm name and module, each with timm weights."""
    names = models.list_models(module="qwen3_vit")
    assert names == timm.list_models(module="qwen3_vit") == NAMES
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("qwen3_vit*")}
