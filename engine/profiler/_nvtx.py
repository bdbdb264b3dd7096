"""``emit_nvtx``: each op, backward node and ``record_function`` range as an NVTX range, for Nsight
Systems / nvprof timelines (torch.autograd.profiler.emit_nvtx).

Ranges go through CuPy's NVTX binding (``cupy.cuda.nvtx``). Where NVTX is absent (no CuPy, or a CuPy
built without it, as on this project's test machines) the context does nothing.
"""
from .. import _device
from . import _hooks


def _nvtx():
    """CuPy's NVTX module where it can mark ranges, else None."""
    if _device.cupy_module() is None:
        return None
    try:
        from cupy.cuda import nvtx
    except ImportError:
        return None
    return nvtx if getattr(nvtx, "available", True) else None


class _NvtxListener:
    """Pushes an NVTX range as each call begins and pops it as it ends."""

    def __init__(self, nvtx, record_shapes):
        self.nvtx, self.record_shapes = nvtx, record_shapes

    def module_name(self, module):
        return type(module).__name__

    def begin(self, name, cat, fn, arrays):
        if self.record_shapes and arrays:
            name += f", sizes = {[list(getattr(a, 'shape', ())) for a in arrays]}"
        self.nvtx.RangePush(name)
        return True

    def end(self, token, outputs):
        self.nvtx.RangePop()


class emit_nvtx:
    """Mark every op and backward node as an NVTX range while inside; a no-op where NVTX is absent."""

    def __init__(self, enabled=True, record_shapes=False):
        self.enabled, self.record_shapes = enabled, record_shapes
        self.entered = False
        self._listener = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("NVTX annotation context manager is already entered")
        self.entered = True
        nvtx = _nvtx()
        if nvtx is not None:
            self._listener = _NvtxListener(nvtx, self.record_shapes)
            _hooks.install(self._listener)
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.enabled:
            return False
        if self._listener is not None and _hooks.active() is self._listener:
            _hooks.uninstall()
        self._listener = None
        self.entered = False
        return False
