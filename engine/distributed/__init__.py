"""``engine.distributed``: torch.distributed's process group and collectives, on existing transports:
MPI (mpi4py) for CPU tensors and NCCL (CuPy's bindings) for CUDA tensors.

Start N processes with ``python -m engine.distributed.run --nproc-per-node N script.py`` (or
``mpiexec -n N python script.py``), call ``init_process_group()`` in each, then use the collectives.
DistributedDataParallel is ``engine.nn.parallel.DistributedDataParallel``.
"""
from .collectives import (all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast, gather, irecv,
                          isend, recv, reduce, reduce_scatter_tensor, scatter, send)
from .objects import all_gather_object, broadcast_object_list
from .process_group import (DEFAULT_TIMEOUT, Backend, GroupMember, ProcessGroup, destroy_process_group,
                            get_backend, get_rank, get_world_size, group, init_process_group, is_available,
                            is_initialized, is_mpi_available, is_nccl_available)
from .reduce_op import ReduceOp
from .work import Work

__all__ = ["Backend", "DEFAULT_TIMEOUT", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_gather_into_tensor", "all_gather_object", "all_reduce", "barrier", "broadcast",
           "broadcast_object_list", "destroy_process_group", "gather", "get_backend", "get_rank",
           "get_world_size", "group", "init_process_group", "irecv", "is_available", "is_initialized",
           "is_mpi_available", "is_nccl_available", "isend", "recv", "reduce", "reduce_scatter_tensor",
           "scatter", "send"]
