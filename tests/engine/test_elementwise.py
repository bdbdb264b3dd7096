"""Elementwise ops against PyTorch: values, gradients, broadcasting, type promotion, in-place."""
import numpy as np
import pytest
import torch

import engine
from op_check import check_op, noncontiguous

rng = np.random.default_rng(0)


def rand(*shape, low=-2.0, high=2.0, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "pow", "remainder"]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", [((3, 5), (3, 5)), ((2, 1, 7), (4, 1)), ((1,), (3, 1, 2)), ((), (5, 3))])
def test_binary_broadcast(name, shapes):
    a = rand(*shapes[0], low=0.5 if name == "pow" else -2)
    b = rand(*shapes[1], low=0.5 if name in ("pow", "remainder", "div") else -2)
    check_op(getattr(engine, name), getattr(torch, name), [a, b])


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
@pytest.mark.parametrize("scalar", [2, 0.5, -3])
def test_binary_scalar(name, scalar):
    a = rand(4, 3, low=0.5)
    check_op(lambda x: getattr(engine, name)(x, scalar), lambda x: getattr(torch, name)(x, scalar), [a])
    check_op(lambda x: getattr(engine.Tensor, f"__r{name if name != 'div' else 'truediv'}__")(x, scalar),
             lambda x: getattr(torch.Tensor, f"__r{name if name != 'div' else 'truediv'}__")(x, scalar), [a])


def test_operators_noncontiguous():
    a, b = noncontiguous(rand(6, 5)), noncontiguous(rand(6, 5))
    assert not a.flags.c_contiguous
    check_op(lambda x, y: (x + y) * x - y / (x.abs() + 1) ** 2, lambda x, y: (x + y) * x - y / (x.abs() + 1) ** 2,
             [a, b])


UNARY = {"neg": (-2, 2), "abs": (-2, 2), "exp": (-2, 2), "log": (0.1, 3), "log1p": (-0.5, 2),
         "log2": (0.1, 3), "log10": (0.1, 3), "expm1": (-2, 2), "exp2": (-2, 2),
         "sqrt": (0.1, 3), "rsqrt": (0.1, 3), "sin": (-3, 3), "cos": (-3, 3), "tan": (-1, 1),
         "tanh": (-3, 3), "sigmoid": (-8, 8), "erf": (-3, 3), "sign": (-2, 2), "floor": (-3, 3),
         "ceil": (-3, 3), "round": (-3, 3), "trunc": (-3, 3), "frac": (-3, 3), "reciprocal": (0.2, 3),
         "square": (-2, 2), "atan": (-3, 3), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "sinh": (-2, 2),
         "cosh": (-2, 2)}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    lo, hi = UNARY[name]
    x = rand(3, 1, 5, low=lo, high=hi)
    check_op(getattr(engine, name), getattr(torch, name), [x])
    check_op(getattr(engine, name), getattr(torch, name), [x.astype(np.float64)], rtol=1e-6)


def test_sigmoid_extreme_values_do_not_overflow():
    x = np.array([-1000.0, -50.0, 0.0, 50.0, 1000.0], np.float32)
    check_op(engine.sigmoid, torch.sigmoid, [x])


@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (None, 0.3), (-0.3, None)])
def test_clamp_scalar_bounds(bounds):
    check_op(lambda x: engine.clamp(x, *bounds), lambda x: torch.clamp(x, *bounds), [rand(4, 6)])


def test_clamp_tensor_bounds():
    check_op(lambda x, lo, hi: engine.clamp(x, lo, hi), lambda x, lo, hi: torch.clamp(x, lo, hi),
             [rand(4, 6), rand(1, 6, low=-1, high=-0.2), rand(4, 1, low=0.2, high=1)])
    check_op(lambda x, hi: engine.clamp(x, max=hi), lambda x, hi: torch.clamp(x, max=hi),
             [rand(4, 6), rand(4, 1, low=0.2, high=1)])


def test_clamp_gradients_where_x_meets_a_bound():
    """Ties: every (x, lo, hi) from {0, 1, 2}^3, bounds as tensors (shared half and half, crossed bounds give
    hi; 0-dim tensors too) and as scalars (x gets nothing at a bound), one-sided too."""
    grid = np.array(np.meshgrid([0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [0.0, 1.0, 2.0])).reshape(3, -1).astype(np.float32)
    x, lo, hi = grid
    check_op(lambda x, lo, hi: engine.clamp(x, lo, hi), lambda x, lo, hi: torch.clamp(x, lo, hi), [x, lo, hi])
    check_op(lambda x, lo: engine.clamp(x, min=lo), lambda x, lo: torch.clamp(x, min=lo), [x, lo])
    check_op(lambda x, hi: engine.clamp(x, max=hi), lambda x, hi: torch.clamp(x, max=hi), [x, hi])
    for lo, hi in [(0.0, 2.0), (1.0, 1.0), (2.0, 0.0)]:  # 0-dim tensor bounds: tensor rules, gradients to them
        check_op(lambda x, a, b: engine.clamp(x, a, b), lambda x, a, b: torch.clamp(x, a, b),
                 [x, np.array(lo, np.float32), np.array(hi, np.float32)])
    for bounds in [(1.0, 1.0), (0.0, 2.0), (1.0, None), (None, 1.0), (2.0, 0.0)]:
        check_op(lambda x: engine.clamp(x, *bounds), lambda x: torch.clamp(x, *bounds), [x])


def test_where():
    cond = rng.random((3, 4)) > 0.5
    check_op(lambda c, a, b: engine.where(c, a, b), lambda c, a, b: torch.where(c, a, b),
             [cond, rand(3, 4), rand(1, 4)])
    check_op(lambda c, a: engine.where(c, a, 0.0), lambda c, a: torch.where(c, a, 0.0), [cond, rand(3, 4)])


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons(op):
    a = rng.integers(0, 3, (4, 5)).astype(np.float32)
    b = rng.integers(0, 3, (1, 5)).astype(np.float32)
    check_op(getattr(engine, op), getattr(torch, op), [a, b], grad=False)
    check_op(lambda x: getattr(engine, op)(x, 1), lambda x: getattr(torch, op)(x, 1), [a], grad=False)


def test_bitwise_and_logical():
    a, b = rng.integers(0, 8, (3, 4)), rng.integers(0, 8, (3, 4))
    for op in ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor"]:
        check_op(getattr(engine, op), getattr(torch, op), [a, b], grad=False)
    m, n = a > 3, b > 3
    check_op(lambda x, y: (x & y) | ~x ^ y, lambda x, y: (x & y) | ~x ^ y, [m, n], grad=False)
    check_op(lambda x: ~x, lambda x: ~x, [a], grad=False)


PROMOTIONS = [
    (np.int32, np.float16), (np.int64, np.float32), (np.uint8, np.int8), (np.bool_, np.int32),
    (np.float16, np.float64), (np.int16, np.int64), (np.bool_, np.float32), (np.uint8, np.int64),
]


@pytest.mark.parametrize("da,db", PROMOTIONS)
def test_type_promotion_between_tensors(da, db):
    a, b = np.ones((2, 2), da), np.ones((2,), db)
    for op in ["add", "mul", "div", "maximum"]:
        ours = getattr(engine, op)(engine.from_numpy(a), engine.from_numpy(b))
        ref = getattr(torch, op)(torch.from_numpy(a), torch.from_numpy(b))
        assert str(ours.dtype) == str(ref.dtype).replace("torch", "engine"), (op, da, db)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float16, np.float64])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_type_promotion_with_scalars_and_zero_dim(dtype, scalar):
    a = np.ones((3,), dtype)
    ours, ref = engine.from_numpy(a) * scalar, torch.from_numpy(a) * scalar
    assert str(ours.dtype) == str(ref.dtype).replace("torch", "engine")
    z = np.array(2.0, np.float64)
    ours, ref = engine.from_numpy(a) + engine.from_numpy(z), torch.from_numpy(a) + torch.from_numpy(z)
    assert str(ours.dtype) == str(ref.dtype).replace("torch", "engine")


def test_integer_division_and_modulo_follow_python_rules():
    a = np.array([7, -7, 7, -7], np.int64)
    b = np.array([2, 2, -2, -2], np.int64)
    for ours, ref in [(engine.from_numpy(a) // engine.from_numpy(b), torch.from_numpy(a) // torch.from_numpy(b)),
                      (engine.from_numpy(a) % engine.from_numpy(b), torch.from_numpy(a) % torch.from_numpy(b)),
                      (engine.div(engine.from_numpy(a), engine.from_numpy(b), rounding_mode="trunc"),
                       torch.div(torch.from_numpy(a), torch.from_numpy(b), rounding_mode="trunc")),
                      (engine.from_numpy(a) / engine.from_numpy(b), torch.from_numpy(a) / torch.from_numpy(b))]:
        np.testing.assert_array_equal(ours.numpy(), ref.numpy())
        assert str(ours.dtype).split(".")[1] == str(ref.dtype).split(".")[1]


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
def test_inplace_on_nonleaf_keeps_gradients(op):
    def run(lib, x, y):
        z = x * 1.5
        getattr(z, op)(y)
        return z.exp()
    check_op(lambda x, y: run(engine, x, y), lambda x, y: run(torch, x, y), [rand(3, 4), rand(4, low=0.5)])


@pytest.mark.parametrize("op", ["exp_", "sigmoid_", "tanh_", "clamp_"])
def test_unary_inplace(op):
    args = (-0.5, 0.5) if op == "clamp_" else ()
    check_op(lambda x: getattr(x * 2, op)(*args) * 3, lambda x: getattr(x * 2, op)(*args) * 3, [rand(3, 4)])


def test_inplace_errors_match_torch():
    leaf = engine.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.add_(1)
    ints = engine.ones(3, dtype=engine.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        ints.add_(0.5)


def test_modified_saved_tensor_is_detected():
    x = engine.ones(3, requires_grad=True)
    y = x.exp()
    y.add_(1)  # exp's backward needs its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward() if hasattr(y, "sum") else y.backward(engine.ones(3))


def test_inplace_under_no_grad_on_leaf_is_allowed():
    w = engine.ones(3, requires_grad=True)
    with engine.no_grad():
        w.mul_(2)
    assert w.tolist() == [2.0, 2.0, 2.0] and w.is_leaf and w.requires_grad


def test_broadcast_mismatch_names_the_sizes():
    a, b = engine.ones(2, 3), engine.ones(4)
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of tensor b \(4\) "
                                           r"at non-singleton dimension 1"):
        a + b
    with pytest.raises(RuntimeError, match="must match the size of tensor b"):
        a < b
