"""The profiler's summary table, column for column as torch's ``key_averages().table()``: a name column
as wide as the longest name (at most ``max_name_column_width``), 12-character value columns, two spaces
between columns, dashed rules above and below the header and at the end, then the self CPU time total."""
import math

from ._events import format_memory, format_time

_WIDTH = 12
_SPACING = 2
_FLOP_UNITS = ("FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs")


def _share(time_us, total_us):
    return "NaN" if total_us == 0 else f"{time_us * 100.0 / total_us:.2f}%"


def _in_unit(time_us, time_unit):
    scale = {"s": 1e6, "ms": 1e3, "us": 1.0}.get(time_unit)
    return format_time(time_us) if scale is None else f"{time_us / scale:.3f}{time_unit}"


def _flops_scale(smallest):
    """(factor, header unit) that shows the smallest positive FLOP count with a unit of its size."""
    level = int(max(0.0, min(math.log10(smallest) / 3, len(_FLOP_UNITS) - 1)))
    return 10.0 ** (-3 * level), _FLOP_UNITS[level]


def _trim_path(path, width):
    if len(path) > width:
        path = path[len(path) - width:]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


class _Layout:
    """Column headers, widths and alignments; ``row(values)`` and ``rule`` render them."""

    def __init__(self):
        self.headers, self.widths, self.aligns = [], [], []

    def add(self, header, width, align=">"):
        self.headers.append(header)
        self.widths.append(width)
        self.aligns.append(align)

    def row(self, values):
        return "".join(f"{str(v):{a}{w}}" + " " * _SPACING for v, w, a in zip(values, self.widths, self.aligns))

    @property
    def rule(self):
        return "".join("-" * w + " " * _SPACING for w in self.widths)

    @property
    def line_length(self):
        return sum(self.widths) + _SPACING * (len(self.widths) - 1)


def build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, with_flops=False, profile_memory=False,
                top_level_events_only=False, time_unit=None):
    """Render ``events`` (FunctionEvents or FunctionEventAvgs) as text; "" for no events."""
    if len(events) == 0:
        return ""
    use_device = events[0].use_device
    device = use_device.upper() if use_device else "None"
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_width = None
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    layout = _Layout()
    layout.add("Name", name_width)
    for title in ("Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"):
        layout.add(title, _WIDTH)
    if has_device_time:
        for title in (f"Self {device}", f"Self {device} %", f"{device} total", f"{device} time avg"):
            layout.add(title, _WIDTH)
    memory_titles = ["CPU Mem", "Self CPU Mem"]
    if use_device and has_device_mem:
        memory_titles += [f"{device} Mem", f"Self {device} Mem"]
    for title in memory_titles if profile_memory else ():
        layout.add(title, _WIDTH)
    layout.add("# of Calls", _WIDTH)
    if has_shapes:
        layout.add("Input Shapes", shapes_width)
    if stacks:
        layout.add("Source Location", src_width, "<")
    flops = [e.flops for e in events if e.flops > 0]
    with_flops = with_flops and bool(flops)
    if with_flops:
        flops_factor, flops_unit = _flops_scale(min(flops))
        layout.add(f"Total {flops_unit}", _WIDTH)

    self_cpu_total = sum(e.self_cpu_time_total for e in events)
    self_device_total = sum(e.self_device_time_total for e in events if not e.is_user_annotation)
    lines = []
    if header is not None:
        lines += ["=" * layout.line_length, header]
    if top_level_events_only:
        lines += ["=" * layout.line_length, "This report only display top-level ops statistics"]
    lines += [layout.rule, layout.row(layout.headers), layout.rule]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        values = [name, _share(e.self_cpu_time_total, self_cpu_total), _in_unit(e.self_cpu_time_total, time_unit),
                  _share(e.cpu_time_total, self_cpu_total), _in_unit(e.cpu_time_total, time_unit),
                  _in_unit(e.cpu_time, time_unit)]
        if has_device_time:
            values += [_in_unit(e.self_device_time_total, time_unit),
                       _share(e.self_device_time_total, self_device_total),
                       _in_unit(e.device_time_total, time_unit), _in_unit(e.device_time, time_unit)]
        if profile_memory:
            values += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                values += [format_memory(e.device_memory_usage), format_memory(e.self_device_memory_usage)]
        values.append(e.count)
        if has_shapes:
            values.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            values.append(_trim_path(e.stack[0], src_width) if e.stack else "")
        if with_flops:
            values.append("--" if e.flops <= 0 else f"{e.flops * flops_factor:8.3f}")
        lines.append(layout.row(values))
        if stacks:
            blanks = [""] * (len(layout.headers) - 1)
            lines += [layout.row(blanks + [_trim_path(entry, src_width)]) for entry in e.stack[1:]]
            lines.append(layout.row(blanks + [""]))
    lines.append(layout.rule)
    lines.append(f"Self CPU time total: {_in_unit(self_cpu_total, time_unit)}")
    if has_device_time:
        lines.append(f"Self {device} time total: {_in_unit(self_device_total, time_unit)}")
    return "".join(line + "\n" for line in lines)
