"""ResNet family parity with torchvision: structure, state_dict, init, eval and train numerics."""
import numpy as np
import pytest
import torch
import torchvision.models as models_torch

import engine
import flowvision.models as models_flow
from model_parity import (eval_outputs, image_batch, numpy_state, ours_like, skip_random_init, to_numpy, torch_model,
                          torchvision_names)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); torch's references on one thread
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

SMALL = ["resnet18", "resnet34", "resnet50", "resnext50_32x4d", "wide_resnet50_2"]
LARGE = ["resnet101", "resnet152", "resnext101_32x8d", "resnext101_64x4d", "wide_resnet101_2"]
TOL = 1e-4


@pytest.fixture
def no_init(monkeypatch):
    """Ours built without drawing initial weights: the tests taking it load every weight from torchvision's."""
    skip_random_init(monkeypatch)


def test_registered_family():
    names = torchvision_names(models_flow.list_models(module="resnet"))
    assert names == sorted(SMALL + LARGE, key=models_flow.registry._natural_key)


def test_migration_path_verbatim(fast_random):  # our initial weights are overwritten: numpy's draws do
    resnet101_torch = models_torch.resnet101()
    resnet101_flow = models_flow.resnet101()
    state_dict_numpy = {k: v.detach().cpu().numpy() for k, v in resnet101_torch.state_dict().items()}
    resnet101_flow.load_state_dict(state_dict_numpy)
    resnet101_torch.eval()
    resnet101_flow.eval()
    out, ref = eval_outputs(resnet101_torch, resnet101_flow, image_batch(1, 64, 64))
    assert_close(out, ref, TOL)


@pytest.mark.parametrize("name", SMALL + LARGE)
def test_state_dict_keys_shapes_order(name, monkeypatch):
    with torch.device("meta"):
        ref = getattr(models_torch, name)().state_dict()
    skip_random_init(monkeypatch)  # only the layout is compared
    ours = getattr(models_flow, name)().state_dict()
    assert list(ours) == list(ref)
    for k in ref:
        assert tuple(ours[k].shape) == tuple(ref[k].shape), k
        assert ours[k].numpy().dtype == torch.empty((), dtype=ref[k].dtype).numpy().dtype, k


def test_module_tree_matches_torchvision(no_init):
    with torch.device("meta"):  # only the layout is compared
        ref = models_torch.resnext50_32x4d(replace_stride_with_dilation=[False, True, True])
    ours = models_flow.resnext50_32x4d(replace_stride_with_dilation=[False, True, True])
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in ref.named_modules()]
    ref_types = [type(m).__name__ for m in ref.modules()]
    assert [type(m).__name__ for m in ours.modules()] == ref_types
    conv = ours.layer4[1].conv2
    assert (conv.dilation, conv.padding, conv.groups) == ((4, 4), (4, 4), 32)


@pytest.mark.parametrize("name", SMALL)
def test_eval_parity(name, no_init):
    tmodel = torch_model(name, seed=1)
    ours = ours_like(name, tmodel)
    # the same strided convolutions and pools on odd maps at 97x113 as at 197x251, and on even ones at 96x128 as
    # at 224x224 (resnet18 keeps one 224 batch): 18.3 s of CPU time to 8.5 s for the five models
    for n, h, w in [(2, 224, 224) if name == "resnet18" else (2, 96, 128), (3, 97, 113)]:
        out, ref = eval_outputs(tmodel, ours, image_batch(n, h, w, seed=h))
        assert out.shape == ref.shape == (n, 1000)
        assert_close(out, ref, TOL, what=f"{name} {n}x{h}x{w}")


@pytest.mark.heavy
@pytest.mark.parametrize("name", LARGE)
def test_eval_parity_large(name, no_init):
    tmodel = torch_model(name, seed=2)
    ours = ours_like(name, tmodel)
    # odd maps down to 3x3 at 67x75 as at 97x113 (15.4 s of CPU time to 9.7 s for the five models)
    out, ref = eval_outputs(tmodel, ours, image_batch(2, 67, 75, seed=3))
    assert_close(out, ref, TOL, what=name)


def _train_step_both(name, x, seed, double=False):
    """One train-mode forward/backward on both sides with a fixed random projection as the loss."""
    tmodel = torch_model(name, seed=seed).train()
    ours = ours_like(name, tmodel).train()
    if double:
        tmodel, ours, x = tmodel.double(), ours.double(), x.astype(np.float64)
    proj = np.random.default_rng(seed).standard_normal((x.shape[0], 1000)).astype(x.dtype)
    xt = torch.from_numpy(x).requires_grad_()
    ref = tmodel(xt)
    (ref * torch.from_numpy(proj)).sum().backward()
    xo = engine.from_numpy(x.copy()).requires_grad_()
    out = ours(xo)
    (out * engine.from_numpy(proj)).sum().backward()
    return tmodel, ours, (xt, ref), (xo, out)


@pytest.mark.parametrize("name", SMALL)
def test_train_forward_and_running_stats(name, no_init):
    tmodel, ours, (_, ref), (_, out) = _train_step_both(name, image_batch(2, 64, 64, seed=5), seed=4)
    assert_close(to_numpy(out), to_numpy(ref), TOL, what="train-mode output")
    ref_state, our_state = numpy_state(tmodel), ours.state_dict()
    for key in ref_state:
        if key.endswith(("running_mean", "running_var", "num_batches_tracked")):
            assert_close(our_state[key].numpy(), ref_state[key], TOL, what=key)


def _assert_grads_close(tmodel, ours, xt, xo, tol, every=1):
    """Input gradient and every ``every``-th parameter gradient agree within ``tol``."""
    assert_close(xo.grad.numpy(), xt.grad.numpy(), tol, what="input grad")
    ref_params = list(tmodel.named_parameters())
    our_params = dict(ours.named_parameters())
    for key, param in ref_params[::every] + ref_params[-2:]:
        assert_close(our_params[key].grad.numpy(), param.grad.numpy(), tol, what=f"grad {key}")


@pytest.mark.parametrize("name", ["resnet18", "resnet50"])
def test_gradients_float64(name):
    """In float64 every gradient agrees to rounding: the backward pass is the same function."""
    tmodel, ours, (xt, _), (xo, _) = _train_step_both(name, image_batch(2, 64, 64, seed=6), seed=7, double=True)
    _assert_grads_close(tmodel, ours, xt, xo, 1e-9)


def test_gradients_float32_resnet18():
    """In float32 too for resnet18 (deeper train-mode nets amplify rounding: torch's own float32
    input gradient for resnet50 here is ~1% off its float64 one, so only float64 is exact there)."""
    tmodel, ours, (xt, _), (xo, _) = _train_step_both("resnet18", image_batch(2, 64, 64, seed=6), seed=7)
    _assert_grads_close(tmodel, ours, xt, xo, 1e-4, every=7)


def _weight_stats(model):
    """(kind, mean, std) of each conv/BN/linear weight and bias, for comparing init distributions."""
    stats = []
    for key, value in model.state_dict().items():
        arr = np.asarray(to_numpy(value), np.float64)
        if arr.dtype.kind == "f" and arr.size > 1:
            stats.append((key, arr.mean(), arr.std()))
    return stats


def test_init_distributions_match(fast_random):  # distributions, not torch's numbers (test_torch_init_parity)
    torch.manual_seed(0)
    ref = _weight_stats(models_torch.resnet50())
    engine.manual_seed(0)
    ours = _weight_stats(models_flow.resnet50())
    assert [k for k, _, _ in ours] == [k for k, _, _ in ref]
    for (k, ref_mean, ref_std), (_, mean, std) in zip(ref, ours):
        if ref_std == 0:  # constants: norm weights, biases and running stats
            assert (mean, std) == (ref_mean, ref_std), k
        else:  # random draws: the same distribution
            assert abs(std - ref_std) <= 0.08 * ref_std, k
            assert abs(mean - ref_mean) <= 0.2 * ref_std, k


def test_kaiming_fan_out_and_norm_init(fast_random):
    model = models_flow.resnet18()
    w = model.layer2[0].conv1.weight.detach().numpy()
    assert abs(w.std() - np.sqrt(2.0 / (w.shape[0] * 9))) < 0.05 * np.sqrt(2.0 / (w.shape[0] * 9))
    assert np.all(model.bn1.weight.detach().numpy() == 1) and np.all(model.bn1.bias.detach().numpy() == 0)
    bound = 1 / np.sqrt(512)
    fc = model.fc.weight.detach().numpy()
    assert np.abs(fc).max() <= bound and np.abs(fc).max() > 0.9 * bound


@pytest.mark.parametrize("name, last", [("resnet18", "bn2"), ("resnet50", "bn3")])
def test_zero_init_residual(name, last, no_init):  # constants only
    model = getattr(models_flow, name)(zero_init_residual=True)
    for layer in (model.layer1, model.layer4):
        for block in layer:
            assert np.all(getattr(block, last).weight.detach().numpy() == 0)
            assert np.all(block.bn1.weight.detach().numpy() == 1)


def test_constructor_arguments(no_init):
    model = models_flow.resnet50(num_classes=10, groups=2, width_per_group=32,
                                 norm_layer=lambda c: engine.nn.BatchNorm2d(c, eps=1e-3))
    with torch.device("meta"):  # only the layout is compared
        ref = models_torch.resnet50(num_classes=10, groups=2, width_per_group=32,
                                    norm_layer=lambda c: torch.nn.BatchNorm2d(c, eps=1e-3))
    assert [(k, tuple(v.shape)) for k, v in model.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]
    assert model.bn1.eps == 1e-3 and model.layer1[0].conv2.groups == 2
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1 and base_width=64"):
        models_flow.resnet18(groups=2)
    with pytest.raises(NotImplementedError, match="Dilation > 1 not supported in BasicBlock"):
        models_flow.resnet18(replace_stride_with_dilation=[False, False, True])
    with pytest.raises(ValueError, match="3-element tuple"):
        models_flow.resnet50(replace_stride_with_dilation=[True])


def test_dilated_parity():
    tmodel = torch_model("resnet50", seed=8, replace_stride_with_dilation=[False, True, True])
    ours = ours_like("resnet50", tmodel, replace_stride_with_dilation=[False, True, True])
    out, ref = eval_outputs(tmodel, ours, image_batch(1, 65, 71, seed=9))
    assert_close(out, ref, TOL)
