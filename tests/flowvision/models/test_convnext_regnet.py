"""ConvNeXt and RegNet against torchvision: layouts of every variant, eval/train numerics of the smallest,
LayerNorm over channels-last maps, the weights API (SWAG tags included), features_only and nn.Graph."""
import os
from functools import partial

import numpy as np
import pytest
import torch
import torchvision
import torchvision.models as tv
import torchvision.models.regnet as tv_regnet
from PIL import Image

import engine
import engine.nn.functional as F
import flowvision.models as models
from engine.nn import init
from flowvision.models import weights as W
from flowvision.models.convnext import CNBlock, CNBlockConfig, LayerNorm2d
from flowvision.models.regnet import BlockParams
from model_parity import (InferenceGraph, backward_both, eval_outputs, image_batch, numpy_state, to_numpy, torch_model,
                          torchvision_names)
from op_check import assert_close, check_op

pytestmark = pytest.mark.slow  # convnext and regnet parity and features: about 4 s of the quick subset

CONVNEXTS = ["convnext_tiny", "convnext_small", "convnext_base", "convnext_large"]
REGNETS = [f"regnet_y_{s}" for s in ("400mf", "800mf", "1_6gf", "3_2gf", "8gf", "16gf", "32gf", "128gf")] + \
          [f"regnet_x_{s}" for s in ("400mf", "800mf", "1_6gf", "3_2gf", "8gf", "16gf", "32gf")]
# (depth, w_0, w_a, w_m, group_width, se_ratio) of each RegNet, from the paper's tables
REGNET_PARAMS = {
    "regnet_y_400mf": (16, 48, 27.89, 2.09, 8, 0.25), "regnet_y_800mf": (14, 56, 38.84, 2.4, 16, 0.25),
    "regnet_y_1_6gf": (27, 48, 20.71, 2.65, 24, 0.25), "regnet_y_3_2gf": (21, 80, 42.63, 2.66, 24, 0.25),
    "regnet_y_8gf": (17, 192, 76.82, 2.19, 56, 0.25), "regnet_y_16gf": (18, 200, 106.23, 2.48, 112, 0.25),
    "regnet_y_32gf": (20, 232, 115.89, 2.53, 232, 0.25), "regnet_y_128gf": (27, 456, 160.83, 2.52, 264, 0.25),
    "regnet_x_400mf": (22, 24, 24.48, 2.54, 16, None), "regnet_x_800mf": (16, 56, 35.73, 2.28, 16, None),
    "regnet_x_1_6gf": (18, 80, 34.01, 2.25, 24, None), "regnet_x_3_2gf": (25, 88, 26.31, 2.25, 48, None),
    "regnet_x_8gf": (23, 80, 49.56, 2.88, 120, None), "regnet_x_16gf": (22, 216, 55.59, 2.1, 128, None),
    "regnet_x_32gf": (23, 320, 69.86, 2.0, 168, None),
}
TOL = 1e-4
IMAGE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images", "chelsea.png")


def _skip_random_init(patch):
    """Random initialisation skipped: parameters stay untouched np.empty storage, so even regnet_y_128gf
    (645M parameters) builds in a fraction of a second without committing its 2.6 GB."""
    for name in ("uniform_", "normal_", "trunc_normal_"):
        patch.setattr(init, name, lambda tensor, *args, **kwargs: tensor)


@pytest.fixture
def no_init(monkeypatch):
    _skip_random_init(monkeypatch)


@pytest.fixture
def tv_on_meta(monkeypatch):
    """Builds torchvision models on the meta device (no storage); RegNet's width rule still runs on the CPU."""
    generate = tv_regnet.BlockParams.from_init_params.__func__

    def on_cpu(cls, *args, **kwargs):
        with torch.device("cpu"):
            return generate(cls, *args, **kwargs)

    monkeypatch.setattr(tv_regnet.BlockParams, "from_init_params", classmethod(on_cpu))

    def build(name, **kwargs):
        with torch.device("meta"):
            return getattr(tv, name)(**kwargs)

    return build


def randomize_convnext(model, seed):
    """Random LayerNorm affines and layer scales (the defaults, 1 / 0 / 1e-6, make every block an identity)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            if isinstance(m, tv.convnext.CNBlock):
                m.layer_scale.copy_(torch.rand(m.layer_scale.shape, generator=g) * 0.5 + 0.25)
    return model


def _reference(name, seed, **kwargs):
    """The seeded torchvision model with random norms (and layer scales); ConvNeXt's truncated-normal init is
    drawn as a plain normal, which is much faster and as random."""
    if not name.startswith("convnext"):
        return torch_model(name, seed=seed, **kwargs)
    normal_ = torch.nn.init.normal_
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.nn.init, "trunc_normal_", lambda t, mean=0.0, std=1.0, **kw: normal_(t, mean, std))
        reference = torch_model(name, seed=seed, **kwargs)
    return randomize_convnext(reference, seed)


def _ours(name, reference, **kwargs):
    """Our model with the reference's weights loaded through numpy, in eval mode (built without random init)."""
    with pytest.MonkeyPatch.context() as patch:
        _skip_random_init(patch)
        model = models.create_model(name, **kwargs)
    model.load_state_dict(numpy_state(reference))
    return model.eval()


_PAIRS = {}


def _pair(name):
    """The seeded torchvision model (random norms) and ours with its weights, built once per session."""
    if name not in _PAIRS:
        reference = _reference(name, seed=3)
        _PAIRS[name] = reference, _ours(name, reference)
    return _PAIRS[name]


def _small_convnext_pair(seed, **kwargs):
    """A two-stage ConvNeXt (widths 16 and 32) from torchvision's class and ours, same random weights."""
    reference = tv.convnext.ConvNeXt([tv.convnext.CNBlockConfig(16, 32, 1), tv.convnext.CNBlockConfig(32, None, 2)],
                                     **kwargs)
    randomize_convnext(reference, seed).eval()
    ours = models.ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 2)], **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


# ---- LayerNorm over the channel axis ----------------------------------------------------------------


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("shape", [(3, 7, 5, 9), (2, 13, 1, 3), (2, 300, 3, 5)])
def test_layer_norm_over_channels_last(dtype, rtol, shape):
    """F.layer_norm on permuted (non-contiguous) NCHW -> NHWC views, forward and every gradient."""
    rng = np.random.default_rng(shape[1])
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    c = shape[1]
    w = (rng.random(c) + 0.5).astype(dtype)
    b = rng.standard_normal(c).astype(dtype)

    def ours(x, w, b):
        return F.layer_norm(x.permute(0, 2, 3, 1), (c,), w, b, 1e-6).permute(0, 3, 1, 2)

    def theirs(x, w, b):
        return torch.nn.functional.layer_norm(x.permute(0, 2, 3, 1), (c,), w, b, 1e-6).permute(0, 3, 1, 2)

    check_op(ours, theirs, [x, w, b], rtol=rtol)
    check_op(lambda x: ours(x, None, None), lambda x: theirs(x, None, None), [x], rtol=rtol)


def test_layer_norm_2d_module():
    reference = tv.convnext.LayerNorm2d(11, eps=1e-6)
    randomize_convnext(reference, 0)
    ours = LayerNorm2d(11, eps=1e-6)
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(2, 9, 7, seed=1, c=11)
    xt, xo = torch.from_numpy(x).requires_grad_(), engine.from_numpy(x).requires_grad_()
    ref, out = reference(xt), ours(xo)
    assert_close(out.detach().numpy(), ref.detach().numpy(), 1e-5)
    (ref ** 3).sum().backward()
    (out ** 3).sum().backward()
    assert_close(xo.grad.numpy(), xt.grad.numpy(), 1e-4, what="input grad")
    assert_close(ours.weight.grad.numpy(), reference.weight.grad.numpy(), 1e-4, what="weight grad")
    assert_close(ours.bias.grad.numpy(), reference.bias.grad.numpy(), 1e-4, what="bias grad")


# ---- structure of every variant --------------------------------------------------------------------


@pytest.mark.parametrize("name", CONVNEXTS + REGNETS)
def test_state_dict_layout_matches_torchvision(name, no_init, tv_on_meta):
    """Keys in order, shapes, dtypes and the module tree of every variant (no forward pass; no storage)."""
    reference, ours = tv_on_meta(name), models.create_model(name)
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k in ref_sd:
        assert tuple(our_sd[k].shape) == tuple(ref_sd[k].shape), k
        assert str(our_sd[k].dtype).split(".")[-1] == str(ref_sd[k].dtype).split(".")[-1], k
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in reference.modules()]
    num_params = sum(p.numel() for p in ours.parameters())
    assert num_params == tv.get_model_weights(name).DEFAULT.meta["num_params"]
    if name.startswith("convnext"):
        ours_p = [m.p for m in ours.modules() if type(m).__name__ == "StochasticDepth"]
        assert ours_p == [m.p for m in reference.modules() if type(m).__name__ == "StochasticDepth"]


@pytest.mark.parametrize("name", REGNETS)
def test_block_params_match_torchvision(name):
    depth, w_0, w_a, w_m, group_width, se_ratio = REGNET_PARAMS[name]
    ours = BlockParams.from_init_params(depth=depth, w_0=w_0, w_a=w_a, w_m=w_m, group_width=group_width,
                                        se_ratio=se_ratio)
    theirs = tv_regnet.BlockParams.from_init_params(depth=depth, w_0=w_0, w_a=w_a, w_m=w_m,
                                                    group_width=group_width, se_ratio=se_ratio)
    for field in ("depths", "widths", "group_widths", "bottleneck_multipliers", "strides", "se_ratio"):
        assert getattr(ours, field) == getattr(theirs, field), field
    assert list(ours._get_expanded_params()) == list(theirs._get_expanded_params())


def test_block_params_options_and_errors():
    kwargs = dict(depth=13, w_0=64, w_a=30.0, w_m=2.3, group_width=40, bottleneck_multiplier=2.5)
    ours, theirs = BlockParams.from_init_params(**kwargs), tv_regnet.BlockParams.from_init_params(**kwargs)
    assert (ours.widths, ours.depths, ours.group_widths) == (theirs.widths, theirs.depths, theirs.group_widths)
    for bad in (dict(w_a=-1.0), dict(w_0=0), dict(w_m=1.0), dict(w_0=20)):
        with pytest.raises(ValueError, match="Invalid RegNet settings"):
            BlockParams.from_init_params(**{**kwargs, **bad})


def test_convnext_errors():
    with pytest.raises(ValueError, match="block_setting should not be empty"):
        models.ConvNeXt([])
    with pytest.raises(TypeError, match=r"block_setting should be List\[CNBlockConfig\]"):
        models.ConvNeXt([[96, 192, 3]])
    assert repr(CNBlockConfig(96, None, 3)) == "CNBlockConfig(input_channels=96, out_channels=None, num_layers=3)"


# ---- numerics of the smallest variants -------------------------------------------------------------


@pytest.mark.parametrize("name", ["convnext_tiny", "regnet_y_400mf"])
def test_eval_parity(name):
    reference, ours = _pair(name)
    for n, h, w in [(1, 224, 224), (2, 67, 93)]:
        out, ref = eval_outputs(reference, ours, image_batch(n, h, w, seed=h))
        assert out.shape == ref.shape == (n, 1000)
        assert_close(out, ref, TOL, what=f"{name} {n}x{h}x{w}")


def _train_step(reference, ours, x, params):
    """Train-mode outputs, input gradients and the named parameter gradients of both models, in float64."""
    reference, ours = reference.train().double(), ours.train().double()
    ref_params, our_params = backward_both(reference, ours, x)
    assert all(p.grad is not None for p in our_params.values())
    for k in params:
        assert_close(our_params[k].grad.numpy(), ref_params[k].grad.numpy(), 1e-9, what=k)


def test_train_mode_regnet_y_400mf():
    """Batch statistics, SE and projections in training; float64 because 2x2 maps at batch 2 amplify rounding."""
    reference = _reference("regnet_y_400mf", seed=7, num_classes=5)
    ours = _ours("regnet_y_400mf", reference, num_classes=5)
    _train_step(reference, ours, image_batch(2, 48, 64, seed=8).astype(np.float64),
                ["stem.0.weight", "trunk_output.block1.block1-0.proj.1.weight",
                 "trunk_output.block2.block2-1.f.se.fc1.bias", "trunk_output.block4.block4-5.f.b.0.weight",
                 "fc.weight"])
    bn, ref_bn = ours.trunk_output.block3[0].f.a[1], reference.trunk_output.block3[0].f.a[1]
    assert_close(to_numpy(bn.running_var), to_numpy(ref_bn.running_var), 1e-10)


def test_train_mode_convnext():
    """ConvNeXt's class in training with stochastic depth off (a two-stage model, so float64 stays cheap):
    values and gradients of every parameter kind (stem, LayerNorm2d, layer scale, downsampling, head)."""
    reference, ours = _small_convnext_pair(9, num_classes=5, stochastic_depth_prob=0.0)
    _train_step(reference, ours, image_batch(2, 40, 56, seed=10).astype(np.float64),
                ["features.0.0.weight", "features.0.1.weight", "features.1.0.layer_scale",
                 "features.1.0.block.2.bias", "features.2.0.weight", "features.2.1.weight",
                 "features.3.1.block.3.weight", "features.3.1.block.0.bias", "classifier.0.weight",
                 "classifier.2.weight"])


def test_stochastic_depth_in_training():
    """Blocks are dropped per sample in training only, with probabilities rising linearly to the last block."""
    _, model = _small_convnext_pair(11, num_classes=3, stochastic_depth_prob=0.9)
    blocks = [m for m in model.modules() if isinstance(m, CNBlock)]
    assert [b.stochastic_depth.p for b in blocks] == pytest.approx([0.0, 0.45, 0.9])
    assert blocks[0].stochastic_depth.mode == "row"
    engine.manual_seed(0)
    x = engine.from_numpy(image_batch(8, 32, 32, seed=11))
    with engine.no_grad():
        first, second = model.train()(x).numpy(), model(x).numpy()
        assert not np.allclose(first, second)
        np.testing.assert_array_equal(model.eval()(x).numpy(), model(x).numpy())


# ---- weights API -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CONVNEXTS + REGNETS)
def test_weights_records_match_torchvision(name):
    ours, theirs = W.get_model_weights(name), tv.get_model_weights(name)
    assert ours.__name__ == theirs.__name__ and getattr(models, ours.__name__) is ours
    assert list(ours.__members__) == list(theirs.__members__)
    assert ours.DEFAULT is ours[theirs.DEFAULT.name]
    for member in theirs:
        mine, meta = ours[member.name], member.meta
        assert mine.url == member.url
        assert mine.meta["file_name"] == member.url.rsplit("/", 1)[1]
        assert member.url.rsplit("-", 1)[1].startswith(mine.meta["sha256"])
        for key in ("num_params", "recipe"):
            assert mine.meta[key] == meta[key], key
        assert mine.meta["license"] == meta.get("license", "BSD-3-Clause")
        assert (mine.meta["_metrics"], mine.meta["_ops"], mine.meta["_file_size"]) == \
               (meta["_metrics"], meta["_ops"], meta["_file_size"])
        assert tuple(mine.meta["min_size"]) == meta["min_size"] and mine.meta["categories"] == meta["categories"]
        tv_t, fv_t = member.transforms(), mine.transforms()
        assert (fv_t.crop_size, fv_t.resize_size, fv_t.interpolation) == \
               (tv_t.crop_size[0], tv_t.resize_size[0], tv_t.interpolation.value)
        assert fv_t.mean.ravel().tolist() == pytest.approx(tv_t.mean)
        assert fv_t.std.ravel().tolist() == pytest.approx(tv_t.std)


@pytest.mark.parametrize("weights", ["ConvNeXt_Tiny_Weights.IMAGENET1K_V1", "RegNet_X_400MF_Weights.IMAGENET1K_V1",
                                     "RegNet_Y_16GF_Weights.IMAGENET1K_SWAG_E2E_V1",
                                     "RegNet_Y_128GF_Weights.IMAGENET1K_SWAG_LINEAR_V1"])
def test_transforms_match_torchvision(weights):
    """Resize 236 / 256 bilinear, 384 and 224 bicubic (SWAG): the same tensor as torchvision's preset."""
    with Image.open(IMAGE) as image:
        image = image.convert("RGB")
    ours = W.get_weight(weights).transforms()
    theirs = torchvision.models.get_weight(weights).transforms()
    np.testing.assert_allclose(ours(image).numpy(), theirs(image).numpy(), atol=1e-5)


def test_weights_api_and_registry():
    assert torchvision_names(models.list_models("convnext*")) == sorted(CONVNEXTS)  # timm's have their own tests
    natural = partial(sorted, key=models.registry._natural_key)
    assert models.list_models("regnet_y*") == natural(REGNETS[:8])
    assert models.list_models("regnet_x*") == natural(REGNETS[8:])
    assert torchvision_names(models.list_models(module="regnet")) == natural(REGNETS)
    assert torchvision_names(models.list_models(module="convnext")) == sorted(CONVNEXTS)
    assert all(models.is_model_pretrained(n) for n in CONVNEXTS + REGNETS)
    assert W.get_model_weights(models.convnext_tiny) is models.ConvNeXt_Tiny_Weights
    assert models.RegNet_Y_16GF_Weights.DEFAULT is models.RegNet_Y_16GF_Weights.IMAGENET1K_V2
    assert models.RegNet_Y_128GF_Weights.DEFAULT is models.RegNet_Y_128GF_Weights.IMAGENET1K_SWAG_E2E_V1
    assert W.resolve_weights("regnet_y_32gf", weights="IMAGENET1K_SWAG_LINEAR_V1") is \
        models.RegNet_Y_32GF_Weights.IMAGENET1K_SWAG_LINEAR_V1
    assert W.resolve_weights("convnext_small", pretrained=True) is models.ConvNeXt_Small_Weights.IMAGENET1K_V1
    assert models.RegNet_Y_16GF_Weights.IMAGENET1K_SWAG_E2E_V1.url == \
        "https://download.pytorch.org/models/regnet_y_16gf_swag-43afe44d.pth"
    for build in (models.regnet_y_128gf, partial(models.create_model, "regnet_y_128gf")):
        with pytest.raises(ValueError, match="No weights available for model regnet_y_128gf"):
            build(pretrained=True)
    with pytest.raises(ValueError, match="do not belong to convnext_tiny"):
        models.convnext_tiny(weights=models.ConvNeXt_Base_Weights.DEFAULT)


# ---- timm API, features, graph ---------------------------------------------------------------------


def test_timm_api_and_init():
    """forward_features / forward_head / reset_classifier / in_chans, and torchvision's initialisation."""
    with pytest.MonkeyPatch.context() as patch:
        _skip_random_init(patch)
        assert tuple(models.create_model("convnext_tiny", in_chans=1).features[0][0].weight.shape) == (96, 1, 4, 4)
        assert tuple(models.create_model("regnet_y_400mf", in_chans=2).stem[0].weight.shape) == (32, 2, 3, 3)
    engine.manual_seed(0)
    setting = [CNBlockConfig(64, 128, 1), CNBlockConfig(128, None, 1)]
    model = models.ConvNeXt(setting, num_classes=7, in_chans=1).eval()
    x = engine.from_numpy(image_batch(2, 32, 32, c=1))
    with engine.no_grad():
        features = model.forward_features(x)
        assert tuple(features.shape) == (2, 128, 4, 4)
        assert tuple(model.forward_head(features, pre_logits=True).shape) == (2, 128)
        assert_close(model.forward_head(features).numpy(), model(x).numpy(), 1e-6)
    weight = to_numpy(model.features[3][0].block[3].weight)
    assert abs(weight.std() / 0.02 - 1) < 0.05  # trunc_normal_ with the default bounds +-2, as torchvision
    assert not to_numpy(model.classifier[2].bias).any() and not to_numpy(model.features[0][0].bias).any()
    assert np.all(to_numpy(model.features[1][0].layer_scale) == np.float32(1e-6))
    model.reset_classifier(0)
    assert isinstance(model.get_classifier(), engine.nn.Identity)
    model.reset_classifier(4)
    assert tuple(model.get_classifier().weight.shape) == (4, 128)
    regnet = models.regnet_x_400mf(num_classes=0)
    assert isinstance(regnet.get_classifier(), engine.nn.Identity) and regnet.num_features == 400
    conv = regnet.trunk_output.block3[0].f.b[0]
    assert abs(to_numpy(conv.weight).std() * np.sqrt(9 * conv.out_channels / 2) - 1) < 0.05
    regnet.reset_classifier(3)
    fc = to_numpy(regnet.fc.weight)
    assert fc.shape == (3, 400) and abs(fc.std() / 0.01 - 1) < 0.2
    for m in (model, regnet):
        keys = m.state_dict()
        assert f"{m.default_cfg['first_conv']}.weight" in keys and f"{m.default_cfg['classifier']}.weight" in keys


def _outputs_at(reference, nodes, x):
    """torchvision's outputs of the modules named ``nodes``, collected by forward hooks."""
    outputs = {}

    def keep(node):
        def hook(module, inputs, output):
            outputs[node] = output.numpy()
        return hook

    modules = dict(reference.named_modules())
    hooks = [modules[node].register_forward_hook(keep(node)) for node in nodes]
    with torch.no_grad():
        reference(torch.from_numpy(x))
    for hook in hooks:
        hook.remove()
    return outputs


@pytest.mark.parametrize("name, nodes, channels", [
    ("convnext_tiny", ["features.1", "features.3", "features.5", "features.7"], [96, 192, 384, 768]),
    ("regnet_y_400mf", ["stem", "trunk_output.block1", "trunk_output.block2", "trunk_output.block3",
                        "trunk_output.block4"], [32, 48, 104, 208, 440]),
])
def test_features_only(name, nodes, channels, no_init):
    """Stage outputs equal torchvision's stage outputs; channels and reductions are timm's."""
    reference, _ = _pair(name)
    model = models.create_model(name, features_only=True)
    model.load_state_dict({k: v for k, v in numpy_state(reference).items() if k in model.state_dict()})
    model.eval()
    assert model.feature_info.module_name() == nodes and model.feature_info.channels() == channels
    assert model.feature_info.reduction() == [2, 4, 8, 16, 32][-len(nodes):]
    assert not any(k.startswith(("classifier.", "fc.")) for k in model.state_dict())
    x = image_batch(2, 65, 97, seed=13)
    with engine.no_grad():
        ours = model(engine.from_numpy(x))
    ref = _outputs_at(reference, nodes, x)
    for out, node in zip(ours, nodes):
        assert_close(to_numpy(out), ref[node], TOL, what=node)
    second = models.create_model(name, features_only=True, out_indices=(1,))
    assert second.feature_info.module_name() == [nodes[1]]


@pytest.mark.parametrize("name", ["convnext_tiny", "regnet_y_400mf"])
def test_graph_equals_eager(name):
    _, model = _pair(name)

    graph = InferenceGraph(model)
    for seed in (14, 15):
        x = engine.from_numpy(image_batch(2, 35, 45, seed=seed))
        with engine.no_grad():
            eager = model(x).numpy()
        assert_close(graph(x).numpy(), eager, 1e-5, what=f"graph {name}")
    reference, _ = _pair(name)
    assert all(np.array_equal(v.numpy(), reference.state_dict()[k].numpy()) for k, v in model.state_dict().items())
