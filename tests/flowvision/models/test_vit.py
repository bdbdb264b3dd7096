"""Vision Transformer parity with torchvision: state_dict layout of every variant, eval numerics (224, another
image_size, pre-logits head), train-mode outputs and gradients, checkpoint loading (other image sizes, legacy
MLP keys), the weights API (SWAG tags), the timm API and nn.Graph."""
import os
from collections import OrderedDict
from functools import partial

import numpy as np
import pytest
import torch
import torchvision
import torchvision.models as tv
from PIL import Image
from torchvision.models import vision_transformer as tv_vit

import engine
import flowvision.models as models
from engine.nn import init
from flowvision.models import vision_transformer as vit
from flowvision.models import weights as W
from model_parity import backward_both, image_batch, numpy_state, to_numpy
from op_check import assert_close

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

VITS = ["vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"]
TOL = 1e-4
IMAGE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "images", "chelsea.png")
# a two-layer ViT of the same classes: the numerics of everything but the sizes, cheaply
TINY = dict(image_size=48, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=40)


def randomize_vit(model, seed):
    """Random LayerNorm affines, class token and head (torchvision starts them at 1/0, which hides bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.LayerNorm, torch.nn.BatchNorm2d)):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
        model.class_token.copy_(torch.randn(model.class_token.shape, generator=g))
        for p in model.heads.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    return model


def _check_structure(ours, reference):
    """Same state_dict keys in the same order, shapes and dtypes, and the same module tree."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k in ref_sd:
        assert tuple(our_sd[k].shape) == tuple(ref_sd[k].shape), k
        assert str(our_sd[k].dtype).split(".")[-1] == str(ref_sd[k].dtype).split(".")[-1], k
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in reference.modules()]


def _pair(name, seed=0, **kwargs):
    """A seeded torchvision ViT with random norms and head, and ours with its weights, both in eval mode
    (ours may skip its random initialisation: every value is loaded)."""
    torch.manual_seed(seed)
    reference = randomize_vit(getattr(tv, name)(**kwargs), seed).eval()
    ours = models.create_model(name, **kwargs)
    _check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def _outputs(reference, ours, x):
    with torch.no_grad():
        ref = reference(torch.from_numpy(x)).numpy()
    with engine.no_grad():
        out = ours(engine.from_numpy(x)).numpy()
    return out, ref


def _tiny_pair(seed=0, **kwargs):
    config = dict(TINY, **kwargs)
    torch.manual_seed(seed)
    reference = randomize_vit(tv_vit.VisionTransformer(**config), seed).double()
    ours = vit.VisionTransformer(**config).double()
    _check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours


@pytest.fixture
def no_init(monkeypatch):
    """Random initialisation skipped: parameters stay untouched np.empty storage, so vit_h_14 (632M
    parameters, ~9 s and 2.6 GB when initialised) builds in milliseconds without committing memory."""
    for name in ("uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "kaiming_uniform_"):
        monkeypatch.setattr(init, name, lambda tensor, *args, **kwargs: tensor)


# ---- structure of every variant ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", VITS)
def test_state_dict_layout_matches_torchvision(name, no_init):
    """Keys in order, shapes, dtypes, module tree and parameter count of every variant (no storage touched)."""
    with torch.device("meta"):
        reference = getattr(tv, name)()
    ours = models.create_model(name)
    _check_structure(ours, reference)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in reference.parameters())
    linear = [w for w in tv.get_model_weights(name) if w.meta["min_size"] == (224, 224)]
    assert sum(p.numel() for p in ours.parameters()) == linear[0].meta["num_params"]
    swag = models.create_model(name, image_size=tv.get_model_weights(name).DEFAULT.meta["min_size"][0])
    assert sum(p.numel() for p in swag.parameters()) == tv.get_model_weights(name).DEFAULT.meta["num_params"]


# ---- eval numerics ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["vit_b_16", "vit_b_32"])
def test_eval_parity_224(name, no_init):
    reference, ours = _pair(name, seed=1)
    out, ref = _outputs(reference, ours, image_batch(2, 224, 224, seed=2))
    assert out.shape == ref.shape == (2, 1000)
    assert_close(out, ref, TOL, what=name)


def test_eval_parity_image_size_112_with_pre_logits(no_init):
    reference, ours = _pair("vit_b_16", seed=3, image_size=112, representation_size=96, num_classes=10)
    assert tuple(ours.encoder.pos_embedding.shape) == (1, 50, 768)
    out, ref = _outputs(reference, ours, image_batch(2, 112, 112, seed=4))
    assert out.shape == ref.shape == (2, 10)
    assert_close(out, ref, TOL, what="vit_b_16 at 112")


def test_train_mode_outputs_and_gradients():
    """Training mode with a convolutional stem (batch statistics), in float64: outputs and every gradient."""
    stem = [tv_vit.ConvStemConfig(8, 3, 2), tv_vit.ConvStemConfig(16, 3, 2)]
    ours_stem = [vit.ConvStemConfig(8, 3, 2), vit.ConvStemConfig(16, 3, 2)]
    config = dict(TINY, patch_size=4, representation_size=24, num_classes=5)
    torch.manual_seed(5)
    reference = randomize_vit(tv_vit.VisionTransformer(conv_stem_configs=stem, **config), 5).double().train()
    ours = vit.VisionTransformer(conv_stem_configs=ours_stem, **config).double().train()
    _check_structure(ours, reference)
    ours.load_state_dict(numpy_state(reference))
    x = image_batch(3, 48, 48, seed=6).astype(np.float64)
    ref_params, our_params = backward_both(reference, ours, x)
    for k, p in our_params.items():
        assert_close(p.grad.numpy(), ref_params[k].grad.numpy(), 1e-9, what=k)
    ref_bn = reference.conv_proj.conv_bn_relu_1[1]
    assert_close(to_numpy(ours.conv_proj.conv_bn_relu_1[1].running_var), to_numpy(ref_bn.running_var), 1e-10)


def test_dropout_in_training_only():
    engine.manual_seed(0)
    model = vit.VisionTransformer(**TINY, dropout=0.5, attention_dropout=0.5)
    x = engine.from_numpy(image_batch(2, 48, 48))
    with engine.no_grad():
        first, second = model.forward_features(x).numpy(), model.forward_features(x).numpy()
        model.eval()
        assert not np.allclose(first, second)
        np.testing.assert_array_equal(model.forward_features(x).numpy(), model.forward_features(x).numpy())


# ---- checkpoints of other image sizes, legacy keys ---------------------------------------------------------
def test_loading_another_image_size_interpolates_like_torchvision(tmp_path):
    """A 48-pixel (3x3 patches) checkpoint into models for 80 and 32 pixels: the position embeddings are
    resized as torchvision's interpolate_embeddings resizes them, through load_state_dict and load_checkpoint."""
    reference, _ = _tiny_pair(seed=7)
    state = numpy_state(reference)
    for image_size in (80, 32):
        expected = tv_vit.interpolate_embeddings(image_size, 16, reference.state_dict())
        torch_model = tv_vit.VisionTransformer(**dict(TINY, image_size=image_size)).double().eval()
        torch_model.load_state_dict(expected)
        ours = vit.VisionTransformer(**dict(TINY, image_size=image_size)).double().eval()
        ours.load_state_dict(state)
        assert_close(to_numpy(ours.encoder.pos_embedding), expected["encoder.pos_embedding"].numpy(), 1e-6)
        ours_fn = vit.interpolate_embeddings(image_size, 16, dict(state))
        assert_close(ours_fn["encoder.pos_embedding"], expected["encoder.pos_embedding"].numpy(), 1e-6)
        x = image_batch(2, image_size, image_size, seed=8).astype(np.float64)
        out, ref = _outputs(torch_model, ours, x)
        assert_close(out, ref, 1e-6, what=f"interpolated to {image_size}")
    path = tmp_path / "vit_tiny.npz"
    np.savez(path, **state)
    ours = models.load_checkpoint(vit.VisionTransformer(**dict(TINY, image_size=80)).double(), str(path))
    assert not ours.missing_keys and not ours.unexpected_keys
    dropped = vit.interpolate_embeddings(80, 16, dict(state), reset_heads=True)
    assert not [k for k in dropped if k.startswith("heads")] and len(dropped) == len(state) - 2


def test_inputs_of_other_sizes_resize_position_embeddings_on_the_fly():
    """A model for 48 pixels run on 80x80 images equals torchvision's 80-pixel model with interpolated
    embeddings; non-square inputs run too, and the embeddings get gradients through the resize."""
    reference, ours = _tiny_pair(seed=9)
    ours.eval()
    torch_80 = tv_vit.VisionTransformer(**dict(TINY, image_size=80)).double().eval()
    torch_80.load_state_dict(tv_vit.interpolate_embeddings(80, 16, reference.state_dict()))
    out, ref = _outputs(torch_80, ours, image_batch(2, 80, 80, seed=10).astype(np.float64))
    assert_close(out, ref, 1e-6, what="on the fly at 80")
    x = engine.from_numpy(image_batch(2, 40, 70, seed=11).astype(np.float64))
    assert tuple(ours.forward_features(x).shape) == (2, 1 + 2 * 4, 32)
    ours(x).sum().backward()
    assert np.abs(ours.encoder.pos_embedding.grad.numpy()).sum() > 0
    with pytest.raises(ValueError, match="smaller than one 16x16 patch"):
        ours(engine.zeros(1, 3, 15, 48, dtype=engine.float64))


def test_legacy_mlp_keys_load():
    """Checkpoints saved before torchvision 0.13 name the MLP layers linear_1 / linear_2."""
    reference, _ = _tiny_pair(seed=12)
    legacy = OrderedDict((k.replace("mlp.0.", "mlp.linear_1.").replace("mlp.3.", "mlp.linear_2."), v)
                         for k, v in numpy_state(reference).items())
    assert "encoder.layers.encoder_layer_1.mlp.linear_2.bias" in legacy
    ours = vit.VisionTransformer(**TINY).double()
    ours.load_state_dict(legacy)
    assert_close(to_numpy(ours.encoder.layers.encoder_layer_1.mlp[3].bias),
                 to_numpy(reference.encoder.layers.encoder_layer_1.mlp[3].bias), 0)
    current = ours.state_dict()
    assert current._metadata["encoder.layers.encoder_layer_0.mlp"]["version"] == 2
    vit.VisionTransformer(**TINY).double().load_state_dict(current)


# ---- weights API ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", VITS)
def test_weights_records_match_torchvision(name):
    ours, theirs = W.get_model_weights(name), tv.get_model_weights(name)
    assert ours.__name__ == theirs.__name__ and getattr(models, ours.__name__) is ours
    assert list(ours.__members__) == list(theirs.__members__)
    assert ours.DEFAULT is ours[theirs.DEFAULT.name]
    for member in theirs:
        mine, meta = ours[member.name], member.meta
        assert mine.url == member.url and mine.meta["file_name"] == member.url.rsplit("/", 1)[1]
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


@pytest.mark.parametrize("weights", ["ViT_B_16_Weights.IMAGENET1K_V1", "ViT_B_16_Weights.IMAGENET1K_SWAG_E2E_V1",
                                     "ViT_H_14_Weights.IMAGENET1K_SWAG_LINEAR_V1"])
def test_transforms_match_torchvision(weights):
    """Resize 256 bilinear, 384 and 224 bicubic (SWAG): the same tensor as torchvision's preset."""
    with Image.open(IMAGE) as image:
        image = image.convert("RGB")
    ours = W.get_weight(weights).transforms()
    theirs = torchvision.models.get_weight(weights).transforms()
    np.testing.assert_allclose(ours(image).numpy(), theirs(image).numpy(), atol=1e-5)


def test_weights_api_and_registry(monkeypatch, no_init):
    assert models.list_models("vit_[blh]_*") == sorted(VITS, key=models.registry._natural_key)
    # torchvision's ViTs and timm's, whose vision_transformer module also has FlexiViT, EVA-L and BEiT-3 configs
    assert set(models.list_models(module="vision_transformer")) >= set(models.list_models("vit_[blh]_*")) | {
        "vit_base_patch16_224", "flexivit_small", "eva_large_patch14_196", "beit3_base_patch16_224"}
    assert all(models.is_model_pretrained(n) for n in VITS)
    assert W.get_model_weights(models.vit_b_16) is models.ViT_B_16_Weights
    assert models.ViT_H_14_Weights.DEFAULT is models.ViT_H_14_Weights.IMAGENET1K_SWAG_E2E_V1
    assert W.resolve_weights("vit_l_32", pretrained=True) is models.ViT_L_32_Weights.IMAGENET1K_V1
    for build in (models.vit_h_14, partial(models.create_model, "vit_h_14")):
        with pytest.raises(ValueError, match="No weights available for model vit_h_14"):
            build(pretrained=True)
    loaded = []
    monkeypatch.setattr(W, "load_pretrained", lambda model, weights, progress=True: loaded.append(weights))
    model = models.vit_b_16(weights="IMAGENET1K_SWAG_E2E_V1")
    assert loaded == [models.ViT_B_16_Weights.IMAGENET1K_SWAG_E2E_V1]
    assert model.image_size == 384 and tuple(model.encoder.pos_embedding.shape) == (1, 577, 768)
    assert models.vit_b_16(weights="IMAGENET1K_SWAG_E2E_V1", image_size=224).image_size == 224
    assert models.vit_l_16(weights=models.ViT_L_16_Weights.IMAGENET1K_SWAG_E2E_V1).image_size == 512


# ---- timm API, init, graph --------------------------------------------------------------------------------
def test_timm_api_and_init():
    engine.manual_seed(0)
    model = vit.VisionTransformer(**dict(TINY, hidden_dim=64, mlp_dim=256), in_chans=1, num_classes=7).eval()
    assert tuple(model.conv_proj.weight.shape) == (64, 1, 16, 16)
    x = engine.from_numpy(image_batch(2, 48, 48, c=1))
    with engine.no_grad():
        tokens = model.forward_features(x)
        assert tuple(tokens.shape) == (2, 10, 64)
        assert tuple(model.forward_head(tokens, pre_logits=True).shape) == (2, 64)
        assert_close(model.forward_head(tokens).numpy(), model(x).numpy(), 0)
    assert model.get_classifier() is model.heads.head and model.num_features == 64
    model.reset_classifier(0)
    assert isinstance(model.get_classifier(), engine.nn.Identity)
    model.reset_classifier(3)
    assert tuple(model.get_classifier().weight.shape) == (3, 64) and not to_numpy(model.get_classifier().weight).any()
    # torchvision's initialisation
    conv = to_numpy(model.conv_proj.weight)
    assert abs(conv.std() * np.sqrt(256) - 1) < 0.05 and not to_numpy(model.conv_proj.bias).any()
    assert abs(to_numpy(model.encoder.pos_embedding).std() / 0.02 - 1) < 0.1
    assert not to_numpy(model.class_token).any()
    mlp = model.encoder.layers.encoder_layer_0.mlp
    bound = np.sqrt(6 / (64 + 256))
    weight = to_numpy(mlp[0].weight)
    assert np.abs(weight).max() <= bound and abs(weight.std() * np.sqrt(3) / bound - 1) < 0.05
    assert 0 < np.abs(to_numpy(mlp[3].bias)).max() < 1e-5
    pre = vit.VisionTransformer(**TINY, representation_size=16).heads
    assert abs(to_numpy(pre.pre_logits.weight).std() * np.sqrt(32) - 1) < 0.2 and type(pre.act).__name__ == "Tanh"
    with pytest.raises(AssertionError, match="Input shape indivisible by patch size"):
        vit.VisionTransformer(**dict(TINY, image_size=50))


class _InferenceGraph(engine.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def test_graph_equals_eager(no_init):
    """vit_b_32 for 64-pixel images (2x2 patches): the traced plan's output equals eager execution."""
    model = models.vit_b_32(image_size=64).eval()
    rng = np.random.default_rng(0)
    for p in model.parameters():
        p.detach()._data[...] = rng.standard_normal(tuple(p.shape), dtype=np.float32) * 0.05
    graph = _InferenceGraph(model)
    x = engine.from_numpy(image_batch(2, 64, 64, seed=13))
    with engine.no_grad():
        eager = model(x).numpy()
    assert_close(graph(x).numpy(), eager, 1e-5, what="graph vit_b_32")
