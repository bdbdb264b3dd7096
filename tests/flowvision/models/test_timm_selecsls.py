"""timm parity of SelecSLS (selecsls42b, selecsls60, selecsls60b, and the untrained selecsls42 and selecsls84): every
variant's configuration and layout, seeded initialisation, eval outputs (float32) of small models with both heads
(first and later blocks of three levels, their long-range skips, the head convolutions), float64 train-mode outputs,
gradients and BatchNorm statistics, all with timm's weights loaded; dropout, and the timm API (pre-logits, pooling,
reset_classifier, in_chans, bad arguments, features_only, list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import selecsls as timm_selecsls
from timm.models._features import FeatureListNet

import engine
import flowvision.models as models
from flowvision.models.timm_families import selecsls
from model_parity import (both_outputs, check_dropout_only_in_training, check_feature_maps, check_intermediates,
                          check_layout, check_seeded_init, check_structure, check_train_step, image_batch, numpy_state,
                          pre_logits, randomize_norms, skip_random_init, to_numpy)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["selecsls42b", "selecsls60", "selecsls60b"]
# timm's variants without published weights, registered too (the plain-head SelecSLS-42 and SelecSLS-84)
UNTRAINED = ["selecsls42", "selecsls84"]
TOL = 1e-4
PRINTED = ("SelectSeq", "Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Dropout", "Linear")
SIZE = (37, 43)


def small_cfg(block, b_head=True):
    """timm's configuration of a small SelecSLS with ``block``: three levels (of 2, 2 and 3 blocks) after the
    stem, the head of a ``b`` variant (back to fewer channels) or of a plain one, and its six feature taps."""
    features = [(32, 0, 8, 8, True, 2), (8, 8, 8, 12, False, 1), (12, 0, 10, 10, True, 2), (10, 10, 10, 16, False, 1),
                (16, 0, 12, 12, True, 2), (12, 12, 12, 12, False, 1), (12, 12, 12, 20, False, 1)]
    head = [(20, 24, 3, 2), (24, 28, 3, 1), (28, 32, 3, 2), (32, 24 if b_head else 36, 1, 1)]
    feature_info = [dict(num_chs=32, reduction=2, module="stem.2"), dict(num_chs=12, reduction=4, module="features.1"),
                    dict(num_chs=16, reduction=8, module="features.3"),
                    dict(num_chs=20, reduction=16, module="features.6"),
                    dict(num_chs=28, reduction=32, module="head.1"),
                    dict(num_chs=head[-1][1], reduction=64, module="head.3")]
    return dict(block=block, features=features, head=head, num_features=head[-1][1], feature_info=feature_info)


def small_pair(b_head=True, seed=0, **kwargs):
    """(timm's, ours) small models, timm's seeded weights with random norms loaded in ours, in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_norms(timm_selecsls.SelecSls(small_cfg(timm_selecsls.SelecSlsBlock, b_head), **kwargs),
                                seed).eval()
    ours = selecsls.SelecSls(small_cfg(selecsls.SelecSlsBlock, b_head), **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint (the untrained variants' too) hands its class timm's configuration (its own block class) and
    builds timm's layout (1000 classes on both sides): state_dict keys, order, shapes, dtypes, module tree and class
    names, layer printouts, feature_info, num_features, head_hidden_size and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(selecsls, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_selecsls, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES + UNTRAINED:
        getattr(selecsls, name)()
        getattr(timm_selecsls, name)(pretrained=False)
    for name, ours_kwargs, timm_kwargs in zip(NAMES + UNTRAINED, ours_calls, timm_calls):
        ours_cfg = ours_kwargs.pop("cfg")
        timm_cfg = timm_kwargs.pop("model_cfg")
        assert ours_cfg.pop("block") is selecsls.SelecSlsBlock and timm_cfg.pop("block") is timm_selecsls.SelecSlsBlock
        assert ours_cfg == timm_cfg, name
        assert timm_kwargs.pop("feature_cfg") == dict(out_indices=(0, 1, 2, 3, 4), flatten_sequential=True), name
        assert ours_kwargs == timm_kwargs, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    # timm's random draws on the meta device cost more than building its models: skipped as ours are
    for init_name in ("kaiming_normal_", "kaiming_uniform_", "uniform_"):
        monkeypatch.setattr(torch.nn.init, init_name, lambda tensor, *args, **kwargs: tensor)
    for name in NAMES + UNTRAINED:
        with torch.device("meta"):
            reference = timm.create_model(name, num_classes=1000)
        ours = models.create_model(name, num_classes=1000)
        check_layout(ours, reference, (), PRINTED, types=True)


@pytest.mark.parametrize("b_head", [True, False])
def test_seeded_init_and_eval_outputs_match_timm(b_head):
    """The same seed gives timm's initial weights bit for bit (He-normal convolutions, PyTorch's default
    classifier) and leaves both random streams in step; with random norms loaded, float32 logits of a batch of 2
    at an odd size are timm's."""
    reference, ours = check_seeded_init(
        lambda: timm_selecsls.SelecSls(small_cfg(timm_selecsls.SelecSlsBlock, b_head), num_classes=10),
        lambda: selecsls.SelecSls(small_cfg(selecsls.SelecSlsBlock, b_head), num_classes=10), 3, lambda model: set())
    check_structure(ours, reference)
    randomize_norms(reference, 1).eval()
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours.eval(), image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient and the updated BatchNorm running
    statistics equal timm's."""
    reference, ours = small_pair(seed=4, num_classes=7)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_dropout_only_in_training():
    """The head's dropout: nothing dropped in eval mode (timm's outputs, no random draw), timm's masks after the
    same seed in training."""
    reference, ours = small_pair(seed=6, drop_rate=0.5)
    assert ours.head_drop.p == reference.head_drop.p == 0.5
    check_dropout_only_in_training(reference, ours, image_batch(2, 19, 17, seed=7))


def test_head_api_in_chans_and_bad_arguments():
    """On a one-channel model (timm's outputs): pre-logits features, ``num_classes=0``, reset_classifier to another
    size and pooling (wider features), keeping the pooling, and to no pooling, as timm's; a block stride other
    than 1 or 2 is refused, as timm refuses it."""
    reference, ours = small_pair(False, seed=9, in_chans=1)
    x = image_batch(2, 19, 17, seed=10, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 36)
    assert_close(pre, pre_ref, TOL)
    headless = selecsls.SelecSls(small_cfg(selecsls.SelecSlsBlock, False), in_chans=1, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("fc.")})
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    assert_close(to_numpy(headless.eval()(engine.from_numpy(x))), pre_ref, TOL)
    for num_classes, global_pool in ((5, "catavgmax"), (3, None), (0, "")):
        reference.reset_classifier(num_classes, global_pool)
        ours.reset_classifier(num_classes, global_pool)
        check_structure(ours, reference)
        assert ours.num_classes == num_classes and ours.head_hidden_size == reference.head_hidden_size
        assert not ours.get_classifier().training
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ref.shape
        assert_close(out, ref, TOL)
    assert ours.head_hidden_size == 36 and out.shape == (2, 36, 1, 1)
    with pytest.raises(ValueError, match="stride"):
        selecsls.SelecSlsBlock(8, 0, 8, 8, True, 3)


@pytest.mark.parametrize("out_indices", [None, (1, 4)])
def test_features_only_matches_timm(monkeypatch, out_indices):
    """features_only through our entrypoint's builder (its configuration made small) against timm's flattened
    FeatureListNet as timm's builder makes it: the stem's, each level's and the head's taps (a block's features,
    not its skip), timm's feature_info, module names (``features_3``) and state dict, and its feature maps."""
    monkeypatch.setattr(selecsls, "_selecsls_cfg", lambda variant: small_cfg(selecsls.SelecSlsBlock))
    torch.manual_seed(13)
    model = randomize_norms(timm_selecsls.SelecSls(small_cfg(timm_selecsls.SelecSlsBlock)), 13)
    reference = FeatureListNet(model, out_indices=out_indices or (0, 1, 2, 3, 4), flatten_sequential=True).eval()
    kwargs = {} if out_indices is None else {"out_indices": out_indices}
    ours = models.create_model("selecsls42b", features_only=True, **kwargs)
    assert type(ours) is selecsls.SelecSlsFeatures
    assert [n for n, _ in ours.named_children()] == [n for n, _ in reference.named_children()]
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    check_feature_maps(reference, ours, image_batch(2, *SIZE, seed=14), 5 if out_indices is None else 2, TOL)


@pytest.mark.parametrize("prune_to", [5, 2, 0])
def test_forward_intermediates_and_pruning_like_timm(prune_to):
    """forward_intermediates (the stem, each level's last block, the head's second and last convolutions; all, the
    last two, stop_early) and prune_intermediate_layers (the blocks and head convolutions after the last tap taken
    dropped, the classifier and pooling too) as timm's."""
    reference, ours = small_pair(seed=16)
    x = image_batch(2, 19, 17, seed=17)
    final, intermediates = check_intermediates(reference, ours, x, TOL)
    assert len(intermediates) == 6 and np.array_equal(final, intermediates[-1])
    check_intermediates(reference, ours, x, TOL, indices=2)
    check_intermediates(reference, ours, x, TOL, indices=[1, prune_to], stop_early=True, intermediates_only=True)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([prune_to]) == reference.prune_intermediate_layers([prune_to]) == [prune_to]
    check_structure(ours, reference)
    assert ours.num_features == reference.num_features and ours.head_hidden_size == reference.head_hidden_size
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == ref.shape and out.shape[1] == ours.feature_info[prune_to]["num_chs"]
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists exactly timm's ``selecsls`` module under their timm names, in timm's order: the variants
    with 1k weights and the untrained selecsls42 and selecsls84, registered too."""
    names = models.list_models(module="selecsls")
    assert names == timm.list_models(module="selecsls")
    assert set(names) - set(UNTRAINED) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("selecsls*")}
