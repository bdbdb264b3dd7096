"""Video Swin Transformer (swin3d_t, swin3d_s, swin3d_b) against torchvision: initialisation from the same seed
bit for bit, the structure of every variant, float64 outputs and gradients on clips that need padding, shrunk
windows and shifts along every axis, train mode (stochastic depth and dropout draw torch's masks from the same
seed), the timm API and loading a checkpoint by its weights tag."""
import numpy as np
import pytest
import torch
import torchvision
from model_parity import assert_same_init, backward_both, build_without_draws, numpy_state, skip_random_init
from op_check import assert_close
from weights_server import serving_checkpoint

import engine
import flowvision.models as models
from flowvision.models.video import swin3d

pytestmark = pytest.mark.usefixtures("one_thread")  # one BLAS thread each (see the fixture)

VARIANTS = {"swin3d_t": 768, "swin3d_s": 768, "swin3d_b": 1024}
SMALL = dict(patch_size=[1, 2, 2], embed_dim=12, depths=[2, 2], num_heads=[2, 4], window_size=[2, 3, 3],
             stochastic_depth_prob=0.2)


@pytest.fixture
def windows_seen(monkeypatch):
    """The (window, shift) pairs every attention call used, recorded around ``shifted_window_attention_3d``."""
    seen = set()
    attend = swin3d.shifted_window_attention_3d

    def recording(input, qkv_weight, proj_weight, bias, window_size, num_heads, shift_size, **kwargs):
        seen.add((tuple(window_size), tuple(shift_size)))
        return attend(input, qkv_weight, proj_weight, bias, window_size, num_heads, shift_size, **kwargs)

    monkeypatch.setattr(swin3d, "shifted_window_attention_3d", recording)
    return seen


def _clips(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _randomize_layer_norms(model, seed):
    """Random LayerNorm affine parameters (the default ones hide a wrong axis)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
    return model


def _float64_pair(reference, ours):
    """Random LayerNorms in ``reference``, its weights loaded into ``ours``, both float64 and in eval mode."""
    _randomize_layer_norms(reference, 1)
    ours.load_state_dict(numpy_state(reference))
    return reference.double().eval(), ours.double().eval()


def _backward_matches(reference, ours, x):
    """Outputs to 1e-10, input gradients to 1e-9 (``backward_both``) and parameter gradients to 1e-8."""
    reference.zero_grad(set_to_none=True)
    ours.zero_grad(set_to_none=True)
    theirs_params, our_params = backward_both(reference, ours, x)
    for key, param in theirs_params.items():
        assert_close(our_params[key].grad.numpy(), param.grad.numpy(), 1e-8, what=f"{key} grad")


def test_small_configuration_matches_torchvision(windows_seen):
    """A two-stage model with 2 x 3 x 3 windows, from the same seed: the same weights; then forward and backward on
    a clip whose token maps exceed the window along every axis (padded and shifted along all three) and on a
    one-frame clip (the window shrinks to one frame, its bias taken from the full window's index)."""
    torch.manual_seed(7)
    theirs = torchvision.models.video.SwinTransformer3d(num_classes=5, **SMALL)
    engine.manual_seed(7)
    ours = swin3d.SwinTransformer3d(num_classes=5, **SMALL)
    assert_same_init(ours, theirs)
    reference, ours = _float64_pair(theirs, ours)
    for shape in [(2, 3, 5, 13, 15), (1, 3, 1, 13, 15)]:
        _backward_matches(reference, ours, _clips(*shape))
    assert ((2, 3, 3), (1, 1, 1)) in windows_seen
    assert ((1, 3, 3), (0, 1, 1)) in windows_seen


@pytest.mark.slow
def test_same_seed_gives_torchvision_s_weights():
    torch.manual_seed(3)
    theirs = torchvision.models.video.swin3d_t()
    engine.manual_seed(3)
    ours = swin3d.swin3d_t()
    assert_same_init(ours, theirs)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(VARIANTS))
def test_structure_matches_torchvision(name, no_init):
    """Every variant, built without initialising (torchvision's on the meta device): printout, state_dict keys,
    shapes and dtypes, so torchvision's checkpoints load."""
    with torch.device("meta"):
        theirs = getattr(torchvision.models.video, name)()
    ours = getattr(swin3d, name)()
    assert repr(ours) == repr(theirs)
    expected = theirs.state_dict()
    state = ours.state_dict()
    assert list(state) == list(expected)
    for key, value in expected.items():
        assert tuple(state[key].shape) == tuple(value.shape), key
        assert str(state[key].dtype).split(".")[-1] == str(value.dtype).split(".")[-1], key


@pytest.fixture(scope="module")
def swin3d_t_pair():
    """torchvision's swin3d_t (seeded, random LayerNorms) and ours with its weights, both float64 in eval mode."""
    torch.manual_seed(0)
    return _float64_pair(torchvision.models.video.swin3d_t(), build_without_draws(swin3d.swin3d_t))


@pytest.mark.slow
@pytest.mark.parametrize("shape, windows", [
    ((2, 3, 3, 37, 45), {((2, 7, 7), (0, 3, 3)), ((2, 5, 6), (0, 0, 0)), ((2, 3, 3), (0, 0, 0))}),
    ((1, 3, 18, 30, 30), {((8, 7, 7), (4, 3, 3)), ((8, 4, 4), (4, 0, 0)), ((8, 2, 2), (4, 0, 0))}),
])
def test_swin3d_t_forward_and_backward_match_torchvision(swin3d_t_pair, windows_seen, shape, windows):
    """Odd clips, float64: 37 x 45 pads the patches and the windows, shifts in space only and shrinks the later
    windows to the map; 18 frames give 9 token frames, more than a window, so windows shift in time too."""
    reference, ours = swin3d_t_pair
    _backward_matches(reference, ours, _clips(*shape))
    assert windows <= windows_seen


@pytest.mark.slow
def test_train_mode_draws_torch_s_masks(swin3d_t_pair):
    """Stochastic depth (raised to 0.5) and dropout (0.2) in training: from equal seeds, both draw the same masks,
    so the outputs and gradients agree; the masks change the output."""
    reference, ours = swin3d_t_pair
    for model in (reference, ours):
        for m in model.modules():
            if type(m).__name__ == "StochasticDepth":
                m.p = 0.5
            elif type(m).__name__ == "Dropout":
                m.p = 0.2
    x = _clips(4, 3, 3, 37, 45, seed=1)
    with torch.no_grad(), engine.no_grad():
        evaluated = ours(engine.from_numpy(x)).numpy()
    torch.manual_seed(11)
    engine.manual_seed(11)
    try:
        _backward_matches(reference.train(), ours.train(), x)
        trained = ours(engine.from_numpy(x)).detach().numpy()
    finally:
        reference.eval()
        ours.eval()
    assert np.abs(trained - evaluated).max() > 1e-3


@pytest.mark.slow
def test_timm_api(no_init):
    """Pooled features of each variant's width with ``num_classes=0``, a fresh head, one input channel, the
    stages as features, the registry and the weights."""
    x = engine.from_numpy(_clips(2, 3, 3, 40, 36).astype(np.float32))
    with engine.no_grad():
        for name, width in VARIANTS.items():
            model = models.create_model(name, num_classes=0).eval()
            assert isinstance(model.get_classifier(), engine.nn.Identity)
            assert tuple(model(x).shape) == (2, width)
            model.reset_classifier(7)
            assert tuple(model(x).shape) == (2, 7) and model.get_classifier() is model.head
            features = model.forward_features(x)
            assert tuple(features.shape) == (2, 2, 2, 2, width)
            assert tuple(model.forward_head(features, pre_logits=True).shape) == (2, width)
        grey = models.create_model("swin3d_t", in_chans=1, num_classes=5).eval()
        assert tuple(grey.patch_embed.proj.weight.shape) == (96, 1, 2, 4, 4)
        assert tuple(grey(x[:, :1]).shape) == (2, 5)
        maps = models.create_model("swin3d_t", features_only=True).eval()(x)
    assert [tuple(m.shape[1:]) for m in maps] == [(2, 10, 9, 96), (2, 5, 5, 192), (2, 3, 3, 384), (2, 2, 2, 768)]
    assert grey.default_cfg == {"first_conv": "patch_embed.proj", "classifier": "head"}
    assert models.list_models("swin3d*") == ["swin3d_b", "swin3d_s", "swin3d_t"]
    assert [w.name for w in models.get_model_weights("swin3d_b")] == ["KINETICS400_V1", "KINETICS400_IMAGENET22K_V1"]
    doc = models.model_entrypoint("swin3d_t").__doc__
    assert 'Family: Video Swin Transformer (Liu et al., "Video Swin Transformer", 2022)' in doc
    assert "``pretrained=True`` loads KINETICS400_V1" in doc


@pytest.mark.slow
def test_weights_tag_loads_torchvision_s_checkpoint(tmp_path, monkeypatch):
    """``weights="KINETICS400_V1"`` and ``pretrained=True`` fetch the checkpoint (a seeded torchvision swin3d_t
    served locally), check its hash and load it (strictly: every weight): the same logits."""
    # the 28M weights the checkpoint replaces are left undrawn (a missing key fails the strict load): the test
    # took 4.6 s of CPU drawing them twice, 1.8 s so
    skip_random_init(monkeypatch)
    torch.manual_seed(5)
    reference = _randomize_layer_norms(torchvision.models.video.swin3d_t(), 5).eval()
    x = _clips(1, 3, 4, 32, 32).astype(np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    with serving_checkpoint(tmp_path, reference, "swin3d_t", "KINETICS400_V1", "swin3d_t-7615ae03.pth") as (server, _):
        for kwargs in ({"weights": "KINETICS400_V1"}, {"pretrained": True}):
            model = swin3d.swin3d_t(progress=False, **kwargs).eval()
            with engine.no_grad():
                assert_close(model(engine.from_numpy(x)).numpy(), expected, 1e-5)
        assert len(server.requests) == 1
