"""drop_block2d / drop_block3d and their modules against torchvision under the same seed: our RNG draws
torch's Bernoulli stream, so the dropped blocks, the rescaling and the gradients must all be equal."""
import numpy as np
import pytest
import torch
import torchvision
from op_check import assert_close

import engine
from flowvision import ops

rng = np.random.default_rng(0)


def _both(fn_name, x, seed, *args, **kwargs):
    """Our and torchvision's output and input gradient, each drawn after manual_seed(seed)."""
    ours_in = engine.from_numpy(x.copy()).requires_grad_()
    theirs_in = torch.from_numpy(x.copy()).requires_grad_()
    engine.manual_seed(seed)
    ours = getattr(ops, fn_name)(ours_in, *args, **kwargs)
    torch.manual_seed(seed)
    theirs = getattr(torchvision.ops, fn_name)(theirs_in, *args, **kwargs)
    g = rng.standard_normal(x.shape).astype(x.dtype)
    ours.backward(engine.from_numpy(g))
    theirs.backward(torch.from_numpy(g))
    return ours.detach().numpy(), theirs.detach().numpy(), ours_in.grad.numpy(), theirs_in.grad.numpy()


@pytest.mark.parametrize("fn_name, shape, p, block_size", [
    ("drop_block2d", (3, 4, 17, 13), 0.2, 3),
    ("drop_block2d", (2, 3, 9, 11), 0.6, 5),
    ("drop_block2d", (2, 3, 5, 6), 0.3, 7),       # block larger than the map: clipped to 5
    ("drop_block2d", (2, 2, 4, 6), 0.3, 7),       # clipped to 4: even, rejected
    ("drop_block3d", (2, 3, 7, 8, 9), 0.25, 3),
    ("drop_block3d", (1, 2, 5, 4, 6), 0.5, 9),    # clipped to 4: even, rejected
])
def test_same_blocks_and_scale_as_torchvision(fn_name, shape, p, block_size):
    x = rng.standard_normal(shape).astype(np.float32)
    if min(block_size, *shape[2:]) % 2 == 0:
        for module in (ops, torchvision.ops):
            with pytest.raises(ValueError, match=f"block size should be odd. Got {min(block_size, *shape[2:])} "
                                                 "which is even."):
                getattr(module, fn_name)(engine.from_numpy(x) if module is ops else torch.from_numpy(x), p,
                                         block_size)
        return
    ours, theirs, ours_grad, theirs_grad = _both(fn_name, x, 3, p, block_size)
    assert (ours == 0).any() and (ours != 0).any()
    np.testing.assert_array_equal(ours == 0, theirs == 0)
    assert_close(ours, theirs, rtol=1e-6)
    assert_close(ours_grad, theirs_grad, rtol=1e-6)


def test_blocks_cover_the_fraction_p_on_average():
    engine.manual_seed(0)
    out = ops.drop_block2d(engine.ones(8, 16, 32, 32), 0.3, 5).numpy()
    dropped = (out == 0).mean()
    assert 0.2 < dropped < 0.35
    np.testing.assert_allclose(out[out != 0], out.size / (out != 0).sum(), rtol=1e-4)


@pytest.mark.parametrize("fn_name, shape", [("drop_block2d", (2, 3, 9, 10)), ("drop_block3d", (2, 2, 5, 6, 7))])
def test_inplace_eval_and_zero_p(fn_name, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    ours, theirs = engine.from_numpy(x.copy()), torch.from_numpy(x.copy())
    engine.manual_seed(5)
    out = getattr(ops, fn_name)(ours, 0.4, 3, inplace=True)
    torch.manual_seed(5)
    getattr(torchvision.ops, fn_name)(theirs, 0.4, 3, inplace=True)
    assert out is ours
    assert_close(ours.numpy(), theirs.numpy(), rtol=1e-6)
    t = engine.from_numpy(x)
    assert getattr(ops, fn_name)(t, 0.4, 3, training=False) is t
    assert getattr(ops, fn_name)(t, 0.0, 3) is t


def test_modules_and_errors():
    x = engine.randn(2, 3, 8, 8)
    for ours, theirs in ((ops.DropBlock2d(0.1, 3), torchvision.ops.DropBlock2d(0.1, 3)),
                         (ops.DropBlock3d(0.2, 5, inplace=True), torchvision.ops.DropBlock3d(0.2, 5, inplace=True))):
        assert repr(ours) == repr(theirs)
    layer = ops.DropBlock2d(0.5, 3).eval()
    assert layer(x) is x
    engine.manual_seed(1)
    trained = ops.DropBlock2d(0.5, 3).train()(x)
    engine.manual_seed(1)
    np.testing.assert_array_equal(trained.numpy(), ops.drop_block2d(x, 0.5, 3).numpy())
    with pytest.raises(ValueError, match="drop probability has to be between 0 and 1, but got 1.5."):
        ops.drop_block2d(x, 1.5, 3)
    with pytest.raises(ValueError, match="input should be 4 dimensional. Got 3 dimensions."):
        ops.drop_block2d(x[0], 0.5, 3)
    with pytest.raises(ValueError, match="input should be 5 dimensional. Got 4 dimensions."):
        ops.drop_block3d(x, 0.5, 3)
    with pytest.raises(ValueError, match="block size should be odd. Got 4 which is even."):
        ops.drop_block2d(x, 0.5, 4)


def test_on_cuda(cuda):
    """On the CUDA backend (its own random stream): whole 3 x 3 blocks dropped, the rest rescaled."""
    engine.manual_seed(0)
    x = engine.ones(4, 8, 16, 16, device="cuda")
    out = ops.drop_block2d(x, 0.3, 3)
    assert out.device.type == "cuda"
    values = out.cpu().numpy()
    kept = values != 0
    np.testing.assert_allclose(values[kept], values.size / kept.sum(), rtol=1e-5)
    dropped = ~kept
    assert 0.15 < dropped.mean() < 0.45
    # every dropped element lies in a dropped 3 x 3 block
    padded = np.pad(dropped, [(0, 0), (0, 0), (1, 1), (1, 1)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    full = windows.all(axis=(-1, -2))
    covered = np.lib.stride_tricks.sliding_window_view(np.pad(full, [(0, 0), (0, 0), (1, 1), (1, 1)]), (3, 3),
                                                       axis=(2, 3)).any(axis=(-1, -2))
    assert (covered == dropped).all()
