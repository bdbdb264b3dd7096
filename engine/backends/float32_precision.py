"""``torch.set_float32_matmul_precision`` / ``get_float32_matmul_precision``: how float32 matmuls on the
GPU may trade precision for speed, wired to the TF32 switch ``backends.cuda.matmul.allow_tf32``.

``"highest"`` (the default) computes in full float32; ``"high"`` lets cuBLAS use TF32; ``"medium"``
would also allow bfloat16 passes in torch, which our GEMMs lack, so it means TF32 here as well. CPU
matmuls always compute in full float32. Setting ``allow_tf32`` directly moves the answer between
``"highest"`` and ``"high"``, as in torch.
"""
import warnings

from .cuda import tf32 as _tf32

PRECISIONS = ("highest", "high", "medium")
_chosen = ["highest"]


def set_float32_matmul_precision(precision):
    """Choose ``"highest"``, ``"high"`` or ``"medium"``; another string warns and changes nothing."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _chosen[0] = precision
    _tf32.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    """The precision float32 GEMMs run at now (follows ``backends.cuda.matmul.allow_tf32``)."""
    if not _tf32.matmul.allow_tf32:
        return "highest"
    return "high" if _chosen[0] == "highest" else _chosen[0]
