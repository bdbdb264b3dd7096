"""The C allocator setting that training switches on (a training graph, or the first backward pass):
freed blocks stay in the process."""
import os
import platform
import subprocess
import sys

import pytest

# Allocates and frees a 48 MB array three times (above the largest mmap threshold glibc picks by itself)
# and prints how many page faults the last round took. numpy's huge-page advice is off in the child, so
# pages fault in 4 KB at a time whatever huge pages the kernel has free (with it on, a round faulted as
# few as ~24 times whenever 2 MB pages were at hand, and the default case read as retained).
CHECK = r"""
import resource, sys
import numpy as np
from engine.backends.cpu.allocator import retain_freed_memory
if sys.argv[1] == "retain":
    assert retain_freed_memory()
elif sys.argv[1] == "backward":
    import engine
    engine.ones(3, requires_grad=True).sum().backward()
counts = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = np.ones(12 << 20, np.float32)
    del a
    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(counts[-1])
"""


def _last_round_faults(mode):
    env = dict(os.environ, NUMPY_MADVISE_HUGEPAGE="0")
    out = subprocess.run([sys.executable, "-c", CHECK, mode], capture_output=True, text=True, check=True, env=env)
    return int(out.stdout)


@pytest.mark.slow  # times page faults over many allocations
@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt and its thresholds are glibc's")
def test_retain_freed_memory_stops_refaulting():
    assert _last_round_faults("default") > 100  # every round faults the array's pages in again
    assert _last_round_faults("retain") < 20


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt and its thresholds are glibc's")
def test_a_backward_pass_retains_freed_memory():
    """Eager training reallocates the same activations and gradients each step, as a training graph does."""
    assert _last_round_faults("backward") < 20
