"""Differential checks of ``engine.autocast`` and ``engine.amp.GradScaler`` against torch's, on what a fuzz of
both found different: the autocast context's defaults and argument checks, torch's older spellings of the
autocast state, and the scaler's arithmetic (unscaling low-precision and sparse gradients, the overflow check,
growth capped at float32's range, ``update(new_scale)``, pickling, iterables of outputs)."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.amp.deprecated_state as deprecated_state
import engine.nn.functional as F



class _SGD:
    """Plain SGD for either library: what GradScaler reads of an optimizer (``param_groups``, ``step``), without
    torch.optim's seconds of first-use imports."""

    def __init__(self, lib, params, lr):
        self.lib, self.lr, self.param_groups = lib, lr, [{"params": list(params)}]

    def zero_grad(self):
        for p in self.param_groups[0]["params"]:
            p.grad = None

    def step(self):
        with self.lib.no_grad():
            for p in self.param_groups[0]["params"]:
                if p.grad is not None:
                    p -= self.lr * (p.grad.to_dense() if p.grad.is_sparse else p.grad)


@pytest.fixture(autouse=True)
def _restore_autocast_state():
    yield
    for lib in (torch, engine):
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        lib.set_autocast_enabled("cpu", False)
        lib.set_autocast_cache_enabled(True)


def _linear_dtype(lib):
    return str(F.linear(engine.ones(2, 3), engine.ones(4, 3)).dtype if lib is engine
               else torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3)).dtype).split(".")[1]


def _both(program):
    """``program(lib)`` for torch and engine, with torch's and engine's names made comparable."""
    return [str(program(lib)).replace(lib.__name__ + ".", "") for lib in (torch, engine)]


def test_autocast_dtype_defaults_to_the_thread_s_setting():
    def program(lib):
        lib.set_autocast_dtype("cpu", lib.float16)
        with lib.autocast("cpu"):
            first = _linear_dtype(lib)
        lib.set_autocast_dtype("cpu", lib.bfloat16)
        with lib.autocast("cpu", dtype=lib.float16):
            with lib.autocast("cpu"):  # made inside the outer region: its float16
                nested = _linear_dtype(lib)
        return first, nested, lib.get_autocast_dtype("cpu")
    theirs, ours = _both(program)
    assert ours == theirs == "('float16', 'float16', bfloat16)"


def test_cache_enabled_defaults_to_the_setting_when_made():
    def program(lib):
        lib.set_autocast_cache_enabled(False)
        context = lib.autocast("cpu")
        lib.set_autocast_cache_enabled(True)
        with context:
            inside = lib.is_autocast_cache_enabled()
        return inside, lib.is_autocast_cache_enabled()
    theirs, ours = _both(program)
    assert ours == theirs == "(False, True)"


@pytest.mark.parametrize("enabled", [1, "yes", None])
def test_enabled_must_be_a_bool(enabled):
    for lib in (torch, engine):
        context = lib.autocast("cpu", enabled=enabled)
        with pytest.raises(TypeError, match=f"argument 'enabled' \\(position 2\\) must be bool, not "
                                            f"{type(enabled).__name__}"):
            with context:
                pass
        assert not lib.is_autocast_enabled("cpu")


def test_autocast_as_a_decorator_needs_a_callable():
    for lib in (torch, engine):
        with pytest.raises(TypeError, match="autocast\\(\\)\\(func\\) requires a callable, but got int"):
            lib.autocast("cpu")(3)


def test_the_older_spellings_of_the_state():
    names = ["is_autocast_cpu_enabled", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype"]
    for name in names:
        for lib in (torch, deprecated_state):
            with pytest.warns(DeprecationWarning, match=f"torch.{name}\\(\\) is deprecated"):
                getattr(lib, name)()
    with pytest.warns(DeprecationWarning, match="set_autocast_cpu_enabled"):
        deprecated_state.set_autocast_cpu_enabled(True)
    with pytest.warns(DeprecationWarning, match="set_autocast_cpu_dtype"):
        deprecated_state.set_autocast_cpu_dtype(engine.float16)
    assert engine.is_autocast_enabled("cpu") and _linear_dtype(engine) == "float16"
    with pytest.warns(DeprecationWarning, match="set_autocast_gpu_dtype"):
        deprecated_state.set_autocast_gpu_dtype(engine.bfloat16)
    assert engine.get_autocast_dtype("cuda") is engine.bfloat16
    engine.set_autocast_dtype("cuda", engine.float16)
    counts = [[lib.autocast_increment_nesting(), lib.autocast_increment_nesting(), lib.autocast_decrement_nesting(),
               lib.autocast_decrement_nesting()] for lib in (torch, deprecated_state)]
    assert counts[0] == counts[1] == [1, 2, 1, 0]


def test_cuda_autocast_takes_float32(cuda):
    """torch checks the dtype on the CPU only: autocast("cuda", dtype=float32) is on, and runs the
    lower-precision ops in float32."""
    x, w = engine.ones(1, 2, 5, 5, device="cuda").half(), engine.ones(3, 2, 3, 3, device="cuda").half()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with engine.autocast("cuda", dtype=engine.float32):
            assert engine.is_autocast_enabled("cuda") and F.conv2d(x, w).dtype == engine.float32


# ---- GradScaler ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, message", [({"growth_factor": 1.0}, "The growth factor must be > 1.0."),
                                             ({"backoff_factor": 1.0}, "The backoff factor must be < 1.0.")])
def test_scaler_factor_checks_are_assertions(kwargs, message):
    for lib in (torch, engine):
        with pytest.raises(AssertionError, match=message):
            lib.amp.GradScaler("cpu", **kwargs)


def test_scaler_scales_any_iterable():
    for lib in (torch, engine):
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        lazily = scaler.scale(iter([lib.ones(2), lib.ones(1)]))
        assert not isinstance(lazily, (list, tuple))
        assert [t.tolist() for t in lazily] == [[4.0, 4.0], [4.0]]
        nested = scaler.scale((lib.ones(1), [lib.ones(1, dtype=lib.bfloat16)]))
        assert isinstance(nested, tuple) and isinstance(nested[1], list) and nested[1][0].dtype == lib.bfloat16


def _one_step(lib, dtype, init_scale, grad, new_scale=None, growth_interval=2000, sparse=False):
    """One scaled SGD step on a parameter whose scaled gradient is ``grad``: (gradient after unscale_, scale
    after update, growth tracker, parameter)."""
    param = lib.zeros(len(grad), dtype=getattr(lib, dtype), requires_grad=True)
    optimizer = _SGD(lib, [param], lr=1.0)
    scaler = lib.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    scaler.scale(lib.ones(()))
    if sparse:
        param.grad = lib.sparse_coo_tensor(lib.tensor([[0, 2, 0]]), lib.tensor(grad[:3], dtype=param.dtype),
                                           (len(grad),), check_invariants=True)
    else:
        param.grad = lib.tensor(grad, dtype=param.dtype)
    scaler.unscale_(optimizer)
    unscaled = (param.grad.to_dense() if sparse else param.grad).float().tolist()
    scaler.step(optimizer)
    scaler.update(new_scale)
    return unscaled, scaler.get_scale(), scaler.state_dict()["_growth_tracker"], param.detach().float().tolist()


@pytest.mark.parametrize("dtype, init_scale, grad", [
    ("bfloat16", 3.0, [1.0, 3.0, 0.7, -5.5, 100.0]),  # 1/3 rounded to float32, not to bfloat16
    ("float32", 1000.0, [1.5, -3.0, 7e3, 0.1, 2.0]),
    ("float64", 3.0, [1.0, 1.0 / 3, 1e300, 5.0, -2.0]),
    ("float32", 0.25, [3e38, 1.0, 2.0, 0.5, 1.0]),  # 3e38 * 4 overflows after the check: not an overflow, in torch
    ("bfloat16", 0.5, [3e38, 1.0, 2.0, 0.5, 1.0]),
])
def test_unscale_multiplies_in_float32_after_checking(dtype, init_scale, grad):
    theirs, ours = (_one_step(lib, dtype, init_scale, grad) for lib in (torch, engine))
    assert ours == theirs


def test_sparse_gradients_are_unscaled_in_their_values():
    theirs, ours = (_one_step(lib, "float32", 8.0, [8.0, 16.0, 4.0, 0.0], sparse=True) for lib in (torch, engine))
    assert ours == theirs and theirs[0] == [1.5, 0.0, 2.0, 0.0]


def test_growth_stops_short_of_float32_s_overflow():
    theirs, ours = (_one_step(lib, "float32", 2.0 ** 127, [1.0], growth_interval=1) for lib in (torch, engine))
    assert ours == theirs and theirs[1:3] == (2.0 ** 127, 0)


@pytest.mark.parametrize("new_scale", [lambda lib: lib.tensor([2.0, 3.0]),
                                       lambda lib: lib.tensor(2.0, requires_grad=True)])
def test_update_checks_a_tensor_new_scale(new_scale):
    for lib in (torch, engine):
        with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
            _one_step(lib, "float32", 8.0, [1.0], new_scale=new_scale(lib))
    theirs, ours = (_one_step(lib, "float32", 8.0, [1.0], new_scale=lib.tensor(3.0)) for lib in (torch, engine))
    assert ours == theirs and theirs[1] == 3.0


def test_scaler_pickles_between_iterations_only():
    for lib in (torch, engine):
        param = lib.ones(2, requires_grad=True)
        optimizer = _SGD(lib, [param], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1)
        scaler.scale(param.sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        copy = pickle.loads(pickle.dumps(scaler))
        assert copy.get_scale() == 16.0 and copy.state_dict() == scaler.state_dict()
        assert copy.scale(lib.ones(1)).tolist() == [16.0]
        scaler.scale(param.sum()).backward()
        scaler.unscale_(optimizer)
        with pytest.raises(AssertionError, match="may only be pickled at the beginning of an iteration"):
            pickle.dumps(scaler)


def _training(lib, seed):
    """A seeded run of 8 scaled steps with two optimizers, random overflows and scale settings: the scale and
    growth tracker after each update, and the final parameters."""
    rng = np.random.default_rng(seed)
    init, growth, backoff, interval = rng.choice([3.0, 1000.0, 0.75]), rng.choice([1.5, 3.0]), rng.choice(
        [0.25, 0.9]), int(rng.choice([1, 2, 3]))
    a = lib.from_numpy(rng.standard_normal((3, 4)).astype(np.float32)).requires_grad_(True)
    b = lib.from_numpy(rng.standard_normal(4).astype(np.float32)).requires_grad_(True)
    optimizers = [_SGD(lib, [a], lr=0.1), _SGD(lib, [b], lr=0.05)]
    scaler = lib.amp.GradScaler("cpu", init_scale=float(init), growth_factor=float(growth),
                                backoff_factor=float(backoff), growth_interval=interval)
    history = []
    for _ in range(8):
        x = lib.from_numpy(rng.standard_normal((2, 3)).astype(np.float32))
        for optimizer in optimizers:
            optimizer.zero_grad()
        scaler.scale(((x @ a) * b).pow(2).mean()).backward()
        event = rng.choice(["clean", "clean", "inf", "nan", "new scale"])
        if event == "inf":
            a.grad[0, 1] = float("inf")
        elif event == "nan":
            b.grad[2] = float("nan")
        if rng.random() < 0.5:
            scaler.unscale_(optimizers[0])
        for optimizer in optimizers:
            scaler.step(optimizer)
        scaler.update(5.0 if event == "new scale" else None)
        history.append((scaler.get_scale(), scaler.state_dict()["_growth_tracker"]))
    return history, a.detach().numpy().copy(), b.detach().numpy().copy()


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_seeded_scaled_training_follows_torch(seed):
    theirs, ours = (_training(lib, seed) for lib in (torch, engine))
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5, atol=1e-6)


def test_scaler_on_cuda_unscales_bfloat16_gradients(cuda):
    param = engine.zeros(3, dtype=engine.bfloat16, device="cuda", requires_grad=True)
    optimizer = _SGD(engine, [param], lr=1.0)
    scaler = engine.amp.GradScaler("cuda", init_scale=3.0)
    scaler.scale(engine.ones((), device="cuda"))
    param.grad = engine.tensor([3.0, 0.7, 100.0], dtype=engine.bfloat16, device="cuda")
    scaler.unscale_(optimizer)
    expected = _one_step(torch, "bfloat16", 3.0, [3.0, 0.7, 100.0])[0]
    assert param.grad.float().cpu().tolist() == expected


# ---- what needs changes outside engine/amp ------------------------------------------------------------------


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


_sq = _rand(4, 4) + 4 * np.eye(4, dtype=np.float32)
_spd = _sq @ _sq.T
# name -> (function of a library and its float inputs, the inputs, the dtype they go in as)
CPU_LIST_CASES = {
    "linalg.vecdot (lower precision)": (lambda L, a, b: L.linalg.vecdot(a, b), [_rand(3, 5), _rand(3, 5, seed=1)],
                                        "float32"),
    "fractional_max_pool2d": (lambda L, a: L.nn.functional.fractional_max_pool2d(
        a, 2, output_size=2, _random_samples=L.full((2, 2, 2), 0.5, dtype=a.dtype)), [_rand(2, 2, 5, 5)], "bfloat16"),
    "reflect padding 3-D (not listed)": (lambda L, a: L.nn.functional.pad(a, (1, 1, 1, 1, 1, 1), mode="reflect"),
                                         [_rand(1, 2, 3, 3, 3)], "bfloat16"),
    "gaussian_nll_loss (not listed)": (lambda L, a, b: L.nn.functional.gaussian_nll_loss(a, b, b.abs() + 0.5),
                                       [_rand(3, 5), _rand(3, 5, seed=1)], "bfloat16"),
    "multilabel_soft_margin_loss (not listed)": (lambda L, a, b: L.nn.functional.multilabel_soft_margin_loss(
        a, (b > 0).to(a.dtype)), [_rand(3, 5), _rand(3, 5, seed=1)], "bfloat16"),
    "pinverse": (lambda L, a: L.pinverse(a), [_sq], "bfloat16"),
    "linalg.lstsq (no inner autocast)": (lambda L, a, b: L.linalg.lstsq(a, b).solution, [_sq, _rand(4, 2)],
                                         "float32"),
    "linalg.cholesky": (lambda L, a: L.linalg.cholesky(a), [_spd], "bfloat16"),
    "linalg.qr": (lambda L, a: L.linalg.qr(a)[1].abs(), [_sq], "bfloat16"),
    "linalg.svdvals": (lambda L, a: L.linalg.svdvals(a), [_sq], "bfloat16"),
    "linalg.eigvalsh": (lambda L, a: L.linalg.eigvalsh(a), [_spd], "bfloat16"),
    "cholesky_inverse": (lambda L, a: L.cholesky_inverse(a.tril()), [_sq], "bfloat16"),
    "triangular_solve": (lambda L, a, b: L.triangular_solve(b, a.triu())[0], [_sq, _rand(4, 2)], "bfloat16"),
    "fft.rfft": (lambda L, a: L.fft.rfft(a).abs(), [_rand(3, 8)], "bfloat16"),
    "polar": (lambda L, a, b: L.polar(a.abs(), b).abs(), [_rand(4, 6), _rand(4, 6, seed=1)], "bfloat16"),
    "index_copy (promotes)": (lambda L, a, b: a.index_copy(0, L.tensor([2, 0]), b.to(L.bfloat16)),
                              [_rand(4, 5), _rand(2, 5, seed=1)], "float32"),
}


@pytest.mark.filterwarnings("ignore:torch.triangular_solve is deprecated")
@pytest.mark.parametrize("name", CPU_LIST_CASES)
def test_cpu_autocast_lists_as_torch_s(name):
    fn, arrays, given = CPU_LIST_CASES[name]
    results = []
    for lib in (torch, engine):
        with lib.autocast("cpu"):
            results.append(fn(lib, *[lib.from_numpy(a.copy()).to(getattr(lib, given)) for a in arrays]))
    theirs, ours = results
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.detach().float().numpy(), theirs.detach().float().numpy(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("unpool", [F.max_unpool2d, F.max_unpool3d])
def test_cpu_autocast_unpools_in_float32(unpool):
    """On torch's CPU float32 list (checked here without torch, whose first unpooling call takes seconds)."""
    x = engine.from_numpy(_rand(1, 2, 2, 4, 4)).bfloat16()
    x = x if unpool is F.max_unpool3d else x[0]
    pool = F.max_pool3d if unpool is F.max_unpool3d else F.max_pool2d
    pooled, indices = pool(x, 2, return_indices=True)
    with engine.autocast("cpu"):
        out = unpool(pooled, indices, 2)
    assert out.dtype == engine.float32
    np.testing.assert_array_equal(out.numpy(), unpool(pooled.float(), indices, 2).numpy())


CUDA_LIST_CASES = {  # torch's documented CUDA lists: (function, input dtype, output dtype under autocast("cuda"))
    "tensordot promotes": (lambda a: engine.tensordot(a, a.t(), 1), "float32", "float32"),
    "linalg.vecdot in float16": (lambda a: engine.linalg.vecdot(a, a), "float32", "float16"),
    "linalg.vector_norm in float32": (lambda a: engine.linalg.vector_norm(a), "float16", "float32"),
    "linalg.matrix_norm in float32": (lambda a: engine.linalg.matrix_norm(a), "float16", "float32"),
    "erfinv in float32": (lambda a: (a * 0.1).erfinv(), "float16", "float32"),
    "bilinear upsampling in float32": (lambda a: F.interpolate(a[None, None], scale_factor=2, mode="bilinear"),
                                       "float16", "float32"),
    "nearest upsampling in float32": (lambda a: F.interpolate(a[None], scale_factor=2), "float16", "float32"),
    "area resizing (not listed)": (lambda a: F.interpolate(a[None, None], size=(2, 2), mode="area"), "float16",
                                   "float16"),
}


@pytest.mark.parametrize("name", CUDA_LIST_CASES)
def test_cuda_autocast_lists_as_torch_s(cuda, name):
    fn, given, expected = CUDA_LIST_CASES[name]
    a = engine.from_numpy(_rand(4, 5)).to(getattr(engine, given)).cuda()
    with engine.autocast("cuda"):
        assert str(fn(a).dtype) == f"engine.{expected}"


def _custom_function_run(lib, cast_inputs, given):
    """A custom Function under custom_fwd/custom_bwd in a CPU autocast region: the dtypes its forward and backward
    see and give, and the input's gradient's."""
    seen = []

    class Square(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs and getattr(lib, cast_inputs))
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return lib.mm(x, x.t())

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            seen.append(grad.dtype)
            return lib.mm(grad, x) + lib.mm(grad.t(), x)

    x = lib.ones(3, 2, dtype=getattr(lib, given), requires_grad=True)
    with lib.autocast("cpu"):
        y = Square.apply(x)
    y.float().sum().backward()
    return [str(d).split(".")[1] for d in (y.dtype, *seen, x.grad.dtype)]


@pytest.mark.parametrize("cast_inputs, given", [
    ("float32", "bfloat16"),  # forward's float32 output stays float32
    (None, "bfloat16"),  # backward gets the bfloat16 gradient of its output
    (None, "float32"),
])
def test_custom_function_outputs_keep_forward_s_dtypes(cast_inputs, given):
    theirs, ours = (_custom_function_run(lib, cast_inputs, given) for lib in (torch, engine))
    assert ours == theirs
