"""flowvision: a vision model zoo on the embedded engine."""
__version__ = "0.1.0"

from . import datasets, io, models, ops, transforms, utils  # noqa: E402,F401  (as torchvision's)
