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
