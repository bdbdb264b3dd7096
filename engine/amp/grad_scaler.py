"""``torch.amp.GradScaler``: loss scaling for float16 training, with torch's update rule.

``scale(loss)`` multiplies by the scale; ``unscale_(optimizer)`` divides the gradients by it and notes
whether any is inf or NaN; ``step(optimizer)`` skips the step when one was; ``update()`` halves the scale
after an overflow (``backoff_factor``) and doubles it after ``growth_interval`` clean steps in a row
(``growth_factor``). The scale lives on the loss's device (with its value on the host too, as the host
decides it), and the overflows of each device are counted there: one host read per ``step``, none per
parameter.
"""
import collections.abc
import warnings

import numpy as np

from .. import _dtype

_READY, _UNSCALED, _STEPPED = range(3)


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if enabled and device == "cuda":
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale = None  # a 0-dim float32 tensor on the first scaled output's device
        self._scale_value = None  # its value, which ``update`` decides on the host
        self._growth_tracker = None
        self._per_optimizer = {}

    # ---- scaling ---------------------------------------------------------------------------------
    def scale(self, outputs):
        """``outputs`` (a tensor, or nested iterables of them) times the scale; lists and tuples keep their
        type, other iterables come back as lazy iterators (as torch's ``map``)."""
        from ..tensor import Tensor
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, collections.abc.Iterable):
            scaled = map(self.scale, outputs)
            return type(outputs)(scaled) if isinstance(outputs, (list, tuple)) else scaled
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _lazy_init(self, device):
        from ..ops.creation import full
        self._scale = full((), self._init_scale, dtype=_dtype.float32, device=device)
        self._scale_value = float(self._scale.item())
        self._growth_tracker = self._init_growth_tracker

    def _check_scale(self, funcname):
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did "
                                 "not use scaler.scale(loss or outputs) earlier in the iteration.")

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any is inf or NaN."""
        if not self._enabled:
            return
        self._check_scale("unscale_")
        state = self._state(optimizer)
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        state["found_inf"] = self._unscale_grads(optimizer, 1.0 / self._scale_value)
        state["stage"] = _UNSCALED

    def _unscale_grads(self, optimizer, inverse):
        """Gradients (a sparse one's values) times ``inverse`` (float32's rounding of 1 / scale), multiplied in
        float32 or wider and rounded back; one count per device of the gradients' entries that were inf or NaN
        before the multiplication (as torch's kernel checks them)."""
        from .._device import array_module
        counts = {}
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.dtype is _dtype.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                grad = p.grad._data.values if p.grad.is_sparse else p.grad._data
                xp = array_module(grad)
                bad = xp.count_nonzero(~xp.isfinite(grad))
                opmath = xp.promote_types(grad.dtype, _dtype.float32.np)
                factor = opmath.type(_dtype.float32.np.type(inverse))
                with np.errstate(over="ignore"):  # an overflow here is torch's too, and is not counted
                    if opmath == grad.dtype:
                        grad *= factor
                    else:  # bfloat16: through float32, as torch's kernel computes it
                        grad[...] = grad.astype(opmath) * factor
                key = p.grad.device
                counts[key] = bad if key not in counts else counts[key] + bad
        return counts

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step()`` unless the unscaled gradients hold an inf or NaN; returns what it returned."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale("step")
        state = self._state(optimizer)
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if not state["found_inf"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if not sum(int(count) for count in state["found_inf"].values()):  # the one host read
            result = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale=None):
        """The next scale: ``new_scale`` if given, else backed off after an overflow in any optimizer since
        the last update, or grown after ``growth_interval`` clean updates."""
        from ..tensor import Tensor
        if not self._enabled:
            return
        self._check_scale("update")
        if isinstance(new_scale, Tensor):
            if (new_scale.device.type != self._device or new_scale.numel() != 1
                    or new_scale.requires_grad):
                raise AssertionError("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                                     "torch.FloatTensor with requires_grad=False.")
            self._set_scale(float(new_scale.item()))
        elif new_scale is not None:
            self._set_scale(float(new_scale))
        else:
            counts = [c for state in self._per_optimizer.values() for c in state["found_inf"].values()]
            if not counts:
                raise AssertionError("No inf checks were recorded prior to update.")
            if sum(int(c) for c in counts):
                self._set_scale(self._scale_value * self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    with np.errstate(over="ignore"):
                        grown = _dtype.float32.np.type(self._scale_value * self._growth_factor)
                    if np.isfinite(grown):  # a scale that would overflow float32 stays where it is
                        self._set_scale(grown)
                    self._growth_tracker = 0
        self._per_optimizer = {}

    def _set_scale(self, value):
        """The scale, rounded to float32 as the device holds it, on the device and the host."""
        self._scale_value = float(_dtype.float32.np.type(value))
        self._scale.fill_(self._scale_value)

    def _state(self, optimizer):
        return self._per_optimizer.setdefault(id(optimizer), {"stage": _READY, "found_inf": {}})

    def __getstate__(self):
        """As torch pickles it: only between iterations, the scale and growth tracker as plain numbers that the
        copy's first ``scale`` puts on its device again."""
        state = self.__dict__.copy()
        if self._enabled:
            if self._per_optimizer:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self.state_dict()["_growth_tracker"]
            state["_scale"] = state["_scale_value"] = state["_growth_tracker"] = None
        return state

    # ---- settings and state --------------------------------------------------------------------
    def get_scale(self):
        """The scale as a Python float (1.0 when disabled, the initial scale before the first ``scale``)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale_value

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = int(new_interval)

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """torch's keys; empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker if self._growth_tracker is not None
                else self._init_growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._set_scale(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker
