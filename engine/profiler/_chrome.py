"""Chrome trace export (the JSON "Trace Event Format" that chrome://tracing, Perfetto and TensorBoard's
profiler plugin read): one complete ("X") event per profiled range, in microseconds since the epoch;
ranges nest by time on their thread. Device times (CUDA) go on a second process row, "cuda"."""
import json
import os

_CUDA_PID = "cuda"


def _event(name, cat, pid, tid, ts, dur, args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": round(ts, 3),
            "dur": round(dur, 3), "args": args}


def trace_events(events, base_us):
    """The list of trace events for ``events`` (FunctionEvents), metadata rows first."""
    pid = os.getpid()
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}}]
    for tid in sorted({e.thread for e in events}):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": f"thread {tid} (python)"}})
    for e in events:
        args = {"External id": e.id}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.flops:
            args["flops"] = e.flops
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        out.append(_event(e.trace_name, e.cat, pid, e.thread, base_us + e.time_range.start, e.cpu_time_total, args))
        if e.device_range is not None:
            out.append(_event(e.trace_name, "kernel", _CUDA_PID, 0, base_us + e.device_range.start,
                              e.device_range.elapsed_us(), {"External id": e.id}))
    return out


def write_trace(events, path, base_us):
    """Write ``events`` to ``path`` as a Chrome trace JSON file (gzip-compressed for a ".gz" path)."""
    document = {"schemaVersion": 1, "displayTimeUnit": "ms", "traceEvents": trace_events(events, base_us)}
    text = json.dumps(document)
    if path.endswith(".gz"):
        import gzip
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
