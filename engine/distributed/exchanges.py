"""The collectives in which every rank sends each other rank its own block: ``all_to_all`` (lists of
tensors), ``all_to_all_single`` (one tensor split along dim 0, evenly or by split sizes) and
``reduce_scatter`` (a list of world_size tensors, block r reduced into rank r's output).

Blocks travel as one flat buffer per rank (``MPI_Ialltoallv`` over MPI, grouped sends and receives over
NCCL); element counts, not shapes, go on the wire, so the blocks' sizes are checked on each rank first.
"""
import numpy as np

from .._device import array_module
from .collectives import _check_list, _check_tensor, _finish, _transport, _Wire, member_group
from .reduce_op import ReduceOp, check_reduce_op


def _check_dtypes(call, tensors):
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise ValueError(f"{call}: the tensors must all have one dtype, got {sorted(d.name for d in dtypes)}")


def _flat(wires):
    """The wires' arrays one after the other, as one contiguous array."""
    arrays = [w.array.reshape(-1) for w in wires]
    xp = array_module(arrays[0])
    return xp.concatenate(arrays)


def _check_tensor_list(call, name, tensors, pg):
    if not isinstance(tensors, (list, tuple)) or len(tensors) != pg.size():
        count = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{call}: {name} must hold world_size={pg.size()} tensors, got {count}")
    for i, t in enumerate(tensors):
        _check_tensor(call, t, f"{name}[{i}]")


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r's ``output_tensor_list[q]`` gets rank q's ``input_tensor_list[r]`` (the tensors may differ
    in size from block to block, as long as each sender's block has the receiver's size)."""
    pg = member_group("all_to_all", group)
    if pg is None:
        return None
    _check_tensor_list("all_to_all", "output_tensor_list", output_tensor_list, pg)
    _check_tensor_list("all_to_all", "input_tensor_list", input_tensor_list, pg)
    _check_dtypes("all_to_all", list(output_tensor_list) + list(input_tensor_list))
    transport, on_host = _transport(pg, input_tensor_list[0])
    source = _flat([_Wire(t, on_host) for t in input_tensor_list])
    outputs = [_Wire(t, on_host) for t in output_tensor_list]
    output = array_module(source).empty(sum(t.numel() for t in output_tensor_list), source.dtype)
    work = transport.all_to_all(output, [t.numel() for t in output_tensor_list], source,
                                [t.numel() for t in input_tensor_list])

    def land():
        start = 0
        for wire in outputs:
            wire.array[...] = output[start:start + wire.array.size].reshape(wire.array.shape)
            start += wire.array.size
            wire.land()
    return _finish(work.then(land), async_op)


def _splits(what, sizes, tensor, pg):
    """The dim-0 split sizes of ``tensor`` (``what``: "input" or "output"; even splits when ``sizes`` is
    None), checked."""
    rows = tensor.shape[0] if tensor.dim() else 1
    name = f"{what}_split_sizes"
    if sizes is None:
        if rows % pg.size():
            raise ValueError(f"all_to_all_single: the {what}'s dim 0 size {rows} is not divisible by "
                             f"world_size={pg.size()}: pass {name}")
        return [rows // pg.size()] * pg.size()
    sizes = [int(s) for s in sizes]
    if len(sizes) != pg.size() or sum(sizes) != rows or min(sizes) < 0:
        raise ValueError(f"all_to_all_single: {name} {sizes} must be world_size={pg.size()} sizes adding up to "
                         f"the {what}'s dim 0 size {rows}")
    return sizes


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False):
    """``input`` split along dim 0 (evenly, or by ``input_split_sizes``): block q goes to rank q; rank r's
    ``output`` gets, along dim 0 and in rank order, the blocks each rank sent it (``output_split_sizes``)."""
    pg = member_group("all_to_all_single", group)
    if pg is None:
        return None
    _check_tensor("all_to_all_single", output, "output")
    _check_tensor("all_to_all_single", input, "input")
    _check_dtypes("all_to_all_single", [output, input])
    if tuple(output.shape[1:]) != tuple(input.shape[1:]):
        raise ValueError(f"all_to_all_single: output {list(output.shape)} and input {list(input.shape)} must "
                         "have the same sizes after dim 0")
    row = int(np.prod(input.shape[1:], dtype=np.int64))
    sent = [s * row for s in _splits("input", input_split_sizes, input, pg)]
    got = [s * row for s in _splits("output", output_split_sizes, output, pg)]
    transport, on_host = _transport(pg, input)
    result = _Wire(output, on_host)
    work = transport.all_to_all(result.array, got, _Wire(input, on_host).array, sent)
    return _finish(work.then(result.land), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank r's ``output`` gets the reduction with ``op`` over all ranks of their ``input_list[r]``."""
    pg = member_group("reduce_scatter", group)
    if pg is None:
        return None
    _check_tensor("reduce_scatter", output, "output")
    _check_list("reduce_scatter", "input_list", input_list, output, pg)
    op = check_reduce_op(op)
    transport, on_host = _transport(pg, output)
    result = _Wire(output, on_host)
    work = transport.reduce_scatter(result.array, _flat([_Wire(t, on_host) for t in input_list]), op)
    return _finish(work.then(result.land), async_op)
