"""``grid_sample`` and ``affine_grid`` against torch: every mode, padding and corner alignment, values and the
gradients of input, grid and theta, points outside the image, torch's errors, the GPU (emulated here), and a
spatial transformer trained a few steps."""
import itertools
import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from op_check import assert_close, check_op

import engine
import engine.nn.functional as F


def _randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _grid(*shape, seed=1):
    """Points in [-1.3, 1.3]: some outside the image, so every padding mode matters."""
    return np.random.default_rng(seed).uniform(-1.3, 1.3, shape).astype(np.float32)


@pytest.mark.parametrize("mode,padding,align_corners",
                         list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"],
                                                [False, True])))
def test_grid_sample_matches_torch(mode, padding, align_corners):
    args = dict(mode=mode, padding_mode=padding, align_corners=align_corners)
    check_op(lambda x, g: F.grid_sample(x, g, **args), lambda x, g: TF.grid_sample(x, g, **args),
             [_randn(2, 3, 5, 7), _grid(2, 4, 6, 2)], rtol=1e-5)


def test_grid_sample_at_pixel_centres_and_edges():
    """On a grid of exact pixel positions bilinear sampling reads the pixels; on the edges, each padding mode's
    rule decides (x = +-1 with align_corners, half a pixel outside without)."""
    x = _randn(1, 2, 4, 5)
    for align_corners in (False, True):
        for padding in ("zeros", "border", "reflection"):
            for lib, fn in ((engine, F), (torch, TF)):
                theta = lib.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
                grid = fn.affine_grid(theta, (1, 2, 4, 5), align_corners=align_corners)
                out = fn.grid_sample(lib.from_numpy(x), grid, padding_mode=padding, align_corners=align_corners)
                np.testing.assert_allclose(out.numpy(), x, atol=1e-6)
    edges = np.array([[[[-1.0, -1.0], [1.0, 1.0], [-1.1, 0.3], [1.2, -0.9]]]], np.float32)
    for padding in ("zeros", "border", "reflection"):
        check_op(lambda a, g: F.grid_sample(a, g, padding_mode=padding, align_corners=False),
                 lambda a, g: TF.grid_sample(a, g, padding_mode=padding, align_corners=False), [x[:, :, :, :], edges])


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 5, 7), (3, 1, 1, 4), (1, 2, 6, 1)])
def test_affine_grid_matches_torch(size, align_corners):
    """Unit sizes with align_corners get torch's warning, from both."""
    theta = _randn(size[0], 2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_op(lambda t: F.affine_grid(t, size, align_corners=align_corners),
                 lambda t: TF.affine_grid(t, size, align_corners=align_corners), [theta])
    unit_size = [str(w.message).startswith("Since version 1.3.0, affine_grid") for w in caught]
    assert unit_size == ([True, True] if align_corners and min(size[2:]) == 1 else [])


def test_spatial_transformer_steps_match_torch():
    """A localisation net predicts theta, affine_grid + grid_sample warp the image, a loss on the warp trains
    both: 3 SGD steps give torch's losses and parameters."""
    def build(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(2 * 6 * 6, 6))
    theirs, ours = build(torch), build(engine)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    results = []
    for lib, fn, net in ((torch, TF, theirs), (engine, F, ours)):
        optimizer = lib.optim.SGD(net.parameters(), lr=0.05)
        losses = []
        for step in range(3):
            x = lib.from_numpy(_randn(4, 2, 6, 6, seed=step))
            theta = net(x).reshape(4, 2, 3) + lib.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
            warped = fn.grid_sample(x, fn.affine_grid(theta, (4, 2, 6, 6), align_corners=False), align_corners=False)
            loss = (warped - x.flip(-1)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        results.append((losses, [p.detach().numpy() for p in net.parameters()]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    for ours_p, theirs_p in zip(results[1][1], results[0][1]):
        assert_close(ours_p, theirs_p, 1e-5, "parameter")


def test_torch_s_errors_and_warning():
    x, grid = engine.from_numpy(_randn(1, 1, 3, 3)), engine.from_numpy(_grid(1, 2, 2, 2))
    t_x, t_grid = torch.from_numpy(_randn(1, 1, 3, 3)), torch.from_numpy(_grid(1, 2, 2, 2))
    calls = [lambda fn, a, g: fn.grid_sample(a, g[..., :1], align_corners=False),
             lambda fn, a, g: fn.grid_sample(a, g, mode="foo", align_corners=False),
             lambda fn, a, g: fn.grid_sample(a, g, padding_mode="foo", align_corners=False),
             lambda fn, a, g: fn.grid_sample(a, g.repeat(2, 1, 1, 1), align_corners=False),
             lambda fn, a, g: fn.grid_sample(a, g.double(), align_corners=False),
             lambda fn, a, g: fn.affine_grid(g[:, :1, :1, :1].reshape(1, 1, 1), (1, 1, 3, 3), align_corners=False),
             lambda fn, a, g: fn.affine_grid(g.reshape(1, 2, 4)[..., :3], (1, 1, 3), align_corners=False)]
    for call in calls:
        with pytest.raises(Exception) as theirs:
            call(TF, t_x, t_grid)
        with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value).split(" Got ")[0])):
            call(F, x, grid)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has changed"):
        F.grid_sample(x, grid)
    with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):  # a 5-D input is 3-D
        F.grid_sample(x.reshape(1, 1, 1, 3, 3), grid.reshape(1, 1, 2, 2, 2), align_corners=False)


def test_under_autocast_as_torch():
    """CPU autocast runs grid_sample in float32 (torch's list); affine_grid's product is cast (bfloat16)."""
    x, grid = _randn(1, 2, 4, 4), _grid(1, 3, 3, 2)
    for lib, fn in ((engine, F), (torch, TF)):
        with lib.autocast("cpu"):
            out = fn.grid_sample(lib.from_numpy(x).bfloat16(), lib.from_numpy(grid).bfloat16(), align_corners=False)
            warp = fn.affine_grid(lib.ones(1, 2, 3), (1, 1, 2, 2), align_corners=False)
        assert out.dtype == lib.float32 and warp.dtype == lib.bfloat16


def test_on_the_gpu(cuda):
    args = dict(mode="bilinear", padding_mode="reflection", align_corners=False)
    check_op(lambda x, g: F.grid_sample(x, g, **args), lambda x, g: TF.grid_sample(x, g, **args),
             [_randn(2, 3, 5, 7), _grid(2, 4, 6, 2)], rtol=1e-5, device="cuda")
    check_op(lambda t: F.affine_grid(t, (2, 3, 5, 4), align_corners=True),
             lambda t: TF.affine_grid(t, (2, 3, 5, 4), align_corners=True), [_randn(2, 2, 3)], device="cuda")


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_of_nothing(mode):
    """An empty batch or an empty grid gives torch's empty result and gradients."""
    for x_shape, grid_shape in (((0, 3, 5, 6), (0, 4, 7, 2)), ((2, 3, 5, 6), (2, 0, 7, 2))):
        shapes = []
        for lib, fn in ((torch, TF), (engine, F)):
            x, grid = lib.zeros(*x_shape).requires_grad_(), lib.zeros(*grid_shape).requires_grad_()
            y = fn.grid_sample(x, grid, mode=mode, align_corners=False)
            y.sum().backward()
            shapes.append((tuple(y.shape), tuple(x.grad.shape), tuple(grid.grad.shape)))
        assert shapes[0] == shapes[1]
