"""The Tensor API surface against PyTorch: the attributes code queries (``is_xpu``, ``layout``,
``itemsize`` ...), the in-place method family (``addcmul_``, ``lerp_``, ``x.foo_`` for every ``x.foo``
PyTorch has both of) with its autograd and errors, the view ops that change the tensor itself
(``t_``, ``squeeze_``), ``resize_``, ``apply_``/``map_``, and the index forms PyTorch accepts
(``range``, lists of bools, slices with tensor bounds).
"""
import numpy as np
import pytest
import torch
from op_check import assert_same_error, check_op, noncontiguous

import engine

RNG = np.random.default_rng(11)


def randn(*shape, dtype=np.float32):
    return np.asarray(RNG.standard_normal(shape), dtype)


def uniform(low, high, *shape):
    return np.asarray(RNG.uniform(low, high, shape), np.float32)


def same_error(make):
    """``make(mod)`` fails in the engine with PyTorch's message."""
    with pytest.raises(Exception) as theirs:
        make(torch)
    with pytest.raises(Exception) as ours:
        make(engine)
    assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]
    kind = RuntimeError if isinstance(theirs.value, RuntimeError) else type(theirs.value)
    assert isinstance(ours.value, kind)


# ---- attributes -----------------------------------------------------------------------------------------
FLAGS = ["is_cpu", "is_cuda", "is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_sparse_csr",
         "is_nested", "is_mkldnn", "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia", "is_leaf",
         "requires_grad", "itemsize", "nbytes", "ndim", "output_nr"]
QUERIES = ["is_complex", "is_conj", "is_neg", "is_inference", "is_signed", "is_shared", "is_floating_point",
           "is_contiguous", "storage_offset", "element_size", "dim", "numel"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8",
                                   "bool"])
def test_attributes_match_torch(dtype):
    data = np.arange(24).reshape(2, 3, 4)
    ours, theirs = engine.tensor(data).to(getattr(engine, dtype)), torch.tensor(data).to(getattr(torch, dtype))
    for view in (lambda t: t, lambda t: t[1:, ::2], lambda t: t.transpose(0, 2), lambda t: t[1, 2]):
        a, b = view(ours), view(theirs)
        for name in FLAGS:
            assert getattr(a, name) == getattr(b, name), name
        for name in QUERIES:
            assert getattr(a, name)() == getattr(b, name)(), name
        assert a.dim_order() == b.dim_order()


def test_output_nr_and_flags_of_computed_tensors():
    for m in (engine, torch):
        x = m.ones(2, 3, requires_grad=True)
        parts = (x * 2).split(1, dim=0)
        assert [p.output_nr for p in parts] == [0, 1]
        assert not parts[1].is_leaf and parts[1].is_cpu


def test_layout_and_memory_formats():
    x = engine.zeros(2, 3)
    assert x.layout is engine.strided and isinstance(engine.strided, engine.layout)
    assert repr(engine.strided) == "engine.strided" and str(x.layout) == "engine.strided"
    assert repr(engine.channels_last) == "engine.channels_last"
    assert isinstance(engine.contiguous_format, engine.memory_format)
    assert x.contiguous(memory_format=engine.contiguous_format) is x
    import pickle
    assert pickle.loads(pickle.dumps(engine.channels_last)) is engine.channels_last


@pytest.mark.parametrize("query", ["size", "stride"])
@pytest.mark.parametrize("shape, dim", [((), 0), ((), -1), ((2,), 1), ((2, 3), -3)])
def test_size_and_stride_of_a_missing_dim_raise_as_torch(query, shape, dim):
    assert_same_error(lambda: getattr(engine.zeros(shape), query)(dim), lambda: getattr(torch.zeros(shape), query)(dim))


def test_is_nonzero_and_is_same_size():
    assert engine.tensor([2.0]).is_nonzero() is torch.tensor([2.0]).is_nonzero()
    assert engine.tensor(0).is_nonzero() is torch.tensor(0).is_nonzero()
    assert engine.zeros(2, 3).is_same_size(engine.ones(2, 3)) and not engine.zeros(2).is_same_size(engine.ones(3))
    same_error(lambda m: m.tensor([1.0, 2.0]).is_nonzero())
    same_error(lambda m: m.tensor([]).is_nonzero())


# ---- the in-place family ------------------------------------------------------------------------------------
def _on_copy(method, *args, **kwargs):
    """``(x * 1).method(*args)``: the in-place op on a non-leaf copy, so that gradients reach x."""
    return lambda x, *operands: getattr(x * 1, method)(*operands, *args, **kwargs)


INPLACE = [  # (method, inputs, extra args, kwargs)
    ("addcmul_", lambda: [randn(3, 4), randn(4), randn(3, 1)], (), {"value": 0.3}),
    ("addcdiv_", lambda: [randn(3, 4), randn(4), uniform(0.5, 2, 3, 1)], (), {"value": -2}),
    ("lerp_", lambda: [randn(3, 4), randn(4), uniform(0, 1, 3, 1)], (), {}),
    ("lerp_", lambda: [randn(3, 4), randn(3, 4)], (0.7,), {}),
    ("hypot_", lambda: [randn(3, 4), randn(4)], (), {}),
    ("copysign_", lambda: [randn(3, 4), randn(4)], (), {}),
    ("xlogy_", lambda: [randn(3, 4), uniform(0.1, 3, 4)], (), {}),
    ("atan2_", lambda: [randn(3, 4), randn(4)], (), {}),
    ("arctan2_", lambda: [randn(3, 4), randn(3, 1)], (), {}),
    ("fmod_", lambda: [randn(3, 4) * 4, uniform(1, 2, 4)], (), {}),
    ("clamp_min_", lambda: [randn(3, 4), randn(4)], (), {}),
    ("clamp_max_", lambda: [randn(3, 4)], (0.2,), {}),
    ("cumsum_", lambda: [randn(3, 4)], (1,), {}),
    ("cumprod_", lambda: [randn(3, 4)], (0,), {}),
    ("nan_to_num_", lambda: [np.array([1.0, np.nan, np.inf, -np.inf], np.float32)], (), {"nan": 2.0}),
    ("addmm_", lambda: [randn(3, 4), randn(3, 5), randn(5, 4)], (), {"beta": 0.5, "alpha": 2}),
    ("baddbmm_", lambda: [randn(2, 3, 4), randn(2, 3, 5), randn(2, 5, 4)], (), {}),
    ("erfinv_", lambda: [uniform(-0.9, 0.9, 3, 4)], (), {}),
    ("logit_", lambda: [uniform(0.05, 0.95, 3, 4)], (0.1,), {}),
    ("sinc_", lambda: [randn(3, 4)], (), {}),
    ("digamma_", lambda: [uniform(0.5, 4, 3, 4)], (), {}),
    ("lgamma_", lambda: [uniform(0.5, 4, 3, 4)], (), {}),
    ("erfc_", lambda: [randn(3, 4)], (), {}),
    ("deg2rad_", lambda: [randn(3, 4)], (), {}),
    ("absolute_", lambda: [randn(3, 4)], (), {}),
    ("negative_", lambda: [randn(3, 4)], (), {}),
    ("divide_", lambda: [randn(3, 4), uniform(1, 2, 4)], (), {}),
    ("multiply_", lambda: [randn(3, 4), randn(4)], (), {}),
    ("subtract_", lambda: [randn(3, 4), randn(4)], (), {"alpha": 3}),
    ("true_divide_", lambda: [randn(3, 4), uniform(1, 2, 4)], (), {}),
    ("arccos_", lambda: [uniform(-0.9, 0.9, 3, 4)], (), {}),
    ("fix_", lambda: [randn(3, 4) * 3], (), {}),
]


@pytest.mark.parametrize("method,make,args,kwargs", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_values_and_gradients(method, make, args, kwargs):
    inputs = make()
    check_op(_on_copy(method, *args, **kwargs), _on_copy(method, *args, **kwargs), inputs)
    inputs[0] = noncontiguous(inputs[0]) if inputs[0].ndim >= 2 else inputs[0]
    check_op(_on_copy(method, *args, **kwargs), _on_copy(method, *args, **kwargs), inputs)


@pytest.mark.parametrize("method", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_", "greater_", "greater_equal_", "less_",
                                    "less_equal_", "not_equal_", "logical_and_", "logical_or_", "logical_xor_"])
def test_inplace_comparisons_write_ones_and_zeros(method):
    a = np.round(randn(3, 4))
    b = np.round(randn(4))
    check_op(_on_copy(method), _on_copy(method), [a, b], grad=False)
    check_op(lambda x, y: getattr(x.long(), method)(y), lambda x, y: getattr(x.long(), method)(y), [a, b], grad=False)


def test_inplace_unary_logic_and_bitwise():
    check_op(_on_copy("logical_not_"), _on_copy("logical_not_"), [np.round(randn(3, 4))], grad=False)
    ints = RNG.integers(-8, 8, (3, 4))
    for method in ("bitwise_not_", "gcd_", "lcm_", "bitwise_xor_"):
        operands = [] if method == "bitwise_not_" else [ints[::-1].copy()]
        check_op(lambda x, *o: getattr(x.clone(), method)(*o), lambda x, *o: getattr(x.clone(), method)(*o),
                 [ints] + operands)
    check_op(lambda x: x.clone().heaviside_(x * 0 + 3), lambda x: x.clone().heaviside_(x * 0 + 3), [ints])


def test_every_inplace_twin_torch_has_exists_when_the_op_does():
    """``x.foo_`` for every ``x.foo`` PyTorch has both of, whenever the engine has ``x.foo``."""
    names = [n for n in dir(torch.Tensor) if n.endswith("_") and not n.startswith("_") and n[:-1] in dir(torch.Tensor)]
    lacking = [n for n in names if hasattr(engine.Tensor, n[:-1]) and not hasattr(engine.Tensor, n)]
    assert not lacking, f"out-of-place op without its in-place twin: {lacking}"


def test_inplace_returns_self_shares_memory_and_bumps_version():
    x = engine.ones(2, 3)
    view = x[0]
    before = x._version
    assert x.hypot_(engine.ones(3)) is x
    assert view.tolist() == pytest.approx([2 ** 0.5] * 3)
    assert x._version > before
    assert x.addcmul_(engine.ones(3), engine.ones(2, 1), value=2) is x


def test_inplace_keeps_saved_values_for_backward():
    """An op that saved x for backward still differentiates correctly after x changed in place,
    and one that saved x before the change is told it was modified."""
    for m in (engine, torch):
        w = m.tensor([0.5, -1.0, 2.0], requires_grad=True)
        other = m.tensor([1.0, 2.0, -3.0], requires_grad=True)
        x = w * 1
        x.hypot_(other)
        x.sum().backward()
        assert w.grad.tolist() == pytest.approx((np.array([0.5, -1, 2]) / np.hypot([0.5, -1, 2], [1, 2, -3])).tolist())
    for m in (engine, torch):
        x = m.tensor([0.5, 1.0], requires_grad=True) * 1
        y = x.sin()
        x.xlogy_(m.tensor([2.0, 3.0]))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_inplace_errors_match_torch():
    same_error(lambda m: m.zeros(3).float_power_(2))
    same_error(lambda m: m.zeros(3, dtype=m.int64).hypot_(m.ones(3)))
    same_error(lambda m: m.zeros(3).hypot_(m.ones(2, 3)))
    same_error(lambda m: m.zeros(3).add_(m.ones(2, 3)))
    same_error(lambda m: m.zeros(3).lerp_(m.ones(2, 3), 0.5))
    same_error(lambda m: m.zeros(3, dtype=m.int64).addcdiv_(m.ones(3), m.ones(3)))
    same_error(lambda m: m.randn(2, requires_grad=True).copysign_(m.ones(2)))
    same_error(lambda m: m.randn(2, 3, requires_grad=True).t_())
    check_op(lambda x: x.double().float_power_(1.5), lambda x: x.double().float_power_(1.5), [uniform(0.1, 2, 4)])


# ---- view ops in place ----------------------------------------------------------------------------------
VIEW_INPLACE = [("t_", ()), ("transpose_", (0, 2)), ("swapaxes_", (1, 2)), ("swapdims_", (-1, 0)),
                ("squeeze_", ()), ("squeeze_", (1,)), ("unsqueeze_", (1,)), ("unsqueeze_", (-1,))]


@pytest.mark.parametrize("method,args", VIEW_INPLACE)
def test_view_ops_in_place(method, args):
    shape = (3, 4) if method == "t_" else (3, 1, 4)

    def run(x):
        y = x * 2
        out = getattr(y, method)(*args)
        assert out is y
        return y * y
    check_op(run, run, [randn(*shape)])
    a, b = engine.zeros(*shape), torch.zeros(*shape)
    getattr(a, method)(*args)
    getattr(b, method)(*args)
    assert tuple(a.shape) == tuple(b.shape) and a.stride() == b.stride()


def test_resize_and_python_callables():
    for m in (engine, torch):
        x = m.arange(6.0)
        x.resize_(2, 3)
        assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
        x.resize_(4)
        assert x.tolist() == [0, 1, 2, 3]
        x.resize_as_(m.zeros(2, 2))
        assert x.shape == (2, 2)
        assert x.apply_(lambda v: v * 10 + 1).tolist() == [[1, 11], [21, 31]]
        assert x.map_(m.tensor([1.0, -1.0]), lambda a, b: a * b).tolist() == [[1, -11], [21, -31]]
    grown = engine.arange(3).resize_(2, 3)
    assert grown[0].tolist() == [0, 1, 2] and grown.shape == (2, 3)
    same_error(lambda m: m.ones(2, requires_grad=True).resize_(3))
    same_error(lambda m: m.ones(2, requires_grad=True).apply_(abs))


RESIZES = {
    "transposed reads memory order": lambda m: m.arange(6.0).view(2, 3).t().resize_(6),
    "view of a slice keeps its offset": lambda m: m.arange(6.0)[2:].resize_(2).resize_(4),
    "shrink then grow finds the old values": lambda m: m.arange(6.0).resize_(2).resize_(2, 3),
    "grown past the storage": lambda m: m.arange(6.0)[1:].resize_(3, 2).view(-1)[:5],  # torch leaves the last unset
    "expanded reads its storage": lambda m: m.arange(6.0).expand(2, 6).resize_(3, 2),
    "gapped keeps its strides at the same shape": lambda m: m.arange(12.0).view(3, 4)[:, ::2].resize_(3, 2),
    "channels_last": lambda m: m.arange(24.0).resize_(1, 3, 2, 4, memory_format=m.channels_last),
    "resize_as_ preserving channels_last": lambda m: m.arange(24.0).resize_as_(
        m.zeros(2, 3, 1, 4).to(memory_format=m.channels_last), memory_format=m.preserve_format),
    "to empty": lambda m: m.arange(3.0).resize_(0, 2),
}


@pytest.mark.parametrize("case", RESIZES)
def test_resize_follows_the_storage(case):
    ours, theirs = RESIZES[case](engine), RESIZES[case](torch)
    assert ours.stride() == theirs.stride() and ours.storage_offset() == theirs.storage_offset()
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_resize_keeps_sharing_memory_and_refuses_torchs_way():
    for m in (engine, torch):
        base = m.arange(6.0)
        view = base[:4].resize_(2, 2)
        view[1, 1] = -1
        assert base[3] == -1 and view._version != 0
    same_error(lambda m: m.zeros(3).resize_(2, 3, memory_format=m.preserve_format))
    same_error(lambda m: m.zeros(3).resize_(2, 3, memory_format=m.channels_last))


# ---- index forms ------------------------------------------------------------------------------------------
KEYS = [
    lambda m: range(3),
    lambda m: range(3, 0, -2),
    lambda m: (range(3), [0, 2, 1]),
    lambda m: (slice(None), range(1, 4)),
    lambda m: (None, range(2), Ellipsis, 0),
    lambda m: range(0),
    lambda m: [True, False, True, True],
    lambda m: (slice(None), [False, True, True, False, True]),
    lambda m: slice(m.tensor(1), m.tensor(3)),
    lambda m: (slice(None, None, m.tensor(2)), slice(m.tensor(-3), None)),
    lambda m: (np.int64(1), slice(np.int32(0), np.int64(4), np.int64(3))),
    lambda m: [range(2), slice(None), 0],
]


@pytest.mark.filterwarnings("ignore:Using a non-tuple sequence")
@pytest.mark.parametrize("make_key", KEYS)
def test_index_forms_read_and_write(make_key):
    check_op(lambda x: x[make_key(engine)], lambda x: x[make_key(torch)], [randn(4, 5, 3)])

    def write(mod):
        def run(x, v):
            y = x * 1
            y[make_key(mod)] = v
            return y
        return run
    check_op(write(engine), write(torch), [randn(4, 5, 3), randn(1)])


def test_one_hot_through_range_index():
    labels = np.array([2, 0, 3, 3, 1])

    def fill(mod):
        def run(x):
            target = mod.zeros(5, 4)
            target[range(5), mod.from_numpy(labels)] = 1.0
            return (x * target).sum(1)
        return run
    check_op(fill(engine), fill(torch), [randn(5, 4)])


def test_comparison_operators_fall_back_as_torchs():
    """``t == None`` is False and ``t < None`` Python's TypeError, as in torch (``iter(queue.get, None)``)."""
    for lib in (torch, engine):
        t = lib.ones(2)
        assert (t == None) is False and (t != None) is True and (t == "a") is False  # noqa: E711
        with pytest.raises(TypeError, match="'<' not supported between instances of 'Tensor' and 'NoneType'"):
            t < None
    assert (engine.ones(2) == 1).tolist() == [True, True]


@pytest.mark.parametrize("make", [lambda m: m.empty(0), lambda m: m.zeros(2, 0), lambda m: m.ones(0, 3, 0),
                                  lambda m: m.arange(0)])
def test_strides_of_new_tensors_without_elements(make):
    assert make(engine).stride() == make(torch).stride()


@pytest.mark.parametrize("make", [lambda m: m.empty(2, 3, 4, 5, memory_format=m.channels_last),
                                  lambda m: m.empty((2, 3, 1, 4, 5), memory_format=m.channels_last_3d),
                                  lambda m: m.empty(2, 3, memory_format=m.contiguous_format)])
def test_empty_in_a_memory_format(make):
    assert make(engine).stride() == make(torch).stride()


def test_empty_memory_format_refusals():
    same_error(lambda m: m.empty(2, 3, memory_format=m.channels_last))
    same_error(lambda m: m.empty(2, 3, 4, 5, memory_format=m.preserve_format))


def test_fill_writes_through_an_expanded_tensor():
    for m in (engine, torch):
        base = m.zeros(2, 1)
        base.expand(2, 3).fill_(7)
        assert base.tolist() == [[7], [7]]


@pytest.mark.parametrize("write", [lambda m, t: t.add_(1), lambda m, t: t.copy_(m.ones(3)), lambda m, t: t.exp_(),
                                   lambda m, t: t.clamp_(0, 1), lambda m, t: t.normal_(),
                                   lambda m, t: m.zeros(3, 1).expand(3, 2).__setitem__(0, 5.0)])
def test_other_writes_into_an_expanded_tensor_are_refused(write):
    same_error(lambda m: write(m, m.zeros(1).expand(3)))
