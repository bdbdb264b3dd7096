"""Video models (r3d_18, mc3_18, r2plus1d_18, s3d) against torchvision: initialisation from the same seed,
outputs and gradients on the same weights, train-mode statistics, the timm API, the Kinetics preset and
pretrained loading from a local server."""
import numpy as np
import pytest
import torch
import torchvision
from model_parity import assert_same_init, backward_both, numpy_state, ours_like, skip_random_init, torch_model
from op_check import assert_close
from weights_server import serving_checkpoint

import engine
import flowvision.models as models
from flowvision.models import video
from flowvision.models import weights as W

VIDEO_RESNETS = ["r3d_18", "mc3_18", "r2plus1d_18"]


def _clips(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) for n in VIDEO_RESNETS] + ["s3d"])
def test_same_seed_gives_torchvision_s_weights(name):
    torch.manual_seed(3)
    theirs = getattr(torchvision.models.video, name)()
    engine.manual_seed(3)
    ours = getattr(video, name)()
    assert_same_init(ours, theirs)


@pytest.mark.slow
@pytest.mark.parametrize("name", VIDEO_RESNETS)
def test_video_resnets_forward_and_backward_match_torchvision(name):
    """Odd clip sizes, batch 2, float64, random norm statistics: logits, input and parameter gradients."""
    reference = torch_model(name).double()
    ours = ours_like(name, reference).double()
    theirs_params, our_params = backward_both(reference, ours, _clips(2, 3, 5, 21, 23))
    for key, param in theirs_params.items():
        assert_close(our_params[key].grad.numpy(), param.grad.numpy(), 1e-8, what=f"{key} grad")


@pytest.mark.slow
def test_video_resnet_train_mode_matches_torchvision():
    """Batch statistics of BatchNorm3d in training: the logits and the updated running statistics."""
    reference = torch_model("r2plus1d_18").double().train()
    ours = ours_like("r2plus1d_18", reference).double().train()
    x = _clips(2, 3, 4, 24, 24, seed=1)
    assert_close(ours(engine.from_numpy(x)).detach().numpy(), reference(torch.from_numpy(x)).detach().numpy(), 1e-10)
    expected = numpy_state(reference)
    for key, value in ours.state_dict().items():
        assert_close(value.numpy(), expected[key], 1e-12, what=key)


@pytest.mark.slow
def test_s3d_matches_torchvision():
    """S3D at its smallest clip (14 frames of 224 x 224) in eval mode; its features with gradients on a
    smaller clip."""
    reference = torch_model("s3d")
    ours = ours_like("s3d", reference)
    x = _clips(1, 3, 14, 224, 224).astype(np.float32)
    with torch.no_grad(), engine.no_grad():
        assert_close(ours(engine.from_numpy(x)).numpy(), reference(torch.from_numpy(x)).numpy(), 1e-4)
    reference, ours = reference.features.double(), ours.features.double()
    backward_both(reference, ours, _clips(2, 3, 5, 37, 33))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_timm_api(monkeypatch):
    # only shapes and names are compared: the weights are left undrawn (whatever the memory held, hence the
    # overflow warnings), and the test took 0.9 s instead of 3.1 s (75M weights)
    skip_random_init(monkeypatch)
    engine.manual_seed(0)
    model = video.r3d_18(num_classes=0).eval()
    x = engine.from_numpy(_clips(2, 3, 2, 16, 16).astype(np.float32))
    with engine.no_grad():
        assert tuple(model(x).shape) == (2, 512)
        model.reset_classifier(7)
        assert tuple(model(x).shape) == (2, 7) and model.get_classifier() is model.fc
        assert tuple(model.forward_head(model.forward_features(x), pre_logits=True).shape) == (2, 512)
        grey = models.create_model("mc3_18", in_chans=1, num_classes=5).eval()
        assert tuple(grey(x[:, :1]).shape) == (2, 5)
        maps = models.create_model("r2plus1d_18", features_only=True).eval()(x)
    assert [tuple(m.shape[1:3]) for m in maps] == [(64, 2), (64, 2), (128, 1), (256, 1), (512, 1)]
    s3d = video.s3d(num_classes=0)
    assert isinstance(s3d.classifier, engine.nn.Identity) and s3d.default_cfg["classifier"] == "classifier.1"
    assert models.list_models(module="video_resnet") == ["mc3_18", "r2plus1d_18", "r3d_18"]
    assert {"r3d_18", "s3d"} <= set(models.list_models("*3d*"))
    assert video.R3D_18_Weights.DEFAULT.meta["categories"][:2] == ["abseiling", "air drumming"]


@pytest.mark.parametrize("name", ["r3d_18", "s3d"])
@pytest.mark.parametrize("given", ["uint8", "float32"])
def test_video_preset_matches_torchvision(name, given):
    """Resize without antialiasing, center crop, scale, normalize, (T, C) -> (C, T): uint8 frames round after
    the resize exactly as torchvision's, so the results are equal."""
    frames = np.random.default_rng(2).integers(0, 256, (2, 3, 3, 61, 97)).astype(np.uint8)
    if given == "float32":
        frames = (frames / 255).astype(np.float32)
    theirs = torchvision.models.get_model_weights(name).DEFAULT.transforms()
    ours = W.get_model_weights(name).DEFAULT.transforms()
    for clip in (frames, frames[0]):
        expected = theirs(torch.from_numpy(clip)).numpy()
        got = ours(clip).numpy()
        assert got.shape == expected.shape and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=0, atol=0 if given == "uint8" else 2e-6)
    assert repr(ours).replace("bilinear", "InterpolationMode.BILINEAR") == repr(theirs)
    with pytest.raises(ValueError, match=r"\(T, C, H, W\) clip .* got shape \(3, 61, 97\)"):
        ours(frames[0, 0])


@pytest.mark.slow
def test_pretrained_from_a_local_server(tmp_path, monkeypatch):
    """``pretrained=True`` fetches the Kinetics-400 checkpoint (here a seeded torchvision model served
    locally), checks its hash and loads it; the classifier of another class count is left fresh."""
    # the weights the checkpoint replaces are left undrawn (a missing key fails the strict load; the fresh
    # classifier's values are not looked at): the three models' 33M initial weights are not drawn the exact way
    skip_random_init(monkeypatch)
    reference = torch_model("mc3_18")
    x = _clips(1, 3, 3, 20, 20).astype(np.float32)
    with serving_checkpoint(tmp_path, reference, "mc3_18", "KINETICS400_V1", "mc3_18-a90a0ba3.pth") as (server, _):
        for kwargs in ({"pretrained": True}, {"weights": video.MC3_18_Weights.DEFAULT}):
            model = video.mc3_18(progress=False, **kwargs).eval()
            with torch.no_grad(), engine.no_grad():
                assert_close(model(engine.from_numpy(x)).numpy(), reference(torch.from_numpy(x)).numpy(), 1e-5)
        with pytest.warns(UserWarning, match=r"except the classifier \(fc.bias, fc.weight\).*400 classes"):
            video.mc3_18(weights="KINETICS400_V1", num_classes=10, progress=False)
        grey = video.mc3_18(weights="KINETICS400_V1", in_chans=1, progress=False)  # the 3-d stem's RGB filters summed
        expected = reference.stem[0].weight.sum(1, keepdim=True).detach().numpy()
        assert_close(grey.stem[0].weight.detach().numpy(), expected, 1e-6)
        assert len(server.requests) == 1
