"""Tensor creation: from data, filled, ranges and random (seeded through ``engine.manual_seed``)."""
import numpy as np

from .. import _dtype
from .. import random as _random
from .._device import move, xp_for
from ..tensor import Tensor, _new, register_method, to_array
from ._common import shape_arg


def _finish(arr, dtype=None, device=None, requires_grad=False):
    if dtype is not None:
        arr = arr.astype(_dtype.to_dtype(dtype).np, copy=False)
    if device is not None:
        arr = move(arr, device)
    t = _new(arr)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _float(dtype):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return d


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (dtype inferred as PyTorch does)."""
    arr = to_array(data, dtype, device)
    if isinstance(data, Tensor) or isinstance(data, np.ndarray):
        arr = arr.copy()
    return _finish(arr, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with numpy arrays and tensors when it can."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    return _new(to_array(data, dtype, device))


def from_numpy(ndarray):
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    _dtype.from_numpy_dtype(ndarray.dtype)
    return _new(ndarray)


def _filled(fill, size, dtype, device, requires_grad, default=None):
    d = _dtype.to_dtype(dtype) if dtype is not None else (default or _dtype.get_default_dtype())
    xp = xp_for(device or "cpu")
    shape = shape_arg(size)
    arr = xp.empty(shape, d.np) if fill is None else xp.full(shape, fill, d.np)
    return _finish(arr, requires_grad=requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    return _filled(0, size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    return _filled(1, size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          memory_format=None, pin_memory=False):
    return _filled(None, size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    default = None
    if dtype is None and not isinstance(fill_value, Tensor):
        default = _dtype.scalar_dtype(fill_value)
    return _filled(fill_value, (size,), dtype, device, requires_grad, default=default)


def _like(fill, input, dtype, device, requires_grad):
    return _filled(fill, (tuple(input.shape),), dtype or input.dtype, device or input.device, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _like(0, input, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _like(1, input, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None):
    return _like(None, input, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(fill_value, input, dtype, device, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None):
    if end is None:
        start, end = 0, start
    values = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        d = _dtype.get_default_dtype() if any(isinstance(v, float) for v in values) else _dtype.int64
    else:
        d = _dtype.to_dtype(dtype)
    xp = xp_for(device or "cpu")
    start, end, step = values
    n = max(int(np.ceil((end - start) / step)), 0)
    arr = (start + step * xp.arange(n, dtype=np.float64)) if d.is_floating_point else xp.arange(start, end, step)
    return _finish(arr.astype(d.np), requires_grad=requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None):
    d = _float(dtype)
    xp = xp_for(device or "cpu")
    return _finish(xp.linspace(start, end, int(steps)).astype(d.np), requires_grad=requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    d = _float(dtype)
    xp = xp_for(device or "cpu")
    return _finish(xp.logspace(start, end, int(steps), base=base).astype(d.np), requires_grad=requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None):
    xp = xp_for(device or "cpu")
    return _finish(xp.eye(n, m, dtype=_float(dtype).np), requires_grad=requires_grad)


# ---- random --------------------------------------------------------------------------------
def _random_tensor(sample, device_sample, size, dtype, device, requires_grad, generator):
    """Samples drawn on ``device`` (a GPU draws them itself), or on the host by ``generator``."""
    d = _float(dtype)
    shape = shape_arg(size)
    state = _random.device_rng(device, generator)
    if state is not None:
        draw = d.np if d.np != np.float16 else np.float32
        return _new(device_sample(state, shape, draw).astype(d.np, copy=False), requires_grad)
    arr = sample(_random.rng(generator), shape, d)
    return _finish(arr, device=device, requires_grad=requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    return _random_tensor(lambda g, s, d: g.random(s, dtype=np.float64).astype(d.np),
                          lambda state, s, d: state.random_sample(s, dtype=d),
                          size, dtype, device, requires_grad, generator)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, out=None):
    return _random_tensor(lambda g, s, d: g.standard_normal(s, dtype=np.float32).astype(d.np, copy=False)
                          if d.np != np.float64 else g.standard_normal(s),
                          lambda state, s, d: state.standard_normal(s, dtype=d),
                          size, dtype, device, requires_grad, generator)


def rand_like(input, dtype=None, device=None, requires_grad=False):
    return rand(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False):
    return randn(tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None:
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    state = _random.device_rng(device, generator)
    if state is not None:
        return _new(state.randint(low, high, size=tuple(size), dtype=np.int64).astype(d.np, copy=False))
    arr = _random.rng(generator).integers(low, high, size=tuple(size)).astype(d.np)
    return _finish(arr, device=device)


def randint_like(input, low, high=None, dtype=None, device=None):
    return randint(low, high, tuple(input.shape), dtype=dtype or input.dtype, device=device or input.device)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    state = _random.device_rng(device, generator)
    if state is not None:
        return _new(state.permutation(int(n)).astype(d.np))
    return _finish(_random.rng(generator).permutation(int(n)).astype(d.np), device=device)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal samples; ``mean``/``std`` may be tensors (broadcast) or numbers with ``size``."""
    g = _random.rng(generator)
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    if size is None:
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        ref = mean if isinstance(mean, Tensor) else std
        d = ref.dtype if isinstance(ref, Tensor) else _float(dtype)
    else:
        shape, d = shape_arg((size,)), _float(dtype)
    arr = (g.standard_normal(shape) * move(s, "cpu") + move(m, "cpu")).astype(d.np)
    return _finish(arr, device=device, requires_grad=requires_grad)


def bernoulli(input, p=None, *, generator=None):
    state = _random.device_rng(input.device, generator)
    if state is not None:
        probs = input._data if p is None else p
        return _new((state.random_sample(input.shape, dtype=np.float64) < probs).astype(input.dtype.np))
    probs = input._data if p is None else np.full(input.shape, p)
    arr = (_random.rng(generator).random(input.shape) < move(probs, "cpu")).astype(input.dtype.np)
    return _finish(arr, device=input.device)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    g = _random.rng(generator)
    probs = move(input._data, "cpu").astype(np.float64)
    rows = probs.reshape(-1, probs.shape[-1])
    out = np.stack([g.choice(rows.shape[1], num_samples, replace=replacement, p=r / r.sum()) for r in rows])
    return _finish(out.reshape(*probs.shape[:-1], num_samples).astype(np.int64), device=input.device)


# ---- in-place random fills (used by nn.init) -------------------------------------------------
def _check_fill(self):
    from ..autograd.function import _check_inplace
    from ..autograd.grad_mode import is_grad_enabled
    _check_inplace(self, is_grad_enabled())


def _fill_(self, values):
    _check_fill(self)
    self._data[...] = move(values.astype(self._data.dtype, copy=False), self.device)
    self._version[0] += 1
    return self


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    return _fill_(self, _random.uniform_array(generator, a, b, tuple(self.shape), self._data.dtype))


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    return _fill_(self, _random.normal_array(generator, mean, std, tuple(self.shape), self._data.dtype))


def bernoulli_(self, p=0.5, *, generator=None):
    return _fill_(self, _random.rng(generator).random(self.shape) < p)


def random_(self, from_=0, to=None, *, generator=None):
    if to is None:
        from_, to = 0, from_ if from_ else 2 ** 24
    return _fill_(self, _random.rng(generator).integers(from_, to, self.shape))


def exponential_(self, lambd=1.0, *, generator=None):
    return _fill_(self, _random.rng(generator).exponential(1.0 / lambd, self.shape))


def fill_(self, value):
    _check_fill(self)
    self._data[...] = value.item() if isinstance(value, Tensor) else value
    self._version[0] += 1
    return self


def zero_(self):
    return fill_(self, 0)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
    return zeros(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
    return ones(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
    return empty(*size, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                requires_grad=requires_grad)


for _fn in (uniform_, normal_, bernoulli_, random_, exponential_, fill_, zero_,
            new_zeros, new_ones, new_empty, new_full):
    register_method(_fn)
register_method(lambda self, p=None, generator=None: bernoulli(self, p, generator=generator), "bernoulli")


__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "rand",
           "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm", "normal",
           "bernoulli", "multinomial"]
