"""Tensor creation: from data, filled, ranges and random (torch's CPU numbers, seeded through
``engine.manual_seed``)."""
import functools
import math
import numbers

import numpy as np

from .. import _dtype, _layout, backends
from .. import random as _random
from .._rng import bounds, continuous, discrete
from .._device import device_of, factory_device, move, xp_for
from ..autograd import grad_mode, tracing
from ..autograd.function import Function
from ..tensor import Tensor, _new, register_method, to_array
from ._common import shape_arg, xp_of
from .python_data import _python_data, _to_dtype_scalar
from .shape import over_root


def _finish(arr, dtype=None, device=None, requires_grad=False):
    if dtype is not None:
        arr = arr.astype(_dtype.to_dtype(dtype).np, copy=False)
    if device is not None:
        arr = move(arr, device)
    t = grad_mode.mark_inference(_new(arr))
    if requires_grad:
        if arr.dtype.kind in "biu":  # the factories' wording (requires_grad_'s own differs)
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def _checked_shape(size, what=None):
    """``size`` (varargs, a tuple, a list or a Size) as a shape, with torch's error for a negative dimension
    (``what``: the factory whose own wording differs, ``zeros``); a float size is refused as torch refuses it,
    where ``int`` would truncate it."""
    sizes = size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    for position, n in enumerate(sizes):
        if isinstance(n, (float, np.floating)):
            raise TypeError(f"{what + '(): ' if what else ''}argument 'size' must be tuple of ints, but found element "
                            f"of type float at pos {position}")
    shape = shape_arg(size)
    for n in shape:
        if n < 0:
            raise RuntimeError(f"{what}: Dimension size must be non-negative." if what else
                               f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    return shape



def _float(dtype):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return d


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (dtype inferred as PyTorch does)."""
    if isinstance(data, Tensor) or isinstance(data, np.ndarray):
        return _finish(to_array(data, dtype, factory_device(device)).copy(), requires_grad=requires_grad)
    return _finish(_python_data(data, dtype, factory_device(device)), requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with numpy arrays and tensors when it can."""
    device = factory_device(device)
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, np.ndarray):
        return grad_mode.mark_inference(_new(to_array(data, dtype, device)))
    return grad_mode.mark_inference(_new(_python_data(data, dtype, device)))



def from_numpy(ndarray):
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_numpy_dtype(ndarray.dtype)
    return _new(ndarray)


def _filled(fill, size, dtype, device, requires_grad, default=None, what=None):
    d = _dtype.to_dtype(dtype) if dtype is not None else (default or _dtype.get_default_dtype())
    xp = xp_for(factory_device(device) or "cpu")
    shape = _checked_shape(size, what)
    if fill is not None:
        fill = _to_dtype_scalar(fill, d.np, math.prod(shape) == 1)
    arr = xp.empty(shape, d.np) if fill is None else xp.full(shape, fill, d.np)
    return _finish(arr, requires_grad=requires_grad)


def _sizes(positional, size):
    """A factory's size as varargs (or one sequence) or, as torch also takes it, the keyword ``size``."""
    if size is None:
        return positional
    if positional:
        raise TypeError("got multiple values for argument 'size'")
    return (size,)


def zeros(*sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None):
    return _filled(0, _sizes(sizes, size), dtype, device, requires_grad, what="zeros")


def ones(*sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None):
    return _filled(1, _sizes(sizes, size), dtype, device, requires_grad)


def empty(*sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None,
          memory_format=None, pin_memory=False):
    """An uninitialised tensor, laid out in ``memory_format`` (row-major by default, or channels-last)."""
    result = _filled(None, _sizes(sizes, size), dtype, device, requires_grad)
    if memory_format is None or memory_format is _layout.contiguous_format:
        return result
    if memory_format is _layout.preserve_format:
        raise RuntimeError("unsupported memory format Preserve")
    result._data = _layout.empty_in_format(result._data, memory_format, xp_of(result._data), result._data.dtype)
    return result


def full(size, fill_value, dtype=None, device=None, requires_grad=False, layout=None):
    default = None
    if dtype is None and not isinstance(fill_value, Tensor):
        default = _dtype.scalar_dtype(fill_value)
    elif dtype is None and fill_value.ndim == 0:  # torch reads a 0-dim tensor as the Python scalar it holds
        default = _dtype.scalar_dtype(fill_value.item())
    return _filled(fill_value, (size,), dtype, device, requires_grad, default=default)


class FilledLike(Function):
    """``zeros_like`` and kin of a tensor that a trace computed, as a recorded op: replays and exports then
    give it the size of that run's tensor (a number of detections), not the traced size."""

    uses_inputs = False

    def __init__(self, fill, dtype):
        self.fill, self.dtype = fill, dtype

    def forward(self, x):
        fill = 0 if self.fill is None else _to_dtype_scalar(self.fill, self.dtype, x.size == 1)
        return xp_of(x).full(x.shape, fill, self.dtype)


def _like(fill, input, dtype, device, requires_grad, memory_format):
    """``zeros_like`` and kin: laid out as torch lays out its ``*_like`` results (``memory_format``, by default the
    input's own dense layout), so that what fills them in memory order (``bernoulli_``) fills the same elements."""
    tracer = tracing.active
    if (tracer is not None and device is None and not requires_grad and tracer.is_traced(input)
            and not (input.requires_grad and grad_mode.is_grad_enabled())):
        return FilledLike(fill, _dtype.to_dtype(dtype or input.dtype).np)(input)
    data, d = input._data, _dtype.to_dtype(dtype or input.dtype)
    strides = _dense_strides(data) if memory_format in (None, _layout.preserve_format) else None
    if strides == _layout.contiguous_strides(data.shape) or strides is None and data.flags.c_contiguous and memory_format in (
            None, _layout.preserve_format, _layout.contiguous_format):
        return _filled(fill, (tuple(input.shape),), d, device or input.device, requires_grad)
    arr = _empty_laid_out(data, memory_format, xp_of(data), d.np)
    if fill is not None:
        arr[...] = _to_dtype_scalar(fill, d.np, arr.size == 1)
    return _finish(arr, device=device, requires_grad=requires_grad)


def _empty_laid_out(data, memory_format, xp, np_dtype):
    """An uninitialised array of ``data``'s shape laid out as torch lays out a ``*_like`` result: a dense input's
    own strides (size-1 dimensions' too) unless ``memory_format`` says otherwise, else that format or the one
    torch suggests."""
    strides = _dense_strides(data) if memory_format in (None, _layout.preserve_format) else None
    if strides is None:
        return _layout.empty_in_format(data, memory_format, xp, np_dtype)
    itemsize = np.dtype(np_dtype).itemsize
    return xp.lib.stride_tricks.as_strided(xp.empty(data.size, np_dtype), data.shape,
                                           tuple(s * itemsize for s in strides))


def _dense_strides(array):
    """The element strides of an array that is dense in some order with none negative (which ``*_like`` keeps in
    its result, as torch does), else None."""
    strides = tuple(s // array.itemsize for s in array.strides)
    if array.size == 0 or min(strides, default=0) < 0 or not _layout.is_dense(array):
        return None
    return strides


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _like(0, input, dtype, device, requires_grad, memory_format)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _like(1, input, dtype, device, requires_grad, memory_format)


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _like(None, input, dtype, device, requires_grad, memory_format)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(fill_value, input, dtype, device, requires_grad, memory_format)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    for name, value in (("n", n), ("m", m)):
        if value is not None and value < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    xp = xp_for(factory_device(device) or "cpu")
    return _finish(xp.eye(n, m, dtype=_float(dtype).np), requires_grad=requires_grad)


# ---- random --------------------------------------------------------------------------------
# On the CPU every sampler reproduces torch's kernel for the same generator state (engine._rng); on a
# GPU, numbers are drawn there by CuPy's generator (seeded, but not torch's numbers).
def _host_fill(fill, array, generator):
    fill(_random.generator_or_default(generator), array)
    return array


class _RandomFill(Function):
    """A random fill of a tensor in place (``draw(array)``), recorded as an op while ``nn.Graph`` traces, so
    that each replay draws new numbers (a tensor filled at trace time would be a constant of the graph)."""

    inplace = True
    uses_inputs = False

    def forward(self, x):
        self.draw(x)
        return x


def _traced_fill(tensor, fill, device_sample, generator):
    """``tensor`` filled by the samplers through a recorded ``_RandomFill`` (inside an nn.Graph trace)."""
    fn = _RandomFill()
    fn.draw = functools.partial(_fill_array, fill=fill, device_sample=device_sample, generator=generator)
    return fn(tensor)


def _drawn_as(np_dtype):
    """The dtype a GPU generator draws for ``np_dtype``: float32 for float16 and bfloat16, which it rounds to."""
    return np.dtype(np.float32) if np_dtype in _dtype.HALF_NP else np_dtype


def _fill_array(array, fill, device_sample, generator):
    """Fill ``array`` in place: ``fill(generator, array)`` on the CPU (in torch's order), or
    ``device_sample(state, shape, dtype)`` on a GPU."""
    device = device_of(array)
    state = _random.device_rng(device, generator)
    if state is not None:
        array[...] = device_sample(state, array.shape, _drawn_as(array.dtype)).astype(array.dtype, copy=False)
    elif device.type == "cpu":
        _host_fill(fill, array, generator)
    else:
        array[...] = move(_host_fill(fill, np.empty(array.shape, array.dtype), generator), device)


def _sampled(fill, device_sample, shape, d, device, requires_grad, generator, like=None):
    """A new ``d`` tensor of ``shape`` filled by ``fill(generator, array)`` on the host, or by
    ``device_sample(state, shape, dtype)`` on a GPU. ``like``: a host array whose layout (and so
    fill order) the result takes, as torch's ``*_like`` functions do."""
    device = factory_device(device)
    if tracing.active is not None:
        array = np.empty(shape, d.np) if like is None else _empty_laid_out(like, None, np, d.np)
        result = _traced_fill(_finish(array, device=device), fill, device_sample, generator)
        return result.requires_grad_(requires_grad) if requires_grad else result
    state = _random.device_rng(device, generator)
    if state is not None:
        array = device_sample(state, shape, _drawn_as(d.np)).astype(d.np, copy=False)
        return grad_mode.mark_inference(_new(array, requires_grad))
    array = np.empty(shape, d.np) if like is None else _empty_laid_out(like, None, np, d.np)
    return _finish(_host_fill(fill, array, generator), device=device, requires_grad=requires_grad)


def _layout_of(input, device, memory_format=None):
    """The host array whose layout a ``*_like`` result takes (None on a GPU): the input's, or an empty one laid
    out in ``memory_format``."""
    target = device or input.device
    if input.device.type != "cpu" or _random.device_rng(target) is not None:
        return None
    if memory_format in (None, _layout.preserve_format):
        return input._data
    return _layout.empty_in_format(input._data, memory_format, np, np.uint8)


def _complex_samples(sample, shape, d, scale, device, requires_grad, generator):
    """Complex samples as torch draws them: (real, imaginary) pairs of ``d``'s real type from ``sample`` (rand or
    randn), each part scaled by ``scale`` (randn's 1/sqrt(2), for unit variance in all)."""
    from .complex_views import view_as_complex
    pairs = sample(*shape, 2, generator=generator, dtype=d.to_real(), device=device)
    z = view_as_complex(pairs * scale if scale != 1 else pairs)
    return z.requires_grad_(requires_grad) if requires_grad else z


def rand(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples on [0, 1) (each part of a complex sample)."""
    size = _sizes(sizes, size)
    if _float(dtype).is_complex:
        return _complex_samples(rand, _checked_shape(size), _float(dtype), 1, device, requires_grad, generator)
    return _sampled(lambda g, a: continuous.uniform_(g, a, 0.0, 1.0),
                    lambda state, s, d: state.random_sample(s, dtype=d),
                    _checked_shape(size), _float(dtype), device, requires_grad, generator)


def randn(*sizes, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples (complex: parts of variance 1/2 each)."""
    size = _sizes(sizes, size)
    if _float(dtype).is_complex:
        return _complex_samples(randn, _checked_shape(size), _float(dtype), 0.5 ** 0.5, device, requires_grad,
                                generator)
    return _sampled(lambda g, a: continuous.normal_(g, a, 0.0, 1.0),
                    lambda state, s, d: state.standard_normal(s, dtype=d),
                    _checked_shape(size), _float(dtype), device, requires_grad, generator)


def rand_like(input, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None):
    if _dtype.to_dtype(dtype or input.dtype).is_complex:
        return rand(*input.shape, generator=generator, dtype=dtype or input.dtype, device=device or input.device,
                    requires_grad=requires_grad)
    return _sampled(lambda g, a: continuous.uniform_(g, a, 0.0, 1.0),
                    lambda state, s, d: state.random_sample(s, dtype=d),
                    tuple(input.shape), _dtype.to_dtype(dtype or input.dtype), device or input.device,
                    requires_grad, generator, _layout_of(input, device, memory_format))


def randn_like(input, dtype=None, device=None, requires_grad=False, generator=None, memory_format=None):
    if _dtype.to_dtype(dtype or input.dtype).is_complex:
        return randn(*input.shape, generator=generator, dtype=dtype or input.dtype, device=device or input.device,
                     requires_grad=requires_grad)
    return _sampled(lambda g, a: continuous.normal_(g, a, 0.0, 1.0),
                    lambda state, s, d: state.standard_normal(s, dtype=d),
                    tuple(input.shape), _dtype.to_dtype(dtype or input.dtype), device or input.device,
                    requires_grad, generator, _layout_of(input, device, memory_format))


def randint(low=None, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers drawn uniformly from [low, high) (checked and, for a floating dtype, moved inside what it holds,
    as torch's ``random_`` does: ``_rng.bounds``); ``randint(high, size)`` or ``randint(high=, size=)`` from 0."""
    if size is None:
        low, high, size = None, low, high
    if high is None:
        low, high = None, low
    low = 0 if low is None else low
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    low, span = bounds.from_to(d, int(low), int(high))
    return _sampled(lambda g, a: discrete.random_from_to_(g, a, low, span),
                    lambda state, s, t: state.randint(low, low + span, size=s, dtype=np.int64),
                    _checked_shape((size,)), d, device, requires_grad, generator)


def randint_like(input, low=None, high=None, dtype=None, device=None, generator=None, memory_format=None):
    """``randint`` in ``input``'s shape (and dtype and device unless given): ``(input, high)``, ``(input, low,
    high)`` or ``high=`` alone."""
    if high is None:
        low, high = None, low
    low = 0 if low is None else low
    d = _dtype.to_dtype(dtype or input.dtype)
    low, span = bounds.from_to(d, int(low), int(high))
    return _sampled(lambda g, a: discrete.random_from_to_(g, a, low, span),
                    lambda state, s, t: state.randint(low, low + span, size=s, dtype=np.int64),
                    tuple(input.shape), d, device or input.device, False, generator,
                    _layout_of(input, device, memory_format))


_RANDPERM_LIMITS = {"float16": (2049, "2049"), "float32": (2 ** 24 + 1, "2^24+1"), "float64": (2 ** 53 + 1, "2^53+1")}


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1."""
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    n = int(n)
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    if d is _dtype.bool_:
        raise NotImplementedError("\"randperm\" not implemented for 'Bool'")
    if not d.is_floating_point:
        _to_dtype_scalar(max(n - 1, 0), d.np)  # torch's overflow error where n - 1 does not fit
    elif n > _RANDPERM_LIMITS.get(d.name, (n, ""))[0]:  # bfloat16: no limit
        raise RuntimeError(f"n cannot be greater than {_RANDPERM_LIMITS[d.name][1]} for {d.title} type.")
    return _sampled(lambda g, a: a.__setitem__(Ellipsis, discrete.randperm(g, n)),
                    lambda state, s, t: state.permutation(n), (n,), d, device, requires_grad, generator)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal samples; ``mean``/``std`` may be tensors (broadcast) or numbers with ``size``.

    As in torch, tensor arguments draw N(0, 1) (or N(0, std) for a number ``std``) in their dtype
    and then scale by ``std`` and shift by ``mean``.
    """
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments: numbers for mean and "
                            "std need a size")
        # torch's default device passes normal by (its DeviceContext leaves normal out)
        result = empty(shape_arg((size,)), dtype=dtype, device=device or "cpu")
        return result.normal_(mean, std, generator=generator).requires_grad_(requires_grad)
    if tracing.active is not None:  # an op of the graph, drawn anew in each replay
        fn = _Normal()
        fn.mean = None if isinstance(mean, Tensor) else mean
        fn.std = None if isinstance(std, Tensor) else std
        fn.generator = generator
        result = fn(*(v for v in (mean, std) if isinstance(v, Tensor)))
    else:
        result = _new(_normal_array(*(v._data if isinstance(v, Tensor) else v for v in (mean, std)), generator))
    if device is not None:
        result = result.to(device)
    return result.requires_grad_(requires_grad) if requires_grad else result


def _normal_array(mean, std, generator):
    """torch's ``normal`` of means and deviations (arrays or numbers, broadcast; at least one an array): N(0, 1)
    draws scaled by an array ``std`` (N(0, std) for a number), then shifted by ``mean``, in the arrays' dtype and
    on their device: drawn there by a GPU's generator (which CUDA graphs capture), or on the host from torch's
    CPU stream (on the CPU, or with an explicit ``generator``)."""
    ref = mean if not isinstance(mean, numbers.Number) else std
    if isinstance(std, numbers.Number) and std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
    device = device_of(ref)
    state = _random.device_rng(device, generator)
    if state is not None:
        return (state.standard_normal(shape, dtype=_drawn_as(ref.dtype)) * std + mean).astype(ref.dtype, copy=False)
    mean, std = (v if isinstance(v, numbers.Number) else move(v, "cpu") for v in (mean, std))
    values = np.empty(shape, ref.dtype)
    g = _random.generator_or_default(generator)
    if isinstance(std, np.ndarray):
        continuous.normal_(g, values, 0.0, 1.0)
        values *= std.astype(values.dtype, copy=False)
    else:
        continuous.normal_(g, values, 0.0, std)
    values += np.asarray(mean).astype(values.dtype, copy=False)
    return move(values, device)


class _Normal(Function):
    """``normal`` of tensor means or deviations recorded as an op while ``nn.Graph`` traces (see
    ``_RandomFill``); its inputs are the tensor ones of ``mean`` and ``std`` (None: a tensor). Not
    differentiable."""

    uses_inputs = False

    def forward(self, *arrays):
        given = iter(arrays)
        mean = next(given) if self.mean is None else self.mean
        std = next(given) if self.std is None else self.std
        return _normal_array(mean, std, self.generator)

    def backward(self, gy):
        return (None,) * ((self.mean is None) + (self.std is None))


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (elementwise), or with probability ``p`` everywhere."""
    if tracing.active is not None:  # an op of the graph, drawn anew in each replay
        fn = _Bernoulli()
        fn.p, fn.generator = p, generator
        return fn(input)
    return _new(_bernoulli_array(input._data, p, generator))


class _Bernoulli(Function):
    """``bernoulli`` recorded as an op while ``nn.Graph`` traces (see ``_RandomFill``); not differentiable."""

    uses_inputs = False

    def forward(self, probs):
        return _bernoulli_array(probs, self.p, self.generator)

    def backward(self, gy):
        return (None,)


def _bernoulli_array(probs, p, generator):
    """0/1 draws in ``probs``' dtype and device: 1 with probability ``probs`` (elementwise), or ``p``."""
    device = device_of(probs)
    state = _random.device_rng(device, generator)
    if state is not None:
        return (state.random_sample(probs.shape, dtype=np.float64) < (probs if p is None else p)).astype(probs.dtype)
    host = move(probs, "cpu")
    out = np.empty(host.shape, host.dtype)  # torch's bernoulli draws into a contiguous result, whatever the input's layout
    g = _random.generator_or_default(generator)
    if p is None:
        discrete.bernoulli_tensor_(g, out, host)
    else:
        discrete.bernoulli_scalar_(g, out, _check_probability(p))
    return move(out, device)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Category indices drawn from the rows of ``input`` (non-negative weights)."""
    fn = _Multinomial()
    fn.num_samples, fn.replacement, fn.generator = num_samples, replacement, generator
    if tracing.active is not None:  # an op of the graph, drawn anew in each replay
        return fn(input)
    return _new(fn.forward(input._data))


class _Multinomial(Function):
    """``multinomial``, recorded as an op while ``nn.Graph`` traces (see ``_RandomFill``); not differentiable.
    On the CPU drawn as torch's CPU kernel draws; on a GPU, on the device (``_device_multinomial``)."""

    uses_inputs = False

    def forward(self, weights):
        device = device_of(weights)
        if device.type != "cpu":
            return _device_multinomial(weights, self.num_samples, self.replacement,
                                       _random.device_rng(device, self.generator))
        problem = discrete.multinomial_checks(weights, self.num_samples, self.replacement)
        if problem:
            raise RuntimeError(problem)
        rows = weights.reshape(-1, weights.shape[-1])
        out = discrete.multinomial(_random.generator_or_default(self.generator), rows, self.num_samples,
                                   self.replacement)
        return out.reshape(*weights.shape[:-1], self.num_samples)

    def backward(self, gy):
        return (None,)


def _device_multinomial(weights, count, replacement, state):
    """``count`` category indices (int64) from each row of ``weights`` on a GPU, from the device generator's
    uniform draws, without reading the device (the value checks, which read it, are left out of a CUDA graph
    capture). With replacement, each draw's uniform is looked up in the row's normalised cumulative sums
    (zero-weight categories are never taken); without, the ``count`` categories whose exponential draws divided
    by their weights are smallest (a race of exponential clocks: sampling without replacement in proportion to
    the weights; zero weights come last)."""
    xp = xp_of(weights)
    capturing = backends.runtime(weights).capturing()
    problem = discrete.multinomial_checks(weights, count, replacement, values=not capturing)
    if problem:
        raise RuntimeError(problem)
    categories = weights.shape[-1]
    rows = weights.reshape(-1, categories).astype(np.float64)
    if replacement:
        row = xp.arange(len(rows), dtype=np.float64)[:, None]
        sums = xp.cumsum(rows, axis=1)
        sums = sums / sums[:, -1:] + row  # row r's cumulative sums in [r, r + 1]: one search for every row
        drawn = state.random_sample((len(rows), count), dtype=np.float64) + row
        picks = xp.searchsorted(sums.ravel(), drawn.ravel(), side="right").reshape(drawn.shape)
        picks -= row.astype(np.int64) * categories
        last_positive = categories - 1 - xp.argmax(rows[:, ::-1] > 0, axis=1)
        picks = xp.minimum(picks, last_positive[:, None])  # past a row's last sum, rounded below 1
    else:
        clocks = -xp.log1p(-state.random_sample(rows.shape, dtype=np.float64))
        positive = rows > 0
        finish = xp.where(positive, clocks / xp.where(positive, rows, 1.0), xp.inf)  # zero weights: never
        picks = xp.argsort(finish, axis=1)[:, :count]
    return picks.astype(np.int64).reshape(weights.shape[:-1] + (count,))


# ---- in-place random fills (used by nn.init) -------------------------------------------------
def _check_fill(self, overlapping_ok=False):
    from ..autograd.function import _check_inplace
    from ..autograd.grad_mode import is_grad_enabled
    _check_inplace(self, is_grad_enabled(), overlapping_ok)


def _fill_(self, values):
    _check_fill(self)
    self._data[...] = move(values.astype(self._data.dtype, copy=False), self.device)
    self._version_counter[0] += 1
    return self


def _sample_(self, kernel, fill, device_sample, generator, floating=True):
    """Fill ``self`` in place: ``fill(generator, array)`` on the CPU (in torch's order), or
    ``device_sample(state, shape, dtype)`` on a GPU. ``floating``: the sampler needs a float dtype."""
    if floating and not self.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{self.dtype.title}\'')
    _check_fill(self)
    if tracing.active is not None:
        return _traced_fill(self, fill, device_sample, generator)
    _fill_array(self._data, fill, device_sample, generator)
    self._version_counter[0] += 1
    return self


def _from_keyword(name, value, keywords):
    """The lower bound torch names ``from`` (a Python keyword, so given as ``**{'from': ...}``), else ``value``."""
    for key in keywords:
        if key != "from":
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
    return keywords.get("from", value)


def uniform_(self, a=0.0, to=1.0, *, generator=None, **keywords):
    """Fill with U(a, to); torch names the bounds ``from`` and ``to``."""
    a, b = _from_keyword("uniform_", a, keywords), to
    if self.is_complex():  # torch fills the real and imaginary parts alike, in memory order
        uniform_(self.view_as_real(), a, b, generator=generator)
        return self
    if self.dtype.is_floating_point:
        bounds.uniform_bounds(self.dtype, a, b)
    elif not a <= b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}")
    return _sample_(self, "check_uniform_bounds", lambda g, arr: continuous.uniform_(g, arr, a, b),
                    lambda state, s, d: state.uniform(a, b, s, dtype=d), generator)


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    if not std >= 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    if self.is_complex():  # torch's complex normal: each part N(mean, std^2 / 2), in memory order
        normal_(self.view_as_real(), mean, std / math.sqrt(2), generator=generator)
        return self
    return _sample_(self, "normal_kernel_cpu", lambda g, arr: continuous.normal_(g, arr, mean, std),
                    lambda state, s, d: state.normal(mean, std, s, dtype=d), generator)


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
    return _sample_(self, "log_normal_cpu", lambda g, arr: continuous.log_normal_(g, arr, mean, std),
                    lambda state, s, d: state.lognormal(mean, std, s, dtype=d), generator)


def exponential_(self, lambd=1.0, *, generator=None):
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return _sample_(self, "exponential_cpu", lambda g, arr: continuous.exponential_(g, arr, lambd),
                    lambda state, s, d: state.exponential(1.0 / lambd, s, dtype=d), generator)


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
    return _sample_(self, "cauchy_cpu", lambda g, arr: continuous.cauchy_(g, arr, median, sigma),
                    lambda state, s, d: (median + sigma * state.standard_cauchy(s)).astype(d), generator)


def geometric_(self, p, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
    if self.dtype is _dtype.bool_ and self.numel():
        raise NotImplementedError('"geometric_cpu" not implemented for \'Bool\'')
    return _sample_(self, "geometric_cpu", lambda g, arr: continuous.geometric_(g, arr, p),
                    lambda state, s, d: state.geometric(p, s).astype(d), generator, floating=False)


def _check_probability(p):
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p:g}")
    return p


def bernoulli_(self, p=0.5, *, generator=None):
    """1 with probability ``p`` (a number, or a tensor broadcast to ``self``)."""
    if isinstance(p, Tensor):
        probs = move(p._data, "cpu")
        return _sample_(self, "bernoulli_tensor_cpu", lambda g, arr: discrete.bernoulli_tensor_(g, arr, probs),
                        lambda state, s, d: state.random_sample(s) < move(p._data, self.device), generator,
                        floating=False)
    _check_probability(p)
    return _sample_(self, "bernoulli_scalar_cpu", lambda g, arr: discrete.bernoulli_scalar_(g, arr, p),
                    lambda state, s, d: state.random_sample(s) < p, generator, floating=False)


_TO_OMITTED = object()


def _largest_random(dtype):
    """The inclusive upper end of ``random_()``: 2^mantissa for floats, the maximum for integers."""
    if dtype.is_floating_point:
        return 2 ** (np.finfo(dtype.np).nmant + 1)
    return 1 if dtype is _dtype.bool_ else int(np.iinfo(dtype.np).max)


def random_(self, from_=None, to=_TO_OMITTED, *, generator=None, **keywords):
    """``random_()``: [0, 2^mantissa] or [0, max]; ``random_(to)`` or ``random_(to=to)``: [0, to);
    ``random_(from, to)``: [from, to); ``random_(from, None)``: [from, max]; the bounds checked as torch checks
    them (``_rng.bounds``)."""
    from_ = _from_keyword("random_", from_, keywords)
    if from_ is None and to is not _TO_OMITTED:
        from_, to = to, _TO_OMITTED
    if from_ is None:
        low, span = 0, _largest_random(self.dtype) + 1
        fill = discrete.random_
    elif to is None and from_ == -2 ** 63:
        low, span = from_, 2 ** 64
        fill = discrete.random_full_range_
    else:
        low, span = bounds.from_to(self.dtype, *((0, from_) if to is _TO_OMITTED else (from_, to)))
        fill = functools.partial(discrete.random_from_to_, low=low, span=span)
    return _sample_(self, "random_", fill,
                    lambda state, s, d: state.randint(low, min(low + span, 2 ** 63), s, dtype=np.int64).astype(d),
                    generator, floating=False)


def fill_(self, value):
    """``value`` in every element: a number converted as torch's ``Scalar.to`` converts it (past the range:
    torch's overflow error), a tensor's value cast (wrapping) as ``Tensor.to`` casts it. Recorded by autograd
    (``Fill``) where the tensor or the value requires grad."""
    tensor_value = isinstance(value, Tensor)
    if tensor_value:
        scalar = value.detach().to(self.dtype).item()
    else:
        scalar = _to_dtype_scalar(value, self._data.dtype, self._data.size == 1)
    if grad_mode.is_grad_enabled() and (self.requires_grad or (tensor_value and value.requires_grad)):
        fill = Fill(scalar)
        fill.inplace = True
        return fill(self, value) if tensor_value else fill(self)
    _check_fill(self, overlapping_ok=True)  # every element gets the same value: torch fills an expanded tensor
    target = self._data
    if xp_of(target) is np and not target.flags.writeable:
        target = over_root(target)  # an expanded tensor: numpy's broadcast is read-only, its memory is not
    target[...] = scalar
    self._version_counter[0] += 1
    return self


class Fill(Function):
    """``fill_`` on the graph: the old values no longer matter (a zero gradient), a tensor value receives the sum
    of the gradient (torch's FillBackward)."""

    uses_inputs = False  # the backward reads neither the old values nor the value

    def __init__(self, scalar):
        self.scalar = scalar

    def forward(self, x, value=None):
        x[...] = self.scalar
        return x

    def backward(self, gy):
        xp = xp_of(gy)
        return (xp.zeros_like(gy),) + ((gy.sum(),) if len(self.needs_input_grad) > 1 else ())

    def backward_tensors(self, gy):
        return (gy * 0,) + ((gy.sum(),) if len(self.needs_input_grad) > 1 else ())


def zero_(self):
    return fill_(self, 0)


def _new_shape(name, sizes, size):
    """The shape a ``new_zeros``-style method is asked for, which it must be given (torch's TypeError), with
    the tensor methods' message for a negative size."""
    if not sizes and size is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    return _checked_shape(_sizes(sizes, size))


def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
    return zeros(_new_shape("new_zeros", sizes, size), dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
    return ones(_new_shape("new_ones", sizes, size), dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False):
    return empty(_new_shape("new_empty", sizes, size), dtype=dtype or self.dtype, device=device or self.device,
                 requires_grad=requires_grad)


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


for _fn in (uniform_, normal_, log_normal_, bernoulli_, random_, exponential_, cauchy_, geometric_,
            fill_, zero_, new_zeros, new_ones, new_empty, new_full):
    register_method(_fn)
register_method(lambda self, p=None, generator=None: bernoulli(self, p, generator=generator), "bernoulli")


__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "eye", "rand",
           "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm", "normal",
           "bernoulli", "multinomial"]
