"""``torchvision.version``'s place: the package version (``flowvision.__version__`` is the same string) and ``cuda``,
the CUDA version of the engine's GPU side (``engine.version.cuda``, None without CuPy)."""
__version__ = "0.1.0"


def __getattr__(name):
    if name == "cuda":
        import engine.version
        return engine.version.cuda
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
