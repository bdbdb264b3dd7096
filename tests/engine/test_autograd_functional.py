"""engine.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) against torch.autograd.functional."""
import numpy as np
import pytest
import torch
import torch.autograd.functional as TF
from op_check import assert_nested_close

import engine
import engine.autograd.functional as EF


RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 5))
B = RNG.standard_normal((5, 2))
S = RNG.standard_normal((3, 5))  # same shape as A: a second argument or a v


def _pair(lib, *arrays, grad=False):
    return tuple(lib.tensor(a, requires_grad=grad) for a in arrays)


def _close(ours, theirs, rtol=1e-10):
    """Nested tuples of float64 tensors equal in structure, shape, dtype and values."""
    assert_nested_close(ours, theirs, rtol)


def two_in_two_out(lib):
    return lambda x, w: ((x @ w).tanh(), (x * x.exp()).sum(0))


def scalar_of_two(lib):
    return lambda x, y: (x.sin() * y * y).sum() + (x * y).exp().mean()


def test_vjp_tuple_inputs_and_outputs():
    v = (RNG.standard_normal((3, 2)), RNG.standard_normal(5))
    ours = EF.vjp(two_in_two_out(engine), _pair(engine, A, B), _pair(engine, *v))
    theirs = TF.vjp(two_in_two_out(torch), _pair(torch, A, B), _pair(torch, *v))
    _close(ours, theirs)
    assert not ours[0][0].requires_grad and not ours[1][0].requires_grad


def test_vjp_single_tensor_and_default_v_for_a_scalar():
    ours = EF.vjp(lambda x: (x ** 3).sum(), engine.tensor(A))
    theirs = TF.vjp(lambda x: (x ** 3).sum(), torch.tensor(A))
    _close(ours, theirs)
    assert isinstance(ours[1], engine.Tensor)


def test_vjp_unused_input_gives_zeros():
    ours = EF.vjp(lambda x, y: x.sum(), _pair(engine, A, S))[1]
    theirs = TF.vjp(lambda x, y: x.sum(), _pair(torch, A, S))[1]
    _close(ours, theirs)


def test_jacobian_of_several_inputs_and_outputs():
    _close(EF.jacobian(two_in_two_out(engine), _pair(engine, A, B)),
           TF.jacobian(two_in_two_out(torch), _pair(torch, A, B)))


def test_jacobian_single_input_single_output_and_vectorize():
    f = lambda lib: (lambda x: x.sin().cumsum(1))  # noqa: E731
    ours = EF.jacobian(f(engine), engine.tensor(A), vectorize=True)
    theirs = TF.jacobian(f(torch), torch.tensor(A), vectorize=True)
    _close(ours, theirs)
    assert tuple(ours.shape) == (3, 5, 3, 5)


def test_jacobian_forward_mode_strategy():
    ours = EF.jacobian(two_in_two_out(engine), _pair(engine, A, B), vectorize=True, strategy="forward-mode")
    theirs = TF.jacobian(two_in_two_out(torch), _pair(torch, A, B), vectorize=True, strategy="forward-mode")
    _close(ours, theirs)


def test_jacobian_float32_batch_and_odd_sizes():
    x = RNG.standard_normal((2, 3, 7)).astype(np.float32)
    ours = EF.jacobian(lambda t: (t * t).sum(-1), engine.tensor(x))
    theirs = TF.jacobian(lambda t: (t * t).sum(-1), torch.tensor(x))
    assert ours.dtype == engine.float32
    _close(ours, theirs, rtol=1e-6)


def test_jacobian_create_graph_is_differentiable():
    def run(lib, F):
        x = lib.tensor(A, requires_grad=True)
        jac = F.jacobian(lambda t: (t ** 3).sum(1), x, create_graph=True)
        jac.sum().backward()
        return jac, x.grad
    _close(run(engine, EF), run(torch, TF))


def test_jvp_by_the_double_vjp_trick():
    v = _pair(engine, S, RNG.standard_normal((5, 2)))
    ours = EF.jvp(two_in_two_out(engine), _pair(engine, A, B), v)
    theirs = TF.jvp(two_in_two_out(torch), _pair(torch, A, B), tuple(torch.tensor(t.numpy()) for t in v))
    _close(ours, theirs)


def test_hessian_of_two_inputs():
    _close(EF.hessian(scalar_of_two(engine), _pair(engine, A, S)),
           TF.hessian(scalar_of_two(torch), _pair(torch, A, S)))


def test_hessian_single_input():
    f = lambda lib: (lambda x: (x.exp() * x).sum())  # noqa: E731
    ours = EF.hessian(f(engine), engine.tensor(A[0]))
    _close(ours, TF.hessian(f(torch), torch.tensor(A[0])))


@pytest.mark.parametrize("name", ["vhp", "hvp"])
def test_hessian_vector_products(name):
    v = (RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5)))
    ours = getattr(EF, name)(scalar_of_two(engine), _pair(engine, A, S), _pair(engine, *v))
    theirs = getattr(TF, name)(scalar_of_two(torch), _pair(torch, A, S), _pair(torch, *v))
    _close(ours, theirs)


def test_vhp_create_graph_keeps_inputs_connected():
    def run(lib, F):
        x = lib.tensor(A, requires_grad=True)
        _, prod = F.vhp(lambda t: (t ** 4).sum(), x, lib.tensor(S), create_graph=True)
        prod.sum().backward()
        return prod, x.grad
    _close(run(engine, EF), run(torch, TF))


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


ERRORS = {
    "inputs_type": lambda F, L: F.vjp(lambda x: x, [L.ones(2)], L.ones(2)),
    "tuple_entry_type": lambda F, L: F.jacobian(lambda x, y: x, (L.ones(2), 3)),
    "v_missing": lambda F, L: F.vjp(lambda x: x * 2, L.ones(2)),
    "v_length": lambda F, L: F.vjp(lambda x, y: (x, y), (L.ones(2), L.ones(2)), (L.ones(2),)),
    "v_single": lambda F, L: F.vjp(lambda x: x, L.ones(2), (L.ones(2), L.ones(2))),
    "v_size": lambda F, L: F.jvp(lambda x: x, L.ones(2), L.ones(3)),
    "v_entry_size": lambda F, L: F.jvp(lambda x, y: x, (L.ones(2), L.ones(2)), (L.ones(2), L.ones(3))),
    "strict_output": lambda F, L: F.vjp(lambda x: L.ones(2), L.ones(2), L.ones(2), strict=True),
    "strict_unused": lambda F, L: F.vjp(lambda x, y: x * 2, (L.ones(2), L.ones(2)), L.ones(2), strict=True),
    "strict_jacobian": lambda F, L: F.jacobian(lambda x, y: x * 2, (L.ones(2), L.ones(2)), strict=True),
    "strict_linear_hessian": lambda F, L: F.hessian(lambda x: (x * 2).sum(), L.ones(2), strict=True),
    "strategy": lambda F, L: F.jacobian(lambda x: x, L.ones(2), strategy="sideways"),
    "forward_create_graph": lambda F, L: F.jacobian(lambda x: x, L.ones(2), create_graph=True,
                                                    strategy="forward-mode"),
    "forward_no_vectorize": lambda F, L: F.jacobian(lambda x: x, L.ones(2), strategy="forward-mode"),
    "vectorize_strict": lambda F, L: F.jacobian(lambda x: x * 2, L.ones(2), strict=True, vectorize=True),
    "hessian_tuple": lambda F, L: F.hessian(lambda x: (x.sum(), x.sum()), L.ones(2)),
    "hessian_numel": lambda F, L: F.hessian(lambda x: x * 2, L.ones(2)),
    "vhp_numel": lambda F, L: F.vhp(lambda x: x * 2, L.ones(2), L.ones(2)),
    "hvp_tuple": lambda F, L: F.hvp(lambda x: (x.sum(),), L.ones(2), L.ones(2)),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    ours = _message(lambda: ERRORS[case](EF, engine))
    theirs = _message(lambda: ERRORS[case](TF, torch))
    # ours in engine's names, and without the typo of torch's "Hessian isonly"
    expected = theirs[1].replace("torch.", "engine.").replace("isonly", "is only")
    assert ours[1] == expected
    assert issubclass(ours[0], (RuntimeError, TypeError, ValueError, NotImplementedError))


def test_on_the_cuda_backend(cuda):
    x = engine.tensor(A).to("cuda")
    jac = EF.jacobian(lambda t: (t * t).sum(1), x)
    assert jac.device.type == "cuda"
    np.testing.assert_allclose(jac.cpu().numpy(), TF.jacobian(lambda t: (t * t).sum(1), torch.tensor(A)).numpy())
    out, prod = EF.vjp(lambda t: t.exp(), x, engine.tensor(S).to("cuda"))
    np.testing.assert_allclose(prod.cpu().numpy(), np.exp(A) * S, rtol=1e-12)


def test_jacobian_of_a_transposed_output():
    """The basis cotangents were made with zeros_like, which kept the output's strides, so .view(-1) failed."""
    x = np.random.default_rng(3).standard_normal((2, 3))
    ours = EF.jacobian(lambda a: a.t() * 2, engine.tensor(x))
    theirs = TF.jacobian(lambda a: a.t() * 2, torch.tensor(x))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
