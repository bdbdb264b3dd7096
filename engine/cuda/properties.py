"""What a GPU is and can do: ``get_device_properties``, the bfloat16/TF32 checks, the architectures CuPy's NVRTC
compiles for, peer access, and the NVML readings (clock, utilisation, temperature, power) as ``torch.cuda``.

NVML is reached through ``pynvml`` (the nvidia-ml-py package), as torch does; without it those calls raise
torch's ModuleNotFoundError."""
from .. import _device
from . import memory as _memory
from .memory import gpu as _cupy


def _index(device):
    if device is None:
        return _cupy().cuda.Device().id
    if isinstance(device, int):
        return device
    device = _device.device(device)
    if device.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {device}")
    return device.index if device.index is not None else _cupy().cuda.Device().id


class _CudaDeviceProperties:
    """A GPU's properties, with torch's attribute names and repr (sizes in bytes, clocks in kHz)."""

    def __init__(self, props, clock_rate, memory_clock_rate):
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.major, self.minor = int(props["major"]), int(props["minor"])
        self.total_memory = int(props["totalGlobalMem"])
        self.multi_processor_count = int(props["multiProcessorCount"])
        self.is_integrated = int(props.get("integrated", 0))
        self.is_multi_gpu_board = int(props.get("isMultiGpuBoard", 0))
        self.max_threads_per_multi_processor = int(props.get("maxThreadsPerMultiProcessor", 2048))
        self.gcnArchName = "NVIDIA CUDA"
        self.warp_size = int(props.get("warpSize", 32))
        self.uuid = _uuid(props.get("uuid", b""))
        self.L2_cache_size = int(props.get("l2CacheSize", 0))
        self.clock_rate, self.memory_clock_rate = clock_rate, memory_clock_rate
        self.memory_bus_width = int(props.get("memoryBusWidth", 0))
        self.shared_memory_per_block = int(props.get("sharedMemPerBlock", 0))
        self.shared_memory_per_multiprocessor = int(props.get("sharedMemPerMultiprocessor", 0))
        self.pci_bus_id = int(props.get("pciBusID", 0))
        self.pci_device_id = int(props.get("pciDeviceID", 0))
        self.pci_domain_id = int(props.get("pciDomainID", 0))

    def __repr__(self):
        mib = 1024 * 1024
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // mib}MB, multi_processor_count={self.multi_processor_count}, "
                f"uuid={self.uuid}, pci_bus_id={self.pci_bus_id}, pci_device_id={self.pci_device_id}, "
                f"pci_domain_id={self.pci_domain_id}, L2_cache_size={self.L2_cache_size // mib}MB)")


def _uuid(raw):
    """The 16 bytes of a CUDA uuid as 8-4-4-4-12 hex digits."""
    text = bytes(raw).hex() if isinstance(raw, (bytes, bytearray)) else str(raw)
    if len(text) != 32:
        return text
    return "-".join((text[:8], text[8:12], text[12:16], text[16:20], text[20:]))


_CLOCK_RATE, _MEMORY_CLOCK_RATE = 13, 36  # cudaDevAttrClockRate, cudaDevAttrMemoryClockRate


def get_device_properties(device=None):
    """The properties of ``device`` (default: the current GPU)."""
    cp = _cupy()
    index = _index(device)
    if not 0 <= index < cp.cuda.runtime.getDeviceCount():
        raise AssertionError("Invalid device id")
    props = cp.cuda.runtime.getDeviceProperties(index)
    clocks = [props.get(key) for key in ("clockRate", "memoryClockRate")]  # gone from CUDA 13's struct
    for i, attribute in enumerate((_CLOCK_RATE, _MEMORY_CLOCK_RATE)):
        if clocks[i] is None:
            clocks[i] = cp.cuda.runtime.deviceGetAttribute(attribute, index)
    return _CudaDeviceProperties(props, int(clocks[0]), int(clocks[1]))


def is_initialized():
    """Whether ``engine.cuda`` was set up: by ``init`` or the first of its calls that needs a GPU."""
    return _device.cuda_available() and bool(_memory._stats)


def init():
    """Set up ``engine.cuda`` now (CuPy sets CUDA up lazily): raises where there is no GPU."""
    _cupy()


def is_bf16_supported(including_emulation=True):
    """Whether bfloat16 tensors compute on this GPU: natively from compute capability 8.0; any GPU emulates
    them (``including_emulation``)."""
    if not _device.cuda_available():
        return False
    return including_emulation or get_device_properties().major >= 8


def is_tf32_supported():
    """Whether the GPU has TF32 tensor cores (compute capability 8.0 or newer)."""
    return _device.cuda_available() and get_device_properties().major >= 8


def _nvrtc_archs():
    cp = _device.cupy_module()
    if cp is None:
        return ()
    try:
        return tuple(int(a) for a in cp.cuda.nvrtc.getSupportedArchs())
    except Exception:  # NVRTC's library is missing
        return ()


def get_arch_list():
    """The architectures this CuPy's NVRTC compiles kernels for (``sm_XY``): the engine compiles its kernels at run
    time, so that is what it runs on."""
    return [f"sm_{arch}" for arch in _nvrtc_archs()]


def get_gencode_flags():
    """``get_arch_list`` as nvcc's -gencode flags."""
    return " ".join(f"-gencode compute=compute_{a},code=sm_{a}" for a in _nvrtc_archs())


def can_device_access_peer(device, peer_device):
    """Whether ``device`` can read ``peer_device``'s memory directly."""
    cp = _cupy()
    index, peer = _index(device), _index(peer_device)
    count = cp.cuda.runtime.getDeviceCount()
    if not 0 <= index < count:
        raise AssertionError("Invalid device id")
    if not 0 <= peer < count:
        raise AssertionError("Invalid peer device id")
    return index != peer and bool(cp.cuda.runtime.deviceCanAccessPeer(index, peer))


# ---- NVML ----------------------------------------------------------------------------------------
def _nvml():
    try:
        import pynvml
    except ModuleNotFoundError:
        raise ModuleNotFoundError("nvidia-ml-py does not seem to be installed or it can't be imported.") from None
    pynvml.nvmlInit()
    return pynvml


def _handle(nvml, device):
    return nvml.nvmlDeviceGetHandleByIndex(_index(device))


def clock_rate(device=None):
    """The SM clock in MHz over the last sample period (NVML)."""
    nvml = _nvml()
    return nvml.nvmlDeviceGetClockInfo(_handle(nvml, device), nvml.NVML_CLOCK_SM)


def utilization(device=None):
    """Percent of the last sample period in which a kernel ran (NVML)."""
    nvml = _nvml()
    return nvml.nvmlDeviceGetUtilizationRates(_handle(nvml, device)).gpu


def memory_usage(device=None):
    """Percent of the last sample period in which device memory was read or written (NVML)."""
    nvml = _nvml()
    return nvml.nvmlDeviceGetUtilizationRates(_handle(nvml, device)).memory


def temperature(device=None):
    """The GPU's temperature in degrees Celsius (NVML)."""
    nvml = _nvml()
    return nvml.nvmlDeviceGetTemperature(_handle(nvml, device), 0)  # NVML_TEMPERATURE_GPU


def power_draw(device=None):
    """The GPU's power draw in milliwatts (NVML)."""
    nvml = _nvml()
    return nvml.nvmlDeviceGetPowerUsage(_handle(nvml, device))


def list_gpu_processes(device=None):
    """The processes using the GPU and their memory, as text (or the line saying pynvml is missing)."""
    try:
        nvml = _nvml()
    except ModuleNotFoundError:
        return "pynvml module not found, please install nvidia-ml-py"
    index = _index(device)
    processes = nvml.nvmlDeviceGetComputeRunningProcesses(nvml.nvmlDeviceGetHandleByIndex(index))
    lines = [f"GPU:{index}"] + ([f"process {p.pid:>10d} uses {p.usedGpuMemory / (1024 * 1024):12.3f} MB GPU memory"
                                 for p in processes] or ["no processes are running"])
    return "\n".join(lines)
