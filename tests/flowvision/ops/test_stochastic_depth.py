"""stochastic_depth / StochasticDepth and channel_shuffle against torchvision and PyTorch."""
import numpy as np
import pytest
import torch
import torchvision
from op_check import check_op

import engine
from flowvision import ops


@pytest.mark.parametrize("mode", ["row", "batch"])
def test_stochastic_depth_drops_whole_rows_or_the_batch_and_rescales(mode):
    engine.manual_seed(0)
    x = engine.ones(400, 3, 2, requires_grad=True)
    y = ops.stochastic_depth(x, 0.25, mode, training=True)
    values = y.detach().numpy()
    per_row = values.reshape(400, -1)
    assert set(np.unique(values).tolist()) <= {0.0, float(np.float32(1) / np.float32(0.75))}
    assert (per_row == per_row[:, :1]).all()  # a row is kept or dropped whole
    if mode == "batch":
        assert len(np.unique(values)) == 1
    else:
        assert 0.6 < (per_row[:, 0] > 0).mean() < 0.9
    y.sum().backward()
    assert np.array_equal(x.grad.numpy(), values)


def test_stochastic_depth_identity_and_errors():
    x = engine.randn(3, 4)
    assert ops.stochastic_depth(x, 0.5, "row", training=False) is x
    assert ops.stochastic_depth(x, 0.0, "batch") is x
    assert float(ops.stochastic_depth(x, 1.0, "row").abs().sum()) == 0.0
    with pytest.raises(ValueError, match="drop probability has to be between 0 and 1, but got 1.5"):
        ops.stochastic_depth(x, 1.5, "row")
    with pytest.raises(ValueError, match="mode has to be either 'batch' or 'row', but got col"):
        ops.stochastic_depth(x, 0.5, "col")
    layer = ops.StochasticDepth(0.1, "row")
    assert repr(layer) == repr(torchvision.ops.StochasticDepth(0.1, "row"))
    assert layer.eval()(x) is x


@pytest.mark.parametrize("shape, groups", [((2, 6, 3, 5), 3), ((1, 8, 4), 2), ((3, 4, 2, 2, 3), 4)])
def test_channel_shuffle(shape, groups):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    check_op(lambda a: engine.channel_shuffle(a, groups), lambda a: torch.channel_shuffle(a, groups), [x])
    check_op(lambda a: engine.nn.ChannelShuffle(groups)(a), lambda a: torch.nn.ChannelShuffle(groups)(a), [x])
    assert repr(engine.nn.ChannelShuffle(groups)) == repr(torch.nn.ChannelShuffle(groups))


def test_channel_shuffle_errors():
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 5 channels and 2 groups."):
        engine.nn.functional.channel_shuffle(engine.zeros(1, 5, 2), 2)
    with pytest.raises(RuntimeError, match=r"channel_shuffle expects input with > 2 dims, but got input with "
                                           r"sizes \[4, 2\]"):
        engine.nn.functional.channel_shuffle(engine.zeros(4, 2), 2)
