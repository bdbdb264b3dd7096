"""timm parity of HRNet (hrnet_w18_small ... hrnet_w64, hrnet_w18_ssld, hrnet_w48_ssld): every variant's
configuration, the layout of hrnet_w18_small and of its feature model, and, on a small configuration with every block
and layer kind and timm's weights loaded: seeded initialisation, float32 eval outputs, the classification head and its
API (pre-logits, dropout, reset_classifier), features_only in both feature locations, float64 train-mode outputs,
gradients and BatchNorm statistics; in_chans, too-small inputs and list_models.

timm's classification head is fixed (incre bottlenecks 32 to 256 wide, a 2048-channel last convolution: some 9.5M
weights whatever the trunk), so ours is built without random init and given timm's weights; the seeded-init test
takes the 'incre' head and the float64 train step the feature model (trunk and incre modules), as the engine's
He-normal draws and the float64 gradients of the full head would take seconds."""
import numpy as np
import pytest
import timm
import torch
from timm.models import hrnet as timm_hrnet

import engine
import flowvision.models as models
from flowvision.models._helpers import build_model
from flowvision.models.timm_families import hrnet
from model_parity import (both_outputs, check_feature_maps, check_intermediates, check_layout, check_train_step,
                          image_batch, numpy_state, randomize_norms, skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["hrnet_w18", "hrnet_w18_small", "hrnet_w18_small_v2", "hrnet_w18_ssld", "hrnet_w30", "hrnet_w32",
         "hrnet_w40", "hrnet_w44", "hrnet_w48", "hrnet_w48_ssld", "hrnet_w64"]
TOL = 1e-5
PLACEHOLDERS = ("drop_block", "aa")  # timm's ResNet blocks' no-op DropBlock and anti-aliasing
PRINTED = ("Conv2d", "BatchNorm2d", "ReLU", "Upsample", "Linear", "Dropout", "Flatten", "AdaptiveAvgPool2d")


def _stage(num_modules, block_type, num_blocks, num_channels):
    """A stage configuration in timm's form."""
    return dict(num_modules=num_modules, num_branches=len(num_blocks), block_type=block_type, num_blocks=num_blocks,
                num_channels=num_channels, fuse_method="SUM")


# Every block and layer kind: bottlenecks in the first stage and in branches (two blocks in one), basic blocks, a
# two-module stage, transitions that narrow the first branch, widen the last (16 to 20) and open new branches, fuse
# steps of one to three halvings and doublings.
SMALL = dict(
    stem_width=8,
    stage1=_stage(1, "BOTTLENECK", (1,), (4,)),
    stage2=_stage(1, "BOTTLENECK", (2, 1), (2, 4)),
    stage3=_stage(2, "BASIC", (1, 1, 1), (8, 20, 12)),
    stage4=_stage(1, "BASIC", (1, 1, 1, 1), (8, 20, 12, 16)),
)
SIZE = (61, 29)  # branches at 16x8, 8x4, 4x2, 2x1 (HRNet's fusion needs a 1/4 map divisible by 8)


def check_tree(ours, reference):
    """Same state_dict keys in order, shapes and dtypes, and the same module names but timm's placeholders."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for key, value in ref_sd.items():
        assert tuple(our_sd[key].shape) == tuple(value.shape) and our_sd[key].numpy().dtype == value.numpy().dtype
    expected = [n for n, m in reference.named_modules()
                if not (n.endswith(PLACEHOLDERS) and isinstance(m, torch.nn.Identity))]
    assert [n for n, _ in ours.named_modules()] == expected


def ours_like(reference, **kwargs):
    """Our small model (built without random init) with the timm ``reference``'s weights, in its mode."""
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = hrnet.HighResolutionNet(**SMALL, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return ours.train(reference.training)


class TorchFlat(torch.nn.Module):
    """A timm feature model's maps, flattened and concatenated into one tensor (for ``check_train_step``)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return torch.cat([f.flatten(1) for f in self.net(x)], 1)


class EngineFlat(engine.nn.Module):
    """Our feature model's maps, flattened and concatenated into one tensor (for ``check_train_step``)."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return engine.cat([f.flatten(1) for f in self.net(x)], 1)


def test_configurations_and_layout_equal_timm(monkeypatch):
    """Each entrypoint hands the class timm's configuration (stage dicts and the SSLD variants' head without conv
    biases); hrnet_w18_small (timm's on the meta device) has timm's state_dict keys, shapes and dtypes, module tree,
    layer printouts, feature_info, num_features and default_cfg, and its feature model timm's keys, shapes and
    feature_info."""
    ours_calls, timm_calls = [], []
    monkeypatch.setattr(hrnet, "build_model", lambda cls, variant, pretrained, progress, **kw: ours_calls.append(kw))
    monkeypatch.setattr(timm_hrnet, "build_model_with_cfg",
                        lambda cls, variant, pretrained, model_cfg, **kw: timm_calls.append(dict(model_cfg, **kw)))
    for name in NAMES:
        getattr(hrnet, name)()
        getattr(timm_hrnet, name)()
    for name, ours_kwargs, timm_kwargs in zip(NAMES, ours_calls, timm_calls):
        ignored = ("pretrained_strict", "kwargs_filter", "features_only")
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items() if k not in ignored}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(torch.Tensor, "normal_", lambda tensor, *args, **kwargs: tensor)  # values are not looked at
    with torch.device("meta"):
        reference = timm.create_model("hrnet_w18_small")
        features = timm.create_model("hrnet_w18_small", features_only=True)
    check_layout(hrnet.hrnet_w18_small(), reference, PLACEHOLDERS, PRINTED)
    ours = hrnet.hrnet_w18_small(features_only=True)
    assert type(ours) is hrnet.HighResolutionNetFeatures
    assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in features.state_dict().items()]
    for key in ("module", "num_chs", "reduction"):
        assert ours.feature_info.get(key) == features.feature_info.get(key)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights bit for bit (PyTorch's defaults, then He-normal convolutions in
    module order) and leaves both random streams in step; with the 'incre' head, whose forward returns the branch
    maps (the incre modules unused, as in timm), the outputs agree too."""
    torch.manual_seed(3)
    reference = timm_hrnet.HighResolutionNet(SMALL, head="incre").eval()
    engine.manual_seed(3)
    ours = hrnet.HighResolutionNet(**SMALL, head="incre").eval()
    check_tree(ours, reference)
    state = ours.state_dict()
    for key, value in numpy_state(reference).items():
        assert np.array_equal(state[key].numpy(), value), key
    assert np.array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    assert ours.num_features == reference.num_features
    # the stem tap is stem_width wide, where timm reports 64 (its second convolution's width) for any stem_width
    assert ours.feature_info[1:] == reference.feature_info[1:] and ours.feature_info[0]["num_chs"] == 8
    outs, refs = both_outputs(reference, ours, image_batch(2, *SIZE, seed=4))
    assert len(outs) == len(refs) == 4
    for out, ref in zip(outs, refs):
        assert_close(out, ref, TOL)


def test_classification_head_api_and_dropout_match_timm():
    """float32 eval logits of a batch of 2 at an odd size, timm's weights (random norms) loaded through numpy, and
    on the same features: timm's pre-logits (what ``num_classes=0`` gives); the head's dropout drawing timm's masks
    after the same seed; reset_classifier to new pooling and classes, then to none and no pooling (the
    2048-channel 1/32 map), as timm's."""
    torch.manual_seed(0)
    reference = randomize_norms(timm_hrnet.HighResolutionNet(SMALL, num_classes=10, head_conv_bias=False), 0).eval()
    ours = ours_like(reference, num_classes=10, head_conv_bias=False, drop_rate=0.5)
    x = image_batch(2, *SIZE, seed=1)
    with torch.no_grad():
        feature_map = reference.forward_features(torch.from_numpy(x))
        ref = reference.forward_head(feature_map).numpy()
        pre_ref = reference.forward_head(feature_map, pre_logits=True).numpy()
    with engine.no_grad():
        features = ours.forward_features(engine.from_numpy(x))
        out = ours.forward_head(features).numpy()
        pre = ours.forward_head(features, pre_logits=True).numpy()
    assert out.shape == (2, 10) and np.abs(ref).max() > 1e-2
    assert_close(out, ref, TOL)
    assert pre.shape == (2, 2048)
    assert_close(pre, pre_ref, TOL)
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        headless = hrnet.HighResolutionNet(**SMALL, num_classes=0)
    assert isinstance(headless.get_classifier(), engine.nn.Identity) and headless.head_hidden_size == 2048
    with engine.no_grad():
        assert_close(headless.eval().forward_head(features).numpy(), pre_ref, TOL)

    assert ours.head_drop.p == 0.5
    reference.head_drop.p = 0.5
    ours.train()
    reference.train()
    torch.manual_seed(7)
    engine.manual_seed(7)
    with torch.no_grad():
        dropped_ref = reference.forward_head(feature_map).numpy()
    with engine.no_grad():
        dropped = ours.forward_head(features).numpy()
    assert_close(dropped, dropped_ref, TOL)
    assert not np.allclose(dropped, out, atol=1e-3)
    ours.eval()
    reference.eval()

    reference.reset_classifier(5, "catavgmax")
    ours.reset_classifier(5, "catavgmax")
    assert ours.head_hidden_size == reference.head_hidden_size == 4096 and not ours.classifier.training
    check_tree(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    with torch.no_grad():
        ref = reference.forward_head(feature_map).numpy()
    with engine.no_grad():
        out = ours.forward_head(features).numpy()
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    ours.reset_classifier(0, "")
    with engine.no_grad():
        assert np.array_equal(ours.forward_head(features).numpy(), features.numpy())
    assert tuple(features.shape) == (2, 2048, 2, 1)


@pytest.mark.parametrize("location, out_indices", [("incre", None), ("", (1, 3))])
def test_features_only_matches_timm(location, out_indices):
    """features_only through the entrypoints' builder: timm's HighResolutionNetFeatures taps (the stem's first
    convolution and the four branches, through the incre modules by default, raw with ``feature_location=''``), its
    feature_info and its maps, timm's feature model's weights loaded (the keys are the same); then, in float64 and
    train mode, the maps, the input gradient, every parameter's gradient and the BatchNorm statistics (the whole
    trunk: every block and fuse layer kind; the incre modules)."""
    kwargs = dict(feature_location=location) if location != "incre" else {}
    if out_indices is not None:
        kwargs["out_indices"] = out_indices
    config = dict(SMALL, stem_width=64)  # where timm's stem tap width (always 64) is right
    torch.manual_seed(5)
    reference = timm_hrnet._create_hrnet("hrnet_w18_small", features_only=True, **config, **kwargs)
    randomize_norms(reference, 5).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = hrnet._create_hrnet("hrnet_w18_small", False, True, config, dict(features_only=True, **kwargs))
    assert type(ours) is hrnet.HighResolutionNetFeatures
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(2, *SIZE, seed=6)
    maps = check_feature_maps(reference, ours, x, 5 if out_indices is None else 2, TOL)
    assert maps[-1].shape[1] == (1024 if location == "incre" else 12)
    if location == "incre":
        check_train_step(TorchFlat(reference).double().train(), EngineFlat(ours).double().train(),
                         x.astype(np.float64))


def test_forward_intermediates_and_pruning_match_timm():
    """forward_intermediates gives timm's taps (the stem's first map, the four branches through the incre modules)
    for all, the last n and listed indices, alone and stopping early, with timm's final output (the classification
    head's map when it all ran, else the branch list, or the stem's map); prune_intermediate_layers keeps the head
    (``prune_head=False``) for the last tap, drops the later incre modules and the aggregation head and classifier
    for an earlier branch, and the whole trunk for the stem's tap alone, its width then the stem's, as timm's; a
    channels-last output format is refused. The stem is 64 wide, where timm's stem tap width (always 64) is right."""
    config = dict(SMALL, stem_width=64)
    torch.manual_seed(10)
    reference = randomize_norms(timm_hrnet.HighResolutionNet(config, num_classes=10), 10).eval()
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        ours = hrnet.HighResolutionNet(**config, num_classes=10)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    x = image_batch(2, *SIZE, seed=10)
    for kwargs in (dict(), dict(indices=2), dict(indices=[0, 2], intermediates_only=True),
                   dict(indices=[1], stop_early=True, norm=True), dict(indices=[0], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    kept = [1, -1]
    assert ours.prune_intermediate_layers(kept, prune_head=False) == reference.prune_intermediate_layers(
        kept, prune_head=False) == [1, 4]
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 10)
    assert_close(out, ref, TOL)
    assert ours.prune_intermediate_layers([1, 2]) == reference.prune_intermediate_layers([1, 2]) == [1, 2]
    check_tree(ours, reference)
    assert len(ours.incre_modules) == 2 and ours.final_layer is None and ours.num_classes == 0
    check_intermediates(reference, ours, x, TOL, indices=[1, 2])
    branches, expected = both_outputs(reference, ours, x)
    assert len(branches) == len(expected) == 4
    for branch, ref in zip(branches, expected):
        assert_close(branch, ref, TOL)
    assert ours.prune_intermediate_layers([0]) == reference.prune_intermediate_layers([0]) == [0]
    check_tree(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == reference.num_features == 64
    check_intermediates(reference, ours, x, TOL, indices=[0])
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 64, 31, 15)
    assert_close(out, ref, TOL)


def test_in_chans_too_small_inputs_and_bad_arguments(tmp_path):
    """A 3-channel checkpoint loaded through ``checkpoint_path`` into a one-channel model has its first conv
    (``default_cfg['first_conv']``) summed over RGB: the grey image gives what the RGB model gives on it repeated
    (the head-less model: the first conv is all that changes). HRNet runs where the 1/4 map is a multiple of 8 (29
    to 32 pixels and so on, as timm's); other sizes, too small ones included, fail the fusion's sums. Bad
    configurations are refused."""
    engine.manual_seed(8)
    rgb = hrnet.HighResolutionNet(**SMALL, head="").eval()
    path = str(tmp_path / "rgb.npz")
    np.savez(path, **{k: v.numpy() for k, v in rgb.state_dict().items()})
    with pytest.MonkeyPatch.context() as patch:
        skip_random_init(patch)
        grey = build_model(hrnet.HighResolutionNet, "test", in_chans=1, checkpoint_path=path, head="", **SMALL)
    assert grey.default_cfg == {"first_conv": "conv1", "classifier": "classifier"}
    assert tuple(grey.conv1.weight.shape) == (8, 1, 3, 3)
    x = image_batch(2, *SIZE, seed=9, c=1)
    with engine.no_grad():
        outs = grey.eval()(engine.from_numpy(x))
        refs = rgb(engine.from_numpy(np.repeat(x, 3, axis=1)))
        for out, ref in zip(outs, refs):
            assert_close(out.numpy(), ref.numpy(), TOL)
        for size in (29, 32):
            assert tuple(rgb(engine.from_numpy(image_batch(1, size, size)))[-1].shape) == (1, 16, 1, 1)
        for size in (1, 16, 28, 33):
            with pytest.raises((RuntimeError, ValueError)):
                rgb(engine.from_numpy(image_batch(1, size, size)))
    with pytest.raises(ValueError, match="output stride"):
        hrnet.HighResolutionNet(**SMALL, output_stride=16)
    with pytest.raises(ValueError, match="num_branches"):
        hrnet.HighResolutionModule(2, hrnet.BasicBlock, (1,), (4, 8), (4, 8))
    with pytest.raises(ValueError, match="feature_location"):
        hrnet.HighResolutionNetFeatures(rgb, feature_location="final")
    with pytest.raises(ValueError, match="incre"):
        hrnet.HighResolutionNetFeatures(rgb)


def test_list_models():
    """The registry lists every variant under its timm name and module, as timm does, all with ImageNet weights."""
    assert models.list_models(module="hrnet") == timm.list_models(module="hrnet") == NAMES
    assert {n.split(".")[0] for n in timm.list_pretrained("hrnet*")} == set(NAMES)
