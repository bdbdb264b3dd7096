"""``torch.amp``: mixed precision. ``autocast`` runs listed ops in bfloat16 or float16 (``autocast_mode.py``),
``GradScaler`` scales float16 losses and skips steps whose gradients overflowed (``grad_scaler.py``)."""
from .autocast_mode import autocast, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "GradScaler", "is_autocast_available"]
