"""stft and istft against torch: values and gradients of the signal and the window, every framing option,
round trips and torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.ops.spectral as spectral
from op_check import check_op


def _signal(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "A window was not provided")
        warnings.filterwarnings("ignore", "The length of signal is shorter")
        yield


@pytest.mark.parametrize("kwargs", [dict(n_fft=8), dict(n_fft=8, hop_length=3, win_length=7),
                                    dict(n_fft=9, hop_length=2, center=False),
                                    dict(n_fft=8, normalized=True, pad_mode="constant"),
                                    dict(n_fft=8, onesided=False)])
def test_stft(kwargs):
    check_op(lambda t: spectral.stft(t, return_complex=True, **kwargs),
             lambda t: torch.stft(t, return_complex=True, **kwargs), [_signal((2, 37))], rtol=1e-10)


def test_stft_window_gradient_and_float32_signal():
    x, window = _signal((37,)).astype(np.float32), np.random.default_rng(1).random(7).astype(np.float32) + 0.5
    check_op(lambda t, w: spectral.stft(t, 8, 3, 7, w, return_complex=True),
             lambda t, w: torch.stft(t, 8, 3, 7, w, return_complex=True), [x, window], rtol=1e-5)


def test_stft_of_a_complex_signal_and_the_real_layout():
    z = _signal((2, 20)) + 1j * _signal((2, 20), 1)
    check_op(lambda t: spectral.stft(t, 8, return_complex=True), lambda t: torch.stft(t, 8, return_complex=True), [z],
             rtol=1e-10)
    x = _signal((20,))
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        ours = spectral.stft(engine.tensor(x), 8, return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.stft(torch.tensor(x), 8, return_complex=False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(), dict(length=30), dict(length=45), dict(normalized=True)])
def test_istft(kwargs):
    window = torch.hann_window(8, dtype=torch.float64)
    spectrum = torch.stft(torch.tensor(_signal((2, 37))), 8, 2, window=window, return_complex=True).numpy()
    check_op(lambda s, w: spectral.istft(s, 8, 2, window=w, **kwargs),
             lambda s, w: torch.istft(s, 8, 2, window=w, **kwargs), [spectrum, window.numpy() + 0.1], rtol=1e-9)


def test_istft_two_sided_and_round_trip():
    x = engine.tensor(_signal((3, 40)))
    window = engine.tensor(torch.hann_window(16, dtype=torch.float64).numpy())
    spectrum = spectral.stft(x, 16, 4, window=window, onesided=False, return_complex=True)
    back = spectral.istft(spectrum, 16, 4, window=window, onesided=False, length=40)
    np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-10)
    check_op(lambda s: spectral.istft(s, 16, 4, onesided=False), lambda s: torch.istft(s, 16, 4, onesided=False),
             [spectrum.numpy()], rtol=1e-9)


def test_methods():
    x = engine.tensor(_signal((30,)))
    np.testing.assert_allclose(x.stft(8, return_complex=True).istft(8).numpy(), x.numpy(), atol=1e-10)


@pytest.mark.parametrize("call,error,message", [
    (lambda x: spectral.stft(x, 8), RuntimeError, "stft requires the return_complex parameter be given"),
    (lambda x: spectral.stft(x[None], 8, return_complex=True), RuntimeError, "expected a 1D or 2D tensor"),
    (lambda x: spectral.stft(x, 8, hop_length=0, return_complex=True), RuntimeError,
     "expected hop_length > 0, but got hop_length=0"),
    (lambda x: spectral.stft(x, 30, center=False, return_complex=True), RuntimeError,
     "expected 0 < n_fft < 20, but got n_fft=30"),
    (lambda x: spectral.stft(x, 8, win_length=9, return_complex=True), RuntimeError,
     "expected 0 < win_length <= n_fft, but got win_length=9"),
    (lambda x: spectral.stft(x, 8, window=engine.ones(5), return_complex=True), RuntimeError,
     r"expected a 1D window tensor of size equal to win_length=8, but got window with size \[5\]"),
    (lambda x: spectral.istft(x, 8), TypeError, "istft requires a complex-valued input tensor"),
    (lambda x: spectral.istft(spectral.stft(x, 8, window=engine.zeros(8), return_complex=True), 8,
                              window=engine.zeros(8)), RuntimeError, "window overlap add min"),
    (lambda x: spectral.istft(spectral.stft(x, 8, return_complex=True), 8, return_complex=True), RuntimeError,
     "Cannot have onesided output if window or input is complex"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(engine.tensor(_signal((2, 20))))


def test_on_cuda(cuda):
    check_op(lambda t: spectral.stft(t, 8, return_complex=True).abs(),
             lambda t: torch.stft(t, 8, return_complex=True).abs(), [_signal((2, 30)).astype(np.float32)],
             rtol=1e-5, device="cuda")
