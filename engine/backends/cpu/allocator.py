"""Keeping freed memory in the process for the next training step (switched on by the first backward
pass, eager or in a training graph).

glibc hands large freed blocks back to the kernel: those over its mmap threshold (which never rises
past 32 MB) at once, smaller ones whenever the free top of the heap outgrows the trim threshold. A
training step allocates the same activations, gradients and scratch again, and every page of them
faults back in: resnet50 at batch 8 faulted ~44K times per step, 0.2 s of system time. With both
thresholds raised, freed blocks stay in the heap and the next step reuses them: a handful of faults,
0.02 s, and 2.25 -> 1.98 s per step (mean of three best-of-4 runs in alternating processes; one of the
three went the other way). Eager steps gain alike (medians of 6 steps in alternating processes:
1783-2235 ms against 2182-2304), and so do single layers' forward and backward: ResNet's 1x1
convolution from 64 to 256 channels on 56x56 at batch 8 (26 MB output) 49-53 -> 18-24 ms (--suite ops).
The setting holds for the whole process, every library's allocations included, which keeps its
high-water mark of memory from then on, as caching allocators do.
"""
import ctypes

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_KEPT_BYTES = 1 << 30  # blocks up to this size come from the heap, and this much free heap is kept

_retaining = None


def retain_freed_memory():
    """Make the C allocator keep freed blocks for reuse (glibc; once per process). Returns whether it
    does; False where the C library has no glibc ``mallopt`` (nothing changes there)."""
    global _retaining
    if _retaining is None:
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            _retaining = False
        else:
            mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
            _retaining = (mallopt(_M_MMAP_THRESHOLD, _KEPT_BYTES) == 1
                          and mallopt(_M_TRIM_THRESHOLD, _KEPT_BYTES) == 1)
    return _retaining
