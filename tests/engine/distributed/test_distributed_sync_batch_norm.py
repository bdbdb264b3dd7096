"""nn.SyncBatchNorm on two MPI processes equals torch's BatchNorm2d over the whole batch (both ranks'
samples together): outputs and input gradients of each rank's samples, the running statistics, and
weight and bias gradients whose sum over the ranks is the whole batch's (DistributedDataParallel
averages them). The ranks hold 3 and 2 samples, or 3 and none; two training steps each."""
import os

import numpy as np
import pytest
import torch

from distributed_runner import check_ok, run_ranks
from sync_bn_cases import CASES, CHANNELS, STEPS, affine, rank_arrays


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("sync_bn")
    check_ok(run_ranks("rank_sync_batch_norm.py", out))
    return [dict(np.load(os.path.join(out, f"rank{r}.npz"))) for r in range(2)]


def _close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_equals_batch_norm_over_the_whole_batch(ranks, case):
    weight, bias = affine()
    reference = torch.nn.BatchNorm2d(CHANNELS)
    with torch.no_grad():
        reference.weight.copy_(torch.from_numpy(weight))
        reference.bias.copy_(torch.from_numpy(bias))
    counts = CASES[case]
    for step in range(STEPS):
        parts = [rank_arrays(case, r, step) for r in range(2)]
        x = torch.tensor(np.concatenate([p[0] for p in parts]), requires_grad=True)
        reference.zero_grad()
        out = reference(x)
        (out * torch.from_numpy(np.concatenate([p[1] for p in parts]))).sum().backward()
        bounds = np.cumsum((0,) + counts)
        prefix = f"{case}/{step}/"
        for r in range(2):
            lo, hi = bounds[r], bounds[r + 1]
            _close(ranks[r][prefix + "out"], out.detach().numpy()[lo:hi])
            _close(ranks[r][prefix + "input_grad"], x.grad.numpy()[lo:hi])
            _close(ranks[r][prefix + "running_mean"], reference.running_mean.numpy())
            _close(ranks[r][prefix + "running_var"], reference.running_var.numpy())
            assert int(ranks[r][prefix + "num_batches_tracked"]) == step + 1
        _close(ranks[0][prefix + "weight_grad"] + ranks[1][prefix + "weight_grad"], reference.weight.grad.numpy())
        _close(ranks[0][prefix + "bias_grad"] + ranks[1][prefix + "bias_grad"], reference.bias.grad.numpy())
