"""``replace_all_batch_norm_modules_``: batch norms that use batch statistics only, for ``vmap`` over a model.

A batch norm that tracks running statistics updates them in place on every training call; under ``vmap`` each
example would update them in turn. torch's remedy, kept here: drop the running statistics and stop tracking them.
``vmap`` of a module that still has such batch norms raises torch's error (``check_vmapped_module``).
"""
from ..nn.modules.normalization import _BatchNorm


def replace_all_batch_norm_modules_(root):
    """In place: every batch norm in ``root`` (``root`` itself included) loses its running statistics and stops
    tracking them; returns ``root``."""
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


BATCH_NORM_ERROR = ("Batch norm got a batched tensor as input while the running_mean or running_var, which will be "
                    "updated in place, were not batched. If you are using a module and do not need eval mode, please "
                    "set `track_running_stats` to be False.If you are using a prebuilt module and do not need eval "
                    "mode, please see the functorch website for resources on how to patch your module to work with "
                    "vmap")


def check_vmapped_module(func):
    """torch's error for ``vmap(module)`` where a batch norm in training would update its running statistics in
    place (once per example here, silently, were it let through)."""
    from ..nn import Module
    if not isinstance(func, Module):
        return
    for module in func.modules():
        if isinstance(module, _BatchNorm) and module.training and module.running_mean is not None:
            raise RuntimeError(BATCH_NORM_ERROR)
