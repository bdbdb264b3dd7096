"""``stft`` and ``istft``: short-time Fourier transforms as torch computes them, composed of differentiable ops
(reflect padding, framing by ``unfold``, a window, ``fft.rfft`` / ``fft.fft``; and back through ``irfft`` /
``ifft``, overlap-add by ``index_add`` and the window envelope), so the gradients of the signal and of the window
come from theirs.

``return_complex`` must be given for real inputs, as torch requires; ``return_complex=False`` gives the
deprecated ``view_as_real`` layout with torch's warning.
"""
import warnings

from .. import fft as _fft
from ..tensor import register_method
from .complex_views import view_as_real
from ..amp import autocast_mode

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied, which is known to cause spectral "
              "leakage. Pass window=engine.ones(n_fft) to use a rectangular window without this warning.")


def _window(window, n_fft, win_length, like, call):
    """The window padded with zeros on both sides to ``n_fft`` (torch centres a shorter window)."""
    from .creation import ones
    from ..nn.functional import pad
    if window is None:
        window = ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{call}expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(n_fft, hop_length, win_length, call):
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if hop_length <= 0:
        raise RuntimeError(f"{call}expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{call}expected 0 < win_length <= n_fft, but got win_length={win_length}")
    return hop_length, win_length


@autocast_mode.float32("cpu")
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform of a signal (``L``) or a batch (``B, L``): ``(B,) n_freq, n_frames``
    complex, frames ``hop_length`` apart, each ``n_fft`` samples times ``window``."""
    call = "stft: "
    if return_complex is None and not input.is_complex():
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{call}expected a 1D or 2D tensor")
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=2)
    hop_length, win_length = _lengths(n_fft, hop_length, win_length, call)
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if center:
        from ..nn.functional import pad
        x = pad(x.unsqueeze(1), (n_fft // 2, n_fft // 2), mode=pad_mode).squeeze(1)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"{call}expected 0 < n_fft < {x.shape[-1]}, but got n_fft={n_fft}")
    win = _window(window, n_fft, win_length, input, call)
    one_sided = onesided if onesided is not None else not (input.is_complex() or win.is_complex())
    if one_sided and (input.is_complex() or win.is_complex()):
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    frames = x.unfold(-1, n_fft, hop_length) * win
    spectrum = (_fft.rfft if one_sided else _fft.fft)(frames, norm="ortho" if normalized else "backward")
    spectrum = spectrum.transpose(-1, -2)
    if input.ndim == 1:
        spectrum = spectrum.squeeze(0)
    if return_complex is False:
        warnings.warn("stft with return_complex=False is deprecated: use view_as_real on the complex result",
                      UserWarning, stacklevel=2)
        return view_as_real(spectrum)
    return spectrum


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The signal whose ``stft`` (same arguments) is ``input``: the frames' inverse transforms, windowed,
    overlap-added and divided by the overlap-added squared window."""
    call = "istft: "
    if not input.is_complex():
        raise TypeError("istft requires a complex-valued input tensor matching the output from stft with "
                        "return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{call}expected a tensor with 2 or 3 dimensions of complex dtype")
    hop_length, win_length = _lengths(n_fft, hop_length, win_length, call)
    spectrum = input if input.ndim == 3 else input.unsqueeze(0)
    n_freq, n_frames = spectrum.shape[-2], spectrum.shape[-1]
    one_sided = onesided if onesided is not None else n_freq != n_fft
    if one_sided and return_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    if one_sided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(f"{call}expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    win = _window(window, n_fft, win_length, input.real, call)
    frames = spectrum.transpose(-1, -2)
    norm = "ortho" if normalized else "backward"
    if not one_sided and not return_complex:  # a real signal: torch reads only the first half, as a one-sided one
        frames, one_sided = frames[..., :n_fft // 2 + 1], True
    frames = _fft.irfft(frames, n=n_fft, norm=norm) if one_sided else _fft.ifft(frames, norm=norm)
    frames = frames * win
    total = n_fft + hop_length * (n_frames - 1)
    signal = _overlap_add(frames, total, hop_length)
    envelope = _overlap_add((win * win).expand(n_frames, n_fft).unsqueeze(0), total, hop_length)[0]
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0)
    if length is not None:
        end = start + length
    end = min(end, total)
    signal, envelope = signal[:, start:end], envelope[start:end]
    if float(envelope.abs().min()) < 1e-11:
        raise RuntimeError(f"{call}window overlap add min: {float(envelope.abs().min()):g}")
    signal = signal / envelope
    if length is not None and signal.shape[-1] < length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with "
                      "zeros in the tail. Please check your center and hop_length settings.", UserWarning,
                      stacklevel=2)
        from ..nn.functional import pad
        signal = pad(signal, (0, length - signal.shape[-1]))
    return signal if input.ndim == 3 else signal.squeeze(0)


def _overlap_add(frames, total, hop_length):
    """Sum frames (``B, n_frames, n_fft``) into a signal of ``total`` samples, frame ``t`` from ``t * hop``."""
    from .creation import zeros
    from .ranges import arange
    batch, n_frames, n_fft = frames.shape
    positions = (arange(n_frames, device=frames.device) * hop_length).unsqueeze(1) + arange(n_fft, device=frames.device)
    out = zeros(batch, total, dtype=frames.dtype, device=frames.device)
    return out.index_add(1, positions.reshape(-1), frames.reshape(batch, n_frames * n_fft))


register_method(stft, "stft")
register_method(istft, "istft")
__all__ = ["stft", "istft"]
