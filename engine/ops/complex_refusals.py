"""torch's refusals of complex input, for the ops that compute something for complex numbers here (numpy's ufuncs
take them) but have no complex kernel in torch: one table of torch's messages and ``refuse_complex``, which an op
calls first with its tensor operands.

The messages come in families: the kernel's ``"logit_cpu" not implemented for 'ComplexFloat'`` (an entry that
is a kernel name; on CUDA the kernel is ``logit_cuda``), and the ops' own lines (an entry that is an
(error type, message) pair).
"""
import numbers

import numpy as np

from .._dtype import result_type

#: op name -> the kernel torch names, or (error type, message)
REFUSALS = {
    "deg2rad": (RuntimeError, "deg2rad is not supported for complex tensors."),
    "rad2deg": (RuntimeError, "rad2deg is not supported for complex tensors."),
    "fmax": (RuntimeError, "fmax not implemented for complex tensors."),
    "fmin": (RuntimeError, "fmin not implemented for complex tensors."),
    "heaviside": (RuntimeError, "heaviside is not yet implemented for complex tensors."),
    "isposinf": (RuntimeError, "isposinf does not support complex inputs."),
    "isneginf": (RuntimeError, "isneginf does not support complex inputs."),
    "signbit": (NotImplementedError, "signbit is not implemented for complex tensors."),
    "relu": (NotImplementedError, "clamp is not supported for complex types"),
    "hardtanh": (NotImplementedError, "clamp is not supported for complex types"),
    "relu6": (NotImplementedError, "clamp is not supported for complex types"),
    "sort": (RuntimeError, " Sort does not support complex dtypes on CPU"),
    "topk": (RuntimeError, " topk does not support complex dtypes on CPU"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
    "logit": "logit_cpu", "erfc": "erfc_vml_cpu", "erfinv": "erfinv_vml_cpu", "lgamma": "lgamma_vml_cpu",
    "digamma": "digamma", "trigamma": "trigamma", "polygamma": "polygamma", "i0": "i0_vml_cpu",
    "mvlgamma": "arange_cpu", "erfcx": "erfcx_cpu", "ndtri": "ndtri_cpu", "log_ndtr": "log_ndtr_cpu",
    "i0e": "i0e_cpu", "i1": "i1_cpu", "i1e": "i1e_cpu", "entr": "entr_cpu", "xlogy": "xlogy_cpu",
    "xlog1py": "xlog1py_cpu", "zeta": "zeta_cpu", "hypot": "hypot_cpu", "copysign": "copysign_cpu",
    "nextafter": "nextafter_cpu", "gcd": "gcd_cpu", "lcm": "lcm_cpu", "cummax": "cummax_cpu",
    "cummin": "cummin_cpu", "kthvalue": "kthvalue_cpu", "mode": "mode_cpu", "bucketize": "searchsorted_out_cpu",
    "searchsorted": "searchsorted_out_cpu", "unique": "unique", "bincount": "bincount_cpu",
    "histc": "aminmax_cpu", "softplus": "softplus_cpu", "elu": "elu_cpu", "leaky_relu": "leaky_relu_cpu",
    "gelu": "GeluKernelImpl", "hardsigmoid": "hardsigmoid_cpu",
}


def _kernel(kernel, device_type):
    """The kernel's name on a device: ``logit_cpu`` is ``logit_cuda`` there (vml kernels are CPU-only)."""
    if device_type == "cpu" or not kernel.endswith("_cpu"):
        return kernel
    return kernel.replace("_vml_cpu", "_cpu")[:-len("_cpu")] + "_" + device_type


def refuse_complex(name, *operands):
    """torch's error for op ``name`` when a tensor among ``operands`` is complex (its message names the
    operands' promoted dtype); nothing otherwise, nor for an op not in the table (one that takes complex input,
    so that a family's shared constructor can ask for each of its ops)."""
    entry = REFUSALS.get(name)
    if entry is None:
        return
    tensors = [x for x in operands if hasattr(x, "device") and not isinstance(x, np.generic)]  # numpy 2 scalars
    # have a ``device`` too
    scalars = [x for x in operands if isinstance(x, numbers.Number)]  # a Python complex is refused too
    if not any(x.dtype.is_complex for x in tensors) and not any(isinstance(x, complex) for x in scalars):
        return
    if isinstance(entry, tuple):
        error, message = entry
        raise error(message)
    dtype = result_type(*tensors, *scalars)
    device_type = tensors[0].device.type if tensors else "cpu"
    raise NotImplementedError(f"\"{_kernel(entry, device_type)}\" not implemented for '{dtype.title}'")


__all__ = ["REFUSALS", "refuse_complex"]
