"""flowvision: a vision model zoo on the embedded engine."""
__version__ = "0.1.0"
