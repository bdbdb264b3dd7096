"""``torch.autocast``: inside it, each op with a policy for the device casts its floating inputs first.

An op's policy is a decorator where it is defined: ``lower_precision`` ops (convolutions, linear, matmul and
the batched products, attention) take the autocast dtype (bfloat16 on the CPU, float16 on CUDA by default);
``float32`` ops (losses, and on CUDA the reductions, norms, softmax and the transcendental functions of
torch's list) take float32; a ``refusal`` raises torch's error (binary_cross_entropy on CUDA). The lists are
torch's, per device: the CPU's were read off torch 2.14 op by op (tests/engine/test_autocast.py checks each),
CUDA's are torch's documented ones. Everything else runs in whatever types it is given, promoting as
usual. As in torch:

- only tensors on the autocast device are cast, and never float64 or non-floating ones;
- an op given ``dtype=`` or ``out=`` is left alone;
- inside a listed op, the ops it calls are not autocast again, on any device (an op listed for CUDA
  only, or marked ``as_given``, is one op on the CPU too: ``mv`` does not become a cast ``matmul``);
- a leaf that requires grad (a parameter) is cast once per outermost ``autocast`` region (the cache);
- the state is per thread, and ``autocast`` works as a context manager and as a decorator.
"""
import functools
import threading
import warnings

from .. import _dtype

_DEVICE_TYPES = ("cpu", "cuda")
_DEFAULT_DTYPES = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}


class _State(threading.local):
    def __init__(self):
        self.enabled = dict.fromkeys(_DEVICE_TYPES, False)
        self.dtype = dict(_DEFAULT_DTYPES)
        self.cache_enabled = True
        self.depth = 0  # autocast regions entered (the cache lives until the outermost one exits)
        self.inside = 0  # listed ops running (their inner ops are not autocast)
        self.cache = {}


_state = _State()


def is_autocast_available(device_type):
    """Whether ``autocast`` takes this device type (``torch.amp.is_autocast_available``)."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type="cuda"):
    """``torch.is_autocast_enabled``: whether autocast is on for the device type (CUDA's when not named)."""
    return _state.enabled[_checked(device_type)]


def set_autocast_enabled(device_type, enabled):
    if not isinstance(enabled, bool):
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 2) must be bool, not "
                        f"{type(enabled).__name__}")
    _state.enabled[_checked(device_type)] = enabled


def get_autocast_dtype(device_type):
    """The dtype autocast casts to on this device type (``torch.get_autocast_dtype``)."""
    return _state.dtype[_checked(device_type)]


def set_autocast_dtype(device_type, dtype):
    _state.dtype[_checked(device_type)] = _dtype.to_dtype(dtype)


def is_autocast_cache_enabled():
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled):
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache():
    _state.cache.clear()


def _checked(device_type):
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


class autocast:
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: see the module
    docstring. ``dtype`` and ``cache_enabled`` default to the thread's settings when the context is made
    (``get_autocast_dtype``: bfloat16 on "cpu" and float16 on "cuda" unless set; ``is_autocast_cache_enabled``).
    CUDA takes any dtype (float32 too, as torch's); the CPU only the two low precisions."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = _checked(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else _dtype.to_dtype(dtype)
        self._enabled = enabled
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if self._enabled and self.device == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling")
                self._enabled = False
            elif self.fast_dtype is _dtype.bfloat16 and not cuda.is_bf16_supported():
                raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to float16.")
        elif self._enabled and self.fast_dtype not in (_dtype.bfloat16, _dtype.float16):
            warnings.warn(f"In {self.device.upper()} autocast, but the target dtype is not supported. Disabling "
                          f"autocast.\n{self.device.upper()} Autocast only supports dtypes of engine.bfloat16, "
                          f"engine.float16 currently.")
            self._enabled = False
        if self._enabled:
            _dtype.numpy_dtype(self.fast_dtype)  # bfloat16 without ml_dtypes: its one line, here

    def __enter__(self):
        self._saved = (_state.enabled[self.device], _state.dtype[self.device], _state.cache_enabled)
        set_autocast_enabled(self.device, self._enabled)
        _state.dtype[self.device] = self.fast_dtype
        _state.depth += 1
        _state.cache_enabled = bool(self._cache_enabled)
        return self

    def __exit__(self, *exc):
        _state.depth -= 1
        if _state.depth == 0:
            _state.cache.clear()
        _state.enabled[self.device], _state.dtype[self.device], _state.cache_enabled = self._saved
        return False

    def __call__(self, fn):
        if not callable(fn):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(fn).__name__}. Did you mean to "
                            "use autocast as a context manager? For example:\n    with torch.autocast("
                            "device_type=...):\n        output = model(input)")

        @functools.wraps(fn)
        def autocast_wrapper(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return autocast_wrapper


LOWER, FLOAT32, PROMOTE = "lower precision", "float32", "widest"


class refusal:
    """A policy that refuses the op under autocast with torch's ``message``."""

    def __init__(self, message):
        self.message = message


def lower_precision(*devices):
    """Mark an op that autocast runs in the autocast dtype on these device types."""
    return policy(**dict.fromkeys(devices, LOWER))


def float32(*devices):
    """Mark an op that autocast runs in float32 on these device types."""
    return policy(**dict.fromkeys(devices, FLOAT32))


def as_given(fn):
    """Mark an op that autocast leaves in its input types, and whose inner ops it does not autocast either
    (``bilinear``: one op in torch, an einsum here)."""
    return policy()(fn)


def policy(**by_device):
    """Mark an op with what autocast does to it per device type: ``LOWER``, ``FLOAT32``, ``PROMOTE`` (every
    floating input to the widest of their types) or a ``refusal``."""
    return functools.partial(_autocast_op, by_device=by_device)


def _autocast_op(fn, by_device):
    @functools.wraps(fn)
    def op(*args, **kwargs):
        state = _state
        if state.inside or not (state.enabled["cpu"] or state.enabled["cuda"]):
            return fn(*args, **kwargs)
        device = _device_type(args, kwargs)
        if device is None or not state.enabled[device]:
            return fn(*args, **kwargs)
        rule = by_device.get(device)
        if rule is not None and kwargs.get("out") is None and kwargs.get("dtype") is None:
            if isinstance(rule, refusal):
                raise RuntimeError(rule.message)
            target = state.dtype[device] if rule is LOWER else _dtype.float32
            if rule is PROMOTE:
                floating = [t.dtype for t in _tensors((*args, *kwargs.values())) if t.is_floating_point()]
                target = functools.reduce(_dtype.promote_types, floating) if floating else None
            args = [_cast(a, device, target) for a in args]
            kwargs = {k: _cast(v, device, target) for k, v in kwargs.items()}
        state.inside += 1
        try:
            return fn(*args, **kwargs)
        finally:
            state.inside -= 1
    return op


def _tensors(values):
    from ..tensor import Tensor
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, Tensor))


def _device_type(args, kwargs):
    """The device type of an op's first tensor argument (None without one)."""
    first = next(_tensors((*args, *kwargs.values())), None)
    return None if first is None else first.device.type


def _cast(value, device, target):
    """``value`` (a tensor, or a list or tuple of them) with its floating, non-float64 tensors on ``device``
    cast to ``target``; parameters through the region's cache."""
    from ..tensor import Tensor
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device, target) for v in value)
    if (not isinstance(value, Tensor) or target is None or value.dtype is target or not value.is_floating_point()
            or value.dtype is _dtype.float64 or value.device.type != device):
        return value
    if not (_state.cache_enabled and value.is_leaf and value.requires_grad):
        return value.to(target)
    key = (id(value), target)
    hit = _state.cache.get(key)
    if hit is not None and hit[0] is value and hit[1] == value._version_counter[0]:
        return hit[2]
    cast = value.to(target)
    _state.cache[key] = (value, value._version_counter[0], cast)
    return cast
