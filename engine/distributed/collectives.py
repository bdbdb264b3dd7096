"""torch.distributed's collectives and point-to-point calls on engine tensors.

Each call checks its arguments (one line naming what is wrong), hands the tensors' arrays to the
group's transport for their device (NCCL for CUDA arrays in an ``nccl`` group, MPI otherwise) and
either waits (``async_op=False``: returns None, or the sender's rank for ``recv``) or returns the
``Work`` (``async_op=True``). Results are written into the given tensors, as torch's.
"""
import numpy as np

from .._device import array_module, device_of, is_cuda_array, move
from ..tensor import Tensor
from .process_group import default_group
from .reduce_op import ReduceOp, check_reduce_op


class _Wire:
    """A tensor's array as a transport takes it: C-contiguous and, for MPI, in host memory; ``land``
    copies a result back into the tensor (when the transport worked on a copy) and counts the write."""

    def __init__(self, tensor, on_host):
        self.tensor = tensor
        array = tensor._data
        if on_host and is_cuda_array(array):
            array = move(array, "cpu")
        self.array = array if array.flags.c_contiguous else array_module(array).ascontiguousarray(array)

    def land(self):
        target = self.tensor._data
        if self.array is not target:
            target[...] = move(self.array, device_of(target))
        self.tensor._version[0] += 1


def _transport(group, tensor):
    """(transport, whether it takes host arrays) for ``tensor``'s device."""
    if group.nccl is not None and is_cuda_array(tensor._data):
        return group.nccl, False
    return group.mpi, True


def _empty_like_wire(wire, shape):
    return array_module(wire.array).empty(shape, wire.array.dtype)


def _land_into(tensors, blocks):
    """Copy each block (a slice of a gathered buffer) into its tensor."""
    for tensor, block in zip(tensors, blocks):
        tensor._data[...] = move(block.reshape(tensor._data.shape), tensor.device)
        tensor._version[0] += 1


def _finish(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _check_tensor(call, tensor, name="tensor"):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{call}: {name} must be an engine Tensor, got {type(tensor).__name__}")


def _check_rank(call, name, rank, group):
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < group.size:
        raise ValueError(f"{call}: {name}={rank!r} is not a rank of the group (0..{group.size - 1})")


def _check_list(call, name, tensors, like, group):
    """``tensors``: world_size tensors of ``like``'s shape and dtype."""
    if not isinstance(tensors, (list, tuple)) or len(tensors) != group.size:
        count = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{call}: {name} must hold world_size={group.size} tensors, got {count}")
    for i, t in enumerate(tensors):
        _check_tensor(call, t, f"{name}[{i}]")
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(f"{call}: {name}[{i}] is {t.dtype.name} {list(t.shape)}, but the tensor is "
                             f"{like.dtype.name} {list(like.shape)}")


def _check_sizes(call, big, small, group, big_name, small_name):
    """``big`` holds world_size times ``small``'s elements, of the same dtype."""
    if big.numel() != group.size * small.numel() or big.dtype != small.dtype:
        raise ValueError(f"{call}: {big_name} ({big.dtype.name} {list(big.shape)}) must hold world_size={group.size} "
                         f"times the elements of {small_name} ({small.dtype.name} {list(small.shape)})")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all ranks with ``op``; every rank gets the result in ``tensor``."""
    pg = default_group(group)
    _check_tensor("all_reduce", tensor)
    op = check_reduce_op(op)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    return _finish(transport.all_reduce(wire.array, op).then(wire.land), async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all ranks with ``op`` into ``tensor`` on rank ``dst``."""
    pg = default_group(group)
    _check_tensor("reduce", tensor)
    _check_rank("reduce", "dst", dst, pg)
    op = check_reduce_op(op)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    work = transport.reduce(wire.array, dst, op)
    if pg.rank == dst:
        work.then(wire.land)
    return _finish(work, async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    pg = default_group(group)
    _check_tensor("broadcast", tensor)
    _check_rank("broadcast", "src", src, pg)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    work = transport.broadcast(wire.array, src)
    if pg.rank != src:
        work.then(wire.land)
    return _finish(work, async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` gets rank r's ``tensor``, on every rank."""
    pg = default_group(group)
    _check_tensor("all_gather", tensor)
    _check_list("all_gather", "tensor_list", tensor_list, tensor, pg)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    output = _empty_like_wire(wire, (pg.size,) + tuple(tensor.shape))
    work = transport.all_gather(output, wire.array)
    work.then(lambda: _land_into(tensor_list, output))
    return _finish(work, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` gets every rank's ``input_tensor`` in rank order, concatenated along dim 0
    (or stacked: only its element count must be world_size times the input's)."""
    pg = default_group(group)
    _check_tensor("all_gather_into_tensor", output_tensor, "output_tensor")
    _check_tensor("all_gather_into_tensor", input_tensor, "input_tensor")
    _check_sizes("all_gather_into_tensor", output_tensor, input_tensor, pg, "output_tensor", "input_tensor")
    transport, on_host = _transport(pg, input_tensor)
    output = _Wire(output_tensor, on_host)
    work = transport.all_gather(output.array, _Wire(input_tensor, on_host).array)
    return _finish(work.then(output.land), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank r's ``output`` gets the reduction over all ranks of block r of ``input`` (``input`` split into
    world_size equal blocks along its flattened elements, i.e. along dim 0)."""
    pg = default_group(group)
    _check_tensor("reduce_scatter_tensor", output, "output")
    _check_tensor("reduce_scatter_tensor", input, "input")
    _check_sizes("reduce_scatter_tensor", input, output, pg, "input", "output")
    op = check_reduce_op(op)
    transport, on_host = _transport(pg, input)
    result = _Wire(output, on_host)
    work = transport.reduce_scatter(result.array, _Wire(input, on_host).array, op)
    return _finish(work.then(result.land), async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """On rank ``dst``, ``gather_list[r]`` gets rank r's ``tensor`` (other ranks pass no list)."""
    pg = default_group(group)
    _check_tensor("gather", tensor)
    _check_rank("gather", "dst", dst, pg)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    output = None
    if pg.rank == dst:
        _check_list("gather", "gather_list", gather_list, tensor, pg)
        output = _empty_like_wire(wire, (pg.size,) + tuple(tensor.shape))
    elif gather_list:
        raise ValueError("gather: gather_list must NOT be specified on non-destination ranks")
    work = transport.gather(output, wire.array, dst)
    if output is not None:
        work.then(lambda: _land_into(gather_list, output))
    return _finish(work, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank r's ``tensor`` gets ``scatter_list[r]`` of rank ``src`` (other ranks pass no list)."""
    pg = default_group(group)
    _check_tensor("scatter", tensor)
    _check_rank("scatter", "src", src, pg)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    source = None
    if pg.rank == src:
        _check_list("scatter", "scatter_list", scatter_list, tensor, pg)
        xp = array_module(wire.array)
        source = xp.stack([_Wire(t, on_host).array for t in scatter_list]) if scatter_list else None
    elif scatter_list:
        raise ValueError("scatter: scatter_list must NOT be specified on non-source ranks")
    work = transport.scatter(wire.array, source, src)
    return _finish(work.then(wire.land), async_op)


def _check_peer(call, name, peer, pg):
    _check_rank(call, name, peer, pg)
    if peer == pg.rank:
        raise ValueError(f"{call}: {name}={peer} is this process's own rank; it must be another rank")


def _start_send(call, tensor, dst, group, tag):
    pg = default_group(group)
    _check_tensor(call, tensor)
    _check_peer(call, "dst", dst, pg)
    transport, on_host = _transport(pg, tensor)
    return transport.send(_Wire(tensor, on_host).array, dst, tag)


def _start_recv(call, tensor, src, group, tag):
    pg = default_group(group)
    _check_tensor(call, tensor)
    if src is not None:
        _check_peer(call, "src", src, pg)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    return transport.recv(wire.array, src, tag).then(wire.land)


def isend(tensor, dst, group=None, tag=0):
    """Start sending ``tensor`` to rank ``dst``; returns the Work."""
    return _start_send("isend", tensor, dst, group, tag)


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into ``tensor`` from rank ``src`` (None: any rank); returns the Work."""
    return _start_recv("irecv", tensor, src, group, tag)


def send(tensor, dst, group=None, tag=0):
    """Send ``tensor`` to rank ``dst`` and wait until it has left."""
    _start_send("send", tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0):
    """Receive into ``tensor`` from rank ``src`` (None: any rank); returns the sender's rank."""
    work = _start_recv("recv", tensor, src, group, tag)
    work.wait()
    return work.source()


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank has called ``barrier``."""
    pg = default_group(group)
    return _finish(pg.mpi.barrier(), async_op)
