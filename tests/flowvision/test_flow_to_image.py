"""flowvision.utils.flow_to_image against torchvision.utils.flow_to_image: the same uint8 image, pixel for
pixel, for single flows and batches, on the CPU and on the CUDA backend."""
import numpy as np
import pytest
import torch
import torchvision.utils

import engine
from flowvision import utils


def _flows(shape, seed):
    """Random flows plus every direction on the wheel's seams: zero, axis-aligned and diagonal vectors."""
    flow = (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)
    seams = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [-1, -1], [-1, 1e-7], [-1, -1e-7]],
                     np.float32).T
    flow.reshape(-1, *shape[-3:])[:, :, 0, :seams.shape[1]] = seams
    return flow


@pytest.mark.parametrize("shape", [(2, 13, 17), (3, 2, 11, 19)])
def test_same_image_as_torchvision(shape):
    flow = _flows(shape, seed=len(shape))
    ours = utils.flow_to_image(engine.from_numpy(flow))
    theirs = torchvision.utils.flow_to_image(torch.from_numpy(flow))
    assert ours.dtype == engine.uint8 and tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_all_zero_flow_is_white():
    flow = np.zeros((2, 4, 5), np.float32)
    np.testing.assert_array_equal(utils.flow_to_image(engine.from_numpy(flow)).numpy(),
                                  torchvision.utils.flow_to_image(torch.from_numpy(flow)).numpy())
    assert (utils.flow_to_image(engine.from_numpy(flow)).numpy() == 255).all()


def test_errors():
    with pytest.raises(ValueError, match="Flow should be of dtype torch.float, got engine.float64."):
        utils.flow_to_image(engine.zeros(2, 3, 3, dtype=engine.float64))
    with pytest.raises(ValueError, match=r"Input flow should have shape \(2, H, W\) or \(N, 2, H, W\), got "
                                         r"\(3, 4, 4\)."):
        utils.flow_to_image(engine.zeros(3, 4, 4))
    with pytest.raises(ValueError, match=r"got \(1, 3, 4, 4\)"):
        utils.flow_to_image(engine.zeros(1, 3, 4, 4))


def test_on_cuda(cuda):
    flow = _flows((2, 2, 9, 12), seed=7)
    ours = utils.flow_to_image(engine.from_numpy(flow).to("cuda"))
    assert ours.device.type == "cuda"
    np.testing.assert_array_equal(ours.cpu().numpy(),
                                  torchvision.utils.flow_to_image(torch.from_numpy(flow)).numpy())
