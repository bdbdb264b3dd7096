"""TF32 switches (``torch.backends.cuda.matmul.allow_tf32``, ``torch.backends.cudnn.allow_tf32``), both
off by default: float32 GEMMs then compute in full float32, as PyTorch's matmul does by default.

TF32 rounds the GEMM operands to 10 mantissa bits on the tensor cores (about 1e-3 relative error,
several times faster). PyTorch turns it on by default for cuDNN convolutions; our convolutions are
cuBLAS GEMMs, so both switches are opt-in here: ``cudnn.allow_tf32`` governs the convolutions' GEMMs,
``matmul.allow_tf32`` every other float32 GEMM. CuPy selects the compute type per dtype for its GEMMs;
``gemm_math(conv=True)`` sets it around a convolution's GEMMs.
"""
import contextlib


class _Switch:
    __slots__ = ("name", "_allow_tf32")

    def __init__(self, name):
        self.name = name
        self._allow_tf32 = False

    @property
    def allow_tf32(self):
        return self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        if not isinstance(value, bool):
            raise RuntimeError(f"{self.name}.allow_tf32 expects a bool, but got {type(value).__name__}")
        self._allow_tf32 = value
        if self is matmul:
            _set_compute_type(self._allow_tf32)

    def __repr__(self):
        return f"<{self.name}: allow_tf32={self._allow_tf32}>"


class _Matmul(_Switch):
    """``torch.backends.cuda.matmul``: TF32, and the switches that let float16 / bfloat16 GEMMs reduce in
    lower precision (True by default, as in torch). Those two are accepted and checked as torch checks
    them, and change nothing here: our float16 GEMMs always accumulate in float32 (CuPy's default)."""

    __slots__ = ("_reduced_precision",)

    def __init__(self, name):
        super().__init__(name)
        self._reduced_precision = {"fp16": True, "bf16": True}

    @property
    def allow_fp16_reduced_precision_reduction(self):
        return self._reduced_precision["fp16"]

    @allow_fp16_reduced_precision_reduction.setter
    def allow_fp16_reduced_precision_reduction(self, value):
        self._reduced_precision["fp16"] = _reduction_setting(value, "allow_fp16_reduced_precision_reduction")

    @property
    def allow_bf16_reduced_precision_reduction(self):
        return self._reduced_precision["bf16"]

    @allow_bf16_reduced_precision_reduction.setter
    def allow_bf16_reduced_precision_reduction(self, value):
        self._reduced_precision["bf16"] = _reduction_setting(value, "allow_bf16_reduced_precision_reduction")


def _reduction_setting(value, name):
    """The reduced-precision flag of ``value``: a bool, or (as torch also takes) a list or tuple of one
    or two bools whose first says it (the second, split-K, has no counterpart here)."""
    if isinstance(value, (list, tuple)):
        if not 1 <= len(value) <= 2:
            raise TypeError(f"{name} expects one or two booleans, got {len(value)}")
        if not all(isinstance(v, bool) for v in value):
            raise TypeError(f"{name} expects booleans, but got {[type(v).__name__ for v in value]}")
        return value[0]
    if not isinstance(value, bool):
        raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value).__name__}")
    return value


matmul = _Matmul("engine.backends.cuda.matmul")
convolution = _Switch("engine.backends.cudnn")


def _set_compute_type(tf32):
    """CuPy's float32 GEMM compute type: TF32 or its default (full float32); nothing without a GPU."""
    from ... import _device
    if not _device.cuda_available():
        return
    from cupy._core import _routines_linalg as linalg
    linalg.set_compute_type(_device.cupy().float32, linalg.COMPUTE_TYPE_TF32 if tf32 else linalg.COMPUTE_TYPE_DEFAULT)


_in_convolution = False


def gemm_tf32():
    """Whether a float32 GEMM issued now may use TF32: ``cudnn.allow_tf32`` inside ``convolution_math``, else
    ``matmul.allow_tf32`` (for GEMMs that choose their compute type themselves, as ``cublas.matmul`` does)."""
    return convolution.allow_tf32 if _in_convolution else matmul.allow_tf32


@contextlib.contextmanager
def convolution_math():
    """Inside, float32 GEMMs follow ``cudnn.allow_tf32`` instead of ``matmul.allow_tf32``."""
    global _in_convolution
    differs = convolution.allow_tf32 != matmul.allow_tf32
    if differs:
        _set_compute_type(convolution.allow_tf32)
    _in_convolution = True
    try:
        yield
    finally:
        _in_convolution = False
        if differs:
            _set_compute_type(matmul.allow_tf32)
