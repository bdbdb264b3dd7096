"""``engine.profiler``: where time goes in the engine's ops, as ``torch.profiler``.

    with engine.profiler.profile(record_shapes=True) as prof:
        with engine.profiler.record_function("forward"):
            model(x)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

The profiler wraps the engine's entry points only while it records (``_hooks``): off, it costs nothing.
"""
from ._events import EventList, FunctionEvent, FunctionEventAvg
from ._record_function import record_function
from ._schedule import ProfilerAction, schedule
from .profiler import ProfilerActivity, profile, supported_activities, tensorboard_trace_handler

__all__ = ["profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity",
           "supported_activities", "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]
