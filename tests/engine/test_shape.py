"""Shape ops against PyTorch: values, dtypes and gradients; views share memory and versions."""
import re

import numpy as np
import pytest
import torch
from op_check import check_op, noncontiguous

import engine

RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return np.asarray(RNG.standard_normal(shape), dtype)


NC = noncontiguous(randn(3, 5))  # a transposed-storage (3, 5) input


# ---- reshaping ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 5), (-1,), (2, -1, 5), (30,), (1, 30, 1)])
def test_view_and_reshape(shape):
    a = randn(2, 3, 5)
    check_op(lambda x: x.view(*shape), lambda x: x.view(*shape), [a])
    check_op(lambda x: x.reshape(shape), lambda x: x.reshape(shape), [a])
    check_op(lambda x: engine.reshape(x, shape), lambda x: torch.reshape(x, shape), [randn(2, 3, 5, dtype=np.float64)])


def test_reshape_noncontiguous_copies_and_view_refuses():
    check_op(lambda x: x.reshape(-1), lambda x: x.reshape(-1), [NC])
    check_op(lambda x: x.view(3, 5, 1), lambda x: x.view(3, 5, 1), [NC])
    x = engine.from_numpy(randn(2, 3))
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's size and "
                                           r"stride \(at least one dimension spans across two contiguous "
                                           r"subspaces\)\. Use \.reshape\(\.\.\.\) instead\."):
        x.t().view(6)
    with pytest.raises(RuntimeError, match=r"shape '\[2, 5\]' is invalid for input of size 6"):
        x.view(2, 5)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    empty = engine.zeros(0, 6)
    for call in (lambda: empty.reshape(0, -1, 3), lambda: empty.view(-1, 0)):  # torch's words for either
        with pytest.raises(RuntimeError, match=r"cannot reshape tensor of 0 elements into shape \[.*\] because the "
                                               "unspecified dimension size -1 can be any value and is ambiguous"):
            call()
    with pytest.raises(RuntimeError, match=r"shape '\[-1, 0\]' is invalid for input of size 6"):
        x.reshape(-1, 0)


def test_view_shares_memory_and_version():
    a = engine.arange(6.0)
    b = a.view(2, 3)
    b.add_(1)
    np.testing.assert_array_equal(a.numpy(), np.arange(6.0) + 1)
    assert a._version_counter is b._version_counter and b._base is a
    c = b.t()
    c[0, 1] = 100.0  # c[0, 1] is b[1, 0], which is a[3]
    assert a[3].item() == 100.0
    assert a._version == 2
    r = b.t().reshape(6)  # needs a copy: not a view
    r.mul_(0)
    assert a[3].item() == 100.0 and r._version_counter is not a._version_counter


def test_view_as_reshape_as_flatten_unflatten():
    a, b = randn(2, 3, 4), randn(6, 4)
    check_op(lambda x, y: x.view_as(y), lambda x, y: x.view_as(y), [a, b])
    check_op(lambda x, y: x.reshape_as(y), lambda x, y: x.reshape_as(y), [a, b])
    for s, e in [(0, -1), (1, 2), (0, 1), (-2, -1), (2, 2)]:
        check_op(lambda x: x.flatten(s, e), lambda x: x.flatten(s, e), [a])
    check_op(lambda x: engine.flatten(x), lambda x: torch.flatten(x), [randn()])
    check_op(lambda x: x.unflatten(1, (2, -1)), lambda x: x.unflatten(1, (2, -1)), [randn(3, 6, 2)])
    check_op(lambda x: x.unflatten(-1, (1, 2)), lambda x: x.unflatten(-1, (1, 2)), [randn(3, 6, 2)])
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        engine.zeros(2, 3).flatten(1, 0)
    with pytest.raises(RuntimeError, match=r"Provided sizes \[2, 2\] don't multiply up to the size of dim 1"):
        engine.zeros(2, 3).unflatten(1, (2, 2))


@pytest.mark.parametrize("dim", [None, 0, 2, -1, (0, 2), (1,)])
def test_squeeze(dim):
    a = randn(1, 3, 1, 5)
    check_op(lambda x: x.squeeze() if dim is None else x.squeeze(dim),
             lambda x: x.squeeze() if dim is None else x.squeeze(dim), [a])


@pytest.mark.parametrize("dim", [0, 1, 3, -1, -4])
def test_unsqueeze(dim):
    check_op(lambda x: engine.unsqueeze(x, dim), lambda x: torch.unsqueeze(x, dim), [randn(2, 1, 3)])
    check_op(lambda x: x.unsqueeze(dim % 3 - 3 if dim < 0 else min(dim, 2)),
             lambda x: x.unsqueeze(dim % 3 - 3 if dim < 0 else min(dim, 2)), [NC])


def test_atleast():
    for n, (ours, theirs) in enumerate([(engine.atleast_1d, torch.atleast_1d),
                                        (engine.atleast_2d, torch.atleast_2d),
                                        (engine.atleast_3d, torch.atleast_3d)]):
        for shape in [(), (3,), (2, 3), (2, 3, 4)]:
            check_op(ours, theirs, [randn(*shape)])
        check_op(lambda x, y: ours(x, y), lambda x, y: theirs(x, y), [randn(3), randn(2, 3)])


# ---- dim reordering ---------------------------------------------------------------------------------
def test_permute_transpose_t():
    a = randn(2, 3, 4)
    check_op(lambda x: x.permute(2, 0, 1), lambda x: x.permute(2, 0, 1), [a])
    check_op(lambda x: engine.permute(x, (-1, 1, 0)), lambda x: torch.permute(x, (-1, 1, 0)), [a])
    check_op(lambda x: x.transpose(0, -1), lambda x: x.transpose(0, -1), [a])
    check_op(lambda x: engine.swapaxes(x, 1, 2), lambda x: torch.swapaxes(x, 1, 2), [a])
    check_op(lambda x: x.swapdims(0, 1), lambda x: x.swapdims(0, 1), [a])
    check_op(lambda x: x.t(), lambda x: x.t(), [NC])
    check_op(lambda x: engine.t(x), lambda x: torch.t(x), [randn(4)])
    check_op(lambda x: x.T, lambda x: x.T, [randn(3, 4)])
    check_op(lambda x: x.mT, lambda x: x.mT, [randn(2, 3, 4)])
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but self is 3D"):
        engine.zeros(2, 3, 4).t()
    with pytest.raises(RuntimeError, match="number of dimensions in the tensor input does not match"):
        engine.zeros(2, 3).permute(1, 0, 2)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        engine.zeros(2, 3).permute(1, 1)


@pytest.mark.parametrize("src,dst", [(0, 2), (-1, 0), ((0, 1), (2, 0)), ([2], [1])])
def test_movedim(src, dst):
    check_op(lambda x: engine.movedim(x, src, dst), lambda x: torch.movedim(x, src, dst), [randn(2, 3, 4)])
    check_op(lambda x: x.moveaxis(src, dst), lambda x: x.moveaxis(src, dst), [randn(2, 3, 4)])


# ---- broadcasting -----------------------------------------------------------------------------------
def test_expand_and_broadcast():
    check_op(lambda x: x.expand(2, 3, -1), lambda x: x.expand(2, 3, -1), [randn(3, 1)])
    check_op(lambda x: x.expand(4, 3), lambda x: x.expand(4, 3), [randn(1, 3)])
    check_op(lambda x, y: x.expand_as(y), lambda x, y: x.expand_as(y), [randn(1, 5), randn(3, 5)])
    check_op(lambda x: engine.broadcast_to(x, (2, 3, 5)), lambda x: torch.broadcast_to(x, (2, 3, 5)), [NC])
    check_op(lambda x, y, z: engine.broadcast_tensors(x, y, z), lambda x, y, z: torch.broadcast_tensors(x, y, z),
             [randn(3, 1), randn(4), randn(2, 1, 1, dtype=np.float64)])
    assert engine.broadcast_shapes((3, 1), (4,)) == torch.broadcast_shapes((3, 1), (4,))
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match the existing size "
                                           r"\(3\) at non-singleton dimension 1\.  Target sizes: \[2, 4\]\.  "
                                           r"Tensor sizes: \[2, 3\]"):
        engine.zeros(2, 3).expand(2, 4)
    with pytest.raises(RuntimeError, match="isn't allowed in a leading, non-existing dimension 0"):
        engine.zeros(3).expand(-1, 3)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\)"):
        engine.broadcast_tensors(engine.zeros(2, 3), engine.zeros(4))


def test_expand_is_a_view():
    a = engine.zeros(3, 1)
    b = a.expand(3, 4)
    assert b._version_counter is a._version_counter and np.shares_memory(a.numpy(), b.numpy())
    assert b.stride() == (1, 0)


@pytest.mark.parametrize("reps", [(2, 1), (1, 3), (2, 2, 3), (3, 1, 1, 2)])
def test_repeat(reps):
    check_op(lambda x: x.repeat(*reps), lambda x: x.repeat(*reps), [randn(2, 3)])
    check_op(lambda x: x.repeat(reps), lambda x: x.repeat(reps), [NC[:2]])


def test_repeat_errors_and_tile():
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        engine.zeros(2, 3).repeat(2)
    for reps in [(2,), (2, 2), (1, 2, 3)]:
        check_op(lambda x: engine.tile(x, reps), lambda x: torch.tile(x, reps), [randn(2, 3)])
        check_op(lambda x: x.tile(reps), lambda x: x.tile(reps), [randn(3)])
        check_op(lambda x: x.tile(*reps), lambda x: x.tile(*reps), [randn(3)])


def test_repeat_interleave():
    a = randn(3, 4)
    check_op(lambda x: x.repeat_interleave(2), lambda x: x.repeat_interleave(2), [a])
    check_op(lambda x: x.repeat_interleave(3, dim=1), lambda x: x.repeat_interleave(3, dim=1), [a])
    check_op(lambda x: engine.repeat_interleave(x, engine.tensor([1, 0, 3]), dim=0),
             lambda x: torch.repeat_interleave(x, torch.tensor([1, 0, 3]), dim=0), [a])
    check_op(lambda x: x.repeat_interleave(engine.tensor([2, 1, 1, 2]), dim=-1),
             lambda x: x.repeat_interleave(torch.tensor([2, 1, 1, 2]), dim=-1), [NC[:, :4]])
    out = engine.repeat_interleave(engine.tensor([2, 0, 1]))
    np.testing.assert_array_equal(out.numpy(), torch.repeat_interleave(torch.tensor([2, 0, 1])).numpy())


# ---- joining ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(dim):
    shapes = {0: [(2, 3), (1, 3), (4, 3)], 1: [(2, 3), (2, 1), (2, 5)], -1: [(2, 3), (2, 1), (2, 5)]}[dim]
    arrays = [randn(*s) for s in shapes]
    check_op(lambda *xs: engine.cat(xs, dim), lambda *xs: torch.cat(xs, dim), arrays)
    check_op(lambda *xs: engine.concat(list(xs), dim=dim), lambda *xs: torch.concat(list(xs), dim=dim),
             [noncontiguous(arrays[0])] + arrays[1:])


def test_cat_promotes_and_skips_empty():
    check_op(lambda x, y, z: engine.cat([x, y, z], 1), lambda x, y, z: torch.cat([x, y, z], 1),
             [randn(2, 3), np.zeros(0, np.float32), randn(2, 2, dtype=np.float64)])
    check_op(lambda x, y: engine.concatenate([x, y]), lambda x, y: torch.concatenate([x, y]),
             [np.arange(4, dtype=np.int64).reshape(2, 2), randn(1, 2)])
    check_op(lambda x, y: engine.cat([x, y]), lambda x, y: torch.cat([x, y]),
             [np.arange(3, dtype=np.int32), np.array([True, False])])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1. Expected size 3 "
                                           "but got size 4 for tensor number 1 in the list."):
        engine.cat([engine.zeros(3, 2), engine.zeros(4, 2)], dim=1)
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 3"):
        engine.cat([engine.zeros(2, 3), engine.zeros(2, 3, 1)])
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 0\) cannot be concatenated"):
        engine.cat([engine.zeros(()), engine.zeros(())])


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    arrays = [randn(2, 3), randn(2, 3), noncontiguous(randn(2, 3))]
    check_op(lambda *xs: engine.stack(xs, dim), lambda *xs: torch.stack(xs, dim), arrays)


def test_stack_promotion_and_error():
    check_op(lambda x, y: engine.stack([x, y]), lambda x, y: torch.stack([x, y]),
             [randn(3), randn(3, dtype=np.float64)])
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at "
                                           r"entry 0 and \[2, 4\] at entry 1"):
        engine.stack([engine.zeros(2, 3), engine.zeros(2, 4)])


@pytest.mark.parametrize("name", ["hstack", "vstack", "dstack", "column_stack"])
def test_hvd_stack(name):
    ours, theirs = getattr(engine, name), getattr(torch, name)
    for shapes in [[(3,), (2,)] if name == "hstack" else [(3,), (3,)], [(2, 3), (2, 3)], [(2, 3, 2), (2, 3, 2)]]:
        check_op(lambda *xs: ours(xs), lambda *xs: theirs(xs), [randn(*s) for s in shapes])


# ---- splitting ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("arg,dim", [(2, 0), (3, 1), ([1, 3, 1], 1), ([0, 5], -1), (5, 1), (1, 0)])
def test_split(arg, dim):
    check_op(lambda x: x.split(arg, dim), lambda x: x.split(arg, dim), [randn(3, 5)])
    check_op(lambda x: engine.split(x, arg, dim), lambda x: torch.split(x, arg, dim), [NC])


def test_split_unused_outputs_get_zero_grad():
    check_op(lambda x: x.split(2)[1], lambda x: x.split(2)[1], [randn(5, 2)])
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 6 "
                                           r"\(input tensor's size at dimension 0\), but got split_sizes=\[2, 3\]"):
        engine.zeros(6).split([2, 3])


@pytest.mark.parametrize("chunks,dim", [(3, 0), (2, 1), (5, 1), (4, -1), (1, 0)])
def test_chunk(chunks, dim):
    check_op(lambda x: x.chunk(chunks, dim), lambda x: x.chunk(chunks, dim), [randn(5, 5)])
    assert len(engine.chunk(engine.zeros(0), 3)) == len(torch.chunk(torch.zeros(0), 3))


@pytest.mark.parametrize("arg", [3, 2, 6, [1, 3], [4, 1], [-2], (0, 7)])
def test_tensor_split(arg):
    check_op(lambda x: x.tensor_split(arg, dim=1), lambda x: x.tensor_split(arg, dim=1), [randn(2, 5)])
    check_op(lambda x: engine.tensor_split(x, arg), lambda x: torch.tensor_split(x, arg), [randn(5, 2)])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind(dim):
    check_op(lambda x: x.unbind(dim), lambda x: x.unbind(dim), [randn(2, 3, 4)])
    check_op(lambda x: engine.unbind(x, dim)[0], lambda x: torch.unbind(x, dim)[0], [randn(3, 1, 2)])


def test_split_outputs_share_version():
    a = engine.zeros(4, 2)
    first, second = a.split(2)
    second.add_(1)
    assert a.numpy()[2:].sum() == 4 and first._version_counter is a._version_counter is second._version_counter
    rows = a.unbind(0)
    rows[3].mul_(3)
    assert a[3, 0].item() == 3


def test_narrow():
    check_op(lambda x: x.narrow(1, 1, 3), lambda x: x.narrow(1, 1, 3), [randn(2, 5)])
    check_op(lambda x: engine.narrow(x, -1, -3, 2), lambda x: torch.narrow(x, -1, -3, 2), [NC])
    a = engine.zeros(4)
    a.narrow(0, 1, 2).add_(1)
    np.testing.assert_array_equal(a.numpy(), [0, 1, 1, 0])


# ---- flips, rolls, triangles, diagonals ------------------------------------------------------------
def test_flip():
    a = randn(2, 3, 4)
    check_op(lambda x: x.flip(0), lambda x: x.flip(0), [a])
    check_op(lambda x: engine.flip(x, (0, -1)), lambda x: torch.flip(x, (0, -1)), [a])
    check_op(lambda x: x.fliplr(), lambda x: x.fliplr(), [NC])
    check_op(lambda x: engine.flipud(x), lambda x: torch.flipud(x), [NC])
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        engine.zeros(3).fliplr()
    a = engine.zeros(3)
    a.flip(0).add_(1)  # a copy, as in PyTorch
    assert a.numpy().sum() == 0


@pytest.mark.parametrize("shifts,dims", [(1, 0), (-2, 1), ((1, 2), (0, 1)), (3, None), (7, -1)])
def test_roll(shifts, dims):
    check_op(lambda x: x.roll(shifts, dims), lambda x: x.roll(shifts, dims), [randn(3, 4)])
    check_op(lambda x: engine.roll(x, shifts, dims), lambda x: torch.roll(x, shifts, dims), [NC])


@pytest.mark.parametrize("diagonal", [0, 1, -1, 5])
def test_tril_triu(diagonal):
    for shape in [(4, 4), (3, 5), (2, 5, 3)]:
        check_op(lambda x: x.tril(diagonal), lambda x: x.tril(diagonal), [randn(*shape)])
        check_op(lambda x: engine.triu(x, diagonal), lambda x: torch.triu(x, diagonal), [randn(*shape)])
    check_op(lambda x: (x * 1).tril_(diagonal), lambda x: (x * 1).tril_(diagonal), [NC])
    check_op(lambda x: (x * 1).triu_(diagonal), lambda x: (x * 1).triu_(diagonal), [NC])
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        engine.zeros(3).tril()


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (2, 1, 2), (0, -1, 0), (-2, 2, 0)])
def test_diagonal(offset, d1, d2):
    check_op(lambda x: x.diagonal(offset, d1, d2), lambda x: x.diagonal(offset, d1, d2), [randn(3, 4, 5)])


def test_diagonal_is_a_writable_view():
    a = engine.zeros(3, 3)
    a.diagonal().add_(1)
    np.testing.assert_array_equal(a.numpy(), np.eye(3))


@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diag(offset):
    check_op(lambda x: engine.diag(x, offset), lambda x: torch.diag(x, offset), [randn(3)])
    check_op(lambda x: x.diag(offset), lambda x: x.diag(offset), [randn(3, 4)])
    check_op(lambda x: engine.diag(x, offset), lambda x: torch.diag(x, offset), [NC])


def test_grad_through_chain_of_views():
    check_op(lambda x: x.permute(2, 0, 1).reshape(4, -1).t().unsqueeze(0).expand(2, -1, -1) * 2,
             lambda x: x.permute(2, 0, 1).reshape(4, -1).t().unsqueeze(0).expand(2, -1, -1) * 2,
             [randn(2, 3, 4)])


def test_view_as_another_dtype_as_torch():
    """``view(dtype)``: the same bytes read as another type (bfloat16 bits as int16, floats as bytes), the last
    dim scaled by the size ratio, torch's errors where the layout does not allow it, and writes through."""
    def cases(lib):
        x = lib.arange(-6, 6, dtype=lib.float32).reshape(2, 6) / 3
        return [lambda: x.view(lib.int32), lambda: x.view(lib.uint8), lambda: x.view(dtype=lib.int16),
                lambda: x[:, 2:].view(lib.float64), lambda: x.bfloat16().view(lib.int16),
                lambda: x.view(lib.int16).view(lib.bfloat16).float(), lambda: lib.tensor(1.0).view(lib.int16),
                lambda: x[:, 1:].view(lib.float64), lambda: x[:, :5].view(lib.int64), lambda: x.t().view(lib.int16),
                lambda: x[:, ::2].view(lib.uint8)]
    for ours, theirs in zip(cases(engine), cases(torch)):
        try:
            expected = theirs()
        except RuntimeError as error:
            with pytest.raises(RuntimeError, match=re.escape(str(error))):
                ours()
            continue
        got = ours()
        assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
        assert tuple(got.shape) == tuple(expected.shape) and got.tolist() == expected.tolist()
    x = engine.zeros(4, requires_grad=True)
    bits = x.detach().view(engine.int32)
    bits[1] = 1065353216  # 1.0's bits
    assert x.tolist() == [0.0, 1.0, 0.0, 0.0] and not x.view(engine.int32).requires_grad


def test_cat_lays_its_result_out_as_torch():
    """Contiguous, or channels-last where every input is: a dropout after the cat then drops torch's elements."""
    tokens = randn(2, 8, 5)
    ours = engine.cat([engine.zeros(2, 1, 8), engine.from_numpy(tokens).transpose(1, 2)], 1)
    theirs = torch.cat([torch.zeros(2, 1, 8), torch.from_numpy(tokens).transpose(1, 2)], 1)
    assert ours.stride() == theirs.stride()
    engine.manual_seed(4)
    torch.manual_seed(4)
    np.testing.assert_array_equal(engine.nn.functional.dropout(ours + 1, 0.5).numpy(),
                                  torch.nn.functional.dropout(theirs + 1, 0.5).numpy())
    nhwc = randn(2, 5, 6, 3)
    for others in ([nhwc], [nhwc.transpose(0, 3, 1, 2).copy()]):
        ours = engine.cat([engine.from_numpy(x).permute(0, 3, 1, 2) if x.shape[-1] == 3 else engine.from_numpy(x)
                           for x in [nhwc, *others]], 1)
        theirs = torch.cat([torch.from_numpy(x).permute(0, 3, 1, 2) if x.shape[-1] == 3 else torch.from_numpy(x)
                            for x in [nhwc, *others]], 1)
        assert ours.stride() == theirs.stride()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.flip(x, dims=[1]), lambda lib, x: x.flip(dims=(0,)), lambda lib, x: lib.permute(x, dims=(1, 0)),
    lambda lib, x: x.permute(dims=[1, 0]), lambda lib, x: lib.reshape(x, shape=(3, 2)),
    lambda lib, x: x.reshape(shape=(-1,)), lambda lib, x: x.view(size=(3, 2)), lambda lib, x: lib.tile(x, dims=(2,)),
    lambda lib, x: x.tile(dims=(2, 1, 1)), lambda lib, x: x.expand(size=(2, 2, 3)),
    lambda lib, x: x.repeat(repeats=(2, 1)),
])
def test_sizes_and_dims_by_keyword(call):
    """torch's variadic size and dim arguments also come by keyword (``x.permute(dims=...)``)."""
    ours = call(engine, engine.arange(6).reshape(2, 3))
    theirs = call(torch, torch.arange(6).reshape(2, 3))
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.tolist() == theirs.tolist()


def test_sizes_both_by_position_and_keyword_are_refused():
    with pytest.raises(TypeError, match="got multiple values for argument 'dims'"):
        engine.arange(6).reshape(2, 3).permute(1, 0, dims=(1, 0))


def test_stack_of_transposed_inputs_is_contiguous():
    """numpy's stack kept the inputs' order (strides (12, 1, 4)); torch's result is contiguous, so .view works."""
    x = np.arange(12.0).reshape(3, 4)
    ours = engine.stack([engine.tensor(x).t()] * 2)
    theirs = torch.stack([torch.tensor(x).t()] * 2)
    assert ours.stride() == theirs.stride() == (12, 3, 1)
    np.testing.assert_array_equal(ours.view(2, -1).numpy(), theirs.view(2, -1).numpy())


@pytest.mark.parametrize("join", ["cat", "concat", "stack", "hstack"])
def test_joining_nothing_raises_as_torch(join):
    with pytest.raises(Exception) as theirs:
        getattr(torch, join)([])
    with pytest.raises(type(theirs.value), match=f"^{re.escape(str(theirs.value))}$"):
        getattr(engine, join)([])
