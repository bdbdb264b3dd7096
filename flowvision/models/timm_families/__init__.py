"""Families and variants from timm (Wightman, "PyTorch Image Models") that torchvision lacks, with timm's names,
``state_dict`` keys and published weights.

Each module here registers under timm's module name (``deit``, ``mlp_mixer``...), so a family that
torchvision also has (``resnet``, ``vision_transformer``) lists its timm variants beside torchvision's.

The modules are imported when first needed, not with the package: ``_index.py`` (written by
``scripts/timm_index.py``) lists the models each one registers, and the registry imports a module the first time
one of its models is built. An entrypoint (``timm_families.deit_small_patch16_224``) or a module
(``timm_families.deit``) reached as an attribute imports its module the same way.
"""
import importlib

from ..registry import register_lazy
from ._index import MODULES

register_lazy(__name__, MODULES)

# the entrypoints, as each module's ``__all__`` lists them
__all__ = [name for names in MODULES.values() for name in names]
_MODULE_OF = {name: module for module, names in MODULES.items() for name in names}


def __getattr__(name):
    """An entrypoint of a family module, or the module itself, imported on first use."""
    if name in _MODULE_OF:
        return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(MODULES))
