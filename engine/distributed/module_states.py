"""Making a module's parameters and buffers equal on every rank: checking that all ranks hold the same
layout, and broadcasting rank 0's values.

The broadcast is a Function, so that ``nn.Graph`` records DistributedDataParallel's broadcast of
buffers at the start of each forward and its replays broadcast them too. Tensors are packed into one
flat array per dtype (one broadcast each, not one per tensor) and unpacked in place.
"""
from .._device import array_module
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor import _new
from .collectives import broadcast
from .objects import all_gather_object


class BroadcastInPlace(Function):
    """Overwrite the input arrays with group rank ``src``'s values; returns the first one."""

    uses_inputs = False

    def __init__(self, src, group):
        self.src = src
        self.group = group

    def forward(self, *arrays):
        by_dtype = {}
        for array in arrays:
            by_dtype.setdefault(array.dtype, []).append(array)
        for same_dtype in by_dtype.values():
            xp = array_module(same_dtype[0])
            flat = xp.concatenate([a.reshape(-1) for a in same_dtype])
            broadcast(_new(flat), group=self.group, group_src=self.src)
            start = 0
            for array in same_dtype:
                array[...] = flat[start:start + array.size].reshape(array.shape)
                start += array.size
        return arrays[0]


def broadcast_in_place(tensors, src=0, group=None):
    """Give every tensor in ``tensors`` the values of ``group``'s rank ``src`` (a group rank: DDP's source is
    its group's first rank), in place (no gradient is recorded)."""
    if tensors:
        with no_grad():
            BroadcastInPlace(src, group)(*tensors)


def check_same_layout(module, group=None):
    """One line naming the first parameter or buffer whose name, shape or dtype differs between ranks."""
    layout = [(name, tuple(t.shape), t.dtype.name) for name, t in _states(module)]
    layouts = [None] * _world_size(group)
    all_gather_object(layouts, layout, group=group)
    for rank, other in enumerate(layouts):
        if other == layout:
            continue
        for mine, theirs in zip(layout + [None] * len(other), other + [None] * len(layout)):
            if mine != theirs:
                raise RuntimeError(f"DistributedDataParallel: the module differs between ranks: this rank has "
                                   f"{_describe(mine)} where rank {rank} has {_describe(theirs)}")


def _describe(entry):
    if entry is None:
        return "nothing"
    name, shape, dtype = entry
    return f"{name} ({dtype} {list(shape)})"


def _world_size(group):
    from .process_group import resolve
    return resolve(group).size()


def _states(module):
    """The module's parameters, then its buffers, by name."""
    return list(module.named_parameters()) + [(n, b) for n, b in module.named_buffers() if b is not None]


def broadcast_module_states(module, src=0, group=None):
    """Group rank ``src``'s parameters and buffers on every rank of ``group`` (DistributedDataParallel's
    wrap-time sync)."""
    broadcast_in_place([t for _, t in _states(module)], src, group)
