"""Indexing ops against PyTorch: values, dtypes and gradients, repeated indices, masks, errors."""
import numpy as np
import pytest
import torch
from op_check import check_op, noncontiguous

import engine

RNG = np.random.default_rng(1)


def randn(*shape, dtype=np.float32):
    return np.asarray(RNG.standard_normal(shape), dtype)


def both(fn_of_module):
    """The same lambda run against engine and against torch: ``fn(mod, x, ...)``."""
    return (lambda *xs: fn_of_module(engine, *xs)), (lambda *xs: fn_of_module(torch, *xs))


def long(mod, values):
    return mod.tensor(values, dtype=mod.int64)


# ---- x[key] ------------------------------------------------------------------------------------
BASIC_KEYS = [
    0, -1, (1, 2), (slice(None), 1), (slice(1, None, 2),), slice(None, 2), (slice(5, 9),),
    (Ellipsis, 0), (None, 1), (slice(None), None, Ellipsis, 2), (0, Ellipsis, None), (slice(-3, -1), slice(None, None, 3)),
    Ellipsis, (1, 2, 3),
]


@pytest.mark.parametrize("key", BASIC_KEYS)
def test_getitem_basic(key):
    check_op(lambda x: x[key], lambda x: x[key], [randn(3, 4, 5)])
    check_op(lambda x: x[key], lambda x: x[key], [noncontiguous(randn(3, 4, 5))])


def test_getitem_basic_is_a_view():
    a = engine.zeros(3, 4)
    row = a[1]
    col = a[:, ::2]
    row.add_(1)
    col.mul_(2)
    expected = np.zeros((3, 4))
    expected[1] = 1
    expected[:, ::2] *= 2
    np.testing.assert_array_equal(a.numpy(), expected)
    assert row._version_counter is a._version_counter is col._version_counter and row._base is a
    adv = a[[0, 1]]
    adv.add_(5)  # advanced indexing copies
    np.testing.assert_array_equal(a.numpy(), expected)


ADV_KEYS = [
    lambda m: long(m, [0, 2, 2, 1]),                                   # repeated rows
    lambda m: [1, 1, 0],                                               # a list
    lambda m: (slice(None), long(m, [[0, 3], [3, 3]])),                # 2-d index on dim 1
    lambda m: (long(m, [0, 1, 2]), long(m, [1, 1, 0])),                # paired indices
    lambda m: (long(m, [0, 1]), slice(None), long(m, [4, -1])),        # separated: dims go first
    lambda m: (0, slice(None), long(m, [1, 2])),                       # int first, as torch does
    lambda m: (None, long(m, [2, 0]), Ellipsis, 1),
    lambda m: (slice(1, None), long(m, [[0], [2]]), long(m, [1, 3])),  # broadcasting index arrays
    lambda m: m.tensor([True, False, True]),                           # a mask on dim 0
    lambda m: (slice(None), m.tensor([True, False, False, True])),     # a mask on dim 1
    lambda m: m.from_numpy(np.arange(12).reshape(3, 4) % 3 == 0),      # a 2-d mask
    lambda m: (Ellipsis, m.tensor([0, 4], dtype=m.int32)),             # int32 indices
    lambda m: [[0, 2], [1, 3]],                                        # a list of lists is a tuple
    lambda m: m.tensor(1),                                             # a 0-d index is an int
    lambda m: (True, 0),                                               # a scalar bool adds a dim
]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("make_key", ADV_KEYS)
def test_getitem_advanced(make_key):
    for a in [randn(3, 4, 5), noncontiguous(randn(3, 4, 5)), randn(3, 4, 5, dtype=np.float64)]:
        check_op(lambda x: x[make_key(engine)], lambda x: x[make_key(torch)], [a])


def test_getitem_integer_tensor_and_repeated_indices_backward():
    check_op(lambda x: x[engine.tensor([[0, 0, 0], [1, 0, 1]])], lambda x: x[torch.tensor([[0, 0, 0], [1, 0, 1]])],
             [randn(2, 3)])
    check_op(lambda x: x[[0, 0]][:, [1, 1, 1]], lambda x: x[[0, 0]][:, [1, 1, 1]], [randn(2, 3)])
    out = engine.arange(10)[engine.tensor([3, 3, 9])]
    assert out.dtype is engine.int64 and out.tolist() == [3, 3, 9]


def test_getitem_errors():
    x = engine.zeros(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 1 with size 4"):
        x[:, 7]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        x[-4]
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[engine.tensor([0, 5])]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        x[engine.tensor([1.0])]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match the shape of "
                                         r"the indexed tensor \[3, 4\] at index 0"):
        x[engine.tensor([True, False])]


# ---- x[key] = value -------------------------------------------------------------------------------
SET_CASES = [  # (key maker, value shape)
    (lambda m: 0, (4,)),
    (lambda m: (slice(None), 1), (3,)),
    (lambda m: (slice(1, None), slice(None, None, 2)), (1, 2)),
    (lambda m: long(m, [0, 2]), (2, 4)),
    (lambda m: long(m, [2, 0, 1]), (4,)),                       # value broadcast over the rows
    (lambda m: (long(m, [0, 1]), long(m, [3, 3])), ()),
    (lambda m: m.tensor([True, False, True]), (1, 4)),
    (lambda m: (Ellipsis, long(m, [1, 2])), (3, 1)),
    (lambda m: (1, long(m, [0, 3])), (1, 1, 2)),                # extra leading 1s in the value
]


@pytest.mark.parametrize("make_key,vshape", SET_CASES)
def test_setitem_autograd_on_both_sides(make_key, vshape):
    def run(mod):
        def fn(x, v):
            y = x * 2
            y[make_key(mod)] = v
            return y * y
        return fn
    check_op(run(engine), run(torch), [randn(3, 4), randn(*vshape)])
    check_op(run(engine), run(torch), [noncontiguous(randn(3, 4)), randn(*vshape, dtype=np.float32)])


def test_setitem_scalar_values_and_dtypes():
    def fn(mod):
        def run(x):
            y = x * 1
            y[0] = 7
            y[1, mod.tensor([0, 2])] = 2.5
            y[y > 1.5] = -1.0
            return y
        return run
    check_op(fn(engine), fn(torch), [randn(3, 3)])
    a = engine.zeros(2, 3, dtype=engine.int64)
    a[0] = engine.tensor([1.7, 2.2, 3.9])
    t = torch.zeros(2, 3, dtype=torch.int64)
    t[0] = torch.tensor([1.7, 2.2, 3.9])
    np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_setitem_repeated_indices_grad_of_value():
    def fn(mod):
        def run(x, v):
            y = x + 0
            y[mod.tensor([1, 1, 0])] = v
            return y
        return run
    check_op(fn(engine), fn(torch), [randn(3, 2), randn(3, 2)], grad=True)


def test_setitem_leaf_and_no_grad():
    w = engine.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        w[0] = 1.0
    with engine.no_grad():
        w[0] = 1.0
    assert w[0].item() == 1.0 and w.grad_fn is None


def test_setitem_bumps_version_and_writes_through_views():
    a = engine.zeros(2, 3)
    v = a[1]
    v[engine.tensor([0, 2])] = 4.0
    np.testing.assert_array_equal(a.numpy(), [[0, 0, 0], [4, 0, 4]])
    assert a._version == 1
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 4\] cannot be broadcast "
                                           r"to indexing result of shape \[2, 3\]"):
        a[[0, 1]] = engine.zeros(3, 4)


def test_index_put():
    for acc in (False, True):
        check_op(lambda x, v: (x * 1).index_put_((engine.tensor([0, 2, 0]), engine.tensor([1, 1, 1])), v, acc),
                 lambda x, v: (x * 1).index_put_((torch.tensor([0, 2, 0]), torch.tensor([1, 1, 1])), v, acc),
                 [randn(3, 4), randn(3)], grad=acc)
        check_op(lambda x, v: engine.index_put(x, (engine.tensor([2, 1]),), v, accumulate=acc),
                 lambda x, v: torch.index_put(x, (torch.tensor([2, 1]),), v, accumulate=acc),
                 [randn(3, 4), randn(4)])


# ---- gather / scatter ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather(dim):
    x_shape = (6, 4, 5)
    idx = RNG.integers(0, x_shape[dim], size=(3, 4, 2))  # smaller than input in every dim; repeats
    check_op(lambda x: engine.gather(x, dim, engine.from_numpy(idx)),
             lambda x: torch.gather(x, dim, torch.from_numpy(idx)), [randn(*x_shape)])
    check_op(lambda x: x.gather(dim, engine.from_numpy(idx)), lambda x: x.gather(dim, torch.from_numpy(idx)),
             [noncontiguous(randn(*x_shape))])


def test_gather_errors():
    x = engine.zeros(3, 4)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 4"):
        x.gather(1, engine.tensor([[5]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1 with size 4"):
        x.gather(1, engine.tensor([[-1]]))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions as input tensor"):
        x.gather(1, engine.tensor([0]))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 0 expected index \[4, 3\] to be "
                                           r"no larger than self \[3, 4\] apart from dimension 1"):
        x.gather(1, engine.zeros(4, 3, dtype=engine.int64))


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_and_scatter_add(dim):
    shape = (4, 5)
    idx = RNG.integers(0, shape[dim], size=(3, 4))  # repeats likely
    i_e, i_t = engine.from_numpy(idx), torch.from_numpy(idx)
    # scatter's result at repeated positions is unspecified; keep its indices unique per column/row
    if dim == 0:
        uniq = np.stack([RNG.permutation(4)[:3] for _ in range(4)], axis=1)
    else:
        uniq = np.stack([RNG.permutation(5)[:4] for _ in range(3)], axis=0)
    u_e, u_t = engine.from_numpy(uniq), torch.from_numpy(uniq)
    check_op(lambda x, s: engine.scatter(x, dim, u_e, s), lambda x, s: torch.scatter(x, dim, u_t, s),
             [randn(*shape), randn(3, 4)])
    check_op(lambda x, s: engine.scatter(x, dim, u_e, s), lambda x, s: torch.scatter(x, dim, u_t, s),
             [randn(*shape), randn(3, 5)], grad=False)  # torch's backward rejects a src larger than index
    check_op(lambda x: x.scatter(dim, u_e, 2.5), lambda x: x.scatter(dim, u_t, 2.5), [noncontiguous(randn(*shape))])
    check_op(lambda x, s: engine.scatter_add(x, dim, i_e, s), lambda x, s: torch.scatter_add(x, dim, i_t, s),
             [randn(*shape), randn(3, 4)])
    check_op(lambda x, s: (x * 1).scatter_add_(dim, i_e, s), lambda x, s: (x * 1).scatter_add_(dim, i_t, s),
             [randn(*shape), randn(4, 5)], grad=False)
    check_op(lambda x, s: (x * 1).scatter_(dim, u_e, s), lambda x, s: (x * 1).scatter_(dim, u_t, s),
             [randn(*shape), randn(3, 4)])
    check_op(lambda x, s: x.scatter(dim, i_e, s, reduce="add"), lambda x, s: x.scatter(dim, i_t, s, reduce="add"),
             [randn(*shape), randn(3, 4)], grad=False)
    check_op(lambda x, s: x.scatter(dim, i_e, s, reduce="multiply"),
             lambda x, s: x.scatter(dim, i_t, s, reduce="multiply"), [randn(*shape), randn(3, 4)], grad=False)


def test_scatter_errors():
    x = engine.zeros(3)
    with pytest.raises(RuntimeError, match=r"scatter\(\): Expected self.dtype to be equal to src.dtype"):
        x.scatter(0, engine.tensor([0]), engine.ones(1, dtype=engine.float64))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.scatter_(0, engine.tensor([5]), 1.0)
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        x.scatter(0, engine.tensor([0]), 1.0, reduce="max")


def test_take_along_dim():
    idx = RNG.integers(0, 4, size=(3, 2))
    check_op(lambda x: engine.take_along_dim(x, engine.from_numpy(idx), 1),
             lambda x: torch.take_along_dim(x, torch.from_numpy(idx), 1), [randn(3, 4)])
    check_op(lambda x: engine.take_along_dim(x, engine.tensor([[0, 2, 2]]), dim=0),  # broadcasts indices
             lambda x: torch.take_along_dim(x, torch.tensor([[0, 2, 2]]), dim=0), [randn(3, 1)])
    check_op(lambda x: x.take_along_dim(engine.tensor([5, 0, 5])), lambda x: x.take_along_dim(torch.tensor([5, 0, 5])),
             [randn(2, 3)])
    check_op(lambda x: engine.take_along_dim(x, engine.from_numpy(np.argsort(x.detach().numpy(), 1)), 1),
             lambda x: torch.take_along_dim(x, torch.argsort(x, 1), 1), [randn(2, 5)])


# ---- index_* --------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dim):
    idx = [2, 0, 2, 2]
    check_op(lambda x: x.index_select(dim, engine.tensor(idx)), lambda x: x.index_select(dim, torch.tensor(idx)),
             [randn(3, 4, 3)])
    check_op(lambda x: engine.index_select(x, dim, engine.tensor([1], dtype=engine.int32)),
             lambda x: torch.index_select(x, dim, torch.tensor([1], dtype=torch.int32)), [noncontiguous(randn(3, 3))])
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        engine.zeros(3).index_select(0, engine.tensor([[0]]))


@pytest.mark.parametrize("dim,alpha", [(0, 1), (1, 2.5), (-1, -1)])
def test_index_add(dim, alpha):
    idx = [1, 0, 1, 1]
    src_shape = (4, 3) if dim == 0 else (3, 4)
    check_op(lambda x, s: x.index_add(dim, engine.tensor(idx), s, alpha=alpha),
             lambda x, s: x.index_add(dim, torch.tensor(idx), s, alpha=alpha), [randn(3, 3), randn(*src_shape)])
    check_op(lambda x, s: (x * 1).index_add_(dim, engine.tensor(idx), s, alpha=alpha),
             lambda x, s: (x * 1).index_add_(dim, torch.tensor(idx), s, alpha=alpha),
             [noncontiguous(randn(3, 3)), randn(*src_shape)])


def test_index_add_errors():
    x = engine.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self \(Float\) and source \(Double\) must have the "
                                           r"same scalar type"):
        x.index_add_(0, engine.tensor([0]), engine.ones(1, 4, dtype=engine.float64))
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to source.size\(dim\): \(1\)"):
        x.index_add_(0, engine.tensor([1, 2]), engine.ones(1, 4))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x.index_add_(0, engine.tensor([5]), engine.ones(1, 4))


@pytest.mark.parametrize("dim", [0, 1])
def test_index_copy_and_fill(dim):
    idx = [2, 0]
    src_shape = (2, 4) if dim == 0 else (3, 2)
    check_op(lambda x, s: x.index_copy(dim, engine.tensor(idx), s), lambda x, s: x.index_copy(dim, torch.tensor(idx), s),
             [randn(3, 4), randn(*src_shape)])
    check_op(lambda x, s: (x * 1).index_copy_(dim, engine.tensor(idx), s),
             lambda x, s: (x * 1).index_copy_(dim, torch.tensor(idx), s), [randn(3, 4), randn(*src_shape)])
    check_op(lambda x: x.index_fill(dim, engine.tensor([0, 0, 2]), -3.0),
             lambda x: x.index_fill(dim, torch.tensor([0, 0, 2]), -3.0), [randn(3, 4)])
    check_op(lambda x, v: (x * 1).index_fill_(dim, engine.tensor([1, 1, 0]), v),
             lambda x, v: (x * 1).index_fill_(dim, torch.tensor([1, 1, 0]), v), [randn(3, 4), randn()])


# ---- masks ------------------------------------------------------------------------------------------
def test_masked_fill():
    mask = RNG.random((3, 4)) > 0.5
    check_op(lambda x: x.masked_fill(engine.from_numpy(mask), 0.5), lambda x: x.masked_fill(torch.from_numpy(mask), 0.5),
             [randn(3, 4)])
    check_op(lambda x, v: engine.masked_fill(x, engine.from_numpy(mask[:1]), v),   # mask broadcasts
             lambda x, v: torch.masked_fill(x, torch.from_numpy(mask[:1]), v), [noncontiguous(randn(3, 4)), randn()])
    check_op(lambda x: x.masked_fill(engine.from_numpy(mask), -1.0),               # input broadcasts
             lambda x: x.masked_fill(torch.from_numpy(mask), -1.0), [randn(4)])
    check_op(lambda x, v: (x * 1).masked_fill_(engine.from_numpy(mask[:, :1]), v),
             lambda x, v: (x * 1).masked_fill_(torch.from_numpy(mask[:, :1]), v), [randn(3, 4), randn()])
    ints = engine.zeros(3, dtype=engine.int64).masked_fill(engine.tensor([True, False, True]), 1.5)
    assert ints.dtype is engine.int64 and ints.tolist() == [1, 0, 1]
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype float"):
        engine.zeros(3).masked_fill(engine.ones(3), 1.0)
    with pytest.raises(RuntimeError, match=r"only supports a 0-dimensional value tensor, but got tensor with 1 "
                                           r"dimension\(s\)"):
        engine.zeros(3).masked_fill(engine.ones(3, dtype=engine.bool), engine.ones(3))


def test_masked_select_and_scatter():
    mask = RNG.random((3, 4)) > 0.4
    check_op(lambda x: x.masked_select(engine.from_numpy(mask)), lambda x: x.masked_select(torch.from_numpy(mask)),
             [randn(3, 4)])
    check_op(lambda x: engine.masked_select(x, engine.from_numpy(mask)),
             lambda x: torch.masked_select(x, torch.from_numpy(mask)), [randn(1, 4)])
    check_op(lambda x, s: x.masked_scatter(engine.from_numpy(mask), s),
             lambda x, s: x.masked_scatter(torch.from_numpy(mask), s), [randn(3, 4), randn(4, 4)])
    check_op(lambda x, s: (x * 1).masked_scatter_(engine.from_numpy(mask), s),
             lambda x, s: (x * 1).masked_scatter_(torch.from_numpy(mask), s), [noncontiguous(randn(3, 4)), randn(12)])


# ---- positions ---------------------------------------------------------------------------------------
def test_nonzero_argwhere_where():
    a = (RNG.random((3, 4, 2)) > 0.6).astype(np.float32)
    for ours, theirs in [(lambda x: engine.nonzero(x), lambda x: torch.nonzero(x)),
                         (lambda x: x.nonzero(as_tuple=True), lambda x: x.nonzero(as_tuple=True)),
                         (lambda x: engine.argwhere(x), lambda x: torch.argwhere(x)),
                         (lambda x: engine.where(x > 0), lambda x: torch.where(x > 0))]:
        check_op(ours, theirs, [a], grad=False)
    check_op(lambda x: engine.nonzero(x), lambda x: torch.nonzero(x), [np.array(1.0, np.float32)], grad=False)


def test_take():
    check_op(lambda x: x.take(engine.tensor([[0, 5], [5, -1]])), lambda x: x.take(torch.tensor([[0, 5], [5, -1]])),
             [randn(2, 3)])
    check_op(lambda x: engine.take(x, engine.tensor([1, 1, 1])), lambda x: torch.take(x, torch.tensor([1, 1, 1])),
             [noncontiguous(randn(2, 3))])
    with pytest.raises(IndexError, match=r"out of range: tried to access index 10 on a tensor of 6 elements."):
        engine.zeros(6).take(engine.tensor([10]))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    check_op(lambda x, y, z: engine.meshgrid(x, y, z, indexing=indexing),
             lambda x, y, z: torch.meshgrid(x, y, z, indexing=indexing), [randn(2), randn(3), randn(4)])
    check_op(lambda x, y: engine.meshgrid([x, y], indexing=indexing),
             lambda x, y: torch.meshgrid([x, y], indexing=indexing), [randn(5), randn(1)])


def test_select():
    check_op(lambda x: x.select(1, -1), lambda x: x.select(1, -1), [randn(2, 3, 4)])
    check_op(lambda x: engine.select(x, 0, 1), lambda x: torch.select(x, 0, 1), [randn(2, 3)])


def test_zero_dim_inputs():
    check_op(lambda x: engine.gather(x, 0, engine.tensor(0)), lambda x: torch.gather(x, 0, torch.tensor(0)), [randn()])
    for key in [None, Ellipsis, ()]:
        check_op(lambda x: x[key], lambda x: x[key], [randn()])


def test_setitem_invalidates_saved_tensors():
    w = engine.randn(3, requires_grad=True)
    a = w * 1
    b = a * w  # saves a
    a[0] = 5.0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
