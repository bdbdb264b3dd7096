"""PyTorch's edge semantics of division and sign, against PyTorch: an integer division by zero raises
``RuntimeError: ZeroDivisionError`` (numpy would give 0 and warn), bool has no division kernels, float
division by zero and by infinities gives torch's inf, NaN and signed zeros, integer powers with negative
exponents follow torch's rule, and sign(NaN) is 0. No numpy RuntimeWarning may leak out of any of it."""
import warnings

import numpy as np
import pytest
import torch

import engine
from op_check import check_op

RNG = np.random.default_rng(10)
INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8"]
FLOAT_DTYPES = ["float16", "float32", "float64"]


@pytest.fixture(autouse=True)
def no_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def both(array):
    """The same values as an engine tensor and a torch tensor."""
    return engine.from_numpy(array.copy()), torch.from_numpy(array.copy())


# Each division as a function of (library, dividend, divisor): every spelling PyTorch code uses.
DIVISIONS = {
    "floor_divide": lambda lib, a, b: lib.floor_divide(a, b),
    "//": lambda lib, a, b: a // b,
    "rfloordiv": lambda lib, a, b: 7 // b,
    "floor_divide_": lambda lib, a, b: a.clone().floor_divide_(b),
    "remainder": lambda lib, a, b: lib.remainder(a, b),
    "%": lambda lib, a, b: a % b,
    "rmod": lambda lib, a, b: 7 % b,
    "remainder_": lambda lib, a, b: a.clone().remainder_(b),
    "fmod": lambda lib, a, b: lib.fmod(a, b),
    "div_trunc": lambda lib, a, b: lib.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda lib, a, b: lib.div(a, b, rounding_mode="floor"),
    "div_floor_": lambda lib, a, b: a.clone().div_(b, rounding_mode="floor"),
}
REFLECTED = {"rfloordiv", "rmod"}  # the tensor is the divisor: a scalar divisor makes no sense there


def _divisors(lib, b, kind):
    """The divisor ``b`` (a numpy array) as a tensor, a 0-d tensor of its first value, or a Python scalar."""
    if kind == "tensor":
        return lib.from_numpy(b.copy())
    if kind == "0-d tensor":
        return lib.from_numpy(np.array(b.flat[0]))
    return b.flat[0].item()


def _same_error(ours_call, theirs_call):
    with pytest.raises(Exception) as theirs:
        theirs_call()
    with pytest.raises(type(theirs.value)) as ours:
        ours_call()
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("op,kind", [(op, kind) for op in DIVISIONS for kind in ("tensor", "0-d tensor", "scalar")
                                     if op not in REFLECTED or kind == "tensor"])
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_division_by_zero_raises_as_in_torch(op, dtype, kind):
    a = RNG.integers(-9 if dtype != "uint8" else 0, 10, (3, 4)).astype(dtype)
    b = RNG.integers(1, 5, (3, 4)).astype(dtype)
    b.flat[0] = 0
    fn = DIVISIONS[op]
    _same_error(lambda: fn(engine, engine.from_numpy(a.copy()), _divisors(engine, b, kind)),
                lambda: fn(torch, torch.from_numpy(a.copy()), _divisors(torch, b, kind)))
    assert str(pytest.raises(RuntimeError, fn, engine, engine.from_numpy(a), _divisors(engine, b, kind)).value) \
        == "ZeroDivisionError"


@pytest.mark.parametrize("op", list(DIVISIONS))
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_division_without_zero_divisors_matches_torch(op, dtype):
    low = 0 if dtype == "uint8" else -9
    a = RNG.integers(low, 10, (4, 5)).astype(dtype)
    b = RNG.integers(1, 4, (4, 5)).astype(dtype) * (1 if dtype == "uint8" else RNG.choice([-1, 1], (4, 5)))
    b = b.astype(dtype)
    check_op(lambda x, y: DIVISIONS[op](engine, x, y), lambda x, y: DIVISIONS[op](torch, x, y), [a, b])


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "div_trunc"])
def test_integer_division_with_zero_divisor_but_no_result_is_empty(op):
    """Nothing is divided, so nothing is refused: an empty dividend broadcast against a zero."""
    check_op(lambda x, y: DIVISIONS[op](engine, x, y), lambda x, y: DIVISIONS[op](torch, x, y),
             [np.zeros((0, 3), np.int64), np.zeros(3, np.int64)])


@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod", "div_trunc", "div_floor", "floor_divide_"])
def test_bool_division_has_no_kernel_as_in_torch(op):
    a, b = np.array([True, False, True]), np.array([True, True, False])
    fn = DIVISIONS[op]
    _same_error(lambda: fn(engine, *both(a)[:1], both(b)[0]), lambda: fn(torch, both(a)[1], both(b)[1]))


def test_bool_true_division_and_bool_by_int_still_divide():
    a, b = np.array([True, False, True]), np.array([True, True, True])
    check_op(lambda x, y: x / y, lambda x, y: x / y, [a, b])
    check_op(lambda x: x // 1, lambda x: x // 1, [a])


def _assert_same_values_and_zero_signs(ours, theirs):
    ours, theirs = ours.detach().numpy(), theirs.detach().numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
    zeros = theirs == 0
    np.testing.assert_array_equal(np.signbit(ours[zeros]), np.signbit(theirs[zeros]), err_msg="signs of zeros differ")


SPECIAL = np.array([7.0, -7.0, 0.0, -0.0, 2.5, -2.5, 1.0, 0.3, np.nan, np.inf, -np.inf])
DIVISORS = [0.0, -0.0, 3.0, -3.0, 0.1, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("op", [op for op in DIVISIONS if op not in REFLECTED] + ["true_divide"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_division_by_zero_and_infinities_matches_torch(op, dtype):
    """Every dividend against every divisor, as a tensor and as a scalar: values and zero signs exact."""
    fn = DIVISIONS.get(op, lambda lib, a, b: lib.true_divide(a, b))
    a = np.repeat(SPECIAL, len(DIVISORS)).astype(dtype)
    b = np.tile(np.array(DIVISORS), len(SPECIAL)).astype(dtype)
    ours_a, theirs_a = both(a)
    ours_b, theirs_b = both(b)
    _assert_same_values_and_zero_signs(fn(engine, ours_a, ours_b), fn(torch, theirs_a, theirs_b))
    # torch divides float16 by a Python scalar in float32 (0.1 stays 0.1), numpy in float16 (0.09998):
    # only divisors float16 holds exactly are compared as scalars there
    for divisor in DIVISORS if dtype != "float16" else [d for d in DIVISORS if d != 0.1]:
        _assert_same_values_and_zero_signs(fn(engine, ours_a, divisor), fn(torch, theirs_a, divisor))


@pytest.mark.parametrize("op", ["/", "div_floor", "remainder", "fmod"])
def test_gradients_through_division_by_zero_match_torch(op):
    fn = {"/": lambda lib, a, b: a / b, **DIVISIONS}[op]
    a = np.array([[1.5, -2.0, 0.0], [3.0, np.inf, -1.0]], np.float32)
    b = np.array([[0.0, 2.0, 0.0], [-0.0, 3.0, np.inf]], np.float32)
    check_op(lambda x, y: fn(engine, x, y), lambda x, y: fn(torch, x, y), [a, b])


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_true_division_by_zero_gives_inf_and_nan(dtype):
    a = np.array([7, 0, 5, 2], dtype)
    b = np.array([0, 0, 2, 0], dtype)
    check_op(lambda x, y: x / y, lambda x, y: x / y, [a, b])
    check_op(lambda x: x / 0, lambda x: x / 0, [a])
    check_op(lambda x: 5 / x, lambda x: 5 / x, [b])


def test_integer_powers_with_negative_exponents_follow_torch():
    base = np.array([2, 1, -1, 0, -2, 3, -1], np.int64)
    exponent = np.array([-1, -1, -3, -1, -2, 2, -2], np.int64)
    check_op(lambda x, y: x ** y, lambda x, y: x ** y, [base, exponent])
    check_op(lambda x, y: x ** y, lambda x, y: x ** y, [base.astype(np.uint8) % 4, exponent])
    check_op(lambda y: 2 ** y, lambda y: 2 ** y, [exponent])
    check_op(lambda x: x ** engine.tensor(-2), lambda x: x ** torch.tensor(-2), [base])
    _same_error(lambda: engine.from_numpy(base) ** -2, lambda: torch.from_numpy(base) ** -2)
    flags = np.array([True, False])
    _same_error(lambda: engine.from_numpy(flags) ** engine.from_numpy(flags),
                lambda: torch.from_numpy(flags) ** torch.from_numpy(flags))


def test_float_powers_at_their_edges_are_quiet():
    base = np.array([-1.0, 0.0, -0.0, 2.0, np.inf, 1e30], np.float32)
    exponent = np.array([0.5, -1.0, -1.0, 200.0, -np.inf, 3.0], np.float32)
    check_op(lambda x, y: x ** y, lambda x, y: x ** y, [base, exponent], grad=False)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("op", ["sign", "sgn"])
def test_sign_of_nan_is_zero(dtype, op):
    x = np.array([np.nan, -0.0, 0.0, 2.5, -3.0, np.inf, -np.inf, 1e-30], dtype)
    ours, theirs = both(x)
    _assert_same_values_and_zero_signs(getattr(engine, op)(ours), getattr(torch, op)(theirs))
    _assert_same_values_and_zero_signs(getattr(ours.clone(), op + "_")(), getattr(theirs.clone(), op + "_")())


def test_sign_of_integers_and_bools_and_its_gradient():
    check_op(lambda x: x.sign(), lambda x: x.sign(), [np.array([-3, 0, 2], np.int8)])
    check_op(lambda x: x.sign(), lambda x: x.sign(), [np.array([True, False])])
    check_op(lambda x: x.sign(), lambda x: x.sign(), [np.array([np.nan, -1.0, 0.0, 4.0], np.float32)])


@pytest.mark.parametrize("op", ["log", "sqrt", "rsqrt", "reciprocal", "exp", "tan", "acos", "atanh"])
def test_unary_math_at_its_edges_is_quiet(op):
    x = np.array([0.0, -0.0, -1.0, 1.0, np.nan, np.inf, -np.inf, 100.0], np.float32)
    check_op(getattr(engine, op), getattr(torch, op), [x])


def test_fmod_exports_to_onnx():
    """fmod is one op now (it was a composite of exported ops): ONNX's Mod with fmod=1, for floats and ints."""
    import onnx_check  # skips the test without the onnx extra

    class Fmods(engine.nn.Module):
        def forward(self, x):
            return engine.fmod(x * 5, 1.5) + engine.fmod((x * 10).long(), 3).float() + engine.fmod(x, -0.7)
    exported = onnx_check.check_export(Fmods(), lambda batch: (onnx_check.images(0, batch, 5, 7),))
    assert "Mod" in onnx_check.node_types(exported)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "bool"])
def test_number_divided_by_a_tensor_is_a_reciprocal_times_the_number(dtype):
    """torch's ``7 / t`` is ``t.reciprocal() * 7``: a quotient rounded once differed by 1 ulp in a quarter of the
    float32 cases; its backward saves the reciprocal, so ``t`` may change in place afterwards."""
    values = np.random.default_rng(4).standard_normal(4000) * 3
    ours, theirs = (7 / lib.tensor(values).to(getattr(lib, dtype)) for lib in (engine, torch))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())
    grads = []
    for lib in (engine, torch):
        t = lib.tensor([1.0, 2.0, 4.0], requires_grad=True)
        y = t * 1
        z = 3 / y
        y.add_(1)
        z.sum().backward()
        grads.append(t.grad.numpy())
    np.testing.assert_array_equal(*grads)


def test_overflow_to_infinity_gives_no_warning(recwarn):
    assert engine.isinf(engine.tensor([3e38]) * 10).all()
    assert engine.isinf(7 / engine.tensor([1e-7]).half()).all()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
