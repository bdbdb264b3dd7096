"""torchvision's package-level switches: ``get_image_backend`` / ``set_image_backend`` and
``disable_beta_transforms_warning``.

flowvision reads images with Pillow only (``datasets.folder.default_loader``); torchvision's other choice,
``accimage``, is refused in one line rather than recorded and then not used.
"""
_image_backend = "PIL"


def get_image_backend():
    """The package that loads images: always ``"PIL"``."""
    return _image_backend


def set_image_backend(backend):
    """Accept ``"PIL"``; refuse ``"accimage"`` (not supported) and any other name (torchvision's ValueError)."""
    if backend not in ("PIL", "accimage"):
        raise ValueError(f"Invalid backend '{backend}'. Options are 'PIL' and 'accimage'")
    if backend == "accimage":
        raise ValueError("flowvision loads images with Pillow only: the 'accimage' backend is not supported")


def disable_beta_transforms_warning():
    """Kept for old code, as in torchvision: transforms.v2 is stable and gives no beta warning to disable."""
