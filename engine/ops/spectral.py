"""``stft`` and ``istft``: short-time Fourier transforms as torch computes them, composed of differentiable ops
(reflect padding, framing by ``unfold``, a window, ``fft.rfft`` / ``fft.fft``; and back through ``irfft`` /
``ifft``, overlap-add by ``index_add`` and the window envelope), so the gradients of the signal and of the window
come from theirs.

``return_complex`` must be given for real inputs and windows, as torch requires; ``return_complex=False`` gives the
deprecated ``view_as_real`` layout with torch's warning. The arguments are checked in torch's order, with torch's
messages (most print the call, as torch's C++ prints it: ``stft(torch.FloatTensor[28], n_fft=8, ...) : ...``).
"""
import warnings

from .. import fft as _fft
from ..tensor import register_method
from .complex_views import view_as_real
from ..amp import autocast_mode

_NO_WINDOW = ("A window was not provided. A rectangular window will be applied,which is known to cause spectral "
              "leakage. Other windows such as engine.hann_window or engine.hamming_window are recommended to reduce "
              "spectral leakage.To suppress this warning and use a rectangular window, explicitly set "
              "`window=engine.ones(n_fft, device=<device>)`.")
_NO_WINDOW_TO_INVERT = ("A window was not provided. A rectangular window will be applied.Please provide the same "
                        "window used by stft to make the inversion lossless.To suppress this warning and use a "
                        "rectangular window, explicitly set `window=engine.ones(n_fft, device=<device>)`.")
_REAL_LAYOUT = ("stft with return_complex=False is deprecated. In a future pytorch release, stft will return complex "
                "tensors for all inputs, and return_complex=False will raise an error.\nNote: you can still call "
                "torch.view_as_real on the complex output to recover the old return format.")
#: the legacy type names torch's messages give tensors of these dtypes (``torch.FloatTensor``); others are named
#: ``CPU<dtype>Type``
_LEGACY_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
                 "int16": "Short", "int8": "Char", "uint8": "Byte"}


def _type_name(t):
    """A tensor's type as torch's C++ ``toString`` prints it in messages."""
    cuda = t.device.type == "cuda"
    legacy = _LEGACY_NAMES.get(t.dtype.name)
    if legacy is not None:
        return f"torch.{'cuda.' if cuda else ''}{legacy}Tensor"
    return f"{'CUDA' if cuda else 'CPU'}{t.dtype.title}Type"


def _optional(value):
    return "None" if value is None else str(int(value))


def _call(name, input, n_fft, hop_length, win_length, window, normalized, onesided, *last):
    """The call as torch's messages print it before their complaint: ``stft(torch.FloatTensor[28], n_fft=8, ...) ``
    (``last``: the final arguments' names and values, optional ones)."""
    shown = "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"
    tail = "".join(f", {key}={_optional(value)}" for key, value in last)
    return (f"{name}({_type_name(input)}{list(input.shape)}, n_fft={n_fft}, hop_length={hop_length}, "
            f"win_length={win_length}, window={shown}, normalized={int(normalized)}, onesided={_optional(onesided)}"
            f"{tail}) ")


def _centred_window(window, n_fft, win_length, like):
    """The window padded with zeros on both sides to ``n_fft`` (torch centres a shorter window); a missing one is
    a rectangle of ``like``'s dtype, or nothing where it would span all ``n_fft``."""
    from .creation import ones
    from ..nn.functional import pad
    if window is None:
        if win_length == n_fft:
            return None
        window = ones(win_length, dtype=like.dtype, device=like.device)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = pad(window, (left, n_fft - win_length - left))
    return window


def _centre_padded(input, n_fft, pad_mode):
    """``input`` padded by ``n_fft // 2`` on both sides as torch's Python ``stft`` pads it, before any check (as a
    batch of one channel, so that every ``pad_mode`` applies)."""
    from ..nn.functional import pad
    signal_dim = input.ndim
    padded = pad(input.reshape([1] * (3 - signal_dim) + list(input.shape)), [n_fft // 2, n_fft // 2], pad_mode)
    return padded.reshape(padded.shape[-signal_dim:] if signal_dim else padded.shape)


def _refuse_half(frames):
    if frames.dtype.name in ("float16", "bfloat16", "complex32"):
        raise NotImplementedError(f"MKL FFT doesn't support tensors of type: {frames.dtype.title}")


@autocast_mode.float32("cpu")
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform of a signal (``L``) or a batch (``B, L``): ``(B,) n_freq, n_frames``
    complex, frames ``hop_length`` apart, each ``n_fft`` samples times ``window`` (``align_to_window``, without
    ``center``: frame ``t`` starts where its window starts, at ``t * hop_length``, rather than ``n_fft``
    samples' from there). Checked and computed in torch's order: the centre padding first, then the arguments
    (the messages print the call)."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        input = _centre_padded(input, n_fft, pad_mode)
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    call = _call("stft", input, n_fft, hop_length, win_length, window, normalized, onesided,
                 ("return_complex", return_complex), ("align_to_window", align_to_window))
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=2)
    complex_result = input.is_complex() or (window is not None and window.is_complex())
    if not (complex_result if return_complex is None else return_complex):
        if return_complex is None:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                               "require that return_complex=True in a future PyTorch release.")
        warnings.warn(_REAL_LAYOUT, UserWarning, stacklevel=2)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f"{call}: expected a tensor of floating point or complex values")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{call}: expected a 1D or 2D tensor")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if not 0 < n_fft <= x.shape[1]:
        raise RuntimeError(f"{call}: expected 0 < n_fft < {x.shape[1]}, but got n_fft={win_length}")
    if hop_length <= 0:
        raise RuntimeError(f"{call}: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{call}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{call}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    win = _centred_window(window, n_fft, win_length, input)
    if align_to_window and win_length < n_fft:
        from ..nn.functional import pad
        left = (n_fft - win_length) // 2
        x = pad(x, (left, n_fft - win_length - left))
    frames = x.unfold(-1, n_fft, hop_length)
    frames = frames if win is None else frames * win
    one_sided = not frames.is_complex() if onesided is None else onesided
    if one_sided and frames.is_complex():
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    _refuse_half(frames)
    norm = "ortho" if normalized else "backward"
    spectrum = (_fft.rfft if one_sided else _fft.fft)(frames, norm=norm).transpose(-1, -2)
    if input.ndim == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if (complex_result if return_complex is None else return_complex) else view_as_real(spectrum)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """The signal whose ``stft`` (same arguments) is ``input``: the frames' inverse transforms, windowed,
    overlap-added and divided by the overlap-added squared window; checked in torch's order, its messages
    printing the call."""
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    if not input.is_complex():
        raise TypeError("istft requires a complex-valued input tensor matching the output from stft with "
                        "return_complex=True.")
    as_real_dims = input.ndim + 1  # torch reads the sizes off view_as_real(input)
    if as_real_dims < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-as_real_dims}, {as_real_dims - 1}], "
                         f"but got {-as_real_dims - 1})")
    call = _call("istft", input, n_fft, hop_length, win_length, window, normalized, onesided,
                 ("length", length), ("return_complex", return_complex))
    call = call.replace(", normalized=", f", center={int(center)}, normalized=")
    if input.numel() == 0:
        raise RuntimeError(f"{call}: input tensor cannot be empty.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{call}: expected a tensor with 3 or 4 dimensions, but got {as_real_dims}")
    n_freq, n_frames = input.shape[-2], input.shape[-1]
    one_sided = n_freq != n_fft if onesided is None else onesided
    if n_freq != (n_fft // 2 + 1 if one_sided else n_fft):
        expected = "n_fft / 2 + 1 when onesided=True" if one_sided else "n_fft when onesided=False"
        raise RuntimeError(f"{call}: expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"{expected}, but got {n_freq}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError(f"{call}: expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{call}: expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{call}: Invalid window shape. window has to be 1D and length of `win_length`")
    from .creation import ones
    if window is None:
        warnings.warn(_NO_WINDOW_TO_INVERT, UserWarning, stacklevel=2)
    win = ones(win_length, dtype=input.dtype.to_real(), device=input.device) if window is None else window
    win = _centred_window(win, n_fft, win_length, input)
    frames = (input if input.ndim == 3 else input.unsqueeze(0)).transpose(-1, -2)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if one_sided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _fft.ifft(frames, norm=norm)
    else:
        if win.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        frames = _fft.irfft(frames[..., :n_fft // 2 + 1], n=n_fft, norm=norm)
    frames = frames * win
    total = n_fft + hop_length * (n_frames - 1)
    signal = _overlap_add(frames, total, hop_length)
    envelope = _overlap_add((win * win).expand(1, n_frames, n_fft), total, hop_length)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else -(n_fft // 2) if center else total
    signal, envelope = signal[:, start:end], envelope[:, start:end]
    if bool((envelope.abs().min() < 1e-11).item()):  # torch prints the comparison's value (its first line here)
        raise RuntimeError(f"{call}window overlap add min: 1")
    signal = signal / envelope
    if input.ndim == 2:
        signal = signal.squeeze(0)
    if end > total:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with "
                      "zeros in the tail. Please check your center and hop_length settings.", UserWarning,
                      stacklevel=2)
        from ..nn.functional import pad
        signal = pad(signal, (0, end - total))
    return signal


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
