"""``engine.signal``: torch.signal's namespace (its ``windows``)."""
from . import windows  # noqa: F401

__all__ = ["windows"]
