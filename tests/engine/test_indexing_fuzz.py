"""Indexing, views and shape ops against torch: the cases a differential fuzzer (random keys, shapes, dtypes and
view chains) found different, fixed, and a small seeded sample of the sweep itself.

Each case runs the same call on torch and on engine tensors built from the same numpy data and compares values,
dtypes, shapes, strides or the error (type and message).
"""
import numpy as np
import pytest
import torch

import engine
from op_check import assert_same_error

pytestmark = pytest.mark.slow  # ~170 small cases: over 2 s together


def _tensor(lib, array):
    return (torch.from_numpy if lib is torch else engine.from_numpy)(np.array(array))


def _both(fn, *arrays):
    """``fn(lib, *tensors)`` for torch and engine."""
    return [fn(lib, *[_tensor(lib, a) for a in arrays]) for lib in (torch, engine)]


def _same(fn, *arrays):
    """Same values, dtypes and shapes (each of a tuple of results)."""
    theirs, ours = _both(fn, *arrays)
    theirs, ours = (list(r) if isinstance(r, (tuple, list)) else [r] for r in (theirs, ours))
    assert len(theirs) == len(ours)
    for t, o in zip(theirs, ours):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())


def _same_error(fn, *arrays):
    ours = [_tensor(engine, a) for a in arrays]
    theirs = [_tensor(torch, a) for a in arrays]
    assert_same_error(lambda: fn(engine, *ours), lambda: fn(torch, *theirs), first_line=True)


_RNG = np.random.default_rng(24)
_X = _RNG.standard_normal((3, 4, 5)).astype(np.float32)
_U8 = _RNG.integers(0, 9, (3, 4)).astype(np.uint8)
_MASK = np.array([True, False, True, True])


# ---- joins and splits ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("empty", ["float64", "int64", "bool"])
def test_cat_promotes_with_the_skipped_empty_1d_tensors(empty):
    _same(lambda lib, a, b: lib.cat([a, b], -1), _U8, np.zeros(0, empty))
    _same(lambda lib, a, b: lib.cat((b, a)), _U8, np.zeros(0, empty))


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "row_stack", "column_stack"])
def test_stacks_of_one_tensor(name):
    _same(lambda lib, a: getattr(lib, name)([a]), _U8)
    _same(lambda lib, a, b: getattr(lib, name)((a, b)), _U8[0], np.arange(4, dtype=np.int16))


@pytest.mark.parametrize("split", [lambda lib, x: lib.split(x, 2), lambda lib, x: x.unbind(0),
                                   lambda lib, x: lib.split(x, 3, 1), lambda lib, x: x.chunk(3, 1)])
def test_splits_along_an_empty_dim(split):
    _same(split, np.zeros((0, 0, 2), np.float32))


def test_block_diag_of_nothing():
    _same(lambda lib: lib.block_diag())


# ---- squeeze, narrow, select, flip, flatten, unflatten --------------------------------------------------------
def test_squeeze_of_an_empty_dim_tuple_squeezes_nothing():
    _same(lambda lib, x: x.squeeze(()), _X[:1, :, :1])
    _same(lambda lib, x: x.squeeze((0, -1)), _X[:1, :, :1])


@pytest.mark.parametrize("call", [lambda lib, x: x.squeeze((0, -3)), lambda lib, x: lib.flip(x, (2, -1)),
                                  lambda lib, x: x.narrow(1, -5, 1), lambda lib, x: x.narrow(1, 5, 0),
                                  lambda lib, x: x.narrow(1, 2, -1), lambda lib, x: x.narrow(1, -2, 3),
                                  lambda lib, x: x[0, 0, 0].narrow(0, 0, 1), lambda lib, x: x.select(1, 4),
                                  lambda lib, x: x.select(-1, -6), lambda lib, x: x[0, 0, 0].select(0, 0),
                                  lambda lib, x: x.unflatten(-1, (2, -1)), lambda lib, x: x[0, 0, 0].flatten(1)])
def test_shape_errors(call):
    _same_error(call, _X[:1])


def test_narrow_at_the_end_is_empty():
    _same(lambda lib, x: x.narrow(2, 5, 0), _X)
    _same(lambda lib, x: x.narrow(-1, -5, 2), _X)


# ---- scalars written into integer tensors ----------------------------------------------------------------------
@pytest.mark.parametrize("value", [-1, -255, 7, True, 2.7])
@pytest.mark.parametrize("write", ["masked_fill", "index_fill", "scatter", "setitem"])
def test_scalars_wrap_into_unsigned_tensors_as_torch(write, value):
    def run(lib, x, mask):
        index = lib.zeros(1, 4, dtype=lib.int64)
        if write == "masked_fill":
            return x.masked_fill(mask, value)
        if write == "index_fill":
            return x.index_fill(1, index[0], value)
        if write == "scatter":
            return x.scatter(0, index, value)
        y = x.clone()
        y[1:, mask] = value
        return y
    _same(run, _U8, _MASK)


@pytest.mark.parametrize("value", [256, -256, 1000])
def test_scalars_that_overflow_an_integer_tensor(value):
    _same_error(lambda lib, x, m: x.masked_fill(m, value), _U8, _MASK)
    _same_error(lambda lib, x: x.index_fill(0, lib.zeros(1, dtype=lib.int64), value), _U8)
    _same_error(lambda lib, x: x.to(lib.int8).scatter(0, lib.zeros(1, 4, dtype=lib.int64), 200), _U8)
    _same_error(lambda lib, x: x.__setitem__(0, value), _U8)


# ---- index_* along a dim ---------------------------------------------------------------------------------------
_INDEX_OPS = {"index_select": lambda lib, x, i: x.index_select(0, i),
              "index_add": lambda lib, x, i: x.index_add(0, i, lib.ones(len(i), 4, 5)),
              "index_copy": lambda lib, x, i: x.index_copy(0, i, lib.ones(len(i), 4, 5)),
              "index_fill": lambda lib, x, i: x.index_fill(0, i, 1.0)}


@pytest.mark.parametrize("index", [[3], [-1], [0, 9], [-4]])
@pytest.mark.parametrize("name", sorted(_INDEX_OPS))
def test_index_ops_out_of_range(name, index):
    if name == "index_fill" and index == [-1]:
        _same(_INDEX_OPS[name], _X, np.array(index))  # index_fill counts negative indices from the end, as torch
    else:
        _same_error(_INDEX_OPS[name], _X, np.array(index))


def test_index_fill_takes_negative_indices():
    _same(lambda lib, x, i: x.index_fill(1, i, -2.0), _X, np.array([-1, -4, 0]))


@pytest.mark.parametrize("op", [lambda lib, x, i: x.index_add(0, i, lib.ones(3, 0)),
                                lambda lib, x, i: x.index_copy(0, i, lib.ones(3, 0)),
                                lambda lib, x, i: x.index_fill(0, i, 1.0)])
def test_index_writes_into_a_tensor_without_elements(op):
    _same(op, np.zeros((2, 0), np.float32), np.array([0, 5, 1]))
    grads = []
    for lib in (torch, engine):
        x = lib.zeros(2, 0, requires_grad=True)
        op(lib, x * 1, _tensor(lib, np.array([0, 5, 1]))).sum().backward()
        grads.append(x.grad.shape)
    assert tuple(grads[0]) == tuple(grads[1])


# ---- x[key]: errors --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", [(None, 5), (0, None, 5), (Ellipsis, 7), (None, Ellipsis, None, -9),
                                 (slice(None), None, None, 6), ([0], Ellipsis, 5)])
def test_out_of_range_int_names_its_place_in_the_key(key):
    _same_error(lambda lib, x: x[key], _X)
    _same_error(lambda lib, x: x.__setitem__(key, 1.0), _X)


@pytest.mark.parametrize("key", [(slice(None), [0, 9]), (Ellipsis, [7]), ([0], slice(None), [9]), ([9], slice(None), [0]),
                                 (slice(None), [9], None, [0]), (None, slice(None), [-5])])
def test_out_of_range_index_tensor_names_its_rank_among_the_indexed_dims(key):
    _same_error(lambda lib, x: x[key], _X)
    _same_error(lambda lib, x: x.__setitem__(key, 1.0), _X)


@pytest.mark.parametrize("key", [0, slice(None), (0,)])
def test_indexing_a_0dim_tensor(key):
    _same_error(lambda lib, x: x[key], np.float32(2.5))


def test_index_tensors_that_do_not_broadcast():
    key = lambda lib: (lib.tensor([0, 1]), slice(None), lib.tensor([0, 1, 2]))  # noqa: E731
    _same_error(lambda lib, x: x[key(lib)], _X)
    _same_error(lambda lib, x: x.__setitem__(key(lib), 0.0), _X)


# ---- views: strides, writes through views of expanded tensors ------------------------------------------------
@pytest.mark.parametrize("key", [(None,), (slice(None), None), (Ellipsis, None), (None, 0), (None, None, slice(None, None, 2)),
                                 (slice(1, None), None, slice(1, None, 2), None), (0, None, Ellipsis, None, 1)])
def test_none_gives_torchs_strides(key):
    theirs, ours = _both(lambda lib, x: x[key], _X)
    assert ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("shape, size", [((1, 3), (1, 3)), ((3, 1), (3, 1)), ((1, 3), (4, 2, 3)), ((3, 1), (-1, 5)),
                                         ((2, 1, 3), (2, 1, 3))])
def test_expand_gives_torchs_strides(shape, size):
    theirs, ours = _both(lambda lib, x: x.expand(*size), np.ones(shape, np.float32))
    assert ours.stride() == theirs.stride() and tuple(ours.shape) == tuple(theirs.shape)


@pytest.mark.parametrize("view", [lambda t: t[1], lambda t: t.select(0, 0), lambda t: t.unbind(0)[1],
                                  lambda t: t.diagonal(0, 0, 1), lambda t: t.split(1)[0][0], lambda t: t[-1, 1:]])
def test_a_view_of_an_expanded_tensor_writes_into_its_base(view):
    def run(lib, x):
        x = x.clone()
        view(x.expand(2, *x.shape)).mul_(-3)
        return x
    _same(run, _X[0, :2, :2])


@pytest.mark.parametrize("key", [(slice(None), 0), Ellipsis, (slice(None), slice(1, 3))])
def test_writing_into_overlapping_elements_is_refused(key):
    _same_error(lambda lib, x: x.expand(2, 4).__setitem__(key, 1.0), _X[0, 0, :4])


@pytest.mark.parametrize("key", [0, (1, 2), (0, slice(1, None, 2))])
def test_writing_into_a_row_of_an_expanded_tensor(key):
    def run(lib, x):
        x = x.clone()
        x.expand(2, 4)[key] = -1.0
        return x
    _same(run, _X[0, 0, :4])


def test_views_of_expanded_tensors_on_cuda(cuda):
    base = engine.from_numpy(_X[0].copy()).to("cuda")
    view = base.expand(3, 4, 5)[2, 1:, None]
    assert view.stride() == torch.from_numpy(_X[0]).expand(3, 4, 5)[2, 1:, None].stride()
    view.fill_(7.0)
    expected = _X[0].copy()
    expected[1:] = 7.0
    np.testing.assert_array_equal(base.cpu().numpy(), expected)


# ---- in-place ops on views: the base's gradient ---------------------------------------------------------------------
_VIEW_CHAINS = {
    "slice": lambda t: t[1:, ::2], "select": lambda t: t.select(1, 2), "transpose": lambda t: t.transpose(0, 2)[1],
    "diagonal": lambda t: t.diagonal(0, 1, 2), "reshape": lambda t: t.reshape(-1)[3:8], "none": lambda t: t[:, None, 1],
    "expand_select": lambda t: t.expand(2, 3, 4, 5)[1, 0], "narrow_T": lambda t: t.narrow(2, 1, 3).mT,
}
_INPLACE = {
    "mul_": lambda v, w: v.mul_(w[: v.shape[-1]] if v.ndim else w[0]), "setitem": lambda v, w: v.__setitem__(0, w[0] * 2),
    "copy_": lambda v, w: v.copy_(w[: v.shape[-1]] if v.ndim else w[0]), "exp_": lambda v, w: v.add_(w[1]).exp_(),
}


@pytest.mark.parametrize("chain", sorted(_VIEW_CHAINS))
@pytest.mark.parametrize("op", sorted(_INPLACE))
def test_in_place_on_a_view_reaches_the_base_gradient(chain, op):
    weights = _RNG.standard_normal((3, 4, 5))
    grads = []
    for lib in (torch, engine):
        x = _tensor(lib, _X).requires_grad_()
        w = _tensor(lib, np.arange(1.0, 6.0, dtype=np.float32)).requires_grad_()
        base = x * 1
        _INPLACE[op](_VIEW_CHAINS[chain](base), w)
        (base * _tensor(lib, weights)).sum().backward()
        grads.append((x.grad.numpy(), w.grad.numpy(), base.detach().numpy()))
    for theirs, ours in zip(*grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_in_place_on_a_view_of_a_leaf_is_refused():
    _same_error(lambda lib, x: x.requires_grad_()[1:].mul_(2), _X)


def test_positions_of_a_view_in_a_non_contiguous_base():
    from engine.ops.view_copies import _positions_in
    base = np.arange(60.0).reshape(3, 4, 5).transpose(2, 0, 1)
    view = base[1:, ::2, 3]
    np.testing.assert_array_equal(base.reshape(-1)[_positions_in(view, base)], view)


# ---- a seeded sample of the sweep: random keys on random shapes, read and written -------------------------------
def _random_key(rng, shape):
    """A random index: ints, slices with steps, None, Ellipsis, int and bool index tensors, lists."""
    key, d = [], 0
    while d < len(shape) and rng.random() < 0.85:
        n, r = shape[d], rng.integers(0, 9)
        if r == 0:
            key.append(int(rng.integers(-n, n)))
        elif r in (1, 2):
            key.append(slice(int(rng.integers(-n, n)), None, int(rng.integers(1, 3))))
        elif r == 3:
            key.append(None)
            continue
        elif r == 4:
            key.append(("int", rng.integers(-n, n, size=tuple(rng.integers(1, 3, size=rng.integers(0, 3))))))
        elif r == 5:
            key.append([int(v) for v in rng.integers(-n, n, size=2)])
        elif r == 6:
            key.append(("bool", rng.random(n) > 0.4))
        elif r == 7 and Ellipsis not in key:
            key.append(Ellipsis)
            d = len(shape) - int(rng.integers(0, len(shape) - d + 1))
            continue
        else:
            key.append(slice(None))
        d += 1
    return key


def _key_for(lib, key):
    return tuple(_tensor(lib, k[1]) if isinstance(k, tuple) else k for k in key)


@pytest.mark.parametrize("seed", range(24))
def test_random_keys_read_and_write_as_torch(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(1, 5, size=rng.integers(1, 5)))
    x = rng.standard_normal(shape).astype(np.float32)
    key = _random_key(rng, shape)
    try:
        expected = torch.from_numpy(x)[_key_for(torch, key)]
    except IndexError:
        _same_error(lambda lib, t: t[_key_for(lib, key)], x)
        return
    _same(lambda lib, t: t[_key_for(lib, key)], x)
    value = rng.standard_normal(tuple(expected.shape)[len(expected.shape) // 2:]).astype(np.float32)

    def write(lib, t, v):
        t = t.clone()
        t[_key_for(lib, key)] = v
        return t
    _same(write, x, value)
