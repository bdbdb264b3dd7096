"""Utilities: data loading and thread control."""
from . import checkpoint, data  # noqa: F401  (reachable after ``import engine``, as torch's)
