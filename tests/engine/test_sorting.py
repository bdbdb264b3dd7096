"""Sorting and selection against PyTorch: values, indices, gradients, ties, unique and searchsorted."""
import numpy as np
import pytest
import torch

import engine
from op_check import check_op, noncontiguous

rng = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort(dim, descending):
    x = noncontiguous(rand(5, 7))
    out = check_op(lambda t: t.sort(dim, descending), lambda t: t.sort(dim, descending), [x])
    assert out[1].dtype is engine.int64
    check_op(lambda t: engine.argsort(t, dim=dim, descending=descending),
             lambda t: torch.argsort(t, dim=dim, descending=descending), [x])
    check_op(lambda t: engine.sort(t, dim=dim, descending=descending, stable=True),
             lambda t: torch.sort(t, dim=dim, descending=descending, stable=True), [x.astype(np.float64)])


def test_sort_is_stable_with_ties_and_nan():
    x = np.array([3, 1, 2, 1, 3, 1], np.int64)
    for desc in (False, True):
        check_op(lambda t: t.sort(descending=desc, stable=True), lambda t: t.sort(descending=desc, stable=True), [x])
    y = np.array([1.0, np.nan, 2.0, -1.0, 2.0], np.float32)
    for desc in (False, True):
        check_op(lambda t: t.sort(descending=desc, stable=True), lambda t: t.sort(descending=desc, stable=True), [y])
    res = engine.tensor([3.0, 1.0]).sort()
    values, indices = res
    assert res.values is values and res.indices is indices


def test_msort_and_zero_dim():
    check_op(engine.msort, torch.msort, [rand(4, 3)])
    check_op(lambda t: t.sort(), lambda t: t.sort(), [np.array(2.5, np.float32)])
    check_op(lambda t: t.topk(1), lambda t: t.topk(1), [np.array(2.5, np.float32)])
    check_op(lambda t: t.sort(0), lambda t: t.sort(0), [np.zeros((0, 3), np.float32)])


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("dim", [0, -1])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(k, dim, largest):
    x = noncontiguous(rand(7, 9))
    check_op(lambda t: t.topk(k, dim, largest), lambda t: t.topk(k, dim, largest), [x])
    check_op(lambda t: engine.topk(t, k, dim=dim, largest=largest, sorted=True),
             lambda t: torch.topk(t, k, dim=dim, largest=largest, sorted=True), [x.astype(np.float64)])


def test_topk_ties_values_match_and_errors():
    x = np.array([[3, 1, 2, 1, 3, 1], [0, 0, 0, 5, 5, 1]], np.float32)
    ours, ref = engine.from_numpy(x).topk(3), torch.from_numpy(x).topk(3)
    np.testing.assert_array_equal(ours.values.numpy(), ref.values.numpy())
    np.testing.assert_array_equal(np.take_along_axis(x, ours.indices.numpy(), 1), ref.values.numpy())
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        engine.zeros(2, 3).topk(4)


@pytest.mark.parametrize("k", [1, 4, 6])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(k, keepdim):
    x = noncontiguous(rand(3, 6))
    check_op(lambda t: t.kthvalue(k, 1, keepdim), lambda t: t.kthvalue(k, 1, keepdim), [x])
    check_op(lambda t: engine.kthvalue(t, 2, 0, keepdim), lambda t: torch.kthvalue(t, 2, 0, keepdim), [x])
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range for dimension 1"):
        engine.zeros(2, 3).kthvalue(4)


@pytest.mark.parametrize("data", [[3, 1, 2, 1, 3, 1], [[1, 2], [1, 2], [0, 5]], [2.5, -1.0, 2.5], [7]])
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True), (True, True)])
def test_unique(data, flags):
    x = np.array(data)
    x = x.astype(np.float32) if x.dtype.kind == "f" else x
    check_op(lambda t: engine.unique(t, return_inverse=flags[0], return_counts=flags[1]),
             lambda t: torch.unique(t, return_inverse=flags[0], return_counts=flags[1]), [x], grad=False)
    check_op(lambda t: t.unique_consecutive(return_inverse=flags[0], return_counts=flags[1]),
             lambda t: t.unique_consecutive(return_inverse=flags[0], return_counts=flags[1]), [x], grad=False)
    for dim in range(x.ndim):
        check_op(lambda t: t.unique(return_inverse=flags[0], return_counts=flags[1], dim=dim),
                 lambda t: t.unique(return_inverse=flags[0], return_counts=flags[1], dim=dim), [x], grad=False)
        check_op(lambda t: engine.unique_consecutive(t, return_inverse=flags[0], return_counts=flags[1], dim=dim),
                 lambda t: torch.unique_consecutive(t, return_inverse=flags[0], return_counts=flags[1], dim=dim),
                 [x], grad=False)


def test_unique_dim_on_3d():
    x = rng.integers(0, 2, (4, 2, 3))
    x[2] = x[0]
    for dim in (0, 1, 2):
        check_op(lambda t: t.unique(dim=dim, return_inverse=True, return_counts=True),
                 lambda t: t.unique(dim=dim, return_inverse=True, return_counts=True), [x])


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(right):
    seq = np.array([1.0, 2.0, 2.0, 3.0, 5.0], np.float32)
    vals = np.array([[2.0, 0.0], [5.0, 6.0], [2.5, 3.0]], np.float32)
    check_op(lambda s, v: engine.searchsorted(s, v, right=right), lambda s, v: torch.searchsorted(s, v, right=right),
             [seq, vals], grad=False)
    check_op(lambda s, v: engine.searchsorted(s, v, side="right" if right else "left", out_int32=True),
             lambda s, v: torch.searchsorted(s, v, side="right" if right else "left", out_int32=True),
             [seq, vals], grad=False)
    check_op(lambda s: engine.searchsorted(s, 2.0, right=right), lambda s: torch.searchsorted(s, 2.0, right=right),
             [seq], grad=False)
    batched = np.sort(rand(3, 6), axis=1)
    check_op(lambda s, v: engine.searchsorted(s, v, right=right), lambda s, v: torch.searchsorted(s, v, right=right),
             [batched, rand(3, 4)], grad=False)
    check_op(lambda v, s: engine.bucketize(v, s, right=right), lambda v, s: torch.bucketize(v, s, right=right),
             [vals, seq], grad=False)
    unsorted = np.array([3.0, 1.0, 2.0], np.float32)
    sorter = np.argsort(unsorted)
    check_op(lambda s, v, o: engine.searchsorted(s, v, sorter=o), lambda s, v, o: torch.searchsorted(s, v, sorter=o),
             [unsorted, vals, sorter], grad=False)


def test_searchsorted_shape_error():
    with pytest.raises(RuntimeError, match=r"boundaries tensor \[2, 3\] and input value tensor \[1, 2\]"):
        engine.searchsorted(engine.zeros(2, 3), engine.zeros(1, 2))
