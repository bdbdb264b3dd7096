"""``torch.backends.mps``: Apple's Metal backend, which the engine does not have (scripts ask
``is_available()`` before picking a device)."""


def is_built():
    """False: the engine has no Metal backend."""
    return False


def is_available():
    """False: the engine has no Metal backend."""
    return False
