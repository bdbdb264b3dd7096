"""torch.distributed's collectives and point-to-point calls on engine tensors.

Each call checks its arguments (one line naming what is wrong), hands the tensors' arrays to the
group's transport for their device (NCCL for CUDA arrays in an ``nccl`` group, MPI otherwise) and
either waits (``async_op=False``: returns None, or the sender's rank for ``recv``) or returns the
``Work`` (``async_op=True``). Results are written into the given tensors, as torch's.

``group=`` names a subgroup (``new_group``); ``src``/``dst`` are global ranks and ``group_src``/``group_dst``
ranks in the group, as torch's. On a rank that is not a member of the group, a collective warns and
returns None, as torch's.
"""
import warnings

import numpy as np

from .._device import array_module, device_of, is_cuda_array, move
from ..tensor import Tensor
from .process_group import get_rank, is_non_member, resolve
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
        self.tensor._version_counter[0] += 1


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
        tensor._version_counter[0] += 1


def _finish(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def _check_tensor(call, tensor, name="tensor"):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{call}: {name} must be an engine Tensor, got {type(tensor).__name__}")


def member_group(call, group):
    """The ProcessGroup ``group`` names, or None (after torch's warning) on a rank outside it."""
    if is_non_member(group):
        warnings.warn(f"Running {call} on global rank {get_rank()} which does not belong to the given group.",
                      stacklevel=3)
        return None
    return resolve(group)


def _ranks_text(group):
    ranks = group.ranks
    return f"0..{len(ranks) - 1}" if ranks == list(range(len(ranks))) else f"global ranks {ranks}"


def _check_rank(call, name, rank, group):
    """``rank``: a group rank of ``group``."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < group.size():
        raise ValueError(f"{call}: {name}={rank!r} is not a rank of the group (0..{group.size() - 1})")


def group_rank_of(call, name, group, global_rank, group_rank, default=None):
    """The group rank a call's ``name`` (a global rank) or ``group_name`` (a group rank) argument names;
    ``default`` (a global rank) when neither is given, else an error."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError(f"{call}: Can't specify both {name} and group_{name}")
        _check_rank(call, f"group_{name}", group_rank, group)
        return int(group_rank)
    if global_rank is None:
        if default is None:
            raise ValueError(f"{call}: Must specify {name} or group_{name}")
        global_rank = default
    if isinstance(global_rank, bool) or not isinstance(global_rank, (int, np.integer)) \
            or int(global_rank) not in group.ranks:
        raise ValueError(f"{call}: {name}={global_rank!r} is not a rank of the group ({_ranks_text(group)})")
    return group.ranks.index(int(global_rank))


def _check_list(call, name, tensors, like, group):
    """``tensors``: world_size tensors of ``like``'s shape and dtype."""
    if not isinstance(tensors, (list, tuple)) or len(tensors) != group.size():
        count = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"{call}: {name} must hold world_size={group.size()} tensors, got {count}")
    for i, t in enumerate(tensors):
        _check_tensor(call, t, f"{name}[{i}]")
        if t.shape != like.shape or t.dtype != like.dtype:
            raise ValueError(f"{call}: {name}[{i}] is {t.dtype.name} {list(t.shape)}, but the tensor is "
                             f"{like.dtype.name} {list(like.shape)}")


def _check_sizes(call, big, small, group, big_name, small_name):
    """``big`` holds world_size times ``small``'s elements, of the same dtype."""
    if big.numel() != group.size() * small.numel() or big.dtype != small.dtype:
        raise ValueError(f"{call}: {big_name} ({big.dtype.name} {list(big.shape)}) must hold world_size={group.size()} "
                         f"times the elements of {small_name} ({small.dtype.name} {list(small.shape)})")


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` over all ranks with ``op``; every rank gets the result in ``tensor``."""
    pg = member_group("all_reduce", group)
    if pg is None:
        return None
    _check_tensor("all_reduce", tensor)
    op = check_reduce_op(op)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    return _finish(transport.all_reduce(wire.array, op).then(wire.land), async_op)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` over all ranks with ``op`` into ``tensor`` on rank ``dst``."""
    pg = member_group("reduce", group)
    if pg is None:
        return None
    _check_tensor("reduce", tensor)
    root = group_rank_of("reduce", "dst", pg, dst, group_dst)
    op = check_reduce_op(op)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    work = transport.reduce(wire.array, root, op)
    if pg.rank() == root:
        work.then(wire.land)
    return _finish(work, async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    pg = member_group("broadcast", group)
    if pg is None:
        return None
    _check_tensor("broadcast", tensor)
    root = group_rank_of("broadcast", "src", pg, src, group_src)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    work = transport.broadcast(wire.array, root)
    if pg.rank() != root:
        work.then(wire.land)
    return _finish(work, async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """``tensor_list[r]`` gets rank r's ``tensor``, on every rank."""
    pg = member_group("all_gather", group)
    if pg is None:
        return None
    _check_tensor("all_gather", tensor)
    _check_list("all_gather", "tensor_list", tensor_list, tensor, pg)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    output = _empty_like_wire(wire, (pg.size(),) + tuple(tensor.shape))
    work = transport.all_gather(output, wire.array)
    work.then(lambda: _land_into(tensor_list, output))
    return _finish(work, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """``output_tensor`` gets every rank's ``input_tensor`` in rank order, concatenated along dim 0
    (or stacked: only its element count must be world_size times the input's)."""
    pg = member_group("all_gather_into_tensor", group)
    if pg is None:
        return None
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
    pg = member_group("reduce_scatter_tensor", group)
    if pg is None:
        return None
    _check_tensor("reduce_scatter_tensor", output, "output")
    _check_tensor("reduce_scatter_tensor", input, "input")
    _check_sizes("reduce_scatter_tensor", input, output, pg, "input", "output")
    op = check_reduce_op(op)
    transport, on_host = _transport(pg, input)
    result = _Wire(output, on_host)
    work = transport.reduce_scatter(result.array, _Wire(input, on_host).array, op)
    return _finish(work.then(result.land), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """On rank ``dst`` (global rank 0 by default), ``gather_list[r]`` gets group rank r's ``tensor``
    (other ranks pass no list)."""
    pg = member_group("gather", group)
    if pg is None:
        return None
    _check_tensor("gather", tensor)
    root = group_rank_of("gather", "dst", pg, dst, group_dst, default=0)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    output = None
    if pg.rank() == root:
        _check_list("gather", "gather_list", gather_list, tensor, pg)
        output = _empty_like_wire(wire, (pg.size(),) + tuple(tensor.shape))
    elif gather_list:
        raise ValueError("gather: gather_list must NOT be specified on non-destination ranks")
    work = transport.gather(output, wire.array, root)
    if output is not None:
        work.then(lambda: _land_into(gather_list, output))
    return _finish(work, async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """Group rank r's ``tensor`` gets ``scatter_list[r]`` of rank ``src`` (global rank 0 by default;
    other ranks pass no list)."""
    pg = member_group("scatter", group)
    if pg is None:
        return None
    _check_tensor("scatter", tensor)
    root = group_rank_of("scatter", "src", pg, src, group_src, default=0)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    source = None
    if pg.rank() == root:
        _check_list("scatter", "scatter_list", scatter_list, tensor, pg)
        xp = array_module(wire.array)
        source = xp.stack([_Wire(t, on_host).array for t in scatter_list]) if scatter_list else None
    elif scatter_list:
        raise ValueError("scatter: scatter_list must NOT be specified on non-source ranks")
    work = transport.scatter(wire.array, source, root)
    return _finish(work.then(wire.land), async_op)


def peer_of(call, name, pg, peer, group_peer):
    """The group rank of a point-to-point call's other side, which must not be this process."""
    rank = group_rank_of(call, name, pg, peer, group_peer)
    if rank == pg.rank():
        given = f"{name}={peer}" if peer is not None else f"group_{name}={group_peer}"
        raise ValueError(f"{call}: {given} is this process's own rank; it must be another rank")
    return rank


def start_send(call, tensor, dst, group, tag, group_dst=None):
    """The Work of sending ``tensor`` (None on a rank outside ``group``)."""
    pg = member_group(call, group)
    if pg is None:
        return None
    _check_tensor(call, tensor)
    peer = peer_of(call, "dst", pg, dst, group_dst)
    transport, on_host = _transport(pg, tensor)
    return transport.send(_Wire(tensor, on_host).array, peer, tag)


def start_recv(call, tensor, src, group, tag, group_src=None):
    """The Work of receiving into ``tensor`` (None on a rank outside ``group``); its ``source()`` is the
    sender's global rank."""
    pg = member_group(call, group)
    if pg is None:
        return None
    _check_tensor(call, tensor)
    peer = None if src is None and group_src is None else peer_of(call, "src", pg, src, group_src)
    transport, on_host = _transport(pg, tensor)
    wire = _Wire(tensor, on_host)
    work = transport.recv(wire.array, peer, tag).then(wire.land)
    group_source = work.source
    work.source = lambda: pg.ranks[group_source()]
    return work


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns the Work."""
    return start_send("isend", tensor, dst, group, tag, group_dst)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src`` (None: any rank); returns the Work."""
    return start_recv("irecv", tensor, src, group, tag, group_src)


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst`` and wait until it has left."""
    work = start_send("send", tensor, dst, group, tag, group_dst)
    if work is not None:
        work.wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (None: any rank); returns the sender's global rank
    (-1 on a rank outside ``group``)."""
    work = start_recv("recv", tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    return work.source()


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank of the group has called ``barrier`` (``timeout``: this wait's limit instead
    of the group's)."""
    pg = member_group("barrier", group)
    if pg is None:
        return None
    work = pg.mpi.barrier()
    if async_op:
        return work
    work.wait(timeout)
    return None
