"""Sorting, selection, search, set and histogram ops against torch where a differential fuzz found them apart:
which of equal values topk, kthvalue and quantile pick on the CPU (their indices, an unsorted topk's order, the
element a quantile's gradient reaches), searchsorted's and isin's promotion of their operands, empty inputs,
and torch's refusals in torch's order with torch's messages.

Each case is a seeded sample of the sweep (/tmp fuzzers, not kept) that failed before its fix.
"""
import numpy as np
import pytest
import torch

import engine
from op_check import assert_same_error, check_op

pytestmark = pytest.mark.slow

_NAN = np.nan


def _ties(shape, seed, nans=0, low=-2, high=3):
    """Seeded small integers as floats (many equal values), with ``nans`` of them NaN."""
    rng = np.random.default_rng(seed)
    x = rng.integers(low, high, shape).astype(np.float64)
    x.reshape(-1)[rng.permutation(x.size)[:nans]] = _NAN
    return x


def _pair(x, dtype="float64"):
    return engine.from_numpy(x.copy()).to(getattr(engine, dtype)), torch.from_numpy(x.copy()).to(getattr(torch, dtype))


def _same(ours, theirs):
    for o, t in zip(ours, theirs):
        assert str(o.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        if not t.is_complex():
            o, t = o.float(), t.float()
        np.testing.assert_array_equal(o.numpy(), t.numpy())


# ---- which of equal values: torch's CPU selection, replayed ----------------------------------------
@pytest.mark.parametrize("shape, k, dim, largest, sorted_, nans, dtype", [
    ((3, 12), 5, 1, True, True, 0, "float64"),    # nth_element, then a sort of the first k - 1
    ((4, 9), 9, -1, False, True, 2, "float32"),   # k == n, NaN counted largest
    ((5, 7), 4, 0, True, False, 0, "int64"),      # unsorted: the order nth_element leaves
    ((2, 200), 3, 1, False, True, 3, "float64"),  # k * 64 <= n: partial_sort (a heap)
    ((2, 40), 30, 1, True, True, 0, "int16"),     # past 16 elements: introsort
], ids=["nth", "all-nan", "unsorted", "partial-sort", "introsort"])
def test_topk_picks_equal_values_as_torch(shape, k, dim, largest, sorted_, nans, dtype):
    e, t = _pair(_ties(shape, seed=k, nans=nans), dtype)
    _same(engine.topk(e, k, dim, largest, sorted_), torch.topk(t, k, dim, largest, sorted_))


@pytest.mark.parametrize("shape, k, dim, nans", [((6, 11), 4, 1, 0), ((23, 3), 12, 0, 3), ((37,), 30, 0, 2)])
def test_kthvalue_picks_equal_values_as_torch(shape, k, dim, nans):
    """torch's quickselect, also on a transposed (non-contiguous) input."""
    e, t = _pair(_ties(shape, seed=k, nans=nans))
    _same(engine.kthvalue(e, k, dim), torch.kthvalue(t, k, dim))
    if len(shape) == 2:
        _same(engine.kthvalue(e.t(), k, 1 - dim), torch.kthvalue(t.t(), k, 1 - dim))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("name, dim, q, nans", [
    ("quantile", None, 0.41, 0), ("quantile", 1, 0.8, 0), ("nanquantile", None, 0.22, 2),
    ("nanquantile", 0, 0.55, 3), ("quantile", 1, 0.3, 1)])
def test_quantile_gradient_reaches_the_equal_value_torch_picks(name, dim, q, nans, interpolation):
    """nth_element at the upper rank, then at the lower one among those before it."""
    x = _ties((5, 6), seed=int(q * 100), nans=nans)
    check_op(lambda t: getattr(engine, name)(t, q, dim, interpolation=interpolation),
             lambda t: getattr(torch, name)(t, q, dim, interpolation=interpolation), [x])


# ---- searchsorted, isin: promotion and empty inputs ---------------------------------------------------
@pytest.mark.parametrize("boundaries, values", [
    (np.array([1, 2], np.uint8), -2),             # a Python int wraps into uint8, as torch's
    (np.array([1, 2], np.uint8), 1.5),            # a float compares as a float
    (np.array([1, 2], np.int64), np.array([True, False])),
    (np.array([False, True]), np.array([1, 0])),
    (np.zeros((2, 0)), np.zeros((2, 3))),         # no boundaries in a batch
    (np.zeros((1, 5, 0), np.int8), np.zeros((1, 5, 1), np.int8)),
    (np.array([False, True]), np.zeros(0, bool)),  # nothing to search: bool is not refused
    (np.array([1j, 2j], np.complex64), np.zeros(0, np.complex64)),
], ids=["int-wraps", "float-scalar", "bool-values", "bool-boundaries", "empty-batch", "empty-3d", "empty-bool",
        "empty-complex"])
def test_searchsorted_promotes_and_takes_empty_operands(boundaries, values):
    for right in (False, True):
        ours = engine.searchsorted(engine.from_numpy(boundaries), values if np.isscalar(values) else
                                   engine.from_numpy(values), right=right)
        theirs = torch.searchsorted(torch.from_numpy(boundaries), values if np.isscalar(values) else
                                    torch.from_numpy(values), right=right)
        _same([ours], [theirs])


def test_isin_compares_in_the_promoted_dtype():
    _same([engine.isin(engine.tensor([1, 2], dtype=engine.uint8), -254)],
          [torch.isin(torch.tensor([1, 2], dtype=torch.uint8), -254)])


def test_bincount_of_nothing_is_int64_zeros_whatever_the_weights():
    for weights in (np.zeros(2, np.float16), np.zeros(0, np.float32), np.zeros((2, 2))):
        _same([engine.bincount(engine.zeros(0, dtype=engine.int64), engine.from_numpy(weights), minlength=3)],
              [torch.bincount(torch.zeros(0, dtype=torch.int64), torch.from_numpy(weights), minlength=3)])


def test_mode_cummax_cummin_of_no_complex_elements_or_a_0d_one_are_not_refused():
    for fn in (lambda m, x: m.mode(x), lambda m, x: m.cummax(x, 0), lambda m, x: m.cummin(x, -1)):
        for shape in ((0, 2), ()):
            ours = fn(engine, engine.ones(shape, dtype=engine.complex64))
            _same(ours, fn(torch, torch.ones(shape, dtype=torch.complex64)))


# ---- torch's refusals, in torch's order ----------------------------------------------------------------
def _c(m, *shape):
    return m.ones(*shape, dtype=m.complex64)


_ERRORS = {
    "sort-dim-before-complex": lambda m: m.sort(_c(m, 2), dim=3),
    "topk-k-before-complex": lambda m: m.topk(_c(m, 2), 3),
    "kthvalue-k-before-complex": lambda m: m.kthvalue(_c(m, 2), 3),
    "kthvalue-empty-before-complex": lambda m: m.kthvalue(_c(m, 0), 1),
    "unique-dim-complex": lambda m: m.unique(_c(m, 2, 2), dim=0),
    "unique-0d-complex": lambda m: m.unique(m.tensor(1 + 1j), dim=0),
    "unique-consecutive-complex": lambda m: m.unique_consecutive(_c(m, 2)),
    "unique-consecutive-dim-complex": lambda m: m.unique_consecutive(_c(m, 2, 2), dim=1),
    "unique-two-empty-dims": lambda m: m.unique(m.zeros(0, 2, 0), dim=0),
    "unique-consecutive-two-empty-dims": lambda m: m.unique_consecutive(m.zeros(0, 2, 0), dim=2),
    "unique-0d-dim": lambda m: m.unique(m.tensor(3.0), dim=0),
    "unique-consecutive-0d-dim": lambda m: m.unique_consecutive(m.tensor(3.0), dim=-1),
    "cummax-0d-dim": lambda m: m.cummax(m.tensor(1.0), 3),
    "cummin-dim-before-complex": lambda m: m.cummin(_c(m, 2, 3), 3),
    "isin-complex": lambda m: m.isin(_c(m, 2), m.ones(2)),
    "isin-complex-test": lambda m: m.isin(m.ones(2), _c(m, 2)),
    "isin-python-complex": lambda m: m.isin(m.ones(2), 1j),
    "nanmedian-complex": lambda m: m.nanmedian(_c(m, 3)),
    "nanmedian-dim-complex": lambda m: m.nanmedian(_c(m, 3), 0),
    "mode-empty-before-complex": lambda m: m.mode(_c(m, 0)),
    "mode-complex": lambda m: m.mode(_c(m, 3)),
    "searchsorted-bool": lambda m: m.searchsorted(m.tensor([False, True]), m.tensor([True])),
    "searchsorted-scalar-2d": lambda m: m.searchsorted(m.zeros(1, 4), m.zeros(())),
    "searchsorted-sorter-dtype": lambda m: m.searchsorted(m.tensor([3.0, 1.0]), m.tensor([2.0]),
                                                          sorter=m.tensor([1, 0], dtype=m.int32)),
    "searchsorted-sorter-size": lambda m: m.searchsorted(m.tensor([3.0, 1.0]), m.tensor([2.0]), sorter=m.tensor([1])),
    "searchsorted-sorter-range": lambda m: m.searchsorted(m.tensor([3.0, 1.0]), m.tensor([2.0]),
                                                          sorter=m.tensor([1, -1])),
    "searchsorted-side": lambda m: m.searchsorted(m.tensor([1.0]), m.tensor([2.0]), side="middle"),
    "searchsorted-side-right": lambda m: m.searchsorted(m.tensor([1.0]), m.tensor([2.0]), side="left", right=True),
    "bucketize-bool": lambda m: m.bucketize(m.tensor([True]), m.tensor([False, True])),
    "bincount-float": lambda m: m.bincount(m.tensor([1.0, 2.0]), minlength=-1),
    "bincount-bool": lambda m: m.bincount(m.tensor([True])),
    "histc-bins-before-dtype": lambda m: m.histc(m.tensor([1, 2]), bins=-1),
    "histc-range-before-dtype": lambda m: m.histc(m.tensor([1, 2]), bins=3, min=2, max=1),
    "histc-bool": lambda m: m.histc(m.tensor([True]), bins=3),
    "histc-complex-range": lambda m: m.histc(_c(m, 2), bins=3, min=0, max=1),
    "histc-uint8-overflow": lambda m: m.histc(m.tensor([1, 2], dtype=m.uint8), bins=3, min=-3, max=-2),
    "histc-int-overflow": lambda m: m.histc(m.tensor([1, 2], dtype=m.int32), bins=3, min=-3, max=1e10),
    "histc-half-overflow": lambda m: m.histc(m.ones(2, dtype=m.float16), bins=3, min=0, max=65520),
    "histc-neg-inf-range": lambda m: m.histc(m.tensor([float("-inf")]), bins=3),
    "histc-half-inf-range": lambda m: m.histc(m.tensor([float("inf")], dtype=m.float16), bins=3),
    "histogramdd-bins-dtype-before-kernel": lambda m: m.histogramdd(m.zeros(3, 2, dtype=m.int64),
                                                                     [m.tensor([0.0, 1.0])] * 2),
    "histogramdd-half-bins-name": lambda m: m.histogramdd(m.zeros(3, 2, dtype=m.float16), [m.tensor([0.0, 1.0])] * 2),
    "histogramdd-one-edge": lambda m: m.histogramdd(m.zeros(3, 2), [m.tensor([0.0, 1.0]), m.tensor([0.0])]),
    "histogramdd-no-edge": lambda m: m.histogramdd(m.zeros(3, 2), [m.tensor([0.0, 1.0]), m.tensor([])]),
    "histogramdd-edge-count": lambda m: m.histogramdd(m.zeros(3, 2), [m.tensor([0.0, 1.0])]),
    "histogramdd-weight-before-one-edge": lambda m: m.histogramdd(
        m.zeros(3, 1), [m.tensor([0.0])], weight=m.zeros(3, dtype=m.float64)),
    "histogramdd-weight-name": lambda m: m.histogramdd(
        m.zeros(3, 2, dtype=m.float16), [m.tensor([0.0, 1.0]).half()] * 2, weight=m.zeros(3, dtype=m.float64)),
    "histogramdd-range-before-dtype": lambda m: m.histogramdd(m.zeros(3, 2, dtype=m.int64), [2, 2], range=[0.0, 1.0]),
    "histogramdd-dims-before-dtype": lambda m: m.histogramdd(m.zeros(3, dtype=m.int64), [2]),
    "histogramdd-int-kernel": lambda m: m.histogramdd(m.zeros(3, 2, dtype=m.int64), [2, 2], range=[0.0, 1.0] * 2),
    "histogramdd-bool-linspace": lambda m: m.histogramdd(m.zeros(3, 2, dtype=m.bool), [2, 2], range=[0.0, 1.0] * 2),
    "histogram-int-bins-before-dtype": lambda m: m.histogram(m.zeros(3, dtype=m.int64), 0),
    "quantile-scalar-q-first": lambda m: m.quantile(m.tensor([1, 2]), 1.03),
    "quantile-q-format": lambda m: m.quantile(m.tensor([1.0, 2.0]), -1e-7),
    "quantile-interpolation-before-empty": lambda m: m.quantile(m.zeros(0, dtype=m.int64), 0.5, interpolation="x"),
    "quantile-q-dims-before-dtype": lambda m: m.quantile(m.tensor([1]), m.tensor([[0.5]])),
    "quantile-q-values": lambda m: m.quantile(m.tensor([1.0, 2.0]), m.tensor([1.2, 0.5])),
}


@pytest.mark.parametrize("case", sorted(_ERRORS))
def test_errors_match_torch(case):
    make = _ERRORS[case]
    assert_same_error(lambda: make(engine), lambda: make(torch))


def test_histogram_refuses_a_range_with_edges():
    edges = [m.tensor([0.0, 1.0]) for m in (engine, torch)]
    assert_same_error(lambda: engine.histogram(engine.zeros(3), edges[0], range=(0.0, 1.0)),
                      lambda: torch.histogram(torch.zeros(3), edges[1], range=(0.0, 1.0)), first_line=True)


# ---- the same ops on the CUDA backend ---------------------------------------------------------------
def test_searchsorted_bincount_and_selection_on_cuda(cuda):
    """The promotion and empty-input paths on device arrays; CUDA's own tie choices are not torch's CPU ones, so
    the selection is checked on distinct values there."""
    b = engine.tensor([1, 2], dtype=engine.uint8).to("cuda")
    assert engine.searchsorted(b, -2).cpu().item() == 2
    assert engine.searchsorted(engine.zeros(2, 0).to("cuda"), engine.zeros(2, 3).to("cuda")).device.type == "cuda"
    empty = engine.bincount(engine.zeros(0, dtype=engine.int64).to("cuda"), engine.zeros(2).to("cuda"), minlength=3)
    assert empty.dtype is engine.int64 and empty.device.type == "cuda"
    x = np.random.default_rng(0).permutation(24).reshape(3, 8).astype(np.float32)
    for ours, theirs in ((engine.topk(engine.from_numpy(x).to("cuda"), 3, 1, sorted=False), torch.topk(
            torch.from_numpy(x), 3, 1, sorted=True)), (engine.kthvalue(engine.from_numpy(x).to("cuda"), 2, 1),
                                                      torch.kthvalue(torch.from_numpy(x), 2, 1))):
        got = np.sort(ours.values.cpu().numpy(), -1)
        np.testing.assert_array_equal(got, np.sort(theirs.values.numpy(), -1))
    q = engine.quantile(engine.from_numpy(x).to("cuda"), 0.3, 1)
    np.testing.assert_allclose(q.cpu().numpy(), torch.quantile(torch.from_numpy(x), 0.3, 1).numpy(), rtol=1e-6)
