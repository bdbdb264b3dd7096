"""engine.func against torch.func on what a differential fuzz of the transforms (vmap, grad, vjp, jvp, jacrev,
jacfwd, hessian, functional_call over random configurations) found different: in-place writes to unmapped inputs
inside vmap, vmap of a module whose batch norms track running statistics, torch's checks of cotangents, tangents,
primals and aux outputs, non-float outputs under forward mode, Jacobians of non-contiguous tensors.

References: torch.func.vmap, vjp, jvp and jacfwd where cheap; torch.autograd.functional for Jacobians and Hessians
and torch's literal messages for grad and jacrev (torch.func.grad and jacrev import torch._dynamo on their first
call, 5 s)."""
import numpy as np
import pytest
import torch
import torch.func as TF
from op_check import assert_nested_close

import engine
import engine.func as EF

pytestmark = pytest.mark.slow  # torch.func.jvp's first call costs most of a second

RNG = np.random.default_rng(25)
X = RNG.standard_normal((5, 4))
Y = RNG.standard_normal(4)


_close = assert_nested_close


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value).replace("torch.", "engine.")


def _same_error(run):
    """``run(L, F)`` raises the same error type and text (the first line) with engine as with torch."""
    ours, theirs = _error(lambda: run(engine, EF)), _error(lambda: run(torch, TF))
    assert ours[0] is theirs[0]
    assert ours[1].replace("\n", " ").startswith(theirs[1].split("\n")[0])


# ---- vmap: in-place writes to inputs it does not map ---------------------------------------------------------
# The function runs once per element here: a write that does not depend on the batch must still happen once, and
# one that does is torch's error.
ONCE = {
    "add_": lambda a, b: (b.add_(1), a * 2)[1],
    "returns_the_written": lambda a, b: b.mul_(3),
    "setitem": lambda a, b: (b.__setitem__(0, 5.0), a + b)[1],
    "view_of_it": lambda a, b: (b[1:].sub_(0.5), a)[1],
    "zero_": lambda a, b: (b.zero_(), a + b)[1],
}


@pytest.mark.parametrize("batch", [2, 5])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", sorted(ONCE))
def test_vmap_writes_an_unmapped_input_once(case, dtype, batch):
    def run(L, F):
        x, y = L.tensor(X[:batch]).to(getattr(L, dtype)), L.tensor(Y).to(getattr(L, dtype))
        return F.vmap(ONCE[case], in_dims=(0, None))(x, y), y
    _close(run(engine, EF), run(torch, TF))


def test_nested_vmap_writes_an_unmapped_input_once():
    def run(L, F):
        y = L.tensor(Y)
        inner = F.vmap(lambda a, b: (b.add_(1), a * b)[1], in_dims=(0, None))
        return F.vmap(inner, in_dims=(0, None))(L.tensor(X[:4]).reshape(2, 2, 4), y), y
    _close(run(engine, EF), run(torch, TF))


BATCHED = {
    "mul_": lambda a, b: b.mul_(a),
    "copy_": lambda a, b: b.copy_(a),
    "setitem": lambda a, b: (b.__setitem__(0, a[0]), a)[1],
    "view_add_": lambda a, b: (b[:2].add_(a[:2]), a)[1],
}


@pytest.mark.parametrize("case", sorted(BATCHED))
def test_vmap_refuses_to_write_batched_values_into_an_unmapped_input(case):
    ys = {}

    def run(L, F):
        ys[L.__name__] = y = L.tensor(Y)
        F.vmap(BATCHED[case], in_dims=(0, None))(L.tensor(X), y)
    ours, theirs = _error(lambda: run(engine, EF)), _error(lambda: run(torch, TF))
    assert ours[0] is theirs[0] is RuntimeError
    assert ours[1].startswith("vmap: inplace arithmetic(self, *extra_args) is not possible")
    np.testing.assert_array_equal(ys["engine"].numpy(), Y)  # left as it was


def test_vmap_still_writes_mapped_inputs_in_place():
    def run(L, F):
        x = L.tensor(X).clone()
        return F.vmap(lambda a, b: a.mul_(b), in_dims=(0, None))(x, L.tensor(Y)), x
    _close(run(engine, EF), run(torch, TF))


@pytest.mark.parametrize("in_dims, shape", [(True, (2, 3)), ((False,), (2, 3)), ((True,), ())])
def test_vmap_refuses_bool_in_dims(in_dims, shape):
    _same_error(lambda L, F: F.vmap(lambda x: x, in_dims=in_dims)(L.ones(shape)))


# ---- vmap of a module with batch norms ---------------------------------------------------------------------
def _bn_net(L):
    net = L.nn.Sequential(L.nn.Linear(4, 3), L.nn.BatchNorm1d(3), L.nn.Tanh()).double()
    with L.no_grad():
        for p, value in zip(net.parameters(), PARAMS):
            p.copy_(L.tensor(value))
    return net


PARAMS = [RNG.standard_normal((3, 4)), RNG.standard_normal(3), RNG.standard_normal(3), RNG.standard_normal(3)]


def test_vmap_of_a_module_whose_batch_norm_tracks_running_stats():
    _same_error(lambda L, F: F.vmap(_bn_net(L))(L.tensor(X[:4]).reshape(2, 2, 4)))
    _close(*(F.vmap(_bn_net(L).eval())(L.tensor(X[:4]).reshape(2, 2, 4)) for L, F in ((engine, EF), (torch, TF))))
    _close(*(F.vmap(F.replace_all_batch_norm_modules_(_bn_net(L)))(L.tensor(X[:4]).reshape(2, 2, 4))
             for L, F in ((engine, EF), (torch, TF))))


# ---- vjp: the cotangents ---------------------------------------------------------------------------------------
# torch's vjp_fn checks them with torch.autograd.grad's messages (the reference here: torch.func's vjp_fn imports
# torch._dynamo on its first call).
def _vjp_error(cotangent, dtype="float64"):
    ours = _error(lambda: EF.vjp(lambda x: x.sin(), engine.tensor(Y).to(getattr(engine, dtype)))[1](
        getattr(engine, cotangent[0])(cotangent[1], dtype=getattr(engine, cotangent[2]))))
    x = torch.tensor(Y).to(getattr(torch, dtype)).requires_grad_()
    theirs = _error(lambda: torch.autograd.grad(x.sin(), x, getattr(torch, cotangent[0])(
        cotangent[1], dtype=getattr(torch, cotangent[2]))))
    assert ours == theirs


@pytest.mark.parametrize("shape", [(4, 1), (1,), (), (2, 2)])
def test_vjp_refuses_cotangents_of_another_shape(shape):
    _vjp_error(("ones", shape, "float64"))


def test_vjp_refuses_complex_cotangents_of_a_real_output():
    _vjp_error(("ones", 4, "complex64"), dtype="float32")


# ---- jvp, jacfwd: primals, tangents, outputs that are not floating-point ---------------------------------------
JVP_ERRORS = {
    "tangent_shape": lambda L, F: F.jvp(lambda x: x.sin(), (L.tensor(X),), (L.ones(5, 1, dtype=L.float64),)),
    "tangent_scalar": lambda L, F: F.jvp(lambda x: x.sin(), (L.tensor(Y),), (L.ones((), dtype=L.float64),)),
    "tangent_int": lambda L, F: F.jvp(lambda x: x.sin(), (L.tensor(Y),), (L.ones(4, dtype=L.long),)),
    "primal_int": lambda L, F: F.jvp(lambda x: x * 2, (L.ones(4, dtype=L.long),), (L.tensor(Y),)),
    "jacfwd_primal_int": lambda L, F: F.jacfwd(lambda x: x * 2)(L.ones(4, dtype=L.long)),
    "jacfwd_output_type": lambda L, F: F.jacfwd(lambda x: 3.0)(L.tensor(Y)),
    "jacfwd_randomness": lambda L, F: F.jacfwd(lambda x: x, randomness="sometimes")(L.tensor(Y)),
}


@pytest.mark.parametrize("case", sorted(JVP_ERRORS))
def test_jvp_and_jacfwd_errors_match_torch(case):
    _same_error(JVP_ERRORS[case])


def test_jacfwd_checks_randomness_when_called():
    EF.jacfwd(lambda x: x, randomness="sometimes")  # as torch.func: no error before the call


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_forward_mode_of_outputs_that_are_not_floating_point(dtype):
    """Zero tangents of the outputs' own dtypes, as torch.func gives them (spelled out here: torch.func.jvp of
    these outputs costs seconds on its first call)."""
    def f(x):
        return x * 3, x.argmax(), x > 0
    x, t = engine.tensor(X[0]).to(getattr(engine, dtype)), torch.tensor(X[0]).to(getattr(torch, dtype))
    out, tangent = EF.jvp(f, (x,), (x.cos(),))
    _close(out, f(t))
    _close(tangent, (3 * t.cos(), torch.zeros((), dtype=torch.long), torch.zeros(4, dtype=torch.bool)))
    _close(EF.jacfwd(f)(x), (3 * torch.eye(4, dtype=t.dtype), torch.zeros(4, dtype=torch.long),
                             torch.zeros(4, 4, dtype=torch.bool)))


# ---- aux outputs, complex outputs, messages of jacrev ------------------------------------------------------------
AUX = {
    "grad": lambda F, x: F.grad(lambda a: (a.sum(), 3), has_aux=True)(x),
    "grad_and_value": lambda F, x: F.grad_and_value(lambda a: (a.sum(), [a, None]), has_aux=True)(x),
    "vjp": lambda F, x: F.vjp(lambda a: (a, {"k": 3}), x, has_aux=True),
    "jvp": lambda F, x: F.jvp(lambda a: (a, 3), (x,), (x,), has_aux=True),
    "jacrev": lambda F, x: F.jacrev(lambda a: (a, 3), has_aux=True)(x),
    "jacfwd": lambda F, x: F.jacfwd(lambda a: (a, 3), has_aux=True)(x),
}


@pytest.mark.parametrize("case", sorted(AUX))
def test_aux_must_hold_tensors_only(case):
    with pytest.raises(RuntimeError, match=r"^Expected tensors, got unsupported type <class '(int|NoneType)'>$"):
        AUX[case](EF, engine.tensor(Y))


def test_aux_message_is_torchs():
    _same_error(lambda L, F: AUX["vjp"](F, L.tensor(Y)))


def test_grad_of_a_complex_output():
    with pytest.raises(RuntimeError, match=r"^grad can be implicitly created only for real scalar outputs but got "
                                           r"engine.complex128$"):
        EF.grad(lambda x: (x * 1j).sum())(engine.tensor(Y))


@pytest.mark.parametrize("output, message", [
    (lambda x: 3.0, "expected f(*primals) to return only tensors, got unsupported type <class 'float'>"),
    (lambda x: None, "Expected f to be a function that has non-empty output (got output = [None])"),
])
def test_jacrev_messages_name_vjp_as_torch_does(output, message):
    with pytest.raises(RuntimeError) as info:
        EF.jacrev(output)(engine.tensor(Y))
    assert str(info.value) == f"vjp(f, *primals): {message}"


# ---- Jacobians of tensors that are not contiguous ----------------------------------------------------------
NON_CONTIGUOUS = {
    "t": lambda x: x.t() * x.sum(),
    "permute": lambda x: x.unsqueeze(0).permute(2, 0, 1).sin(),
    "einsum": lambda x: torch_or_engine(x).einsum("ij,kj->ji", x, x),
    "mT": lambda x: x.mT.exp(),
}


def torch_or_engine(x):
    return torch if isinstance(x, torch.Tensor) else engine


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("case", sorted(NON_CONTIGUOUS))
def test_jacobians_of_non_contiguous_outputs_and_inputs(case, transform):
    f = NON_CONTIGUOUS[case]
    for transpose in (False, True):  # a transposed input as well
        ours, theirs = engine.tensor(X[:3]), torch.tensor(X[:3])
        if transpose:
            ours, theirs = ours.t(), theirs.t()
        _close(getattr(EF, transform)(f)(ours), torch.autograd.functional.jacobian(f, theirs))


def test_hessian_of_a_mean_over_one_dimension():
    def f(x):
        return (x.mean(0) ** 3).sum()
    _close(EF.hessian(f)(engine.tensor(X[:3]).t()), torch.autograd.functional.hessian(f, torch.tensor(X[:3]).t()))


def test_on_the_cuda_backend(cuda):
    y = engine.tensor(Y).to("cuda")
    out = EF.vmap(lambda a, b: (b.add_(1), a * b)[1], in_dims=(0, None))(engine.tensor(X).to("cuda"), y)
    np.testing.assert_allclose(y.cpu().numpy(), Y + 1, rtol=1e-12)
    np.testing.assert_allclose(out.cpu().numpy(), X * (Y + 1), rtol=1e-12)
    with pytest.raises(RuntimeError, match="vmap: inplace arithmetic"):
        EF.vmap(lambda a, b: b.copy_(a), in_dims=(0, None))(engine.tensor(X).to("cuda"), y)
    jac = EF.jacfwd(lambda a: a.t().sin())(engine.tensor(X[:3]).to("cuda").t())
    np.testing.assert_allclose(jac.cpu().numpy(), torch.autograd.functional.jacobian(
        lambda a: a.t().sin(), torch.tensor(X[:3]).t()).numpy(), rtol=1e-12)
