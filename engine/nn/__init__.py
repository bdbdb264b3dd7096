"""``engine.nn``: modules, parameters, initialisation and the functional API."""
from . import functional  # noqa: F401
