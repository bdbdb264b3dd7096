"""Complex dtypes against torch: names, promotion, Python complex data and scalars, casts, printing, the
requires_grad rule and serialization."""
import warnings

import numpy as np
import pytest
import torch

import engine
from engine import _dtype
from engine._dtype import complex64, complex128

PAIRS = [(complex64, "float32"), (complex64, "float64"), (complex64, "float16"), (complex64, "int64"),
         (complex64, "bool"), (complex128, "float32"), (complex64, complex128), (complex64, "uint8")]


def _torch(d):
    return getattr(torch, d if isinstance(d, str) else d.name)


def _engine(d):
    return _dtype.to_dtype(d) if isinstance(d, str) else d


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types(a, b):
    expected = torch.promote_types(_torch(a), _torch(b))
    assert _dtype.promote_types(_engine(a), _engine(b)).name == str(expected).split(".")[1]
    assert _dtype.promote_types(_engine(b), _engine(a)).name == str(expected).split(".")[1]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("scalar", [2j, 1 + 0.5j])
def test_scalar_promotion(dtype, scalar):
    ours = engine.ones(3, dtype=_dtype.to_dtype(dtype)) * scalar
    theirs = torch.ones(3, dtype=getattr(torch, dtype)) * scalar
    assert ours.dtype.name == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_tensor_from_python_complex_data_follows_the_default_float():
    assert engine.tensor([1 + 2j, 3]).dtype is complex64
    assert engine.tensor(1j).dtype is complex64
    assert engine.tensor([1, 2.5, 1j]).dtype is complex64
    previous = engine.get_default_dtype()
    engine.set_default_dtype(engine.float64)
    try:
        assert engine.tensor([1j]).dtype is complex128
        assert engine.get_default_dtype() is engine.float64
    finally:
        engine.set_default_dtype(previous)
    assert engine.tensor(np.array([1j], np.complex128)).dtype is complex128


def test_dtype_attributes():
    assert complex64.is_complex and complex128.is_complex and not engine.float32.is_complex
    assert not complex64.is_floating_point and complex64.is_signed
    assert complex64.itemsize == 8 and complex128.itemsize == 16
    assert complex64.to_real() is engine.float32 and complex128.to_real() is engine.float64
    assert engine.float64.to_complex() is complex128 and engine.float32.to_complex() is complex64
    assert _dtype.to_dtype("cfloat") is complex64 and _dtype.to_dtype("cdouble") is complex128
    assert _dtype.to_dtype(complex) is complex128
    assert not _dtype.can_cast(complex64, engine.float64) and _dtype.can_cast(engine.float64, complex64)


def test_complex32_is_refused_in_one_line():
    with pytest.raises(TypeError, match="no complex32"):
        _dtype.to_dtype("chalf")
    with pytest.raises(TypeError, match="no complex32"):
        engine.ones(2).chalf()


def test_cfloat_and_cdouble_methods():
    assert engine.ones(2).cfloat().dtype is complex64 and engine.arange(2).cdouble().dtype is complex128


def test_tensor_queries():
    z = engine.tensor([1 + 2j])
    assert z.is_complex() and not z.is_floating_point() and z.is_signed()
    assert not engine.tensor([1.0]).is_complex()
    assert z.requires_grad_().requires_grad
    assert z.item() == 1 + 2j and complex(z) == 1 + 2j
    assert not z.is_conj() and z.resolve_conj() is z


def test_casts():
    x = engine.tensor([1.5, -2.0])
    assert x.to(complex64).dtype is complex64 and x.to(complex).dtype is complex128
    assert engine.arange(3).to(complex128).dtype is complex128
    z = engine.tensor([1 + 2j, 3 - 1j])
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary part"):
        real = z.to(engine.float32)
    np.testing.assert_array_equal(real.numpy(), [1.0, 3.0])


def test_cast_gradient_is_the_real_part():
    x = engine.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(complex64) * engine.tensor([1 + 1j, 2j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        engine.ops.complex_views.view_as_real(y).sum().backward()
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    torch.view_as_real(t.to(torch.complex64) * torch.tensor([1 + 1j, 2j])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    assert x.grad.dtype is engine.float32


@pytest.mark.parametrize("values,dtype", [
    ([1 + 2j, -3.5 - 0.25j], torch.complex64), ([1 + 2j, 3j], torch.complex128),
    ([[1e5 + 2j, 3j], [1, 2]], torch.complex64), (1 + 2j, torch.complex64),
    ([float("nan") + 1j, 1e-5j], torch.complex64), ([0j, 0j], torch.complex64),
])
def test_repr_as_torch(values, dtype):
    ours = repr(engine.tensor(values, dtype=_dtype.to_dtype(str(dtype).split(".")[1])))
    assert ours == repr(torch.tensor(values, dtype=dtype)).replace("torch.", "engine.")


def test_repr_with_grad():
    z = engine.tensor([1.5 + 2j], requires_grad=True)
    assert repr(z) == "tensor([1.5000+2.j], requires_grad=True)"


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_torch_save_round_trip(dtype, tmp_path):
    values = torch.tensor([[1 + 2j, -3j], [0.5, 4 - 1j]], dtype=dtype)
    torch.save({"z": values}, tmp_path / "t.pt")
    loaded = engine.load(tmp_path / "t.pt")["z"]
    assert loaded.dtype.name == str(dtype).split(".")[1]
    np.testing.assert_array_equal(loaded.numpy(), values.numpy())
    engine.save({"z": loaded}, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt")["z"]
    assert back.dtype == dtype
    np.testing.assert_array_equal(back.numpy(), values.numpy())


def test_safetensors_holds_complex64_as_c64_and_refuses_complex128(tmp_path):
    """The format has C64 (safetensors' own library and torch write it) but no complex128."""
    import safetensors.numpy
    values = engine.tensor([[1 + 2j, -3j], [0.5, 4 - 1j]], dtype=complex64)
    engine.save({"w": values}, tmp_path / "w.safetensors")
    np.testing.assert_array_equal(safetensors.numpy.load_file(str(tmp_path / "w.safetensors"))["w"], values.numpy())
    theirs = tmp_path / "t.safetensors"
    safetensors.numpy.save_file({"w": values.numpy()}, str(theirs))
    loaded = engine.load(theirs)["w"]
    assert loaded.dtype is complex64
    np.testing.assert_array_equal(loaded.numpy(), values.numpy())
    with pytest.raises(TypeError, match="safetensors cannot hold 'w' of dtype complex128"):
        engine.save({"w": engine.tensor([1 + 2j], dtype=complex128)}, tmp_path / "w.safetensors")


def test_factories():
    assert engine.zeros(2, dtype=complex64).dtype is complex64
    np.testing.assert_array_equal(engine.full((2,), 1 + 2j).numpy(), [1 + 2j, 1 + 2j])
    assert engine.full((2,), 1 + 2j).dtype is complex64
    z = engine.randn(4000, dtype=complex64)
    assert z.dtype is complex64 and abs(float(z.real.var()) - 0.5) < 0.1 and abs(float(z.imag.var()) - 0.5) < 0.1
    u = engine.rand(50, dtype=complex128, requires_grad=True)
    assert u.dtype is complex128 and u.requires_grad and u.is_leaf
    assert 0 <= float(u.real.min()) and float(u.imag.max()) < 1
    assert engine.randn_like(z[:3]).dtype is complex64
    assert engine.rand_like(engine.zeros(2), dtype=complex64).is_complex()


@pytest.mark.parametrize("make", [lambda lib: lib.tensor([1j], dtype=lib.float32), lambda lib: lib.Tensor([1j])])
def test_complex_data_into_a_real_tensor_is_refused_as_torch(make):
    with pytest.raises(TypeError, match="must be real number, not complex"):
        make(torch)
    with pytest.raises(TypeError, match="must be real number, not complex"):
        make(engine)
