"""engine.fft against torch.fft on the CPU: values, dtypes and gradients of every transform under every norm,
with odd sizes, cropping and padding (``n`` / ``s``), chosen dims and batches; frequencies, shifts and errors."""
import numpy as np
import pytest
import torch

import engine
import engine.fft
from engine._dtype import complex64
from op_check import check_op

pytestmark = pytest.mark.slow  # 229 parity cases, about 1.2 s beyond start-up: the full suite runs them


NORMS = [None, "backward", "ortho", "forward"]


def _signal(shape, complex_=False, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if complex_:
        x = x + 1j * rng.standard_normal(shape)
        return x.astype(np.complex64 if dtype == np.float32 else np.complex128)
    return x.astype(dtype)


def _check(name, x, rtol=1e-4, **kwargs):
    check_op(lambda t: getattr(engine.fft, name)(t, **kwargs), lambda t: getattr(torch.fft, name)(t, **kwargs), [x],
             rtol=rtol)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,complex_", [("fft", False), ("fft", True), ("ifft", True), ("rfft", False),
                                           ("irfft", True), ("hfft", True), ("ihfft", False)])
@pytest.mark.parametrize("n", [None, 4, 9])
def test_one_dim_transforms(name, complex_, norm, n):
    _check(name, _signal((2, 3, 7), complex_), n=n, dim=1 if n == 4 else -1, norm=norm)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name,complex_", [("fft2", True), ("ifft2", False), ("rfft2", False), ("irfft2", True),
                                           ("hfft2", True), ("ihfft2", False), ("fftn", True), ("ifftn", True),
                                           ("rfftn", False), ("irfftn", True), ("hfftn", True), ("ihfftn", False)])
@pytest.mark.parametrize("s,dim", [(None, None), ((4, 6), None), ((5, -1), (2, 0))])
def test_multi_dim_transforms_in_double(name, complex_, norm, s, dim):
    if name.endswith("2") and dim is None:
        dim = (-2, -1)
    _check(name, _signal((3, 4, 5), complex_, np.float64), rtol=1e-10, s=s, dim=dim, norm=norm)


@pytest.mark.parametrize("name,result", [("fft", "complex64"), ("rfft", "complex64"), ("irfft", "float32"),
                                         ("hfft", "float32"), ("ihfft", "complex64")])
def test_dtypes_follow_torch(name, result):
    for dtype, expected in ((np.float32, result), (np.float64, result.replace("32", "64").replace("64", "128")
                                                   if "complex" in result else "float64")):
        y = getattr(engine.fft, name)(engine.tensor(_signal((6,), dtype=dtype)))
        assert y.dtype.name == expected
    ints = getattr(engine.fft, name)(engine.arange(6))
    assert ints.dtype.name == str(getattr(torch.fft, name)(torch.arange(6)).dtype).split(".")[1]


def test_real_loss_through_a_spectrum():
    """abs(fft(x)).sum() and a power spectrum, as training code writes them."""
    x = _signal((4, 10))
    check_op(lambda t: engine.fft.rfft(t).abs().sum(), lambda t: torch.fft.rfft(t).abs().sum(), [x], rtol=1e-4)
    check_op(lambda t: engine.fft.irfft(engine.fft.rfft(t) * engine.fft.rfft(t), n=10),
             lambda t: torch.fft.irfft(torch.fft.rfft(t) * torch.fft.rfft(t), n=10), [x], rtol=1e-4)


def test_frequencies():
    for n, d in ((5, 1.0), (8, 0.25), (1, 2.0)):
        np.testing.assert_allclose(engine.fft.fftfreq(n, d).numpy(), torch.fft.fftfreq(n, d).numpy(), rtol=1e-6)
        np.testing.assert_allclose(engine.fft.rfftfreq(n, d).numpy(), torch.fft.rfftfreq(n, d).numpy(), rtol=1e-6)
    assert engine.fft.fftfreq(4).dtype is engine.float32
    assert engine.fft.rfftfreq(6, dtype=engine.float64).dtype is engine.float64


@pytest.mark.parametrize("dim", [None, 0, (1, 2), -1])
def test_shifts(dim):
    x = _signal((3, 4, 5))
    check_op(lambda t: engine.fft.fftshift(t, dim), lambda t: torch.fft.fftshift(t, dim), [x])
    check_op(lambda t: engine.fft.ifftshift(t, dim), lambda t: torch.fft.ifftshift(t, dim), [x])


@pytest.mark.parametrize("call,error,message", [
    (lambda x, z: engine.fft.fft(x, norm="foo"), RuntimeError, 'Invalid normalization mode: "foo"'),
    (lambda x, z: engine.fft.rfft(z), TypeError, "rfft expects a real input tensor, but got ComplexFloat"),
    (lambda x, z: engine.fft.ihfft(z), TypeError, "ihfft expects a real input tensor, but got ComplexFloat"),
    (lambda x, z: engine.fft.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x, z: engine.fft.irfft(z[:, :1]), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x, z: engine.fft.fft(x, dim=3), IndexError,
     r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 3\)"),
    (lambda x, z: engine.fft.fftn(x, s=(2, 3), dim=(0,)), RuntimeError,
     "When given, dim and shape arguments must have the same length"),
    (lambda x, z: engine.fft.fftn(x, dim=(0, 0)), RuntimeError, "FFT dims must be unique"),
    (lambda x, z: engine.fft.fft(x.half()), NotImplementedError, "Unsupported dtype Half"),
    (lambda x, z: engine.fft.fft(engine.tensor(1.0)), IndexError, "Dimension specified as -1 but tensor has no "
                                                                  "dimensions"),
])
def test_errors(call, error, message):
    x, z = engine.randn(4, 5), engine.randn(4, 5).to(complex64)
    with pytest.raises(error, match=message):
        call(x, z)


@pytest.mark.parametrize("name,complex_", [("fft", True), ("rfft", False), ("irfft", True), ("fftn", False)])
def test_on_cuda(cuda, name, complex_):
    check_op(lambda t: getattr(engine.fft, name)(t), lambda t: getattr(torch.fft, name)(t),
             [_signal((2, 6), complex_)], rtol=1e-4, device="cuda")


def _second_order(lib, fft, as_real, name, x, kwargs):
    """z.grad of a loss on the gradient of (transform(z) ** 3).sum(), made with create_graph=True."""
    z = lib.tensor(x, requires_grad=True)
    y = getattr(fft, name)(z, **kwargs)
    y = as_real(y) if y.is_complex() else y
    g, = lib.autograd.grad((y ** 3).sum(), z, create_graph=True)
    (((as_real(g) if g.is_complex() else g)) ** 2).sum().backward()
    return z.grad.numpy()


@pytest.mark.parametrize("name,complex_,kwargs", [("fft", True, {}), ("fft", False, dict(n=5, norm="forward")),
                                                  ("ifft", True, dict(norm="ortho")), ("rfft", False, dict(n=5)),
                                                  ("irfft", True, {}), ("fftn", True, dict(s=(3, 5))),
                                                  ("rfftn", False, {}), ("irfftn", True, dict(s=(3, 5)))])
def test_double_backward(name, complex_, kwargs):
    x = _signal((3, 4), complex_, np.float64)
    ours = _second_order(engine, engine.fft, engine.ops.complex_views.view_as_real, name, x, kwargs)
    theirs = _second_order(torch, torch.fft, lambda t: torch.view_as_real(t.resolve_conj()), name, x, kwargs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-10)
