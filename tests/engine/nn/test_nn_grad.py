"""``engine.nn.grad``'s convolution gradients against ``torch.nn.grad`` on the same tensors."""
import numpy as np
import pytest
import torch

import engine
import engine.nn.grad as grad_ours

CASES = [  # nd, input shape, weight shape, stride, padding, dilation, groups
    (1, (2, 4, 11), (6, 2, 3), 2, 1, 1, 2),
    (2, (2, 3, 9, 7), (5, 3, 3, 2), (2, 1), (1, 0), (1, 2), 1),
    (2, (3, 4, 8, 8), (4, 1, 3, 3), 1, 1, 1, 4),
    (3, (1, 2, 5, 6, 4), (3, 2, 2, 3, 2), 1, (1, 0, 1), 1, 1),
]


@pytest.mark.parametrize("nd, in_shape, w_shape, stride, padding, dilation, groups", CASES)
def test_conv_input_and_weight_gradients_as_torch(nd, in_shape, w_shape, stride, padding, dilation, groups):
    rng = np.random.default_rng(nd)
    x, w = rng.standard_normal(in_shape), rng.standard_normal(w_shape)
    conv = getattr(torch.nn.functional, f"conv{nd}d")
    gy = rng.standard_normal(conv(torch.tensor(x), torch.tensor(w), None, stride, padding, dilation, groups).shape)
    args = (stride, padding, dilation, groups)
    ours_in = getattr(grad_ours, f"conv{nd}d_input")(in_shape, engine.tensor(w), engine.tensor(gy), *args)
    ref_in = getattr(torch.nn.grad, f"conv{nd}d_input")(in_shape, torch.tensor(w), torch.tensor(gy), *args)
    ours_w = getattr(grad_ours, f"conv{nd}d_weight")(engine.tensor(x), w_shape, engine.tensor(gy), *args)
    ref_w = getattr(torch.nn.grad, f"conv{nd}d_weight")(torch.tensor(x), w_shape, torch.tensor(gy), *args)
    np.testing.assert_allclose(ours_in.numpy(), ref_in.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours_w.numpy(), ref_w.numpy(), rtol=1e-10, atol=1e-12)
    assert not ours_in.requires_grad and not ours_w.requires_grad


def test_reachable_as_torch_nn_grad():
    assert engine.nn.grad.conv2d_input is grad_ours.conv2d_input
    assert engine.nn.functional.grad is engine.nn.grad
