"""``torch.amp``: mixed precision. ``autocast`` runs listed ops in bfloat16 or float16 (``autocast_mode.py``),
``GradScaler`` scales float16 losses and skips steps whose gradients overflowed (``grad_scaler.py``),
``custom_fwd``/``custom_bwd`` give custom autograd Functions a defined autocast state (``custom_ops.py``)."""
from .autocast_mode import autocast, is_autocast_available
from .custom_ops import custom_bwd, custom_fwd
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd"]
