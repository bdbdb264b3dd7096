"""Tensor creation, conversion and the seeded samplers against torch, from a differential fuzz of them: each case
runs on both libraries and must give the same values, dtype and shape, or the same error type and message.

The cases are the ones the fuzz found wrong: Python data past an integer dtype's range or past int64, ragged and
empty nestings; complex to bool; ``int()``/``float()``/``bool()`` of the wrong count of elements; fills past a
dtype's range (``full``, ``fill_``, ``scalar_tensor``, one step of ``linspace``/``logspace``); integer
``arange``/``range`` of float arguments; the strides of ``*_like`` results; the bounds of ``random_``/``randint``/
``uniform_``/``randperm`` and the values of floating ``random_`` near the dtype's last integers; the samplers' and
factories' argument errors. The exploratory sweeps themselves (thousands of random configurations) are not kept.
"""
import warnings

import numpy as np
import pytest
import torch

import engine

pytestmark = pytest.mark.slow  # about 200 cases, each run on both libraries


def _plain(result):
    """A result as comparable Python data: tensors as (values, dtype name, shape)."""
    if isinstance(result, (engine.Tensor, torch.Tensor)):
        values = result.detach().double() if "bfloat16" in str(result.dtype) else result.detach()
        return values.numpy().tolist(), str(result.dtype).split(".")[-1], tuple(result.shape)
    if isinstance(result, (tuple, list)):
        return type(result)(_plain(r) for r in result)
    return result


def _outcome(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", _plain(fn(lib))
        except Exception as error:  # the error itself is what is compared
            return type(error).__name__, str(error).split("\n")[0]


def same(fn, seed=None):
    """``fn(engine)`` and ``fn(torch)`` give equal results (NaN equal to NaN) or the same error; with ``seed``,
    each after its library's ``manual_seed(seed)``."""
    outcomes = []
    for lib in (engine, torch):
        if seed is not None:
            lib.manual_seed(seed)
        outcomes.append(_outcome(fn, lib))
    ours, theirs = outcomes
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        np.testing.assert_equal(ours[1], theirs[1])
    else:
        assert ours[1] == theirs[1]


# ---- Python data ----------------------------------------------------------------------------
DATA = [
    (255, "int8"), ([256, 1], "uint8"), (-3, "uint8"), (-256, "uint8"), (2 ** 31, "int32"), (-2 ** 63, "int32"),
    (float("inf"), "int8"), (float("nan"), "int64"), ([1e30, 2.5], "int64"), ([[1.5, -2.7]], "int16"),
    (2 ** 63, None), ([2 ** 63, 1], None), ([2 ** 64], None), ([-2 ** 63 - 1], None), (2 ** 63, "int16"),
    ([1.5, 10 ** 400], None), ([2 ** 64, 0.5], None), (10 ** 30, "bool"), ([1 + 2j, 0j], "bool"),
    ([1, 1 + 2j], "int32"), (1 + 2j, "float32"), ([[1, 2], [3]], None), ([[1, 2], 3], None), ([1, [2, 3]], None),
    ([1.0, [2, 3]], None), ([[[1], [2]], [[3], [4, 5]]], "float64"), ([[], [1, 2]], None), ([[], [True]], None),
    ([[[], [], []], [256, 256, 256, 256]], "int8"), ([[], [1 + 1j]], None), ([[1, 2], []], None),
    ([np.float32(1.5)], "int8"), ([np.float64(2.5)], "int8"), ([np.int64(300)], "int8"), (np.int64(300), "int8"),
    ([[2 ** 40, 1.5], [3, 4]], "int32"),
]


@pytest.mark.parametrize("data, dtype", DATA)
def test_python_data_converts_or_fails_as_torch(data, dtype):
    for fn_name in ("tensor", "as_tensor", "asarray"):
        same(lambda L: getattr(L, fn_name)(data, **({} if dtype is None else {"dtype": getattr(L, dtype)})))


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_zero_d_tensors_in_lists(dtype):
    same(lambda L: L.tensor([L.tensor(2.5), L.tensor(1)], dtype=getattr(L, dtype)))
    same(lambda L: L.tensor([L.tensor(300), L.tensor(1)], dtype=getattr(L, dtype)))


def test_default_float64_data():
    def make(L):
        L.set_default_dtype(L.float64)
        try:
            return L.tensor([[], [1]]), L.tensor([1, 2.5]), L.tensor([2 ** 63, 1])
        finally:
            L.set_default_dtype(L.float32)
    same(lambda L: make(L)[:2])
    same(make)


# ---- casts and Python numbers ------------------------------------------------------------------
_COMPLEX = np.array([1 + 2j, 0j, 2j, 3 + 0j, -0.0 + 0j], np.complex128)


@pytest.mark.parametrize("cast", ["bool", "to_bool", "type_bool", "int", "float"])
def test_complex_casts(cast):
    def run(L):
        z = L.tensor(_COMPLEX)
        return {"bool": lambda: z.bool(), "to_bool": lambda: z.to(L.bool), "type_bool": lambda: z.type(L.bool),
                "int": lambda: z.int(), "float": lambda: z.to(L.float32)}[cast]()
    same(run)


@pytest.mark.parametrize("convert", [int, float, complex, bool])
@pytest.mark.parametrize("values", [[], [1, 2], [[3.5]], [2.7 + 0j], [1 + 1j], [float("nan")]])
def test_python_numbers_of_tensors(convert, values):
    same(lambda L: convert(L.tensor(values)))


# ---- fills ----------------------------------------------------------------------------------
FILLS = [(300, "int8"), (-3, "uint8"), (-256, "uint8"), (2.7, "int8"), (float("nan"), "int32"), (float("inf"), "int64"),
         (1e300, "float32"), (1e300, "float16"), (70000, "bfloat16"), (1 + 1j, "float32"), (1 + 0j, "int16"),
         (1e300 + 0j, "complex64"), (5, "bool"), (1j, "bool"), (2 ** 63, None), (1e300, "float64")]


@pytest.mark.parametrize("value, dtype", FILLS)
def test_full_and_fill_convert_as_torch(value, dtype):
    kw = lambda L: {} if dtype is None else {"dtype": getattr(L, dtype)}  # noqa: E731
    for shape in [(), (1,), (2, 3), (0,)]:  # one element: torch's fill leaves the half types unchecked
        same(lambda L: L.full(shape, value, **kw(L)))
        if dtype is not None:
            same(lambda L: L.zeros(shape, dtype=getattr(L, dtype)).fill_(value))
            same(lambda L: L.full_like(L.zeros(shape).t() if len(shape) == 2 else L.zeros(shape), value, **kw(L)))
            same(lambda L: L.zeros(3, 2).new_full(shape, value, **kw(L)))


@pytest.mark.parametrize("value, dtype", [(300, "int8"), (1 + 1j, "float32"), (float("nan"), "int8"), (-3, "uint8")])
def test_scalar_tensor_and_tensor_fills(value, dtype):
    same(lambda L: L.scalar_tensor(value, dtype=getattr(L, dtype)))
    same(lambda L: L.zeros(2, dtype=getattr(L, dtype)).fill_(L.tensor(value)))  # a tensor's value is cast


@pytest.mark.parametrize("steps", [0, 1, 2])
@pytest.mark.parametrize("start, end, dtype", [(-3, -3, "bool"), (300, 3, "int8"), (-0.5, 10, "uint8"),
                                               (100, -3, "int16"), (100, -3, "complex64"), (-300, 7, "int8")])
def test_linspace_logspace_single_steps(steps, start, end, dtype):
    same(lambda L: L.linspace(start, end, steps, dtype=getattr(L, dtype)))
    if dtype != "complex64" or steps < 2:  # torch's complex pow in float rounds otherwise (not matched)
        same(lambda L: L.logspace(start, end, steps, base=2.5 if dtype == "complex64" else 2,
                                  dtype=getattr(L, dtype)))


# ---- ranges ---------------------------------------------------------------------------------
ARANGE = [(0.3, -1.5, -0.7, "int8"), (-5, 0.5, 0.25, "int16"), (0.5, 7.3, 0.1, "int16"), (0, 300, 100, "int8"),
          (0.5, -3.2, -1.7, "int8"), (0, 2 ** 40, 2 ** 38, "int8"), (0, 3, 1, "bool"), (0, 3, 1, "complex64"),
          (0.0, 3, 0, None), (3, 0, 1, None), (0, float("inf"), 1, None), (0, 2.5, -0.5, "int32"),
          (2 ** 62, 2 ** 62 + 3, 1, "float32"), (2 ** 62, 2 ** 62 + 3, 1, None), (-1.5, 7.3, 0.7, "float16")]


@pytest.mark.parametrize("start, end, step, dtype", ARANGE)
def test_arange_as_torch(start, end, step, dtype):
    same(lambda L: L.arange(start, end, step, **({} if dtype is None else {"dtype": getattr(L, dtype)})))


RANGE = [(0.3, 1, 1, "int8"), (-1.5, 7.3, 1, "int64"), (0.5, 7.3, 1, "int16"), (0.1, 0.3, 0.1, "float16"),
         (0, 0.9, 0.3, "float16"), (0, 0.3, 0.1, "float32"), (0, 3, 1, "bfloat16"), (0, 3, 1, "bool"),
         (0, 3, 1, "complex64"), (0.001, 0, 3, "int64"), (0, 300, 100, "int8"), (3, 0, -1, "int32"), (0, 3, 0, None),
         (0, float("inf"), 1, None), (3, 0, 1, None)]


@pytest.mark.parametrize("start, end, step, dtype", RANGE)
def test_deprecated_range_as_torch(start, end, step, dtype):
    same(lambda L: L.range(start, end, step, **({} if dtype is None else {"dtype": getattr(L, dtype)})))


# ---- *_like layouts -----------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda L: L.zeros(1, 3, 1, 2).transpose(0, -1),
                                  lambda L: L.zeros(2, 1, 4, 1).permute(3, 1, 0, 2),
                                  lambda L: L.zeros(2, 3, 4, 5).transpose(0, -1),
                                  lambda L: L.zeros(2, 3, 4, 5)[:, ::2]])
@pytest.mark.parametrize("like", ["zeros_like", "empty_like", "full_like", "rand_like"])
@pytest.mark.parametrize("memory_format", [None, "contiguous_format", "preserve_format"])
def test_like_results_keep_dense_strides(make, like, memory_format):
    def run(L):
        kw = {} if memory_format is None else {"memory_format": getattr(L, memory_format)}
        x = make(L)
        result = L.full_like(x, 2.5, **kw) if like == "full_like" else getattr(L, like)(x, **kw)
        return result.stride(), result.shape
    same(run)


# ---- seeded samplers: bounds and values -----------------------------------------------------
RANDOM = [("float32", 0, 2 ** 27), ("float32", 0, 2 ** 29), ("float32", 3, 2 ** 25), ("bfloat16", 0, 1000),
          ("bfloat16", -5, 1024), ("bfloat16", -300, 7), ("float16", 0, 2 ** 31), ("float16", 0, 2049),
          ("int8", 0, 1024), ("uint8", -100, 1), ("bool", -1, 2), ("bool", 0, 2), ("int32", -2 ** 31 - 1, None),
          ("int32", 5, None), ("float32", 2 ** 25, None), ("float16", 2000, None), ("bool", 0, None),
          ("bfloat16", None, None), ("float64", 0, 2 ** 53 + 1)]


@pytest.mark.parametrize("dtype, low, high", RANDOM)
def test_random_bounds_and_values(dtype, low, high):
    def run(L):
        t = L.empty(4, 3, dtype=getattr(L, dtype))
        return t.random_() if low is None else t.random_(low, high)
    same(run, seed=7)
    if low is not None and high is not None:
        same(lambda L: L.randint(low, high, (5,), dtype=getattr(L, dtype)), seed=8)
        same(lambda L: L.randint_like(L.zeros(2, 3, dtype=getattr(L, dtype)), low, high), seed=9)


def test_random_past_float_precision_warns_as_torch():
    with pytest.warns(UserWarning, match=r"to - 1 is out of bounds \[-\(2\^24\), 2\^24\]"):
        engine.empty(3).random_(0, 2 ** 25)


@pytest.mark.parametrize("dtype, low, high", [("float16", 0, 2 ** 40), ("float16", -60000, 60000),
                                              ("float32", -3e38, 3e38), ("float32", 1, 0), ("float64", -1, 1e300)])
def test_uniform_bounds(dtype, low, high):
    same(lambda L: L.empty(3, dtype=getattr(L, dtype)).uniform_(low, high), seed=3)


@pytest.mark.parametrize("n, dtype", [(3, "bool"), (128, "int8"), (129, "int8"), (257, "uint8"), (2049, "float16"),
                                      (2050, "float16"), (1000, "bfloat16")])
def test_randperm_limits_and_values(n, dtype):
    same(lambda L: L.randperm(n, dtype=getattr(L, dtype)), seed=4)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_log_normal_overflows_to_infinity(dtype):
    same(lambda L: L.empty(5, dtype=getattr(L, dtype)).log_normal_(20, 1), seed=5)
    same(lambda L: L.empty(5, dtype=getattr(L, dtype)).log_normal_(-5, 1e9), seed=6)


def test_fills_and_data_on_the_gpu(cuda):
    """The same checks where the arrays live on the (emulated) GPU."""
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8 without overflow"):
        engine.tensor([1, 300], dtype=engine.int8, device="cuda")
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        engine.full((2,), 300, dtype=engine.int8, device="cuda")
    assert engine.full((2,), -3, dtype=engine.uint8, device="cuda").cpu().tolist() == [253, 253]
    assert engine.tensor([[], []], device="cuda").shape == (2, 0)
    x = engine.zeros(1, 3, 1, 2, device="cuda").transpose(0, -1)
    like = engine.full_like(x, 2.0)
    assert like.stride() == torch.zeros(1, 3, 1, 2).transpose(0, -1).stride()
    assert like.device.type == "cuda" and like.cpu().tolist() == torch.full((2, 3, 1, 1), 2.0).tolist()


@pytest.mark.parametrize("call", [lambda t: t.exponential_(float("inf")), lambda t: t.exponential_(-1.0),
                                  lambda t: t.exponential_(float("nan")), lambda t: t.cauchy_(0, -1.0),
                                  lambda t: t.cauchy_(0, 0.0), lambda t: t.log_normal_(1, -1.0),
                                  lambda t: t.normal_(0, -0.5), lambda t: t.geometric_(1.0),
                                  lambda t: t.uniform_(2, 1)])
def test_sampler_arguments_as_torch(call):
    same(lambda L: call(L.empty(3)), seed=2)


@pytest.mark.parametrize("call", [lambda L: L.zeros(2, -1), lambda L: L.ones(-3), lambda L: L.empty(2, -1),
                                  lambda L: L.full((2, -1), 1.0), lambda L: L.rand(2, -1), lambda L: L.randn(-2),
                                  lambda L: L.randint(3, (2, -1)), lambda L: L.eye(-1),
                                  lambda L: L.eye(3, -2), lambda L: L.tensor([1, 2], requires_grad=True),
                                  lambda L: L.zeros(2, dtype=L.int64, requires_grad=True),
                                  lambda L: L.tensor(None), lambda L: L.tensor({1, 2}), lambda L: L.tensor("abc"),
                                  lambda L: L.tensor([1, None]), lambda L: L.tensor(x for x in range(3))])
def test_factory_errors_as_torch(call):
    same(call)


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.zeros(size=(2,)), lambda lib, x: lib.ones(size=[2, 3]), lambda lib, x: lib.empty(size=(2, 0)),
    lambda lib, x: lib.rand(size=(2,)), lambda lib, x: lib.randn(size=(2, 1)), lambda lib, x: x.new_zeros(size=(2,)),
    lambda lib, x: x.new_ones(size=(1, 2)), lambda lib, x: x.new_empty(size=(3,)),
])
def test_factory_sizes_by_keyword(call):
    """The factories' variadic size also comes by keyword (``torch.zeros(size=(2, 3))``), with the same result."""
    ours, theirs = call(engine, engine.arange(3.0)), call(torch, torch.arange(3.0))
    assert (tuple(ours.shape), str(ours.dtype)[7:]) == (tuple(theirs.shape), str(theirs.dtype)[6:])
    with pytest.raises(TypeError, match="got multiple values for argument 'size'"):
        engine.zeros(2, size=(2,))


def test_fill_is_recorded_by_autograd():
    """fill_ on a computed tensor cuts the old values' gradient; a tensor value gets the gradient's sum (on a view:
    through the base)."""
    grads = []
    for lib in (torch, engine):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = lib.tensor(2.0, requires_grad=True)
        a = x * 1
        a[1:].fill_(v)
        b = x.clone()
        b.zero_()
        ((a * lib.tensor([3.0, 5.0, 7.0])).sum() + (b * b).sum()).backward()
        grads.append((x.grad.tolist(), v.grad.tolist(), a.tolist()))
    assert grads[0] == grads[1]
