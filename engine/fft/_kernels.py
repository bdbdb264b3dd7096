"""The three kinds of discrete Fourier transform as differentiable ops, on numpy.fft or cupy.fft (``xp.fft``):
complex to complex (``fftn`` / ``ifftn``), real to half-spectrum (``rfftn``) and half-spectrum to real
(``irfftn``). Each pads or crops its input to the signal sizes ``sizes`` along ``axes`` first, as torch's ``s=``,
and lays its result out in memory in ``order`` where one is given (torch's layout: ``_result_layout``).

Every transform is linear, so its gradient is its adjoint applied to the output gradient (complex_grad's
convention): the transform in the other direction under the dual norm (unscaled <-> scaled by 1/n, ortho <->
ortho), cropped or padded back to the input's sizes. The real transforms add torch's Hermitian corrections:
``rfftn`` sends a half spectrum's gradient back as the full spectrum with zeros in the dropped half (real part);
``irfftn`` counts twice the bins that stand for two (a bin and its mirrored conjugate).
"""
from .._device import array_module
from .._layout import empty_ordered
from ..autograd.function import Function
from ..ops.complex_grad import real_parts
from ..ops.complex_views import real

#: the norm whose transform in the other direction is the adjoint of a transform under this one
DUAL_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def fit(x, axes, sizes):
    """``x`` cropped or zero-padded at the end of each of ``axes`` to ``sizes``."""
    if all(x.shape[a] == n for a, n in zip(axes, sizes)):
        return x
    xp = array_module(x)
    shape = list(x.shape)
    for a, n in zip(axes, sizes):
        shape[a] = n
    out = xp.zeros(shape, x.dtype)
    common = [slice(None)] * x.ndim
    for a, n in zip(axes, sizes):
        common[a] = slice(0, min(n, x.shape[a]))
    out[tuple(common)] = x[tuple(common)]
    return out


def fit_tensor(x, axes, sizes):
    """``fit`` with engine ops (slices, and ``cat`` with zeros), for the differentiable backwards."""
    from ..ops.shape import cat
    for a, n in zip(axes, sizes):
        if x.shape[a] > n:
            x = x.narrow(a, 0, n)
        elif x.shape[a] < n:
            shape = list(x.shape)
            shape[a] = n - x.shape[a]
            x = cat([x, x.new_zeros(shape)], a)
    return x


class _Transform(Function):
    uses_inputs = False

    def __init__(self, axes, sizes, norm, order=None):
        self.axes, self.sizes, self.norm, self.order = tuple(axes), tuple(sizes), norm, order

    def _laid_out(self, result):
        """``result`` with its dims in memory in ``order`` (outermost first; torch's layout), where one is given."""
        if self.order is None:
            return result
        xp = array_module(result)
        out = empty_ordered(result.shape, self.order, result.dtype, xp)
        if out.strides == result.strides:
            return result
        out[...] = result
        return out

    def _back_to_input(self, g):
        """Gradient ``g`` over the transform's signal, cropped or padded back to the input's sizes."""
        return fit(g, self.axes, [self.input_shape[a] for a in self.axes])

    def _tensor_back_to_input(self, g):
        return fit_tensor(g, self.axes, [self.input_shape[a] for a in self.axes])


class FFTC2C(_Transform):
    """``fftn`` (``forward``) or ``ifftn`` of a complex (or real) input."""

    def __init__(self, axes, sizes, norm, forward, order=None):
        super().__init__(axes, sizes, norm, order)
        self.forward_direction = forward

    def forward(self, x):
        self.input_shape = x.shape
        fft = array_module(x).fft
        transform = fft.fftn if self.forward_direction else fft.ifftn
        return self._laid_out(transform(x, s=self.sizes, axes=self.axes, norm=self.norm))

    def backward(self, g):
        fft = array_module(g).fft
        adjoint = fft.ifftn if self.forward_direction else fft.fftn
        return real_parts(self, self._back_to_input(adjoint(g, axes=self.axes, norm=DUAL_NORM[self.norm])))

    def backward_tensors(self, g):
        adjoint = FFTC2C(self.axes, [g.shape[a] for a in self.axes], DUAL_NORM[self.norm], not self.forward_direction)
        grad = self._tensor_back_to_input(adjoint(g))
        return grad if self.input_meta[0][1].kind == "c" else real(grad)


class FFTR2C(_Transform):
    """``rfftn``: the half spectrum (last axis ``n // 2 + 1`` long) of a real input."""

    def forward(self, x):
        self.input_shape = x.shape
        return self._laid_out(array_module(x).fft.rfftn(x, s=self.sizes, axes=self.axes, norm=self.norm))

    def backward(self, g):
        xp = array_module(g)
        full_shape = list(g.shape)
        full_shape[self.axes[-1]] = self.sizes[-1]
        full = xp.zeros(full_shape, g.dtype)
        half = [slice(None)] * g.ndim
        half[self.axes[-1]] = slice(0, g.shape[self.axes[-1]])
        full[tuple(half)] = g
        signal = xp.fft.ifftn(full, axes=self.axes, norm=DUAL_NORM[self.norm]).real
        return self._back_to_input(signal)

    def backward_tensors(self, g):
        full = fit_tensor(g, self.axes[-1:], self.sizes[-1:])
        sizes = [full.shape[a] for a in self.axes]
        return self._tensor_back_to_input(real(FFTC2C(self.axes, sizes, DUAL_NORM[self.norm], False)(full)))


class FFTC2R(_Transform):
    """``irfftn``: the real signal (last axis ``sizes[-1]`` long) of a half spectrum."""

    def forward(self, x):
        self.input_shape = x.shape
        # the half spectrum padded here: numpy's irfft pads an empty one with garbage, not zeros (numpy 2.4)
        half = self.sizes[:-1] + (self.sizes[-1] // 2 + 1,)
        x = fit(x, self.axes, half)
        return self._laid_out(array_module(x).fft.irfftn(x, s=self.sizes, axes=self.axes, norm=self.norm))

    def backward(self, g):
        xp = array_module(g)
        spectrum = xp.fft.rfftn(g, axes=self.axes, norm=DUAL_NORM[self.norm])
        last, n = self.axes[-1], self.sizes[-1]
        twice = [slice(None)] * g.ndim
        twice[last] = slice(1, n - (n // 2 + 1) + 1)  # the bins whose mirrored conjugates the output also holds
        spectrum[tuple(twice)] *= 2
        return self._back_to_input(spectrum)

    def backward_tensors(self, g):
        from ..tensor import _new
        spectrum = FFTR2C(self.axes, [g.shape[a] for a in self.axes], DUAL_NORM[self.norm])(g)
        last, n = self.axes[-1], self.sizes[-1]
        weights = array_module(g._data).ones(spectrum.shape[last], g._data.dtype)
        weights[1:n - (n // 2 + 1) + 1] = 2
        weights = weights.reshape((-1,) + (1,) * (g.ndim - 1 - last))
        return self._tensor_back_to_input(spectrum * _new(weights))
