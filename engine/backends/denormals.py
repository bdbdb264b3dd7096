"""``torch.set_flush_denormal``: flush denormal floats to zero on x86 CPUs, for the calling thread.

x86's MXCSR register holds two switches: FTZ (bit 15) writes denormal results as zero and DAZ (bit 6) reads
denormal inputs as zero; arithmetic on denormals is otherwise many times slower. Python cannot reach the register
itself, but glibc's ``fegetenv``/``fesetenv`` carry it in ``fenv_t`` (x86-64 layout: the x87 environment, 28 bytes,
then ``__mxcsr``), so the switches are set through them with ctypes, as torch sets them with its intrinsics. Like
torch's, the setting is per thread (the thread that calls it: numpy's element-wise loops run there; BLAS worker
threads keep their own). Elsewhere (not x86-64, not glibc) it returns False, as torch does where SSE3 is missing.
"""
import ctypes
import ctypes.util
import platform

_FTZ_DAZ = (1 << 15) | (1 << 6)
_MXCSR_OFFSET = 28  # bytes into glibc's x86-64 fenv_t
_FENV_BYTES = 32


def _libm():
    """glibc's libm on x86-64 Linux, None elsewhere."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    name = ctypes.util.find_library("m")
    if name is None or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(name)


def set_flush_denormal(mode):
    """Turn flushing of denormals on (``mode`` True) or off for this thread; whether the CPU supports it."""
    libm = _libm()
    if libm is None:
        return False
    env = ctypes.create_string_buffer(_FENV_BYTES)
    if libm.fegetenv(env) != 0:
        return False
    mxcsr = ctypes.c_uint32.from_buffer(env, _MXCSR_OFFSET)
    mxcsr.value = (mxcsr.value | _FTZ_DAZ) if mode else (mxcsr.value & ~_FTZ_DAZ)
    return libm.fesetenv(env) == 0
