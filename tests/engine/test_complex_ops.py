"""Ops on complex tensors against torch: values (real and imaginary parts), dtypes and the gradients of torch's
complex autograd convention, through check_op's complex support; views and their writes; torch's errors."""
import numpy as np
import pytest
import torch

import engine
import engine.ops.complex_math as cm
import engine.ops.complex_views as cv
from engine._dtype import complex64
from op_check import check_op


def _z(shape, seed=0, dtype=np.complex64):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _x(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


UNARY = {
    "neg": lambda t: -t, "exp": lambda t: t.exp(), "log": lambda t: t.log(), "sqrt": lambda t: t.sqrt(),
    "sin": lambda t: t.sin(), "cos": lambda t: t.cos(), "tanh": lambda t: t.tanh(), "sigmoid": lambda t: t.sigmoid(),
    "square": lambda t: t.square(), "reciprocal": lambda t: t.reciprocal(), "abs": lambda t: t.abs(),
    "angle": lambda t: t.angle(), "sgn": lambda t: t.sgn(), "conj": lambda t: t.conj() * 1,
    "conj_physical": lambda t: t.conj_physical() * 1, "pow_scalar": lambda t: t ** 3,
    "pow_complex": lambda t: t ** (0.5 + 1j),
    "real": lambda t: t.real * 1, "imag": lambda t: t.imag * 1, "sum": lambda t: t.sum(1), "mean": lambda t: t.mean(),
    "prod": lambda t: t.prod(0), "cumsum": lambda t: t.cumsum(1), "cumprod": lambda t: t.cumprod(1),
    "vector_norm": lambda t: t.norm(dim=1),
    "H": lambda t: t.H * 1, "mH": lambda t: t.mH * 1, "adjoint": lambda t: t.adjoint() * 1,
    "reshape_permute": lambda t: t.reshape(5, 3).permute(1, 0) * 1, "index": lambda t: t[1:, ::2][[0, 1, 0]] * 1,
    "isfinite": lambda t: t.isfinite(), "isnan": lambda t: t.isnan(),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    def their(t):
        if name == "vector_norm":
            return torch.linalg.vector_norm(t, dim=1)
        return UNARY[name](t)

    def ours(t):
        if name == "vector_norm":
            return engine.linalg.vector_norm(t, dim=1)
        return UNARY[name](t)
    check_op(ours, their, [_z((3, 5))], rtol=1e-5)


BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "rsub": lambda a, b: 2 - a * b,
          "matmul": lambda a, b: a @ b.mT, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
          "logaddexp": lambda a, b: a.logaddexp(b)}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    check_op(BINARY[name], BINARY[name], [_z((2, 3, 5)), _z((3, 5), seed=3)], rtol=1e-5)


@pytest.mark.parametrize("name", ["add", "mul", "div"])
def test_real_and_complex_operands(name):
    """A real operand of a complex op gets the real part of its gradient, in its own dtype."""
    check_op(BINARY[name], BINARY[name], [_x((3, 5)), _z((3, 5))], rtol=1e-5)
    check_op(BINARY[name], BINARY[name], [_z((3, 5)), _x((3, 5))], rtol=1e-5)


def test_vdot_conjugates_its_first_operand():
    check_op(lambda a, b: engine.vdot(a, b), lambda a, b: torch.vdot(a, b), [_z(7), _z(7, 1)], rtol=1e-5)


@pytest.mark.parametrize("p", [2, 3, 1, float("inf")])
def test_normalize_of_complex_rows(p):
    def normalize(lib):
        return lambda z: lib.nn.functional.normalize(z, p=p, dim=1)
    check_op(normalize(engine), normalize(torch), [_z((3, 5), dtype=np.complex128)], rtol=1e-10)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_uniform_and_normal_fill_complex_as_torch(dtype):
    """Both parts drawn alike in memory order (normal: each part with std / sqrt(2)), bit for bit."""
    torch.manual_seed(3)
    engine.manual_seed(3)
    theirs = torch.empty(2, 9, dtype=getattr(torch, dtype))
    ours = engine.empty(2, 9, dtype=getattr(engine, dtype))
    np.testing.assert_array_equal(ours.uniform_(-2, 3).numpy(), theirs.uniform_(-2, 3).numpy())
    np.testing.assert_array_equal(ours.normal_(1, 2).numpy(), theirs.normal_(1, 2).numpy())
    np.testing.assert_array_equal(ours[:, ::2].normal_().numpy(), theirs[:, ::2].normal_().numpy())
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_products_and_joins_in_double():
    a, b = _z((2, 3, 4), dtype=np.complex128), _z((2, 4, 5), 1, np.complex128)
    check_op(engine.bmm, torch.bmm, [a, b], rtol=1e-12)
    check_op(lambda x, y: engine.einsum("bij,bjk->bik", x, y), lambda x, y: torch.einsum("bij,bjk->bik", x, y),
             [a, b], rtol=1e-12)
    check_op(lambda x, y: engine.cat([x, y.mT], 1), lambda x, y: torch.cat([x, y.mT], 1), [a, b], rtol=1e-12)
    check_op(lambda x, y: engine.stack([x, x * 2]).sum(0), lambda x, y: torch.stack([x, x * 2]).sum(0), [a, b],
             rtol=1e-12)


def test_where_allclose_isreal():
    z, w = _z((4, 3)), _z((4, 3), 2)
    check_op(lambda a, b: engine.where(a.real > 0, a, b), lambda a, b: torch.where(a.real > 0, a, b), [z, w])
    ours, theirs = engine.tensor(z), torch.tensor(z)
    assert engine.allclose(ours, ours + 1e-9j) and not engine.allclose(ours, ours + 1e-3j)
    np.testing.assert_array_equal(engine.isclose(ours, ours.conj()).numpy(), torch.isclose(theirs, theirs.conj()))
    mixed = engine.tensor([1 + 0j, 2j, 3])
    np.testing.assert_array_equal(mixed.isreal().numpy(), [True, False, True])
    assert engine.isreal(engine.tensor([1.0])).all()


def test_view_as_real_and_complex():
    z = _z((3, 4))
    check_op(lambda t: cv.view_as_real(t) * 1, lambda t: torch.view_as_real(t) * 1, [z])
    check_op(lambda t: cv.view_as_real(t.mT) * 1, lambda t: torch.view_as_real(t.mT) * 1, [z])
    check_op(lambda t: cv.view_as_complex(t) * 1, lambda t: torch.view_as_complex(t) * 1, [_x((3, 4, 2))])
    ours = engine.tensor(z)
    cv.view_as_real(ours)[0, 0, 1] = 7.0
    assert ours[0, 0].item().imag == 7.0
    pairs = engine.zeros(2, 2)
    cv.view_as_complex(pairs)[1] = 1 + 2j
    np.testing.assert_array_equal(pairs.numpy(), [[0, 0], [1, 2]])


def test_real_and_imag_are_writable_views():
    z = engine.tensor(_z((2, 3)))
    z.real[0] = 5.0
    z.imag.mul_(0)
    assert np.all(z.numpy()[0].real == 5.0) and np.all(z.numpy().imag == 0)
    z.real = engine.ones(2, 3)
    np.testing.assert_array_equal(z.numpy(), np.ones((2, 3)))
    x = engine.tensor([1.0])
    assert x.real is x and x.conj() is x and not x.is_conj()


def test_complex_and_polar():
    re, im = _x((3, 4)), _x((4,), 2)
    check_op(cm.complex, torch.complex, [re, im])
    check_op(cm.polar, torch.polar, [np.abs(re) + 0.1, im])
    check_op(cm.complex, torch.complex, [re.astype(np.float64), re.astype(np.float64)])


def test_real_loss_of_a_complex_graph():
    """The docs' example: a real loss through complex ops, z.grad as torch's dL/d(re) + i dL/d(im)."""
    check_op(lambda z: cv.view_as_real(z * z.conj() + z.exp()).pow(2).sum(),
             lambda z: torch.view_as_real(z * z.conj() + z.exp()).pow(2).sum(), [_z((5,))], rtol=1e-5)


@pytest.mark.parametrize("call,error,message", [
    (lambda z: z < z, NotImplementedError, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z >= 1, NotImplementedError, "\"ge_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z.max(), NotImplementedError, "\"max_all\" not implemented for 'ComplexFloat'"),
    (lambda z: z.max(0), RuntimeError, "max\\(\\): does not support complex input"),
    (lambda z: z.amin(), NotImplementedError, "\"min_values_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z.argmax(), RuntimeError, "argmax\\(\\): does not support complex input"),
    (lambda z: z.median(), NotImplementedError, "\"median_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: engine.maximum(z, z), RuntimeError, "maximum not implemented for complex tensors."),
    (lambda z: z.clamp(0, 1), NotImplementedError, "clamp is not supported for complex types"),
    (lambda z: z.floor(), NotImplementedError, "floor is not supported for complex inputs"),
    (lambda z: z.sign(), NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex"),
    (lambda z: z % z, NotImplementedError, "\"remainder_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z // z, NotImplementedError, "\"div_floor_cpu\" not implemented for 'ComplexFloat'"),
    (lambda z: z.abs_(), RuntimeError, "In-place abs is not supported for complex tensors."),
    (lambda z: engine.ones(2).add_(z[0]), RuntimeError, "result type ComplexFloat can't be cast to the desired "
                                                     "output type Float"),
    (lambda z: engine.tensor([1.0]).imag, RuntimeError, "imag is not implemented for tensors with non-complex"),
    (lambda z: cv.view_as_real(engine.ones(2)), RuntimeError, "view_as_real is only supported for complex tensors"),
    (lambda z: cv.view_as_complex(engine.ones(3, 3)), RuntimeError, "Tensor must have a last dimension of size 2"),
    (lambda z: cv.view_as_complex(engine.ones(2, 3).t()), RuntimeError,
     "Tensor must have a last dimension with stride 1"),
    (lambda z: cv.view_as_complex(engine.ones(3, 3)[:, :2]), RuntimeError,
     "Tensor must have a stride divisible by 2 for all but last dimension"),
    (lambda z: cv.view_as_complex(engine.ones(7)[1:].reshape(3, 2)), RuntimeError,
     "Tensor must have a storage_offset divisible by 2"),
    (lambda z: cv.view_as_complex(engine.ones(3, 2, dtype=engine.int32)), RuntimeError,
     "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: Int"),
    (lambda z: cm.complex(engine.ones(2), engine.ones(2, dtype=engine.float64)), RuntimeError,
     "Expected object of scalar type Float but got scalar type Double for second argument"),
    (lambda z: cm.complex(engine.ones(2, dtype=engine.int32), engine.ones(2, dtype=engine.int32)), RuntimeError,
     "Expected both inputs to be Half, Float or Double tensors but got Int and Int"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(engine.tensor(_z((2, 2))))


def test_on_cuda(cuda):
    check_op(lambda a, b: (a * b.conj()).exp().sum(0), lambda a, b: (a * b.conj()).exp().sum(0),
             [_z((3, 4)), _z((3, 4), 1)], rtol=1e-5, device="cuda")
    check_op(lambda t: cv.view_as_real(t).abs() + t.abs().unsqueeze(-1), lambda t: torch.view_as_real(t).abs()
             + t.abs().unsqueeze(-1), [_z((3, 4))], rtol=1e-5, device="cuda")
    check_op(lambda t: t.real * t.imag.exp() + t.angle() + t.sgn().imag, lambda t: t.real * t.imag.exp() + t.angle()
             + t.sgn().imag, [_z((3, 4))], rtol=1e-5, device="cuda")
    check_op(lambda a, b: cm.polar(a, b) @ cm.complex(a, b).mH, lambda a, b: torch.polar(a, b) @ torch.complex(a, b).mH,
             [_x((3, 4)) ** 2 + 0.1, _x((3, 4), 2)], rtol=1e-5, device="cuda")


def test_copies_of_views():
    check_op(cv.view_as_real_copy, torch.view_as_real_copy, [_z((3, 2))])
    check_op(cv.view_as_complex_copy, torch.view_as_complex_copy, [_x((3, 2))], grad=False)


def test_complex64_name():
    assert engine.tensor([1j]).dtype is complex64


@pytest.mark.parametrize("case", [lambda z: (z * z * z).exp() / (z + 2),
                                  lambda z: z.real * z.imag + z.conj() * z.sin(), lambda z: z.cumprod(0)])
def test_double_backward(case):
    def second_order(lib, as_real):
        z = lib.tensor(_z((4,), dtype=np.complex128), requires_grad=True)
        g, = lib.autograd.grad((as_real(case(z)) ** 2).sum(), z, create_graph=True)
        (as_real(g) ** 2).sum().backward()
        return z.grad.numpy()
    np.testing.assert_allclose(second_order(engine, cv.view_as_real),
                               second_order(torch, lambda t: torch.view_as_real(t.resolve_conj())), rtol=1e-10)


@pytest.mark.parametrize("call, message", [
    (lambda lib, z: lib.sort(z), "Sort does not support complex dtypes on CPU"),
    (lambda lib, z: lib.argsort(z), "Sort does not support complex dtypes on CPU"),
    (lambda lib, z: lib.topk(z, 1), "topk does not support complex dtypes on CPU")])
def test_ordering_by_sort_is_refused_as_torch(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(torch, torch.ones(3, dtype=torch.complex64))
    with pytest.raises(RuntimeError, match=message):
        call(engine, engine.ones(3, dtype=engine.complex64))


@pytest.mark.parametrize("args, dtype", [((0, 1 + 1j, 5), None), ((1 - 2j, 3 + 0.5j, 7), None),
                                         ((0, 3, 4), "complex128"), ((2j, -1, 1), None)])
def test_complex_linspace_as_torch(args, dtype):
    ours = engine.linspace(*args, dtype=None if dtype is None else getattr(engine, dtype))
    ref = torch.linspace(*args, dtype=None if dtype is None else getattr(torch, dtype))
    assert ours.dtype.name == str(ref.dtype).split(".")[1]
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
