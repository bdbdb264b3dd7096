"""Shape and view ops against torch: the cases a differential fuzzer (random shapes up to 5-d, 0-d and zero-size
tensors, every dtype, transposed, gap-strided and expanded inputs) found different, fixed.

Each case runs the same call on torch and on engine tensors built from the same numpy data and compares values,
dtypes, shapes, strides, gradients, or the error (type and first line).
"""
import warnings

import numpy as np
import pytest
import torch

import engine
from op_check import assert_same_error, check_op

pytestmark = pytest.mark.slow  # ~120 small cases: over 2 s together


def _tensor(lib, array):
    return (torch.from_numpy if lib is torch else engine.from_numpy)(np.array(array))


def _results(fn, *arrays):
    """``fn(lib, *tensors)`` for torch and engine, each as a list of outputs."""
    out = []
    for lib in (torch, engine):
        r = fn(lib, *[_tensor(lib, a) for a in arrays])
        out.append(list(r) if isinstance(r, (tuple, list)) else [r])
    return out


def _same(fn, *arrays, strides=False):
    """Same values, dtypes and shapes (and strides) output by output."""
    theirs, ours = _results(fn, *arrays)
    assert len(theirs) == len(ours)
    for t, o in zip(theirs, ours):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert tuple(o.shape) == tuple(t.shape)
        np.testing.assert_array_equal(o.detach().numpy(), t.detach().numpy())
        if strides:
            assert o.stride() == t.stride()


def _same_error(fn, *arrays):
    ours = [_tensor(engine, a) for a in arrays]
    theirs = [_tensor(torch, a) for a in arrays]
    assert_same_error(lambda: fn(engine, *ours), lambda: fn(torch, *theirs), first_line=True)


_RNG = np.random.default_rng(27)
_X = _RNG.standard_normal((3, 4, 5)).astype(np.float32)
_V = np.arange(5.0)
_S = np.float32(1.5)  # a 0-d input


# ---- broadcast_shapes: torch's Python rules and messages ---------------------------------------------------
@pytest.mark.parametrize("shapes", [(3, (2, 1)), ((1, 3), None, 1), (), ((0,), 1), ([2, 1], (4, 1, 1)),
                                    (range(3), (2, 1))])
def test_broadcast_shapes_takes_ints_and_skips_none(shapes):
    assert tuple(engine.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))


@pytest.mark.parametrize("shapes", [((3, 3, 2), (2, 3)), ((1, 1, 3), (3, 3, 2)), (3, (2,)), ((3,), (-1,)),
                                    ((1,), (-2,)), ({2},), ((2, 2), 2.5)])
def test_broadcast_shapes_errors(shapes):
    assert_same_error(lambda: engine.broadcast_shapes(*shapes), lambda: torch.broadcast_shapes(*shapes))


def test_broadcast_tensors_keeps_the_tensor_message_naming_the_result_dim():
    _same_error(lambda lib, a, b: lib.broadcast_tensors(a, b), _X, _V[:4])


# ---- 0-d tensors ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda lib, x: lib.flip(x, (0,)), lambda lib, x: lib.flip(x, (-1,)), lambda lib, x: x.flip(()),
    lambda lib, x: lib.roll(x, 3), lambda lib, x: lib.repeat_interleave(x, 2),
    lambda lib, x: lib.repeat_interleave(x, lib.tensor([3])),
])
def test_zero_dim_inputs_work(call):
    _same(call, _S)


def test_mT_of_a_zero_dim_tensor_is_itself_with_torchs_warning():
    with pytest.warns(UserWarning, match="Tensor.mT is deprecated on 0-D tensors"):
        _same(lambda lib, x: x.mT, _S)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.flip(x, (0, -1)), lambda lib, x: lib.flip(x, (1,)),
    lambda lib, x: lib.roll(x, 1, 0), lambda lib, x: lib.roll(x, 1, -1), lambda lib, x: lib.roll(x, [1, 2], [0, 1]),
    lambda lib, x: lib.roll(x, 1, 1),
    lambda lib, x: lib.repeat_interleave(x, 2, 0), lambda lib, x: lib.repeat_interleave(x, 2, -1),
    lambda lib, x: lib.repeat_interleave(x, 2, 2), lambda lib, x: lib.repeat_interleave(x, lib.tensor([2]), -1),
    lambda lib, x: lib.repeat_interleave(x, lib.tensor(2), 0),
    lambda lib, x: lib.split(x, 1), lambda lib, x: lib.split_copy(x, 1), lambda lib, x: x.split([1]),
    lambda lib, x: lib.chunk(x, 2), lambda lib, x: lib.tensor_split(x, 2),
    lambda lib, x: x.unbind(0), lambda lib, x: x.unbind(-1), lambda lib, x: lib.unbind_copy(x, 0),
    lambda lib, x: x.unbind(3),
    lambda lib, x: x.unflatten(0, (1,)), lambda lib, x: x.unflatten(-1, (1,)), lambda lib, x: x.unflatten(0, ()),
    lambda lib, x: lib.slice_copy(x, 0), lambda lib, x: lib.narrow_copy(x, 0, 0, 1),
])
def test_zero_dim_errors(call):
    _same_error(call, _S)


# ---- which results are the input itself, views, or fresh tensors ---------------------------------------------
@pytest.mark.parametrize("call", [lambda lib, x: x.flatten(1, 1), lambda lib, x: x.flatten(-1, 2),
                                  lambda lib, x: x[0, 0].flatten(), lambda lib, x: lib.broadcast_tensors(x, x[0])[0]])
def test_results_that_are_the_input_itself(call):
    """torch hands back the tensor itself where nothing changes (not a view of it)."""
    theirs, ours = (_tensor(lib, _X) for lib in (torch, engine))
    assert call(torch, theirs) is theirs or call(torch, theirs)._base is not None  # the cases are of both kinds
    assert (call(engine, ours) is ours) == (call(torch, theirs) is theirs)
    x = _tensor(engine, _S)
    with pytest.warns(UserWarning):
        assert x.mT is x


@pytest.mark.parametrize("call", [lambda lib, x: lib.rot90(x, 1, (0, 2)), lambda lib, x: lib.rot90(x, -1),
                                  lambda lib, x: lib.roll(x, 2), lambda lib, x: lib.roll(x.transpose(0, 1), -7),
                                  lambda lib, x: lib.broadcast_tensors(x, x[:, :1])[1]])
def test_results_that_are_not_views_of_temporaries(call):
    _same(call, _X, strides=True)
    theirs, ours = (call(lib, _tensor(lib, _X)) for lib in (torch, engine))
    assert (ours._base is None) == (theirs._base is None)


# ---- argument checks in torch's order ------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda lib, x: x.narrow(0, 6, -1), lambda lib, x: x.narrow(0, -6, 1), lambda lib, x: x.narrow(0, 4, 2),
    lambda lib, x: x.narrow(0, lib.tensor(6), -1), lambda lib, x: x.narrow(0, lib.tensor([1]), 1),
    lambda lib, x: x.narrow(0, lib.tensor(1.0), 1),
    lambda lib, x: lib.narrow_copy(x, 0, 5, -1), lambda lib, x: lib.narrow_copy(x, 0, 1, -1),
    lambda lib, x: lib.narrow_copy(x, 0, -6, 1), lambda lib, x: lib.narrow_copy(x, 0, -1, 2),
    lambda lib, x: lib.narrow_copy(x, -1, 0, 9),
])
def test_narrow_errors(call):
    _same_error(call, _V)


@pytest.mark.parametrize("call", [lambda lib, x: x.narrow(0, lib.tensor(-2), 2),
                                  lambda lib, x: x.narrow(0, lib.tensor(1, dtype=lib.uint8), 3),
                                  lambda lib, x: lib.narrow_copy(x, 0, -2, 2),
                                  lambda lib, x: lib.narrow_copy(x, 0, 5, 0)])
def test_narrow_starts(call):
    _same(call, _V)


@pytest.mark.parametrize("call", [
    lambda lib, x: x.split([1, 1], -3), lambda lib, x: lib.split(x, [4, 2], -1),
    lambda lib, x: lib.repeat_interleave(x, lib.tensor([1, 2]), -2),
    lambda lib, x: x.unflatten(1, []), lambda lib, x: x.unflatten(7, []),
])
def test_messages_name_the_dim_as_given(call):
    _same_error(call, _X)


@pytest.mark.parametrize("make, target", [
    (lambda lib: lib.zeros(4, dtype=lib.int8)[::2], "int16"), (lambda lib: lib.zeros(2, dtype=lib.int8)[::2], "int16"),
    (lambda lib: lib.zeros(2, 0, 0, 5, dtype=lib.int8), "int16"),
    (lambda lib: lib.zeros(6, dtype=lib.int8)[1:5], "int16"),
    (lambda lib: lib.zeros(5, 2, dtype=lib.complex64)[:, ::2], "float16"),
])
def test_view_as_another_dtype_checks_in_torchs_order(make, target):
    assert_same_error(lambda: make(engine).view(getattr(engine, target)),
                      lambda: make(torch).view(getattr(torch, target)))


@pytest.mark.parametrize("shapes, dim", [(((), (0,)), 1), (((0,), (4, 2)), 3), (((2,), (3,)), -2)])
def test_stack_checks_the_dim_before_the_shapes(shapes, dim):
    _same_error(lambda lib, *xs: lib.stack(xs, dim), *[np.zeros(s) for s in shapes])


def test_roll_of_an_empty_tensor_reads_no_dims():
    _same(lambda lib, x: lib.roll(x, 1, 5), np.zeros((0, 3)))
    _same_error(lambda lib, x: lib.roll(x, [1, 2], 5), np.zeros((0, 3)))


# ---- copies and scatters -------------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [lambda lib, x: lib.split_copy(x, 2, 1), lambda lib, x: lib.unbind_copy(x, -1),
                                  lambda lib, x: lib.split_with_sizes_copy(x, [1, 3], 1)])
def test_copies_of_several_views_are_tuples(call):
    theirs, ours = (call(lib, _tensor(lib, _X)) for lib in (torch, engine))
    assert type(ours) is type(theirs) is tuple


@pytest.mark.parametrize("size", [[-1], [4, 15], [60]])
def test_view_copy_of_a_layout_a_view_cannot_take(size):
    _same(lambda lib, x: lib.view_copy(x.transpose(0, 2), size), _X, strides=True)


@pytest.mark.parametrize("src_dtype", ["float64", "int64", "bool", "float16"])
@pytest.mark.parametrize("call", [
    lambda lib, x, s: lib.select_scatter(x, s[:, 0], 1, 2), lambda lib, x, s: lib.slice_scatter(x, s[1:2], 0, 1, 2),
    lambda lib, x, s: lib.diagonal_scatter(x, s[0, :4], 1),
    lambda lib, x, s: lib.as_strided_scatter(x, s[:1], (1, 5), (5, 1), 2),
])
def test_scatters_convert_src_to_inputs_dtype(call, src_dtype):
    _same(call, (_X[0] * 10).astype(np.int32), (_X[1] * 10).astype(src_dtype))


def test_scatter_gradient_reaches_a_src_of_another_dtype():
    check_op(lambda x, s: engine.slice_scatter(x, s.to(engine.float64), 1, 0, 2).to(engine.float32),
             lambda x, s: torch.slice_scatter(x, s.to(torch.float64), 1, 0, 2).to(torch.float32),
             [_X, _X[:, :2].astype(np.float64)])


_LAYOUTS = {
    "transposed": lambda lib, x: x.transpose(0, 2),
    "gaps": lambda lib, x: x[:, ::2],
    "offset": lambda lib, x: x[1:, 1::2],
    "expanded": lambda lib, x: x[:, :1].expand(3, 4, 5),
}


@pytest.mark.parametrize("layout", sorted(_LAYOUTS))
@pytest.mark.parametrize("call", [
    lambda lib, x: lib.select_scatter(x, lib.ones(x.shape[1:]), 0, 1),
    lambda lib, x: lib.slice_scatter(x, lib.ones((1,) + tuple(x.shape[1:])), 0, 1, 2),
    lambda lib, x: lib.diagonal_scatter(x, lib.ones(x.diagonal().shape), 0),
    lambda lib, x: lib.as_strided_scatter(x, lib.ones(2, 3), (2, 3), (3, 2)),
    lambda lib, x: lib.as_strided_scatter(x, lib.ones(2), (2,), (1,), 1),
])
def test_scatters_read_and_keep_the_inputs_layout(call, layout):
    """torch copies the input with its strides (gaps included) and reads as_strided's geometry over that memory; an
    expanded input is copied row-major."""
    _same(lambda lib, x: call(lib, _LAYOUTS[layout](lib, x)), _X, strides=True)


def test_as_strided_scatter_messages():
    _same_error(lambda lib, x: lib.as_strided_scatter(x, lib.ones(2, 3, dtype=lib.int8), (2, 3), (19, 1)),
                _X[0].astype(np.int8))
    _same_error(lambda lib, x: lib.as_strided_scatter(x, lib.ones(3), (3,), (0,)), _X)
    _same_error(lambda lib, x: lib.as_strided_scatter(x, lib.ones(2, 3), (2, 3), (1, 0)), _X)


# ---- as_strided over an expanded tensor ------------------------------------------------------------------------
def test_as_strided_of_an_expanded_tensor_reads_its_memory():
    theirs, ours = _results(lambda lib, x: x[:, :1].expand(3, 4).as_strided((2, 2), (1, 1), 1), _X[0, :3])
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    e = engine.from_numpy(_X[0, :3].copy())[:, :1].expand(3, 4)
    assert np.shares_memory(e.as_strided((3,), (1,))._data, e._data)
    _same_error(lambda lib, x: x.expand(4).as_strided((2,), (3,)), _V[:1].copy())


@pytest.mark.parametrize("size, stride", [((), ()), ((2, 2), (1, 0)), ((3,), (1,))])
def test_as_strided_gradient_of_an_expanded_tensor(size, stride):
    """torch divides the memory's gradient among the expanded copies: the expand's backward sums them back."""
    check_op(lambda x: engine.as_strided(x.expand(3, 4), size, stride),
             lambda x: torch.as_strided(x.expand(3, 4), size, stride), [_X[0, :3, :1].astype(np.float64)])
    check_op(lambda x: engine.as_strided_copy(x.expand(3, 4), size, stride),
             lambda x: torch.as_strided_copy(x.expand(3, 4), size, stride), [_X[0, :3, :1].astype(np.float64)])


# ---- layouts of bfloat16 copies ------------------------------------------------------------------------------
@pytest.mark.parametrize("call", [lambda lib, x: lib.fliplr(x), lambda lib, x: lib.flip(x, (0,)),
                                  lambda lib, x: lib.roll(x, 1, 0), lambda lib, x: lib.rot90(x),
                                  lambda lib, x: lib.select_scatter(x[:, ::2], x[0, ::2], 0, 1)])
def test_moves_of_expanded_bfloat16_tensors_are_laid_out_as_torchs(call):
    theirs, ours = (call(lib, _tensor(lib, _X[:, :1]).to(lib.bfloat16).expand(3, 4, 5)) for lib in (torch, engine))
    assert ours.stride() == theirs.stride()
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


# ---- joins into out= and sum_to_size ------------------------------------------------------------------------------
@pytest.mark.parametrize("join", ["cat", "stack"])
@pytest.mark.parametrize("out_shape, out_dtype", [((0,), "float64"), ((7,), "float32"), ((2, 5), "complex64")])
def test_joins_resize_out(join, out_shape, out_dtype):
    def call(lib, a, b):
        out = lib.zeros(out_shape, dtype=getattr(lib, out_dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation of resizing a non-empty out
            result = getattr(lib, join)([a, b], 0, out=out)
        assert result is out
        return out
    _same(call, _V.astype(np.int32), _V.astype(np.float32))


@pytest.mark.parametrize("join", ["cat", "stack"])
@pytest.mark.parametrize("out_dtype, dtypes", [("int64", ("float32", "int32")), ("bool", ("int32", "bool")),
                                               ("float64", ("complex64", "float32"))])
def test_joins_refuse_an_out_of_a_lower_category(join, out_dtype, dtypes):
    a, b = (_V.astype(d) for d in dtypes)
    _same_error(lambda lib, a, b: getattr(lib, join)([a, b], out=lib.empty(0, dtype=getattr(lib, out_dtype))), a, b)


@pytest.mark.parametrize("dtype", ["int16", "bool", "uint8", "float64"])
def test_sum_to_size_of_a_zero_dim_tensor_sums(dtype):
    _same(lambda lib, x: x.sum_to_size([]), np.array(3, dtype))
    _same(lambda lib, x: x.sum_to_size(()), (np.arange(3) % 2).astype(dtype))


# ---- the CUDA backend (emulated here) ----------------------------------------------------------------------------
def test_scatters_and_as_strided_on_cuda(cuda):
    for layout in ("gaps", "transposed"):
        x = _LAYOUTS[layout](engine, engine.from_numpy(_X.copy()).to("cuda"))
        ref = _LAYOUTS[layout](torch, torch.from_numpy(_X.copy()))
        ours = engine.as_strided_scatter(x, engine.ones(2, 3, device="cuda"), (2, 3), (3, 2))
        theirs = torch.as_strided_scatter(ref, torch.ones(2, 3), (2, 3), (3, 2))
        assert ours.device.type == "cuda" and ours.stride() == theirs.stride()
        np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())
        ours = engine.select_scatter(x, engine.ones(x.shape[1:], dtype=engine.float64, device="cuda"), 0, 1)
        theirs = torch.select_scatter(ref, torch.ones(ref.shape[1:], dtype=torch.float64), 0, 1)
        assert ours.stride() == theirs.stride()
        np.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())
    x = engine.from_numpy(_X[0, :3, :1].astype(np.float64)).to("cuda").requires_grad_()
    y = engine.as_strided(x.expand(3, 4), (2, 2), (1, 0))
    y.backward(engine.ones(2, 2, dtype=engine.float64, device="cuda"))
    np.testing.assert_array_equal(x.grad.cpu().numpy().ravel(), [2.0, 2.0, 0.0])  # torch's
