"""``engine.autograd.profiler``: torch's older profiler API (``torch.autograd.profiler.profile``), on the
same recorder as ``engine.profiler``; plus ``record_function`` and ``emit_nvtx``."""
import warnings

from .. import _device
from ..profiler import _hooks
from ..profiler._events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401  (torch's names here)
from ..profiler._nvtx import emit_nvtx
from ..profiler._record_function import record_function
from ..profiler._recorder import Recorder


class profile:
    """Record every op, backward node and ``record_function`` range in a ``with`` block.

    ``use_device="cuda"`` (or the deprecated ``use_cuda=True``) adds device times where a GPU is
    present (not testable on this project's machines); ``record_shapes``, ``with_flops``,
    ``profile_memory``, ``with_stack`` and ``with_modules`` as in ``engine.profiler.profile``. The
    other arguments are accepted for torch's signature and change nothing.
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        if use_device == "cuda" and not _device.cuda_available():
            warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
            use_device = None
        self.enabled, self.use_device = enabled, use_device
        self.record_shapes, self.with_flops, self.profile_memory = record_shapes, with_flops, profile_memory
        self.with_stack, self.with_modules = with_stack, with_modules
        self.entered = False
        self.function_events = None
        self._recorder = None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops,
                                  self.use_device)
        _hooks.install(self._recorder, self.with_modules)
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.enabled:
            return False
        if _hooks.active() is self._recorder:
            _hooks.uninstall()
        self.function_events = self._recorder.finish()
        self._recorder = None
        self.entered = False
        return False

    def _check_finish(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        self._check_finish()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check_finish()
        return self.function_events.total_average()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        self._check_finish()
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path):
        self._check_finish()
        self.function_events.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self):
        self._check_finish()
        return self.function_events.self_cpu_time_total

    def __str__(self):
        self._check_finish()
        return str(self.function_events)

    def __repr__(self):
        return "<unfinished engine.autograd.profiler.profile>" if self.function_events is None else str(self)


__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent", "FunctionEventAvg"]
