"""The CPU's erfinv (``normal_quantile``, AS 241, which needs no SciPy): torch's values, also where SciPy is missing,
so that the zoo's truncated normal initialisation builds on an install without SciPy (not a dependency)."""
import sys

import numpy as np
import pytest
import torch

import engine
from engine.ops import normal_quantile

pytestmark = pytest.mark.slow  # importing timm takes seconds


@pytest.fixture
def no_scipy(monkeypatch):
    for name in ("scipy", "scipy.special"):
        monkeypatch.setitem(sys.modules, name, None)


def _inputs(dtype):
    rng = np.random.default_rng(11)
    edges = [0.0, -0.0, 0.85, -0.85, 0.8500001, 0.999999, -0.9999999, 1 - 2.0 ** -24, 1e-30, 1.0, -1.0, 1.5, np.nan]
    return np.concatenate([rng.uniform(-1, 1, 20001), np.array(edges)]).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_erfinv_gives_torchs_values_without_scipy(no_scipy, dtype):
    with pytest.raises(RuntimeError, match="needs scipy"):
        engine.special.erfcx(engine.zeros(1))
    values = _inputs(np.float64)
    ours = engine.erfinv(engine.from_numpy(values).to(getattr(engine, dtype))).double().numpy()
    theirs = torch.erfinv(torch.from_numpy(values).to(getattr(torch, dtype))).double().numpy()
    mismatched = ~((ours == theirs) | (np.isnan(ours) & np.isnan(theirs)))
    if dtype == "float64":  # MKL's float64 values and AS 241's differ by a few ulp
        np.testing.assert_allclose(ours, theirs, rtol=2e-15, atol=0)
    else:  # torch's float32 values are MKL's, correctly rounded but for ~0.03% near a rounding boundary
        assert mismatched.mean() < 1e-3
        np.testing.assert_allclose(ours, theirs, rtol=1e-2 if dtype in ("float16", "bfloat16") else 2e-7)
    assert np.signbit(ours[values == 0]).tolist() == np.signbit(values[values == 0]).tolist()


@pytest.mark.parametrize("shape", [(0,), (2, 0, 3), ()])
def test_empty_and_zero_dim_inputs(shape):
    values = np.full(shape, 0.5, np.float32)
    ours = engine.erfinv(engine.from_numpy(values))
    assert tuple(ours.shape) == shape
    np.testing.assert_array_equal(ours.numpy(), torch.erfinv(torch.from_numpy(values)).numpy())


def test_as241_matches_scipy():
    special = pytest.importorskip("scipy.special")
    values = _inputs(np.float64)
    np.testing.assert_allclose(normal_quantile.erfinv(values), special.erfinv(values), rtol=1e-15, atol=0)


def test_trunc_normal_initialisation_without_scipy(no_scipy):
    timm_layers = pytest.importorskip("timm.layers")
    from flowvision.models.timm_families import _layers
    torch.manual_seed(3)
    engine.manual_seed(3)
    ours = _layers.trunc_normal_(engine.empty(64, 33), std=0.02).numpy()
    theirs = timm_layers.trunc_normal_(torch.empty(64, 33), std=0.02).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)
