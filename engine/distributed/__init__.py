"""``engine.distributed``: torch.distributed's process groups and collectives, on existing transports:
MPI (mpi4py) for CPU tensors and NCCL (CuPy's bindings) for CUDA tensors.

Start N processes with ``python -m engine.distributed.run --nproc-per-node N script.py`` (or
``mpiexec -n N python script.py``), call ``init_process_group()`` in each, then use the collectives;
``new_group`` makes subgroups. DistributedDataParallel is ``engine.nn.parallel.DistributedDataParallel``.
"""
from .collectives import (all_gather, all_gather_into_tensor, all_reduce, barrier, broadcast, gather, irecv,
                          isend, recv, reduce, reduce_scatter_tensor, scatter, send)
from .environment import get_node_local_rank, is_torchelastic_launched
from .errors import DistBackendError, DistError, DistNetworkError, DistStoreError
from .exchanges import all_to_all, all_to_all_single, reduce_scatter
from .monitored_barrier import monitored_barrier
from .objects import (all_gather_object, broadcast_object_list, gather_object, recv_object_list,
                      scatter_object_list, send_object_list)
from .p2p_batch import P2POp, batch_isend_irecv
from .process_group import (DEFAULT_TIMEOUT, Backend, GroupMember, ProcessGroup, destroy_process_group,
                            get_backend, get_default_backend_for_device, get_rank, get_world_size, group,
                            init_process_group, is_available, is_backend_available, is_gloo_available,
                            is_initialized, is_mpi_available, is_nccl_available, is_ucc_available,
                            is_xccl_available)
from .reduce_op import ReduceOp
from .store import FileStore, HashStore, PrefixStore, Store
from .tcp_store import TCPStore
from .subgroups import (get_global_rank, get_group_rank, get_process_group_ranks, new_group, new_subgroups,
                        new_subgroups_by_enumeration)
from .work import Work

#: torch's name for the default timeout
default_pg_timeout = DEFAULT_TIMEOUT

__all__ = ["Backend", "DEFAULT_TIMEOUT", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError",
           "FileStore", "GroupMember", "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "ReduceOp", "Store",
           "TCPStore", "Work", "all_gather", "all_gather_into_tensor",
           "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv",
           "broadcast", "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
           "gather_object", "get_backend", "get_default_backend_for_device", "get_global_rank", "get_group_rank",
           "get_node_local_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
           "init_process_group", "irecv", "is_available", "is_backend_available", "is_gloo_available",
           "is_initialized", "is_mpi_available", "is_nccl_available", "is_torchelastic_launched",
           "is_ucc_available", "is_xccl_available", "isend", "monitored_barrier", "new_group", "new_subgroups",
           "new_subgroups_by_enumeration", "recv", "recv_object_list", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "scatter_object_list", "send", "send_object_list"]
