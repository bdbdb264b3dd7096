"""Tensor creation, dtypes, conversions and printing against PyTorch."""
import copy
import pickle

import numpy as np
import pytest
import torch

import engine


def same_dtype(ours, ref):
    return str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]


@pytest.mark.parametrize("data", [[1, 2, 3], [1.0, 2.5], [[True, False]], 3, 2.5, [[1, 2], [3, 4.5]], []])
def test_tensor_infers_dtype_like_torch(data):
    ours, ref = engine.tensor(data), torch.tensor(data)
    assert same_dtype(ours, ref)
    assert ours.tolist() == ref.tolist()
    assert tuple(ours.shape) == tuple(ref.shape)


def test_from_numpy_shares_memory_and_tensor_copies():
    a = np.arange(6, dtype=np.float32)
    shared, copied = engine.from_numpy(a), engine.tensor(a)
    a[0] = 100
    assert shared[0].item() == 100 and copied[0].item() == 0
    assert engine.as_tensor(a)._data is a


@pytest.mark.parametrize("fn,args", [
    ("zeros", (2, 3)), ("ones", ((4,),)), ("full", ((2, 2), 7)), ("full", ((2,), 1.5)), ("full", ((2,), True)),
    ("arange", (5,)), ("arange", (1, 4, 0.5)), ("arange", (0, 10, 3)), ("linspace", (0, 1, 7)), ("eye", (3, 4)),
])
def test_creation_functions_match_torch(fn, args):
    ours, ref = getattr(engine, fn)(*args), getattr(torch, fn)(*args)
    assert same_dtype(ours, ref)
    np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6)


def test_like_functions_and_explicit_dtypes():
    x = engine.ones(2, 3, dtype=engine.float64)
    for fn in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"):
        y = getattr(engine, fn)(x)
        assert y.shape == (2, 3) and y.dtype is engine.float64
    assert engine.full_like(x, 4).tolist() == [[4.0] * 3] * 2
    assert engine.zeros(3, dtype=engine.int8).dtype is engine.int8
    assert engine.arange(3, dtype=engine.float32).dtype is engine.float32


def test_manual_seed_makes_random_creation_reproducible():
    draws = []
    for _ in range(2):
        engine.manual_seed(42)
        draws.append([engine.rand(3).tolist(), engine.randn(2, 2).tolist(), engine.randint(0, 10, (4,)).tolist(),
                      engine.randperm(5).tolist(), engine.normal(0.0, 2.0, (3,)).tolist()])
    assert draws[0] == draws[1]
    engine.manual_seed(43)
    assert engine.rand(3).tolist() != draws[0][0]


def test_large_random_fills_are_threaded_yet_reproducible():
    """Arrays of 2**20+ samples are drawn in fixed pieces on the thread pool: same values whatever the thread count."""
    n = (1 << 20) + 7
    draws = {}
    for threads in (1, 2):
        engine.set_num_threads(threads)
        engine.manual_seed(7)
        w = engine.empty(n)
        draws[threads] = (engine.nn.init.normal_(w, 0.5, 2.0).numpy().copy(), engine.empty(n).uniform_(-1, 3).numpy())
    engine.set_num_threads(2)
    for a, b in zip(draws[1], draws[2]):
        np.testing.assert_array_equal(a, b)
    normal, uniform = draws[2]
    assert abs(normal.mean() - 0.5) < 0.01 and abs(normal.std() - 2.0) < 0.01
    assert -1 <= uniform.min() and uniform.max() < 3 and abs(uniform.mean() - 1.0) < 0.01
    pieces = np.split(normal[:n - 7], 8)
    assert not any(np.array_equal(pieces[0], p) for p in pieces[1:])  # independent streams, not one repeated


def test_random_distributions_and_dtypes():
    engine.manual_seed(0)
    u, n = engine.rand(100000), engine.randn(100000)
    assert u.dtype is engine.float32 and 0 <= u.min().item() and u.max().item() < 1
    assert abs(n.mean().item()) < 0.02 and abs(n.std().item() - 1) < 0.02
    r = engine.randint(3, 7, (1000,))
    assert r.dtype is engine.int64 and r.min().item() == 3 and r.max().item() == 6
    assert sorted(engine.randperm(10).tolist()) == list(range(10))
    g = engine.Generator().manual_seed(5)
    assert engine.rand(4, generator=g).tolist() == engine.rand(4, generator=engine.Generator().manual_seed(5)).tolist()


@pytest.mark.parametrize("method,dt", [("float", "float32"), ("double", "float64"), ("half", "float16"),
                                       ("long", "int64"), ("int", "int32"), ("bool", "bool"), ("byte", "uint8")])
def test_dtype_conversions(method, dt):
    x = engine.tensor([0.0, 1.7, -2.2])
    ref = getattr(torch.tensor([0.0, 1.7, -2.2]), method)()
    y = getattr(x, method)()
    assert y.dtype.name == dt and y.tolist() == ref.tolist()
    assert x.to(getattr(engine, dt if dt != "bool" else "bool")).dtype.name == dt


def test_to_keeps_autograd_and_accepts_device_and_tensor():
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(engine.float64)
    (y * y).backward(engine.ones(2, dtype=engine.float64))
    assert x.grad.dtype is engine.float32 and x.grad.tolist() == [2.0, 4.0]
    assert x.to("cpu") is x and x.to(engine.device("cpu"), engine.float32) is x
    assert x.to(engine.zeros(1, dtype=engine.float16)).dtype is engine.float16
    assert str(x.device) == "cpu" and x.device == engine.device("cpu")


def test_attributes_and_conversions():
    x = engine.arange(24, dtype=engine.float32).reshape(2, 3, 4)
    assert x.shape == (2, 3, 4) and x.size() == (2, 3, 4) and x.size(-1) == 4 and x.dim() == 3 and x.ndim == 3
    assert x.numel() == 24 and x.shape.numel() == 24 and x.element_size() == 4
    assert x.stride() == (12, 4, 1) and x.is_contiguous() and x.is_leaf
    assert isinstance(x.numpy(), np.ndarray) and x[1, 2, 3].item() == 23.0
    assert x.tolist()[1][2] == [20.0, 21.0, 22.0, 23.0]
    assert float(x[0, 0, 1]) == 1.0 and int(x[0, 0, 2]) == 2 and len(x) == 2
    with pytest.raises(RuntimeError, match="a Tensor with 24 elements cannot be converted to Scalar"):
        x.item()
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        x.size(3)


def test_numpy_refuses_tensors_that_require_grad():
    x = engine.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]


def test_clone_detach_contiguous():
    x = engine.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    c = x.clone()
    assert c.grad_fn is not None and c._data is not x._data
    d = x.detach()
    assert not d.requires_grad and d._data is x._data
    t = x.detach().t() if hasattr(x, "t") else None
    if t is not None:
        assert not t.is_contiguous() and t.contiguous().is_contiguous()


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor([1.0, 2.5, -3.0]),
    lambda lib: lib.tensor([[1.0, 2.0], [3.0, 4.0]]),
    lambda lib: lib.tensor([1, 2, 3]),
    lambda lib: lib.tensor([True, False]),
    lambda lib: lib.tensor(3.5),
    lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64),
    lambda lib: lib.tensor([1.0, 2.0], requires_grad=True),
    lambda lib: lib.tensor([0.001, 12345.0]),
    lambda lib: lib.tensor([1, 2], dtype=lib.int32),
])
def test_repr_like_torch(make):
    assert repr(make(engine)) == repr(make(torch)).replace("torch.", "engine.")


def test_repr_shows_grad_fn():
    y = engine.tensor([1.0], requires_grad=True) * 2
    assert repr(y) == "tensor([2.], grad_fn=<MulBackward>)"


def test_pickle_and_deepcopy_round_trip():
    x = engine.tensor([[1.0, 2.0]], requires_grad=True)
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.requires_grad
    z = copy.deepcopy(x)
    assert z.tolist() == x.tolist() and z._data is not x._data


def test_type_promotion_result_type():
    assert engine.result_type(engine.tensor([1]), 1.0) is engine.float32
    assert engine.promote_types(engine.uint8, engine.int8) is engine.int16
    assert engine.promote_types(engine.int64, engine.float16) is engine.float16


# ---- ranges: torch's CPU values bit for bit -----------------------------------------------------------
RANGE_DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8"]


def range_dtypes(names):
    """(engine dtype, torch dtype) pairs; bfloat16 only where ml_dtypes is installed."""
    if "bfloat16" in names and engine.bfloat16.np is None:
        pytest.skip("engine.bfloat16 needs ml_dtypes")
    return getattr(engine, names), getattr(torch, names)


def same_bits(ours, ref):
    """Equal shapes and equal bytes (so -0.0 differs from 0.0, and NaN payloads count)."""
    return tuple(ours.shape) == tuple(ref.shape) and ours.numpy().tobytes() == ref.view(torch.uint8).numpy().tobytes()


def endpoints(rng, name):
    start, end = rng.standard_normal(2) * 10.0 ** rng.integers(-3, 4)
    if name in ("int16", "int8", "uint8"):  # inside the type's range
        start, end = np.clip([start, end], 0 if name == "uint8" else -100, 100)
    return float(start), float(end)


@pytest.mark.parametrize("name", RANGE_DTYPES)
def test_linspace_equals_torch_bit_for_bit(name):
    ours_dtype, torch_dtype = range_dtypes(name)
    rng = np.random.default_rng(11)
    for trial in range(80):
        start, end = endpoints(rng, name)
        steps = int(rng.integers(2, 400)) if trial % 20 else 40_001 + trial  # odd sizes, one past GRAIN_SIZE
        ours = engine.linspace(start, end, steps, dtype=ours_dtype)
        assert same_bits(ours, torch.linspace(start, end, steps, dtype=torch_dtype)), (start, end, steps)
    for start, end, steps in [(0, 0.1, 12), (0, 0.2, 24), (-0.0, -0.0, 5), (2.7, -1.2, 1), (2.7, -1.2, 0),
                              (-3, 3, 2), (1e-3, 7, 3)]:
        ours = engine.linspace(start, end, steps, dtype=ours_dtype)
        assert same_bits(ours, torch.linspace(start, end, steps, dtype=torch_dtype)), (start, end, steps)


def test_linspace_is_drop_path_rates_of_timm():
    """timm's ``[x.item() for x in torch.linspace(0, drop_path_rate, depth)]``, which float64 math then a cast
    missed in the last bit (0.04545454680919647 against torch's 0.045454543083906174 here)."""
    assert engine.linspace(0, 0.1, 12)[5].item() == torch.linspace(0, 0.1, 12)[5].item() == 0.045454543083906174
    ours = [x.item() for x in engine.linspace(0, 0.3, 37)]
    assert ours == [x.item() for x in torch.linspace(0, 0.3, 37)]
    assert same_bits(engine.linspace(engine.tensor(0.5), engine.tensor(2.0), 9), torch.linspace(0.5, 2.0, 9))


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8"])
def test_logspace_equals_torch_bit_for_bit(name):
    ours_dtype, torch_dtype = range_dtypes(name)
    rng = np.random.default_rng(12)
    for trial in range(60):
        start, end = (float(v) for v in rng.uniform(-3, 3, 2))
        if name == "uint8":
            start, end = abs(start) % 2, abs(end) % 2
        steps, base = int(rng.integers(0, 300)), float(rng.choice([10.0, 2.0, np.e, 1.5]))
        ours = engine.logspace(start, end, steps, base=base, dtype=ours_dtype)
        assert same_bits(ours, torch.logspace(start, end, steps, base=base, dtype=torch_dtype)), (start, end, steps)


@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16"])
def test_float_arange_equals_torch_bit_for_bit(name):
    ours_dtype, torch_dtype = range_dtypes(name)
    rng = np.random.default_rng(13)
    for trial in range(80):
        step = float(rng.choice([0.1, 0.05, 0.3, 1 / 3, 0.01, 0.7, 2.5])) * float(rng.choice([1, -1]))
        count = int(rng.integers(1, 400))
        start = float(np.round(rng.standard_normal() * 5, 3))
        end = start + step * count * float(rng.uniform(0.9, 1.0))
        ours = engine.arange(start, end, step, dtype=ours_dtype)
        assert same_bits(ours, torch.arange(start, end, step, dtype=torch_dtype)), (start, end, step)


def test_long_float_arange_is_split_as_torchs_threads_split_it():
    """Past 32768 values torch's kernel restarts its vector blocks at each thread's first index."""
    before = torch.get_num_threads(), engine.get_num_threads()
    try:
        for threads in (1, 2, 3):
            torch.set_num_threads(threads)
            engine.set_num_threads(threads)
            for dtype, torch_dtype in ((engine.float32, torch.float32), (engine.float64, torch.float64)):
                ours = engine.arange(-3.0, 30_001 * 0.37, 0.37 / 3, dtype=dtype)
                assert same_bits(ours, torch.arange(-3.0, 30_001 * 0.37, 0.37 / 3, dtype=torch_dtype)), threads
    finally:
        torch.set_num_threads(before[0])
        engine.set_num_threads(before[1])


def test_range_errors_match_torch():
    for make in (lambda m: m.linspace(0, 1, -1), lambda m: m.logspace(0, 1, -2),
                 lambda m: m.linspace(0, 1, 3, dtype=m.bool)):
        with pytest.raises(Exception) as theirs:
            make(torch)
        with pytest.raises(type(theirs.value)) as ours:
            make(engine)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dst, src", [((2, 3), (4, 3)), ((2, 3), (2, 1, 3)), ((3,), (2, 3))])
def test_copy_from_a_shape_that_does_not_fit_raises_torchs_error(dst, src):
    with pytest.raises(RuntimeError) as expected:
        torch.zeros(dst).copy_(torch.ones(src))
    with pytest.raises(RuntimeError) as got:
        engine.zeros(dst).copy_(engine.ones(src))
    assert str(got.value) == str(expected.value)


def test_copy_broadcasts_src_to_the_destination():
    x = engine.zeros(2, 3)
    x.copy_(engine.tensor([1.0, 2.0, 3.0]))
    assert x.tolist() == [[1.0, 2.0, 3.0]] * 2


def test_size_stays_a_size_when_concatenated_or_repeated():
    s = engine.Size([2, 3])
    for value, expected in ((s + (4,), (2, 3, 4)), ((1,) + s, (1, 2, 3)), (s * 2, (2, 3, 2, 3)),
                            (2 * s, (2, 3, 2, 3)), (s + s, (2, 3, 2, 3))):
        assert type(value) is engine.Size and value == expected
    with pytest.raises(TypeError):
        s + [4]  # as torch.Size and tuple


def test_finfo_of_complex_types_is_their_parts():
    for ours, theirs in ((engine.complex64, torch.complex64), (engine.complex128, torch.complex128)):
        assert engine.finfo(ours).eps == torch.finfo(theirs).eps and engine.finfo(ours).bits == torch.finfo(theirs).bits
