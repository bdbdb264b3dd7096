"""Process subgroups (torch's ``new_group`` and friends): a ProcessGroup over some of the job's ranks.

Every rank of the default group calls ``new_group`` with the same ranks, as torch requires: the group's
MPI communicator is split from the default group's (``MPI_Comm_split``, a call of all ranks); with
``use_local_synchronization=True`` only the members call it (``MPI_Comm_create_group``), which torch
refuses for its MPI backend and allows for NCCL. A rank left out gets ``GroupMember.NON_GROUP_MEMBER``,
on which collectives warn and do nothing. An ``nccl`` subgroup has its own NCCL communicator on the
default group's GPU. Group ranks follow ``ranks`` sorted (or as given, with ``sort_ranks=False``).
"""
import operator

from .process_group import (NON_GROUP_MEMBER, Backend, ProcessGroup, _World, get_rank, get_world_size,
                            is_non_member, resolve)


def _checked_ranks(ranks, world_size, sort_ranks):
    """``ranks`` as a list of distinct global ranks (all of them when None), in group-rank order."""
    if ranks is None:
        return list(range(world_size))
    try:
        ranks = [operator.index(rank) for rank in ranks]
    except TypeError:
        raise TypeError("ranks must be a sequence of integers") from None
    if sort_ranks:
        ranks = sorted(ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    if len(ranks) > world_size:
        raise ValueError("the new group's world size should be less or equal to the world size set by "
                         "init_process_group")
    for rank in ranks:
        if not 0 <= rank < world_size:
            raise ValueError(f"Rank {rank} is out of range. Valid ranks are 0 to {world_size - 1} "
                             f"(world_size={world_size})")
    return ranks


def split_communicator(comm, ranks, local):
    """A communicator of ``comm``'s ranks ``ranks``, in that order (MPI's null communicator on the
    others): every rank of ``comm`` takes part, or with ``local`` only the ranks listed."""
    from mpi4py import MPI
    member = comm.Get_rank() in ranks
    if not local:
        return comm.Split(0 if member else MPI.UNDEFINED, ranks.index(comm.Get_rank()) if member else 0)
    everyone = comm.Get_group()
    listed = everyone.Incl(ranks)
    try:
        return comm.Create_group(listed)
    finally:
        listed.Free()
        everyone.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None, sort_ranks=True):
    """A process group of the global ranks ``ranks`` (all ranks when None), with the default group's
    backend and timeout unless given; ``GroupMember.NON_GROUP_MEMBER`` on the ranks it leaves out.
    ``pg_options`` is accepted as torch's and not used (MPI and CuPy's NCCL take no such options)."""
    world = resolve()
    backend = world.backend if backend is None else Backend(backend)
    if use_local_synchronization and backend == Backend.MPI:
        raise ValueError("MPI backend doesn't support use_local_synchronization=True")
    ranks = _checked_ranks(ranks, world.size(), sort_ranks)
    member = world.rank() in ranks
    if member or not use_local_synchronization:
        comm = split_communicator(world.comm, ranks, use_local_synchronization)
    if not member:
        return NON_GROUP_MEMBER
    if device_id is None and world.nccl is not None:
        device_id = f"cuda:{world.nccl.device_index}"
    group = ProcessGroup(backend, world.timeout if timeout is None else timeout, comm, ranks, device_id,
                         group_desc)
    _World.subgroups.append(group)
    return group


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None, pg_options=None,
                                 group_desc=None):
    """One group for each list of global ranks (lists that must not overlap); returns (this rank's group,
    or None where no list holds it, and the list of all the groups as ``new_group`` returned them)."""
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    owner = {}
    for ranks in ranks_per_subgroup_list:
        for rank in ranks:
            if rank in owner:
                raise ValueError(f"Rank {rank} has appeared in both subgroup {owner[rank]} and {ranks}")
            owner[rank] = ranks
    mine = None
    subgroups = []
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks, timeout=timeout, backend=backend, pg_options=pg_options, group_desc=group_desc)
        subgroups.append(subgroup)
        if get_rank() in ranks:
            mine = subgroup
    return mine, subgroups


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None, group_desc=None):
    """``group``'s ranks (the default group's when None) cut into consecutive subgroups of ``group_size``;
    returns (this rank's subgroup, all the subgroups)."""
    if group_size is None:
        raise ValueError("Default group size only takes effect when CUDA/XPU is available.If your subgroup "
                         "using a backend that does not depend on CUDA/XPU,please pass in 'group_size' correctly.")
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size ({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by 'group_size={group_size}'")
    ranks = get_process_group_ranks(group)
    lists = [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)]
    return new_subgroups_by_enumeration(lists, timeout=timeout, backend=backend, pg_options=pg_options,
                                        group_desc=group_desc)


def _registered(group):
    """The ProcessGroup ``group`` is (None: the default one), or torch's error for anything else."""
    if group is None or is_non_member(group) or not isinstance(group, ProcessGroup):
        if group is None:
            return resolve()
        raise ValueError(f"Group {group!r} is not registered, please create group with "
                         "torch.distributed.new_group API")
    return resolve(group)


def get_process_group_ranks(group):
    """The global ranks of ``group``'s members, in group-rank order (None: the default group)."""
    return list(_registered(group).ranks)


def get_group_rank(group, global_rank):
    """The rank in ``group`` of the process of global rank ``global_rank``."""
    pg = _registered(group)
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg!r}")
    return pg.ranks.index(global_rank)


def get_global_rank(group, group_rank):
    """The global rank of the process of rank ``group_rank`` in ``group``."""
    pg = _registered(group)
    if isinstance(group_rank, bool) or not isinstance(group_rank, int) or not 0 <= group_rank < len(pg.ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg!r}")
    return pg.ranks[group_rank]
