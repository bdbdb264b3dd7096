"""``torchvision.version``'s place: the package version (``flowvision.__version__`` is the same string)."""
__version__ = "0.1.0"
