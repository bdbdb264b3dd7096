"""The listener a profile installs (``_hooks``): one ``FunctionEvent`` per op, backward node, module call
and ``record_function`` range, nested as they ran on each thread.

CPU times come from ``time.perf_counter_ns``. With CUDA timing on (a profile asked for the CUDA activity
and a GPU is present), each op also records a CUDA event pair on the current stream as it begins and
ends; after the trace stops, a device synchronize turns them into the op's device time (from the start
event being reached to the end event being reached: the op's kernels plus any queue gap between them).
That path needs a GPU and CuPy, which this project's test machines lack: it is written, not tested here.
With ``profile_memory`` an op's self memory is the bytes of the new arrays it returned (views and
in-place results allocate nothing); frees are not seen, so no event shows negative memory as torch's can.
"""
import os
import sys
import threading
import time

from .. import _device
from ._events import EventList, FunctionEvent, Interval
from ._names import op_flops

_ENGINE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _python_stack():
    """The caller's frames outside the engine, innermost first, as torch writes them: "file.py(12): fn"."""
    frame = sys._getframe(3)
    out = []
    while frame is not None:
        code = frame.f_code
        if not code.co_filename.startswith(_ENGINE_DIR):
            out.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return out


def _shapes(arrays):
    return [list(getattr(a, "shape", ())) for a in arrays]


class Recorder:
    """Collects the events of one trace; ``finish()`` closes it and returns them as an ``EventList``."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, with_flops=False,
                 use_device=None):
        self.record_shapes, self.profile_memory = record_shapes, profile_memory
        self.with_stack, self.with_flops = with_stack, with_flops
        self.use_device = use_device
        self.events = []
        self._threads = {}
        self._module_names = {}
        self._class_counts = {}
        self._closed = False
        self._cuda_reference = None
        if use_device == "cuda" and _device.cuda_available():
            self._cuda_reference = self._cuda_event()
        self.base_epoch_us = time.time_ns() / 1000.0
        self._base_ns = time.perf_counter_ns()

    @staticmethod
    def _cuda_event():
        event = _device.cupy().cuda.Event()
        event.record()
        return event

    def _thread(self):
        key = threading.get_ident()
        state = self._threads.get(key)
        if state is None:
            state = self._threads[key] = ([], threading.get_native_id())
        return state

    def module_name(self, module):
        """torch's name of a module's forward event: its class and a per-class index in order of first call."""
        name = self._module_names.get(id(module))
        if name is None:
            cls = type(module).__name__
            index = self._class_counts.get(cls, 0)
            self._class_counts[cls] = index + 1
            name = self._module_names[id(module)] = f"{cls}_{index}"
        return name

    def begin(self, name, cat, fn, arrays):
        if self._closed:
            return None
        start = (time.perf_counter_ns() - self._base_ns) / 1000.0
        stack, tid = self._thread()
        event = FunctionEvent(len(self.events), name, tid, start, start, cat=cat, use_device=self.use_device,
                              input_shapes=_shapes(arrays) if self.record_shapes else None,
                              stack=_python_stack() if self.with_stack else None)
        if stack:
            event.cpu_parent = stack[-1]
            stack[-1].cpu_children.append(event)
        stack.append(event)
        self.events.append(event)
        cuda_start = self._cuda_event() if self._cuda_reference is not None and cat == "cpu_op" else None
        return event, fn, arrays, cuda_start

    def end(self, token, outputs):
        if token is None or self._closed:
            return
        event, fn, arrays, cuda_start = token
        event.time_range.end = (time.perf_counter_ns() - self._base_ns) / 1000.0
        if cuda_start is not None:
            event._cuda = (cuda_start, self._cuda_event())
        stack = self._thread()[0]
        if stack and stack[-1] is event:
            stack.pop()
        elif event in stack:
            stack.remove(event)
        if fn is not None:
            if self.profile_memory and not (fn.inplace or fn.is_view):
                self._count_memory(event, outputs)
            if self.with_flops:
                event.flops = op_flops(fn, arrays, outputs)

    @staticmethod
    def _count_memory(event, outputs):
        for array in outputs:
            nbytes = getattr(array, "nbytes", 0)
            if _device.is_cuda_array(array):
                event.self_device_memory_usage += nbytes
            else:
                event.self_cpu_memory_usage += nbytes

    def finish(self):
        """Close the events still open (their end is now), read the CUDA times, and return the events."""
        if not self._closed:
            now = (time.perf_counter_ns() - self._base_ns) / 1000.0
            for stack, _ in self._threads.values():
                for event in stack:
                    event.time_range.end = now
                stack.clear()
            self._closed = True
            if self._cuda_reference is not None:
                self._read_cuda_times()
        return EventList(self.events, use_device=self.use_device, profile_memory=self.profile_memory,
                         with_flops=self.with_flops, trace_base_us=self.base_epoch_us)

    def _read_cuda_times(self):
        cupy = _device.cupy()
        cupy.cuda.runtime.deviceSynchronize()
        reference = self._cuda_reference
        for event in self.events:
            pair = event.__dict__.pop("_cuda", None)
            if pair is not None:
                start = cupy.cuda.get_elapsed_time(reference, pair[0]) * 1000.0
                end = cupy.cuda.get_elapsed_time(reference, pair[1]) * 1000.0
                event.device_range = Interval(start, end)
