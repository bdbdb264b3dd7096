"""engine.autograd.gradcheck / gradgradcheck against torch.autograd's verdicts and messages on the same functions,
and the old ``Variable`` wrapper."""
import numpy as np
import pytest
import torch

import engine
from engine.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
import engine.autograd.variable as EV


RNG = np.random.default_rng(8)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 2))


def _inputs(lib, *arrays, dtype="float64"):
    return tuple(lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays)


def _custom(lib, backward):
    """``2 x`` with the given backward (a PyTorch-style custom Function in either library)."""
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return backward(lib, ctx.saved_tensors[0], g)
    return Double.apply


def _checkers(lib):
    return (gradcheck, gradgradcheck) if lib is engine else (torch.autograd.gradcheck,
                                                                    torch.autograd.gradgradcheck)


FUNCTIONS = {
    "matmul_sin": (lambda x, w: (x @ w).sin(), (A, B)),
    "two_outputs": (lambda x, w: ((x @ w).exp(), x.tanh().sum(0)), (A, B)),
    "broadcast": (lambda x, w: x[:, :2] * w[0] + w.sum(), (A, B)),
    "single_input": (lambda x: (x * x.sigmoid()).sum(1), (A,)),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_correct_gradients_pass_both_orders(name):
    fn, arrays = FUNCTIONS[name]
    for lib in (engine, torch):
        check, check2 = _checkers(lib)
        assert check(fn, _inputs(lib, *arrays)) is True
        assert check2(fn, _inputs(lib, *arrays)) is True


def test_wrong_backward_fails_with_torch_message():
    wrong = lambda lib, x, g: g * 3  # noqa: E731
    for lib in (engine, torch):
        check = _checkers(lib)[0]
        assert check(_custom(lib, wrong), _inputs(lib, A), raise_exception=False) is False
    with pytest.raises(GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0, "
                                                r"numerical:[\d.]+ analytical:3.0"):
        gradcheck(_custom(engine, wrong), _inputs(engine, A))


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value).__name__, str(info.value)


def _same_error(make):
    ours, theirs = _message(lambda: make(engine)), _message(lambda: make(torch))
    assert ours == theirs, (ours, theirs)


def test_backward_not_multiplied_by_grad_output():
    affine = lambda lib, x, g: g * 2 + float(bool((g == 0).all()))  # noqa: E731
    _same_error(lambda L: _checkers(L)[0](_custom(L, affine), _inputs(L, A)))


def test_nondeterministic_backward():
    noisy = lambda lib, x, g: g * (2 + lib.rand(g.shape, dtype=g.dtype) * 1e-3)  # noqa: E731
    ours, theirs = (_message(lambda: _checkers(L)[0](_custom(L, noisy), _inputs(L, A), atol=1e-2))
                    for L in (engine, torch))
    assert ours[1].split("grad_output")[0] == theirs[1].split("grad_output")[0]
    assert gradcheck(_custom(engine, noisy), _inputs(engine, A), atol=1e-2, nondet_tol=1e-2)


def test_no_differentiable_output_with_a_numerical_gradient():
    _same_error(lambda L: _checkers(L)[0](lambda x: x.detach() * 2, _inputs(L, A)))


def test_no_input_requires_grad():
    _same_error(lambda L: _checkers(L)[0](lambda x: x * 2, (L.tensor(A),)))


def test_overlapping_input():
    _same_error(lambda L: _checkers(L)[0](lambda x: x * 2, (L.tensor(A[0, :1], requires_grad=True).expand(3),)))


def test_float32_input_warns():
    with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double precision"):
        gradcheck(lambda x: x * 2, _inputs(engine, A, dtype="float32"), eps=1e-3, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("kwargs", [{"check_backward_ad": False}, {"check_batched_grad": True,
                                                                     "check_backward_ad": False,
                                                                     "check_forward_ad": True}])
def test_argument_assertions(kwargs):
    _same_error(lambda L: _checkers(L)[0](lambda x: x * 2, _inputs(L, A), **kwargs))


def test_forward_ad_check():
    assert gradcheck(lambda x: x * 2, _inputs(engine, A), check_forward_ad=True)


def _cube_without_second_derivative(lib):
    """``x ** 3`` whose backward is right but built from a detached ``x``: no second derivative in ``x``."""
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            return g * 3 * ctx.saved_tensors[0].detach() ** 2
    return Cube.apply


def test_gradgradcheck_catches_a_wrong_second_derivative():
    for lib in (engine, torch):
        check, check2 = _checkers(lib)
        cube = _cube_without_second_derivative(lib)
        assert check(cube, _inputs(lib, A)) is True
        assert check2(cube, _inputs(lib, A), raise_exception=False) is False


def test_gradgradcheck_with_given_grad_outputs():
    for lib in (engine, torch):
        check2 = _checkers(lib)[1]
        v = lib.tensor(RNG.standard_normal((3, 2)), requires_grad=True)
        assert check2(lambda x, w: (x @ w).tanh(), _inputs(lib, A, B), (v,), gen_non_contig_grad_outputs=True)


def test_on_the_cuda_backend(cuda):
    x = engine.tensor(A, requires_grad=True).to("cuda").detach().requires_grad_()
    assert gradcheck(lambda t: (t * t.exp()).sum(1), (x,))


# ---- Variable ----------------------------------------------------------------------------------------------
def test_variable_returns_a_detached_tensor():
    for lib, Variable in ((engine, EV.Variable), (torch, torch.autograd.Variable)):
        x = lib.tensor(A, requires_grad=True)
        v = Variable(x * 2)
        assert type(v) is lib.Tensor and v.grad_fn is None and not v.requires_grad
        assert Variable(x, requires_grad=True).requires_grad and v.is_leaf
        assert isinstance(x, Variable) and not isinstance(A, Variable)
        assert tuple(Variable().shape) == (0,)
    t = engine.ones(2)
    v = EV.Variable(t)
    v.add_(1)
    assert t.tolist() == [2.0, 2.0] and v._version_counter is t._version_counter


def test_variable_errors_and_volatile():
    _same_error(lambda L: (EV.Variable if L is engine else torch.autograd.Variable)([1.0]))
    with pytest.warns(UserWarning, match="volatile was removed"):
        EV.Variable(engine.ones(1), volatile=True)
