"""RAFT (raft_large, raft_small) against torchvision: initialisation from the same seed, every flow prediction
and the gradients in float64 on the same weights, BatchNorm's training mode, input errors, the OpticalFlow
preset and pretrained loading from a local server."""
import numpy as np
import pytest
import torch
import torchvision
from model_parity import assert_same_init, build_without_draws, numpy_state, randomize_norms
from op_check import assert_close
from PIL import Image
from torchvision.models.optical_flow import raft as tv_raft
from weights_server import serving_checkpoint

import engine
import flowvision.models as models
from flowvision.models import optical_flow
from flowvision.models import weights as W

NAMES = ["raft_small", "raft_large"]
# one BLAS thread each: torch's threads spin against the other side's on the shared 2-core machine (the input
# errors' small forward took 1.2 s in torch with two threads, 9 ms with one)
pytestmark = pytest.mark.usefixtures("one_thread")


def _reference(name, seed=0):
    """torchvision's model, seeded, with random BatchNorm statistics (raft_large's context encoder), in eval mode."""
    torch.manual_seed(seed)
    return randomize_norms(getattr(tv_raft, name)(), seed).eval()


def _ours_like(name, reference):
    model = build_without_draws(getattr(optical_flow, name))
    model.load_state_dict(numpy_state(reference))
    return model.eval()


def _pair(batch, height, width, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, (2, batch, 3, height, width))


@pytest.fixture
def float64_reference(monkeypatch):
    """torchvision's RAFT builds its pixel coordinates in float32 whatever the images' dtype, so its float64
    model fails in grid_sample (ours builds them in the images' dtype): its coordinates are cast here."""
    make_coords_grid = tv_raft.make_coords_grid
    monkeypatch.setattr(tv_raft, "make_coords_grid", lambda *args, **kwargs: make_coords_grid(*args, **kwargs).double())


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_gives_torchvision_s_weights(name):
    torch.manual_seed(3)
    theirs = getattr(tv_raft, name)()
    engine.manual_seed(3)
    ours = getattr(optical_flow, name)()
    assert_same_init(ours, theirs)


@pytest.mark.slow
@pytest.mark.parametrize("name, size", [("raft_small", (128, 136)), ("raft_large", (136, 128))], ids=NAMES)
def test_flows_and_gradients_match_torchvision(float64_reference, name, size):
    """Eval mode, float64, batch 2, the smallest images the 4-level pyramid takes (non-square), 3 updates:
    every flow prediction within 1e-9, then the gradients of the final flow's sum of squares with respect to
    both images and every parameter within 1e-8 (those of biases before an InstanceNorm, zero but for rounding,
    against the largest gradient)."""
    reference = _reference(name).double()
    ours = _ours_like(name, reference).double()
    first, second = _pair(2, *size)
    theirs_images = [torch.from_numpy(x).requires_grad_() for x in (first, second)]
    our_images = [engine.from_numpy(x).requires_grad_() for x in (first, second)]
    expected = reference(*theirs_images, num_flow_updates=3)
    flows = ours(*our_images, num_flow_updates=3)
    assert len(flows) == len(expected) == 3
    for i, (flow, theirs) in enumerate(zip(flows, expected)):
        assert tuple(flow.shape) == (2, 2) + size
        assert_close(flow.detach().numpy(), theirs.detach().numpy(), 1e-9, what=f"flow {i}")
    (expected[-1] ** 2).sum().backward()
    (flows[-1] ** 2).sum().backward()
    theirs_params, our_params = dict(reference.named_parameters()), dict(ours.named_parameters())
    largest = max(p.grad.abs().max().item() for p in theirs_params.values())

    def assert_same_grads(keys):
        for key in keys:
            grad, theirs = our_params[key].grad.numpy(), theirs_params[key].grad.numpy()
            error = np.abs(grad - theirs).max()
            assert error <= 1e-8 * max(np.abs(theirs).max(), 1e-6 * largest), f"grad of {key}: {error:.3g}"
    assert_same_grads(theirs_params)
    for i, (ours_image, theirs_image) in enumerate(zip(our_images, theirs_images)):
        assert_close(ours_image.grad.numpy(), theirs_image.grad.numpy(), 1e-8, what=f"image{i + 1} grad")


@pytest.mark.slow
def test_train_mode_matches_torchvision(float64_reference):
    """raft_large's context encoder normalizes with the batch's statistics in training (its InstanceNorms do
    in both modes; RAFT has no dropout): the flows and the updated running statistics."""
    reference = _reference("raft_large").double().train()
    ours = _ours_like("raft_large", reference).double().train()
    first, second = _pair(2, 128, 128, seed=1)
    expected = reference(torch.from_numpy(first), torch.from_numpy(second), num_flow_updates=2)
    flows = ours(engine.from_numpy(first), engine.from_numpy(second), num_flow_updates=2)
    for i, (flow, theirs) in enumerate(zip(flows, expected)):
        assert_close(flow.detach().numpy(), theirs.detach().numpy(), 1e-9, what=f"flow {i}")
    state = numpy_state(reference)
    for key, value in ours.state_dict().items():
        assert_close(value.numpy(), state[key], 1e-12, what=key)


def test_input_errors_match_torchvision():
    """Sizes that are not multiples of 8, images of two sizes, and images too small for the pyramid (feature maps
    of at least 16 pixels a side: 128) raise torchvision's errors."""
    reference = _reference("raft_small")
    ours = _ours_like("raft_small", reference)
    cases = [((1, 3, 128, 132), (1, 3, 128, 132)), ((1, 3, 128, 128), (1, 3, 128, 136)),
             ((1, 3, 64, 72), (1, 3, 64, 72))]
    for first, second in cases:
        with pytest.raises(ValueError) as theirs, torch.no_grad():
            reference(torch.zeros(first), torch.zeros(second))
        with pytest.raises(ValueError) as error, engine.no_grad():
            ours(engine.zeros(first), engine.zeros(second))
        assert str(error.value) == str(theirs.value).replace("torch.Size", "engine.Size")


@pytest.mark.parametrize("given", ["uint8", "float64"])
def test_optical_flow_preset_matches_torchvision(given):
    """Both images to float32 in [-1, 1], batched or not, from numpy arrays, engine tensors or PIL images."""
    images = np.random.default_rng(2).integers(0, 256, (2, 2, 3, 8, 16)).astype(np.uint8)
    if given == "float64":
        images = images / 255
    theirs = torchvision.models.optical_flow.Raft_Large_Weights.DEFAULT.transforms()
    ours = W.get_model_weights("raft_large").DEFAULT.transforms()
    assert repr(ours) == repr(theirs) == "OpticalFlow()"
    for first, second in ((images[0], images[1]), (images[0, 0], images[1, 1])):
        expected = theirs(torch.from_numpy(first), torch.from_numpy(second))
        for got in (ours(first, second), ours(engine.from_numpy(first), engine.from_numpy(second))):
            for image, reference in zip(got, expected):
                assert image.dtype == engine.float32 and image.is_contiguous()
                np.testing.assert_array_equal(image.numpy(), reference.numpy())
    if given == "uint8":
        pil = [Image.fromarray(np.ascontiguousarray(image.transpose(1, 2, 0))) for image in images[:, 0]]
        expected = theirs(*pil)
        for image, reference in zip(ours(*pil), expected):
            np.testing.assert_array_equal(image.numpy(), reference.numpy())
    with pytest.raises(ValueError, match=r"\(C, H, W\) image or a \(B, C, H, W\) batch, got shape \(8, 16\)"):
        ours(images[0, 0, 0], images[1, 0, 0])


def test_registry_and_weights_api():
    assert models.list_models(module="raft") == ["raft_large", "raft_small"]
    assert models.optical_flow.Raft_Large_Weights.DEFAULT is models.Raft_Large_Weights.C_T_SKHT_V2
    assert models.optical_flow.Raft_Small_Weights.DEFAULT is models.Raft_Small_Weights.C_T_V2
    meta = models.Raft_Small_Weights.C_T_V2.meta
    assert meta["categories"] is None and "num_classes" not in meta and meta["num_params"] == 990162
    assert meta["_metrics"]["Sintel-Train-Finalpass"] == {"epe": 3.2831}
    assert isinstance(models.Raft_Small_Weights.C_T_V2.transforms(), W.OpticalFlow)
    assert W.resolve_weights("raft_large", weights="C_T_V1") is models.Raft_Large_Weights.C_T_V1
    model = models.create_model("raft_small")
    assert sum(p.numel() for p in model.parameters()) == meta["num_params"]


@pytest.mark.slow
def test_pretrained_from_a_local_server(tmp_path):
    """``pretrained=True`` fetches the legacy weights (torchvision's: C_T_V2 for raft_small, here a seeded
    torchvision model served locally), checks the hash and loads them: the same flows as torchvision's."""
    reference = _reference("raft_small", seed=5)
    first, second = _pair(1, 128, 128, seed=3).astype(np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(first), torch.from_numpy(second), num_flow_updates=2)[-1].numpy()
    with serving_checkpoint(tmp_path, reference, "raft_small", "C_T_V2", "raft_small_C_T_V2-01064c6d.pth") as (
            server, _):
        for kwargs in ({"pretrained": True}, {"weights": optical_flow.Raft_Small_Weights.DEFAULT}):
            model = optical_flow.raft_small(progress=False, **kwargs).eval()
            state = numpy_state(reference)
            assert all(np.array_equal(v.numpy(), state[k]) for k, v in model.state_dict().items())
        with engine.no_grad():
            flow = model(engine.from_numpy(first), engine.from_numpy(second), num_flow_updates=2)[-1].numpy()
        assert_close(flow, expected, 1e-4)
        assert len(server.requests) == 1
