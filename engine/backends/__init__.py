"""Compute backends: the one table of kernel families every device implements, and the device runtimes.

An op that needs a device kernel (a convolution, a pooling window, NMS, RoIAlign, a fused pass)
asks ``kernels(array, family)`` for that family on the array's device and calls the kernel by name.
``KERNELS`` below lists every family and the kernels it holds; each device package lists its
family modules explicitly (``engine.backends.cpu.families()``, ``engine.backends.cuda.families()``),
and a test checks that both modules of a family define every kernel with the same signature.

``runtime(array_or_device)`` is the device's small runtime (``<device>/runtime.py``): what a
backward pass prepares, scratch release, and whether an inference batch may run as several streams.
Autograd and ``nn.Graph`` call it without knowing which device they run on.
"""
from .._device import device as _device, device_of
from . import cpu, cuda, cudnn  # noqa: F401  (torch.backends.cuda / cudnn switches)
from . import mkldnn, mps, opt_einsum, quantized  # noqa: F401  (torch.backends' other switches)
from .epilogue import Epilogue

#: family -> the kernels each device's module of that family defines (same names, same signatures)
KERNELS = {
    "conv": ("conv2d_forward", "conv2d_backward", "conv_transpose2d_forward", "conv_transpose2d_backward"),
    "pool": ("max_pool2d_forward", "max_pool2d_values_forward", "max_pool2d_backward",
             "avg_pool2d_forward", "avg_pool2d_backward",
             "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward",
             "adaptive_max_pool2d_forward", "adaptive_max_pool2d_backward"),
    "interpolate": ("interpolate_forward", "interpolate_backward"),
    "roi": ("roi_align_forward", "roi_align_backward", "roi_pool_forward", "roi_pool_backward",
            "ps_roi_align_forward", "ps_roi_align_backward", "ps_roi_pool_forward", "ps_roi_pool_backward"),
    "deform_conv": ("deform_conv2d_forward", "deform_conv2d_backward"),
    "nms": ("nms",),
    "pointwise": ("relu", "relu_backward", "masked_grad", "sigmoid", "binary_context"),
    "norm": ("scale_shift", "centred", "affine_"),
    "gemm": ("matmul", "autocast_matmul"),
}
#: families only the CPU backend has: PyTorch's quantized kernels (fbgemm, qnnpack) are CPU kernels, and so are ours
CPU_ONLY = {
    "quantized": ("quantize", "quantize_per_channel", "dequantize", "dequantize_per_channel", "conv2d", "linear",
                  "add", "mul", "add_scalar", "mul_scalar", "cat", "relu", "max_pool2d", "avg_pool2d",
                  "adaptive_avg_pool2d", "hardswish", "hardsigmoid", "spatial_mean", "conv2d_weight_bound"),
}

_FAMILIES = {**KERNELS, **CPU_ONLY}
_DEVICE_NAMES = {"cpu": "CPU", "cuda": "CUDA"}
_sets = {}


class KernelSet:
    """The kernels of one family on one device, as attributes; a kernel the device lacks raises
    ``NotImplementedError: no CUDA kernel for max_pool2d_forward``."""

    def __init__(self, device_type, family, module):
        self._device_type, self._family = device_type, family
        for name in _FAMILIES[family]:
            fn = getattr(module, name, None)
            if fn is not None:
                setattr(self, name, fn)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        where = "" if name in _FAMILIES[self._family] else f" (not a kernel of the {self._family!r} family)"
        raise NotImplementedError(f"no {_DEVICE_NAMES[self._device_type]} kernel for {name}{where}")


def _device_package(device_type):
    return cpu if device_type == "cpu" else cuda


def kernels(array, family):
    """The ``family`` kernels (see ``KERNELS``) for ``array``'s device."""
    device_type = device_of(array).type
    found = _sets.get((device_type, family))
    if found is None:
        if family in CPU_ONLY and device_type != "cpu":
            raise NotImplementedError(f"the {family} kernels run on the CPU only")
        if family not in _FAMILIES:
            raise KeyError(f"unknown kernel family {family!r}; the families are {sorted(_FAMILIES)}")
        module = _device_package(device_type).families()[family]
        found = _sets[(device_type, family)] = KernelSet(device_type, family, module)
    return found


def runtime(where):
    """The runtime module of a device, given as a device, a device string or an array on it."""
    device_type = _device(where).type if isinstance(where, (str, _device)) else device_of(where).type
    return _device_package(device_type).runtime


__all__ = ["KERNELS", "CPU_ONLY", "Epilogue", "KernelSet", "kernels", "runtime"]
