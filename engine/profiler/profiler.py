"""``engine.profiler.profile``: torch.profiler's context manager over the engine's ops.

A profile records while its schedule says RECORD (always, without a schedule): every op call (named as
aten's op where the mapping is plain, see ``_names``), every backward node, leaf accumulations,
``record_function`` ranges, and with ``with_modules`` every ``nn.Module`` call ("nn.Module: Linear_0").
Recording means the engine's entry points are wrapped (``_hooks``); outside recording they are the
original functions, so a program pays nothing for a profile that is off or waiting.
"""
import enum
import functools
import os
import socket
import time
import warnings

from .. import _device
from . import _hooks
from ._events import EventList
from ._record_function import record_function
from ._recorder import Recorder
from ._schedule import ProfilerAction, default_schedule


class ProfilerActivity(enum.Enum):
    """Where activity is timed: host ops (CPU) or device kernels (CUDA)."""

    CPU = 0
    CUDA = 2
    XPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities():
    """The activities this build can profile: CPU, and CUDA where a GPU and CuPy are present."""
    found = {ProfilerActivity.CPU}
    if _device.cuda_available():
        found.add(ProfilerActivity.CUDA)
    return found


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` that writes each trace into ``dir_name`` as torch names it,
    "<worker>.<ns timestamp>.pt.trace.json[.gz]" (worker: "<hostname>_<pid>"), for TensorBoard."""

    def handler(prof):
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as error:
            raise RuntimeError("Can't create directory: " + dir_name) from error
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))

    return handler


def _warn_schedule(message):
    return functools.partial(warnings.warn, "Incorrect schedule: " + message, stacklevel=3)


class profile:
    """Profile the engine's ops in a ``with`` block (torch.profiler.profile).

    ``activities``: ProfilerActivity values (default: ``supported_activities()``); CUDA times ops with
    CUDA events where a GPU is present (untested here: no GPU on the test machines) and is dropped with a
    warning where none is. ``schedule``: step -> ProfilerAction (see ``schedule``); with one, each step
    is a "ProfilerStep#<n>" range. ``on_trace_ready(prof)`` runs at the end of each recorded cycle.
    ``record_shapes``, ``profile_memory`` (bytes of the arrays each op returns), ``with_stack`` (the
    Python frames outside the engine), ``with_flops`` (matmul, linear and convolution), ``with_modules``
    (nn.Module calls as ranges). ``experimental_config``, ``execution_trace_observer`` and
    ``acc_events`` are accepted for torch's signature and have no effect.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False):
        activities = set(supported_activities() if activities is None else activities)
        if ProfilerActivity.CUDA in activities and not _device.cuda_available():
            warnings.warn("CUDA is not available: the profile times CPU activity only", stacklevel=2)
            activities.discard(ProfilerActivity.CUDA)
        self.activities = activities
        self.use_device = "cuda" if ProfilerActivity.CUDA in activities else None
        self.record_shapes, self.profile_memory, self.with_stack = record_shapes, profile_memory, with_stack
        self.with_flops, self.with_modules = with_flops, with_modules
        self.record_steps = schedule is not None
        self.schedule = schedule or default_schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._recorder = None
        self._events = None
        self._step_range = None
        self._actions = self._action_table()

    # ---- the state machine -----------------------------------------------------------------------
    def _action_table(self):
        A = ProfilerAction
        ready = [self.stop_trace, self._trace_ready]
        table = {
            (A.NONE, A.WARMUP): [self.prepare_trace],
            (A.NONE, A.RECORD): [self.prepare_trace, self.start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (A.WARMUP, A.NONE): [_warn_schedule("WARMUP followed by NONE"), self.start_trace, self.stop_trace],
            (A.WARMUP, A.RECORD): [self.start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self.start_trace],
            (A.RECORD, A.NONE): [_warn_schedule("RECORD followed by NONE"), self.stop_trace],
            (A.RECORD, A.WARMUP): [_warn_schedule("RECORD followed by WARMUP"), self.stop_trace],
            (A.RECORD_AND_SAVE, A.NONE): ready,
            (A.RECORD_AND_SAVE, A.WARMUP): ready + [self.prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): ready + [self.prepare_trace, self.start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): ready + [self.prepare_trace, self.start_trace],
            (A.WARMUP, None): [self.start_trace, self.stop_trace],
            (A.RECORD, None): ready,
            (A.RECORD_AND_SAVE, None): ready,
        }
        return table

    def _transit(self, previous, current):
        for action in self._actions.get((previous, current), ()):
            action()

    def prepare_trace(self):
        """Start a new cycle: forget the last trace's pending recorder."""
        self._recorder = None

    def start_trace(self):
        """Begin recording: wrap the engine's entry points."""
        self._recorder = Recorder(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops,
                                  self.use_device)
        _hooks.install(self._recorder, self.with_modules)

    def stop_trace(self):
        """Stop recording: restore the engine's entry points; the trace becomes ``events()``."""
        if self._recorder is None:
            return
        if _hooks.active() is self._recorder:
            _hooks.uninstall()
        self._events = self._recorder.finish()
        self._recorder = None

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # ---- public API --------------------------------------------------------------------------------
    def start(self):
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step()

    def stop(self):
        self._close_step()
        self._transit(self.current_action, None)

    def step(self):
        """Mark the start of the next step; the schedule decides what the profiler does in it."""
        self._close_step()
        previous = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(previous, self.current_action)
        self._open_step()

    def _open_step(self):
        if self.record_steps:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _close_step(self):
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def events(self):
        """The events of the last finished trace (FunctionEvents in order of their start)."""
        if self._events is None:
            return EventList(use_device=self.use_device)
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Events summed per name (and per input shapes / top ``group_by_stack_n`` frames when asked)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path):
        """Write the last trace as Chrome trace JSON (gzip when ``path`` ends in ".gz")."""
        self.events().export_chrome_trace(path)
