"""engine.func (grad, vjp, jvp, linearize, jacrev, jacfwd, hessian, vmap, functional_call) and nn.utils.stateless
against torch on the same functions and inputs: torch.func where it is cheap (vmap, functional_call, the errors),
torch.autograd for the derivatives themselves (see the note above the gradient tests)."""
import numpy as np
import pytest
import torch
import torch.func as TF

import engine
import engine.func as EF
import engine.nn.utils.stateless as stateless

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 5))
W = RNG.standard_normal((5, 3))
V = RNG.standard_normal(5)


def _t(lib, a, grad=False):
    return lib.tensor(a, requires_grad=grad)


def _close(ours, theirs, rtol=1e-10):
    """Nested containers of tensors equal in structure, shape, requires_grad and values."""
    if isinstance(theirs, (tuple, list, dict)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        pairs = zip(ours.values(), theirs.values()) if isinstance(theirs, dict) else zip(ours, theirs)
        for o, t in pairs:
            _close(o, t, rtol)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.requires_grad == theirs.requires_grad
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)


def both(fn):
    return fn(engine, EF), fn(torch, TF)


def loss(x, w):
    return ((x @ w).tanh() ** 2).sum() + (x.sin() * 0.5).mean()


# ---- grad, grad_and_value, vjp, jvp --------------------------------------------------------------
# References for the reverse-mode transforms come from torch.autograd: torch.func.grad, vjp and jacrev import
# torch._dynamo on their first call (5 s), which the tests below cannot afford.
def _leaves(*arrays):
    return [torch.tensor(a, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), -1])
def test_grad_argnums(argnums):
    ours = EF.grad(loss, argnums)(_t(engine, X), _t(engine, W))
    x, w = _leaves(X, W)
    grads = torch.autograd.grad(loss(x, w), [x, w])
    theirs = grads[argnums] if isinstance(argnums, int) else tuple(grads[i] for i in argnums)
    _close(ours, theirs)


def test_grad_and_value_with_aux_and_kwargs():
    def f(x, w, scale=1.0):
        y = (x @ w) * scale
        return y.exp().sum(), {"mean": y.mean(), "raw": y}
    ours = EF.grad_and_value(f, has_aux=True)(_t(engine, X), _t(engine, W), scale=0.3)
    x, w = _leaves(X, W)
    value, aux = f(x, w, scale=0.3)
    theirs = (torch.autograd.grad(value, x)[0], (value.detach(), {k: v.detach() for k, v in aux.items()}))
    _close(ours, theirs)
    ours = EF.grad(f, argnums=1, has_aux=True)(_t(engine, X), _t(engine, W), scale=0.3)
    _close(ours, (torch.autograd.grad(f(x, w, 0.3)[0], w)[0], theirs[1][1]))


def test_grad_of_grad():
    ours = EF.grad(lambda x: EF.grad(lambda y: (y ** 4).sum())(x).sum())(_t(engine, V))
    x, = _leaves(V)
    g, = torch.autograd.grad((x ** 4).sum(), x, create_graph=True)
    _close(ours, torch.autograd.grad(g.sum(), x)[0])


def test_grad_closing_over_a_tensor_that_requires_grad():
    w = _t(engine, W, grad=True)
    ours = EF.grad(lambda x: (x @ w).sin().sum())(_t(engine, X))   # depends on w: keeps a graph
    ours.sum().backward()
    tw = torch.tensor(W, requires_grad=True)
    x, = _leaves(X)
    theirs, = torch.autograd.grad((x @ tw).sin().sum(), x, create_graph=True)
    theirs.sum().backward()
    _close((ours, w.grad), (theirs, tw.grad))


def test_vjp_with_pytree_output_and_aux():
    def f(x, w):
        return {"a": (x @ w).cos(), "b": x.exp()}, x.sum()
    out, fn, aux = EF.vjp(f, _t(engine, X), _t(engine, W), has_aux=True)
    ours = (out, fn({"a": _t(engine, np.ones((4, 3))), "b": _t(engine, X)}), aux)
    x, w = _leaves(X, W)
    t_out, t_aux = f(x, w)
    grads = torch.autograd.grad([t_out["a"], t_out["b"]], [x, w], [torch.ones(4, 3, dtype=torch.float64),
                                                                    torch.tensor(X)])
    _close(ours, ({k: v.detach() for k, v in t_out.items()}, grads, t_aux.detach()))


def test_vjp_result_requires_grad_only_through_outer_tensors():
    w = _t(engine, W, grad=True)
    out, fn = EF.vjp(lambda x: (x @ w).sin(), _t(engine, X))
    ours = (out, fn(_t(engine, np.ones((4, 3))))[0])
    tw = torch.tensor(W, requires_grad=True)
    x, = _leaves(X)
    t_out = (x @ tw).sin()
    theirs = (t_out, torch.autograd.grad(t_out, x, torch.ones(4, 3, dtype=torch.float64), create_graph=True)[0])
    _close(ours, theirs)


def test_jvp_by_the_double_vjp_trick():
    ours = EF.jvp(loss, (_t(engine, X), _t(engine, W)), (_t(engine, X * 0.5), _t(engine, W + 1)))
    theirs = torch.autograd.functional.jvp(loss, (torch.tensor(X), torch.tensor(W)),
                                           (torch.tensor(X * 0.5), torch.tensor(W + 1)))
    _close(ours, theirs)
    ours = EF.jvp(lambda x: (x.sin(), x * 2), (_t(engine, V),), (_t(engine, V * V),))
    theirs = torch.autograd.functional.jvp(lambda x: (x.sin(), x * 2), torch.tensor(V), torch.tensor(V * V))
    _close(ours, theirs)


def test_linearize_reuses_one_graph():
    f = lambda x, w: ((x @ w).tanh(), x.sin().sum())  # noqa: E731
    out, jvp_fn = EF.linearize(f, _t(engine, X), _t(engine, W))
    for scale in (1.0, -0.5):
        theirs = torch.autograd.functional.jvp(f, (torch.tensor(X), torch.tensor(W)),
                                               (torch.tensor(X * scale), torch.tensor(W)))
        _close((out, jvp_fn(_t(engine, X * scale), _t(engine, W))), theirs)
    with pytest.raises(RuntimeError, match=r"^tangent:1 with shape engine.Size\(\[3\]\) in flattened pytree doesn't "
                                           r"match the shape engine.Size\(\[5, 3\]\) of the corresponding primal.$"):
        jvp_fn(_t(engine, X), _t(engine, V[:3]))


def test_identity_transforms_and_batch_norm_replacement():
    x = _t(engine, X)
    assert EF.debug_unwrap(x) is x
    assert EF.functionalize(lambda a: a.add_(1))(x) is x and np.allclose(x.numpy(), X + 1)
    for L, F in ((engine, EF), (torch, TF)):
        net = L.nn.Sequential(L.nn.Linear(5, 3), L.nn.BatchNorm1d(3))
        assert F.replace_all_batch_norm_modules_(net) is net
        bn = net[1]
        assert (bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.track_running_stats) == (None,) * 3 + (
            False,)


# ---- jacobians and hessian -------------------------------------------------------------------------
def _jacobian(f, *arrays):
    return torch.autograd.functional.jacobian(f, tuple(torch.tensor(a) for a in arrays) if len(arrays) > 1
                                              else torch.tensor(arrays[0]))


def test_jacrev_and_jacfwd_match_torch():
    f = lambda x, w: ((x @ w).tanh(), x.sum(1))  # noqa: E731
    g = lambda x: x.exp() * x.sum()  # noqa: E731
    for transform in (EF.jacrev, EF.jacfwd):
        _close(transform(f, argnums=(0, 1))(_t(engine, X), _t(engine, W)), _jacobian(f, X, W))
        _close(transform(g)(_t(engine, V)), _jacobian(g, V))


def test_jacrev_and_jacfwd_has_aux_and_float32_batch():
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    for transform in (EF.jacrev, EF.jacfwd):
        ours = transform(lambda t: ((t * t).sum(-1), t.max()), has_aux=True)(_t(engine, x))
        assert ours[0].dtype == engine.float32
        _close(ours, (_jacobian(lambda t: (t * t).sum(-1), x), torch.tensor(x).max()), rtol=1e-6)


def test_hessian_of_two_arguments():
    _close(EF.hessian(loss, argnums=(0, 1))(_t(engine, X[:2]), _t(engine, W)),
           torch.autograd.functional.hessian(loss, (torch.tensor(X[:2]), torch.tensor(W))))
    f = lambda v: (v.exp() * v).sum()  # noqa: E731
    _close(EF.hessian(f)(_t(engine, V)), torch.autograd.functional.hessian(f, torch.tensor(V)))


def test_vmap_of_jacrev_and_jacrev_of_vmap():
    g = lambda v: v.sin() * v.sum()  # noqa: E731
    _close(EF.vmap(EF.jacrev(g))(_t(engine, X)), torch.stack([_jacobian(g, row) for row in X]))
    _close(EF.jacrev(EF.vmap(g))(_t(engine, X)), torch.autograd.functional.jacobian(TF.vmap(g), torch.tensor(X)))


# ---- vmap ------------------------------------------------------------------------------------------------
def test_vmap_in_dims_out_dims_and_nested():
    _close(*both(lambda L, F: F.vmap(lambda a, b: a @ b, in_dims=(0, None))(_t(L, X), _t(L, W))))
    _close(*both(lambda L, F: F.vmap(lambda a, b: (a * b, a.sum()), in_dims=(1, 0), out_dims=(1, 0))(
        _t(L, X), _t(L, V))))
    _close(*both(lambda L, F: F.vmap(F.vmap(lambda a: a.sin() * a.max()))(_t(L, X))))
    _close(*both(lambda L, F: F.vmap(lambda d: d["x"] * d["s"], in_dims=({"x": -1, "s": None},))(
        {"x": _t(L, X), "s": _t(L, V[:4])})))
    _close(*both(lambda L, F: F.vmap(lambda a: a.sum(0), chunk_size=3)(_t(L, X))))


def test_vmap_of_an_empty_batch():
    _close(*both(lambda L, F: F.vmap(lambda a: (a * 2).sum(), out_dims=0)(_t(L, X[:0]))))


def test_vmap_is_differentiable():
    def run(L, F):
        x = _t(L, X, grad=True)
        y = F.vmap(lambda a: (a.exp() * a[0]).sum())(x)
        y.sum().backward()
        return y, x.grad
    _close(*both(run))


def test_per_sample_gradients_with_functional_call():
    def model(L):
        net = L.nn.Sequential(L.nn.Linear(5, 4), L.nn.Tanh(), L.nn.Linear(4, 2)).double()
        net.load_state_dict({k: L.tensor(v) for k, v in PARAMS.items()})
        return net

    net = model(engine)
    params = {k: v.detach() for k, v in net.named_parameters()}

    def sample_loss(p, x, y):
        return ((EF.functional_call(net, p, (x.unsqueeze(0),)) - y) ** 2).sum()
    ours = EF.vmap(EF.grad(sample_loss), in_dims=(None, 0, 0))(params, _t(engine, X), _t(engine, X[:, :2]))
    t_net = model(torch)
    rows = []
    for x, y in zip(torch.tensor(X), torch.tensor(X[:, :2])):
        p = {k: v.detach().requires_grad_() for k, v in t_net.named_parameters()}
        out = TF.functional_call(t_net, p, (x.unsqueeze(0),))
        rows.append(torch.autograd.grad(((out - y) ** 2).sum(), list(p.values())))
    _close(ours, {k: torch.stack(g) for k, g in zip(PARAMS, zip(*rows))})


PARAMS = {"0.weight": RNG.standard_normal((4, 5)), "0.bias": RNG.standard_normal(4),
          "2.weight": RNG.standard_normal((2, 4)), "2.bias": RNG.standard_normal(2)}


def test_vmap_randomness():
    x = engine.zeros(3, 4)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        EF.vmap(lambda a: a + engine.rand(4))(x)
    same = EF.vmap(lambda a: a + engine.rand(4), randomness="same")(x)
    assert bool((same == same[0]).all())
    different = EF.vmap(lambda a: a + engine.rand(4), randomness="different")(x)
    assert not bool((different == different[0]).all())


def _message(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


def _f(a, b=None):
    return a


ERRORS = {
    "randomness": lambda L, F: F.vmap(_f, randomness="sometimes"),
    "chunk_size": lambda L, F: F.vmap(_f, chunk_size=0),
    "in_dims_type": lambda L, F: F.vmap(_f, in_dims=[0])(L.ones(2)),
    "no_inputs": lambda L, F: F.vmap(_f)(),
    "in_dims_structure": lambda L, F: F.vmap(_f, in_dims=(0, 0, 0))(L.ones(2), L.ones(2)),
    "in_dim_value": lambda L, F: F.vmap(_f, in_dims=(0.5,))(L.ones(2)),
    "in_dim_non_tensor": lambda L, F: F.vmap(_f, in_dims=(0, 0))(L.ones(2), 3),
    "in_dim_range": lambda L, F: F.vmap(_f, in_dims=2)(L.ones(2, 3)),
    "nothing_mapped": lambda L, F: F.vmap(_f, in_dims=None)(L.ones(2)),
    "batch_sizes": lambda L, F: F.vmap(_f, in_dims=(0, 0))(L.ones(2), L.ones(3)),
    "out_dims_type": lambda L, F: F.vmap(_f, out_dims=0.5)(L.ones(2)),
    "out_dims_structure": lambda L, F: F.vmap(_f, out_dims=(0, 0))(L.ones(2)),
    "non_tensor_output": lambda L, F: F.vmap(lambda a: 3.0)(L.ones(2)),
    "batched_out_dim_none": lambda L, F: F.vmap(lambda a: a, out_dims=None)(L.arange(2.0)),
    "grad_not_scalar": lambda L, F: F.grad(lambda a: a * 2)(L.ones(2)),
    "grad_not_tensor": lambda L, F: F.grad(lambda a: 2.0)(L.ones(2)),
    "grad_aux": lambda L, F: F.grad(lambda a: a.sum(), has_aux=True)(L.ones(2)),
    "argnum_range": lambda L, F: F.grad(lambda a: a.sum(), argnums=2)(L.ones(2)),
    "argnums_type": lambda L, F: F.grad(lambda a: a.sum(), argnums=[0])(L.ones(2)),
    "argnums_empty": lambda L, F: F.grad(lambda a: a.sum(), argnums=())(L.ones(2)),
    "argnums_unique": lambda L, F: F.grad(lambda a: a.sum(), argnums=(0, 0))(L.ones(2)),
    "argnum_type": lambda L, F: F.grad(lambda a: a.sum(), argnums=(0.0,))(L.ones(2)),
    "non_tensor_arg": lambda L, F: F.grad(lambda a: a.sum())(3.0),
    "vjp_output": lambda L, F: F.vjp(lambda a: None, L.ones(2)),
    "vjp_output_type": lambda L, F: F.vjp(lambda a: (a, 2), L.ones(2)),
    "vjp_int_output": lambda L, F: F.vjp(lambda a: a.long(), L.ones(2)),
    "vjp_cotangents": lambda L, F: F.vjp(lambda a: a * 2, L.ones(2))[1]((L.ones(2),)),
    "jvp_primals": lambda L, F: F.jvp(lambda a: a, L.ones(2), (L.ones(2),)),
    "jvp_structure": lambda L, F: F.jvp(lambda a: a, (L.ones(2),), (L.ones(2), L.ones(2))),
    "jvp_strict": lambda L, F: F.jvp(lambda a: L.ones(2), (L.ones(2),), (L.ones(2),), strict=True),
    "jacrev_chunk": lambda L, F: F.jacrev(_f, chunk_size=0),
    "functionalize_remove": lambda L, F: F.functionalize(_f, remove="everything"),
    "functional_call_type": lambda L, F: F.functional_call(L.nn.Linear(2, 2), 3, (L.ones(2),)),
    "functional_call_entries": lambda L, F: F.functional_call(L.nn.Linear(2, 2), ({}, 3), (L.ones(2),)),
    "functional_call_repeated": lambda L, F: F.functional_call(
        L.nn.Linear(2, 2), ({"bias": L.ones(2)}, {"bias": L.ones(2)}), (L.ones(2),)),
    "tied_values": lambda L, F: F.functional_call(_tied(L), {"a.weight": L.ones(2, 2), "b.weight": L.zeros(2, 2)},
                                                 (L.ones(2),)),
}


def _tied(L):
    m = L.nn.Sequential()
    m.add_module("a", L.nn.Linear(2, 2, bias=False))
    m.add_module("b", L.nn.Linear(2, 2, bias=False))
    m.b.weight = m.a.weight
    m.double()
    with L.no_grad():
        m.a.weight.copy_(L.tensor(W[2:4, 1:3]))
    return m


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    ours = _message(lambda: ERRORS[case](engine, EF))
    theirs = _message(lambda: ERRORS[case](torch, TF))
    # the same text up to the structures (other notations) or the list of options (torch's spans lines)
    def head(text):
        return text.split(" structure ")[0].split(" Valid options")[0]
    assert head(ours[1]) == head(theirs[1].replace("torch.", "engine."))
    assert ours[0] is theirs[0]


# ---- functional_call and stateless -------------------------------------------------------------------
class Counter:
    """A module whose forward replaces a buffer (torch writes the new value back into the caller's dict)."""

    @staticmethod
    def make(L):
        class M(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(3, 2)
                self.register_buffer("count", L.zeros(()))

            def forward(self, x, shift=0.0):
                self.count = self.count + 1
                return self.lin(x) + shift
        return M()


def test_functional_call_swaps_restores_and_writes_back():
    def run(L, F):
        m = Counter.make(L).double()
        before = {k: v.clone() for k, v in m.state_dict().items()}
        values = {"lin.weight": _t(L, W[:2, :3]), "lin.bias": _t(L, V[:2]), "count": L.tensor(5.0)}
        out = F.functional_call(m, values, _t(L, X[:, :3]), {"shift": 1.5})
        assert all(bool((m.state_dict()[k] == v).all()) for k, v in before.items())
        return out, values["count"]
    _close(*both(run))


def test_functional_call_tied_weights_strict_and_tuple_of_dicts():
    def run(L, F):
        m = _tied(L)
        x = _t(L, X[:, :2])
        tied = F.functional_call(m, {"a.weight": _t(L, W[:2, :2])}, (x,))
        untied = F.functional_call(m, {"a.weight": _t(L, W[:2, :2])}, (x,), tie_weights=False)
        split = F.functional_call(m, ({"a.weight": _t(L, W[:2, :2])}, {"b.weight": _t(L, W[2:4, :2])}), x,
                                  tie_weights=False)
        return tied, untied, split
    _close(*both(run))
    with pytest.raises(RuntimeError, match=r"Error\(s\) in reparametrizing for Linear: Unexpected key\(s\): 'x'. "
                                           r"Missing key\(s\): 'bias'."):
        EF.functional_call(engine.nn.Linear(2, 2), {"weight": engine.ones(2, 2), "x": engine.ones(1)},
                           (engine.ones(2),), strict=True)


def test_functional_call_restores_after_an_error_and_adds_missing_names():
    m = engine.nn.Linear(2, 2)
    weight = m.weight
    with pytest.raises(RuntimeError):
        EF.functional_call(m, {"weight": engine.ones(3, 3)}, (engine.ones(2),))
    assert m.weight is weight
    seen = {}
    m.register_forward_hook(lambda mod, inp, out: seen.setdefault("extra", mod.extra))
    EF.functional_call(m, {"extra": engine.ones(1)}, (engine.ones(2),))
    assert seen["extra"].tolist() == [1.0] and not hasattr(m, "extra")


def test_stateless_functional_call_is_the_deprecated_name():
    m = engine.nn.Linear(3, 2)
    with pytest.warns(FutureWarning, match="engine.func.functional_call"):
        out = stateless.functional_call(m, {"bias": engine.zeros(2)}, engine.ones(1, 3))
    np.testing.assert_allclose(out.detach().numpy(), (engine.ones(1, 3) @ m.weight.T).detach().numpy())


def test_stack_module_state_and_an_ensemble():
    def run(L, F):
        models = []
        for i in range(3):
            lin = L.nn.Linear(5, 2).double()
            lin.load_state_dict({"weight": _t(L, W.T[:2] * (i + 1)), "bias": _t(L, V[:2] - i)})
            models.append(lin)
        params, buffers = F.stack_module_state(models)
        out = F.vmap(lambda p, b, x: F.functional_call(models[0], (p, b), (x,)), in_dims=(0, 0, None))(
            params, buffers, _t(L, X))
        return params, out
    _close(*both(run))
    with pytest.raises(RuntimeError, match="Expected at least one model, got 0"):
        EF.stack_module_state([])


def test_on_the_cuda_backend(cuda):
    x = engine.tensor(X).to("cuda")
    g = EF.vmap(EF.grad(lambda a: (a ** 3).sum()))(x)
    j = EF.jacfwd(lambda a: a.sin())(x[0])
    assert g.device.type == "cuda" and j.device.type == "cuda"
    np.testing.assert_allclose(g.cpu().numpy(), 3 * X ** 2, rtol=1e-12)
    np.testing.assert_allclose(j.cpu().numpy(), np.diag(np.cos(X[0])), rtol=1e-12)
