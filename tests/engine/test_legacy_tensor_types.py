"""engine's legacy tensor types (torch.FloatTensor and kin): construction, isinstance, Tensor.type conversions and
names, the CUDA types' errors without a GPU, and the deprecated set_default_tensor_type, against torch."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.legacy_tensor_types as legacy

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
         "IntTensor", "LongTensor", "BoolTensor"]
_DATA = np.random.default_rng(5).uniform(0, 3, (3, 5))  # non-negative: ByteTensor takes them


def _types(module):
    return {name: (getattr(module, name) if module is torch else legacy.CPU_TYPES[name]) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_construction_matches_torch(name):
    ours, theirs = legacy.CPU_TYPES[name], getattr(torch, name)
    for args in [(2, 3), (), (engine.Size([4, 1]),), (3,)]:
        torch_args = tuple(torch.Size(a) if isinstance(a, engine.Size) else a for a in args)
        made, expected = ours(*args), theirs(*torch_args)
        assert tuple(made.shape) == tuple(expected.shape)
        assert str(made.dtype) == str(expected.dtype).replace("torch.", "engine.")
    for data in ([1, 0, 2], _DATA.tolist(), _DATA, _DATA.astype(np.float32), (1.5, 2.5)):
        made, expected = ours(data), theirs(data)
        np.testing.assert_array_equal(made.float().numpy(), expected.float().numpy())
        assert made.device.type == "cpu" and not made.requires_grad


@pytest.mark.parametrize("name", NAMES)
def test_isinstance_and_tensor_type_match_torch(name):
    ours, theirs = _types(engine), _types(torch)
    x, y = engine.tensor(_DATA).to(ours[name].dtype), torch.tensor(_DATA).to(theirs[name].dtype)
    assert [isinstance(x, t) for t in ours.values()] == [isinstance(y, t) for t in theirs.values()]
    assert x.type() == y.type().replace("torch.", "engine.")
    for target in NAMES:
        for spelled in (ours[target], f"torch.{target}", f"engine.{target}"):
            converted = x.type(spelled)
            expected = y.type(theirs[target])
            assert isinstance(converted, ours[target])
            np.testing.assert_array_equal(converted.float().numpy(), expected.float().numpy())
    assert x.type(ours[name]) is x and x.type(x.dtype) is x
    assert x.type(engine.float16).dtype == engine.float16


def test_isinstance_of_other_objects_and_subclasses():
    param = engine.nn.Parameter(engine.ones(2))
    assert isinstance(param, engine.legacy_tensor_types.FloatTensor)
    assert isinstance(engine.ones(2, requires_grad=True), legacy.FloatTensor)
    assert not isinstance(1.0, legacy.FloatTensor) and not isinstance(np.ones(2, np.float32), legacy.FloatTensor)
    assert not issubclass(legacy.FloatTensor, engine.Tensor) and issubclass(legacy.FloatTensor, legacy.FloatTensor)
    assert repr(legacy.FloatTensor) == "<class 'engine.FloatTensor'>"
    assert repr(legacy.CUDA_TYPES["LongTensor"]) == "<class 'engine.cuda.LongTensor'>"
    assert legacy.FloatTensor.dtype == engine.float32 and not legacy.FloatTensor.is_cuda
    assert legacy.CUDA_TYPES["FloatTensor"].is_cuda and not isinstance(engine.ones(2), legacy.CUDA_TYPES["FloatTensor"])


def test_an_existing_tensor_is_passed_through_or_refused():
    t = engine.ones(3)
    assert legacy.FloatTensor(t) is t
    with pytest.raises(TypeError, match=r"expected engine.FloatTensor \(got engine.DoubleTensor\)"):
        legacy.FloatTensor(t.double())


@pytest.mark.parametrize("args, kwargs, error, message", [
    ((2.5,), {}, TypeError, r"new\(\): data must be a sequence \(got float\)"),
    (([1], [2]), {}, TypeError, r"new\(\) received an invalid combination of arguments - got \(list, list\)"),
    ((2, 3), {"device": "cuda"}, RuntimeError,
     "legacy constructor expects device type: cpu but device type: cuda was passed"),
])
def test_construction_errors_match_torch(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        legacy.FloatTensor(*args, **kwargs)
    with pytest.raises(error, match=message):
        torch.FloatTensor(*args, **kwargs)


@pytest.mark.parametrize("bad", ["torch.Foo", "Foo", "torch.float64", int])
def test_type_rejects_what_torch_rejects(bad):
    message = "invalid type: '" + (bad if isinstance(bad, str) else bad.__name__) + "'"
    with pytest.raises(ValueError, match=message):
        engine.ones(2).type(bad)
    with pytest.raises(ValueError, match=message):
        torch.ones(2).type(bad)


@pytest.mark.skipif(engine.cuda.is_available(), reason="checks the error a machine without a GPU gives")
def test_cuda_types_without_a_gpu():
    cuda_float = legacy.CUDA_TYPES["FloatTensor"]
    with pytest.warns(UserWarning, match=r"The torch.cuda.\*DtypeTensor constructors are no longer recommended"), \
            pytest.raises(RuntimeError, match="CUDA|cuda"):
        cuda_float(2)
    with pytest.raises(RuntimeError, match="CUDA|cuda"):
        engine.ones(2).type("torch.cuda.FloatTensor")


def test_cuda_types_on_the_cuda_emulation(cuda):
    with pytest.warns(UserWarning, match="no longer recommended"):
        made = legacy.CUDA_TYPES["DoubleTensor"]([1.5, 2.5])
    assert made.device.type == "cuda" and made.dtype == engine.float64
    assert made.type() == "engine.cuda.DoubleTensor" and isinstance(made, legacy.CUDA_TYPES["DoubleTensor"])
    back = made.type(legacy.FloatTensor)
    assert back.device.type == "cpu" and back.dtype == engine.float32
    assert engine.ones(2).type("torch.cuda.IntTensor").device.type == "cuda"


def test_set_default_tensor_type_matches_torch():
    try:
        for module in (engine, torch):
            setter = legacy.set_default_tensor_type if module is engine else torch.set_default_tensor_type
            with pytest.warns(UserWarning, match=r"torch.set_default_tensor_type\(\) is deprecated as of PyTorch "
                                                 r"2.1, please use torch.set_default_dtype\(\) and "
                                                 r"torch.set_default_device\(\) as alternatives."):
                setter(legacy.DoubleTensor if module is engine else torch.DoubleTensor)
            assert str(module.get_default_dtype()).endswith("float64") and module.tensor([1.0]).dtype.itemsize == 8
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                setter("torch.HalfTensor")
                assert str(module.get_default_dtype()).endswith("float16")
                setter("torch.FloatTensor")
                with pytest.raises(TypeError, match="^only floating-point types are supported as the default type"):
                    setter(legacy.LongTensor if module is engine else torch.LongTensor)
                with pytest.raises(TypeError, match="invalid type object: only floating-point types are supported"):
                    setter(module.float64)
                with pytest.raises(AttributeError, match="has no attribute 'Foo'"):
                    setter("torch.Foo")
    finally:
        engine.set_default_dtype(engine.float32)
        torch.set_default_dtype(torch.float32)
    assert engine.get_default_dtype() == engine.float32


def test_set_default_tensor_type_cuda_sets_and_clears_the_device(monkeypatch):
    calls = []
    monkeypatch.setattr(legacy, "set_default_device", calls.append)
    monkeypatch.setattr(legacy, "get_default_device", lambda: engine.device("cuda"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            legacy.set_default_tensor_type(legacy.CUDA_TYPES["HalfTensor"])
            legacy.set_default_tensor_type(legacy.FloatTensor)
    finally:
        engine.set_default_dtype(engine.float32)
    assert calls == ["cuda", None]
