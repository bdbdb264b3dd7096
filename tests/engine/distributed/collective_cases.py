"""The inputs of the collectives test: each rank's tensor for each case, reproducible in any process (the
ranks make them, the test makes them again to compute numpy's answer)."""
import zlib

import numpy as np

DTYPES = ("float32", "float64", "int64")
SHAPES = ((0,), (1,), (7,), (3, 5), (2, 0, 3))
OPS = ("SUM", "AVG", "MAX", "MIN", "PRODUCT")
RANKS = 2


def rank_input(rank, dtype, shape, salt=""):
    """Rank ``rank``'s input of a case: floats in [-2, 2), small integers (their products stay small)."""
    seed = zlib.crc32(f"{rank}|{dtype}|{shape}|{salt}".encode())
    rng = np.random.default_rng(seed)
    if dtype.startswith("float"):
        return rng.uniform(-2, 2, shape).astype(dtype)
    return rng.integers(-3, 4, shape).astype(dtype)


def key(*parts):
    return "|".join(map(str, parts))
