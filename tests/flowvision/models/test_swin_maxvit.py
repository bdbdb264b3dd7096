"""Swin Transformer (V1, V2) and MaxViT parity with torchvision: structure and buffers, eval numerics
(with padding and partial shifts), train-mode gradients, nn.Graph inference, the weights API, timm API."""
import numpy as np
import pytest
import torch
import torchvision
import torchvision.models as models_torch
from PIL import Image

import engine
import flowvision.models as models_flow
from model_parity import eval_outputs, image_batch, numpy_state, randomize_norms, to_numpy, torchvision_names
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each (see the fixture)
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

SWINS = ["swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b"]
TOL = 1e-4


def _randomize(model, seed):
    """Random BatchNorm statistics and random LayerNorm affine parameters (defaults hide bugs)."""
    randomize_norms(model, seed)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
    return model


def _pair(name, seed, **kwargs):
    """A seeded torchvision model with random norms and ours with its weights through numpy, both in eval mode."""
    torch.manual_seed(seed)
    reference = _randomize(getattr(models_torch, name)(**kwargs), seed).eval()
    ours = models_flow.create_model(name, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _check_structure(ours, reference):
    """Same state_dict keys in order, shapes and dtypes; same module names and types."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k, v in ref_sd.items():
        assert tuple(our_sd[k].shape) == tuple(v.shape), k
        assert str(our_sd[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1], k
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in reference.modules()]


def test_registered_families():
    assert torchvision_names(models_flow.list_models("swin_*")) == sorted(SWINS)  # swin3d_* are the video family
    assert torchvision_names(models_flow.list_models(module="swin_transformer")) == sorted(SWINS)
    assert models_flow.list_models(module="maxvit") == ["maxvit_t"]
    assert all(models_flow.is_model_pretrained(n) for n in SWINS + ["maxvit_t"])


@pytest.mark.parametrize("name", SWINS + ["maxvit_t"])
def test_state_dict_matches_torchvision(name, no_init):
    """Every variant, built without running it (torchvision's on the meta device): keys, shapes, dtypes, modules."""
    with torch.device("meta"):
        reference = getattr(models_torch, name)()
    _check_structure(getattr(models_flow, name)(), reference)


def _sd_probabilities(model, cls):
    return [m.p for m in model.modules() if type(m).__name__ == cls]


@pytest.mark.parametrize("name", ["swin_t", "swin_v2_t"])
def test_swin_eval_parity(name, no_init):
    """224 (a multiple of the windows) and 100x131: padded windows, odd patch merging, and a stage whose
    padded map fits one window in height but not in width (shifted along one axis only)."""
    reference, ours = _pair(name, seed=1)
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    fresh = getattr(models_flow, name)().state_dict()
    for k in ref_sd:
        if k.endswith(("relative_position_index", "relative_coords_table")):
            assert_close(fresh[k].numpy(), ref_sd[k].numpy(), 1e-6, what=k)
            assert fresh[k].dtype == our_sd[k].dtype
    assert _sd_probabilities(ours, "StochasticDepth") == _sd_probabilities(reference, "StochasticDepth")
    for n, h, w in [(2, 224, 224), (1, 100, 131)]:
        out, ref = eval_outputs(reference, ours, image_batch(n, h, w, seed=h))
        assert out.shape == ref.shape == (n, 1000)
        assert_close(out, ref, TOL, what=f"{name} {n}x{h}x{w}")


def test_maxvit_eval_parity(no_init):
    reference, ours = _pair("maxvit_t", seed=2)
    _check_structure(ours, reference)
    ref_index = reference.state_dict()["blocks.0.layers.0.layers.window_attention.attn_layer.1.relative_position_index"]
    our_index = ours.state_dict()["blocks.0.layers.0.layers.window_attention.attn_layer.1.relative_position_index"]
    np.testing.assert_array_equal(our_index.numpy(), ref_index.numpy())
    assert _sd_probabilities(ours, "StochasticDepth") == _sd_probabilities(reference, "StochasticDepth")
    out, ref = eval_outputs(reference, ours, image_batch(2, 224, 224, seed=3))
    assert_close(out, ref, TOL, what="maxvit_t 2x224x224")


SMALL_MAXVIT = dict(input_size=(64, 64), stem_channels=8, partition_size=2, block_channels=[8, 16, 32, 64],
                    block_layers=[1, 2, 1, 1], head_dim=8, stochastic_depth_prob=0.3)


def test_maxvit_small_configuration(no_init):
    """A small MaxVit (2x2 partitions at 64x64) against torchvision's class with the same arguments, the
    timm API on it, and the errors for sizes the partitions do not fit."""
    torch.manual_seed(4)
    reference = _randomize(models_torch.MaxVit(num_classes=7, **SMALL_MAXVIT), 4).eval()
    ours = models_flow.MaxVit(num_classes=7, **SMALL_MAXVIT)
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    _check_structure(ours, reference)
    x = image_batch(2, 64, 64, seed=5)
    out, ref = eval_outputs(reference, ours, x)
    assert_close(out, ref, TOL, what="small maxvit")
    with engine.no_grad():
        features = ours.forward_features(engine.from_numpy(x))
        assert tuple(features.shape) == (2, 64, 2, 2)
        assert tuple(ours.forward_head(features, pre_logits=True).shape) == (2, 64)
        assert_close(ours.forward_head(features).numpy(), out, 1e-6)
        with pytest.raises(ValueError, match=r"partitions a \(16, 16\) map"):
            ours(engine.from_numpy(image_batch(1, 72, 72)))
    ours.reset_classifier(0)
    assert isinstance(ours.get_classifier(), engine.nn.Identity)
    ours.reset_classifier(5)
    assert tuple(ours.get_classifier().weight.shape) == (5, 64) and ours.get_classifier().bias is None
    one_channel = models_flow.create_model("maxvit_t", in_chans=1, num_classes=0)
    assert tuple(one_channel.stem[0][0].weight.shape) == (64, 1, 3, 3)
    assert isinstance(one_channel.classifier[5], engine.nn.Identity)
    with pytest.raises(ValueError, match="is not divisible by partition size 7"):
        models_flow.maxvit_t(input_size=(256, 256))


def test_maxvit_small_on_cuda(cuda):
    """The small MaxVit on the CUDA backend equals the CPU (test_cuda_models runs every registered model at
    64x72, a size maxvit_t, fixed at 224x224, cannot take)."""
    engine.manual_seed(18)
    cpu = models_flow.MaxVit(num_classes=5, **SMALL_MAXVIT)
    rng = np.random.default_rng(18)
    for m in cpu.modules():
        if isinstance(m, engine.nn.BatchNorm2d):
            m.running_mean.copy_(engine.from_numpy(rng.standard_normal(m.num_features).astype(np.float32) * 0.1))
            m.running_var.copy_(engine.from_numpy(rng.uniform(0.5, 2.0, m.num_features).astype(np.float32)))
    gpu = models_flow.MaxVit(num_classes=5, **SMALL_MAXVIT).cuda()
    gpu.load_state_dict(cpu.state_dict())
    x = image_batch(2, 64, 64, seed=19)
    with engine.no_grad():
        ref = cpu.eval()(engine.from_numpy(x))
        out = gpu.eval()(engine.from_numpy(x).cuda())
    assert out.device.type == "cuda"
    assert_close(out.cpu().numpy(), ref.numpy(), 1e-4, what="maxvit on cuda")


def test_swin_t_train_gradients(no_init):
    """Train mode in float64 with stochastic depth off on both sides (torchvision's builder fixes its rate,
    so its layers are switched off after building): output, input gradient and every parameter gradient."""
    torch.manual_seed(6)
    reference = _randomize(models_torch.swin_t(num_classes=5), 6).train().double()
    for m in reference.modules():
        if type(m).__name__ == "StochasticDepth":
            m.p = 0.0
    ours = models_flow.swin_t(num_classes=5, stochastic_depth_prob=0.0)
    ours.load_state_dict(numpy_state(reference))
    ours.train().double()
    assert set(_sd_probabilities(ours, "StochasticDepth")) == {0.0}
    x = image_batch(2, 64, 72, seed=7).astype(np.float64)
    proj = np.random.default_rng(8).standard_normal((2, 5))
    xt, xo = torch.from_numpy(x).requires_grad_(), engine.from_numpy(x).requires_grad_()
    ref, out = reference(xt), ours(xo)
    assert_close(to_numpy(out), to_numpy(ref), 1e-10, what="train-mode output")
    (ref * torch.from_numpy(proj)).sum().backward()
    (out * engine.from_numpy(proj)).sum().backward()
    assert_close(xo.grad.numpy(), xt.grad.numpy(), 1e-9, what="input grad")
    our_params = dict(ours.named_parameters())
    for k, p in reference.named_parameters():
        assert_close(our_params[k].grad.numpy(), p.grad.numpy(), 1e-8, what=f"grad {k}")


TINY_SWIN = dict(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                 stochastic_depth_prob=0.0, num_classes=5)


def test_tiny_swin_v2_train_gradients(no_init):
    """V2's cosine attention, logit scale, bias MLP and post-norms in train mode (float64) on a tiny
    configuration; the key bias, random in the checkpoint, is ignored on both sides (its gradient is 0)."""
    from torchvision.models import swin_transformer as tv_swin

    from flowvision.models import swin_transformer as fv_swin

    torch.manual_seed(20)
    reference = tv_swin.SwinTransformer(block=tv_swin.SwinTransformerBlockV2,
                                        downsample_layer=tv_swin.PatchMergingV2, **TINY_SWIN)
    with torch.no_grad():
        for name, p in reference.named_parameters():
            if name.endswith(("qkv.bias", "logit_scale")):
                p.add_(torch.randn(p.shape) * 0.5)
    reference = _randomize(reference, 20)
    ours = fv_swin.SwinTransformer(block=fv_swin.SwinTransformerBlockV2, downsample_layer=fv_swin.PatchMergingV2,
                                   **TINY_SWIN)
    _check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    reference.train().double()
    ours.train().double()
    x = image_batch(2, 40, 52, seed=21).astype(np.float64)
    xt, xo = torch.from_numpy(x).requires_grad_(), engine.from_numpy(x).requires_grad_()
    ref, out = reference(xt), ours(xo)
    assert_close(to_numpy(out), to_numpy(ref), 1e-10, what="train-mode output")
    ref.square().sum().backward()
    out.square().sum().backward()
    assert_close(xo.grad.numpy(), xt.grad.numpy(), 1e-9, what="input grad")
    our_params = dict(ours.named_parameters())
    for k, p in reference.named_parameters():
        assert_close(our_params[k].grad.numpy(), p.grad.numpy(), 1e-8, what=f"grad {k}")
    k_bias_grad = our_params["features.1.0.attn.qkv.bias"].grad.numpy()[16:32]
    assert not k_bias_grad.any()


# this test and the three after it look at modes, shapes and the init's scales, not at torch's exact stream: their
# draws come from numpy (fast_random; 5.8 s of CPU for the four with the exact draws, 4.2 s so)
def test_stochastic_depth_in_training(fast_random):
    """The drop rate grows linearly over the blocks; in training samples are dropped, eval mode is deterministic."""
    engine.manual_seed(0)
    model = models_flow.swin_t(num_classes=3, depths=[1, 1, 1, 2], stochastic_depth_prob=0.9)
    assert [round(p, 6) for p in _sd_probabilities(model, "StochasticDepth")] == [0.0, 0.225, 0.45, 0.675, 0.9]
    x = engine.from_numpy(image_batch(8, 32, 32, seed=9))
    with engine.no_grad():
        outs = [model.train()(x).numpy() for _ in range(2)]
        assert not np.allclose(outs[0], outs[1])
        np.testing.assert_array_equal(model.eval()(x).numpy(), model(x).numpy())


class _Inference(engine.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def test_swin_t_graph_inference(fast_random):
    """nn.Graph traces the padded, shifted, masked window attention; replays equal eager."""
    engine.manual_seed(10)
    model = models_flow.swin_t(num_classes=6).eval()
    graph = _Inference(model)
    for seed in (11, 12):
        x = engine.from_numpy(image_batch(2, 64, 72, seed=seed))
        with engine.no_grad():
            eager = model(x).numpy()
        assert_close(graph(x).numpy(), eager, 1e-5, what="graph")


def test_swin_timm_api_and_features(fast_random):
    engine.manual_seed(13)
    model = models_flow.swin_v2_t(num_classes=4, in_chans=1, depths=[1, 1, 2, 1]).eval()
    assert tuple(model.features[0][0].weight.shape) == (96, 1, 4, 4)
    x = engine.from_numpy(image_batch(1, 64, 64, c=1, seed=14))
    with engine.no_grad():
        features = model.forward_features(x)
        assert tuple(features.shape) == (1, 2, 2, 768)
        assert tuple(model.forward_head(features, pre_logits=True).shape) == (1, 768)
        assert_close(model.forward_head(features).numpy(), model(x).numpy(), 1e-6)
    assert model.default_cfg["first_conv"] == "features.0.0" and model.get_classifier() is model.head
    model.reset_classifier(0)
    assert isinstance(model.head, engine.nn.Identity)
    model.reset_classifier(9)
    assert tuple(model.head.weight.shape) == (9, 768)
    info = model.feature_info
    assert [f["num_chs"] for f in info] == [96, 192, 384, 768] and [f["reduction"] for f in info] == [4, 8, 16, 32]
    extractor = models_flow.create_model("swin_t", features_only=True, out_indices=(0, 2), depths=[2, 2, 2, 2])
    assert extractor.feature_info.module_name() == ["features.1", "features.5"]
    with engine.no_grad():
        outs = extractor.eval()(engine.from_numpy(image_batch(1, 64, 64, seed=15)))
    assert [tuple(o.shape) for o in outs] == [(1, 16, 16, 96), (1, 4, 4, 384)]


def test_swin_init_follows_torchvision(fast_random):
    engine.manual_seed(16)
    model = models_flow.swin_v2_t(depths=[1, 1, 1, 1])
    attn = model.features[1][0].attn
    bias = attn.qkv.bias.detach().numpy()
    assert not bias.any()
    np.testing.assert_allclose(attn.logit_scale.detach().numpy(), np.log(10.0), rtol=1e-6)
    head = model.head.weight.detach().numpy()
    assert abs(head.std() / 0.02 - 1) < 0.1  # torch's trunc_normal_ cuts at +-2 (absolute): no visible cut
    assert not model.features[3][0].mlp[0].bias.detach().numpy().any()
    standalone = models_flow.swin_transformer.ShiftedWindowAttentionV2(16, [4, 4], [0, 0], 2).qkv.bias.detach().numpy()
    assert standalone[:16].any() and not standalone[16:32].any() and standalone[32:].any()
    table = models_flow.swin_t(depths=[1, 1, 1, 1]).features[1][0].attn.relative_position_bias_table.detach().numpy()
    assert abs(table.std() / 0.02 - 1) < 0.2


@pytest.mark.parametrize("name", SWINS + ["maxvit_t"])
def test_weights_api(name, no_init):
    ours, theirs = models_flow.get_model_weights(name), models_torch.get_model_weights(name)
    assert ours.__name__ == theirs.__name__ and list(ours.__members__) == list(theirs.__members__)
    assert ours.DEFAULT.name == theirs.DEFAULT.name
    assert models_flow.get_model_weights(getattr(models_flow, name)) is ours
    for member in theirs:
        mine = ours[member.name]
        assert mine.url == member.url
        for key in ("num_params", "min_size", "_metrics", "_ops", "_file_size", "recipe"):
            assert mine.meta[key] == member.meta[key], key
        assert mine.meta["categories"] == member.meta["categories"]
    model = getattr(models_flow, name)()
    assert sum(p.numel() for p in model.parameters()) == ours.DEFAULT.meta["num_params"]
    assert models_flow.weights.resolve_weights(name, weights="DEFAULT") is ours.DEFAULT
    assert models_flow.weights.resolve_weights(name, pretrained=True) is ours.IMAGENET1K_V1


@pytest.mark.parametrize("name", ["swin_t", "swin_s", "swin_v2_t", "swin_v2_b", "maxvit_t"])
def test_transforms_match_torchvision(name):
    image = Image.fromarray(np.random.default_rng(17).integers(0, 256, (300, 411, 3), dtype=np.uint8))
    ours = models_flow.get_model_weights(name).DEFAULT.transforms()
    theirs = torchvision.models.get_model_weights(name).DEFAULT.transforms()
    assert theirs.interpolation.value == ours.interpolation == "bicubic"
    np.testing.assert_allclose(ours(image).numpy(), theirs(image).numpy(), atol=1e-5)
