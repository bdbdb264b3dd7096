"""``torch.backends.cuda``'s switches of ``scaled_dot_product_attention``'s backends (``enable_flash_sdp``,
``flash_sdp_enabled``, ... and the deprecated ``sdp_kernel`` block): the same record as
``engine.nn.attention.sdpa_kernel`` keeps, so either spelling allows or refuses a backend for the other; what the
record changes is said there (the engine has one SDPA implementation). ``is_built``: whether CuPy, the engine's
CUDA build, is installed (a GPU may still be missing). ``engine.nn`` is imported on first use: this package loads
before it."""
import contextlib
import importlib
import warnings

from ... import _device


def _attention():
    return importlib.import_module("engine.nn.attention")


def _switch(backend, name):
    def enable(enabled):
        if not isinstance(enabled, bool):
            raise RuntimeError(f"set_sdp_use_{name} expects a bool, but got {type(enabled).__name__}")
        enabled_backends = _attention()._enabled
        (enabled_backends.add if enabled else enabled_backends.discard)(_attention().SDPBackend[backend])

    def is_enabled():
        return _attention().SDPBackend[backend] in _attention()._enabled
    enable.__doc__ = f"Allow (True) or refuse (False) SDPA's {name} backend."
    is_enabled.__doc__ = f"Whether SDPA's {name} backend is allowed."
    return enable, is_enabled


enable_flash_sdp, flash_sdp_enabled = _switch("FLASH_ATTENTION", "flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _switch("EFFICIENT_ATTENTION", "mem_efficient")
enable_math_sdp, math_sdp_enabled = _switch("MATH", "math")
enable_cudnn_sdp, cudnn_sdp_enabled = _switch("CUDNN_ATTENTION", "cudnn")


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """The deprecated block of ``engine.nn.attention.sdpa_kernel``: the backends given True allowed inside it."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    backend = _attention().SDPBackend
    chosen = [name for name, on in ((backend.FLASH_ATTENTION, enable_flash), (backend.MATH, enable_math),
                                    (backend.EFFICIENT_ATTENTION, enable_mem_efficient),
                                    (backend.CUDNN_ATTENTION, enable_cudnn)) if on]
    with _attention().sdpa_kernel(chosen) as context:
        yield context


def is_built():
    """Whether the engine can run CUDA code here given a GPU: CuPy is installed."""
    return _device.cupy_module() is not None


__all__ = ["cudnn_sdp_enabled", "enable_cudnn_sdp", "enable_flash_sdp", "enable_math_sdp",
           "enable_mem_efficient_sdp", "flash_sdp_enabled", "is_built", "math_sdp_enabled",
           "mem_efficient_sdp_enabled", "sdp_kernel"]
