"""The profiler's results: one ``FunctionEvent`` per timed range, their per-key averages, and the
``EventList`` that holds either and prints them (torch.autograd.profiler_util's classes, same attribute
names, so a script that reads torch's events reads these).

Times are microseconds (floats), memory bytes, as torch's.
"""
import collections


def format_time(time_us):
    """A duration as torch's tables show it: seconds, milliseconds or microseconds, 3 decimals."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_memory(nbytes):
    """A byte count in B, KB, MB or GB (two decimals above bytes), as torch's tables."""
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class Interval:
    """A ``[start, end]`` range in microseconds."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class _Formatted:
    """The ``*_str`` views and averages shared by events and averages (torch's FormattedTimesMixin)."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage

    @property
    def cuda_memory_usage(self):
        return self.device_memory_usage


for _attr in ("cpu_time", "cpu_time_total", "self_cpu_time_total", "device_time", "device_time_total",
              "self_device_time_total"):
    setattr(_Formatted, _attr + "_str", property(lambda self, a=_attr: format_time(getattr(self, a))))


class FunctionEvent(_Formatted):
    """One timed range: an op, a backward node, a ``record_function`` range or a module's forward.

    ``cat`` is the Chrome-trace category: "cpu_op", "user_annotation" or "python_function". As torch's,
    a step range "ProfilerStep#<n>" is named "ProfilerStep*" (so steps sum under one key) and keeps its
    number in ``trace_name``, the name it has in a Chrome trace.
    """

    def __init__(self, id, name, thread, start_us, end_us, cat="cpu_op", input_shapes=None, stack=None,
                 device_type="cpu", use_device=None):
        self.trace_name = name
        if name.startswith("ProfilerStep#"):
            name = "ProfilerStep*"
        self.id, self.name, self.thread, self.cat = id, name, thread, cat
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.device_type, self.use_device = device_type, use_device
        self.cpu_children, self.cpu_parent = [], None
        self.count = 1
        self.self_cpu_memory_usage = self.self_device_memory_usage = 0
        self.flops = 0
        #: device time of the op's launch-to-finish range (CUDA events), microseconds; None when not timed
        self.device_range = None
        self.is_async = self.is_remote = self.is_legacy = False
        self.node_id, self.overload_name, self.scope = -1, "", 0

    key = property(lambda self: self.name)
    is_user_annotation = property(lambda self: self.cat == "user_annotation")

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        own = 0.0 if self.device_range is None else self.device_range.elapsed_us()
        return max(own, sum(c.device_time_total for c in self.cpu_children))

    @property
    def self_device_time_total(self):
        if self.device_range is None:
            return 0.0
        return max(self.device_range.elapsed_us() - sum(c.device_time_total for c in self.cpu_children), 0.0)

    @property
    def cpu_memory_usage(self):
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def device_memory_usage(self):
        return self.self_device_memory_usage + sum(c.device_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time={self.cpu_time_str} "
                f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage}>")


class FunctionEventAvg(_Formatted):
    """The sum of the events that share one key (a name, and the input shapes when grouped by them)."""

    _SUMMED = ("cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
               "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage", "self_device_memory_usage",
               "flops", "count")

    def __init__(self):
        self.key = None
        self.input_shapes = None
        self.stack = None
        self.use_device = None
        self.is_async = self.is_remote = self.is_legacy = False
        self.is_user_annotation = False
        self.cpu_parent, self.cpu_children = None, []
        self.node_id, self.overload_name, self.scope, self.device_type = -1, "", 0, "cpu"
        for attr in self._SUMMED:
            setattr(self, attr, 0)

    def add(self, other):
        if self.key is None:
            self.key, self.input_shapes, self.stack = other.key, other.input_shapes, other.stack
            self.use_device, self.is_user_annotation = other.use_device, other.is_user_annotation
            self.cpu_parent = other.cpu_parent
        elif other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {self.key} vs {other.key}")
        for attr in self._SUMMED:
            setattr(self, attr, getattr(self, attr) + getattr(other, attr))
        return self

    __iadd__ = add

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):
    """A list of events (or of averages) that prints as torch's table and exports a Chrome trace."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False, trace_base_us=0.0):
        super().__init__(*args)
        self._use_device, self._profile_memory, self._with_flops = use_device, profile_memory, with_flops
        self._trace_base_us = trace_base_us

    def _like(self, items):
        return EventList(items, use_device=self._use_device, profile_memory=self._profile_memory,
                         with_flops=self._with_flops, trace_base_us=self._trace_base_us)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        """One ``FunctionEventAvg`` per name (and input shapes / top ``group_by_stack_n`` stack frames
        when asked), in the order the keys first occur; as torch's, an average keeps only the stack frames
        it is grouped by."""
        groups = collections.OrderedDict()
        for event in self:
            key = (event.key, event.is_user_annotation,
                   str(event.input_shapes) if group_by_input_shapes else "",
                   tuple(event.stack[:group_by_stack_n]) if group_by_stack_n > 0 else ())
            groups.setdefault(key, FunctionEventAvg()).add(event)
        averages = list(groups.values())
        for avg in averages:
            avg.stack = avg.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                avg.input_shapes = ""
        return self._like(averages)

    def total_average(self):
        """The sum of every event, under the key "Total"."""
        total = FunctionEventAvg()
        for event in self:
            for attr in FunctionEventAvg._SUMMED:
                setattr(total, attr, getattr(total, attr) + getattr(event, attr))
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The summary table in torch's layout (see ``_table.build_table``)."""
        from ._table import build_table
        return build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                           max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, with_flops=self._with_flops,
                           profile_memory=self._profile_memory, top_level_events_only=top_level_events_only,
                           time_unit=time_unit)

    def export_chrome_trace(self, path):
        """Write the events as a Chrome trace (``chrome://tracing``, Perfetto, TensorBoard's plugin)."""
        from ._chrome import write_trace
        write_trace(self, path, self._trace_base_us)

    def __str__(self):
        return self.table()

