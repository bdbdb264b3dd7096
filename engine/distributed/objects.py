"""Collectives of picklable Python objects (``all_gather_object``, ``broadcast_object_list``), sent as
pickled bytes over the group's MPI communicator. As torch's, they unpickle what other ranks of the same
job send, so they are for the job's own processes only."""
import pickle

from .process_group import default_group


def all_gather_object(object_list, obj, group=None):
    """``object_list[r]`` gets rank r's ``obj`` on every rank."""
    pg = default_group(group)
    if not isinstance(object_list, list) or len(object_list) != pg.size:
        raise ValueError(f"all_gather_object: object_list must be a list of world_size={pg.size} entries")
    payloads = pg.mpi.all_gather_bytes(pickle.dumps(obj))
    object_list[:] = [pickle.loads(p) for p in payloads]


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """The entries of ``object_list`` on rank ``src`` replace those of every rank's list (of equal length)."""
    pg = default_group(group)
    if not isinstance(object_list, list):
        raise ValueError(f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}")
    payload = pickle.dumps(list(object_list)) if pg.rank == src else None
    received = pickle.loads(pg.mpi.broadcast_bytes(payload, src))
    if len(received) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {src} sent {len(received)} objects, this rank's list "
                         f"has {len(object_list)}")
    object_list[:] = received
