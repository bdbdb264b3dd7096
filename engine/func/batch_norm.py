"""``replace_all_batch_norm_modules_``: batch norms that use batch statistics only, for ``vmap`` over a model.

A batch norm that tracks running statistics updates them in place on every training call; under ``vmap`` each
example would update them in turn. torch's remedy, kept here: drop the running statistics and stop tracking them.
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
