"""Multiscale Vision Transformers (mvit_v1_b, mvit_v2_s) against torchvision: initialisation from the same seed bit
for bit with the same structure, float64 outputs and gradients at a reduced clip size that pools every path and
resizes MViTv2's relative position tables, train mode (stochastic depth and dropout draw torch's masks from the
same seed), small configurations with every flag combination, the block configurations, the timm API and
pretrained loading from a local server."""
import numpy as np
import pytest
import torch
import torchvision.models.video.mvit as tv_mvit
from model_parity import assert_same_init, backward_both, numpy_state, ours_like
from op_check import assert_close
from weights_server import serving_checkpoint

import engine
import flowvision.models as models
from engine.nn import init
from flowvision.models import get_model_weights, list_pretrained
from flowvision.models.registry import document_entrypoints
from flowvision.models.video import mvit

# ``flowvision.models`` documents the entrypoints it imported; this module is not among them yet.
document_entrypoints(lambda name: get_model_weights(name) if name in list_pretrained() else None)

NAMES = ["mvit_v1_b", "mvit_v2_s"]
pytestmark = pytest.mark.usefixtures("one_thread")  # one BLAS thread each (see the fixture)

# A 14 x 10 patch grid of 2 frames: strided pooling meets odd sizes (7 x 5 -> 4 x 3 -> 2 x 2), so MViTv2's
# tables are resized and some query/key size ratios are not whole numbers.
SPATIAL, TEMPORAL = (56, 40), 4


def _clips(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def assert_gradients_match(theirs, ours, what="grad"):
    """Every parameter's gradient within 1e-8 of torchvision's. The keys' LayerNorm bias shifts every key by one
    vector, which moves each query's logits by a constant the softmax ignores: its gradient is zero, so on both
    sides it is only rounding noise, checked to be tiny."""
    for key, param in theirs.items():
        if key.endswith("attn.pool_k.norm_act.0.bias"):
            assert np.abs(ours[key].grad.numpy()).max() < 1e-12 and np.abs(param.grad.numpy()).max() < 1e-12, key
        else:
            assert_close(ours[key].grad.numpy(), param.grad.numpy(), 1e-8, what=f"{key} {what}")


def torchvision_mvit(monkeypatch, name, seed=0, **kwargs):
    """torchvision's builder, seeded, for clips of SPATIAL x TEMPORAL: its builders pass their own clip size to
    ``_mvit``, so the size is put in there."""
    build = tv_mvit._mvit

    def sized(**options):
        options.update(spatial_size=SPATIAL, temporal_size=TEMPORAL)
        return build(**options)

    monkeypatch.setattr(tv_mvit, "_mvit", sized)
    torch.manual_seed(seed)
    return getattr(tv_mvit, name)(**kwargs)


def _skip_random_init(patch):
    """Random initialisation replaced by zeros: a full-width model builds in a fraction of a second, for tests
    of shapes or that load weights into it."""
    zeros_ = init.zeros_
    for name in ("trunc_normal_", "uniform_", "kaiming_uniform_"):
        patch.setattr(init, name, lambda tensor, *args, **kwargs: zeros_(tensor))


@pytest.fixture
def table_sizes(monkeypatch):
    """(table rows, query size, key size) of every relative position lookup, recorded around
    ``_relative_embeddings``."""
    seen = []
    lookup = mvit._relative_embeddings

    def recording(table, q_size, k_size):
        seen.append((table.shape[0], q_size, k_size))
        return lookup(table, q_size, k_size)

    monkeypatch.setattr(mvit, "_relative_embeddings", recording)
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_same_seed_gives_torchvision_s_weights(name):
    torch.manual_seed(3)
    theirs = getattr(tv_mvit, name)()
    engine.manual_seed(3)
    ours = getattr(mvit, name)()
    assert_same_init(ours, theirs)
    assert sum(p.numel() for p in ours.parameters()) == get_model_weights(name).DEFAULT.meta["num_params"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_forward_backward_and_train_mode_match_torchvision(monkeypatch, table_sizes, name):
    """Batch 2 in float64, eval mode: logits, input and parameter gradients. Then train mode with stochastic
    depth up to 0.5 and attention dropout 0.1 (and the head's 0.5) from the same seed on both sides."""
    reference = torchvision_mvit(monkeypatch, name, attention_dropout=0.1, stochastic_depth_prob=0.5).double().eval()
    _skip_random_init(monkeypatch)
    ours = ours_like(name, reference, spatial_size=SPATIAL, temporal_size=TEMPORAL, attention_dropout=0.1,
                     stochastic_depth_prob=0.5).double()
    x = _clips(2, 3, TEMPORAL, *SPATIAL)
    assert_gradients_match(*backward_both(reference, ours, x))
    if name == "mvit_v2_s":
        assert any(rows != 2 * max(q, k) - 1 for rows, q, k in table_sizes)
        assert any(max(q, k) % min(q, k) for _, q, k in table_sizes)

    reference.train().zero_grad()
    ours.train().zero_grad()
    torch.manual_seed(5)
    engine.manual_seed(5)
    assert_gradients_match(*backward_both(reference, ours, _clips(2, 3, TEMPORAL, *SPATIAL, seed=1)), "grad (train)")


def _small_setting(config_class):
    """Three small blocks: key/value pooling, then a block that strides the queries and widens the channels,
    then one that pools keys and values without striding."""
    return [config_class(1, 8, 8, [3, 3, 3], [3, 3, 3], [1, 1, 1], [1, 2, 2]),
            config_class(2, 8, 16, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 2, 2]),
            config_class(2, 16, 16, [], [3, 3, 3], [], [1, 1, 1])]


@pytest.mark.parametrize("v2", [False, True])
@pytest.mark.parametrize("residual_with_cls_embed", [False, True])
def test_small_configurations_match_torchvision(v2, residual_with_cls_embed):
    """The MViT class on a small setting, for MViT (absolute positions) and MViTv2 (relative positions,
    residual pooling with or without the class token, widening in the attention): same seed, same weights;
    float64 outputs and gradients."""
    options = dict(spatial_size=(24, 20), temporal_size=6, residual_pool=v2, rel_pos_embed=v2,
                   residual_with_cls_embed=residual_with_cls_embed, proj_after_attn=v2, num_classes=5,
                   stochastic_depth_prob=0.2)
    torch.manual_seed(1)
    reference = tv_mvit.MViT(block_setting=_small_setting(tv_mvit.MSBlockConfig), **options).double().eval()
    engine.manual_seed(1)
    ours = mvit.MViT(block_setting=_small_setting(mvit.MSBlockConfig), **options).double().eval()
    assert repr(ours) == repr(reference)
    expected = numpy_state(reference)
    for key, value in ours.state_dict().items():
        assert np.array_equal(value.numpy(), expected[key]), key
    assert_gradients_match(*backward_both(reference, ours, _clips(2, 3, 6, 24, 20)))


@pytest.mark.parametrize("v2", [False, True])
def test_empty_batch(v2):
    """No clips in training mode: logits of shape (0, classes) and zero gradients (torchvision's reshapes
    cannot infer a size from no elements, so it has no answer to compare with)."""
    engine.manual_seed(0)
    model = mvit.MViT((24, 20), 6, _small_setting(mvit.MSBlockConfig), residual_pool=v2, residual_with_cls_embed=False,
                      rel_pos_embed=v2, proj_after_attn=v2, num_classes=5, stochastic_depth_prob=0.2).train()
    x = engine.zeros(0, 3, 6, 24, 20, requires_grad=True)
    out = model(x)
    out.sum().backward()
    assert tuple(out.shape) == (0, 5) and tuple(x.grad.shape) == (0, 3, 6, 24, 20)
    assert all(float(p.grad.abs().max()) == 0 for p in model.parameters())


@pytest.mark.parametrize("name", NAMES)
def test_block_settings_are_torchvision_s(monkeypatch, name):
    seen = {}
    monkeypatch.setattr(tv_mvit, "_mvit", lambda **options: seen.update(options))
    getattr(tv_mvit, name)()
    expected = [vars(cnf) for cnf in seen["block_setting"]]
    assert [vars(cnf) for cnf in mvit._block_setting(v2=name == "mvit_v2_s")] == expected


def test_relative_positions_match_torchvision():
    """The decomposed relative position term at uneven grids, with tables to resize, on random logits."""
    rng = np.random.default_rng(3)
    q_thw, k_thw = (3, 5, 4), (2, 3, 2)
    attn = rng.standard_normal((2, 3, 1 + 60, 1 + 12))
    q = rng.standard_normal((2, 3, 1 + 60, 4))
    tables = [rng.standard_normal((rows, 4)) for rows in (7, 5, 3)]
    expected = tv_mvit._add_rel_pos(torch.from_numpy(attn.copy()), torch.from_numpy(q), q_thw, k_thw,
                                    *map(torch.from_numpy, tables))
    got = mvit._add_decomposed_rel_pos(engine.from_numpy(attn), engine.from_numpy(q), q_thw, k_thw,
                                       *map(engine.from_numpy, tables))
    assert_close(got.numpy(), expected.numpy(), 1e-12)


@pytest.mark.slow
def test_timm_api(monkeypatch):
    engine.manual_seed(0)
    model = mvit.mvit_v2_s(num_classes=0, spatial_size=SPATIAL, temporal_size=TEMPORAL).eval()
    x = engine.from_numpy(_clips(2, 3, TEMPORAL, *SPATIAL).astype(np.float32))
    with engine.no_grad():
        features = model.forward_features(x)
        assert tuple(features.shape) == (2, 1 + 2 * 2 * 2, 768)
        pooled = model(x)
        assert np.array_equal(pooled.numpy(), features[:, 0].numpy())
        assert isinstance(model.get_classifier(), engine.nn.Identity)
        model.reset_classifier(7)
        assert tuple(model(x).shape) == (2, 7) and model.get_classifier() is model.head
        assert np.array_equal(model.forward_head(features, pre_logits=True).numpy(), pooled.numpy())
        assert float(model.head[1].bias.abs().max()) == 0 and 0.015 < float(model.head[1].weight.std()) < 0.025
        other = _clips(1, 3, 6, 48, 64).astype(np.float32)
        assert tuple(model(engine.from_numpy(other)).shape) == (1, 7)
        assert tuple(model(engine.from_numpy(other[:, :, 0])).shape) == (1, 7)
        with monkeypatch.context() as patch:
            _skip_random_init(patch)
            grey = models.create_model("mvit_v1_b", in_chans=1, num_classes=5, spatial_size=SPATIAL,
                                       temporal_size=TEMPORAL).eval()
        assert tuple(grey(x[:, :1]).shape) == (2, 5)
        with pytest.raises(ValueError, match="position embeddings are for a 2 x 14 x 10 patch grid, the clip "
                                             "gives 3 x 12 x 16"):
            grey(engine.from_numpy(other[:, :1]))
    assert grey.default_cfg == {"first_conv": "conv_proj", "classifier": "head.1"}
    assert models.list_models(module="mvit") == NAMES
    with pytest.raises(ValueError, match=r"weights are for clips of 16 frames of 224 x 224, not 16 of 56 x 40"):
        mvit.mvit_v1_b(weights="KINETICS400_V1", spatial_size=SPATIAL)


@pytest.mark.slow
def test_pretrained_from_a_local_server(monkeypatch, tmp_path):
    """``pretrained=True`` fetches the Kinetics-400 checkpoint (here a seeded torchvision model served locally),
    checks its hash and loads it."""
    torch.manual_seed(0)
    reference = tv_mvit.mvit_v2_s()
    _skip_random_init(monkeypatch)
    with serving_checkpoint(tmp_path, reference, "mvit_v2_s", "KINETICS400_V1", "mvit_v2_s-ae3be167.pth") as served:
        model = mvit.mvit_v2_s(pretrained=True, progress=False)
        assert len(served[0].requests) == 1
    expected = numpy_state(reference)
    for key, value in model.state_dict().items():
        assert np.array_equal(value.numpy(), expected[key]), key
