"""Pointwise ops against torch: the cases a differential sweep over dtypes, Python scalars on either side, 0-dim
operands, in-place forms and ``out=`` found wrong, each run through both libraries by one lambda of the library
(values and dtype, or error type and message, must agree).

Families: Python ints out of an integer type's range (torch wraps them: a uint8 tensor plus -2, compared with
-2), complex 0-dim promotion, float_power and ldexp result types, bfloat16 in hypot and logaddexp, bool tensors
(square, pow with a Python bool, the refusals of sub, abs, floor...), in-place integer ops computed in the
promoted type, in-place and ``out=`` cast refusals, shifts, lerp's and isclose's dtype checks."""
import numpy as np
import pytest
import torch

import engine
import engine.special

_X = [[0.6, -1.5, 2.5, -0.0, 3.2], [-2.4, 1.1, 0.0, -3.7, 0.4], [1.9, -0.6, 4.4, 0.2, -1.3]]
_U8 = [[0, 1, 200, 255, 7], [3, 128, 64, 9, 250], [17, 2, 100, 33, 5]]
_I8 = [[-1, 2, 0, 5, -3], [1, -2, 3, 1, -1], [0, 4, -5, 2, 1]]


def _t(lib, data, dtype):
    """``data`` as a tensor of ``lib`` with dtype name ``dtype``."""
    return lib.tensor(data, dtype=getattr(lib, dtype))


def _x(lib, dtype="float32"):
    return _t(lib, _X, dtype) if dtype != "bool" else _t(lib, _X, "float32") > 0


def _u8(lib):
    return _t(lib, _U8, "uint8")


def _i8(lib):
    return _t(lib, _I8, "int8")


def _as_numpy(result):
    result = result.detach()
    if result.is_complex():
        return result.resolve_conj().numpy() if isinstance(result, torch.Tensor) else result.numpy()
    if result.dtype in (torch.bfloat16, engine.bfloat16):
        return result.float().numpy()
    return result.numpy()


def _same(case, device="cpu"):
    """Run ``case(lib)`` for torch and engine (on ``device``): equal dtypes and values, or the same error."""
    try:
        expected = case(torch)
    except Exception as error:  # torch refuses: so must we, with its type and message
        with pytest.raises(type(error)) as ours:
            case(engine)
        assert str(ours.value) == str(error).split("\n")[0]
        return
    if device == "cpu":
        result = case(engine)
    else:
        with engine.device(device):
            result = case(engine)
        assert result.device.type == device
        result = result.cpu()
    assert str(result.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert tuple(result.shape) == tuple(expected.shape)
    tol = 1e-2 if expected.dtype in (torch.float16, torch.bfloat16) else 1e-5
    np.testing.assert_allclose(_as_numpy(result), _as_numpy(expected), rtol=tol, atol=tol, equal_nan=True)


# ---- Python ints out of an integer type's range: torch converts them wrapping, numpy 2 raised OverflowError ----
WRAPPED = {
    "u8 + -2": lambda L: _u8(L) + -2, "-2 + u8": lambda L: -2 + _u8(L), "u8 - 3": lambda L: _u8(L) - 3,
    "2 - u8": lambda L: 2 - _u8(L), "u8 * -2": lambda L: _u8(L) * -2, "u8 & -2": lambda L: _u8(L) & -2,
    "u8 | 300": lambda L: _u8(L) | 300, "-2 ^ u8": lambda L: -2 ^ _u8(L), "i8 + 300": lambda L: _i8(L) + 300,
    "u8 // -3": lambda L: (_u8(L) + 1) // -3, "u8 % -3": lambda L: (_u8(L) + 1) % -3,
    "u8 < -2": lambda L: _u8(L) < -2, "-2 <= u8": lambda L: -2 <= _u8(L), "u8 == -1": lambda L: _u8(L) == -1,
    "u8 >= 300": lambda L: _u8(L) >= 300, "i64 + 2**63": lambda L: _i8(L).long() + 2 ** 63,
    "-3 ** u8": lambda L: L.pow(-3, _u8(L)),
    "u8 += -2": lambda L: _u8(L).__iadd__(-2), "u8 -= 3": lambda L: _u8(L).__isub__(3),
    "u8 &= -2": lambda L: _u8(L).__iand__(-2), "clamp(u8, -1, 2)": lambda L: _u8(L).clamp(-1, 2),
    "clamp(u8, min=-1)": lambda L: L.clamp(_u8(L), min=-1),
    # subtraction, and add with a negative alpha: a uint8 operand times -1 overflowed numpy
    "u8 - u8": lambda L: _u8(L) - _u8(L).flip(0), "add(u8, u8, alpha=-1)": lambda L: L.add(_u8(L), _u8(L), alpha=-1),
    "sub(u8, 2, alpha=-1)": lambda L: L.sub(_u8(L), 2, alpha=-1), "u8.sub_(u8)": lambda L: _u8(L).sub_(_u8(L).flip(1)),
    # a right shift of an unsigned type by its width or more gives 0, not the top bit
    "-3 >> u8": lambda L: L.bitwise_right_shift(-3, _u8(L) % 12),
}


@pytest.mark.parametrize("name", WRAPPED)
def test_python_int_scalars_wrap_into_integer_types(name):
    _same(WRAPPED[name])


# ---- result types ------------------------------------------------------------------------------------------------
TYPES = {
    # a 0-dim complex operand takes the dimensioned floating operand's precision (torch's combine_categories)
    "f32 + c128 0-dim": lambda L: _x(L) + _t(L, 1 + 2j, "complex128"),
    "c128 0-dim * f32": lambda L: _t(L, 1 - 1j, "complex128") * _x(L),
    "f64 + c64 0-dim": lambda L: _x(L, "float64") + _t(L, 2j, "complex64"),
    "i32 + c128 0-dim": lambda L: _x(L, "int32") + _t(L, 2j, "complex128"),
    "div(f32, c128 0-dim)": lambda L: L.div(_x(L), _t(L, 1 + 1j, "complex128")),
    # float_power computes in complex128 where an operand is complex
    "float_power(c64, 2)": lambda L: L.float_power(_x(L, "complex64"), 2),
    "float_power(f32, 1j)": lambda L: L.float_power(_x(L).abs(), 1j),
    "float_power(i8, c64)": lambda L: L.float_power(_i8(L).abs() + 1, _x(L, "complex64")),
    # ldexp: a floating input with an integer exponent keeps its type, and is exact
    "ldexp(f16, i8)": lambda L: L.ldexp(_x(L, "float16"), _i8(L)),
    "ldexp(f16 small, 16)": lambda L: L.ldexp(_t(L, [1e-3, 2e-3], "float16"), _t(L, [16, 15], "int64")),
    "ldexp(bf16, i8)": lambda L: L.ldexp(_x(L, "bfloat16"), _i8(L)),
    "ldexp(i8, i8)": lambda L: L.ldexp(_i8(L), _i8(L)),
    "ldexp(bool, bool)": lambda L: L.ldexp(_x(L, "bool"), _x(L, "bool")),
    # bool tensors: square promotes as pow(x, 2) does; a Python bool power keeps bool
    "square(bool)": lambda L: L.square(_x(L, "bool")), "bool ** True": lambda L: _x(L, "bool") ** True,
    "bool ** False": lambda L: _x(L, "bool") ** False, "pow(bool, 2)": lambda L: L.pow(_x(L, "bool"), 2),
    # bfloat16 operands of hypot, logaddexp, logaddexp2 (refused before)
    "hypot(bf16, bool)": lambda L: L.hypot(_x(L, "bfloat16"), _x(L, "bool")),
    "logaddexp(bf16, u8)": lambda L: L.logaddexp(_x(L, "bfloat16"), _u8(L)),
    "logaddexp2(bf16, bf16)": lambda L: L.logaddexp2(_x(L, "bfloat16"), _x(L, "bfloat16").flip(0)),
    # reflected shifts (missing) and in-place integer ops computed in the promoted type
    "3 << bool": lambda L: 3 << _x(L, "bool"), "100 >> i8": lambda L: 100 >> _i8(L).abs(),
    "u8 **= i8": lambda L: (_u8(L) % 7).pow_(_i8(L)), "u8 //= i8": lambda L: _u8(L).floor_divide_(_i8(L) - 6),
    "u8 %= i8": lambda L: _u8(L).remainder_(_i8(L) - 6),
    # sgn_ of a complex tensor (was sign_'s refusal)
    "sgn_(c64)": lambda L: (_x(L, "complex64") * (1 + 1j)).sgn_(),
    # addcmul computes in the result type of all three operands, its value converted to it; where of two scalars
    "addcmul(f16, bf16, i64)": lambda L: L.addcmul(_x(L, "float16"), _x(L, "bfloat16").flip(1), _i8(L).long(), value=2),
    "addcmul(u8, value=2.5)": lambda L: L.addcmul(_u8(L), _u8(L), _u8(L), value=2.5),
    "addcmul_(u8, value=-1)": lambda L: _u8(L).addcmul_(_u8(L), _i8(L).to(L.uint8), value=-1),
    "addcmul(f16, value=True)": lambda L: L.addcmul(_x(L, "float16"), _x(L, "float16"), _x(L, "float16"), value=True),
    "where(c, 2, 2.5)": lambda L: L.where(_x(L, "bool"), 2, 2.5),
    "clamp(bool, min=bool)": lambda L: L.clamp(_x(L, "bool"), min=_x(L, "bool").flip(0)),
    "float_power_(c128, 2)": lambda L: _x(L, "complex128").float_power_(2),
    # out= of functions that lacked it
    "pow(out=)": lambda L: L.pow(_x(L), 2, out=L.empty(3, 5)),
    "maximum(out=)": lambda L: L.maximum(_u8(L), _i8(L), out=L.empty(3, 5, dtype=L.int64)),
    "lt(out=)": lambda L: L.lt(_x(L), 0.5, out=L.empty(3, 5, dtype=L.bool)),
    "atan2(out=)": lambda L: L.atan2(_x(L), _x(L).flip(0), out=L.empty(3, 5, dtype=L.float64)),
    "bitwise_and(out=)": lambda L: L.bitwise_and(_u8(L), 12, out=L.empty(3, 5, dtype=L.uint8)),
}


@pytest.mark.parametrize("name", TYPES)
def test_result_types_and_values(name):
    _same(TYPES[name])


# ---- refusals: torch's error type and message ---------------------------------------------------------------------
REFUSED = {
    "sub(bool, i8)": lambda L: _x(L, "bool") - _i8(L), "sub(u8, True)": lambda L: L.sub(_u8(L), True),
    "2.5 - bool": lambda L: 2.5 - _x(L, "bool"), "bool - bool": lambda L: _x(L, "bool") - _x(L, "bool"),
    "i8 -= bool": lambda L: _i8(L).__isub__(_x(L, "bool")),
    "abs(bool)": lambda L: L.abs(_x(L, "bool")), "ceil(bool)": lambda L: L.ceil(_x(L, "bool")),
    "floor_(bool)": lambda L: _x(L, "bool").floor_(), "trunc(bool)": lambda L: L.trunc(_x(L, "bool")),
    "round(bool)": lambda L: L.round(_x(L, "bool")), "frac(i8)": lambda L: L.frac(_i8(L)),
    "round(u8, decimals=1)": lambda L: L.round(_u8(L), decimals=1),
    "round(c64, decimals=2)": lambda L: L.round(_x(L, "complex64"), decimals=2),
    "-bool": lambda L: -_x(L, "bool"), "+bool": lambda L: +_x(L, "bool"),
    "bitwise_and(f16, bool)": lambda L: L.bitwise_and(_x(L, "float16"), _x(L, "bool")),
    "bool | 2.5": lambda L: _x(L, "bool") | 2.5, "bitwise_not(f16)": lambda L: L.bitwise_not(_x(L, "float16")),
    "~f32": lambda L: ~_x(L), "bool &= u8": lambda L: _x(L, "bool").__iand__(_u8(L)),
    "f16 ^= bool": lambda L: _x(L, "float16").__ixor__(_x(L, "bool")),
    "f32 /= c64": lambda L: _x(L).__itruediv__(_x(L, "complex64")),
    "c64 %= 3": lambda L: _x(L, "complex64").__imod__(3),
    "square_(bool)": lambda L: _x(L, "bool").square_(),
    "bool ** bool": lambda L: _x(L, "bool") ** _x(L, "bool"),
    "nextafter(i8, i8)": lambda L: L.nextafter(_i8(L), _i8(L)),
    "ldexp(f32, bool)": lambda L: L.ldexp(_x(L), _x(L, "bool")),
    "isclose(i8, f32)": lambda L: L.isclose(_i8(L), _x(L)),
    "lerp(f32, f64)": lambda L: L.lerp(_x(L), _x(L, "float64"), 0.5),
    "lerp(f32, f32, f64 weight)": lambda L: L.lerp(_x(L), _x(L), _x(L, "float64")),
    "lerp(i8, i8, 0.5)": lambda L: L.lerp(_i8(L), _i8(L), 0.5),
    "lerp_(f32, u8)": lambda L: _x(L).lerp_(_u8(L), 0.5),
    "xlogy(bool, 1j)": lambda L: L.xlogy(_x(L, "bool"), 1 + 2j),
    "copysign(f32, 1j)": lambda L: L.copysign(_x(L), 1j), "logit_(c64)": lambda L: _x(L, "complex64").logit_(),
    "add(i8, i8, alpha=1.5)": lambda L: L.add(_i8(L), _i8(L), alpha=1.5),
    "add(f32, f32, alpha=1j)": lambda L: L.add(_x(L), _x(L), alpha=1j),
    "add(i8, i8, alpha=True)": lambda L: L.add(_i8(L), _i8(L), alpha=True),
    "clip_(bool, 0, 1)": lambda L: _x(L, "bool").clip_(_t(L, 0, "int64"), _t(L, 1, "int64")),
    "addcdiv(f32, u8, u8)": lambda L: L.addcdiv(_x(L), _u8(L), _u8(L) + 1),
    "addcmul(bool, bool, bool)": lambda L: L.addcmul(_x(L, "bool"), _x(L, "bool"), _x(L, "bool")),
    "clamp(bool, True, True)": lambda L: L.clamp(_x(L, "bool"), True, True),
    "clamp(bool, min=True)": lambda L: L.clamp(_x(L, "bool"), min=True),
    "clamp(bool, bool, bool)": lambda L: L.clamp(_x(L, "bool"), _x(L, "bool"), _x(L, "bool")),
    "clamp(bool, c64, f32)": lambda L: L.clamp(_x(L, "bool"), _x(L, "complex64"), _x(L)),
    "clamp(bool, 1j)": lambda L: L.clamp(_x(L, "bool"), 1j),
    "bool <<= 2.5": lambda L: _x(L, "bool").__ilshift__(2.5),
    "bool **= -2": lambda L: _x(L, "bool").__ipow__(-2),
    "i64 + 2**64": lambda L: _i8(L).long() + 2 ** 64, "f32 * 2**70": lambda L: _x(L) * 2 ** 70,
    "special.bessel_j0(c64)": lambda L: L.special.bessel_j0(_x(L, "complex64")),
    "special.modified_bessel_k1(c64)": lambda L: L.special.modified_bessel_k1(_x(L, "complex64")),
    "special.zeta(f16, 2)": lambda L: L.special.zeta(_x(L, "float16").abs() + 1, 2),
    "special.zeta(i64, bf16)": lambda L: L.special.zeta(_i8(L).long().abs() + 1, _x(L, "bfloat16").abs() + 1),
    "hypot_(bool, u8)": lambda L: _x(L, "bool").hypot_(_u8(L)),
    "atan2_(bool, u8)": lambda L: _x(L, "bool").atan2_(_u8(L)),
    "float_power_(f64, 1j)": lambda L: _x(L, "float64").float_power_(1j),
    "add(f32, f32, out=i64)": lambda L: L.add(_x(L), _x(L), out=L.empty(3, 5, dtype=L.int64)),
    "exp(i8, out=i8)": lambda L: L.exp(_i8(L), out=L.empty(3, 5, dtype=L.int8)),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refusals_match_torch(name):
    with pytest.raises(Exception):
        REFUSED[name](torch)
    _same(REFUSED[name])


def test_nan_to_num_refuses_to_differentiate_a_complex_tensor():
    _same(lambda L: L.nan_to_num(_x(L, "complex64").requires_grad_()))

    def without_grad(L):
        with L.no_grad():
            return L.nan_to_num(_x(L, "complex64").requires_grad_())
    _same(without_grad)


def test_lerp_of_a_0_dim_weight_of_another_dtype_works():
    _same(lambda L: L.lerp(_x(L), _x(L).flip(0), _t(L, 0.25, "float64")))


# ---- the CUDA backend (emulated where there is no GPU) -----------------------------------------------------------
ON_CUDA = ["u8 + -2", "u8 < -2", "u8 - u8", "clamp(u8, -1, 2)", "u8 **= i8", "bool ** True", "square(bool)",
           "f32 + c128 0-dim"]


@pytest.mark.parametrize("name", ON_CUDA)
def test_on_cuda(cuda, name):
    _same({**WRAPPED, **TYPES}[name], device="cuda")


@pytest.mark.parametrize("program", [
    "a = x * 1; a.abs_().sqrt_(); a.sum().backward()",
    "v = x * 1; v.sub_(v * 0 + 2); v.sum().backward()",
    "a = x * 1; b = a * 2; a.add_(1); b.sum().backward()",
    "a = x * 1; b = a / 3; a.add_(1); b.sum().backward()",
    "a = x * 1; w = x.detach() * 2; b = a * w; a.add_(1); b.sum().backward()",
])
def test_in_place_writes_after_ops_that_do_not_read_the_tensor_back(program):
    """Writing in place into a tensor that a later backward does not read (a product with a constant, a quotient,
    an in-place op that kept its own copy) is allowed, as by torch's saved variables; the gradients are torch's."""
    grads = []
    for lib in (torch, engine):
        x = lib.tensor([-1.5, 2.0], requires_grad=True)
        exec(program, {"x": x})
        grads.append(x.grad.tolist())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_in_place_write_into_a_factor_that_backward_reads_is_refused():
    x = engine.tensor([-1.5, 2.0], requires_grad=True)
    a, w = x * 1, x * 2
    b = a * w
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()
