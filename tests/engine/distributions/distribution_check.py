"""Parity helpers for the distribution tests: a distribution built from the same parameters on engine and on
torch, and every requested method or property compared with ``check_op`` (values and the gradients of the
parameters and of the scored value)."""
import numpy as np
import torch

import engine
from op_check import check_op

VALUE_METHODS = ("log_prob", "cdf", "icdf")


def build(module, name, params, kwargs):
    """``module.distributions.<name>(*params, **kwargs)``, parameters given as tensors of that module."""
    return getattr(module.distributions, name)(*params, **kwargs)


def evaluate(module, name, method, params, value, kwargs):
    dist = build(module, name, params, kwargs)
    if method in VALUE_METHODS:
        return getattr(dist, method)(value)
    result = getattr(dist, method)
    return result() if callable(result) else result


def check_methods(name, params, value=None, prob=None, methods=(), rtol=1e-6, grad_rtol=None, kwargs=None,
                  value_grad=True):
    """Compare ``methods`` of distribution ``name`` on engine and torch. ``params`` are numpy arrays (floating ones
    get gradients) or plain values; ``value`` is scored by log_prob and cdf, ``prob`` by icdf."""
    kwargs = kwargs or {}
    for method in methods:
        scored = prob if method == "icdf" else value
        inputs = list(params) + ([scored] if method in VALUE_METHODS else [])
        n = len(params)

        def ours(*args, method=method):
            return evaluate(engine, name, method, args[:n], args[n] if n < len(args) else None, kwargs)

        def theirs(*args, method=method):
            return evaluate(torch, name, method, args[:n], args[n] if n < len(args) else None, kwargs)
        try:
            check_op(ours, theirs, inputs, rtol=rtol, grad_rtol=grad_rtol,
                     grad=value_grad or method not in VALUE_METHODS)
        except AssertionError as e:
            raise AssertionError(f"{name}.{method}: {e}") from None


def same_samples(make, seed=0, sample_shape=(3,), method="sample"):
    """Draw with ``make(module)``'s distribution after the same seed on both sides and require equal values."""
    engine.manual_seed(seed)
    ours = getattr(make(engine), method)(sample_shape)
    torch.manual_seed(seed)
    ref = getattr(make(torch), method)(sample_shape)
    assert tuple(ours.shape) == tuple(ref.shape), (tuple(ours.shape), tuple(ref.shape))
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (ours.dtype, ref.dtype)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(engine.get_rng_state().numpy(), torch.get_rng_state().numpy())
    return ours


def tensors(module, *arrays):
    return [module.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in arrays]
