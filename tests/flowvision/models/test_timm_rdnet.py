"""timm parity of RDNet (rdnet_tiny/small/base/large): every variant's configuration and layout, seeded
initialisation, eval outputs (float32) of small models (plain and squeeze-and-excitation dense blocks, strided and
1x1 transitions, the patch and tiered overlapping stems, the pool-norm head and the norm-first plain head), float64
train-mode outputs and gradients, all with timm's weights loaded; stochastic depth and dropout, and the timm API
(pre-logits, pooling, reset_classifier, in_chans, features_only, forward_intermediates, bad arguments,
list_models)."""
import numpy as np
import pytest
import timm
import torch
from timm.models import rdnet as timm_rdnet

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import rdnet
from model_parity import (both_outputs, check_dropout_only_in_training, check_intermediates, check_layout,
                          check_seeded_init, check_structure, check_train_step, image_batch, numpy_state,
                          pre_logits, randomize_parameters, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["rdnet_base", "rdnet_large", "rdnet_small", "rdnet_tiny"]
TOL = 1e-4
PRINTED = ("Conv2d", "LayerNorm2d", "Linear", "GELU", "Hardsigmoid", "Dropout", "BatchNorm2d")

# Small models: four stages (a strided transition, a 1x1 one, a strided one), plain and squeeze-and-excitation
# blocks; the second has the tiered overlapping stem, BatchNorm and the norm-first head.
SMALL = {
    "patch": dict(num_init_features=16, growth_rates=(8, 16, 16, 24), num_blocks_list=(2, 1, 1, 1),
                  is_downsample_block=(None, True, False, True), block_type=("Block", "BlockESE", "blockese", "Block"),
                  patch_size=2),
    "overlap": dict(num_init_features=16, growth_rates=(8, 16), num_blocks_list=(1, 2),
                    is_downsample_block=(None, True), block_type=("BlockESE", "Block"), stem_type="overlap_tiered",
                    head_norm_first=True, norm_layer="batchnorm2d", norm_eps=1e-3),
}
SIZE = (23, 21)


def small_pair(kind="patch", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, random timm parameters (layer scales too) loaded in ours, in eval
    mode."""
    torch.manual_seed(seed)
    reference = timm_rdnet.RDNet(**SMALL[kind], **kwargs)
    randomize_parameters(reference, seed, scales=("gamma",), norms=True).eval()
    ours = rdnet.RDNet(**SMALL[kind], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree, layer printouts, feature_info (growth rates too), num_features and default_cfg."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(rdnet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_rdnet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, **kw: timm_calls.append(kw))
    for name in NAMES:
        getattr(rdnet, name)()
        getattr(timm_rdnet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        expected = {k: v for k, v in timm_kwargs.items() if k not in ("feature_cfg", "pretrained_filter_fn")}
        assert ours_kwargs == expected, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        check_layout(models.create_model(name), reference, (), PRINTED)


def test_seeded_init_equals_timm():
    """The same seed gives timm's He-normal convolutions, PyTorch's default linear weights and convolution biases,
    zero linear biases and unit layer scales, bit for bit, and leaves both random streams in step."""
    for kind in SMALL:
        check_seeded_init(lambda: timm_rdnet.RDNet(**SMALL[kind], num_classes=10),
                          lambda: rdnet.RDNet(**SMALL[kind], num_classes=10), 3, lambda m: set(), kind)


def test_eval_outputs_and_train_step_match_timm():
    """float32 logits of a batch of 2 at an odd size for both small models; then float64 train mode: outputs,
    input gradient, every parameter's gradient and the BatchNorm statistics."""
    for kind in SMALL:
        reference, ours = small_pair(kind, seed=1)
        out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
        assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-2
        assert_close(out, ref, TOL)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_and_dropout_only_in_training():
    """Stochastic depth (timm's per-block rates), each dense block's dropout and the head's draw timm's masks after
    the same seed in training, and leave eval outputs alone."""
    reference, ours = small_pair(seed=6, drop_rate=0.3, proj_drop_rate=0.2, drop_path_rate=0.5)
    rates = [b.drop_path_rate for b in ours.modules() if isinstance(b, rdnet.DenseBlock)]
    assert rates == [b.drop_path_rate for b in reference.modules() if isinstance(b, timm_rdnet.DenseBlock)]
    assert rates[0] == 0.0 and rates[-1] == pytest.approx(0.5)
    check_dropout_only_in_training(reference, ours, image_batch(2, *SIZE, seed=7))


def test_head_api_in_chans_and_bad_arguments():
    """Pre-logits features, reset_classifier to new pooling and size, to none with the head's norm dropped
    (``reset_other``), as timm's; a one-channel model; unknown stems, blocks and norms are refused."""
    reference, ours = small_pair(seed=9, in_chans=1, global_pool="max")
    x = image_batch(2, *SIZE, seed=10, c=1)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, TOL)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert_close(pre, pre_ref, TOL)
    for args in [(5, "avgmax"), (0, None, True)]:
        reference.reset_classifier(*args)
        ours.reset_classifier(*args)
        check_structure(ours, reference, types=False)
        ours.load_state_dict(numpy_state(reference))
        out, ref = both_outputs(reference, ours, x)
        assert out.shape == ref.shape and ours.head_hidden_size == reference.head_hidden_size
        assert_close(out, ref, TOL)
    assert isinstance(ours.get_classifier(), engine.nn.Identity) and ours.num_classes == 0
    for bad, match in [(dict(stem_type="conv"), "stem_type"), (dict(block_type=("Dense",) * 4), "block_type"),
                       (dict(norm_layer="groupnorm"), "norm_layer"), (dict(growth_rates=(8,)), "same length")]:
        with pytest.raises(ValueError, match=match):
            rdnet.RDNet(**SMALL["patch"] | bad)


def test_features_only_and_intermediates_match_timm():
    """features_only through the entrypoints' builder: timm's taps (each stage before a downsampling, and the
    last), feature_info, flattened module names (``dense_stages_2``), state dict and maps; forward_intermediates
    as timm's."""
    torch.manual_seed(14)
    reference = timm_rdnet._create_rdnet("rdnet_tiny", False, features_only=True, out_indices=(1, 2),
                                         **SMALL["patch"])
    randomize_parameters(reference, 14, scales=("gamma",)).eval()
    ours = rdnet._create_rdnet("rdnet_tiny", False, True, features_only=True, out_indices=(1, 2), **SMALL["patch"])
    assert type(ours) is FlatFeatureListNet
    check_structure(ours, reference, types=False)
    ours.load_state_dict(numpy_state(reference))
    assert ours.feature_info.module_name() == reference.feature_info.module_name() == ["dense_stages.2",
                                                                                       "dense_stages.3"]
    assert ours.feature_info.channels() == reference.feature_info.channels()
    assert ours.feature_info.reduction() == reference.feature_info.reduction()
    x = image_batch(2, *SIZE, seed=15)
    outs, refs = both_outputs(reference, ours.eval(), x)
    assert len(outs) == len(refs) == 2
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)
    reference, ours = small_pair("overlap", seed=16)
    check_intermediates(reference, ours, x, TOL, indices=(0, 1), norm=True)
    check_intermediates(reference, ours, x, TOL, indices=1, stop_early=True, intermediates_only=True)


def test_list_models():
    """The registry lists every variant under its timm name and module, all with 1k weights."""
    names = models.list_models(module="rdnet")
    assert names == timm.list_models(module="rdnet") == NAMES
    assert set(names) == {n.split(".")[0] for n in timm.list_pretrained("rdnet*")}
