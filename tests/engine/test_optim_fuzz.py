"""Optimizers against torch.optim, from a differential fuzz: complex parameters (updated as real pairs, 0-dim ones
too), a float32 tensor lr's arithmetic, Adagrad's constructor-wide initial accumulator, half precision
arithmetic, and torch's constructor errors and warnings."""
import warnings

import numpy as np
import pytest
import torch
from op_check import assert_close, assert_same_error

import engine
import engine.optim
import engine.sparse  # noqa: F401  (engine.sparse_coo_tensor)

pytestmark = pytest.mark.slow  # over 2 s in all (torch's first optimizer step alone takes seconds)
N_STEPS = 6


def _arrays(shapes, dtype, seed):
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        a = np.asarray(rng.standard_normal(shape))
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(shape)
        out.append(a.astype(dtype))
    return out


def _tensor(lib, value):
    """An option value: ("T", x) is a tensor on ``lib``'s side, tuples are converted element by element."""
    if isinstance(value, tuple) and value[:1] == ("T",):
        return lib.tensor(value[1])
    if isinstance(value, tuple):
        return tuple(_tensor(lib, v) for v in value)
    return value


def _options(lib, kwargs):
    return {k: _tensor(lib, v) for k, v in kwargs.items()}


def _numpy(t):
    t = t.detach().cpu()
    return t.float().numpy() if str(t.dtype).endswith("bfloat16") else t.numpy()


def _assert_same(ours, theirs, opt_ours, opt_theirs, rtol, what):
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(_numpy(a), _numpy(b), rtol=rtol, what=f"{what} param {i}")
    for a, b in zip(ours, theirs):
        mine, ref = opt_ours.state[a], opt_theirs.state[b]
        assert list(mine) == list(ref), what
        for key, value in ref.items():
            if isinstance(value, torch.Tensor):
                assert str(mine[key].dtype).split(".")[1] == str(value.dtype).split(".")[1], f"{what} {key}"
                assert_close(_numpy(mine[key]), _numpy(value), rtol=rtol, what=f"{what} state {key}")


def _run(name, kwargs, shapes, dtype, rtol, seed=0, groups=None, steps=N_STEPS, device="cpu"):
    """``steps`` steps of engine's (on ``device``) and torch's ``name`` on the same parameters and gradients,
    compared each step; ``groups`` gives the second group's own options (it holds the last parameter)."""
    arrays = _arrays(shapes, dtype, seed)
    ours = [engine.tensor(a.copy(), device=device, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]

    def params(ps, lib):
        return ps if groups is None else [{"params": ps[:-1]}, {"params": ps[-1:], **_options(lib, groups)}]

    opt_ours = getattr(engine.optim, name)(params(ours, engine), **_options(engine, kwargs))
    opt_theirs = getattr(torch.optim, name)(params(theirs, torch), **_options(torch, kwargs))
    for step in range(steps):
        for i, (a, b) in enumerate(zip(ours, theirs)):
            g = _arrays([a.shape], dtype, 1000 * seed + 10 * step + i)[0]
            a.grad, b.grad = engine.tensor(g.copy(), device=device), torch.tensor(g.copy())
        opt_theirs.step()
        opt_ours.step()
        _assert_same(ours, theirs, opt_ours, opt_theirs, rtol, f"{name} step {step}")
    return opt_ours, opt_theirs


# ---- complex parameters: torch updates the real and imaginary parts as independent reals ---------------------
COMPLEX_CASES = [
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("AdamW", dict(lr=0.01, betas=(0.5, 0.6))), ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.7, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, initial_accumulator_value=0.5, lr_decay=0.1)), ("Adadelta", dict(lr=0.5, eps=1e-3)),
    ("Adamax", dict(lr=0.01, betas=(0.5, 0.8))), ("NAdam", dict(lr=0.01, momentum_decay=0.1)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.6))), ("Rprop", dict(lr=0.05, maximize=True)),
]


@pytest.mark.parametrize("name,kwargs", COMPLEX_CASES)
def test_complex_params_as_real_pairs(name, kwargs):
    _run(name, kwargs, [(3, 2), (), (4,)], np.complex128, rtol=1e-10)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_complex_params(line_search_fn):
    rng = np.random.default_rng(3)
    arrays = [(rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex128) for s in [(3,), ()]]
    target = rng.standard_normal(8)

    def side(lib):
        params = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
        t = lib.tensor(target)

        def closure():
            for p in params:
                p.grad = None
            x = lib.cat([(p.real + 2 * p.imag * p.imag).reshape(-1) for p in params]
                        + [(p.imag - p.real).reshape(-1) for p in params])
            loss = ((x - t) ** 2).sum() + (x ** 4).sum() * 0.1
            loss.backward()
            return loss
        return params, closure

    (ours, closure_ours), (theirs, closure_theirs) = side(engine), side(torch)
    opt_ours = engine.optim.LBFGS(ours, max_iter=5, line_search_fn=line_search_fn)
    opt_theirs = torch.optim.LBFGS(theirs, max_iter=5, line_search_fn=line_search_fn)
    for step in range(2):
        loss_theirs, loss_ours = opt_theirs.step(closure_theirs), opt_ours.step(closure_ours)
        assert_close(loss_ours.detach().numpy(), loss_theirs.detach().numpy(), rtol=1e-9, what=f"loss {step}")
        for a, b in zip(ours, theirs):
            assert_close(a.detach().numpy(), b.detach().numpy(), rtol=1e-9, what=f"step {step}")


@pytest.mark.parametrize("name,kwargs,dtype", [("Adam", dict(lr=0.01, amsgrad=True), np.complex64),
                                               ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5), np.complex64),
                                               ("Rprop", dict(lr=0.05), np.complex64),
                                               ("Adam", dict(lr=0.01, eps=1e-3), np.float16)])
def test_on_cuda(cuda, name, kwargs, dtype):
    _run(name, kwargs, [(64,), ()] if dtype == np.float16 else [(3, 2), ()], dtype, rtol=1e-5, steps=3,
         device="cuda")


def test_rprop_zero_dim_param_maximize():
    _run("Rprop", dict(lr=0.1, maximize=True), [(), (2,)], np.float64, rtol=1e-12)


# ---- a float32 tensor lr: torch's step-size arithmetic runs in float32 -----------------------------------------
@pytest.mark.parametrize("name,kwargs", [
    ("Adam", dict(lr=("T", 0.02), weight_decay=0.1, decoupled_weight_decay=True)),
    ("NAdam", dict(lr=("T", 0.01))),
    ("Adagrad", dict(lr=("T", 0.1), lr_decay=0.1)),
    ("Adagrad", dict(lr=("T", 0.1), lr_decay=0.1, fused=True)), ("Adafactor", dict(lr=("T", 0.02))),
    ("Adam", dict(lr=("T", 0.02), fused=True)),
])
def test_tensor_lr_float64_params(name, kwargs):
    _run(name, kwargs, [(3, 2), (5,)], np.float64, rtol=1e-13)


def test_adagrad_group_initial_accumulator_is_the_constructors():
    _run("Adagrad", dict(lr=0.1, initial_accumulator_value=0.1), [(3,), (2, 2)], np.float32, rtol=1e-6,
         groups=dict(initial_accumulator_value=0.5, lr=0.2))


# ---- half precision: each torch op computes in float32 and rounds once (in its vectorized loop, which covers
# sizes that are multiples of 64 elements; a shorter tail runs in half arithmetic) ------------------------------
@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() == "DEFAULT", reason="torch's CPU kernels unvectorized")
@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)), ("SGD", dict(lr=0.1, momentum=0.5, nesterov=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, eps=1e-3)), ("AdamW", dict(lr=0.01, amsgrad=True, eps=1e-3)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, eps=1e-3)), ("RMSprop", dict(lr=0.01, weight_decay=0.1, eps=1e-3)),
    ("Adagrad", dict(lr=0.1, eps=1e-3)), ("Adadelta", dict(lr=0.5, eps=1e-3)), ("Adamax", dict(lr=0.01, eps=1e-3)),
    ("NAdam", dict(lr=0.01, eps=1e-3, weight_decay=0.1, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, eps=1e-3, betas=(0.5, 0.6))), ("ASGD", dict(lr=0.05, t0=2)),
])
def test_float16_single_rounding(name, kwargs):
    _run(name, kwargs, [(64,), (2, 32)], np.float16, rtol=5e-5, steps=4)  # NumPy's own half arithmetic: 1e-4


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.1)), ("SGD", dict(lr=0.1)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)), ("AdamW", dict(lr=0.01, amsgrad=True)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1)),
])
def test_fused_float16_in_float32(name, kwargs):
    """torch's fused kernels compute a half parameter's whole step in float32 and round once (eps=1e-8 is 0 in
    float16 but not there), at any size."""
    _run(name, dict(kwargs, fused=True), [(5,), (2, 3), ()], np.float16, rtol=1e-5, steps=4)


# ---- constructor checks ---------------------------------------------------------------------------------------
def _make(lib, name, kwargs, params=None):
    params = [lib.zeros(2, 3, requires_grad=True)] if params is None else params
    return getattr(lib.optim, name)(params, **_options(lib, kwargs))


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=("T", [0.1, 0.2]))), ("Adam", dict(lr=("T", [0.1, 0.2]))), ("RMSprop", dict(lr=("T", [0.1, 0.2]))),
    ("Adagrad", dict(lr=("T", [0.1, 0.2]))), ("LBFGS", dict(lr=("T", [0.1, 0.2]))),
    ("SparseAdam", dict(lr=("T", [0.1, 0.2]))),
    ("Adam", dict(betas=(("T", 0.9), 0.99))), ("Adam", dict(betas=(0, 0.99))),
    ("Adam", dict(lr=("T", 0.1), foreach=True)), ("AdamW", dict(lr=("T", 0.1), foreach=True)),
    ("Adam", dict(betas=(("T", 0.9), ("T", 0.99)), foreach=True)),
    ("Adam", dict(betas=(("T", 0.9), ("T", [0.9, 0.99])))),
])
def test_constructor_errors(name, kwargs):
    assert_same_error(lambda: _make(engine, name, kwargs), lambda: _make(torch, name, kwargs))


def test_tensor_betas_kept_as_0_dim_tensors():
    opt = _make(engine, "Adam", dict(betas=(("T", [0.9]), ("T", 0.99))))
    assert [tuple(b.shape) for b in opt.defaults["betas"]] == [(), ()]


def test_non_tensor_param_type_name():
    assert_same_error(lambda: engine.optim.SGD([1.0]), lambda: torch.optim.SGD([1.0]))


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("kind", ["complex", "sparse"])
def test_sparse_adam_param_kinds(kind):
    def params(lib):
        if kind == "complex":
            return [lib.zeros(2, requires_grad=True), lib.zeros(2, dtype=lib.complex64, requires_grad=True)]
        return [lib.sparse_coo_tensor(lib.tensor([[0]]), lib.tensor([1.0]), (3,)).requires_grad_()]
    assert_same_error(lambda: engine.optim.SparseAdam(params(engine)), lambda: torch.optim.SparseAdam(params(torch)))


def test_duplicate_params_in_a_group_warn():
    p = engine.zeros(2, requires_grad=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        opt = engine.optim.SGD([p, p], lr=0.1)
    p.grad = engine.ones(2)
    opt.step()  # torch steps a repeated parameter once per appearance
    np.testing.assert_allclose(p.detach().numpy(), [-0.2, -0.2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="more than one parameter group"):
            engine.optim.SGD([{"params": [p]}, {"params": [p]}])


# ---- state dict hooks and loading ----------------------------------------------------------------------------
def _hook_log(lib):
    """What the state dict hooks see, in order, around a step, a save and a load."""
    log = []
    p = lib.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), requires_grad=True)
    opt = lib.optim.Adam([p], lr=0.1)
    first = opt.register_state_dict_pre_hook(lambda o: log.append("pre1"))
    opt.register_state_dict_pre_hook(lambda o: log.append("pre0"), prepend=True)
    opt.register_state_dict_post_hook(lambda o, sd: (log.append("post"), {**sd, "extra": 1})[1])
    opt.register_load_state_dict_pre_hook(lambda o, sd: log.append(("load_pre", sorted(sd))))
    opt.register_load_state_dict_post_hook(lambda o: log.append("load_post"))
    p.grad = lib.ones(2, 3)
    opt.step()
    log.append(sorted(opt.state_dict()))
    first.remove()
    opt.load_state_dict(opt.state_dict())
    return log


def test_state_dict_hooks():
    assert _hook_log(engine) == _hook_log(torch)


@pytest.mark.parametrize("flag", ["fused", "capturable"])
def test_load_makes_a_fused_or_capturable_step_float32(flag):
    def loaded_step(lib):
        p = lib.ones(3, requires_grad=True)
        source = lib.optim.Adam([p], **{flag: True})
        state_dict = source.state_dict()
        state_dict["state"] = {0: {"step": lib.tensor(1.0, dtype=lib.float64), "exp_avg": lib.zeros(3),
                                   "exp_avg_sq": lib.zeros(3)}}
        target = lib.optim.Adam([p])  # the saved group's flag decides
        target.load_state_dict(state_dict)
        return str(target.state[p]["step"].dtype).split(".")[1]
    assert loaded_step(engine) == loaded_step(torch) == "float32"
