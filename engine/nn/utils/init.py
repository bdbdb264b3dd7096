"""``engine.nn.utils.init``: ``skip_init``, building a module without running its parameter initialisation."""
import inspect

from ... import random as _random
from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameters hold unspecified values. torch builds it on the meta
    device; here it is built on the CPU with the default generator's state restored afterwards, so that the
    global random stream is as if nothing had been drawn, then moved to ``device``."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    with _random.fork_rng(devices=[]):
        module = module_cls(*args, **kwargs)
    return module.to(final_device)
