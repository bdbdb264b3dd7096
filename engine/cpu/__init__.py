"""``engine.cpu``: torch.cpu's device module, so device-generic code (``getattr(torch, device.type)``,
``torch.get_device_module("cpu")``) finds the same calls for the CPU as for CUDA.

The CPU runs every op to completion before the call returns, so synchronize, streams and events have nothing to
wait for: they keep torch.cpu's API (a current stream that ``stream()`` swaps, events that are always complete) and
do no work. ``get_capabilities`` reports what the machine is, read from ``/proc/cpuinfo`` where it exists.
"""
import os
import platform

from . import amp  # noqa: F401

__all__ = ["Event", "Stream", "StreamContext", "current_device", "current_stream", "device_count",
           "get_capabilities", "is_available", "is_initialized", "set_device", "stream", "synchronize"]


def is_available():
    """The CPU is always there."""
    return True


def is_initialized():
    """The CPU needs no initialisation: always True, as torch.cpu's."""
    return True


def device_count():
    """One CPU device, whatever its core count (``engine.get_num_threads`` sets how many threads it uses)."""
    return 1


def current_device():
    """The name of the current CPU device: ``"cpu"``."""
    return "cpu"


def set_device(device):
    """Accepted and ignored, as torch.cpu's: there is only one CPU device."""


def synchronize(device=None):
    """Nothing to wait for: CPU ops finish before they return."""


class Stream:
    """A CPU stream: the API of a device stream, with nothing queued on it."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        """Nothing to wait for."""

    def wait_event(self, event):
        """Nothing to wait for."""

    def record_event(self, event=None):
        """Nothing to record; returns None as torch.cpu's does."""


class Event:
    """A CPU event: complete as soon as it is recorded, since the CPU runs ops in order as they are called."""

    def query(self):
        return True

    def record(self, stream=None):
        """Nothing to mark."""

    def synchronize(self):
        """Nothing to wait for."""

    def wait(self, stream=None):
        """Nothing to wait for."""


_default_stream = Stream()
_current_stream = _default_stream


def current_stream(device=None):
    """The stream that ``stream()`` made current (the default one otherwise)."""
    return _current_stream


class StreamContext:
    """Makes ``stream`` current inside a ``with`` block and restores the previous one after it."""

    def __init__(self, stream):
        self.stream = stream
        self.previous = None

    def __enter__(self):
        global _current_stream
        self.previous = _current_stream
        if self.stream is not None:
            _current_stream = self.stream
        return self.stream

    def __exit__(self, *exc_info):
        global _current_stream
        _current_stream = self.previous


def stream(stream):
    """``with engine.cpu.stream(s):`` makes ``s`` the current CPU stream (None leaves it as it is)."""
    return StreamContext(stream)


def _cpuinfo():
    """The first processor's fields of /proc/cpuinfo ({} where the file does not exist: not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read().split("\n\n", 1)[0]
    except OSError:
        return {}
    fields = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in fields}


# torch's capability names for the x86 flags /proc/cpuinfo lists (most are the same word; fma3 is "fma", the
# avx512 family drops the underscore)
_FLAG_NAMES = {"fma3": "fma", "sse3": "pni", "avx512_f": "avx512f", "avx512_cd": "avx512cd", "avx512_bw": "avx512bw",
               "avx512_dq": "avx512dq", "avx512_vl": "avx512vl", "avx512_bf16": "avx512_bf16",
               "avx512_vnni": "avx512_vnni", "avx512_fp16": "avx512_fp16", "avx512_ifma": "avx512ifma",
               "avx512_vbmi": "avx512vbmi", "avx512_vbmi2": "avx512_vbmi2", "amx_bf16": "amx_bf16",
               "amx_int8": "amx_int8", "amx_tile": "amx_tile", "f16c": "f16c", "popcnt": "popcnt", "avx": "avx",
               "avx2": "avx2", "sse": "sse", "sse2": "sse2", "ssse3": "ssse3", "sse4_1": "sse4_1",
               "sse4_2": "sse4_2", "sse4a": "sse4a", "bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm",
               "aes": "aes", "sha": "sha_ni", "clflushopt": "clflushopt", "clwb": "clwb", "avx_vnni": "avx_vnni"}


def get_capabilities():
    """What this CPU is and which x86 instruction-set extensions it has, under torch.cpu's key names (the subset
    that /proc/cpuinfo reports: where it is missing, only architecture, name and core count)."""
    info = _cpuinfo()
    capabilities = {"architecture": platform.machine(), "cpu_name": info.get("model name", platform.processor()),
                    "num_logical_cores": os.cpu_count()}
    flags = set(info.get("flags", "").split())
    if flags:
        capabilities.update({name: flag in flags for name, flag in _FLAG_NAMES.items()})
    return capabilities
