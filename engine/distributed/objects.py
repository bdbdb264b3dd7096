"""Collectives and point-to-point transfers of picklable Python objects (torch's ``*_object`` calls),
sent as pickled bytes over the group's MPI communicators (``mpi_bytes.py``).

Warning: unpickling runs code the sender chose. As torch's, these calls are for the job's own, trusted
processes only: never receive objects from a peer you do not trust.
"""
import pickle

from .collectives import group_rank_of, member_group, peer_of


def _loads(payload):
    return pickle.loads(payload)  # the job's own ranks: see the module docstring


def _check_output_list(call, name, objects, my_rank, root):
    """``objects`` must be a list on the root and absent elsewhere, as torch's gather."""
    if my_rank == root and not isinstance(objects, list):
        raise ValueError(f"{call}: Argument ``{name}`` must be specified on destination rank.")
    if my_rank != root and objects:
        raise ValueError(f"{call}: Argument ``{name}`` must NOT be specified on non-destination ranks.")


def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` gets group rank r's ``obj`` on every rank."""
    pg = member_group("all_gather_object", group)
    if pg is None:
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list must be a list of world_size={pg.size()} entries")
    payloads = pg.mpi.all_gather_bytes(pickle.dumps(obj))
    object_list[:] = [_loads(p) for p in payloads]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """The entries of ``object_list`` on rank ``src`` (global rank 0 by default) replace those of every
    rank's list (of equal length)."""
    pg = member_group("broadcast_object_list", group)
    if pg is None:
        return
    root = group_rank_of("broadcast_object_list", "src", pg, src, group_src, default=0)
    if not isinstance(object_list, list):
        raise ValueError(f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}")
    payload = pickle.dumps(list(object_list)) if pg.rank() == root else None
    received = _loads(pg.mpi.broadcast_bytes(payload, root))
    if len(received) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {pg.ranks[root]} sent {len(received)} objects, this "
                         f"rank's list has {len(object_list)}")
    object_list[:] = received


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """On rank ``dst`` (global rank 0 by default), ``object_gather_list[r]`` gets group rank r's ``obj``
    (a list of the group's size there; None on the other ranks)."""
    pg = member_group("gather_object", group)
    if pg is None:
        return
    root = group_rank_of("gather_object", "dst", pg, dst, group_dst, default=0)
    _check_output_list("gather_object", "gather_list", object_gather_list, pg.rank(), root)
    if pg.rank() == root and len(object_gather_list) != pg.size():
        raise ValueError(f"gather_object: object_gather_list must be a list of world_size={pg.size()} entries, "
                         f"got {len(object_gather_list)}")
    payloads = pg.mpi.gather_bytes(pickle.dumps(obj), root)
    if payloads is not None:
        object_gather_list[:] = [_loads(p) for p in payloads]


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """Group rank r's ``scatter_object_output_list[0]`` gets ``scatter_object_input_list[r]`` of rank
    ``src`` (global rank 0 by default)."""
    pg = member_group("scatter_object_list", group)
    if pg is None:
        return
    root = group_rank_of("scatter_object_list", "src", pg, src, group_src, default=0)
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    payloads = None
    if pg.rank() == root:
        if scatter_object_input_list is None:
            raise ValueError("source rank must provide non-None scatter_object_input_list")
        if len(scatter_object_input_list) != pg.size():
            raise ValueError(f"scatter_object_list: scatter_object_input_list must hold world_size={pg.size()} "
                             f"objects, got {len(scatter_object_input_list)}")
        payloads = [pickle.dumps(obj) for obj in scatter_object_input_list]
    scatter_object_output_list[0] = _loads(pg.mpi.scatter_bytes(payloads, root))


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None):
    """Send the objects of ``object_list`` to rank ``dst``, whose ``recv_object_list`` takes them."""
    pg = member_group("send_object_list", group)
    if pg is None:
        return
    peer = peer_of("send_object_list", "dst", pg, dst, group_dst)
    pg.mpi.send_bytes(pickle.dumps(list(object_list)), peer)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Fill ``object_list`` (as long as the sender's list) with the objects rank ``src`` (None: any rank)
    sent; returns the sender's global rank (-1 on a rank outside ``group``)."""
    pg = member_group("recv_object_list", group)
    if pg is None:
        return -1
    if not isinstance(object_list, list):
        raise ValueError(f"recv_object_list: object_list must be a list, got {type(object_list).__name__}")
    peer = None if src is None and group_src is None else peer_of("recv_object_list", "src", pg, src, group_src)
    payload, sender = pg.mpi.recv_bytes(peer)
    received = _loads(payload)
    if len(received) != len(object_list):
        raise ValueError(f"recv_object_list: rank {pg.ranks[sender]} sent {len(received)} objects, this rank's "
                         f"list has {len(object_list)}")
    object_list[:] = received
    return pg.ranks[sender]
