"""Where this process sits in a job: its rank, the world size and its rank on its host, as the MPI launcher
(MPICH's Hydra or Open MPI's mpirun) or torchrun-style variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``)
state them, read without starting MPI.

Training scripts read ``LOCAL_RANK`` before ``init_process_group`` (to pick their GPU); the launcher's
worker entry (``launch_worker.py``) fills torchrun's variables in from these, so such scripts run
unchanged under ``mpiexec``.
"""
import os

#: each launcher's names for (rank, world size, local rank, local world size)
_LAUNCHER_VARIABLES = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
    ("PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE"),
)


def _integer(environ, name):
    value = environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


def launcher_placement(environ=None):
    """``(rank, world_size, local_rank, local_world_size)`` from the first launcher whose rank and size
    are set (torchrun's names first), or None outside a launcher; a local value it lacks is None."""
    environ = os.environ if environ is None else environ
    for rank_name, size_name, local_name, local_size_name in _LAUNCHER_VARIABLES:
        rank = _integer(environ, rank_name)
        size = _integer(environ, size_name)
        if rank is not None and size is not None:
            return rank, size, _integer(environ, local_name), _integer(environ, local_size_name)
    return None


def export_torchrun_variables(environ=None):
    """Set ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` from the MPI launcher's
    variables where they are not set yet (a single process gets rank 0 of 1)."""
    environ = os.environ if environ is None else environ
    rank, size, local_rank, local_size = launcher_placement(environ) or (0, 1, 0, 1)
    values = {"RANK": rank, "WORLD_SIZE": size,
              "LOCAL_RANK": rank if local_rank is None else local_rank,
              "LOCAL_WORLD_SIZE": size if local_size is None else local_size}
    for name, value in values.items():
        environ.setdefault(name, str(value))


def is_torchelastic_launched():
    """Whether torchelastic (torchrun) started this process: ``TORCHELASTIC_RUN_ID`` is set, as torch checks
    (``python -m engine.distributed.run`` does not set it)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def get_node_local_rank(fallback_rank=None):
    """This process's rank on its host: ``LOCAL_RANK`` (set by the launchers), else ``fallback_rank``."""
    if "LOCAL_RANK" in os.environ:
        return int(os.environ["LOCAL_RANK"])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError("LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow "
                       "`get_node_local_rank` to work, assuming you are not running in a multi-device context "
                       "and want the code to run locally instead.")
