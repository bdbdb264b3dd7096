"""``engine.signal.windows`` against ``torch.signal.windows``: every window, symmetric and periodic, odd and even
lengths, both float types, and torch's errors."""
import numpy as np
import pytest
import torch
import torch.signal.windows as TW

import engine
import engine.signal.windows as EW

CASES = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}), ("exponential", {"tau": 2.5}),
         ("gaussian", {}), ("gaussian", {"std": 3.2}), ("general_cosine", {"a": [0.46, 0.23, 0.31]}),
         ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}), ("kaiser", {}),
         ("kaiser", {"beta": 3.5}), ("nuttall", {})]


@pytest.mark.parametrize("name, kwargs", CASES)
@pytest.mark.parametrize("sym", [True, False])
def test_windows_as_torch(name, kwargs, sym):
    for M in (0, 1, 2, 7, 10):
        for dtype, rtol in (("float32", 2e-6), ("float64", 1e-12)):
            ours = getattr(EW, name)(M, sym=sym, dtype=getattr(engine, dtype), **kwargs)
            ref = getattr(TW, name)(M, sym=sym, dtype=getattr(torch, dtype), **kwargs)
            assert ours.dtype == getattr(engine, dtype) and tuple(ours.shape) == tuple(ref.shape)
            np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=rtol, atol=rtol)


def test_periodic_exponential_with_a_center():
    np.testing.assert_allclose(EW.exponential(6, center=1.5, sym=False).numpy(),
                               TW.exponential(6, center=1.5, sym=False).numpy(), rtol=2e-6)


@pytest.mark.parametrize("call", [
    lambda lib: lib.gaussian(-1), lambda lib: lib.gaussian(5, std=0), lambda lib: lib.exponential(5, tau=0),
    lambda lib: lib.exponential(5, center=1), lambda lib: lib.kaiser(5, beta=-1),
    lambda lib: lib.general_cosine(5, a=[]), lambda lib: lib.general_cosine(5, a=3)])
def test_errors_as_torch(call):
    with pytest.raises((ValueError, TypeError)) as ref:
        call(TW)
    with pytest.raises(ref.type, match=str(ref.value).replace("(", r"\(")):
        call(EW)


def test_integer_dtype_refused():
    with pytest.raises(ValueError, match="gaussian expects float32 or float64 dtypes, got: engine.int64"):
        EW.gaussian(5, dtype=engine.int64)
    assert engine.signal.windows.hann is EW.hann
