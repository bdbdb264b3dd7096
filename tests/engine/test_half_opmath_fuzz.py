"""float16 and bfloat16 arithmetic as torch's CPU kernels do it ("opmath"), a sample of a differential sweep.

torch computes these types in float32 and rounds once. A Python-number (or 0-dim tensor) second operand of mul
and the divisions is read at float32 (``1000 * 2**-31`` is 4.8e-7 in float16, not 0); other ops round it to the
tensor's type first (bfloat16 + 3.14159 adds 3.140625). lerp, addcmul, addcdiv, the fused activations, softmax and
their gradients round once. Results are compared in units in the last place of the output type: exactly where
one rounding of the same float32 value is expected, within 1 where torch's float32 steps may differ from ours
(an fma, another order) before that rounding."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F

DTYPES = {"float16": (engine.float16, torch.float16), "bfloat16": (engine.bfloat16, torch.bfloat16)}
N = 64  # a multiple of torch's vector width: its scalar tail loop rounds add's ``alpha * b`` separately


def _ulps(ours, ref):
    """The largest distance between two same-typed results, in steps of their (16-bit) type; NaNs must match."""
    ours = torch.from_numpy(np.asarray(ours.detach().float().numpy(), dtype=np.float32)).to(ref.dtype)
    ref = ref.detach()
    assert ours.shape == ref.shape
    nan = torch.isnan(ref)
    assert torch.equal(torch.isnan(ours), nan)

    def ordered(t):
        bits = torch.where(nan, 0, t).view(torch.int16).to(torch.int32)
        return torch.where(bits >= 0, bits, -(bits & 0x7FFF))
    return int((ordered(ours) - ordered(ref)).abs().max())


def _pair(dtype, *shape, seed=0, scale=3.0):
    """The same random values as an engine and a torch tensor of ``dtype``, both leaves needing gradients."""
    ours_dt, torch_dt = DTYPES[dtype]
    values = (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)
    ref = torch.from_numpy(values).to(torch_dt)
    return (engine.tensor(ref.float().numpy(), dtype=ours_dt).requires_grad_(),
            ref.clone().requires_grad_())


SCALAR_CASES = [  # (name, op on (tensor, scalar), scalar)
    ("mul", lambda a, s: a * s, 2 ** -31),
    ("rmul", lambda a, s: s * a, 1e-8),
    ("mul_0dim", lambda a, s: a * (engine.tensor(s) if isinstance(a, engine.Tensor) else torch.tensor(s)), 2 ** -31),
    ("div", lambda a, s: a / s, 1e5),
    ("div_floor", lambda a, s: (engine if isinstance(a, engine.Tensor) else torch).div(a, s, rounding_mode="floor"),
     1e-3),
    ("div_trunc", lambda a, s: (engine if isinstance(a, engine.Tensor) else torch).div(a, s, rounding_mode="trunc"),
     1e-3),
    ("rdiv", lambda a, s: s / a, 3.3),
    ("imul", lambda a, s: a.detach().clone().mul_(s), 1e-8),
    ("add", lambda a, s: a + s, 3.14159),
    ("rsub", lambda a, s: s - a, 1 / 3),
    ("add_0dim_float64", lambda a, s: a + (engine.tensor(s, dtype=engine.float64) if isinstance(a, engine.Tensor)
                                           else torch.tensor(s, dtype=torch.float64)), 3.14159),
    ("fmod", lambda a, s: a.fmod(s), 0.7),
    ("remainder", lambda a, s: a % s, 0.7),
    ("pow", lambda a, s: a.abs() ** s, 1 / 3),
    ("add_alpha", lambda a, s: a.add(a * 0.5, alpha=s), 0.3),
    ("sub_alpha_scalar", lambda a, s: a.sub(7, alpha=s), 0.3),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, op, scalar", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_scalar_operands_as_torch_reads_them(dtype, name, op, scalar):
    ours, ref = _pair(dtype, 2, N, seed=len(name))
    expected = op(ref, scalar)
    got = op(ours, scalar)
    assert got.dtype == DTYPES[dtype][0]
    assert _ulps(got, expected) == 0
    if expected.requires_grad and name != "pow":  # pow's backward rounds each of its steps in torch
        grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(1)).to(expected.dtype)
        expected.backward(grad)
        got.backward(engine.tensor(grad.float().numpy(), dtype=got.dtype))
        assert _ulps(ours.grad, ref.grad) <= 1


def test_the_headline_case():
    """A float16 tensor times 2**-31 keeps its subnormal result, as torch's."""
    got = engine.tensor([1000.0], dtype=engine.float16) * 2 ** -31
    assert got.item() == torch.tensor([1000.0], dtype=torch.float16).mul(2 ** -31).item() != 0


FUSED_CASES = [  # (name, op on (module, tensor)): torch computes each in one kernel
    ("lerp", lambda m, x: m.lerp(x, x * 0.25 + 1, 0.3)),
    ("addcmul", lambda m, x: m.addcmul(x, x, x * 0.5, value=300.0)),
    ("addcdiv", lambda m, x: m.addcdiv(x, x, x.abs() + 3, value=1000.0)),
    ("silu", lambda m, x: m.nn.functional.silu(x)),
    ("mish", lambda m, x: m.nn.functional.mish(x)),
    ("softplus", lambda m, x: m.nn.functional.softplus(x, beta=2.0, threshold=5.0)),
    ("elu", lambda m, x: m.nn.functional.elu(x, alpha=0.7)),
    ("selu", lambda m, x: m.nn.functional.selu(x)),
    ("hardswish", lambda m, x: m.nn.functional.hardswish(x)),
    ("logsigmoid", lambda m, x: m.nn.functional.logsigmoid(x)),
    ("sigmoid", lambda m, x: x.sigmoid()),
    ("tanh", lambda m, x: x.tanh()),
    ("softmax", lambda m, x: m.nn.functional.softmax(x, dim=-1)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, op", FUSED_CASES, ids=[c[0] for c in FUSED_CASES])
def test_fused_ops_round_once(dtype, name, op):
    ours, ref = _pair(dtype, 3, 45, seed=len(name) + 7)
    expected, got = op(torch, ref), op(engine, ours)
    assert got.dtype == DTYPES[dtype][0]
    assert _ulps(got, expected) <= 1
    if name.startswith("addc"):  # torch's backward rounds each of its steps and each sum of x's three parts
        return
    grad = torch.randn(expected.shape, generator=torch.Generator().manual_seed(2)).to(expected.dtype)
    expected.backward(grad)
    got.backward(engine.tensor(grad.float().numpy(), dtype=got.dtype))
    assert _ulps(ours.grad, ref.grad) <= 1


def test_inplace_activation_of_float16_rounds_once():
    ours, ref = _pair("float16", 4, 33, seed=3)
    got = F.silu(ours.detach().clone(), inplace=True)
    assert got.dtype == engine.float16
    assert _ulps(got, TF.silu(ref.detach().clone(), inplace=True)) <= 1


def test_float32_paths_unchanged_by_the_half_handling():
    """float32 multiplies a Python scalar exactly as before: the float16 handling is a dtype check there."""
    ours, ref = _pair("float16", 2, N, seed=5)
    a32 = ours.detach().float()
    np.testing.assert_array_equal((a32 * 2 ** -31).numpy(), a32.numpy() * np.float32(2 ** -31))
    np.testing.assert_array_equal((a32 + 3.14159).numpy(), a32.numpy() + np.float32(3.14159))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("how", ["floor", "trunc", "floor_divide"])
def test_tensor_divisions_round_each_step_as_torch(dtype, how):
    """With a tensor divisor torch's rounding divisions work in the type itself: floor's steps (a - fmod(a, b),
    over b, corrected, floored) each rounded, trunc's quotient rounded before it is truncated."""
    rng = np.random.default_rng(11)
    values = [(rng.standard_normal(300) * np.exp(rng.uniform(-9, 9, 300))).astype(np.float32) for _ in range(2)]
    values[1][:5] = 0  # x / 0
    ref_a, ref_b = (torch.from_numpy(v).to(DTYPES[dtype][1]) for v in values)
    ours_a, ours_b = (engine.tensor(t.float().numpy(), dtype=DTYPES[dtype][0]) for t in (ref_a, ref_b))
    if how == "floor_divide":
        expected, got = ref_a // ref_b, ours_a // ours_b
    else:
        expected, got = torch.div(ref_a, ref_b, rounding_mode=how), engine.div(ours_a, ours_b, rounding_mode=how)
    assert _ulps(got, expected) == 0


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_atan2_gradient_is_zero_where_the_squares_vanish(dtype):
    """At the origin, or where a^2 + b^2 underflows (float16 squares of 1e-5), torch's gradient is 0, not NaN/inf."""
    values = np.array([0.0, 1e-5, 1.0], np.float32), np.array([0.0, -2e-5, 0.5], np.float32)
    ref = [torch.from_numpy(v).to(getattr(torch, dtype)).requires_grad_() for v in values]
    ours = [engine.tensor(v, dtype=getattr(engine, dtype)).requires_grad_() for v in values]
    torch.atan2(*ref).sum().backward()
    engine.atan2(*ours).sum().backward()
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o.grad.float().numpy(), r.grad.float().numpy(), rtol=1e-5, atol=0)


def test_addcdiv_and_addcmul_multiply_by_value_first():
    """torch computes value * tensor1 first: float32 addcdiv equals it bit for bit, and a product that overflows
    gives inf (value * (tensor1 / tensor2) would not)."""
    rng = np.random.default_rng(4)
    a, b, c = (rng.standard_normal(257).astype(np.float32) for _ in range(3))
    c = np.abs(c) + 0.5
    expected = torch.addcdiv(*(torch.from_numpy(v) for v in (a, b, c)), value=0.3).numpy()
    np.testing.assert_array_equal(engine.addcdiv(*(engine.tensor(v) for v in (a, b, c)), value=0.3).numpy(), expected)
    big = np.array([3e38], np.float32)
    for op in ("addcdiv", "addcmul"):
        expected = getattr(torch, op)(*(torch.from_numpy(big) for _ in range(3)), value=3.0)
        with np.errstate(over="ignore"):
            got = getattr(engine, op)(*(engine.tensor(big) for _ in range(3)), value=3.0)
        assert np.isinf(got.numpy()).all() and np.isinf(expected.numpy()).all()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name, op", FUSED_CASES[:3], ids=[c[0] for c in FUSED_CASES[:3]])
def test_fused_arithmetic_rounds_once_exactly(dtype, name, op):
    """lerp, addcmul and addcdiv round their float32 result once, as torch's (rounding each step moved elements
    by up to 26 steps here). torch's lerp and addcmul end in an fma, one float32 rounding fewer than ours, which
    may still move one element by one step."""
    ours, ref = _pair(dtype, 4, N, seed=21)
    assert _ulps(op(engine, ours.detach()), op(torch, ref.detach())) <= (0 if name == "addcdiv" else 1)


def test_on_emulated_cuda(cuda):
    """The same handling on a GPU's arrays (CuPy, emulated here): scalars kept or rounded, fused ops rounded once."""
    ours = engine.tensor(np.linspace(-3, 3, N, dtype=np.float32), dtype=engine.float16).to("cuda")
    ref = torch.linspace(-3, 3, N).half()
    divisor, ref_divisor = ours.abs() + 0.5, ref.abs() + 0.5
    for got, expected in ((ours * 2 ** -31, ref * 2 ** -31), (3.3 / divisor, 3.3 / ref_divisor),
                          (engine.div(ours, divisor, rounding_mode="floor"),
                           torch.div(ref, ref_divisor, rounding_mode="floor")),
                          (F.silu(ours), TF.silu(ref)), (engine.lerp(ours, divisor, 0.3), torch.lerp(ref, ref_divisor, 0.3)),
                          (F.softmax(ours.reshape(4, -1), dim=-1), TF.softmax(ref.reshape(4, -1), dim=-1))):
        assert got.device.type == "cuda" and got.dtype == engine.float16
        assert _ulps(got.cpu(), expected) <= 1


# ---- outside the pointwise ops: broadcast gradients, in-place forms, norms, batch norm ------------------------
def test_float16_broadcast_gradients_sum_in_float32():
    (a, ta), (b, tb) = _pair("float16", 1, N, seed=1), _pair("float16", 300, N, seed=2)
    (a * b).sum().backward()
    (ta * tb).sum().backward()
    assert _ulps(a.grad, ta.grad) <= 1


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("op", ["addcmul_", "addcdiv_", "lerp_"])
def test_half_inplace_forms_round_once(dtype, op):
    def run(x, t1, t2):
        x = x.detach().clone()
        if op == "lerp_":
            return x.lerp_(t1.detach(), 0.3)
        return getattr(x, op)(t1.detach(), t2.detach().abs() + 1, value=0.7)
    (x, tx), (t1, tt1), (t2, tt2) = (_pair(dtype, N, seed=s) for s in (3, 4, 5))
    assert _ulps(run(x, t1, t2), run(tx, tt1, tt2)) <= 1


def test_float16_norm_accumulates_in_float32():
    values = np.full(64, 1e-5, np.float16)
    ours = engine.linalg.vector_norm(engine.tensor(values))
    theirs = torch.linalg.vector_norm(torch.tensor(values))
    assert float(ours) > 0 and _ulps(ours, theirs) <= 1


def test_float16_batch_norm_keeps_torchs_half_statistics():
    x, tx = _pair("float16", 6, 3, 5, 5, seed=6)
    w, tw = _pair("float16", 3, seed=7)
    ours = F.batch_norm(x, None, None, w, None, training=True)
    theirs = TF.batch_norm(tx, None, None, tw, None, training=True)
    assert _ulps(ours, theirs) <= 1
