"""engine.fft, stft/istft and the window functions against torch where a differential fuzz found them apart: the
memory layout of the transforms' results (torch's MKL kernels order the untransformed dims by stride, the result
dense behind them), ``n=-1`` and the order of the checks of the 1-d transforms, ``out=`` dtypes, an empty half
spectrum padded (numpy's irfft pads it with garbage), the frequencies' dtypes, sizes, ``out=`` and float16
rounding, the shifts' errors; stft's ``align_to_window``, complex windows, half inputs and torch's messages
(which print the call); istft's checks; the windows' float16/bfloat16 values, complex dtypes and check order.

Each case is a seeded sample of the sweep (/tmp fuzzers, not kept); each failed before its fix.
"""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.fft
import engine.signal
from op_check import assert_close, assert_same_error, check_op

pytestmark = pytest.mark.slow  # about 2 s in all

_RNG = np.random.default_rng(28)


def _rand(*shape, complex_=False, dtype=np.float64):
    x = _RNG.standard_normal(shape)
    if complex_:
        x = x + 1j * _RNG.standard_normal(shape)
        return x.astype(np.complex64 if dtype == np.float32 else np.complex128)
    return x.astype(dtype)


def _laid_out(module, arr, layout):
    """``arr`` as a ``module`` tensor: "T" transposed storage, "S" stepped (every other element), "CL" channels-last."""
    if layout == "T":
        return module.from_numpy(np.ascontiguousarray(arr.swapaxes(-1, -2))).transpose(-1, -2)
    if layout == "S":
        return module.from_numpy(np.repeat(arr, 2, axis=-1))[..., ::2]
    if layout == "CL":
        return module.from_numpy(arr.copy()).contiguous(memory_format=module.channels_last)
    return module.from_numpy(arr.copy())


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def _same_result(fn, rtol=1e-6, strides=True):
    """fn(module): equal dtype, shape, values and (size-1 dims aside) strides."""
    ours, theirs = _quiet(lambda: fn(engine)), _quiet(lambda: fn(torch))
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    if strides:
        assert [s for s, n in zip(ours.stride(), ours.shape) if n != 1] == \
            [s for s, n in zip(theirs.stride(), theirs.shape) if n != 1]
    if rtol == 0:
        np.testing.assert_array_equal(_numpy(ours), _numpy(theirs))
    else:
        assert_close(_numpy(ours), _numpy(theirs), rtol)


def _numpy(t):
    t = t.detach()
    return t.float().numpy() if str(t.dtype).split(".")[1] in ("float16", "bfloat16") else t.resolve_conj().numpy() \
        if isinstance(t, torch.Tensor) else t.numpy()


def _same_error(fn):
    assert_same_error(lambda: _quiet(lambda: fn(engine)), lambda: _quiet(lambda: fn(torch)), first_line=True)


# ---- transforms: result layouts ---------------------------------------------------------------------------
LAYOUTS = [  # (name, shape, complex input, layout, kwargs)
    ("fft", (7, 4, 4), False, None, {"dim": 0}),
    ("ifft", (3, 5, 6), False, "S", {"dim": 0}),
    ("fft2", (2, 4, 3, 7), True, "CL", {"dim": [0, 3], "norm": "ortho"}),
    ("ifftn", (5, 3, 4), False, "T", {"dim": [2, 0], "s": [6, 2]}),
    ("rfftn", (3, 3, 2, 4), False, "CL", {"dim": [2, 1, 3], "s": [8, 5, 6]}),
    ("rfft2", (5, 6, 7), False, "T", {"dim": [0, 2]}),
    ("irfftn", (6, 5), True, "T", {}),
    ("irfft2", (6, 7, 6), True, "T", {"dim": [0, 2], "s": [3, 3]}),
    ("irfft", (4, 5, 3), True, "S", {"dim": 1, "n": 7}),
    ("hfftn", (4, 5), True, None, {"dim": 0}),
    ("hfft2", (3, 1, 4, 5), True, "CL", {"dim": [1, 3], "s": [3, 8]}),
    ("ihfftn", (6, 4, 4, 2), False, "CL", {"dim": (-1, 2, -4)}),
    ("ihfft2", (6, 5, 3, 5), False, "CL", {"dim": [2, 0], "s": [8, 2]}),
    ("ihfft", (4, 3, 5), False, "T", {"dim": 0}),
]


@pytest.mark.parametrize("name,shape,complex_,layout,kwargs", LAYOUTS)
def test_result_layout_as_torch(name, shape, complex_, layout, kwargs):
    x = _rand(*shape, complex_=complex_)
    _same_result(lambda m: getattr(m.fft, name)(_laid_out(m, x, layout), **kwargs), rtol=1e-10)


def test_layout_keeps_the_gradient():  # a guard: the copy into torch's layout is no autograd node of its own
    x = _rand(2, 3, 2, 4)
    check_op(lambda t: engine.fft.fftn(t.contiguous(memory_format=engine.channels_last), s=[5, 5], dim=[3, 1]),
             lambda t: torch.fft.fftn(t.contiguous(memory_format=torch.channels_last), s=[5, 5], dim=[3, 1]), [x],
             rtol=1e-10)


# ---- transforms: checks, out=, empty inputs ---------------------------------------------------------------
def _f64(*shape, complex_=False):
    return lambda m: m.from_numpy(_rand(*shape, complex_=complex_))


ERRORS = [
    lambda m: m.fft.fft(_f64(4, 8)(m), n=-1, dim=0),  # -1 is no default for the 1-d transforms
    lambda m: m.fft.irfft(_f64(7, 1, 4, complex_=True)(m), n=-1, dim=-2),
    lambda m: m.fft.rfft(_f64(2, 5)(m).half(), dim=-4),  # the dtype before the dim
    lambda m: m.fft.hfft(_f64(3)(m).to(m.bfloat16), dim=1),
    lambda m: m.fft.ihfft2(_f64(3, complex_=True)(m), norm="bogus"),  # the dims before the norm
    lambda m: m.fft.ihfftn(_f64(6, 8, 4, complex_=True)(m), dim=[-3, -1], norm="bogus"),  # the norm, the dtype
    lambda m: m.fft.irfftn(_f64(2, 7, 0, complex_=True)(m)),  # an empty dim before the signal length
    lambda m: m.fft.rfft(_f64(3, 4)(m), out=m.empty(0, dtype=m.int64)),
    lambda m: m.fft.fft2(_f64(3, 4, complex_=True)(m), out=m.empty(0, dtype=m.float64)),
    lambda m: m.fft.ifftn(_f64(3, 4)(m), out=m.empty(0)),
    lambda m: m.fft.irfft2(_f64(3, 4, complex_=True)(m), out=m.empty(0, dtype=m.complex128)),
    lambda m: m.fft.hfft(_f64(3, 4, complex_=True)(m), out=m.empty(0, dtype=m.int32)),
    lambda m: m.fft.ihfft(_f64(3, 4)(m).float(), out=m.empty(0, dtype=m.complex128)),
    lambda m: m.fft.ifft(_f64(3, 4)(m).float(), out=m.empty(0, dtype=m.complex128)),
]


@pytest.mark.parametrize("call", ERRORS)
def test_transform_errors_as_torch(call):
    _same_error(call)


def test_out_of_a_wider_type():  # a guard: float16 out of a real transform, complex128 of a complex64 one
    z, x = _rand(3, 4, complex_=True), _rand(3, 4, dtype=np.float32)
    _same_result(lambda m: m.fft.irfft(m.from_numpy(z), out=m.empty(0, dtype=m.float16)), rtol=1e-2, strides=False)
    _same_result(lambda m: m.fft.rfft2(m.from_numpy(x), out=m.empty(0, dtype=m.complex128)), rtol=1e-6)


@pytest.mark.parametrize("name,s", [("hfftn", [9, 8]), ("irfftn", [3, 8]), ("irfft2", [2, 5])])
def test_empty_half_spectrum_padded_with_zeros(name, s):
    x = np.zeros((5, 4, 0), np.complex64)
    for _ in range(2):  # numpy's garbage differs from call to call
        _same_result(lambda m: getattr(m.fft, name)(m.from_numpy(x), s=s), rtol=0, strides=False)


# ---- frequencies and shifts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n,kwargs", [(0, {}), (-1, {}), (-3, {}), (7, {"d": 0.3, "dtype": "float16"}),
                                      (6, {"d": 3.7, "dtype": "bfloat16"})])
def test_frequencies(name, n, kwargs):
    def call(m):
        options = {k: getattr(m, v) if k == "dtype" else v for k, v in kwargs.items()}
        return getattr(m.fft, name)(n, **options)
    if name == "fftfreq" and n < 0:
        _same_error(call)
    else:
        _same_result(call, rtol=0)


@pytest.mark.parametrize("call", [
    lambda m: m.fft.rfftfreq(-4),
    lambda m: m.fft.fftfreq(5, out=m.empty(2, dtype=m.float64), dtype=m.float32),
    lambda m: m.fft.rfftfreq(5, out=m.empty(2, dtype=m.int64)),
])
def test_frequency_errors_as_torch(call):
    _same_error(call)


def test_frequencies_into_out_resized_with_a_warning():
    for m in (engine, torch):
        out = m.empty(3, dtype=m.float64)
        with pytest.warns(UserWarning, match="does not match the computed number of elements 10"):
            assert m.fft.fftfreq(10, 0.5, out=out) is out
        assert out.shape == (10,) and abs(float(out[6]) + 0.8) < 1e-12


@pytest.mark.parametrize("call", [
    lambda m: m.fft.fftshift(m.tensor(1.0)),
    lambda m: m.fft.ifftshift(m.ones(3, 4), dim=()),
    lambda m: m.fft.fftshift(m.tensor(1.0), dim=[-1, 0]),
    lambda m: m.fft.ifftshift(m.ones(3), dim=-2),
])
def test_shift_errors_as_torch(call):
    _same_error(call)


# ---- stft / istft -----------------------------------------------------------------------------------------
def test_stft_aligned_to_the_window():
    x, w = _rand(2, 21), _RNG.random(5) + 0.5
    kwargs = dict(hop_length=3, win_length=5, center=False, align_to_window=True, return_complex=True)
    check_op(lambda s, v: engine.stft(s, 9, window=v, **kwargs), lambda s, v: torch.stft(s, 9, window=v, **kwargs),
             [x, w], rtol=1e-10)


def test_stft_of_a_real_signal_by_a_complex_window():  # complex without return_complex, as torch
    x, w = _rand(17), (_RNG.random(6) + 0.5 + 0.3j * _RNG.random(6))
    check_op(lambda s, v: engine.stft(s, 6, window=v, hop_length=2), lambda s, v: torch.stft(s, 6, window=v,
             hop_length=2), [x, w], rtol=1e-10)


def _window(m, length, dtype=np.float64):
    return m.from_numpy((np.linspace(0.5, 1.5, length)).astype(dtype))


STFT_ERRORS = [
    lambda m: m.stft(m.from_numpy(_rand(20)).long(), 8, return_complex=True),
    lambda m: m.stft(m.from_numpy(_rand(20)), 30, win_length=5, center=False, return_complex=True),
    lambda m: m.stft(m.from_numpy(_rand(20, complex_=True)), 3, center=False),
    lambda m: m.stft(m.from_numpy(_rand(2, 2, 20)), 3, return_complex=True),
    lambda m: m.stft(m.from_numpy(_rand(20)), 8, window=_window(m, 8).reshape(2, 4), return_complex=True),
    lambda m: m.stft(m.from_numpy(_rand(3, 20)), 8, window=_window(m, 6), win_length=9, return_complex=False),
    lambda m: m.stft(m.from_numpy(_rand(20)).half(), 8, window=_window(m, 8).half(), return_complex=True),
    lambda m: m.stft(m.from_numpy(_rand(20)), 8, window=_window(m, 8), center=True, align_to_window=False,
                     return_complex=True),
]


@pytest.mark.parametrize("call", STFT_ERRORS)
def test_stft_errors_as_torch(call):
    _same_error(call)


def test_stft_deprecation_warning_as_torch():
    with pytest.warns(UserWarning, match="stft with return_complex=False is deprecated. In a future pytorch"):
        engine.stft(engine.from_numpy(_rand(20)), 8, window=_window(engine, 8), return_complex=False)


ISTFT_ERRORS = [
    lambda m: m.istft(m.from_numpy(_rand(3, 2, complex_=True)), 4, hop_length=3, win_length=2),
    lambda m: m.istft(m.from_numpy(_rand(3, 2, complex_=True)), 4, win_length=5),
    lambda m: m.istft(m.from_numpy(_rand(3, 0, complex_=True)), 4, window=_window(m, 4)),
    lambda m: m.istft(m.from_numpy(_rand(3, complex_=True)), 4, window=_window(m, 4)),
    lambda m: m.istft(m.from_numpy(_rand(2, 3, 3, 5, complex_=True)), 4, window=_window(m, 4)),
    lambda m: m.istft(m.from_numpy(_rand(3, 5, complex_=True)), 4, window=_window(m, 5)),
    lambda m: m.istft(m.from_numpy(_rand(5, 5, complex_=True)), 4, window=_window(m, 4)),
    lambda m: m.istft(m.from_numpy(_rand(2, 2, complex_=True)), 3, hop_length=3, window=m.hann_window(3)),
    lambda m: m.istft(m.from_numpy(_rand(4, 5, complex_=True)), 4, window=_window(m, 4) * (1 + 1j)),
]


@pytest.mark.parametrize("call", ISTFT_ERRORS)
def test_istft_errors_as_torch(call):
    _same_error(call)


def test_istft_warns_of_a_missing_window():
    with pytest.warns(UserWarning, match="A window was not provided. A rectangular window will be applied.Please"):
        engine.istft(engine.from_numpy(_rand(5, 6, complex_=True)), 8, hop_length=2)


# ---- window functions ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,args,dtype", [("hamming_window", (2, False), "bfloat16"),
                                             ("blackman_window", (100, False), "float16")])  # the second a guard
def test_windows_in_half_types_as_torch(name, args, dtype):
    _same_result(lambda m: getattr(m, name)(*args, dtype=getattr(m, dtype)), rtol=1e-2)


@pytest.mark.parametrize("call", [
    lambda m: m.hann_window(1, dtype=m.complex64),
    lambda m: m.kaiser_window(0, dtype=m.complex128),
    lambda m: m.signal.windows.exponential(1, center=2.0, sym=False),
    lambda m: m.signal.windows.general_cosine(1, a=[]),
    lambda m: m.signal.windows.general_cosine(5, a=(c for c in [0.5, 0.3, 0.2])),
])
def test_windows_torch_gives(call):
    _same_result(call, rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m: m.hamming_window(4, dtype=m.complex64),
    lambda m: m.bartlett_window(5, dtype=m.int64),
    lambda m: m.hann_window(-1, dtype=m.int32),
    lambda m: m.signal.windows.exponential(-1, tau=-1.0),
    lambda m: m.signal.windows.gaussian(-2, std=0.0),
])
def test_window_errors_as_torch(call):
    _same_error(call)


@pytest.mark.parametrize("name,kwargs", [("kaiser", {"beta": -1.0}), ("exponential", {"tau": 0.0}),
                                         ("general_cosine", {"a": 0.5})])
def test_window_dtype_checked_first(name, kwargs):  # torch's message names its dtype as torch.int64
    with pytest.raises(ValueError, match=f"^{name} expects float32 or float64 dtypes, got: engine.int64$"):
        getattr(engine.signal.windows, name)(8, dtype=engine.int64, **kwargs)


def test_on_cuda(cuda):
    x = _rand(3, 4, 5, 6)
    check_op(lambda t: engine.fft.rfftn(t.contiguous(memory_format=engine.channels_last), dim=[2, 1], s=[7, 4]),
             lambda t: torch.fft.rfftn(t.contiguous(memory_format=torch.channels_last), dim=[2, 1], s=[7, 4]), [x],
             rtol=1e-10, device="cuda")
    ours = engine.fft.fftfreq(7, 0.3, dtype=engine.float16, device="cuda")
    assert ours.device.type == "cuda"
    np.testing.assert_array_equal(ours.cpu().float().numpy(), torch.fft.fftfreq(7, 0.3, dtype=torch.float16).float())
    for window in (engine.hann_window(9, dtype=engine.bfloat16, device="cuda"),
                   engine.kaiser_window(9, beta=5.0, device="cuda"),
                   engine.signal.windows.exponential(1, center=2.0, sym=False, device="cuda")):
        assert window.device.type == "cuda"
    signal, window = _rand(2, 21), _RNG.random(5) + 0.5
    kwargs = dict(hop_length=3, win_length=5, center=False, align_to_window=True, return_complex=True)
    check_op(lambda s, v: engine.stft(s, 9, window=v, **kwargs), lambda s, v: torch.stft(s, 9, window=v, **kwargs),
             [signal, window], rtol=1e-10, device="cuda")
    spectrum = _rand(5, 6, complex_=True)
    check_op(lambda z, v: engine.istft(z, 8, hop_length=2, win_length=5, window=v),
             lambda z, v: torch.istft(z, 8, hop_length=2, win_length=5, window=v), [spectrum, window], rtol=1e-10,
             device="cuda")
