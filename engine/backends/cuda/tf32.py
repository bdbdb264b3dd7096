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
    def __init__(self, name):
        self.name = name
        self._allow_tf32 = False

    @property
    def allow_tf32(self):
        return self._allow_tf32

    @allow_tf32.setter
    def allow_tf32(self, value):
        self._allow_tf32 = bool(value)
        if self is matmul:
            _set_compute_type(self._allow_tf32)

    def __repr__(self):
        return f"<{self.name}: allow_tf32={self._allow_tf32}>"


matmul = _Switch("engine.backends.cuda.matmul")
convolution = _Switch("engine.backends.cudnn")


def _set_compute_type(tf32):
    """CuPy's float32 GEMM compute type: TF32 or its default (full float32); nothing without a GPU."""
    from ... import _device
    if not _device.cuda_available():
        return
    from cupy._core import _routines_linalg as linalg
    linalg.set_compute_type(_device.cupy().float32, linalg.COMPUTE_TYPE_TF32 if tf32 else linalg.COMPUTE_TYPE_DEFAULT)


@contextlib.contextmanager
def convolution_math():
    """Inside, float32 GEMMs follow ``cudnn.allow_tf32`` instead of ``matmul.allow_tf32``."""
    if convolution.allow_tf32 == matmul.allow_tf32:
        yield
        return
    _set_compute_type(convolution.allow_tf32)
    try:
        yield
    finally:
        _set_compute_type(matmul.allow_tf32)
