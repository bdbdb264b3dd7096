"""The SyncBatchNorm cases: each rank's inputs and output-gradient weights (the ranks hold different
numbers of samples, one case none at all), reproducible in any process."""
import numpy as np

CHANNELS = 7
STEPS = 2
#: samples per rank in each case
CASES = {"uneven": (3, 2), "empty_rank": (3, 0)}


def rank_arrays(case, rank, step):
    """(input, output-gradient weights) of ``rank`` at ``step``: (N, 7, 5, 3) float32."""
    rng = np.random.default_rng([sorted(CASES).index(case), rank, step])
    shape = (CASES[case][rank], CHANNELS, 5, 3)
    return (rng.standard_normal(shape).astype(np.float32) * 2 + 0.5,
            rng.standard_normal(shape).astype(np.float32))


def affine():
    """The layer's weight and bias (the same on every rank)."""
    rng = np.random.default_rng(99)
    return rng.uniform(0.5, 1.5, CHANNELS).astype(np.float32), rng.standard_normal(CHANNELS).astype(np.float32)
