"""``engine.nn.attention``: which backends ``F.scaled_dot_product_attention`` may use (``sdpa_kernel``,
``SDPBackend``), causal biases (``bias``) and ``flex_attention``.

The engine has one SDPA implementation, the "math" one (engine ops, so autograd and the CUDA backend come
with it). ``sdpa_kernel`` records the allowed backends as PyTorch does, and SDPA consults them only to
decide whether to run or to raise PyTorch's error:

- a list with ``MATH`` runs the math implementation;
- on the CPU, where PyTorch's only fused kernel is its CPU flash attention, a list with
  ``FLASH_ATTENTION`` but not ``MATH`` runs the math implementation wherever PyTorch's CPU flash kernel
  would accept the inputs (no dropout, 3-D or 4-D inputs, equal batch sizes, one head dim for q, k and
  v), and otherwise warns the reason and raises "No available kernel" as PyTorch does; any other list
  raises "No viable backend";
- on CUDA, a list with a fused backend (flash, efficient, cuDNN) runs the math implementation in its
  place: the values are the same attention (not bit for bit the fused kernels' rounding), and the fused
  kernels' own input limits are not enforced.

What the switch does not change: the numerics, memory use or speed of SDPA (always the math path), and
``set_priority`` only records an order (one implementation has nothing to order).
"""
import contextlib
import enum
import warnings

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

# As in PyTorch: set True to be warned why a causal bias (``bias.CausalBias``) cannot use a fused kernel.
WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The backends of ``scaled_dot_product_attention``, with PyTorch's names and values."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __str__(self):
        return f"SDPBackend.{self.name}"


# the backends PyTorch has a switch for, in its default priority order
_SWITCHED = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
             SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE)
_FUSED_CUDA = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION)
_enabled = set(_SWITCHED)
_priority = [int(b) for b in _SWITCHED]

_NO_VIABLE = ("No viable backend for scaled_dot_product_attention was found. This is likely due to turning off "
              "both the math kernel and the fused kernels.")


def _cur_sdpa_kernel_backends(with_priority=False):
    """The enabled backends (in priority order with ``with_priority``)."""
    enabled = [b for b in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                           SDPBackend.MATH, SDPBackend.OVERRIDEABLE) if b in _enabled]
    return sorted(enabled, key=lambda b: _priority.index(int(b))) if with_priority else enabled


def _sdpa_kernel(backends, set_priority=False):
    """Enable exactly ``backends``; with ``set_priority`` they lead the priority order."""
    global _priority
    _enabled.clear()
    _enabled.update(b for b in _SWITCHED if b in backends)
    if set_priority:
        order = [int(b) for b in backends]
        _priority = order + [p for p in _priority if p not in order]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Allow only ``backends`` (one ``SDPBackend`` or a list) for SDPA inside the block (or the decorated
    function); the previous choice comes back on exit. See the module docstring for what it changes."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, "
                             f"got {type(backends).__name__}")
    backends = list(dict.fromkeys([backends] if isinstance(backends, SDPBackend) else backends))
    previous = _cur_sdpa_kernel_backends(with_priority=set_priority)
    try:
        _sdpa_kernel(backends, set_priority)
        yield {}
    finally:
        _sdpa_kernel(previous, set_priority)


def _cpu_flash_refusal(query, key, value, dropout_p):
    """Why PyTorch's CPU flash kernel would refuse these inputs (its first reason, in its words), or None."""
    if dropout_p > 0.0:
        return "Both fused kernels do not support non-zero dropout."
    dims = (query.dim(), key.dim(), value.dim())
    if dims not in ((3, 3, 3), (4, 4, 4)):
        return (f"All fused kernels requires query, key and value to be 4 dimensional, but got Query dim: "
                f"{dims[0]}, Key dim: {dims[1]}, Value dim: {dims[2]} instead.")
    if dims == (4, 4, 4) and not (query.shape[0] == key.shape[0] == value.shape[0]):
        sizes = ", ".join(f"{n}.sizes(): {list(t.shape)}" for n, t in (("Query", query), ("Key", key),
                                                                       ("Value", value)))
        return (f"For dense inputs, both fused kernels require query, key and value to have the same batch_size. "
                f"{sizes} instead. To broadcast dense inputs, try using unsqueeze and expand_to before passing "
                f"them into the kernel.")
    if not (query.shape[-1] == key.shape[-1] == value.shape[-1]):
        return (f"Flash attention requires q,k,v to have the same last dimension. Got Query.size(-1): "
                f"{query.shape[-1]}, Key.size(-1): {key.shape[-1]}, Value.size(-1): {value.shape[-1]} instead.")
    return None


def _check_backends(query, key, value, dropout_p):
    """Raise PyTorch's error where the allowed backends leave SDPA nothing to run on these inputs."""
    if SDPBackend.MATH in _enabled:
        return
    if query.device.type == "cpu":
        if SDPBackend.FLASH_ATTENTION in _enabled:
            reason = _cpu_flash_refusal(query, key, value, dropout_p)
            if reason is None:
                return
            warnings.warn("Flash attention kernel not used because:", stacklevel=3)
            warnings.warn(reason, stacklevel=3)
            raise RuntimeError("No available kernel.  Aborting execution.")
    elif _enabled.intersection(_FUSED_CUDA):
        return
    raise RuntimeError(_NO_VIABLE)


from . import bias, flex_attention  # noqa: E402  (reachable after importing the package, as in PyTorch)
_SUBMODULES = (bias, flex_attention)
