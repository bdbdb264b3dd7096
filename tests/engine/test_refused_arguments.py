"""Arguments torch refuses where the engine took them silently: negative isclose/allclose tolerances, float sizes
given to the factories (which int() truncated)."""
import pytest
import torch
from op_check import assert_same_error

import engine


@pytest.mark.parametrize("name", ["rtol", "atol"])
def test_negative_tolerances_refused(name):
    for fn in ("isclose", "allclose"):
        assert_same_error(lambda: getattr(engine, fn)(engine.ones(2), engine.ones(2), **{name: -1.0}),
                          lambda: getattr(torch, fn)(torch.ones(2), torch.ones(2), **{name: -1.0}))


@pytest.mark.parametrize("sizes", [(2.0,), (2, 3.0), ((2, 3.5),)])
def test_factories_refuse_float_sizes(sizes):
    for fn in ("zeros", "ones", "empty"):
        with pytest.raises(TypeError, match="must be tuple of ints"):
            getattr(engine, fn)(*sizes)
        with pytest.raises(TypeError, match="must be tuple of ints"):
            getattr(torch, fn)(*sizes)
