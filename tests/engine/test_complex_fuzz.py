"""Complex tensors against torch: the cases a differential sweep (arithmetic with every operand kind, pow, the
unary math, reductions, views, gradients of every input and double backward) found wrong.

Families: complex ``pow`` as torch's kernels compute it (C's ``cpow`` for a tensor exponent, so ``0 ** 0`` is
NaN; torch's shortcuts for a Python number exponent, so ``0 ** -1`` is ``inf + nan j``) and its exponent
gradient at a zero base; acosh's complex gradient left of the imaginary axis; double backward through ``abs``,
``angle``, ``sgn`` and ``polar`` of complex tensors; ``div`` with a rounding mode refusing complex input in
torch's words; the variance and standard deviation of complex tensors (complex_statistics)."""
import numpy as np
import pytest
import torch

import engine
from engine.ops.complex_statistics import complex_variance
from op_check import assert_close, assert_same_error, check_op

pytestmark = pytest.mark.slow  # about 10 s in all

_Z = [0j, 1 + 1j, -2 + 0j, 0.5j, complex(-0.0, 0.0), complex(0.0, -0.0), 0.3 - 1.7j]


def _z(lib, dtype):
    return lib.tensor(_Z, dtype=getattr(lib, dtype))


def _numpy(t):
    t = t.detach()
    return t.resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.cpu().numpy()


POWERS = {
    "scalar_-1": lambda lib, z: z ** -1, "scalar_-2": lambda lib, z: z ** -2, "scalar_-0.5": lambda lib, z: z ** -0.5,
    "scalar_-3": lambda lib, z: z ** -3, "scalar_complex_-1": lambda lib, z: z ** (-1 + 0j),
    "scalar_1j": lambda lib, z: z ** 1j, "scalar_2.5": lambda lib, z: z ** 2.5, "scalar_0": lambda lib, z: z ** 0,
    "zero_dim_0": lambda lib, z: z ** lib.tensor(0.0), "zero_dim_-1": lambda lib, z: z ** lib.tensor(-1.0),
    "tensor_0": lambda lib, z: z ** lib.zeros(7), "tensor_mixed": lambda lib, z: z ** lib.tensor(
        [0.0, -1.0, 2.0, 0.5, 0.0, -2.0, 3.0]),
    "tensor_complex": lambda lib, z: z ** z.flip(0), "self": lambda lib, z: z ** z,
    "scalar_base_0": lambda lib, z: 0 ** z, "scalar_base_2": lambda lib, z: 2 ** z,
    "scalar_base_0j": lambda lib, z: 0j ** z, "real_base": lambda lib, z: lib.tensor(
        [0.0, -2.0, 1.0, 0.5, 0.0, 3.0, -1.0]) ** z,
    "bool_base": lambda lib, z: lib.tensor([False, True, True, False, False, True, False]) ** z,
    "in_place": lambda lib, z: z.clone().pow_(lib.tensor(0.0)),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", sorted(POWERS))
def test_complex_pow_values_as_torch(name, dtype):
    expected = POWERS[name](torch, _z(torch, dtype))
    ours = POWERS[name](engine, _z(engine, dtype))
    assert str(ours.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert_close(_numpy(ours), _numpy(expected), rtol=1e-5 if dtype == "complex64" else 1e-12)


def test_complex_pow_on_cuda(cuda):
    with engine.device("cuda"):
        ours = [POWERS[name](engine, _z(engine, "complex64")) for name in ("scalar_-1", "tensor_0", "scalar_1j")]
    for name, result in zip(("scalar_-1", "tensor_0", "scalar_1j"), ours):
        assert_close(result.cpu().numpy(), _numpy(POWERS[name](torch, _z(torch, "complex64"))))


@pytest.mark.parametrize("exponent", [2, 0.5, -1, 3, 1.7 - 0.4j])
def test_complex_pow_gradient_with_a_number_exponent(exponent):
    z = (np.array([1 + 1j, -2 + 0.5j, 0.5j, 0.3 - 1.7j, -1 - 1j]) * 1.1).astype(np.complex128)
    check_op(lambda a: a ** exponent, lambda a: a ** exponent, [z], rtol=1e-10)


def test_complex_pow_gradients_of_both_tensors():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    b = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    check_op(lambda x, y: x ** y, lambda x, y: x ** y, [a, b], rtol=1e-4)
    check_op(lambda x, y: x ** y, lambda x, y: x ** y, [a, b.real.copy()], rtol=1e-4)  # a real exponent's: real


@pytest.mark.parametrize("exponent", [1j, 2 + 1j, 2.0 + 0j])
def test_exponent_gradient_at_a_zero_base(exponent):
    """The exponent's gradient is 0 at a zero base only for a real exponent >= 0 (numpy orders 2j above 0)."""
    def gradients(lib):
        a = lib.tensor([0j, 1 + 1j], dtype=lib.complex128)
        b = lib.tensor([exponent, exponent], dtype=lib.complex128).requires_grad_()
        return lib.autograd.grad(a ** b, b, lib.tensor([1 + 0.5j, 1 - 1j], dtype=lib.complex128))[0]
    assert_close(_numpy(gradients(engine)), _numpy(gradients(torch)), rtol=1e-12)


def test_acosh_gradient_of_complex_input():
    z = np.array([[1 + 1j, -1 + 0.5j, -2 - 1j], [0.5 - 0.3j, -3 + 0j, 0.2 + 0j]], np.complex128)
    check_op(lambda t: t.acosh(), lambda t: t.acosh(), [z], rtol=1e-10)


def _double_backward(op, inputs, dtypes):
    """op's outputs, its first gradients (create_graph) and the gradients of their squared magnitudes."""
    def run(lib):
        xs = [lib.tensor(x, dtype=getattr(lib, d)).requires_grad_() for x, d in zip(inputs, dtypes)]
        y = op(lib, *xs)
        v = lib.tensor(np.arange(1, y.numel() + 1).reshape(tuple(y.shape)) * (1 + 0.5j if y.is_complex() else 1.0),
                       dtype=y.dtype)
        first = lib.autograd.grad(y, xs, v, create_graph=True)
        total = sum((g.abs() ** 2).sum() * (i + 1) for i, g in enumerate(first))
        return [y, *first, *lib.autograd.grad(total, xs)]
    for ours, theirs in zip(run(engine), run(torch)):
        assert ours.dtype.is_complex == theirs.dtype.is_complex
        np.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=1e-9, atol=1e-12)


_C = np.array([1 + 2j, -0.5 + 0.3j, -1.5 - 1j, 0.7 - 2j])
_R = np.array([0.8, -1.3, 2.1, 0.4])
DOUBLE = {
    "abs": (lambda lib, a, b: a * b.abs(), ("complex128", "complex128")),
    "abs_of_a_product": (lambda lib, a, b: (a * b).abs() ** 3, ("complex128", "complex128")),
    "angle": (lambda lib, a, b: (a * b).angle(), ("complex128", "complex128")),
    "angle_real_operand": (lambda lib, a, b: (a * b).angle(), ("complex128", "float64")),
    "sgn": (lambda lib, a, b: (a * b).sgn(), ("complex128", "complex128")),
    "sgn_times": (lambda lib, a, b: b.sgn() * a, ("complex128", "complex128")),
    # (torch's double backward here imports torch._dynamo on its first call: about 3 s once per process)
    "polar": (lambda lib, a, b: lib.polar(a.abs(), b) * (1 + 1j), ("float64", "float64")),
}


@pytest.mark.parametrize("name", sorted(DOUBLE))
def test_double_backward_of_complex_ops(name):
    op, dtypes = DOUBLE[name]
    inputs = [_C if d.startswith("complex") else _R for d in dtypes]
    _double_backward(op, [inputs[0], inputs[1][::-1].copy() * 1.5], dtypes)


@pytest.mark.parametrize("mode", ["floor", "trunc"])
@pytest.mark.parametrize("case", ["tensor", "scalar", "in_place", "real_tensor_complex_scalar"])
def test_div_with_a_rounding_mode_refuses_complex(case, mode):
    def run(lib):
        z = lib.tensor([1 + 2j, -3j])
        if case == "tensor":
            return lib.div(z, z, rounding_mode=mode)
        if case == "scalar":
            return lib.div(z, 2, rounding_mode=mode)
        if case == "in_place":
            return z.div_(2, rounding_mode=mode)
        return lib.div(lib.tensor([1.0, 2.0]), 1j, rounding_mode=mode)
    assert_same_error(lambda: run(engine), lambda: run(torch))


VARIANCES = {
    "var": (dict(dim=None, unbiased=None, keepdim=False, correction=None), False, lambda t: t.var()),
    "var_dim_keepdim": (dict(dim=1, unbiased=None, keepdim=True, correction=None), False,
                        lambda t: t.var(1, keepdim=True)),
    "var_correction": (dict(dim=(0, 1), unbiased=None, keepdim=False, correction=2), False,
                       lambda t: t.var((0, 1), correction=2)),
    "var_biased": (dict(dim=0, unbiased=False, keepdim=False, correction=None), False,
                   lambda t: t.var(0, unbiased=False)),
    "std": (dict(dim=0, unbiased=None, keepdim=False, correction=None), True, lambda t: t.std(0)),
    "std_full": (dict(dim=None, unbiased=None, keepdim=False, correction=0), True, lambda t: t.std(correction=0)),
}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(VARIANCES))
def test_complex_variance(name, dtype):
    """A real result, the complex gradient 2 gy (z - mean) / (n - correction) (and its derivative)."""
    kwargs, root, theirs = VARIANCES[name]
    rng = np.random.default_rng(7)
    z = (rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))).astype(dtype)
    check_op(lambda t: complex_variance(t, **kwargs, root=root), theirs, [z],
             rtol=1e-5 if dtype == np.complex64 else 1e-10)
    _double_backward(lambda lib, a, b: complex_variance(a * b, **kwargs, root=root) if lib is engine
                     else theirs(a * b), [z.astype(np.complex128), z[::-1].astype(np.complex128).copy()],
                     ("complex128", "complex128"))


def test_complex_std_gradient_is_zero_where_it_is_zero():
    def run(lib, std):
        z = lib.tensor([[1 + 1j, 1 + 1j], [2 - 1j, 0.5j]], dtype=lib.complex128).requires_grad_()
        y = std(z)
        return y, lib.autograd.grad(y, z, lib.tensor([1.5, -2.0], dtype=lib.float64))[0]
    ours = run(engine, lambda z: complex_variance(z, 1, None, False, None, root=True))
    theirs = run(torch, lambda z: z.std(1))
    for o, t in zip(ours, theirs):
        assert_close(_numpy(o), _numpy(t), rtol=1e-12)


@pytest.mark.parametrize("position", [0, 1, 2])
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv_want_tensors(name, position):
    """A number where torch wants a tensor is torch's TypeError (it was an AttributeError)."""
    def run(lib):
        args = [lib.ones(2, dtype=lib.complex64), lib.ones(2), lib.ones(2) + 1]
        args[position] = (1j, 2.0, np.float64(3.0))[position]
        return getattr(lib, name)(*args)
    assert_same_error(lambda: run(engine), lambda: run(torch))


# ---- with /tmp/complex/lead.diff applied (reduction.py, statistics.py, autograd/graph.py, double_backward.py) ----
_W = np.random.default_rng(11).standard_normal((3, 4)) + 1j * np.random.default_rng(12).standard_normal((3, 4))
PUBLIC = {
    "var": lambda lib, t: t.var(), "std_dim": lambda lib, t: t.std(1), "var_mean": lambda lib, t: lib.var_mean(t, 0),
    "std_mean": lambda lib, t: lib.std_mean(t, 1, correction=0), "logsumexp": lambda lib, t: lib.logsumexp(t, 1),
    "cov": lambda lib, t: lib.cov(t), "corrcoef": lambda lib, t: lib.corrcoef(t), "prod": lambda lib, t: t.prod(1),
    "prod_full": lambda lib, t: t.prod(), "divide_by_abs": lambda lib, t: t / t.abs().sum(),
    "divide_by_real": lambda lib, t: t / t.real,
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_complex_reductions_and_their_double_backward(name):
    """Real results of var/std, complex logsumexp/cov/corrcoef, conjugated prod gradients, and a real output
    (abs, real) whose complex op saved it: each gradient and the gradient of its squared magnitude."""
    def run(lib):
        t = lib.tensor(_W).requires_grad_()
        y = PUBLIC[name](lib, t)
        y = y if isinstance(y, tuple) else (y,)
        vs = [lib.ones_like(o) * ((1 + 2j) if o.is_complex() else 1.5) for o in y]
        g, = lib.autograd.grad(y, t, vs, create_graph=True)
        return [*y, g, lib.autograd.grad((g.abs() ** 2).sum(), t)[0]]
    for ours, theirs in zip(run(engine), run(torch)):
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
def test_nansum_refuses_complex_on_the_cpu(name):
    assert_same_error(lambda: getattr(engine.tensor([1j]), name)(), lambda: getattr(torch.tensor([1j]), name)())
