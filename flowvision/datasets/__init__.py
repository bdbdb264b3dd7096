"""Datasets: small real data shipped with the package, and loaders for the standard ones."""
from .digits import load_digits

__all__ = ["load_digits"]
