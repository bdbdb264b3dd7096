"""flowvision: a vision model zoo on the embedded engine."""
from .version import __version__  # noqa: F401

from . import datasets, io, models, ops, transforms, utils  # noqa: E402,F401  (as torchvision's)
from .image_backend import disable_beta_transforms_warning, get_image_backend, set_image_backend  # noqa: E402,F401
