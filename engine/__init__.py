"""engine: a PyTorch-compatible deep-learning engine on numpy (CPU) and CuPy (GPU).

``import engine as torch`` and ordinary PyTorch model code runs: tensors with autograd, ``nn``,
``nn.functional``, ``optim`` and ``utils.data``.
"""
import sys as _sys

from ._dtype import (bfloat16, bool_ as bool, complex64, complex128, dtype, float16, float32, float64,
                     get_default_dtype, int8, int16, int32, int64, promote_types, set_default_dtype, uint8, uint16,
                     uint32, uint64)
from ._device import device, get_default_device, get_device_module, set_default_device  # noqa: F401
from ._layout import (channels_last, channels_last_3d, contiguous_format, layout, memory_format,  # noqa: F401
                      preserve_format, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, strided)
from .tensor import Size, Tensor, is_tensor
from .random import Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from .autograd import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
                       set_grad_enabled)
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from .ops import *  # noqa: F401,F403
from .storage import *  # noqa: F401,F403  (torch.UntypedStorage ..., Tensor.untyped_storage, set_)
from .serialization import load, save  # noqa: F401
from . import amp, autograd, cpu, cuda, jit, linalg, nn, ops, optim, return_types, utils  # noqa: F401
from . import fft  # noqa: F401  (torch.fft; stft's ops import it anyway)
from . import sparse  # noqa: F401  (torch.sparse; also Tensor.to_sparse* and sparse gradients reaching leaves)
from .sparse import (ccol_indices_copy, col_indices_copy, crow_indices_copy, dsmm, hspmm, indices_copy,  # noqa: F401
                     row_indices_copy, saddmm, smm, sparse_bsc_tensor, sparse_bsr_tensor, sparse_compressed_tensor,
                     sparse_coo_tensor, sparse_csc_tensor, sparse_csr_tensor, spmm, sspaddmm, values_copy)
from .cuda.memory import OutOfMemoryError  # noqa: F401  (torch.OutOfMemoryError, also engine.cuda's)
from .legacy_tensor_types import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor, DoubleTensor,  # noqa: F401
                                  FloatTensor, HalfTensor, IntTensor, LongTensor, ShortTensor,
                                  set_default_tensor_type)
from .amp.autocast_mode import (autocast, clear_autocast_cache, get_autocast_dtype,  # noqa: F401
                                is_autocast_cache_enabled, is_autocast_enabled, set_autocast_cache_enabled,
                                set_autocast_dtype, set_autocast_enabled)
from .amp.deprecated_state import (autocast_decrement_nesting, autocast_increment_nesting,  # noqa: F401
                                   get_autocast_cpu_dtype, get_autocast_gpu_dtype, is_autocast_cpu_enabled,
                                   set_autocast_cpu_dtype, set_autocast_cpu_enabled, set_autocast_gpu_dtype)
from . import accelerator  # noqa: F401  (after cuda, which it wraps)
from . import multiprocessing  # noqa: F401  (after nn: registers how tensors cross processes)
from . import distributed, onnx  # noqa: F401  (reachable after ``import engine``, as torch's)
from . import distributions  # noqa: F401  (as torch.distributions; its classes load on first use)
from . import compiler  # noqa: F401  (after nn: compiled modules are nn.Graphs)
from ._dtype import qint8, qint32, quint8  # noqa: F401
from .quantized_tensor import (dequantize, per_channel_affine, per_channel_symmetric, per_tensor_affine,  # noqa: F401
                               per_tensor_symmetric, qscheme, quantize_per_channel, quantize_per_tensor)
from . import ao  # noqa: F401  (after nn: quantized layers are modules)
from .ao.quantization.fake_quantize import (fake_quantize_per_channel_affine,  # noqa: F401
                                            fake_quantize_per_tensor_affine)
nn.quantized = ao.nn.quantized  # torch.nn.quantized, the older name torchvision's quantizable models use
_sys.modules["engine.nn.quantized"] = ao.nn.quantized
nn.intrinsic, nn.qat = ao.nn.intrinsic, ao.nn.qat  # torch.nn.intrinsic and torch.nn.qat, the same older names
_sys.modules["engine.nn.intrinsic"], _sys.modules["engine.nn.qat"] = ao.nn.intrinsic, ao.nn.qat
quantization = ao.quantization  # torch.quantization, the older name of torch.ao.quantization
_sys.modules["engine.quantization"] = ao.quantization
from .compiler import compile  # noqa: F401
from .small_names import *  # noqa: F401,F403  (GradScaler, q_scale, has_lapack, ...; three Tensor methods)
from .small_names import _assert  # noqa: F401  (torch._assert, which torchvision's models call)
from .symbolic_numbers import *  # noqa: F401,F403  (sym_max, sym_int, ...: torch's helpers for traceable sizes)
from .control_flow import cond, while_loop  # noqa: F401
from .events import Event, Stream  # noqa: F401
from .lobpcg import lobpcg  # noqa: F401
from .backends.denormals import set_flush_denormal  # noqa: F401
from .backends.determinism import (are_deterministic_algorithms_enabled, get_deterministic_debug_mode,  # noqa: F401
                                  is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode,
                                  use_deterministic_algorithms)
from .backends.float32_precision import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: F401
from .utils.dlpack import from_dlpack, to_dlpack  # noqa: F401
from ._repr import set_printoptions  # noqa: F401

half, float, double = float16, float32, float64
cfloat, cdouble = complex64, complex128
short, int, long = int16, int32, int64

from .version import __version__  # noqa: E402,F401  (also makes engine.version, torch.version's twin)


def is_floating_point(input):
    return input.is_floating_point()


def numel(input):
    return input.numel()


def result_type(tensor, other):
    from ._dtype import result_type as _result_type
    return _result_type(tensor, other)


def channel_shuffle(input, groups):
    """``torch.channel_shuffle`` (see ``nn.functional.channel_shuffle``)."""
    return nn.functional.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


newaxis = None  # ``x[:, torch.newaxis]``, numpy's spelling of None in an index


def get_num_threads():
    from .utils.threads import get_num_threads as _get
    return _get()


def set_num_threads(n):
    from .utils.threads import set_num_threads as _set
    _set(n)


def get_num_interop_threads():
    from .utils.threads import get_num_interop_threads as _get
    return _get()


def set_num_interop_threads(n):
    from .utils.threads import set_num_interop_threads as _set
    _set(n)


_warn_always = [False]  # torch.set_warn_always's switch


def set_warn_always(b):
    """Whether warnings torch gives once per process are given every time (kept for code that sets and reads it;
    the engine's warnings follow Python's ``warnings`` filters)."""
    if not isinstance(b, type(True)):  # ``bool`` is the dtype here
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _warn_always[0] = b


def is_warn_always_enabled():
    """``set_warn_always``'s current setting."""
    return _warn_always[0]


# torch's namespaces that ``import torch`` makes reachable and engine code does not use itself: imported on first
# access (``engine.special.erfcx``, ``engine.vmap``), which keeps ~60 ms off ``import engine`` (0.52 -> 0.46 s)
_LAZY_SUBMODULES = frozenset(("func", "fx", "hub", "library", "mps", "profiler", "signal", "special", "testing"))


def __getattr__(name):
    import importlib
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name == "vmap":
        return importlib.import_module(f"{__name__}.func").vmap
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
