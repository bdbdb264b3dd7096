"""The 3-D padding layers, ``F.pdist``, ``F.native_channel_shuffle``, ``nn.CrossMapLRN2d`` and torch's
``*_with_indices`` pooling names against PyTorch: values, gradients, modules and errors."""
import math

import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

rng = np.random.default_rng(29)
TF = torch.nn.functional


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("name", ["ZeroPad3d", "ReflectionPad3d", "ReplicationPad3d", "CircularPad3d"])
@pytest.mark.parametrize("padding", [2, (1, 2, 0, 1, 2, 0)])
def test_pad3d_layers_match_torch(name, padding):
    """Batched and unbatched, even and uneven amounts, gradients added back from every copy."""
    ours, theirs = getattr(engine.nn, name)(padding), getattr(torch.nn, name)(padding)
    assert repr(ours) == repr(theirs) and ours.padding == theirs.padding
    assert list(ours.state_dict()) == []
    check_op(ours, theirs, [rand(2, 3, 4, 5, 3)])
    check_op(ours, theirs, [rand(3, 3, 4, 5, dtype=np.float64)])


def test_zero_pad3d_crops_with_negative_amounts():
    check_op(engine.nn.ZeroPad3d((-1, 2, 0, -2, 1, -1)), torch.nn.ZeroPad3d((-1, 2, 0, -2, 1, -1)),
             [rand(2, 3, 4, 5, 6)])


@pytest.mark.parametrize("name,padding,shape,error", [
    ("CircularPad3d", 1, (2, 3), ValueError),
    ("CircularPad3d", 1, (1, 2, 3, 3, 3, 3), ValueError),
    ("CircularPad2d", 1, (3,), ValueError),
    ("CircularPad1d", 1, (2, 3, 4, 5), ValueError),
    ("ReflectionPad3d", 3, (1, 2, 3, 3, 3), RuntimeError),
    ("ReplicationPad3d", 1, (2, 3), RuntimeError),
    ("ZeroPad3d", 1, (2, 3), RuntimeError),
])
def test_pad_layer_errors_match_torch(name, padding, shape, error):
    x = rand(*shape)
    with pytest.raises(error) as theirs:
        getattr(torch.nn, name)(padding)(torch.from_numpy(x))
    with pytest.raises(error) as ours:
        getattr(engine.nn, name)(padding)(engine.from_numpy(x))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, 0, math.inf])
def test_pdist_matches_torch(p):
    check_op(lambda x: F.pdist(x, p), lambda x: TF.pdist(x, p), [rand(7, 5, dtype=np.float64)])


@pytest.mark.parametrize("p", [2, 1, math.inf])
def test_pdist_zero_distances_have_zero_gradient(p):
    x = rand(6, 4)
    x[3] = x[1]
    check_op(lambda a: F.pdist(a, p), lambda a: TF.pdist(a, p), [x])


def test_pdist_default_and_small_inputs():
    check_op(F.pdist, TF.pdist, [rand(9, 3)])
    check_op(F.pdist, TF.pdist, [rand(1, 3)])
    assert F.pdist(engine.randn(5, 0)).numpy().tolist() == [0.0] * 10


@pytest.mark.parametrize("x,p", [(np.zeros((2, 3, 4), np.float32), 2), (np.zeros((3, 4), np.float32), -1.0),
                                 (np.zeros((3, 4), np.int64), 2)])
def test_pdist_errors_match_torch(x, p):
    with pytest.raises(RuntimeError) as theirs:
        TF.pdist(torch.from_numpy(x), p)
    with pytest.raises(RuntimeError) as ours:
        F.pdist(engine.from_numpy(x), p)
    assert str(ours.value) == str(theirs.value)


def test_native_channel_shuffle():
    """torch's ``native_channel_shuffle`` has no derivative; ours is ``channel_shuffle``'s (checked against it)."""
    check_op(lambda x: F.native_channel_shuffle(x, 3), lambda x: TF.native_channel_shuffle(x, 3),
             [rand(2, 6, 3, 5)], grad=False)
    check_op(lambda x: F.native_channel_shuffle(x, 2), lambda x: TF.channel_shuffle(x, 2), [rand(2, 4, 3)])
    with pytest.raises(RuntimeError, match="Got 3 channels and 2 groups"):
        F.native_channel_shuffle(engine.randn(2, 3, 4), 2)


@pytest.mark.parametrize("size", [2, 3, 4, 5, 9])
def test_cross_map_lrn2d_matches_torch(size):
    """torch's own window (channel 0 stays in every sum past the first window) and its own gradient formula
    (a shifted window; not the exact derivative), for odd and even sizes and sizes past the channel count."""
    ours, theirs = engine.nn.CrossMapLRN2d(size, 0.5, 0.75, 2.0), torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 2.0)
    check_op(ours, theirs, [rand(2, 7, 3, 4, dtype=np.float64)])
    check_op(ours, theirs, [rand(3, 5, 4, 2)])


def test_cross_map_lrn2d_module():
    ours, theirs = engine.nn.CrossMapLRN2d(5), torch.nn.CrossMapLRN2d(5)
    assert repr(ours) == repr(theirs) == "CrossMapLRN2d(5, alpha=0.0001, beta=0.75, k=1)"
    assert list(ours.state_dict()) == []
    check_op(ours, theirs, [rand(2, 6, 5, 3)])
    with pytest.raises(ValueError) as theirs_error:
        theirs(torch.randn(2, 3, 4))
    with pytest.raises(ValueError) as ours_error:
        ours(engine.randn(2, 3, 4))
    assert str(ours_error.value) == str(theirs_error.value)


@pytest.mark.parametrize("name,shape,args", [
    ("max_pool1d_with_indices", (2, 3, 11), (3, 2, 1)),
    ("adaptive_max_pool1d_with_indices", (2, 3, 11), (4,)),
    ("adaptive_max_pool2d_with_indices", (2, 3, 9, 7), ((4, 3),)),
    ("adaptive_max_pool3d_with_indices", (2, 2, 5, 6, 7), (3,)),
])
def test_with_indices_names(name, shape, args):
    """Values and indices, whatever ``return_indices`` says (torch ignores it in these names)."""
    check_op(lambda x: getattr(F, name)(x, *args), lambda x: getattr(TF, name)(x, *args), [rand(*shape)])
    check_op(lambda x: getattr(F, name)(x, *args, return_indices=False),
             lambda x: getattr(TF, name)(x, *args, return_indices=False), [rand(*shape[1:])])


def test_on_the_gpu(cuda):
    check_op(engine.nn.CrossMapLRN2d(3), torch.nn.CrossMapLRN2d(3), [rand(2, 5, 3, 4)], device="cuda")
    check_op(lambda x: F.pdist(x), lambda x: TF.pdist(x), [rand(6, 4)], device="cuda")
    check_op(engine.nn.ReflectionPad3d(1), torch.nn.ReflectionPad3d(1), [rand(2, 2, 3, 4, 3)], device="cuda")
